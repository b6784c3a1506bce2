//! The fast path of `ownership`'s plain-access callbacks: the gate (one thread-local load and,
//! while recording, one shadow compare), then the digest and the count, on the thread's shared
//! part (the fast path never makes a `&mut Thread`).
#![allow(unsafe_code)]

use super::*;

/// Fold one access into the digest: a plain read's value (read now, in its callback: see the
/// module docs), or the kind of a write or of a ranged access (`fixed` false: the compiler's
/// `__tsan_read_range`, its copies of structs, and unaligned or bit-field accesses). Identical
/// on the fast and the slow path, in both modes.
///
/// A ranged read's bytes are not folded because a struct's padding holds bytes the program
/// never wrote: what the runtime's own frames (slow paths, interposers) left on the stack where
/// the struct was built, which differ between record and replay, and which a struct copy carries
/// on into the heap or a global (lbzip2's workers build bit-stream positions by value and copy
/// them from block to block: most replays diverged). The copied fields are checked where the
/// program reads them (plain reads fold their values), and the order of the copy is checked
/// (its stripe and kind).
#[inline(always)]
pub(super) fn digest_access(t: &Shared, addr: usize, size: usize, k: u64, fixed: bool) {
    let x = if k == kind::READ && fixed {
        // SAFETY: the program reads these bytes right after the callback returns.
        unsafe { access::value_at(addr, size) }
    } else {
        k
    };
    t.digest.set(fold(t.digest.get(), x));
}

/// Count fast-path event `e` of kind `k`: the event counter alone (the entry comes with it,
/// see `Thread::entry_bias`). Reads are not counted by kind: they are the events no kind
/// counted (`lifecycle::finish`).
#[inline(always)]
pub(super) fn count_fast(t: &Shared, e: u64, k: u64) {
    if k != kind::READ {
        t.kinds[k as usize % KINDS].bump();
    }
    t.events.store(e, Ordering::Release);
}

/// Bits of an address that a user-space address never has (see [`fast_slot`]).
const WILD: usize = !((1 << ADDR_BITS) - 1);

/// Whether an access of `size` bytes at `addr` spans two granules, or lies outside user space
/// (a wild pointer: the slow path's shadow slot drops its high bits, see [`slot_of`]). An
/// access aligned to its size, a power of two up to a granule, cannot span two: for a callback
/// of fixed size (`fixed`, with `size` a constant) this folds to one test against a constant
/// mask (`movabs; test; jne`), the full check running only for unaligned or wild addresses; a
/// ranged access takes the full check alone.
#[inline(always)]
pub(super) fn crosses(addr: usize, size: usize, fixed: bool) -> bool {
    if fixed
        && size.is_power_of_two()
        && size <= 1 << GRANULE_SHIFT
        && addr & (WILD | (size - 1)) == 0
    {
        return false;
    }
    (addr ^ (addr + size - 1)) >> GRANULE_SHIFT != 0 || addr & WILD != 0
}

/// [`slot_of`] for an address that [`crosses`] let through (a user-space address, so the high
/// bits need no clearing): one shift, off the path of the masks' two (a shift more of latency
/// before the shadow load cost matmul `-t 1` 4% of record/floor).
#[inline(always)]
fn fast_slot(addr: usize) -> u64 {
    addr as u64 >> GRANULE_SHIFT
}

/// `e < t.fast_limit`, as one compare with the limit in memory (a Rust atomic load is never
/// folded into the compare: one more instruction).
#[inline(always)]
pub(super) fn below_limit(t: &Shared, e: u64) -> bool {
    // SAFETY: an aligned 8-byte load of `t.fast_limit` (a relaxed atomic load on x86-64: other
    // threads store to it atomically); reads no other memory, writes none.
    unsafe {
        core::arch::asm!(
            "cmpq {e}, {off}({t})",
            "jbe {no}",
            e = in(reg) e,
            t = in(reg) t as *const Shared,
            off = const core::mem::offset_of!(Shared, fast_limit),
            no = label { return false; },
            options(att_syntax, nostack, readonly),
        );
    }
    true
}

/// The gate of the fast path: Some(event number) when access `k` of `size` bytes at `addr`
/// may proceed without the runtime (record: the thread owns or shares its granule, see
/// [`record_gate`]; replay: no edge, checkpoint or end is due at this event).
#[inline(always)]
pub fn fast_gate(t: &Shared, addr: usize, size: usize, write: bool, fixed: bool) -> Option<u64> {
    // SAFETY: as for the `Mine` reads of `record_gate`.
    if unsafe { t.own_replay.get() } {
        return replay_gate(t);
    }
    record_gate(t, addr, size, write, fixed)
}

/// [`fast_gate`] in replay: Some(the next event) when no edge, checkpoint or end is due at it.
#[inline(always)]
pub fn replay_gate(t: &Shared) -> Option<u64> {
    let e = t.events.load(Ordering::Relaxed) + 1;
    below_limit(t, e).then_some(e)
}

/// [`fast_gate`] while recording. `t` is the current thread's shared part (or the idle one,
/// whose limit of 0 fails the limit test; its `pend` is written by any thread not registered
/// yet, and read by nobody).
#[inline(always)]
pub fn record_gate(t: &Shared, addr: usize, size: usize, write: bool, fixed: bool) -> Option<u64> {
    let e = t.events.load(Ordering::Relaxed) + 1;
    if crosses(addr, size, fixed) {
        return None;
    }
    let idx = fast_slot(addr);
    // Before the limit and shadow loads: from here the access may be pending (module
    // handover), and the process end sees this callback in progress (`stop_all`).
    handover::pend(t, e, idx);
    if !below_limit(t, e) {
        return None;
    }
    let s = slot_word(idx).load(Ordering::Relaxed);
    // SAFETY (the `Mine` reads): `t` is the current thread's own shared part (or the idle one,
    // whose limit of 0 failed above): this thread alone touches its `Mine` fields. Read after
    // the fence in `pend`, so that they fold into the compares.
    let me = unsafe { t.own_me.get() };
    let ok = if write {
        s == me
    } else {
        // Clearing `RDEX_BIT` once serves both tests (no copy of `s`): a read-shared word
        // never has it (epochs stay below it), and an `RDEX` word without it is an `EXCL`
        // one, below `SHARED`, so it fails the epoch test as before.
        let s = s & !RDEX_BIT;
        s == me || s.wrapping_sub(SHARED) <= unsafe { t.rdsh_seen.get() }
    };
    ok.then_some(e)
}

/// The rest of a plain access's fast path once [`fast_gate`] let event `e` through: digest
/// and count (on the thread's shared part: the fast path never makes a `&mut Thread`).
#[inline(always)]
pub fn fast_done(t: &Shared, e: u64, addr: usize, size: usize, k: u64, fixed: bool) {
    plain_done(t, e, addr, size, k, fixed);
    held::refill(t);
}

/// [`fast_done`] with held granules off (no hits to refill).
#[inline(always)]
pub fn plain_done(t: &Shared, e: u64, addr: usize, size: usize, k: u64, fixed: bool) {
    digest_access(t, addr, size, k, fixed);
    count_fast(t, e, k);
}

/// Count an atomic operation that [`fast_gate`] let through as event `e` (the caller performs
/// it and folds its result).
#[inline(always)]
pub fn count_fast_atomic(t: &Shared, e: u64) {
    count_fast(t, e, kind::ATOMIC);
    held::refill(t);
}

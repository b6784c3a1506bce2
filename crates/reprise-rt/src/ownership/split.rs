//! Split granules (see the parent module): a granule that two threads write in turns, at
//! disjoint bytes (false sharing), gets an owner per 16-byte sub-granule. The shadow word's
//! encoding, the fast path's test, and the record side's split, take and merge.

use super::record::{add_edge_after, lock_window, request, unlock_batch};
use super::*;

/// A *split* granule (`SPLIT | fields`): two threads took turns writing disjoint bytes of it
/// (false sharing: the alternate 16-byte elements of fft's bit-reversal copy), so each of its four 16-byte sub-granules has an owner of its own:
/// a 7-bit field (`sub_shift`), holding `EXCL(t)` (t + 1), 0 (nobody) or [`SUB_LOCKED`] (being
/// taken). A thread accesses the sub-granules it owns without transfers: the slow path tests
/// the field before it enters the runtime (`split_fast`). A thread that takes all four fields
/// merges the granule back to `EXCL` (a read takes all four, to `RDEX`).
pub(super) const SPLIT: u32 = 0x1000_0000;
/// log2 of a sub-granule of a split granule.
pub(super) const SUB_SHIFT: u32 = 4;
/// Bits of a sub-granule's field.
pub(super) const SUB_BITS: u32 = 7;
/// A field being taken over (its taker asks the owner); also the mask of a field.
pub(super) const SUB_LOCKED: u32 = (1 << SUB_BITS) - 1;
/// All four sub-granules.
pub(super) const ALL_SUBS: u32 = 0b1111;
// Fields sit below `SPLIT`, which no other state sets without a higher bit; thread codes that
// fit a field are below `SUB_LOCKED` (a thread with a larger code never splits a granule and
// merges one it takes).
const _: () = assert!(4 * SUB_BITS <= 28 && SPLIT < RDEX_BIT && (MAX_THREADS as u32) < SPLIT);

/// Whether shadow word `s` is a split granule.
#[inline(always)]
pub(super) fn is_split(s: u32) -> bool {
    s >> 28 == 1
}

/// The shift of the field of the sub-granule holding byte `addr`.
#[inline(always)]
pub(super) fn sub_shift(addr: usize) -> u32 {
    ((addr >> SUB_SHIFT) & 3) as u32 * SUB_BITS
}

/// The fast path of an access to a split granule, tried by the slow path before it enters
/// the runtime (the fast path's own code stays as it was for whole granules): the access lies
/// in one sub-granule whose field is this thread's, and nothing else sends the thread to the
/// runtime. Then digest and count as the fast path does; false: take the slow path.
#[inline(always)]
pub fn split_fast(addr: usize, size: usize, k: u64, fixed: bool) -> bool {
    // SAFETY: as in `tsan::access_at`: this thread's shared part, or the idle one (limit 0).
    let t = unsafe { &*state::cur_or_idle() };
    let e = t.events.load(Ordering::Relaxed) + 1;
    // SAFETY (the `Mine` reads): the current thread's own shared part, as in `fast_gate`.
    if unsafe { t.own_replay.get() } || (addr ^ (addr + size.max(1) - 1)) >> SUB_SHIFT != 0 {
        return false;
    }
    let idx = slot_of(addr);
    handover::pend(t, e, idx);
    if !below_limit(t, e) {
        return false;
    }
    let s = slot_word(idx).load(Ordering::Relaxed);
    let me = unsafe { t.own_me.get() };
    if !is_split(s) || me >= SUB_LOCKED || (s >> sub_shift(addr)) & SUB_LOCKED != me {
        return false;
    }
    fast_done(t, e, addr, size, k, fixed);
    true
}

/// The field (owner code, 0 or [`SUB_LOCKED`]) of sub-granule `i` in split word `w`.
fn field(w: u32, i: u32) -> u32 {
    (w >> (i * SUB_BITS)) & SUB_LOCKED
}

/// `s` with the fields of `subs` set to `code`; a word whose four fields are one thread's
/// merges back to that thread's `EXCL`.
pub(super) fn with_fields(s: u32, subs: u32, code: u32) -> u32 {
    let mut s = s;
    for i in 0..4 {
        if subs & (1 << i) != 0 {
            s = (s & !(SUB_LOCKED << (i * SUB_BITS))) | (code << (i * SUB_BITS));
        }
    }
    let first = s & SUB_LOCKED;
    if first != 0 && first != SUB_LOCKED && s == SPLIT | fields(ALL_SUBS, first) {
        first
    } else {
        s
    }
}

/// The fields of `subs` all holding `code` (no `SPLIT` bit).
pub(super) fn fields(subs: u32, code: u32) -> u32 {
    (0..4)
        .filter(|i| subs & (1 << i) != 0)
        .fold(0, |w, i| w | (code << (i * SUB_BITS)))
}

/// The last write transfer of each shadow slot, by the slot's low 20 bits (a collision only
/// misleads the guess; 8 MiB of zero pages, touched as granules change owner): the slot, the
/// taker and the sub-granules it wrote. (4096 entries missed fft's ping-pong: its scatter
/// takes thousands of other granules between two takes of one.)
static LAST_TAKE: [AtomicU64; 1 << 20] = [const { AtomicU64::new(0) }; 1 << 20];

/// Whether thread `me`, taking slot `idx` from `x` to write sub-granules `subs`, is the second
/// of two threads writing disjoint bytes of it in turn: the previous write transfer of the slot
/// was `x` taking it from `me` for sub-granules that `subs` does not touch.
pub(super) fn false_sharing(idx: u64, me: u32, x: u32, subs: u32) -> bool {
    // A thread holding a line (`held`) may access all of it without a callback.
    if me + 1 >= SUB_LOCKED || x + 1 >= SUB_LOCKED || super::held::on() {
        return false;
    }
    let cell = &LAST_TAKE[(idx as usize) & (LAST_TAKE.len() - 1)];
    let last = cell.load(Ordering::Relaxed);
    cell.store(
        (u64::from(slot_tag(idx)) << 32) | (u64::from(me) << 8) | u64::from(subs),
        Ordering::Relaxed,
    );
    (last >> 32) as u32 == slot_tag(idx)
        && ((last >> 8) & 0xff_ffff) as u32 == x
        && last & u64::from(subs) == 0
}

/// Take sub-granules `subs` of split granule `addr` (shadow word `s`) for a write of event
/// `e`: lock their fields, ask each other owner, log the edges, give them to this thread. A
/// read, or a thread whose code does not fit a field, takes all four and merges the granule
/// (a read to `RDEX`, so that other readers share it again instead of taking turns). False
/// when the word changed or a field is being taken (the caller answers, backs off and looks
/// again).
pub(super) fn take_subs(
    t: &mut Thread,
    addr: usize,
    s: u32,
    subs: u32,
    write: bool,
    e: u64,
) -> bool {
    let me = t.own_me();
    // The thread owns every sub-granule it touches (its fast path was refused for another
    // reason: a request to answer, a checkpoint due): nothing to take. A read merged the
    // granule here, asking the other owner, only to read the thread's own bytes. (A code that
    // does not fit a field owns none: 127 is `SUB_LOCKED`, a field being taken.)
    if me < SUB_LOCKED && (0..4).all(|i| subs & (1 << i) == 0 || field(s, i) == me) {
        return true;
    }
    let merge = !write || me >= SUB_LOCKED;
    let subs = if merge { ALL_SUBS } else { subs };
    // A merge locks every field (its own too: nobody may change the word until it is whole).
    let want = (0..4).fold(0, |m, i| {
        if subs & (1 << i) != 0 && (merge || field(s, i) != me) {
            m | 1 << i
        } else {
            m
        }
    });
    if want == 0 {
        return true;
    }
    if (0..4).any(|i| want & (1 << i) != 0 && field(s, i) == SUB_LOCKED) {
        return false;
    }
    let sh = shadow(addr);
    let locked = with_fields(s, want, SUB_LOCKED);
    if sh
        .compare_exchange(s, locked, Ordering::SeqCst, Ordering::Relaxed)
        .is_err()
    {
        return false;
    }
    let idx = slot_of(addr);
    // A merge from one other owner takes that owner's other split granules of the window along
    // (one round trip, not one per granule: after fft's bit-reversal scatter every line of the
    // array is split between the two threads, and each thread's next stage merges the lines of
    // its half one by one).
    let others = (0..4)
        .filter(|&i| want & (1 << i) != 0)
        .map(|i| field(s, i))
        .filter(|&c| c != 0 && c != me)
        .fold(0u128, |m, c| m | 1 << c);
    // A take of some fields from one other owner takes the same fields of the window's other
    // granules split alike (fft's scatter writes, in each pass, one line of every window from
    // both threads: the second half of the passes wrote the other thread's sub-granules, a
    // round trip per line).
    let batch = match (others.count_ones(), merge) {
        (1, true) => lock_split_batch(idx, me, others.trailing_zeros()),
        (1, false) => lock_sub_batch(idx, s, me, others.trailing_zeros()),
        _ => 0,
    };
    // Ask each other owner once (the answer covers all its accesses so far).
    let mut asked = 0u128;
    for i in 0..4 {
        let code = field(s, i);
        if want & (1 << i) == 0 || code == 0 || code == me || asked & (1 << code) != 0 {
            continue;
        }
        asked |= 1 << code;
        let x = code - 1;
        let src = request(t, x, idx);
        add_edge_after(t, e, x, src);
    }
    // Other fields may have changed meanwhile (their takers hold them locked): set ours.
    let mut cur = sh.load(Ordering::Acquire);
    loop {
        let next = if merge {
            // Every field is this thread's (or locked by it).
            merged(me, write)
        } else {
            with_fields(cur, want, me)
        };
        match sh.compare_exchange(cur, next, Ordering::SeqCst, Ordering::Acquire) {
            Ok(_) => break,
            Err(v) => cur = v,
        }
    }
    // The batch's granules were wholly locked by this thread: nobody changed them meanwhile.
    let after = if merge {
        merged(me, write)
    } else {
        with_fields(s, want, me)
    };
    unlock_batch(idx, batch, after);
    true
}

/// Lock, for a take of some fields of split word `s` (slot `idx`) by thread code `me` that
/// asks thread code `x` alone, every other granule of the window whose word is `s` too, when
/// each field of `s` is `x`'s, `me`'s or nobody's: wholly (as [`lock_split_batch`] does), so
/// that the same word, with the taken fields `me`'s, is every batched granule's new state. The
/// answer of `x` that covers `idx` covers them (its accesses up to the answer are complete;
/// the locked fields stop later ones). Returns the bit mask of the locked window slots.
fn lock_sub_batch(idx: u64, s: u32, me: u32, x: u32) -> u32 {
    if !fields_of(s, x, me) {
        return 0;
    }
    let locked = SPLIT | fields(ALL_SUBS, SUB_LOCKED);
    lock_window(idx, |v| (v == s).then_some(locked))
}

/// Whether every field of split word `v` is thread code `x`'s, `me`'s or nobody's (a batch
/// taken on one answer of `x` may hold no other thread's field).
fn fields_of(v: u32, x: u32, me: u32) -> bool {
    (0..4).all(|i| [x, me, 0].contains(&field(v, i)))
}

/// The state of a granule merged by thread code `me`: `EXCL` for a write, `RDEX` for a read
/// (its first write upgrades without asking: nobody else may access it).
fn merged(me: u32, write: bool) -> u32 {
    if write {
        me
    } else {
        me | RDEX_BIT
    }
}

/// Lock, for a merge by thread code `me` that asks thread code `x`, every other split granule
/// of slot `idx`'s window whose fields are all `x`'s, `me`'s or nobody's (at least one `x`'s),
/// none being taken: the answer of `x` that covers `idx` covers them (every access of `x` up
/// to its answer is complete, and their locked fields stop later ones, as `record::lock_batch`'s
/// locks do for whole granules). Returns the bit mask of the locked window slots, given their
/// merged state by [`unlock_batch`].
fn lock_split_batch(idx: u64, me: u32, x: u32) -> u32 {
    let locked = SPLIT | fields(ALL_SUBS, SUB_LOCKED);
    lock_window(idx, |v| {
        let ok = is_split(v) && fields_of(v, x, me) && (0..4).any(|i| field(v, i) == x);
        ok.then_some(locked)
    })
}

//! The `ownership` strategy: record only when a granule changes owner.
//!
//! Every 64-byte granule of the program's memory has an owner word in a direct-mapped shadow
//! (no hashing: an address computation). States:
//! * `0`: nobody accessed it yet;
//! * `EXCL(t)` = `t + 1`: thread t may read and write it;
//! * `RDEX(t)` = `EXCL(t) | RDEX_BIT`: thread t may read it (it got it by reading; its first
//!   write upgrades to `EXCL(t)` without asking anyone, since nobody else may read it);
//! * `SHARED | c`: every thread that has synchronised with read-shared epoch `c` may read it;
//! * `LOCKED | t`: thread t is taking it over (everyone else waits);
//! * `SPLIT | fields`: an owner per 16-byte sub-granule, for false sharing (`split`).
//!
//! **Record, fast path** (in the callback, `fast`): one load of the shadow word and a compare;
//! no atomic read-modify-write, no store to shared memory, no log entry. Every rare condition
//! (checkpoint due, request pending, signal pending, stripe held, jitter, replay edge due)
//! lowers the thread's `fast_limit`, so one compare of the event counter sends the thread to
//! the slow path.
//!
//! **Record, slow path** (`access`): a thread that may not access a granule locks it (CAS to
//! `LOCKED`), asks the owner (mailbox `req`, and lowers the owner's `fast_limit`), and waits
//! for the owner's answer at its next safe point: any runtime entry or callback, where all the
//! owner's earlier accesses are complete. An owner that is *free* (blocked in the runtime, in a
//! system call caught by Syscall User Dispatch, exited, parked, not started) has no access in
//! flight and is not asked. The new owner logs an *edge* `(owner, owner's completed events) ->
//! (my event)`. A thread waiting for an answer answers requests itself, so two threads asking
//! each other never deadlock. A write to a read-shared granule asks every thread. Reads of a
//! read-shared granule need no round trip: a thread that sees a newer epoch than it synchronised
//! with takes, under a runtime-private lock, an edge from the source of every read-shared
//! transition so far (`CUM`, one entry per thread).
//!
//! An edge's source is always a completion the new owner *observed* (an answer, or the free
//! state's published count), so the edges are a subset of the recording's happens-before:
//! replaying them cannot deadlock.
//!
//! **Replay** (`gate_replay`): no shadow and no locks. Each thread has its incoming edges sorted
//! by event; its `fast_limit` is the next edge's event, so the fast path is one compare. At an
//! edge it waits until the source thread has completed the source event (its event counter
//! passed it, or it published that count at a safe point). Values read, outputs and the end are
//! the independent check: an access ordered wrongly reads a different value, which changes the
//! digest at the next checkpoint.
//!
//! **Verification**: a read's value cannot change between its callback and its access (nobody
//! may write a granule the reader owns or shares), so the default digest folds each read's
//! value in its own callback (`rotate + add`, a short dependency chain) and each write's kind;
//! writes are checked by the reads that observe them, the outputs and the end. `--verify=full`
//! (checkpoint every event) sends every access through the slow path, which also folds the
//! previous access's value after it completed, as LEAP does.
#![allow(unsafe_code)]

use crate::access::{self, kind};
use crate::handover;
use crate::layout::SHADOW_ADDR;
use crate::state::{self, Shared, Thread};
use crate::sys;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use reprise_proto::*;

/// log2 of the granule: 64 bytes, a cache line. Chosen by measurement (`--size small`, 2
/// threads, record time against 8-byte granules): fft 1122 -> 432 ms, radix 1348 -> 232 ms,
/// matmul 702 -> 464 ms: data that migrates between threads moves a line per transfer, not a
/// variable, and the shadow costs 1/16 of the data's cache footprint instead of 1/2. A granule
/// is handed over at the owner's next callback whatever its size, so a coarse granule does not
/// hide races between neighbours; it turns neighbouring private data of two threads into
/// transfers (false sharing, which costs them natively too).
pub const GRANULE_SHIFT: u32 = 6;
/// Bits of a user-space address (x86-64, 4-level page tables: the kernel maps nothing at or
/// above 2^47 for a process that does not ask for more).
pub const ADDR_BITS: u32 = 47;
/// Bytes of the shadow: one `u32` for each granule of the address space (8 TiB, reserved,
/// lazily committed: a page of shadow per 64 KiB of data the program touches).
pub const SHADOW_SIZE: u64 = 4 << (ADDR_BITS - GRANULE_SHIFT);

const SHARED: u32 = 0x8000_0000;
const LOCKED: u32 = 0x4000_0000;
const RDEX_BIT: u32 = 0x2000_0000;
/// Whether a second reader turns a granule read-shared (`SHARED | epoch`) instead of taking it
/// read-exclusively (then readers take turns, a transfer per alternation: a shared lookup table
/// or centroid array read by every thread ping-pongs, 100x slower). A switch, so the two can
/// be compared; on by default.
const READ_SHARING: bool = true;
/// Epochs stop here (then readers take granules exclusively instead of sharing them).
const MAX_EPOCH: u32 = RDEX_BIT - 16;
// The fast path's read test clears `RDEX_BIT` before its epoch compare (`fast_gate`).
const _: () = assert!(MAX_EPOCH < RDEX_BIT && RDEX_BIT < LOCKED && LOCKED < SHARED);

/// The owner word of the granule holding byte `addr`: the shadow is direct-mapped over the
/// whole address space (as ThreadSanitizer's), so no two granules share a word.
#[inline(always)]
fn shadow(addr: usize) -> &'static AtomicU32 {
    slot_word(slot_of(addr))
}

/// The shadow slot of the granule holding byte `addr`: its granule index, of the address's low
/// [`ADDR_BITS`] bits (a wild pointer, which the program's access will fault on, must not make
/// the callback fault first on a shadow word that does not exist). Two shifts. (A 32-bit slot
/// table, blocks of the address space spread over it by a multiply, cost the fast path five
/// instructions and a multiply's latency before the shadow load: record/floor `-t 1` 5-7%
/// higher on matmul, fft and nbody.)
#[inline(always)]
pub(crate) fn slot_of(addr: usize) -> u64 {
    let idx: u64;
    // SAFETY: arithmetic on registers alone (LLVM folds the two shifts into a shift and a
    // 64-bit mask, one instruction more: `movabs` of the mask).
    unsafe {
        core::arch::asm!(
            "shl ${l}, {i}",
            "shr ${r}, {i}",
            i = inout(reg) addr as u64 => idx,
            l = const 64 - ADDR_BITS,
            r = const 64 - ADDR_BITS + GRANULE_SHIFT,
            options(att_syntax, pure, nomem, nostack),
        );
    }
    idx
}

/// The 32 low bits of slot `idx`, which the pending word and a request carry: they are only
/// compared (two slots 2^32 granules apart look alike, and a handover refused for that costs
/// a wait, never a wrong order).
#[inline(always)]
pub(crate) fn slot_tag(idx: u64) -> u32 {
    idx as u32
}

#[inline(always)]
fn slot_word(idx: u64) -> &'static AtomicU32 {
    // SAFETY: the shadow maps a word for every granule below 2^ADDR_BITS at SHADOW_ADDR when
    // the strategy is ownership (only then does a thread's fast_limit rise above 0 and the
    // slow path reach here), and `idx` is a user-space address's granule (the program accessed
    // it).
    unsafe { &*((SHADOW_ADDR as *const AtomicU32).add(idx as usize)) }
}

/// The digest step: a rotate and an add (one short dependency chain per event).
#[inline(always)]
pub fn fold(d: u64, x: u64) -> u64 {
    d.rotate_left(5).wrapping_add(x)
}

/// Count slow-path event `e` of kind `k`. Its runtime entry (the positions of asynchronous
/// signal deliveries) was counted by `entry::enter`, so the event lowers the entry bias: an
/// access is one entry whichever path it takes, and record and replay (whose slow paths fall at
/// different events: transfers vs. edges) agree.
#[inline(always)]
fn count(t: &mut Thread, e: u64, k: u64) {
    let sh = t.sh();
    sh.kinds[k as usize % KINDS].bump();
    sh.events.store(e, Ordering::Release);
    held::refill(sh);
    held::replay_cut(t);
    t.entry_bias = t.entry_bias.wrapping_sub(1);
}

// ---- safe points, answers, the free state ------------------------------------------------------

/// Answer pending requests: every access up to the thread's event count is complete.
#[inline(always)]
pub fn answer(t: &Shared) {
    if t.mb.req.load(Ordering::Relaxed) != 0 {
        answer_now(t);
    }
}

#[cold]
fn answer_now(t: &Shared) {
    // The requester may take any of this thread's granules once answered: held ones too.
    let released = held::release(t);
    t.mb.req.swap(0, Ordering::SeqCst);
    // Inside an access's slow path that has taken granules from others (a ranged access waiting
    // for its next granule): the requester may take one of those, whose bytes come from the
    // threads they were taken from, not from this thread's completed events. It also waits
    // for this thread to pass those edges in replay (`EDGE_AFTER`).
    // The list's last entry names the pending event (the count's next) only when this access
    // has logged its edges (they come last in the list).
    // SAFETY: the current thread's own shared part (`answer` runs on the owner).
    let pending = t.events.load(Ordering::Relaxed) + 1;
    let fwd = if unsafe { t.in_access.get() } && t.last_edge_event.get() == pending {
        t.edges_logged.get()
    } else {
        0
    };
    t.mb.ack.fwd.store(fwd, Ordering::Relaxed);
    t.mb.ack
        .done
        .store(t.events.load(Ordering::Relaxed), Ordering::Release);
    t.mb.ack.seq.fetch_add(1, Ordering::SeqCst);
    handover::wake_requesters(t.tid.load(Ordering::Relaxed));
    if released {
        held::log_release(t);
    }
}

/// Publish the completed events (a safe point) and answer requests.
#[inline(always)]
pub fn publish(t: &Shared) {
    if !held::holds_back(t) {
        t.mb.done
            .store(t.events.load(Ordering::Relaxed), Ordering::Release);
    }
    answer(t);
}

/// The thread stops accessing program memory until its next slow runtime entry (it blocks, makes
/// a system call, exits or parks): requests are granted without an answer.
pub fn set_free(t: &Shared) {
    // A free thread's granules are taken without asking: held ones too.
    if held::release(t) {
        held::log_release(t);
    }
    publish(t);
    t.mb.free.store(1, Ordering::SeqCst);
    t.fast_limit.store(0, Ordering::SeqCst);
    handover::wake_requesters(t.tid.load(Ordering::Relaxed));
}

/// [`set_free`] for thread `tid` (from code that has only the id).
pub fn set_free_tid(tid: u32) {
    set_free(state::shared(tid));
}

/// Recompute the thread's fast-path limit (after any slow entry).
pub fn recompute(t: &mut Thread) {
    if state::strategy() != state::Strategy::Ownership {
        return;
    }
    if t.own_replay() && held::on() {
        held::note_release_in(t);
    }
    let every = state::CHECKPOINT.load(Ordering::Relaxed);
    let e = t.sh().events.load(Ordering::Relaxed);
    if t.next_ckpt <= e {
        t.next_ckpt = (e / every + 1) * every;
    }
    let mut lim = t.next_ckpt;
    let m = state::mode();
    if every == 1
        || state::JITTER.load(Ordering::Relaxed) != 0
        || t.held != NO_STRIPE
        || t.held_multi
        || t.passthrough
        || t.sh().sig_pending.load(Ordering::Relaxed) != 0
        || t.sh().pending_size.get() != 0
        || !(m == state::M_RECORD || m == state::M_REPLAY)
    {
        lim = 0;
    }
    if t.own_replay() && lim != 0 {
        if let Some(ti) = state::thread_index(t.tid) {
            let edges = state::pairs(ti.edges_off, ti.edges_len);
            if let Some(p) = edges.get(t.next_edge) {
                lim = lim.min(p.event);
            }
            if state::config().end.kind != END_UNKNOWN {
                lim = lim.min(ti.final_events + 1);
            }
        }
        if t.held_clear_at != 0 {
            // The event after a release empties the held table (`held::replay_clear`).
            lim = lim.min(t.held_clear_at);
        }
        if t.next_sig_at != u64::MAX {
            let entries = t.entries();
            lim = if t.next_sig_at > entries {
                lim.min(e + (t.next_sig_at - entries))
            } else {
                0
            };
        }
        lim = lim.min(doorbell(t.sh(), e));
    }
    t.sh().fast_limit.store(lim, Ordering::SeqCst);
    if t.own_replay() && lim != 0 {
        // A doorbell rung while we computed (its lowered limit overwritten just now).
        let w = doorbell(t.sh(), e);
        if w < lim {
            t.sh().fast_limit.store(w, Ordering::SeqCst);
        }
    }
    // A request (or the free state) that arrived while we computed must not be lost.
    if t.sh().mb.req.load(Ordering::SeqCst) != 0
        || t.sh().held_stop.load(Ordering::SeqCst) != 0
        || t.sh().mb.free.load(Ordering::Relaxed) != 0
        || t.sh().sig_pending.load(Ordering::Relaxed) != 0
    {
        t.sh().fast_limit.store(0, Ordering::SeqCst);
    }
}

/// Replay: the event a waiter wants this thread to publish at ([`ring`]), u64::MAX when none
/// is due; one met (`e` events counted) is cleared.
fn doorbell(sh: &Shared, e: u64) -> u64 {
    let w = sh.mb.replay_want.load(Ordering::SeqCst);
    if w == 0 {
        return u64::MAX;
    }
    if w <= e {
        // Met: the count before it is published. A waiter that rang later, for a later
        // event, set a larger value only if ours was gone: compare-exchange keeps it.
        let _ = sh
            .mb
            .replay_want
            .compare_exchange(w, 0, Ordering::SeqCst, Ordering::SeqCst);
        return u64::MAX;
    }
    w
}

/// Back off while waiting: spin, then yield, then sleep briefly.
#[inline]
fn backoff(spins: &mut u32) {
    *spins += 1;
    if *spins < 100 {
        core::hint::spin_loop();
    } else if *spins < 120 {
        sys::yield_now();
    } else {
        sys::sleep_ns(20_000);
    }
}

fn mark_waiting(t: &Thread, on: u32) {
    let st = state::status(t.tid);
    st.stripe.store(NO_STRIPE, Ordering::Relaxed);
    st.waits_for.store(on, Ordering::Relaxed);
    st.events
        .store(t.sh().events.load(Ordering::Relaxed), Ordering::Relaxed);
    st.state.store(ST_WAIT_TURN, Ordering::SeqCst);
}

/// Waiting by time: spin, and every 64 spins look at the clock; after 1 ms the thread is marked
/// waiting for thread `x` (for the watchdog) until [`WaitClock::done`].
#[derive(Default)]
struct WaitClock {
    spins: u32,
    t0: u64,
    marked: bool,
}

impl WaitClock {
    /// None: spun once more. Some: the nanoseconds waited so far (every 64th call).
    #[inline]
    fn tick(&mut self, t: &Thread, x: u32) -> Option<u64> {
        self.spins = self.spins.wrapping_add(1);
        if !self.spins.is_multiple_of(64) {
            core::hint::spin_loop();
            return None;
        }
        let now = sys::now_ns();
        if self.t0 == 0 {
            self.t0 = now;
        }
        let waited = now - self.t0;
        if waited > 1_000_000 && !self.marked {
            mark_waiting(t, x);
            self.marked = true;
        }
        Some(waited)
    }

    /// The wait is over.
    fn done(self, t: &Thread) {
        if self.marked {
            mark_running(t);
        }
    }
}

fn mark_running(t: &Thread) {
    state::status(t.tid)
        .state
        .store(ST_RUNNING, Ordering::SeqCst);
}

mod fast;
pub mod held;
mod record;
mod replay;
mod split;
use fast::{below_limit, digest_access};
pub use fast::{count_fast_atomic, fast_done, fast_gate, plain_done, record_gate, replay_gate};
use record::acquire_ranges;
pub use record::BATCH_SHIFT;
use replay::gate_replay;
pub use split::split_fast;

// ---- the slow path --------------------------------------------------------------------------------

/// The slow path of one access (the caller entered the runtime): a safe point, then record:
/// take every granule of `ranges` ((address, size, write) of what the access touches);
/// replay: wait for the edges into this event. Returns the event number.
pub fn access(t: &mut Thread, ranges: &[(usize, usize, bool)]) -> u64 {
    held::access_begins(t);
    // A safe point: every earlier access is complete.
    access::fold_pending(t);
    crate::leap::release_held(t);
    if t.sh().mb.free.load(Ordering::Relaxed) != 0 {
        t.sh().mb.free.store(0, Ordering::SeqCst);
    }
    publish(t.sh());
    access::jitter(t);
    let e = t.sh().events.load(Ordering::Relaxed) + 1;
    if t.own_replay() {
        gate_replay(t, e);
    } else {
        let single = match ranges {
            [(a, n, _)] if (*a ^ (*a + (*n).max(1) - 1)) >> GRANULE_SHIFT == 0 => Some(slot_of(*a)),
            _ => None,
        };
        match single {
            Some(idx) => handover::pend(t.sh(), e, idx),
            None => t.sh().pend.store(handover::PEND_ALL, Ordering::Relaxed),
        }
        acquire_ranges(t, ranges, e);
    }
    held::access_ends(t);
    e
}

/// Finish a slow-path event: digest, count, checkpoint, and (under `--verify=full`) remember
/// the access so its value is folded once complete. `value`: what to fold instead of the
/// access (an atomic's result; a ranged access's kind, see [`digest_access`]), with nothing
/// folded once complete.
pub fn finish_event(t: &mut Thread, e: u64, addr: usize, size: usize, k: u64, value: Option<u64>) {
    match value {
        Some(v) => t.sh().digest.set(fold(t.sh().digest.get(), v)),
        None => digest_access(t.sh(), addr, size, k, true),
    }
    count(t, e, k);
    if e >= t.next_ckpt {
        let every = state::CHECKPOINT.load(Ordering::Relaxed);
        if e.is_multiple_of(every) {
            access::checkpoint(t, e);
        }
        t.next_ckpt = (e / every + 1) * every;
        if every == 1 && value.is_none() {
            t.sh().pending_addr.set(addr as u64);
            t.sh().pending_size.set(size as u64);
        }
    }
}

/// Process end (record): stop every other thread at its next callback, and wait briefly for
/// those running to get there, so their final counts are not taken mid-access.
pub fn stop_all(me: u32) {
    let n = state::NEXT_TID
        .load(Ordering::SeqCst)
        .min(MAX_THREADS as u32);
    for x in 0..n {
        state::shared(x).fast_limit.store(0, Ordering::SeqCst);
    }
    // Every running thread passes a full barrier: a callback that stored its `pend` before it
    // is seen below; one that stores it after loads the zero limit after it (`fast_gate`
    // stores `pend` before it loads the limit) and takes the slow path, which parks.
    let fenced = handover::barrier();
    for x in 0..n {
        if x == me {
            continue;
        }
        let xs = state::shared(x);
        let st = state::status(x);
        let stopped = || {
            xs.mb.free.load(Ordering::SeqCst) != 0 || st.state.load(Ordering::SeqCst) != ST_RUNNING
        };
        let mut waited = 0;
        while waited < 2_000 && !stopped() {
            sys::sleep_ns(50_000);
            waited += 1;
        }
        // A thread preempted inside a callback (its `pend` names the event after its count)
        // counts that event when it runs again: wait for it (a callback is a few dozen
        // instructions; 2 s bounds a thread the scheduler starves), so that the final
        // checkpoint and count read next are its last. A thread in long uninstrumented code
        // has no callback in progress and is not waited for beyond the 100 ms above.
        let mut waited = 0;
        while fenced && waited < 40_000 && !stopped() && in_callback(xs) {
            sys::sleep_ns(50_000);
            waited += 1;
        }
    }
}

/// Whether thread `xs` is inside a plain-access callback that has not counted its event yet
/// (its `pend` names the event after its count).
fn in_callback(xs: &Shared) -> bool {
    let p = xs.pend.load(Ordering::SeqCst);
    let ev = xs.events.load(Ordering::SeqCst);
    p != handover::PEND_NONE && p != handover::PEND_ALL && (p >> 32) as u32 == (ev + 1) as u32
}

//! Held granules: accesses a thread takes as uncounted *hits*.
//!
//! Most accesses of a kernel fall on a granule the thread accessed a moment ago (the next
//! element of a row, the same accumulator): 72-98% of the suite's accesses at `--size small`
//! hit a 64-entry table of the thread's last granules. Such an access needs no shadow load, no
//! pending mark and no event: the thread still holds the granule, because it gives a held
//! granule away only by *releasing* all of them, at points replay can find again.
//!
//! - **The table** ([`Shared::held`]): 64 entries `granule << 1 | writable`, indexed by a hash of
//!   the granule. Every counted plain access of fixed size (fast or slow path, record and
//!   replay alike) enters its granule; an access of a power-of-two size up to 16 bytes, aligned,
//!   whose granule is there (writable, for a write) is a hit: its read value is folded into the
//!   digest as on the fast path, and nothing else happens. The table's contents depend only on
//!   the thread's own accesses and on its releases, so record and replay make the same
//!   accesses hits and count the same events.
//! - **Releases** (record): the thread clears the table whenever it may give granules away
//!   without a steal: before it answers a request, and when it turns free (blocks, makes a
//!   system call, parks, exits). The release is logged in the thread's edge list as
//!   [`EDGE_RELEASE`] at the thread's next event: every access after a release and before that
//!   event misses (the table is empty), so replay, which clears the table when it reaches that
//!   event, makes the same accesses hits. A release with an empty table is not logged.
//! - **Steals and the handover signal** never take a granule of a held window
//!   ([`in_window`]): the thread may be about to access it without a callback.
//! - **Bounded**: a thread takes at most [`HITS`] hits in a row; the next access is counted
//!   (the fast path), so a thread spinning on a held flag reaches a safe point and answers a
//!   request within that many accesses.
//! - **Off** under `--verify=full` (every access is an event), under the other strategies, and
//!   together with split granules (a thread holding some sub-granules of a line does not hold
//!   the line): `split::false_sharing` never splits while held granules are on.
#![allow(unsafe_code)]

use super::*;
use core::sync::atomic::AtomicBool;

/// Hits a thread may take in a row before an access is counted again.
pub const HITS: u32 = 1024;

static ON: AtomicBool = AtomicBool::new(false);

/// Turn held granules on for this run (ownership, not `--verify=full`): record and replay
/// decide alike, from the trace's strategy and checkpoint interval.
pub fn enable(on: bool) {
    ON.store(on, Ordering::Relaxed);
}

/// Whether held granules are on.
#[inline(always)]
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// [`on`] for the callbacks: one compare of the flag in memory and a branch (a Rust atomic load
/// is never folded into the compare), so the default path, with held granules off, pays two
/// instructions for them.
#[inline(always)]
pub fn on_in_callback() -> bool {
    // SAFETY: a one-byte load of `ON` (an `AtomicBool`: a relaxed load on x86-64); reads no
    // other memory, writes none.
    unsafe {
        core::arch::asm!(
            "cmpb $0, {on}(%rip)",
            "je {no}",
            on = sym ON,
            no = label { return false; },
            options(att_syntax, nostack, readonly),
        );
    }
    true
}

#[inline(always)]
fn index(g: u64) -> usize {
    ((g as u32).wrapping_mul(0x9E37_79B1) >> 26) as usize
}

/// Whether an access of `size` bytes at `addr` may be a hit: a callback of fixed size, a
/// power of two up to 16 bytes, aligned to it (so inside one granule).
#[inline(always)]
pub fn fits(addr: usize, size: usize, fixed: bool) -> bool {
    fixed && size.is_power_of_two() && size <= 16 && addr & (size - 1) == 0
}

/// What [`probe`] found.
#[derive(PartialEq, Eq)]
pub enum Probe {
    /// Not held (or no hits left): the fast path.
    Miss,
    /// Taken as a hit.
    Hit,
    /// Held, but a requester stopped the thread's hits: the slow path, which logs where they
    /// stopped (the fast path would count an access that replay, with no requester, takes as
    /// a hit).
    Stopped,
}

/// Take access (`write`) of `addr` as a hit if its granule is held (writable, for a write) and
/// the thread has hits left. The caller checked [`fits`].
#[inline(always)]
pub fn probe(t: &Shared, addr: usize, write: bool) -> Probe {
    let g = (addr >> GRANULE_SHIFT) as u64;
    let c = t.held.0[index(g)].load(Ordering::Relaxed);
    let held = if write {
        c == (g << 1) | 1
    } else {
        c >> 1 == g
    };
    if !held {
        return Probe::Miss;
    }
    let left = t.hits_left.load(Ordering::Relaxed);
    // `held_stop` is 0, or above every count when a requester waits (one compare for both).
    let stop = t.held_stop.load(Ordering::Relaxed);
    if left <= stop {
        return if stop == 0 {
            Probe::Miss
        } else {
            Probe::Stopped
        };
    }
    t.hits_left.store(left - 1, Ordering::Relaxed);
    Probe::Hit
}

/// An access [`probe`] took as a hit: fold it as the fast path would, count nothing.
#[inline(always)]
pub fn hit_done(t: &Shared, addr: usize, size: usize, k: u64) {
    digest_access(t, addr, size, k, true);
}

/// A cancellation point (both modes, `cancel::reprise_cancel_point`): the thread's next access
/// is counted. A cancellation is found again in replay by the event count where its call began
/// (`cancel::marked_here`); the hits between two calls of a loop (thread_exit's `bump(1);
/// pthread_testcancel()`) would give many calls one count, and replay would end the thread at
/// the first of them.
pub fn end_run() {
    if !on() {
        return;
    }
    // SAFETY: this thread's own shared part, or the idle one (whose hits are never taken: its
    // table is empty), written by atomics only.
    let t = unsafe { &*state::cur_or_idle() };
    if t.hits_left.load(Ordering::Relaxed) != 0 {
        t.hits_left.store(0, Ordering::Relaxed);
    }
}

/// A counted event: the thread may take [`HITS`] hits again.
#[inline(always)]
pub fn refill(t: &Shared) {
    t.hits_left.store(HITS, Ordering::Relaxed);
}

/// Enter the granule of a counted plain access of fixed size at `addr` (the thread holds it
/// now: it passed the fast path's check, or the slow path took it). A read leaves a writable
/// entry of the same granule as it is.
#[inline(always)]
pub fn enter(t: &Shared, addr: usize, write: bool) {
    if !on() {
        return;
    }
    let g = (addr >> GRANULE_SHIFT) as u64;
    let e = &t.held.0[index(g)];
    if write || e.load(Ordering::Relaxed) >> 1 != g {
        e.store((g << 1) | write as u64, Ordering::Relaxed);
    }
    // SAFETY: `t` is the calling thread's own shared part (callbacks run on the thread whose
    // slot `reprise_cur` names); no reference to the flag is live.
    unsafe { t.held_dirty.set(true) };
}

/// Record: release every held granule of thread `t` (its own shared part), before it answers
/// or turns free. True when the table held anything: the caller then logs the release with
/// [`log_release`] (after its answer, so the requester does not wait for the log). Until the
/// thread's next event no access is a hit (its hits left are 0), and that event empties the
/// table: replay, which cannot see where between two events the release came, repeats both.
pub fn release(t: &Shared) -> bool {
    // SAFETY: `t` is the calling thread's own shared part (see the callers); `own_replay` and
    // `held_dirty` are read and written by that thread alone.
    unsafe {
        if t.own_replay.get() || !t.held_dirty.get() {
            return false;
        }
        t.held_dirty.set(false);
    }
    clear(t);
    // The thread's hits since its last callback may have touched any granule it released: a
    // steal must not take `pend`'s event as the source (the hits came after it). With no
    // pending access named, steals wait for the answer and the handler grants the count.
    t.pend.store(handover::PEND_NONE, Ordering::Release);
    true
}

/// Log a release of thread `t`'s held granules at its last event, with the hits it had left
/// (see the module docs). Before [`release`]'s caller lets the thread take another hit.
pub fn log_release(t: &Shared) {
    if state::mode() != state::M_RECORD {
        // The recording has ended (a thread stopping after it): nothing more is logged.
        return;
    }
    // SAFETY: as in `release`.
    if unsafe { t.in_access.get() } {
        // Inside the slow path of event e + 1, after every hit before it, perhaps after its
        // edges were logged: replay empties the table at that event.
        let e = t.events.load(Ordering::Relaxed) + 1;
        let v = EDGE_RELEASE | RELEASE_IN_ACCESS as u64;
        access::log_pair_of(t.tid.load(Ordering::Relaxed), R_EDGE, e, v);
    } else {
        log_mark(t, 0);
    }
}

/// Log where thread `t`'s hits ran out: its last event and the hits it had left then, with
/// `flags` ([`HELD_CUT_ONLY`]: the table stays).
fn log_mark(t: &Shared, flags: u64) {
    let e = t.events.load(Ordering::Relaxed);
    if e == 0 || state::mode() == state::M_REPLAY {
        // No event yet, so no hit yet: nothing to repeat.
        return;
    }
    let v = EDGE_RELEASE | flags | u64::from(t.hits_left.load(Ordering::Relaxed));
    access::log_pair_of(t.tid.load(Ordering::Relaxed), R_EDGE, e, v);
}

/// Record, at the start of an access's slow path (its event not counted yet): if a requester
/// stopped this thread's hits, the access may be one that would have been a hit: log where the
/// hits ran out (replay stops them there too) and allow hits again.
pub fn unstop(t: &Shared) {
    if t.held_stop.load(Ordering::Relaxed) != 0 {
        t.held_stop.store(0, Ordering::SeqCst);
        log_mark(t, HELD_CUT_ONLY);
    }
}

/// Record: stop the hits of thread `x`, whose granule a requester waits for (it already lowered
/// `x`'s fast-path limit, so the access that finds its hits stopped takes the slow path).
pub fn stop(x: &Shared) {
    if on() {
        x.held_stop.store(u32::MAX, Ordering::SeqCst);
    }
}

/// Record, the process ending: thread `x`'s final position among its hits, logged for it by the
/// ending thread (`x` is stopped: parked, blocked, or outside instrumented code).
pub fn log_end(x: &Shared) {
    if on() && x.events.load(Ordering::Relaxed) > 0 {
        log_mark(x, HELD_CUT_ONLY);
    }
}

/// Replay: a mark the recording logged at event `e` with `left` hits left (`released`: it also
/// released its held granules): once `e` is counted the thread takes `left` hits fewer (so its
/// hits run out where the recording's did), and its next event empties the table if released.
pub fn replay_release(t: &mut Thread, e: u64, left: u32, released: bool) {
    if left == RELEASE_IN_ACCESS {
        clear(t.sh());
        return;
    }
    t.held_cut = left + 1;
    if released {
        t.held_clear_at = e + 1;
        // SAFETY: the current thread's own shared part.
        unsafe { t.sh().rel_after.set(e) };
    }
}

/// Replay: whether publishing the count now would tell waiting threads too early that this
/// thread passed its recorded answer. The recording's release (and its answer, or its turning
/// free, whose source is the count) came after some hits, and the thread's runtime entries
/// between its last event and that point publish the same count (`pthread_testcancel` between
/// the hits of thread_exit's busy loop): a thread waiting for that count must wait for the
/// release point, which the recording's mark gives: once the hits up to it are taken (after
/// `rel_after`), or once the access whose slow path released is reached (`rel_in`).
#[inline]
pub fn holds_back(t: &Shared) -> bool {
    // SAFETY: the current thread's own shared part (`publish` is called for it alone).
    let (after, inn) = unsafe { (t.rel_after.get(), t.rel_in.get()) };
    if after == 0 && inn == 0 {
        return false;
    }
    let e = t.events.load(Ordering::Relaxed);
    (after != 0 && e == after && t.hits_left.load(Ordering::Relaxed) > 0) || inn == e + 1
}

/// Replay (the thread's next-edge cursor moved): note a release inside the slow path of the
/// next access to come (`rel_in`), which [`holds_back`] waits for.
pub fn note_release_in(t: &mut Thread) {
    let Some(ti) = state::thread_index(t.tid) else {
        return;
    };
    // Among the entries of the next event with any (its edges may come first).
    let edges = &state::pairs(ti.edges_off, ti.edges_len)[t.next_edge.min(ti.edges_len as usize)..];
    let next = edges.first().map_or(0, |p| p.event);
    let release_in = edges
        .iter()
        .take_while(|p| p.event == next)
        .any(|p| held_mark(p.value).is_some_and(|(l, _)| l == RELEASE_IN_ACCESS));
    let at = if release_in { next } else { 0 };
    // SAFETY: the current thread's own shared part.
    unsafe { t.sh().rel_in.set(at) };
}

/// The slow path of an access (`ownership::access`) begins: record, unstop the thread's hits;
/// replay, pass the release point of a release inside it.
pub fn access_begins(t: &mut Thread) {
    // SAFETY: the current thread's own shared part (see `release`).
    unsafe { t.sh().in_access.set(true) };
    if t.own_replay() {
        reached_release_in(t);
    } else {
        unstop(t.sh());
    }
}

/// The slow path of an access has taken what it needs (its event is counted next).
pub fn access_ends(t: &mut Thread) {
    // SAFETY: as in `access_begins`.
    unsafe { t.sh().in_access.set(false) };
}

/// Replay, in the slow path of an access: it is the release point of a release noted by
/// [`note_release_in`] for it, if any.
fn reached_release_in(t: &mut Thread) {
    let e = t.sh().events.load(Ordering::Relaxed) + 1;
    // SAFETY: the current thread's own shared part.
    unsafe {
        if t.sh().rel_in.get() == e {
            t.sh().rel_in.set(0);
        }
    }
}

/// Replay, at the start of event `e`: empty the table if a release came before it.
#[inline]
pub fn replay_clear(t: &mut Thread, e: u64) {
    if t.held_clear_at != 0 && e >= t.held_clear_at {
        clear(t.sh());
        t.held_clear_at = 0;
        // SAFETY: the current thread's own shared part.
        unsafe { t.sh().rel_after.set(0) };
    }
}

/// Replay, once an event is counted: take away the hits of a release logged at it.
#[inline]
pub fn replay_cut(t: &mut Thread) {
    if t.held_cut != 0 {
        let h = t.sh().hits_left.load(Ordering::Relaxed);
        t.sh()
            .hits_left
            .store(h.saturating_sub(t.held_cut - 1), Ordering::Relaxed);
        t.held_cut = 0;
    }
}

/// Empty the table (record: a release; replay: a release logged at this event; a new thread).
pub fn clear(t: &Shared) {
    for e in &t.held.0 {
        e.store(0, Ordering::Relaxed);
    }
}

/// Whether thread `t` holds a granule of the transfer window of the shadow slot tagged `idx`
/// (`ownership::slot_tag`; a steal or the handover signal must not give that window away).
/// Another thread's table is read after a process-wide barrier (`handover::steal`): an entry
/// stored before it is seen, and one stored after it comes from a callback whose pending
/// access names the window.
pub fn in_window(t: &Shared, idx: u32) -> bool {
    if !on() {
        // Off (the default): no table to scan on a steal or in the handover handler.
        return false;
    }
    let w = idx >> BATCH_SHIFT;
    t.held.0.iter().any(|e| {
        let c = e.load(Ordering::Acquire);
        c != 0 && slot_tag(slot_of(((c >> 1) << GRANULE_SHIFT) as usize)) >> BATCH_SHIFT == w
    })
}

/// Replay, at event `e`'s gate: if `p`, the thread's next edge, is a mark at `e`, repeat it
/// and pass it (true).
pub fn replay_mark(t: &mut Thread, e: u64, p: &Pair) -> bool {
    match held_mark(p.value) {
        Some((left, released)) if p.event == e => {
            replay_release(t, e, left, released);
            t.next_edge += 1;
            true
        }
        _ => false,
    }
}

/// Replay: at event `e`, one that is not an access (a synchronisation operation's:
/// `access::count_event`, which leaves the hits left as they are), repeat the recording's
/// releases of held granules: the one before it, and one logged at it.
pub fn replay_releases(t: &mut Thread, e: u64) {
    if !on() || !t.own_replay() {
        return;
    }
    replay_clear(t, e);
    let Some(ti) = state::thread_index(t.tid) else {
        return;
    };
    let edges = state::pairs(ti.edges_off, ti.edges_len);
    while let Some(p) = edges.get(t.next_edge) {
        if !replay_mark(t, e, p) {
            break;
        }
    }
    // Count events leave the hits left alone: a mark logged at this event (here, or by the
    // slow path of the access it made first: a static guard's) takes effect now.
    replay_cut(t);
}

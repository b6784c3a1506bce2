//! LEAP (seed 001) in the runtime: per-stripe access vectors, recorded and enforced.
//!
//! Every shared access (memory, atomic, synchronisation object) takes a *turn* on the stripe
//! of its address and keeps it until the thread's next safe point (its next callback or
//! runtime entry), because the callback runs before the access and only the next entry proves
//! the access complete. While recording, a turn is a fair ticket lock and the order in which
//! threads take it is appended to the stripe's access vector, run-length compacted (LEAP 4.2);
//! that makes the recorded order the real order. While replaying, a thread first waits (futex,
//! not a spin) until the vector's current run names it, then takes the same ticket lock, and
//! appends again: the replay re-records itself, and the launcher compares the two vectors.
//!
//! A thread holds at most one stripe, except a ranged access, which takes its stripes in
//! ascending order (no deadlock). Early termination (LEAP 2.5): a thread whose turn never
//! comes because the vector is exhausted parks for good.
#![allow(unsafe_code)]

use crate::channel;
use crate::state::{self, Thread};
use crate::sys;
use crate::ticket::{ticket_release, ticket_wait, YIELD_FOR_NS};
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use reprise_proto::*;

/// Entries buffered per stripe before its vector piece is sent to the launcher.
const BUF: usize = 26;

/// One stripe: its ticket lock, replay cursor and record buffer.
#[repr(C, align(64))]
pub struct Stripe {
    next: AtomicU32,
    serving: AtomicU32,
    /// Replay: number of turns consumed (futex word for waiters).
    pos: AtomicU32,
    waiters: AtomicU32,
    /// Replay: `run index << 32 | used in that run`; written only by the turn holder.
    cursor: AtomicU64,
    /// Record: threads asleep on `serving` (so an unlock wakes only when someone sleeps).
    sleepers: AtomicU32,
    /// What only the holder of the stripe's ticket touches ([`holder_rec`]).
    rec: UnsafeCell<StripeRec>,
}

/// The part of a stripe owned by the holder of its ticket: every thread has a shared
/// reference to every stripe (the atomics), and this cell is the only thing reached mutably,
/// by one thread at a time.
#[repr(C)]
struct StripeRec {
    /// Turns taken so far (the access's position in the vector).
    seq: u64,
    len: u32,
    buf: [VecEntry; BUF],
}

/// The holder's part of stripe `st`.
///
/// # Safety
/// The caller holds `st`'s ticket (record or replay) and keeps the returned reference only
/// while it does; the ticket is unique, so no other reference to the cell exists meanwhile.
#[inline(always)]
#[allow(clippy::mut_from_ref)]
unsafe fn holder_rec(st: &Stripe) -> &mut StripeRec {
    // SAFETY: per the function contract.
    unsafe { &mut *st.rec.get() }
}

/// Bytes of the stripe table.
pub const STRIPE_TABLE_SIZE: u64 = (STRIPES * core::mem::size_of::<Stripe>()) as u64;

#[inline(always)]
fn stripe(s: u32) -> &'static Stripe {
    // SAFETY: the table is mapped at init for STRIPES entries (zeroed: a valid Stripe) and
    // never unmapped; every thread shares it: its fields are atomics, except `rec`, an
    // UnsafeCell reached only through `holder_rec` by the ticket's holder.
    unsafe { &*((crate::layout::STRIPES_ADDR as *const Stripe).add(s as usize)) }
}

/// log2 of the granule a stripe orders: 8 bytes, a variable (seed 001 orders each shared
/// variable). Whole cache lines were tried: they halved fft's recording, but a turn is held to
/// the thread's next runtime entry, so a line-wide turn also excluded the program's races
/// between *neighbouring* variables for that long: crash_sometimes, whose reader checks a
/// pointer and then uses the object next to it, stopped crashing while recorded.
pub const GRANULE_SHIFT: u32 = 3;

/// Stripe of granule `g` (hashed, so equal offsets in different arrays do not collide).
#[inline(always)]
pub fn stripe_of_granule(g: usize) -> u32 {
    ((g as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - STRIPES.trailing_zeros())) as u32
}

/// Stripe of the granule holding byte `addr`.
#[inline(always)]
pub fn stripe_of_addr(addr: usize) -> u32 {
    stripe_of_granule(addr >> GRANULE_SHIFT)
}

/// Take the stripe's ticket; false when it will never come: the process end took every
/// ticket for good and has sent the trace ([`crate::threads::end_was_sent`]). A thread that
/// entered the runtime just before the end waits there, perhaps holding a lock of the
/// program's (a worker of a library whose destructor then locks it to wake and join them:
/// the exit hung, 2 recordings in 200). It is then stopped as a thread entering after the
/// end is ([`after_end`]).
#[inline(always)]
#[must_use]
fn ticket_lock(st: &Stripe) -> bool {
    // (Sync mode sleeps at once: see `wait_turn`.)
    ticket_wait(
        &st.next,
        &st.serving,
        &st.sleepers,
        || !crate::preload::sync(),
        crate::threads::end_was_sent,
    )
}

/// A thread whose ticket will never come ([`ticket_lock`]): it holds nothing the end needs
/// (what it took before is the end's to keep), stops until the stopped threads are released,
/// then runs natively to its end.
#[cold]
fn after_end(t: &mut Thread) -> u64 {
    for w in t.multi.iter_mut() {
        *w = 0;
    }
    t.held_multi = false;
    t.held = NO_STRIPE;
    crate::threads::park_after_end(t);
    0
}

#[inline(always)]
fn ticket_unlock(st: &Stripe) {
    ticket_release(&st.serving, &st.sleepers);
}

/// Nobody waits for this stripe's ticket.
#[inline(always)]
fn uncontended(st: &Stripe) -> bool {
    st.next.load(Ordering::Relaxed) == st.serving.load(Ordering::Relaxed).wrapping_add(1)
}

/// Try to take the stripe's ticket without waiting (free: nobody holds or queues for it).
fn ticket_try_lock(st: &Stripe) -> bool {
    let s = st.serving.load(Ordering::Acquire);
    st.next
        .compare_exchange(s, s.wrapping_add(1), Ordering::Acquire, Ordering::Relaxed)
        .is_ok()
}

/// Stripes with buffered vector entries (a bit set by the appender of a buffer's first entry,
/// under the stripe's ticket; cleared by [`periodic_flush`] once it sent that buffer).
static DIRTY: [AtomicU64; STRIPES / 64] = [const { AtomicU64::new(0) }; STRIPES / 64];
/// The last flush epoch some thread swept (see [`periodic_flush`]).
static SWEPT: AtomicU32 = AtomicU32::new(0);

/// The launcher bumped its flush epoch (`StatusHeader::flush_epoch`, every 50 ms while
/// recording, and while replaying a recording cut short: a replay that reaches the cut may
/// die there as the recording did).
/// This thread sends its own buffered records and the vector of the stripe it holds; the first
/// thread to see the new epoch also sends every other thread's records and the buffered vector
/// of every stripe whose ticket is free at once (a held stripe is skipped, never waited for:
/// its holder may be anywhere in the program). Nothing is ordered differently; only frames are
/// sent earlier, so a recording cut short (SIGKILL) holds what happened until shortly before.
#[cold]
pub fn periodic_flush(t: &mut Thread) {
    let epoch = state::status_header().flush_epoch.load(Ordering::Relaxed);
    t.seen_epoch = epoch;
    if state::strategy() == state::Strategy::Model {
        return;
    }
    if t.held != NO_STRIPE && !t.held_multi && t.held != crate::model::HELD_G {
        // Our own held turn: we hold its ticket.
        flush_stripe(t.held, stripe(t.held));
    }
    crate::access::flush_log(t.tid);
    let last = SWEPT.load(Ordering::Relaxed);
    if last == epoch
        || SWEPT
            .compare_exchange(last, epoch, Ordering::SeqCst, Ordering::Relaxed)
            .is_err()
    {
        return;
    }
    for (w, word) in DIRTY.iter().enumerate() {
        let mut bits = word.load(Ordering::Relaxed);
        while bits != 0 {
            let b = bits.trailing_zeros();
            bits &= bits - 1;
            let s = (w * 64) as u32 + b;
            let st = stripe(s);
            if ticket_try_lock(st) {
                flush_stripe(s, st);
                word.fetch_and(!(1u64 << b), Ordering::Relaxed);
                ticket_unlock(st);
            }
        }
    }
    let n = state::NEXT_TID
        .load(Ordering::SeqCst)
        .min(MAX_THREADS as u32);
    for tid in 0..n {
        if tid != t.tid {
            // Its log, under the log's lock (no reference to its `Thread` is made).
            crate::access::flush_log(tid);
        }
    }
}

/// Append `tid` to the stripe's vector (caller holds the ticket). Returns the position.
#[inline(always)]
fn append(s: u32, st: &Stripe, tid: u32) -> u64 {
    // SAFETY: the caller holds the stripe's ticket (this function's contract).
    let st = unsafe { holder_rec(st) };
    let n = st.len as usize;
    if n > 0 && st.buf[n - 1].tid == tid && st.buf[n - 1].count < u32::MAX {
        st.buf[n - 1].count += 1;
    } else {
        if n == BUF {
            send_rec(s, st);
        }
        let n = st.len as usize;
        if n == 0 {
            DIRTY[s as usize / 64].fetch_or(1 << (s % 64), Ordering::Relaxed);
        }
        st.buf[n] = VecEntry { tid, count: 1 };
        st.len += 1;
    }
    let p = st.seq;
    st.seq += 1;
    p
}

/// Send the stripe's buffered vector piece to the launcher (caller holds the ticket).
fn flush_stripe(s: u32, st: &Stripe) {
    // SAFETY: the caller holds the stripe's ticket (this function's contract).
    send_rec(s, unsafe { holder_rec(st) });
}

/// Send the holder's buffered vector piece of stripe `s`.
fn send_rec(s: u32, st: &mut StripeRec) {
    if st.len == 0 {
        return;
    }
    let mut frame = [0u8; FRAME_HDR + 4 + BUF * 8];
    let n = st.len as usize;
    let payload = 4 + n * 8;
    put_frame_header(&mut frame, F_STRIPE, payload);
    frame[5..9].copy_from_slice(&s.to_le_bytes());
    for (i, e) in st.buf[..n].iter().enumerate() {
        let o = 9 + i * 8;
        frame[o..o + 4].copy_from_slice(&e.tid.to_le_bytes());
        frame[o + 4..o + 8].copy_from_slice(&e.count.to_le_bytes());
    }
    channel::send(&frame[..FRAME_HDR + payload]);
    st.len = 0;
}

/// Park this thread for good: its recorded events are exhausted (or the process is ending).
pub fn park_forever(tid: u32, state_code: u32) -> ! {
    crate::ownership::set_free_tid(tid);
    let st = state::status(tid);
    let events = state::shared(tid).events.load(Ordering::Relaxed);
    st.events.store(events, Ordering::Relaxed);
    st.state.store(state_code, Ordering::SeqCst);
    let w = AtomicU32::new(0);
    loop {
        sys::futex_wait(&w, 0);
    }
}

/// Replay: wait until the vector of `s` says it is `t`'s turn.
fn wait_turn(t: &Thread, s: u32) {
    let st = stripe(s);
    let v = state::vector(s);
    let mut waited = false;
    let mut spins = 0u32;
    let mut yield_since: Option<u64> = None;
    loop {
        let p = st.pos.load(Ordering::SeqCst);
        let idx = (st.cursor.load(Ordering::Acquire) >> 32) as usize;
        if idx >= v.len() {
            let stt = state::status(t.tid);
            stt.stripe.store(s, Ordering::Relaxed);
            stt.waits_for.store(WAITS_FOR_EXHAUSTED, Ordering::Relaxed);
            stt.events
                .store(t.sh().events.load(Ordering::Relaxed), Ordering::Relaxed);
            park_forever(t.tid, ST_AT_END);
        }
        if v[idx].tid == t.tid {
            break;
        }
        if !waited {
            let stt = state::status(t.tid);
            stt.stripe.store(s, Ordering::Relaxed);
            stt.events
                .store(t.sh().events.load(Ordering::Relaxed), Ordering::Relaxed);
            stt.state.store(ST_WAIT_TURN, Ordering::SeqCst);
            waited = true;
        }
        state::status(t.tid)
            .waits_for
            .store(v[idx].tid, Ordering::Relaxed);
        // The turn usually passes within a few hundred nanoseconds: spin, then yield, then
        // sleep on the futex. In sync mode turns are synchronisation operations, far apart
        // (the program computes between them): a turn not there after the spin is usually
        // milliseconds away, and each `sched_yield` on a loaded machine gives the CPU away
        // for a whole time slice (about 1 ms each, measured on pigz: a third of its replay's
        // wall time), so it sleeps on the futex at once, woken when the turn passes.
        spins += 1;
        if spins < 200 {
            core::hint::spin_loop();
            continue;
        } else if !crate::preload::sync() {
            // Full mode: the turn usually comes once its holder ends its run (a few hundred
            // events), tens of microseconds away: yield until then (the holder may need this
            // CPU), and sleep only past YIELD_FOR_NS. Sleeping at once made each hand-over of
            // a contended mutex a futex sleep and wake-up on both sides (long_run: 14 000
            // context switches in a replay against 700 while recording, 2-3x its time).
            let now = sys::now_ns();
            let since = *yield_since.get_or_insert(now);
            if now - since < YIELD_FOR_NS {
                sys::yield_now();
                continue;
            }
        }
        st.waiters.fetch_add(1, Ordering::SeqCst);
        if st.pos.load(Ordering::SeqCst) == p {
            let _e = sys::ErrnoGuard::new();
            sys::futex_wait(&st.pos, p);
        }
        st.waiters.fetch_sub(1, Ordering::SeqCst);
    }
    if waited {
        let stt = state::status(t.tid);
        stt.state.store(ST_RUNNING, Ordering::Relaxed);
        stt.stripe.store(NO_STRIPE, Ordering::Relaxed);
    }
}

/// Replay: does the run of the turn held on `s` have another turn after it (caller holds it)?
#[inline(always)]
fn run_continues(s: u32) -> bool {
    let v = state::vector(s);
    let cur = stripe(s).cursor.load(Ordering::Relaxed);
    let (idx, used) = ((cur >> 32) as usize, (cur & 0xffff_ffff) as u32);
    idx < v.len() && used + 1 < v[idx].count
}

/// Replay: consume the current turn of `s` (caller holds it). Returns whether the next turn
/// belongs to another run whose thread may sleep on `pos` (see [`wake_turn`]).
fn advance(s: u32) -> bool {
    let st = stripe(s);
    let v = state::vector(s);
    let cur = st.cursor.load(Ordering::Relaxed);
    let (mut idx, mut used) = ((cur >> 32) as usize, (cur & 0xffff_ffff) as u32 + 1);
    let mut changed = false;
    if idx < v.len() && used >= v[idx].count {
        idx += 1;
        used = 0;
        changed = true;
    }
    st.cursor
        .store(((idx as u64) << 32) | used as u64, Ordering::Release);
    st.pos.fetch_add(1, Ordering::SeqCst);
    changed
}

/// Replay: wake the threads asleep in [`wait_turn`] on `s` after its turn passed to another
/// run. Called once the ticket is released: a woken thread then finds the ticket free instead
/// of sleeping again on it while the waker is still inside `futex_wake`.
fn wake_turn(s: u32) {
    let st = stripe(s);
    if st.waiters.load(Ordering::SeqCst) > 0 {
        let _e = sys::ErrnoGuard::new();
        sys::futex_wake(&st.pos, i32::MAX);
    }
}

#[inline(always)]
fn release_one(s: u32, replay: bool) {
    let wake = replay && advance(s);
    ticket_unlock(stripe(s));
    if wake {
        wake_turn(s);
    }
}

/// Release whatever `t` holds: its access is complete (this is a safe point).
#[inline(always)]
pub fn release_held(t: &mut Thread) {
    if t.held == crate::model::HELD_G {
        return crate::model::release(t);
    }
    let replay = state::REPLAY.load(Ordering::Relaxed);
    if t.held_multi {
        for w in t.multi_lo..t.multi_hi {
            let mut bits = t.multi[w];
            while bits != 0 {
                let b = bits.trailing_zeros();
                release_one((w * 64) as u32 + b, replay);
                bits &= bits - 1;
            }
            t.multi[w] = 0;
        }
        t.held_multi = false;
    } else if t.held != NO_STRIPE {
        release_one(t.held, replay);
        t.held = NO_STRIPE;
    }
}

/// Take a turn on stripe `s` (releasing what `t` held) and return the access's position in
/// the stripe's vector.
#[inline(always)]
pub fn take(t: &mut Thread, s: u32) -> u64 {
    let replay = state::REPLAY.load(Ordering::Relaxed);
    if t.held == s && !t.held_multi {
        let st = stripe(s);
        if !replay && uncontended(st) {
            // Same stripe again and nobody waits: keep the ticket, extend the run.
            return append(s, st, t.tid);
        }
        if replay && run_continues(s) {
            // The turn after the held one is ours too (same run of the vector): consume the
            // held turn and keep the ticket; nobody else can be due on this stripe (so nobody
            // to wake).
            advance(s);
            return append(s, st, t.tid);
        }
    }
    release_held(t);
    if replay {
        wait_turn(t, s);
    }
    let st = stripe(s);
    touch(s);
    if !ticket_lock(st) {
        return after_end(t);
    }
    t.held = s;
    if CLOSED.load(Ordering::SeqCst) {
        return closed(t);
    }
    append(s, st, t.tid)
}

/// Take turns on every stripe of the byte ranges `[first, last]` given (ascending stripe
/// order, so two ranged accesses never deadlock). Returns a digest of the positions taken.
pub fn take_ranges(t: &mut Thread, ranges: &[(usize, usize)]) -> u64 {
    release_held(t);
    let replay = state::REPLAY.load(Ordering::Relaxed);
    let (mut lo, mut hi) = (t.multi.len(), 0);
    for &(first, last) in ranges {
        let (g0, g1) = (first >> GRANULE_SHIFT, last >> GRANULE_SHIFT);
        if g1 - g0 + 1 >= STRIPES {
            t.multi.iter_mut().for_each(|w| *w = u64::MAX);
            (lo, hi) = (0, t.multi.len());
            break;
        }
        for g in g0..=g1 {
            let s = stripe_of_granule(g) as usize;
            t.multi[s / 64] |= 1 << (s % 64);
            lo = lo.min(s / 64);
            hi = hi.max(s / 64 + 1);
        }
    }
    (t.multi_lo, t.multi_hi) = (lo, hi.max(lo));
    let mut h = 0u64;
    for w in t.multi_lo..t.multi_hi {
        let mut bits = t.multi[w];
        while bits != 0 {
            let s = (w * 64) as u32 + bits.trailing_zeros();
            if replay {
                wait_turn(t, s);
            }
            let st = stripe(s);
            touch(s);
            if !ticket_lock(st) {
                return after_end(t);
            }
            let p = append(s, st, t.tid);
            h = crate::access::mix(h, (p << 16) ^ s as u64);
            bits &= bits - 1;
        }
    }
    t.held_multi = true;
    t.held = NO_STRIPE;
    if CLOSED.load(Ordering::SeqCst) {
        return closed(t);
    }
    h
}

/// Stripes in one 4 KiB page of the stripe table.
const PER_PAGE: usize = 4096 / core::mem::size_of::<Stripe>();
const _: () = assert!(PER_PAGE >= 1 && STRIPES.is_multiple_of(PER_PAGE));
/// Pages of the stripe table.
const PAGES: usize = STRIPES / PER_PAGE;
/// Pages of the stripe table holding a stripe some thread ever took a ticket on (a bit per
/// page, set before the ticket is taken). The process end takes the tickets of these pages'
/// stripes only: taking all 16,384 faulted in the whole 4 MiB table, about 1,000 page faults
/// (1.2 ms) added to every recording and replay of a program that used a handful of stripes.
static TOUCHED: [AtomicU64; PAGES.div_ceil(64)] = [const { AtomicU64::new(0) }; PAGES.div_ceil(64)];
/// Set by the process end before it reads [`TOUCHED`]: a thread that took a ticket checks it
/// afterwards and parks for good when set.
///
/// Why no thread gets past the end (all orders SeqCst, or Acquire/SeqCst pairs): a thread
/// sets its page's bit before its ticket. If the end's read of `TOUCHED` saw the bit, the end
/// takes that stripe's ticket too (after the thread released it, as before). If it did not,
/// the bit was set after `CLOSED` in the single total order, so the thread's check after its
/// ticket sees `CLOSED` (a thread that found the bit already set read it, with Acquire, from
/// the setter, whose store follows `CLOSED` in that order too) and parks.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Mark the page of stripe `s` as used (once per page; a shared line read otherwise).
#[inline(always)]
fn touch(s: u32) {
    let p = s as usize / PER_PAGE;
    let (w, b) = (p / 64, 1u64 << (p % 64));
    if TOUCHED[w].load(Ordering::Acquire) & b == 0 {
        TOUCHED[w].fetch_or(b, Ordering::SeqCst);
    }
}

/// `t` took a ticket after the process end began: release what it holds (the end takes every
/// ticket) and stop as a thread whose ticket never comes does ([`after_end`]): until the
/// stopped threads are released, then natively. Replay parks for good, as it would have at a
/// ticket the end holds. Recording parked for good too, but a thread here may hold a lock of
/// the program's (sync mode and full mode take a lock's turn after the real lock): a library
/// destructor locking it to wake and join its workers hung the exit (`end_patterns`' pool: 1
/// recording in about 400 on an overloaded machine, one of CI's 40).
#[cold]
fn closed(t: &mut Thread) -> u64 {
    release_held(t);
    if state::REPLAY.load(Ordering::Relaxed) {
        park_forever(t.tid, ST_AT_END)
    }
    after_end(t)
}

/// Close the stripe table ([`CLOSED`]) and list, ascending, the stripes of every page some
/// thread used: the only ones a ticket was ever taken on, or will be.
fn closed_stripes() -> impl Iterator<Item = u32> {
    CLOSED.store(true, Ordering::SeqCst);
    (0..PAGES)
        .filter(|&p| TOUCHED[p / 64].load(Ordering::SeqCst) & (1 << (p % 64)) != 0)
        .flat_map(|p| (p * PER_PAGE) as u32..((p + 1) * PER_PAGE) as u32)
}

/// Final flush at process end: take every stripe's ticket in order (blocking every other
/// thread at its next turn, for good) and send the buffered vector pieces.
pub fn lock_and_flush_all() {
    for s in closed_stripes() {
        let st = stripe(s);
        // (The end itself: it has not sent the trace yet, so never gives up.)
        let _ = ticket_lock(st);
        flush_stripe(s, st);
    }
}

/// Final flush of the replay of a cut-short recording: a thread may hold a stripe for good
/// there (blocked in a lock whose holder stopped at the cut), so no ticket is waited for: the
/// free stripes' buffers are sent (the ticket kept, as above), a held stripe's are not (its
/// re-recorded vector then stops short: a prefix of the recorded one, which is what is checked).
pub fn try_lock_and_flush_all() {
    for s in closed_stripes() {
        let st = stripe(s);
        if ticket_try_lock(st) {
            flush_stripe(s, st);
        }
    }
}

/// One plain or atomic access of `size` bytes at `addr` under LEAP: a turn on its stripe (or
/// on every stripe of a ranged access), counted and folded.
#[inline(always)]
pub fn access(t: &mut Thread, addr: usize, size: usize, k: u64) {
    let last = addr + size - 1;
    if addr >> GRANULE_SHIFT == last >> GRANULE_SHIFT {
        let s = stripe_of_addr(addr);
        let pos = take(t, s);
        crate::access::count_event(t, s as u64, pos, k);
    } else {
        let h = take_ranges(t, &[(addr, last)]);
        crate::access::count_event(t, RANGE_STRIPE, h, crate::access::kind::RANGE);
    }
}

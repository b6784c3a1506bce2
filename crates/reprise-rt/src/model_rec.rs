//! Recording the model strategies on real threads in parallel (AggrePlay's and TPLAY's Pin
//! tools record every thread at once; the runtime did too little of that when one lock ordered
//! every event).
//!
//! Every event takes a *model stripe* (a fair ticket lock, one of [`MSTRIPES`], chosen by the
//! event's object: a location's granule, a lock's address, a thread creation) and keeps it, as
//! LEAP's stripes do, until the thread's next safe point: the callback precedes the access, and
//! only holding the stripe until the access completes makes the order of a location's (or a
//! lock's) events in the model their real order. Events on other stripes run in parallel, so
//! the order the model sees is one that agrees with program order and with every location's
//! and lock's order: an execution equivalent to the real one (same reads-from, same lock
//! order), which is what the simulator's "atomic" substrate feeds the same models.
//!
//! AggrePlay (and `aggreplay+`, same recorder) needs nothing more: its state is keyed by
//! location or lock ([`AggLocs`], one per stripe, touched only by the stripe's holder) or by
//! thread (counter, `EX_t`: [`PerThread`], touched only by its thread), so no lock is shared
//! by all threads. TPLAY's recorder reads other threads' state at every write (read counts,
//! vector clocks, the `dSet` of other sinks), so its step runs under the model's global lock
//! `G` for the step alone (a few hash operations), never across the program's access.
#![allow(unsafe_code)]

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicU32, Ordering};
use reprise_core::aggreplay::{
    encode_log_to, thread_parts, AggLocs, AggRepLocs, AggRepThread, AggrePlayLog, EncList, Parts,
};
use reprise_core::{EventId, Op};
use reprise_proto::MAX_THREADS;

/// Model stripes (a power of two).
pub const MSTRIPES: usize = 4096;

/// One model stripe: a fair ticket lock and AggrePlay's state for its locations and locks.
#[repr(C, align(64))]
struct MStripe {
    next: AtomicU32,
    serving: AtomicU32,
    sleepers: AtomicU32,
    /// Touched only by the holder of the ticket ([`locs`]).
    locs: UnsafeCell<Option<AggLocs>>,
    /// Replay: AggrePlay's replay state of the stripe's locations and locks (touched only by
    /// the holder of the ticket, [`rep_locs`]), bumped `step` at every change of it, and the
    /// threads asleep waiting for one.
    rep: UnsafeCell<Option<AggRepLocs>>,
    step: AtomicU32,
    step_sleepers: AtomicU32,
}

// SAFETY: the atomics are shared; `locs` is reached only through `locs`, by the holder of the
// stripe's ticket (one thread at a time), or by `finish` once it holds every ticket.
unsafe impl Sync for MStripe {}

static STRIPES: [MStripe; MSTRIPES] = [const {
    MStripe {
        next: AtomicU32::new(0),
        serving: AtomicU32::new(0),
        sleepers: AtomicU32::new(0),
        locs: UnsafeCell::new(None),
        rep: UnsafeCell::new(None),
        step: AtomicU32::new(0),
        step_sleepers: AtomicU32::new(0),
    }
}; MSTRIPES];

/// AggrePlay's per-thread part: event counter and `EX_t`.
#[derive(Default)]
struct AggThread {
    counter: u64,
    ex: EncList,
}

/// Per thread id: the model stripe it holds (+1; 0 none) and its AggrePlay part.
struct PerThread {
    held: AtomicU32,
    /// Touched only by its own thread ([`own`]), or by `finish` once it holds every ticket.
    agg: UnsafeCell<Option<AggThread>>,
    /// Replay: the thread's part of AggrePlay's replay state, touched only by its own thread.
    rep: UnsafeCell<Option<RepThread>>,
}

/// A thread's replay state: AggrePlay's part, and for `aggreplay+` the event whose callback
/// returned and whose access may still be pending (its bookkeeping not applied yet).
#[derive(Default)]
struct RepThread {
    part: AggRepThread,
    pending: Option<(EventId, Op)>,
}

// SAFETY: `held` is atomic; `agg` is reached only by its own thread, or by `finish` while
// every stripe is taken (no thread is inside an event then).
unsafe impl Sync for PerThread {}

static THREADS: [PerThread; MAX_THREADS] = [const {
    PerThread {
        held: AtomicU32::new(0),
        agg: UnsafeCell::new(None),
        rep: UnsafeCell::new(None),
    }
}; MAX_THREADS];

/// Threads the AggrePlay model knows (its `nthreads`: one past the largest id seen).
static NTHREADS: AtomicU32 = AtomicU32::new(0);

fn note_thread(n: u32) -> u32 {
    let cur = NTHREADS.load(Ordering::SeqCst);
    if n > cur {
        NTHREADS.fetch_max(n, Ordering::SeqCst).max(n)
    } else {
        cur
    }
}

fn ticket_lock(st: &MStripe) {
    crate::ticket::ticket_wait(&st.next, &st.serving, &st.sleepers, || true, || false);
}

fn ticket_unlock(st: &MStripe) {
    crate::ticket::ticket_release(&st.serving, &st.sleepers);
}

/// The stripe of an event's object. Thread creations share one stripe: the created id is
/// read under it (`sync::take_obj`), so two creations must not overlap.
fn stripe_of(op: &Op) -> usize {
    let key = match *op {
        Op::Read(g) | Op::Write(g) | Op::Rmw(g) => g,
        Op::Acquire(l) | Op::Release(l) => l >> 3,
        Op::Fork(_) => u64::MAX,
        Op::Join(c) => (c as u64) | 1 << 63,
    };
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - MSTRIPES.trailing_zeros())) as usize
}

/// Take the model stripe of `op` (computed again under it, as `op` may read shared state);
/// the thread keeps it until [`release`]. Returns the op.
/// The thread's access of its previous event is complete here (a safe point); a held stripe
/// that is the event's own and that nobody waits for is kept (as LEAP's same-stripe turns
/// are): nothing can come between, and the two atomic operations per event, on a line other
/// cores touch, are most of the cost of an event.
pub fn take(tid: u32, op: &impl Fn() -> Op) -> (usize, Op) {
    let s = stripe_of(&op());
    let held = &THREADS[tid as usize].held;
    let h = held.load(Ordering::Relaxed);
    if h == s as u32 + 1 && uncontended(&STRIPES[s]) {
        complete(tid);
        return (s, op());
    }
    release(tid);
    ticket_lock(&STRIPES[s]);
    held.store(s as u32 + 1, Ordering::Relaxed);
    (s, op())
}

/// Nobody waits for this stripe's ticket (its holder asks).
fn uncontended(st: &MStripe) -> bool {
    st.next.load(Ordering::Relaxed) == st.serving.load(Ordering::Relaxed).wrapping_add(1)
}

/// The thread's access is complete (a safe point): release its model stripe.
pub fn release(tid: u32) {
    let p = &THREADS[tid as usize].held;
    let h = p.load(Ordering::Relaxed);
    if h != 0 {
        complete(tid);
        p.store(0, Ordering::Relaxed);
        ticket_unlock(&STRIPES[h as usize - 1]);
    }
}

/// AggrePlay's step for event `op` of thread `tid`, which holds stripe `s`; the version of
/// its object after the step ([`AggLocs::version`], for the event's order key).
pub fn observe_agg(tid: u32, s: usize, op: Op) -> u64 {
    let n = note_thread(tid + 1);
    // SAFETY: the caller holds stripe `s`'s ticket: no other reference to its cell exists.
    let locs = unsafe { &mut *STRIPES[s].locs.get() }.get_or_insert_with(AggLocs::default);
    // SAFETY: only thread `tid` itself reaches its own cell outside `finish`.
    let me = unsafe { &mut *THREADS[tid as usize].agg.get() }.get_or_insert_with(Default::default);
    me.counter += 1;
    let e = EventId::new(tid, me.counter);
    match op {
        Op::Write(x) | Op::Rmw(x) => locs.write(e, x, n, &mut me.ex),
        Op::Read(x) => locs.read(e, x),
        Op::Acquire(m) => locs.acquire(tid, m),
        Op::Release(m) => locs.acquisitions_of(m),
        Op::Fork(u) => {
            note_thread(u + 1);
            0
        }
        Op::Join(_) => 0,
    }
}

/// At the end: take every model stripe (each holder releases it at its next safe point; the
/// caller's own is released first) and keep them, so no thread is inside an event while the
/// log is assembled, nor records one after.
pub fn lock_all(caller: u32) {
    release(caller);
    for st in &STRIPES {
        ticket_lock(st);
    }
}

/// AggrePlay's log, encoded, from the stripes and threads (after [`lock_all`]), handed to `f`
/// piece by piece.
pub fn finish_agg(f: &mut dyn FnMut(&[u8])) {
    let parts = STRIPES.iter().filter_map(|st| {
        // SAFETY: lock_all took every stripe's ticket: nobody else reaches the cell.
        unsafe { &*st.locs.get() }.as_ref()
    });
    let mut ex = Vec::new();
    for (tid, p) in THREADS.iter().enumerate() {
        // SAFETY: every stripe is taken, so no thread is inside an event (the only place a
        // thread touches its cell).
        if let Some(a) = unsafe { &*p.agg.get() }.as_ref() {
            ex.push((tid as u32, &a.ex));
        }
    }
    encode_log_to(parts, &ex, NTHREADS.load(Ordering::SeqCst), f);
}

/// Replay on the stripes: 0 off, 1 AggrePlay (bookkeeping at the callback), 2 `aggreplay+`
/// (at the access).
static REP: AtomicU32 = AtomicU32::new(0);

/// Whether AggrePlay (or `aggreplay+`) replays on the stripes.
#[inline(always)]
pub fn striped_replay() -> bool {
    REP.load(Ordering::Relaxed) != 0
}

/// Replay set-up at init (one thread): hand `log`'s lists to the stripes of their objects and
/// to their threads.
pub fn init_replay(log: AggrePlayLog, plus: bool) {
    for (x, v) in log.w {
        rep_locs(stripe_of(&Op::Write(x))).insert_writes(x, v);
    }
    for (m, v) in log.l {
        rep_locs(stripe_of(&Op::Acquire(m))).insert_lock(m, v);
    }
    for (t, part) in thread_parts(log.ex, log.wr) {
        if (t as usize) < MAX_THREADS {
            rep_me(t).part = part;
        }
    }
    REP.store(if plus { 2 } else { 1 }, Ordering::SeqCst);
}

/// Stripe `s`'s replay state.
#[allow(clippy::mut_from_ref)]
fn rep_locs(s: usize) -> &'static mut AggRepLocs {
    // SAFETY: the caller holds stripe `s`'s ticket (or is `init_replay`, before other threads
    // exist): no other reference to the cell exists.
    unsafe { &mut *STRIPES[s].rep.get() }.get_or_insert_with(AggRepLocs::default)
}

/// Thread `tid`'s replay state.
#[allow(clippy::mut_from_ref)]
fn rep_me(tid: u32) -> &'static mut RepThread {
    // SAFETY: only thread `tid` itself reaches its cell (or `init_replay`, alone).
    unsafe { &mut *THREADS[tid as usize].rep.get() }.get_or_insert_with(RepThread::default)
}

/// `aggreplay+`: apply the bookkeeping of `tid`'s pending event, whose access is complete now
/// (the caller holds the event's stripe: taken at the event, kept to this safe point).
#[inline(always)]
fn complete(tid: u32) {
    if REP.load(Ordering::Relaxed) == 2 {
        complete_pending(tid);
    }
}

/// [`complete`]'s work.
#[inline(never)]
fn complete_pending(tid: u32) {
    let me = rep_me(tid);
    if let Some((e, op)) = me.pending.take() {
        let s = THREADS[tid as usize].held.load(Ordering::Relaxed) as usize - 1;
        me.part.apply(rep_locs(s), tid, e, &op, Parts::ALL);
        bump_step(s);
    }
}

/// Stripe `s`'s replay state changed: wake its waiters.
fn bump_step(s: usize) {
    let st = &STRIPES[s];
    st.step.fetch_add(1, Ordering::SeqCst);
    // Dekker with `wait_step`: it counts itself a sleeper before `futex_wait` re-checks
    // `step`, so either it sees the new value or we see it asleep.
    if st.step_sleepers.load(Ordering::SeqCst) != 0 {
        let _e = crate::sys::ErrnoGuard::new();
        crate::sys::futex_wake(&st.step, i32::MAX);
    }
}

/// Wait until stripe `st`'s step moves past `v`: spin, yield, then sleep (another event of the
/// stripe usually comes within microseconds).
fn wait_step(st: &MStripe, v: u32) {
    for _ in 0..200 {
        if st.step.load(Ordering::Acquire) != v {
            return;
        }
        core::hint::spin_loop();
    }
    if crate::ticket::yield_until(|| st.step.load(Ordering::Acquire) != v) {
        return;
    }
    while st.step.load(Ordering::SeqCst) == v {
        let _e = crate::sys::ErrnoGuard::new();
        st.step_sleepers.fetch_add(1, Ordering::SeqCst);
        crate::sys::futex_wait_for(&st.step, v, 50_000_000);
        st.step_sleepers.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Replay: with stripe `s` held, wait until the model lets `tid` perform `op` (the stripe held
/// again on return). `waiting` runs once, before the first wait; whether it ran.
pub fn wait_turn(tid: u32, s: usize, op: &Op, waiting: impl FnOnce()) -> bool {
    let mut waiting = Some(waiting);
    while !rep_me(tid).part.may_proceed(rep_locs(s), tid, op) {
        if let Some(f) = waiting.take() {
            f();
        }
        let st = &STRIPES[s];
        // Read under the ticket: every later change of the stripe's state bumps it.
        let v = st.step.load(Ordering::Acquire);
        THREADS[tid as usize].held.store(0, Ordering::Relaxed);
        ticket_unlock(st);
        wait_step(st, v);
        ticket_lock(st);
        THREADS[tid as usize]
            .held
            .store(s as u32 + 1, Ordering::Relaxed);
    }
    waiting.is_none()
}

/// Replay: `tid`'s event `op` on stripe `s` (held) proceeds: count it, and apply its
/// bookkeeping now (AggrePlay) or keep it pending until the access is complete (`aggreplay+`).
pub fn proceed(tid: u32, s: usize, op: Op) {
    let me = rep_me(tid);
    let e = me.part.bump(tid);
    if REP.load(Ordering::Relaxed) == 2 {
        me.pending = Some((e, op));
    } else {
        me.part.apply(rep_locs(s), tid, e, &op, Parts::ALL);
        bump_step(s);
    }
}

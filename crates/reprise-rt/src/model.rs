//! AggrePlay (seed 000) and TPLAY (seed 003), and their improved variants `aggreplay+` and
//! `tplay+`, on real threads, run through the models of `reprise-core` (the same code the
//! simulator measures).
//!
//! Recording runs threads in parallel (`model_rec`: a model stripe per location or lock, held
//! to the next safe point; AggrePlay's state split by stripe and thread, TPLAY's step under
//! `G` for the step alone). AggrePlay's and `aggreplay+`'s replay runs on the same stripes, in
//! parallel, and re-records there, so the launcher compares the two logs (`model_rec`).
//! TPLAY's replay drives one global replayer: every event takes the runtime-private global
//! lock `G` and, as LEAP's stripes do, keeps it until the thread's next safe point: the
//! callback precedes the access, and only holding `G` until the access completes makes the
//! order the model observes the real order (the simulator's "atomic" substrate, where both
//! seeds were measured). Replay asks the model's replayer whether the thread may perform its
//! next event, parks on a futex otherwise (TPLAY's logs are not compared, so its replays
//! re-record nothing). Blocking acquisitions in replay wait for their turn, release `G` (or
//! the stripe), block in the real call, then take it again and tell the model. Locations are
//! 8-byte granules, locks are object addresses, thread ids are the runtime's deterministic
//! ids. Joins are not modelled (AggrePlay ignores them; for TPLAY this loses join edges in
//! atomicity-violation detection).
#![allow(unsafe_code)]

use crate::model_rec;
use crate::state::{self, Thread};
use crate::sys;
use crate::ticket::yield_until;
use core::sync::atomic::{AtomicU32, Ordering};
use reprise_core::aggreplay::AggrePlayLog;
use reprise_core::tplay::plus::{TplayPlusRecorder, TplayPlusReplayer};
use reprise_core::tplay::{Tplay, TplayLog, TplayPlus, TplayPlusLog, TplayRecorder, TplayReplayer};
use reprise_core::{binlog, Event, Op, Recorder, Replayer, Strategy};
use reprise_proto::*;

/// Which model runs: 0 none (LEAP), 1 AggrePlay, 2 TPLAY, 3 AggrePlay+, 4 TPLAY+.
static WHICH: AtomicU32 = AtomicU32::new(0);
/// The global lock: 0 free, 1 held, 2 held with waiters.
static G: AtomicU32 = AtomicU32::new(0);
/// Bumped at every model step, so parked threads re-check.
static STEP: AtomicU32 = AtomicU32::new(0);
static PARKED: AtomicU32 = AtomicU32::new(0);

/// `held` value meaning "holds the global model lock".
pub const HELD_G: u32 = u32::MAX - 1;

enum Rec {
    Tp(TplayRecorder),
    TpP(TplayPlusRecorder),
}
enum Rep {
    Tp(TplayReplayer),
    TpP(TplayPlusReplayer),
}
struct Models {
    rec: Option<Rec>,
    rep: Option<Rep>,
}
static mut MODELS: Models = Models {
    rec: None,
    rep: None,
};

/// Whether a model strategy runs.
#[inline(always)]
pub fn active() -> bool {
    WHICH.load(Ordering::Relaxed) != 0
}

fn models() -> &'static mut Models {
    // SAFETY: MODELS is only touched under G (or at init, before other threads exist).
    unsafe { &mut *core::ptr::addr_of_mut!(MODELS) }
}

/// Set up at init from the config flags (replay: with the recorded log).
pub fn init(flags: u64, log: &[u8], replay: bool) -> Result<(), &'static str> {
    let plus = flags & FLAG_PLUS != 0;
    let which = if flags & FLAG_AGGREPLAY != 0 {
        if plus {
            3
        } else {
            1
        }
    } else if flags & FLAG_TPLAY != 0 {
        if plus {
            4
        } else {
            2
        }
    } else {
        return Ok(());
    };
    let m = models();
    m.rec = match which {
        // AggrePlay records (and re-records in replay) in `model_rec`'s stripes instead.
        1 | 3 => None,
        // TPLAY's log is not compared after a replay (`model_log_is_exact`): no re-recording.
        2 | 4 if replay => None,
        2 => Some(Rec::Tp(Tplay.recorder())),
        _ => Some(Rec::TpP(TplayPlus::default().recorder())),
    };
    if replay {
        let corrupt = "the model log is corrupt";
        m.rep = Some(match which {
            1 | 3 => {
                // Replayed in parallel on the model stripes (`model_rec`).
                let l: AggrePlayLog = binlog::decode(log).map_err(|_| corrupt)?;
                model_rec::init_replay(l, which == 3);
                WHICH.store(which, Ordering::SeqCst);
                return Ok(());
            }
            2 => {
                let l: TplayLog = binlog::decode(log).map_err(|_| corrupt)?;
                Rep::Tp(Tplay.replayer(&l))
            }
            _ => {
                let l: TplayPlusLog = binlog::decode(log).map_err(|_| corrupt)?;
                Rep::TpP(TplayPlusReplayer::from_log_owned(l, None))
            }
        });
    }
    WHICH.store(which, Ordering::SeqCst);
    Ok(())
}

fn lock_g() {
    // Spin briefly with 0 -> 1; then Drepper's protocol: once a thread may sleep it only ever
    // takes the lock as 2, so an unlock never misses a sleeper.
    for _ in 0..100 {
        if G.load(Ordering::Relaxed) == 0
            && G.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        {
            return;
        }
        core::hint::spin_loop();
    }
    // Then yield for a while: G is held to the holder's next safe point, usually microseconds
    // away, and a sleeper costs the holder a `futex` wake at its unlock (tplay+ recording
    // counter_race: 1 s of system time in 1.3 s before).
    if yield_until(|| {
        G.load(Ordering::Relaxed) == 0
            && G.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }) {
        return;
    }
    while G.swap(2, Ordering::Acquire) != 0 {
        let _e = sys::ErrnoGuard::new();
        sys::futex_wait(&G, 2);
    }
}

fn unlock_g() {
    if G.swap(0, Ordering::Release) == 2 {
        let _e = sys::ErrnoGuard::new();
        sys::futex_wake(&G, 1);
    }
}

fn bump() {
    STEP.fetch_add(1, Ordering::SeqCst);
    if PARKED.load(Ordering::SeqCst) != 0 {
        let _e = sys::ErrnoGuard::new();
        sys::futex_wake(&STEP, i32::MAX);
    }
}

/// Release G if `t` holds it (the safe point).
#[inline(always)]
pub fn release(t: &mut Thread) {
    if t.held == HELD_G {
        t.held = NO_STRIPE;
        if !state::REPLAY.load(Ordering::Relaxed) || model_rec::striped_replay() {
            return model_rec::release(t.tid);
        }
        if state::REPLAY.load(Ordering::Relaxed) {
            // The access of the thread's last event is complete: the `+` variants publish it
            // now (the thread may next block outside the model's events, e.g. in a condition
            // wait or a barrier, before it enters another event), and so does TPLAY, whose
            // `aSet` waits until a source event "has been executed".
            let plus = match models().rep.as_mut() {
                Some(Rep::TpP(r)) => {
                    r.completed(t.tid);
                    true
                }
                Some(Rep::Tp(r)) => {
                    r.completed(t.tid);
                    true
                }
                _ => false,
            };
            if plus {
                bump();
            }
        }
        unlock_g();
    }
}

/// The order-bearing key each model event folds into the digest: its object and `ver`, for
/// AggrePlay its version after the model's step (`AggLocs::version`: the number of writes
/// or RMWs of the location so far, including this one, so a read's key says which write it
/// reads and a write's its place in `W_x`; the number of acquisitions of a lock so far).
/// AggrePlay orders exactly these, so the keys are the same in a faithful replay; TPLAY (and
/// `aggreplay+`, whose re-recorded log is not compared) key by the object alone (`ver` 0).
fn order_key(op: &Op, ver: u64) -> u64 {
    let obj = match *op {
        Op::Read(g) | Op::Write(g) | Op::Rmw(g) => g,
        Op::Acquire(m) | Op::Release(m) => m,
        Op::Fork(c) | Op::Join(c) => c as u64,
    };
    crate::access::mix(obj, ver)
}

/// Whether the order key counts versions (plain AggrePlay).
fn versioned() -> bool {
    WHICH.load(Ordering::Relaxed) == 1
}

fn observe(t: &mut Thread, op: Op) {
    let e = Event {
        thread: t.tid,
        op,
        value: 0,
    };
    let ver = match models().rec.as_mut() {
        Some(Rec::Tp(r)) => {
            r.observe(&e);
            0
        }
        Some(Rec::TpP(r)) => {
            r.observe(&e);
            0
        }
        None => 0,
    };
    t.model_key = order_key(&op, if versioned() { ver } else { 0 });
}

fn may(t: &Thread, op: &Op) -> bool {
    match models().rep.as_ref() {
        Some(Rep::Tp(r)) => r.may_proceed(t.tid, op),
        Some(Rep::TpP(r)) => r.may_proceed(t.tid, op),
        None => true,
    }
}

fn enter_rep(t: &Thread, op: &Op) {
    match models().rep.as_mut() {
        Some(Rep::Tp(r)) => r.enter(t.tid, op),
        Some(Rep::TpP(r)) => r.enter(t.tid, op),
        None => {}
    }
}

fn proceed(t: &Thread, op: &Op) {
    match models().rep.as_mut() {
        Some(Rep::Tp(r)) => r.proceed(t.tid, op),
        Some(Rep::TpP(r)) => r.proceed(t.tid, op),
        None => {}
    }
}

/// Replay: whether `STEP` moves past `s` within about `ticket::YIELD_FOR_NS` (spin, then
/// yield; a thread held back is not counted in `PARKED` meanwhile, so no step issues a `futex`
/// wake for it). A model step comes when another thread completes an event, usually within
/// microseconds: sleeping at once made every step a wake-up of every parked thread
/// (counter_race under `aggreplay+`: 1.4 s of system time in a 1.8 s replay).
fn step_passes(s: u32) -> bool {
    for _ in 0..200 {
        if STEP.load(Ordering::Relaxed) != s {
            return true;
        }
        core::hint::spin_loop();
    }
    yield_until(|| STEP.load(Ordering::Relaxed) != s) || STEP.load(Ordering::SeqCst) != s
}

/// Replay: with G held, wait until the model lets `t` perform `op` (G held on return).
fn wait_may(t: &Thread, op: &Op) {
    let replay = state::REPLAY.load(Ordering::Relaxed);
    if !replay {
        return;
    }
    enter_rep(t, op);
    let mut waited = false;
    while !may(t, op) {
        if !waited {
            let st = state::status(t.tid);
            st.events
                .store(t.sh().events.load(Ordering::Relaxed), Ordering::Relaxed);
            st.waits_for.store(WAITS_FOR_MODEL, Ordering::Relaxed);
            st.state.store(ST_WAIT_TURN, Ordering::SeqCst);
            waited = true;
        }
        let s = STEP.load(Ordering::SeqCst);
        unlock_g();
        if !step_passes(s) {
            PARKED.fetch_add(1, Ordering::SeqCst);
            if STEP.load(Ordering::SeqCst) == s {
                let _e = sys::ErrnoGuard::new();
                sys::futex_wait(&STEP, s);
            }
            PARKED.fetch_sub(1, Ordering::SeqCst);
        }
        lock_g();
    }
    if waited {
        state::status(t.tid)
            .state
            .store(ST_RUNNING, Ordering::SeqCst);
    }
}

/// Replay: park `t` for good (G released) when its next event lies past its recorded final
/// count (seed 001, 2.5: early termination), as LEAP's exhausted vectors and ownership's gate
/// do. The models cannot say it: a thread still running when another ended the process (a
/// detached thread, one main did not join) has events after its last logged one that the
/// replayer may allow (AggrePlay: a read of a location with no logged write after it) or wait
/// for forever; either way it must stop where the recording stopped, or its count, digest and
/// final checkpoint differ from the recording's. Outside replay, or without a recorded end,
/// nothing.
#[inline(always)]
fn park_past_end(t: &mut Thread) {
    if !state::REPLAY.load(Ordering::Relaxed) {
        return;
    }
    let end = &state::config().end;
    if end.kind == END_UNKNOWN {
        return;
    }
    let Some(ti) = state::thread_index(t.tid) else {
        return;
    };
    let e = t.sh().events.load(Ordering::Relaxed) + 1;
    if e <= ti.final_events {
        return;
    }
    park_at_end(t, end, ti, e);
}

/// [`park_past_end`] once event `e` lies past `t`'s recorded final count (or is the recorded
/// fault's).
#[inline(never)]
fn park_at_end(t: &mut Thread, end: &ProcessEnd, ti: &ThreadIndex, e: u64) {
    // The recording's faulting thread may fault inside the callback after its last counted
    // event: let it run that callback.
    let faulted_here = end.kind == END_FAULT && end.tid == t.tid && e == ti.final_events + 1;
    if e > ti.final_events && !faulted_here {
        // Nothing held while parked for good (a model stripe kept from the previous event).
        crate::leap::release_held(t);
        if end.tid == t.tid {
            // The recording's ending thread ended the process at its final count: one more
            // event is a divergence (TPLAY does not order every read, so a spinning read loop
            // may run longer), not a wait for an end that never comes.
            crate::access::diverge(
                t,
                e,
                format_args!(
                    "thread {} diverged at event {e}: the recording ended the process after its event {}",
                    t.tid, ti.final_events
                ),
            );
        }
        crate::ownership::set_free(t.sh());
        crate::leap::park_forever(t.tid, ST_AT_END);
    }
}

/// One event: take G (released at the thread's next safe point), wait for the model's
/// permission in replay, then tell the model. `op` is computed under G.
pub fn event(t: &mut Thread, op: impl Fn() -> Op) {
    if !state::REPLAY.load(Ordering::Relaxed) {
        return record_event(t, &op);
    }
    if model_rec::striped_replay() {
        return striped_event(t, &op);
    }
    crate::leap::release_held(t);
    park_past_end(t);
    lock_g();
    t.held = HELD_G;
    let o = op();
    wait_may(t, &o);
    if state::REPLAY.load(Ordering::Relaxed) {
        proceed(t, &o);
    }
    observe(t, o);
    bump();
}

/// One event while recording: take its model stripe (kept to the next safe point), then the
/// model's step (see `model_rec`).
fn record_event(t: &mut Thread, op: &impl Fn() -> Op) {
    if t.held != HELD_G {
        crate::leap::release_held(t);
    }
    // (`take` keeps a held stripe that is the event's own and nobody waits for.)
    let (s, o) = model_rec::take(t.tid, op);
    t.held = HELD_G;
    if models().rec.is_none() {
        let ver = model_rec::observe_agg(t.tid, s, o);
        t.model_key = order_key(&o, if versioned() { ver } else { 0 });
        return;
    }
    lock_g();
    observe(t, o);
    unlock_g();
}

/// One event of AggrePlay's (or `aggreplay+`'s) replay on the model stripes: take the event's
/// stripe (kept to the next safe point), wait for the model's permission, proceed, re-record.
fn striped_event(t: &mut Thread, op: &impl Fn() -> Op) {
    park_past_end(t);
    let s = take_striped(t, op);
    model_rec::proceed(t.tid, s.0, s.1);
    observe_striped(t, s);
}

/// Take the stripe of `op` and wait there for the model's permission (held on return).
fn take_striped(t: &mut Thread, op: &impl Fn() -> Op) -> (usize, Op) {
    if t.held != HELD_G {
        crate::leap::release_held(t);
    }
    let (s, o) = model_rec::take(t.tid, op);
    t.held = HELD_G;
    let tid = t.tid;
    let waited = model_rec::wait_turn(tid, s, &o, || {
        let st = state::status(tid);
        st.events
            .store(t.sh().events.load(Ordering::Relaxed), Ordering::Relaxed);
        st.waits_for.store(WAITS_FOR_MODEL, Ordering::Relaxed);
        st.state.store(ST_WAIT_TURN, Ordering::SeqCst);
    });
    if waited {
        state::status(tid).state.store(ST_RUNNING, Ordering::SeqCst);
    }
    (s, o)
}

/// Re-record event `(s, o)` on its stripe (held), and key it for the digest.
fn observe_striped(t: &mut Thread, (s, o): (usize, Op)) {
    let ver = model_rec::observe_agg(t.tid, s, o);
    t.model_key = order_key(&o, if versioned() { ver } else { 0 });
}

/// A blocking acquisition in replay: wait for permission, release G, perform `f` (the real
/// blocking call), then take G and tell the model. While recording: `f` first, then the event.
pub fn blocking_event<R>(t: &mut Thread, op: Op, f: impl FnOnce() -> R) -> R {
    blocking_begin(t, &op);
    let r = f();
    blocking_end(t, op);
    r
}

/// The part of [`blocking_event`] before its blocking call (for a call made by the C shim).
pub fn blocking_begin(t: &mut Thread, op: &Op) {
    crate::leap::release_held(t);
    park_past_end(t);
    if model_rec::striped_replay() {
        take_striped(t, &|| *op);
        crate::leap::release_held(t);
    } else if state::REPLAY.load(Ordering::Relaxed) {
        lock_g();
        wait_may(t, op);
        unlock_g();
    }
}

/// The part of [`blocking_event`] after its blocking call.
pub fn blocking_end(t: &mut Thread, op: Op) {
    if !state::REPLAY.load(Ordering::Relaxed) {
        event(t, || op);
        return;
    }
    if model_rec::striped_replay() {
        // The permission of `blocking_begin` still holds: only this thread's own step passes
        // the head of `L_m` (or the other lists) it waited for.
        let s = model_rec::take(t.tid, &|| op);
        t.held = HELD_G;
        model_rec::proceed(t.tid, s.0, s.1);
        return observe_striped(t, s);
    }
    lock_g();
    t.held = HELD_G;
    proceed(t, &op);
    observe(t, op);
    bump();
}

/// The operation of an access of `kind` (see access::kind) at granule `g`.
pub fn op_for(kind: u64, g: u64) -> Op {
    use crate::access::kind::*;
    match kind {
        READ => Op::Read(g),
        WRITE => Op::Write(g),
        _ => Op::Rmw(g),
    }
}

/// At the end of the process, called by thread `tid` (every model stripe and G are taken;
/// every other thread parks at its next event): send the log.
pub fn finish(tid: u32) {
    if !active() {
        return;
    }
    if !state::REPLAY.load(Ordering::Relaxed) || model_rec::striped_replay() {
        model_rec::lock_all(tid);
    }
    lock_g();
    let mut out = ModelFrames {
        frame: [0; FRAME_HDR + MODEL_FRAME],
        n: 0,
    };
    let encoded = match models().rec.take() {
        Some(Rec::Tp(r)) => binlog::encode(&r.finish()),
        Some(Rec::TpP(r)) => binlog::encode(&r.finish()),
        None if !state::REPLAY.load(Ordering::Relaxed) || model_rec::striped_replay() => {
            // Encoded and sent piece by piece: never the whole log in one buffer.
            model_rec::finish_agg(&mut |b| out.push(b));
            out.send();
            return;
        }
        None => return,
    };
    if let Ok(bytes) = encoded {
        out.push(&bytes);
        out.send();
    }
}

/// The model log's bytes per `F_MODEL` frame.
const MODEL_FRAME: usize = 60000;

/// The model log on its way out: full frames of [`MODEL_FRAME`] bytes, the last one shorter.
struct ModelFrames {
    frame: [u8; FRAME_HDR + MODEL_FRAME],
    n: usize,
}

impl ModelFrames {
    fn push(&mut self, mut b: &[u8]) {
        while !b.is_empty() {
            let k = (MODEL_FRAME - self.n).min(b.len());
            self.frame[FRAME_HDR + self.n..FRAME_HDR + self.n + k].copy_from_slice(&b[..k]);
            self.n += k;
            b = &b[k..];
            if self.n == MODEL_FRAME {
                self.send();
            }
        }
    }

    fn send(&mut self) {
        if self.n > 0 {
            put_frame_header(&mut self.frame, F_MODEL, self.n);
            crate::channel::send(&self.frame[..FRAME_HDR + self.n]);
            self.n = 0;
        }
    }
}

/// A thread finished (its start routine returned): the models count it as done.
pub fn thread_exit(t: &mut Thread) {
    if !active() {
        return;
    }
    crate::leap::release_held(t);
    lock_g();
    let m = models();
    match m.rec.as_mut() {
        Some(Rec::Tp(r)) => r.thread_exit(t.tid),
        Some(Rec::TpP(r)) => r.thread_exit(t.tid),
        None => {}
    }
    match m.rep.as_mut() {
        Some(Rep::Tp(r)) => r.thread_exit(t.tid),
        Some(Rep::TpP(r)) => r.thread_exit(t.tid),
        None => {}
    }
    bump();
    unlock_g();
}

/// One plain or atomic access under a model strategy: the model sees one location per access
/// (a ranged access: its first granule).
pub fn access(t: &mut Thread, addr: usize, size: usize, k: u64) {
    let g0 = addr >> 3;
    let k = if (addr + size - 1) >> 3 != g0 {
        crate::access::kind::RANGE
    } else {
        k
    };
    event(t, || op_for(k, g0 as u64));
    crate::access::count_event(t, 0, t.model_key, k);
}

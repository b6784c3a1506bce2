//! Interposed pthread and semaphore calls: each is a safe point, and each acquisition is an
//! event on the stripe of the synchronisation object, so LEAP's vectors order locks exactly
//! as they order memory.
//!
//! The pattern, symmetric between the two sides:
//! * record: perform the real call, then take the turn (for blocking acquisitions: the real
//!   order of acquisition is the order of the turns, because the object is held meanwhile);
//!   or take the turn, then perform (posts, once, thread creation: holding the turn until the
//!   next safe point makes the turn order the real order).
//! * replay: take the turn first, then perform the real call, which can then only block
//!   briefly on a predecessor that already had its turn. Outcomes that depend on timing
//!   (trylock, timed waits, barrier serial thread, condition-variable wake-ups) are results:
//!   recorded, and returned from the trace in replay without asking the clock.
#![allow(unsafe_code)]
#![allow(missing_docs)]

use crate::access::{self, kind};
use crate::entry::enter;
use crate::leap;
use crate::real;
use crate::state::{self, Thread};
use core::ffi::{c_int, c_void};
use core::sync::atomic::Ordering;
use libc::{
    pthread_attr_t, pthread_barrier_t, pthread_cond_t, pthread_mutex_t, pthread_rwlock_t,
    pthread_t, sem_t, timespec,
};
use reprise_proto::*;

#[inline(always)]
fn replaying() -> bool {
    state::REPLAY.load(Ordering::Relaxed)
}

/// Take the turn on the stripe of synchronisation object `obj`.
pub fn take_obj(t: &mut Thread, obj: *const c_void, k: u64) {
    access::fold_pending(t);
    if crate::model::active() {
        let op = match k {
            kind::LOCK | kind::COND => reprise_core::Op::Acquire(obj as u64),
            kind::CREATE => {
                crate::model::event(t, || {
                    reprise_core::Op::Fork(state::NEXT_TID.load(Ordering::Relaxed))
                });
                access::count_event(t, 0, t.model_key, k);
                return;
            }
            _ => reprise_core::Op::Rmw(obj as u64 >> 3),
        };
        crate::model::event(t, || op);
        access::count_event(t, 0, t.model_key, k);
        return;
    }
    if k == kind::ONCE && state::strategy() == state::Strategy::Ownership {
        // Instrumented code reads a function-local static's guard inline (an atomic load)
        // while its acquire and release run uninstrumented in libstdc++: under ownership the
        // guard's granule must change owner with the calls too, or that load is unordered.
        // Same event number as the stripe's turn below (the edge gates this event in replay).
        ownership_take(t, obj as usize);
    }
    let s = leap::stripe_of_addr(obj as usize);
    let pos = leap::take(t, s);
    access::count_event(t, s as u64, pos, k);
}

fn ownership_take(t: &mut Thread, addr: usize) {
    crate::ownership::access(t, &[(addr, 8 - (addr & 7), true)]);
}

/// Run a real call that may block, marked as blocked for the watchdogs: `on` (a `WAIT_*`) says
/// whether only another thread can end the wait, and on what `obj`.
fn blocking<R>(t: &Thread, on: u32, obj: usize, f: impl FnOnce() -> R) -> R {
    crate::ownership::set_free(t);
    mark_blocked(t, on, obj);
    let r = f();
    let st = state::status(t.tid);
    st.state.store(ST_RUNNING, Ordering::SeqCst);
    st.waits_on.store(WAIT_NONE, Ordering::Relaxed);
    r
}

/// Publish, for the launcher, that `t` blocks in a wait `on` object `obj`.
fn mark_blocked(t: &Thread, on: u32, obj: usize) {
    let st = state::status(t.tid);
    st.events
        .store(t.events.load(Ordering::Relaxed), Ordering::Relaxed);
    st.object.store(obj as u64, Ordering::Relaxed);
    st.waits_on.store(on, Ordering::Relaxed);
    st.state.store(ST_BLOCKED, Ordering::SeqCst);
}

/// A blocking acquisition (`lock`), with its try/timed variants as `attempt`.
unsafe fn acquire(obj: *const c_void, k: u64, lock: impl FnOnce() -> c_int) -> c_int {
    let Some(e) = enter() else { return lock() };
    let t = e.t();
    access::safe_point(t);
    if crate::model::active() {
        return model_acquire(t, obj, k, lock);
    }
    if replaying() {
        take_obj(t, obj, k);
        blocking(t, WAIT_LOCK, obj as usize, lock)
    } else {
        let r = blocking(t, WAIT_LOCK, obj as usize, lock);
        if r == 0 {
            take_obj(t, obj, k);
        }
        r
    }
}

/// A blocking acquisition under a model strategy: the model decides whose turn it is; the
/// real call blocks with the model's lock released.
fn model_acquire(
    t: &mut Thread,
    obj: *const c_void,
    k: u64,
    lock: impl FnOnce() -> c_int,
) -> c_int {
    access::fold_pending(t);
    let op = reprise_core::Op::Acquire(obj as u64);
    let tid = t.tid;
    let st = state::status(tid);
    let r = crate::model::blocking_event(t, op, || {
        st.state.store(ST_BLOCKED, Ordering::SeqCst);
        let r = lock();
        st.state.store(ST_RUNNING, Ordering::SeqCst);
        r
    });
    access::count_event(t, 0, t.model_key, k);
    r
}

/// An acquisition whose success depends on timing: `attempt` in record; in replay the
/// recorded result decides, and success is reproduced with the blocking `lock`.
unsafe fn attempt(
    obj: *const c_void,
    k: u64,
    attempt: impl FnOnce() -> c_int,
    lock: impl FnOnce() -> c_int,
) -> c_int {
    let Some(e) = enter() else { return attempt() };
    let t = e.t();
    access::safe_point(t);
    if replaying() {
        let r = access::result(t, None) as c_int;
        if r == 0 && crate::model::active() {
            model_acquire(t, obj, k, lock);
        } else if r == 0 {
            take_obj(t, obj, k);
            let r2 = blocking(t, WAIT_LOCK, obj as usize, lock);
            if r2 != 0 {
                access::diverge(t, t.events.load(Ordering::Relaxed), format_args!("thread {} could not re-acquire a lock it acquired in the recording (error {r2})", t.tid));
            }
        }
        r
    } else {
        let r = blocking(t, WAIT_NONE, 0, attempt);
        access::result(t, Some(r as u32 as u64));
        if r == 0 {
            take_obj(t, obj, k);
        }
        r
    }
}

/// A release: just a safe point before the real call.
unsafe fn release(f: impl FnOnce() -> c_int) -> c_int {
    if let Some(e) = enter() {
        access::safe_point(e.t());
    }
    f()
}

/// A lock release: a safe point; under a model strategy also the model's release event.
unsafe fn release_obj(obj: *const c_void, f: impl FnOnce() -> c_int) -> c_int {
    if let Some(e) = enter() {
        let t = e.t();
        access::safe_point(t);
        if crate::model::active() {
            crate::model::event(t, || reprise_core::Op::Release(obj as u64));
            access::count_event(t, 0, t.model_key, kind::LOCK);
        }
    }
    f()
}

// ---- mutexes ---------------------------------------------------------------------------------

#[export_name = "reprise_pthread_mutex_lock"]
pub unsafe extern "C" fn pthread_mutex_lock(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY (all interposers): arguments are forwarded unchanged to the real function, whose
    // contract the caller upholds.
    unsafe { acquire(m.cast(), kind::LOCK, || real::pthread_mutex_lock(m)) }
}
#[export_name = "reprise_pthread_mutex_trylock"]
pub unsafe extern "C" fn pthread_mutex_trylock(m: *mut pthread_mutex_t) -> c_int {
    unsafe {
        attempt(
            m.cast(),
            kind::LOCK,
            || real::pthread_mutex_trylock(m),
            || real::pthread_mutex_lock(m),
        )
    }
}
#[export_name = "reprise_pthread_mutex_timedlock"]
pub unsafe extern "C" fn pthread_mutex_timedlock(
    m: *mut pthread_mutex_t,
    ts: *const timespec,
) -> c_int {
    unsafe {
        attempt(
            m.cast(),
            kind::LOCK,
            || real::pthread_mutex_timedlock(m, ts),
            || real::pthread_mutex_lock(m),
        )
    }
}
#[export_name = "reprise_pthread_mutex_unlock"]
pub unsafe extern "C" fn pthread_mutex_unlock(m: *mut pthread_mutex_t) -> c_int {
    unsafe { release_obj(m.cast(), || real::pthread_mutex_unlock(m)) }
}

// ---- rwlocks and spinlocks ------------------------------------------------------------------

#[export_name = "reprise_pthread_rwlock_rdlock"]
pub unsafe extern "C" fn pthread_rwlock_rdlock(l: *mut pthread_rwlock_t) -> c_int {
    unsafe { acquire(l.cast(), kind::LOCK, || real::pthread_rwlock_rdlock(l)) }
}
#[export_name = "reprise_pthread_rwlock_wrlock"]
pub unsafe extern "C" fn pthread_rwlock_wrlock(l: *mut pthread_rwlock_t) -> c_int {
    unsafe { acquire(l.cast(), kind::LOCK, || real::pthread_rwlock_wrlock(l)) }
}
#[export_name = "reprise_pthread_rwlock_tryrdlock"]
pub unsafe extern "C" fn pthread_rwlock_tryrdlock(l: *mut pthread_rwlock_t) -> c_int {
    unsafe {
        attempt(
            l.cast(),
            kind::LOCK,
            || real::pthread_rwlock_tryrdlock(l),
            || real::pthread_rwlock_rdlock(l),
        )
    }
}
#[export_name = "reprise_pthread_rwlock_trywrlock"]
pub unsafe extern "C" fn pthread_rwlock_trywrlock(l: *mut pthread_rwlock_t) -> c_int {
    unsafe {
        attempt(
            l.cast(),
            kind::LOCK,
            || real::pthread_rwlock_trywrlock(l),
            || real::pthread_rwlock_wrlock(l),
        )
    }
}
#[export_name = "reprise_pthread_rwlock_timedrdlock"]
pub unsafe extern "C" fn pthread_rwlock_timedrdlock(
    l: *mut pthread_rwlock_t,
    ts: *const timespec,
) -> c_int {
    unsafe {
        attempt(
            l.cast(),
            kind::LOCK,
            || real::pthread_rwlock_timedrdlock(l, ts),
            || real::pthread_rwlock_rdlock(l),
        )
    }
}
#[export_name = "reprise_pthread_rwlock_timedwrlock"]
pub unsafe extern "C" fn pthread_rwlock_timedwrlock(
    l: *mut pthread_rwlock_t,
    ts: *const timespec,
) -> c_int {
    unsafe {
        attempt(
            l.cast(),
            kind::LOCK,
            || real::pthread_rwlock_timedwrlock(l, ts),
            || real::pthread_rwlock_wrlock(l),
        )
    }
}
#[export_name = "reprise_pthread_rwlock_unlock"]
pub unsafe extern "C" fn pthread_rwlock_unlock(l: *mut pthread_rwlock_t) -> c_int {
    unsafe { release_obj(l.cast(), || real::pthread_rwlock_unlock(l)) }
}
#[export_name = "reprise_pthread_spin_lock"]
pub unsafe extern "C" fn pthread_spin_lock(l: *mut c_int) -> c_int {
    unsafe { acquire(l.cast(), kind::LOCK, || real::pthread_spin_lock(l)) }
}
#[export_name = "reprise_pthread_spin_trylock"]
pub unsafe extern "C" fn pthread_spin_trylock(l: *mut c_int) -> c_int {
    unsafe {
        attempt(
            l.cast(),
            kind::LOCK,
            || real::pthread_spin_trylock(l),
            || real::pthread_spin_lock(l),
        )
    }
}
#[export_name = "reprise_pthread_spin_unlock"]
pub unsafe extern "C" fn pthread_spin_unlock(l: *mut c_int) -> c_int {
    unsafe { release_obj(l.cast(), || real::pthread_spin_unlock(l)) }
}

// ---- cancellation points: the real call is made by the C interposer ---------------------------
//
// A blocking call that is a cancellation point (condition and semaphore waits, joins, sleeps)
// may end the thread by glibc's forced unwind inside the real call, so the real call must be
// made from a C frame (`csrc/libc_shim.c`) with no Rust frame between it and the program. The
// C interposer calls a `_pre` step here, which answers what to do, then (PRE_CALL) makes the
// real call itself and hands its result to the `_post` step. The `_post` step continues the same
// runtime call (see [`resume`]): it is not a new runtime entry, since replay usually ends in
// `_pre` (PRE_DONE) and entries must count alike in both modes.

/// `_pre` answer: the runtime is off for this call; make the real call, nothing else.
pub const PRE_NATIVE: c_int = 0;
/// `_pre` answer: make the real call, then call the `_post` step with its result.
pub const PRE_CALL: c_int = 1;
/// `_pre` answer: the runtime did the call (replay); return the value it stored.
pub const PRE_DONE: c_int = 2;
/// `_pre` answer: the recorded thread was cancelled here; end the thread (replay).
pub const PRE_CANCEL: c_int = 3;

/// The thread is inside the runtime again, after the real call of a `_pre` step: like an
/// [`crate::entry::Entry`] (IN_RT set, system calls untrapped until it drops), without counting
/// a runtime entry or delivering signals.
pub struct Resumed {
    t: *mut Thread,
}

impl Resumed {
    /// The current thread's slot.
    #[allow(clippy::mut_from_ref)]
    pub fn t(&self) -> &mut Thread {
        // SAFETY: the current thread's own slot.
        unsafe { &mut *self.t }
    }
}

impl Drop for Resumed {
    fn drop(&mut self) {
        state::IN_RT.with(|c| c.set(false));
        let t = self.t();
        crate::ownership::recompute(t);
        if t.sud_on && !t.sud_hold {
            t.sud.store(crate::sud::BLOCK, Ordering::Relaxed);
        }
    }
}

/// Continue the runtime call whose `_pre` step returned PRE_CALL. Parks the thread if the
/// process started ending meanwhile (as [`enter`] does).
pub fn resume() -> Option<Resumed> {
    let m = state::mode();
    let t = state::cur();
    if t.is_null()
        || state::IN_RT.with(|c| c.get())
        || !(m == state::M_RECORD || m == state::M_REPLAY || m == state::M_DONE)
    {
        return None;
    }
    // SAFETY: the current thread's own slot.
    let th = unsafe { &mut *t };
    if th.passthrough {
        return None;
    }
    state::IN_RT.with(|c| c.set(true));
    if m == state::M_DONE {
        leap::release_held(th);
        leap::park_forever(th.tid, ST_AT_END);
    }
    th.sud_hold = false;
    if th.sud_on {
        th.sud.store(crate::sud::ALLOW, Ordering::Relaxed);
    }
    Some(Resumed { t })
}

/// The thread is about to block in a real call made outside the runtime (for the watchdog);
/// system calls stay untrapped until then, as inside the runtime.
fn block_begin(t: &mut Thread, on: u32, obj: usize) {
    crate::ownership::set_free(t);
    mark_blocked(t, on, obj);
    t.sud_hold = true;
}

/// The real call of [`block_begin`] returned.
fn block_end(t: &Thread) {
    let st = state::status(t.tid);
    st.state.store(ST_RUNNING, Ordering::SeqCst);
    st.waits_on.store(WAIT_NONE, Ordering::Relaxed);
}

// ---- condition variables ----------------------------------------------------------------------

/// Wait on a condition variable with mutex `m` (`timed`: with a timeout), before the real
/// wait. Record performs the real wait (in C) and records the mutex re-acquisition in `_post`
/// (and, for a timed wait, whether it timed out); replay never waits for real: it releases the
/// mutex and re-acquires it at its recorded turn, which already encodes the wake-up (signal,
/// broadcast, timeout or spurious, all alike), or the cancellation.
///
/// # Safety
/// `m` is the caller's mutex, locked by this thread; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn reprise_cond_wait_pre(
    m: *mut pthread_mutex_t,
    timed: c_int,
    out: *mut c_int,
) -> c_int {
    let Some(e) = enter() else { return PRE_NATIVE };
    let t = e.t();
    access::safe_point(t);
    let model = crate::model::active();
    if model {
        // The wait releases the mutex and re-acquires it: a release event, then a blocking
        // acquisition (replay never waits on the real condition variable).
        crate::model::event(t, || reprise_core::Op::Release(m as u64));
        access::count_event(t, 0, t.model_key, kind::COND);
    }
    if replaying() {
        // SAFETY (this block): the caller's mutex, as the real wait would use it.
        unsafe { real::pthread_mutex_unlock(m) };
        let cancelled = crate::cancel::replayed_here(t);
        if model {
            model_acquire(t, m.cast(), kind::COND, || unsafe {
                real::pthread_mutex_lock(m)
            });
        } else {
            take_obj(t, m.cast(), kind::COND);
            blocking(t, WAIT_LOCK, m as usize, || unsafe {
                real::pthread_mutex_lock(m)
            });
        }
        if cancelled {
            return PRE_CANCEL;
        }
        let r = if timed == 0 {
            0
        } else {
            access::result(t, None) as c_int
        };
        unsafe { *out = r };
        return PRE_DONE;
    }
    if model {
        crate::leap::release_held(t);
    }
    block_begin(
        t,
        if timed == 0 { WAIT_COND } else { WAIT_NONE },
        m as usize,
    );
    PRE_CALL
}

/// The real wait of [`reprise_cond_wait_pre`] returned `r`: the re-acquisition's turn.
#[no_mangle]
pub extern "C" fn reprise_cond_wait_post(m: *mut pthread_mutex_t, timed: c_int, r: c_int) -> c_int {
    let Some(g) = resume() else { return r };
    let t = g.t();
    block_end(t);
    take_obj(t, m.cast(), kind::COND);
    if timed != 0 {
        access::result(t, Some(r as u32 as u64));
    }
    r
}

#[export_name = "reprise_pthread_mutex_clocklock"]
pub unsafe extern "C" fn pthread_mutex_clocklock(
    m: *mut pthread_mutex_t,
    clk: libc::clockid_t,
    ts: *const timespec,
) -> c_int {
    unsafe {
        attempt(
            m.cast(),
            kind::LOCK,
            || real::pthread_mutex_clocklock(m, clk, ts),
            || real::pthread_mutex_lock(m),
        )
    }
}
#[export_name = "reprise_pthread_cond_signal"]
pub unsafe extern "C" fn pthread_cond_signal(c: *mut pthread_cond_t) -> c_int {
    unsafe { release(|| real::pthread_cond_signal(c)) }
}
#[export_name = "reprise_pthread_cond_broadcast"]
pub unsafe extern "C" fn pthread_cond_broadcast(c: *mut pthread_cond_t) -> c_int {
    unsafe { release(|| real::pthread_cond_broadcast(c)) }
}

// ---- barriers, once, semaphores -----------------------------------------------------------------

#[export_name = "reprise_pthread_barrier_wait"]
pub unsafe extern "C" fn pthread_barrier_wait(b: *mut pthread_barrier_t) -> c_int {
    let Some(e) = enter() else {
        return unsafe { real::pthread_barrier_wait(b) };
    };
    let t = e.t();
    access::safe_point(t);
    let r = blocking(t, WAIT_BARRIER, b as usize, || unsafe {
        real::pthread_barrier_wait(b)
    });
    // Which thread is the serial one depends on arrival order: a result.
    access::result(t, Some(r as u32 as u64)) as u32 as c_int
}

#[export_name = "reprise_pthread_once"]
pub unsafe extern "C" fn pthread_once(o: *mut c_int, f: extern "C" fn()) -> c_int {
    let Some(e) = enter() else {
        return unsafe { real::pthread_once(o, f) };
    };
    let t = e.t();
    access::safe_point(t);
    take_obj(t, o.cast(), kind::ONCE);
    if crate::model::active() {
        // The initialiser runs under the model's events; another caller may block inside.
        crate::leap::release_held(t);
    }
    drop(e);
    // The turn is held until the next safe point, so the first turn holder enters the real
    // once first and runs the initialiser, in both modes.
    unsafe { real::pthread_once(o, f) }
}

unsafe fn set_errno(v: c_int) {
    // SAFETY: this thread's errno slot.
    unsafe { *libc::__errno_location() = v };
}

unsafe fn sem_acquire(s: *mut sem_t, attempt: impl FnOnce() -> c_int) -> c_int {
    let Some(e) = enter() else { return attempt() };
    let t = e.t();
    access::safe_point(t);
    if replaying() {
        let r = access::result(t, None) as u32 as i32;
        if r == 0 && crate::model::active() {
            model_acquire(t, s.cast(), kind::SEM, || unsafe { real::sem_wait(s) });
            0
        } else if r == 0 {
            take_obj(t, s.cast(), kind::SEM);
            blocking(t, WAIT_NONE, 0, || unsafe { real::sem_wait(s) });
            0
        } else {
            unsafe { set_errno(r) };
            -1
        }
    } else {
        let r = blocking(t, WAIT_NONE, 0, attempt);
        // SAFETY: errno of this thread, set by the real call.
        let err = if r == 0 {
            0
        } else {
            unsafe { *libc::__errno_location() }
        };
        access::result(t, Some(err as u32 as u64));
        if r == 0 {
            take_obj(t, s.cast(), kind::SEM);
        }
        unsafe { set_errno(err) };
        r
    }
}

#[export_name = "reprise_sem_trywait"]
pub unsafe extern "C" fn sem_trywait(s: *mut sem_t) -> c_int {
    unsafe { sem_acquire(s, || real::sem_trywait(s)) }
}

/// A blocking semaphore wait (`sem_wait`, `sem_timedwait`, `sem_clockwait`; the C interposer
/// makes the real call), before the real call: replay gives the recorded outcome (and
/// reproduces a success with a real wait at its turn) or the cancellation.
///
/// # Safety
/// `s` is the caller's semaphore; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn reprise_sem_wait_pre(s: *mut sem_t, out: *mut c_int) -> c_int {
    let Some(e) = enter() else { return PRE_NATIVE };
    let t = e.t();
    access::safe_point(t);
    if !replaying() {
        // (A semaphore wait may be timed: never named a deadlock.)
        block_begin(t, WAIT_NONE, 0);
        return PRE_CALL;
    }
    if crate::cancel::replayed_here(t) {
        return PRE_CANCEL;
    }
    let r = access::result(t, None) as u32 as i32;
    // SAFETY: the caller's semaphore and out-slot; this thread's errno.
    unsafe {
        if r == 0 && crate::model::active() {
            model_acquire(t, s.cast(), kind::SEM, || real::sem_wait(s));
            *out = 0;
        } else if r == 0 {
            take_obj(t, s.cast(), kind::SEM);
            blocking(t, WAIT_NONE, 0, || real::sem_wait(s));
            *out = 0;
        } else {
            set_errno(r);
            *out = -1;
        }
    }
    PRE_DONE
}

/// The real wait of [`reprise_sem_wait_pre`] returned `r` (errno as it left it): its outcome
/// is a result; a success is the semaphore's turn.
#[no_mangle]
pub extern "C" fn reprise_sem_wait_post(s: *mut sem_t, r: c_int) -> c_int {
    // SAFETY: this thread's errno, set by the real call.
    let err = if r == 0 {
        0
    } else {
        unsafe { *libc::__errno_location() }
    };
    let Some(g) = resume() else { return r };
    let t = g.t();
    block_end(t);
    access::result(t, Some(err as u32 as u64));
    if r == 0 {
        take_obj(t, s.cast(), kind::SEM);
    }
    // SAFETY: this thread's errno, as the real call left it.
    unsafe { set_errno(err) };
    r
}
#[export_name = "reprise_sem_post"]
pub unsafe extern "C" fn sem_post(s: *mut sem_t) -> c_int {
    let Some(e) = enter() else {
        return unsafe { real::sem_post(s) };
    };
    let t = e.t();
    access::safe_point(t);
    take_obj(t, s.cast(), kind::SEM);
    drop(e);
    unsafe { real::sem_post(s) }
}

// ---- threads -----------------------------------------------------------------------------------

/// Address whose stripe orders thread creation (and so deterministic thread ids).
static CREATE_LOC: u64 = 0;

/// A new thread's first runtime step, called by the C trampoline (`reprise_trampoline` in
/// `csrc/libc_shim.c`) before the program's start routine: adopt the slot the parent prepared,
/// log the start, turn Syscall User Dispatch on. Returns the start routine; its argument goes
/// to `*arg`.
///
/// The trampoline is C, not Rust, because a thread may end by glibc's forced unwind
/// (`pthread_exit` at any depth, cancellation): the unwind must pass only through frames that
/// can be unwound, and a Rust frame (built with panic=abort) cannot. The thread's end
/// ([`reprise_thread_finish`]) runs from a cleanup in that C frame, on return and on unwind
/// alike, after the program's own cleanup handlers and destructors.
#[no_mangle]
pub unsafe extern "C" fn reprise_thread_begin(slot: *mut c_void, arg: *mut *mut c_void) -> usize {
    let t = slot as *mut Thread;
    state::set_cur(t);
    // SAFETY: the parent initialised this slot for us before creating the thread; arg is the
    // trampoline's out-slot.
    let th = unsafe { &mut *t };
    th.mb.ktid.store(crate::sys::gettid(), Ordering::Release);
    state::status(th.tid)
        .ktid
        .store(crate::sys::gettid(), Ordering::Relaxed);
    access::log_start(th);
    crate::sud::enable(th);
    unsafe { *arg = th.start_arg as *mut c_void };
    th.start_fn
}

/// The thread's start routine returned or its unwind (pthread_exit, cancellation) reached the
/// trampoline: the thread ends now.
#[no_mangle]
pub extern "C" fn reprise_thread_finish() {
    crate::lifecycle::thread_end();
}

/// `pthread_exit` (the C interposer in `csrc/libc_shim.c` calls this, then glibc's, which
/// unwinds): a safe point. A thread started through the trampoline ends when the unwind
/// reaches it; the main thread has none (see [`crate::lifecycle::main_unwinding`]).
#[no_mangle]
pub extern "C" fn reprise_pthread_exit_begin() {
    let Some(e) = enter() else { return };
    let t = e.t();
    access::safe_point(t);
    let main = t.tid == 0;
    drop(e);
    if main {
        crate::lifecycle::main_unwinding();
    }
}

extern "C" {
    /// The C trampoline every recorded thread starts in (`csrc/libc_shim.c`).
    fn reprise_trampoline(slot: *mut c_void) -> *mut c_void;
}

#[export_name = "reprise_pthread_create"]
pub unsafe extern "C" fn pthread_create(
    th: *mut pthread_t,
    attr: *const pthread_attr_t,
    f: extern "C" fn(*mut c_void) -> *mut c_void,
    arg: *mut c_void,
) -> c_int {
    let Some(e) = enter() else {
        return unsafe { real::pthread_create(th, attr, f, arg) };
    };
    let t = e.t();
    access::safe_point(t);
    take_obj(t, core::ptr::addr_of!(CREATE_LOC).cast(), kind::CREATE);
    // Under the creation turn, so ids follow the recorded creation order.
    let id = state::NEXT_TID.load(Ordering::Relaxed);
    if id as usize >= MAX_THREADS - 1 {
        crate::say!("more than {} threads: not supported", MAX_THREADS - 2);
        return libc::EAGAIN;
    }
    state::NEXT_TID.store(id + 1, Ordering::Relaxed);
    let child = state::slot(id);
    let nth = t.children;
    t.children += 1;
    // SAFETY: slot `id` is unused until this thread starts.
    unsafe {
        state::init_slot(child, id, t.tid, nth);
        (*child).start_fn = f as usize;
        (*child).start_arg = arg as usize;
    }
    // Stack from the thread's fixed window (glibc's stack cache reuse is racy).
    // SAFETY: pthread_attr_t is plain data; a bitwise copy is a valid attr that we never
    // destroy (so a shared cpuset extension is not freed twice).
    let mut a: pthread_attr_t = unsafe { core::mem::zeroed() };
    unsafe {
        if attr.is_null() {
            libc::pthread_attr_init(&mut a);
        } else {
            core::ptr::copy_nonoverlapping(attr, &mut a, 1);
        }
        let mut addr: *mut c_void = core::ptr::null_mut();
        let mut size: usize = 0;
        libc::pthread_attr_getstack(&a, &mut addr, &mut size);
        if addr.is_null() {
            let mut size = 0usize;
            libc::pthread_attr_getstacksize(&a, &mut size);
            if let Some(base) = crate::lifecycle::stack_window(id, size) {
                libc::pthread_attr_setstack(&mut a, base as *mut c_void, size);
            }
        }
    }
    let r = blocking(t, WAIT_NONE, 0, || unsafe {
        // SAFETY: the trampoline has the C start-routine ABI; it is a C function, so the
        // thread's forced unwind may pass through it.
        let tr: extern "C" fn(*mut c_void) -> *mut c_void = core::mem::transmute(
            reprise_trampoline as unsafe extern "C" fn(*mut c_void) -> *mut c_void,
        );
        real::pthread_create(th, &a, tr, child.cast())
    });
    if r == 0 {
        // SAFETY: th was filled by the successful real call; the slot is ours to annotate.
        unsafe { (*child).pthread = *th as u64 };
    }
    r
}

/// The model strategies' join operation of pthread `t`, if it is a recorded thread.
fn join_op(t: pthread_t) -> Option<reprise_core::Op> {
    if !crate::model::active() {
        return None;
    }
    let n = state::NEXT_TID.load(Ordering::Relaxed);
    // SAFETY: slots below NEXT_TID are initialised.
    (1..n)
        .find(|&i| unsafe { (*state::slot(i)).pthread } == t as u64)
        .map(reprise_core::Op::Join)
}

/// `pthread_join` (`timed` = 0) or `pthread_timedjoin_np` of `t`, before the real call (the C
/// interposer makes it). A timed join's outcome depends on timing: it is a result, and replay
/// reproduces a success with a blocking join.
///
/// # Safety
/// `ret` and `out` are the caller's out-slots (ret may be null).
#[no_mangle]
pub unsafe extern "C" fn reprise_join_pre(
    t: pthread_t,
    timed: c_int,
    ret: *mut *mut c_void,
    out: *mut c_int,
) -> c_int {
    let Some(e) = enter() else { return PRE_NATIVE };
    let th = e.t();
    access::safe_point(th);
    if crate::cancel::replayed_here(th) {
        return PRE_CANCEL;
    }
    if timed != 0 {
        if replaying() {
            let r = access::result(th, None) as u32 as c_int;
            if r == 0 {
                // SAFETY: forwarded unchanged.
                blocking(th, WAIT_NONE, 0, || unsafe { real::pthread_join(t, ret) });
            }
            // SAFETY: the caller's out-slot.
            unsafe { *out = r };
            return PRE_DONE;
        }
    } else if let Some(op) = join_op(t) {
        crate::model::blocking_begin(th, &op);
    }
    block_begin(
        th,
        if timed == 0 { WAIT_JOIN } else { WAIT_NONE },
        t as usize,
    );
    PRE_CALL
}

/// The real join of [`reprise_join_pre`] returned `r`.
#[no_mangle]
pub extern "C" fn reprise_join_post(t: pthread_t, timed: c_int, r: c_int) -> c_int {
    let Some(g) = resume() else { return r };
    let th = g.t();
    block_end(th);
    if timed != 0 {
        access::result(th, Some(r as u32 as u64));
    } else if let Some(op) = join_op(t) {
        crate::model::blocking_end(th, op);
        access::count_event(th, 0, th.model_key, kind::JOIN);
    }
    r
}

/// `pthread_tryjoin_np`: its outcome depends on timing: a result; replay reproduces a success
/// with a blocking join.
#[export_name = "reprise_pthread_tryjoin_np"]
pub unsafe extern "C" fn pthread_tryjoin_np(t: pthread_t, ret: *mut *mut c_void) -> c_int {
    let Some(e) = enter() else {
        return unsafe { real::pthread_tryjoin_np(t, ret) };
    };
    let th = e.t();
    access::safe_point(th);
    if replaying() {
        let r = access::result(th, None) as u32 as c_int;
        if r == 0 {
            // SAFETY: forwarded unchanged.
            blocking(th, WAIT_NONE, 0, || unsafe { real::pthread_join(t, ret) });
        }
        r
    } else {
        // SAFETY: forwarded unchanged.
        let r = blocking(th, WAIT_NONE, 0, || unsafe {
            real::pthread_tryjoin_np(t, ret)
        });
        access::result(th, Some(r as u32 as u64));
        r
    }
}
#[export_name = "reprise_pthread_kill"]
pub unsafe extern "C" fn pthread_kill(t: pthread_t, sig: c_int) -> c_int {
    if let Some(e) = enter() {
        access::safe_point(e.t());
    }
    unsafe { real::pthread_kill(t, sig) }
}

// ---- C++ function-local statics ---------------------------------------------------------------

/// `__cxa_guard_acquire`: which thread initialises a function-local static is decided by
/// arrival order: the outcome is a result and the guard's stripe orders acquire and release.
/// Record performs the (possibly blocking) real acquire first, with nothing held.
#[export_name = "reprise___cxa_guard_acquire"]
pub unsafe extern "C" fn __cxa_guard_acquire(g: *mut u64) -> c_int {
    let Some(e) = enter() else {
        return unsafe { real::__cxa_guard_acquire(g) };
    };
    let t = e.t();
    access::safe_point(t);
    if replaying() {
        take_obj(t, g.cast(), kind::ONCE);
        let want = access::result(t, None) as u32 as c_int;
        let r = blocking(t, WAIT_ONCE, g as usize, || unsafe {
            real::__cxa_guard_acquire(g)
        });
        if r != want {
            access::diverge(
                t,
                t.events.load(Ordering::Relaxed),
                format_args!(
                    "thread {}: a function-local static's guard gave {r}, the recording {want}",
                    t.tid
                ),
            );
        }
        r
    } else {
        let r = blocking(t, WAIT_ONCE, g as usize, || unsafe {
            real::__cxa_guard_acquire(g)
        });
        take_obj(t, g.cast(), kind::ONCE);
        access::result(t, Some(r as u32 as u64));
        r
    }
}
#[export_name = "reprise___cxa_guard_release"]
pub unsafe extern "C" fn __cxa_guard_release(g: *mut u64) {
    let Some(e) = enter() else {
        return unsafe { real::__cxa_guard_release(g) };
    };
    let t = e.t();
    access::safe_point(t);
    take_obj(t, g.cast(), kind::ONCE);
    drop(e);
    unsafe { real::__cxa_guard_release(g) }
}
#[export_name = "reprise___cxa_guard_abort"]
pub unsafe extern "C" fn __cxa_guard_abort(g: *mut u64) {
    let Some(e) = enter() else {
        return unsafe { real::__cxa_guard_abort(g) };
    };
    let t = e.t();
    access::safe_point(t);
    take_obj(t, g.cast(), kind::ONCE);
    drop(e);
    unsafe { real::__cxa_guard_abort(g) }
}

#[export_name = "reprise_munmap"]
pub unsafe extern "C" fn munmap(a: *mut c_void, n: usize) -> c_int {
    if let Some(e) = enter() {
        // The pending access may lie in the range: fold it while it is still mapped.
        access::fold_pending(e.t());
    }
    unsafe { real::munmap(a, n) }
}

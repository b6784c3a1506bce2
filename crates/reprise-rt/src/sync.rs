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
                access::count_event(t, 0, 0, k);
                return;
            }
            _ => reprise_core::Op::Rmw(obj as u64 >> 3),
        };
        crate::model::event(t, || op);
        access::count_event(t, 0, 0, k);
        return;
    }
    let s = leap::stripe_of_addr(obj as usize);
    let pos = leap::take(t, s);
    access::count_event(t, s as u64, pos, k);
}

/// Run a real call that may block, marked as blocked for the replay watchdog.
fn blocking<R>(t: &Thread, f: impl FnOnce() -> R) -> R {
    crate::ownership::set_free(t);
    let st = state::status(t.tid);
    st.events
        .store(t.events.load(Ordering::Relaxed), Ordering::Relaxed);
    st.state.store(ST_BLOCKED, Ordering::SeqCst);
    let r = f();
    st.state.store(ST_RUNNING, Ordering::SeqCst);
    r
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
        blocking(t, lock)
    } else {
        let r = blocking(t, lock);
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
    access::count_event(t, 0, 0, k);
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
            let r2 = blocking(t, lock);
            if r2 != 0 {
                access::diverge(t, t.events.load(Ordering::Relaxed), format_args!("thread {} could not re-acquire a lock it acquired in the recording (error {r2})", t.tid));
            }
        }
        r
    } else {
        let r = blocking(t, attempt);
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
            access::count_event(t, 0, 0, kind::LOCK);
        }
    }
    f()
}

// ---- mutexes ---------------------------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_lock(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY (all interposers): arguments are forwarded unchanged to the real function, whose
    // contract the caller upholds.
    unsafe { acquire(m.cast(), kind::LOCK, || real::pthread_mutex_lock(m)) }
}
#[no_mangle]
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
#[no_mangle]
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
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_unlock(m: *mut pthread_mutex_t) -> c_int {
    unsafe { release_obj(m.cast(), || real::pthread_mutex_unlock(m)) }
}

// ---- rwlocks and spinlocks ------------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_rdlock(l: *mut pthread_rwlock_t) -> c_int {
    unsafe { acquire(l.cast(), kind::LOCK, || real::pthread_rwlock_rdlock(l)) }
}
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_wrlock(l: *mut pthread_rwlock_t) -> c_int {
    unsafe { acquire(l.cast(), kind::LOCK, || real::pthread_rwlock_wrlock(l)) }
}
#[no_mangle]
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
#[no_mangle]
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
#[no_mangle]
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
#[no_mangle]
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
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_unlock(l: *mut pthread_rwlock_t) -> c_int {
    unsafe { release_obj(l.cast(), || real::pthread_rwlock_unlock(l)) }
}
#[no_mangle]
pub unsafe extern "C" fn pthread_spin_lock(l: *mut c_int) -> c_int {
    unsafe { acquire(l.cast(), kind::LOCK, || real::pthread_spin_lock(l)) }
}
#[no_mangle]
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
#[no_mangle]
pub unsafe extern "C" fn pthread_spin_unlock(l: *mut c_int) -> c_int {
    unsafe { release_obj(l.cast(), || real::pthread_spin_unlock(l)) }
}

// ---- condition variables ----------------------------------------------------------------------

/// Wait on `c`: record performs the real wait and records the mutex re-acquisition (and, for a
/// timed wait, whether it timed out); replay never waits for real: it releases the mutex and
/// re-acquires it at its recorded turn, which already encodes the wake-up (signal, broadcast,
/// timeout or spurious, all alike).
unsafe fn cond_wait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    ts: *const timespec,
    clock: Option<libc::clockid_t>,
) -> c_int {
    let wait = || unsafe {
        match (ts.is_null(), clock) {
            (true, _) => real::pthread_cond_wait(c, m),
            (false, None) => real::pthread_cond_timedwait(c, m, ts),
            (false, Some(clk)) => real::pthread_cond_clockwait(c, m, clk, ts),
        }
    };
    let Some(e) = enter() else { return wait() };
    let t = e.t();
    access::safe_point(t);
    if crate::model::active() {
        // The wait releases the mutex and re-acquires it: a release event, then a blocking
        // acquisition (replay never waits on the real condition variable).
        crate::model::event(t, || reprise_core::Op::Release(m as u64));
        access::count_event(t, 0, 0, kind::COND);
        if replaying() {
            unsafe { real::pthread_mutex_unlock(m) };
            model_acquire(t, m.cast(), kind::COND, || unsafe {
                real::pthread_mutex_lock(m)
            });
            return if ts.is_null() {
                0
            } else {
                access::result(t, None) as c_int
            };
        }
        crate::leap::release_held(t);
        let r = blocking(t, wait);
        take_obj(t, m.cast(), kind::COND);
        if !ts.is_null() {
            access::result(t, Some(r as u32 as u64));
        }
        return r;
    }
    if replaying() {
        unsafe { real::pthread_mutex_unlock(m) };
        take_obj(t, m.cast(), kind::COND);
        blocking(t, || unsafe { real::pthread_mutex_lock(m) });
        if ts.is_null() {
            0
        } else {
            access::result(t, None) as c_int
        }
    } else {
        let r = blocking(t, wait);
        take_obj(t, m.cast(), kind::COND);
        if !ts.is_null() {
            access::result(t, Some(r as u32 as u64));
        }
        r
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_cond_wait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
) -> c_int {
    unsafe { cond_wait(c, m, core::ptr::null(), None) }
}
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_timedwait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    ts: *const timespec,
) -> c_int {
    unsafe { cond_wait(c, m, ts, None) }
}
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_clockwait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    clk: libc::clockid_t,
    ts: *const timespec,
) -> c_int {
    unsafe { cond_wait(c, m, ts, Some(clk)) }
}
#[no_mangle]
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
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_signal(c: *mut pthread_cond_t) -> c_int {
    unsafe { release(|| real::pthread_cond_signal(c)) }
}
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_broadcast(c: *mut pthread_cond_t) -> c_int {
    unsafe { release(|| real::pthread_cond_broadcast(c)) }
}

// ---- barriers, once, semaphores -----------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn pthread_barrier_wait(b: *mut pthread_barrier_t) -> c_int {
    let Some(e) = enter() else {
        return unsafe { real::pthread_barrier_wait(b) };
    };
    let t = e.t();
    access::safe_point(t);
    let r = blocking(t, || unsafe { real::pthread_barrier_wait(b) });
    // Which thread is the serial one depends on arrival order: a result.
    access::result(t, Some(r as u32 as u64)) as u32 as c_int
}

#[no_mangle]
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
            blocking(t, || unsafe { real::sem_wait(s) });
            0
        } else {
            unsafe { set_errno(r) };
            -1
        }
    } else {
        let r = blocking(t, attempt);
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

#[no_mangle]
pub unsafe extern "C" fn sem_wait(s: *mut sem_t) -> c_int {
    unsafe { sem_acquire(s, || real::sem_wait(s)) }
}
#[no_mangle]
pub unsafe extern "C" fn sem_trywait(s: *mut sem_t) -> c_int {
    unsafe { sem_acquire(s, || real::sem_trywait(s)) }
}
#[no_mangle]
pub unsafe extern "C" fn sem_timedwait(s: *mut sem_t, ts: *const timespec) -> c_int {
    unsafe { sem_acquire(s, || real::sem_timedwait(s, ts)) }
}
#[no_mangle]
pub unsafe extern "C" fn sem_clockwait(
    s: *mut sem_t,
    clk: libc::clockid_t,
    ts: *const timespec,
) -> c_int {
    unsafe { sem_acquire(s, || real::sem_clockwait(s, clk, ts)) }
}
#[no_mangle]
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

extern "C-unwind" fn trampoline(arg: *mut c_void) -> *mut c_void {
    let t = arg as *mut Thread;
    state::set_cur(t);
    // SAFETY: the parent initialised this slot for us before creating the thread.
    let th = unsafe { &mut *t };
    access::log_start(th);
    crate::sud::enable(th);
    // SAFETY: start_fn is the program's start routine, passed to pthread_create.
    let f: extern "C-unwind" fn(*mut c_void) -> *mut c_void =
        unsafe { core::mem::transmute(th.start_fn) };
    let r = f(th.start_arg as *mut c_void);
    crate::lifecycle::thread_end();
    r
}

#[no_mangle]
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
    let r = blocking(t, || unsafe {
        // SAFETY: trampoline has the C ABI expected; the C-unwind ABI is call-compatible.
        let tr: extern "C" fn(*mut c_void) -> *mut c_void =
            core::mem::transmute(trampoline as extern "C-unwind" fn(*mut c_void) -> *mut c_void);
        real::pthread_create(th, &a, tr, child.cast())
    });
    if r == 0 {
        // SAFETY: th was filled by the successful real call; the slot is ours to annotate.
        unsafe { (*child).pthread = *th as u64 };
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn pthread_join(t: pthread_t, ret: *mut *mut c_void) -> c_int {
    let Some(e) = enter() else {
        return unsafe { real::pthread_join(t, ret) };
    };
    let th = e.t();
    access::safe_point(th);
    if crate::model::active() {
        let n = state::NEXT_TID.load(Ordering::Relaxed);
        // SAFETY: slots below NEXT_TID are initialised.
        let child = (1..n).find(|&i| unsafe { (*state::slot(i)).pthread } == t as u64);
        if let Some(c) = child {
            let st = state::status(th.tid);
            let r = crate::model::blocking_event(th, reprise_core::Op::Join(c), || {
                st.state.store(ST_BLOCKED, Ordering::SeqCst);
                let r = blocking_join(t, ret);
                st.state.store(ST_RUNNING, Ordering::SeqCst);
                r
            });
            access::count_event(th, 0, 0, kind::JOIN);
            return r;
        }
    }
    blocking(th, || unsafe { real::pthread_join(t, ret) })
}

fn blocking_join(t: pthread_t, ret: *mut *mut c_void) -> c_int {
    // SAFETY: forwarded unchanged.
    unsafe { real::pthread_join(t, ret) }
}

/// A join whose success depends on timing: the outcome is a result; success is reproduced
/// with a blocking join.
unsafe fn try_join(t: pthread_t, ret: *mut *mut c_void, attempt: impl FnOnce() -> c_int) -> c_int {
    let Some(e) = enter() else { return attempt() };
    let th = e.t();
    access::safe_point(th);
    if replaying() {
        let r = access::result(th, None) as u32 as c_int;
        if r == 0 {
            blocking(th, || unsafe { real::pthread_join(t, ret) });
        }
        r
    } else {
        let r = blocking(th, attempt);
        access::result(th, Some(r as u32 as u64));
        r
    }
}
#[no_mangle]
pub unsafe extern "C" fn pthread_tryjoin_np(t: pthread_t, ret: *mut *mut c_void) -> c_int {
    unsafe { try_join(t, ret, || real::pthread_tryjoin_np(t, ret)) }
}
#[no_mangle]
pub unsafe extern "C" fn pthread_timedjoin_np(
    t: pthread_t,
    ret: *mut *mut c_void,
    ts: *const timespec,
) -> c_int {
    unsafe { try_join(t, ret, || real::pthread_timedjoin_np(t, ret, ts)) }
}
#[no_mangle]
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
#[no_mangle]
pub unsafe extern "C" fn __cxa_guard_acquire(g: *mut u64) -> c_int {
    let Some(e) = enter() else {
        return unsafe { real::__cxa_guard_acquire(g) };
    };
    let t = e.t();
    access::safe_point(t);
    if replaying() {
        take_obj(t, g.cast(), kind::ONCE);
        let want = access::result(t, None) as u32 as c_int;
        let r = blocking(t, || unsafe { real::__cxa_guard_acquire(g) });
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
        let r = blocking(t, || unsafe { real::__cxa_guard_acquire(g) });
        take_obj(t, g.cast(), kind::ONCE);
        access::result(t, Some(r as u32 as u64));
        r
    }
}
#[no_mangle]
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
#[no_mangle]
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

#[no_mangle]
pub unsafe extern "C" fn pthread_exit(r: *mut c_void) -> ! {
    crate::lifecycle::thread_end();
    unsafe { real::pthread_exit(r) };
    crate::sys::exit_group(125)
}

#[no_mangle]
pub unsafe extern "C" fn munmap(a: *mut c_void, n: usize) -> c_int {
    if let Some(e) = enter() {
        // The pending access may lie in the range: fold it while it is still mapped.
        access::fold_pending(e.t());
    }
    unsafe { real::munmap(a, n) }
}

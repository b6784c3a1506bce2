//! Interposed barriers, `pthread_once`, C++ function-local statics' guards and semaphores:
//! ordered events on their object's stripe; which thread is a barrier's serial one, which
//! initialises a local static and how semaphore waits end are recorded results. The pattern
//! is `sync`'s: see there. Blocking semaphore waits are split in `_pre`/`_post` halves around
//! the real call, which the C shim makes (a cancellation point).
#![allow(unsafe_code)]
#![allow(missing_docs)]

use crate::access::{self, kind};
use crate::entry::enter;
use crate::real;
use crate::sync::*;
use core::ffi::c_int;
use core::sync::atomic::Ordering;
use libc::{pthread_barrier_t, sem_t};
use reprise_proto::*;

/// # Safety
/// Called as libc's `pthread_barrier_wait` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
#[export_name = "reprise_pthread_barrier_wait"]
pub unsafe extern "C" fn pthread_barrier_wait(b: *mut pthread_barrier_t) -> c_int {
    let Some(mut e) = enter() else {
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

/// # Safety
/// Called as libc's `pthread_once` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
#[export_name = "reprise_pthread_once"]
pub unsafe extern "C" fn pthread_once(o: *mut c_int, f: extern "C" fn()) -> c_int {
    let Some(mut e) = enter() else {
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
    let Some(mut e) = enter() else {
        return attempt();
    };
    let t = e.t();
    access::safe_point(t);
    if replaying() {
        let r = access::result(t, None) as u32 as i32;
        if r == 0 {
            sem_turn_then_wait(t, s);
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

/// Replay of a semaphore wait the recording saw succeed: the semaphore's turn, the same event
/// the recording took once its wait had returned (`take_obj`: a model strategy's `Rmw` of the
/// semaphore, as `sem_post` takes; a model `Acquire` here, which the recording never logged,
/// left AggrePlay's replays stuck and TPLAY's diverged), then the real wait, which the posts
/// ordered before this turn satisfy. A model strategy releases its stripe first: the wait may
/// block, and the posts it needs hold no event after their turns.
fn sem_turn_then_wait(t: &mut crate::state::Thread, s: *mut sem_t) {
    take_obj(t, s.cast(), kind::SEM);
    if crate::model::active() {
        crate::leap::release_held(t);
    }
    // SAFETY: the caller's semaphore, which the program waits on.
    blocking(t, WAIT_NONE, 0, || unsafe { real::sem_wait(s) });
}

/// # Safety
/// Called as libc's `sem_trywait` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
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
    let Some(mut e) = enter() else {
        return PRE_NATIVE;
    };
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
        if r == 0 {
            sem_turn_then_wait(t, s);
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
    let Some(mut g) = resume() else { return r };
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
/// # Safety
/// Called as libc's `sem_post` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
#[export_name = "reprise_sem_post"]
pub unsafe extern "C" fn sem_post(s: *mut sem_t) -> c_int {
    let Some(mut e) = enter() else {
        return unsafe { real::sem_post(s) };
    };
    let t = e.t();
    access::safe_point(t);
    take_obj(t, s.cast(), kind::SEM);
    drop(e);
    unsafe { real::sem_post(s) }
}

// ---- C++ function-local statics ---------------------------------------------------------------

/// `__cxa_guard_acquire`: which thread initialises a function-local static is decided by
/// arrival order: the outcome is a result and the guard's stripe orders acquire and release.
/// Record performs the (possibly blocking) real acquire first, with nothing held.
///
/// # Safety
/// Called as libc's `__cxa_guard_acquire` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
#[export_name = "reprise___cxa_guard_acquire"]
pub unsafe extern "C" fn __cxa_guard_acquire(g: *mut u64) -> c_int {
    let Some(mut e) = enter() else {
        return unsafe { real::__cxa_guard_acquire(g) };
    };
    let t = e.t();
    access::safe_point(t);
    if crate::preload::sync() {
        return unsafe { sync_guard_acquire(t, g) };
    }
    if replaying() {
        take_obj(t, g.cast(), kind::ONCE);
        let want = access::result(t, None) as u32 as c_int;
        let r = blocking(t, WAIT_ONCE, g as usize, || unsafe {
            real::__cxa_guard_acquire(g)
        });
        if r != want {
            access::diverge(
                t,
                t.sh().events.load(Ordering::Relaxed),
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
/// The result a sync-mode recording logs for the `__cxa_guard_acquire` that initialises its
/// static (no other call of it logs anything).
const GUARD_INIT: u64 = 0x6775_6172_6400_0001;

/// `__cxa_guard_acquire` in sync mode, where the guard's inline check (an atomic load in the
/// program's code, before it calls) is invisible: whether a thread calls at all, and whether it
/// then blocks behind the initialiser, depends on timing. Only the call that initialises the
/// static is an event (a turn on the guard's stripe and a [`GUARD_INIT`] result); any other
/// returns 0 without one, in record and replay alike. In replay a call is the initialiser if
/// the thread's next result says so (`access::next_result_is`); any other waits for the guard to be set (the recorded
/// initialiser's release) before the real call, which then returns 0. Before, every call was an
/// event: a thread whose inline check saw the static initialised in replay but not in the
/// recording missed its recorded turn (`local_static` built plain: most replays "stuck").
///
/// # Safety
/// `g` is a guard `__cxa_guard_acquire` may be called with.
unsafe fn sync_guard_acquire(t: &mut crate::state::Thread, g: *mut u64) -> c_int {
    if !replaying() {
        let r = blocking(t, WAIT_ONCE, g as usize, || unsafe {
            real::__cxa_guard_acquire(g)
        });
        if r != 0 {
            take_obj(t, g.cast(), kind::ONCE);
            access::result(t, Some(GUARD_INIT));
        }
        return r;
    }
    // The initialiser's result is logged at the event of its turn, the thread's next.
    if access::next_result_is(t, t.sh().events.load(Ordering::Relaxed) + 1, GUARD_INIT) {
        take_obj(t, g.cast(), kind::ONCE);
        access::result(t, None);
        let r = blocking(t, WAIT_ONCE, g as usize, || unsafe {
            real::__cxa_guard_acquire(g)
        });
        if r == 0 {
            let e = t.sh().events.load(Ordering::Relaxed);
            access::diverge(t, e, format_args!("thread {}: a function-local static the recording initialised in this thread was initialised already", t.tid));
        }
        return r;
    }
    // SAFETY: the guard's first byte, which its initialiser's release sets (Itanium C++ ABI);
    // read atomically, as the program's own inline check reads it.
    let done = unsafe { core::sync::atomic::AtomicU8::from_ptr(g.cast::<u8>()) };
    let r = blocking(t, WAIT_ONCE, g as usize, || {
        while done.load(Ordering::Acquire) == 0 {
            crate::sys::sleep_ns(20_000);
        }
        unsafe { real::__cxa_guard_acquire(g) }
    });
    if r != 0 {
        let e = t.sh().events.load(Ordering::Relaxed);
        access::diverge(t, e, format_args!("thread {}: initialises a function-local static the recording initialised in another thread", t.tid));
    }
    r
}

/// # Safety
/// Called as libc's `__cxa_guard_release` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
#[export_name = "reprise___cxa_guard_release"]
pub unsafe extern "C" fn __cxa_guard_release(g: *mut u64) {
    let Some(mut e) = enter() else {
        return unsafe { real::__cxa_guard_release(g) };
    };
    let t = e.t();
    access::safe_point(t);
    take_obj(t, g.cast(), kind::ONCE);
    // The real release writes the guard, which other threads read inline (an instrumented
    // atomic load) before they call `__cxa_guard_acquire`. It runs inside the runtime: the
    // guard's granule, taken above as event `t.events`, must not be handed to such a reader
    // before the write is done (no safe point, caught system call or handover signal answers
    // in between). Made outside, a reader was seen ordered after the event but not after the
    // write: it read the guard clear while recorded, and its replay could read it set and skip
    // the recorded acquire (about 1 recording of `local_static` in 1,400).
    unsafe { real::__cxa_guard_release(g) };
    drop(e);
}
/// # Safety
/// Called as libc's `__cxa_guard_abort` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
#[export_name = "reprise___cxa_guard_abort"]
pub unsafe extern "C" fn __cxa_guard_abort(g: *mut u64) {
    let Some(mut e) = enter() else {
        return unsafe { real::__cxa_guard_abort(g) };
    };
    let t = e.t();
    access::safe_point(t);
    take_obj(t, g.cast(), kind::ONCE);
    // Inside the runtime, as `__cxa_guard_release` (the abort writes the guard too).
    unsafe { real::__cxa_guard_abort(g) };
    drop(e);
}

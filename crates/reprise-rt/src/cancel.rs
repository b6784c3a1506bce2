//! Thread cancellation, recorded where it acts and replayed there.
//!
//! While recording, `pthread_cancel` is real: the target acts on the request at a cancellation
//! point, inside a real libc call, by glibc's forced unwind. The runtime's cancellation points
//! (condition and semaphore waits, joins, sleeps, `pthread_testcancel`, descriptor reads and
//! writes, `accept`, `connect`, `poll`, `select`, `epoll_wait`) make that real call from a C
//! frame (`csrc/shim_*.c`) whose cleanup runs during the unwind: [`reprise_cancelled`] logs a
//! cancellation mark as the thread's next result, at the event where the call began (and, for
//! a condition wait, the re-acquisition of its mutex that glibc made for the cleanup handlers).
//!
//! In replay `pthread_cancel` is not performed (its recorded result is returned), so a thread
//! cannot act on a request at a moment the recording did not; instead each cancellation point
//! asks [`reprise_cancel_point`] first, and the thread whose next recorded result is the mark
//! ends there by the same forced unwind (`pthread_exit(PTHREAD_CANCELED)`: the same cleanup
//! handlers, destructors, exit value). A cancellation at a point the runtime does not
//! interpose is reported while recording (its replay cannot be exact).
//!
//! Neither function enters the runtime through [`crate::entry::enter`]: they run in both
//! modes at different places (record: during the unwind; replay: before the call), and
//! runtime entries are the positions of asynchronous signal deliveries.
#![allow(unsafe_code)]

use crate::access::{self, kind};
use crate::state::{self, Thread, IN_RT};
use core::ffi::c_int;
use core::sync::atomic::Ordering;
use reprise_proto::*;

/// Mark the thread as running runtime code (its memory wrappers then pass through). The fence
/// keeps the compiler from dropping the store: it cannot see that the linker routes its
/// memcpy/memset intrinsics to wrappers that read the flag.
pub(crate) fn rt_on() {
    IN_RT.with(|c| c.set(true));
    core::sync::atomic::compiler_fence(Ordering::SeqCst);
}

/// The thread runs program code again.
pub(crate) fn rt_off() {
    core::sync::atomic::compiler_fence(Ordering::SeqCst);
    IN_RT.with(|c| c.set(false));
}

/// The value of the result that marks a cancellation ("CANCELED").
pub const MARK: u64 = 0x4445_4c45_434e_4143;

/// The current thread's slot while it is recorded or replayed and outside the runtime.
fn this_thread() -> Option<&'static mut Thread> {
    let m = state::mode();
    if !(m == state::M_RECORD || m == state::M_REPLAY) || IN_RT.with(|c| c.get()) {
        return None;
    }
    let t = state::cur();
    if t.is_null() {
        return None;
    }
    // SAFETY: the current thread's own slot.
    let t = unsafe { &mut *t };
    (!t.passthrough).then_some(t)
}

/// Replay: whether the recorded thread was cancelled at the cancellation point it is about to
/// enter (its next recorded result is the mark, at this event). If so the mark is consumed
/// and the caller ends the thread (`cancel_now` in the C shim). Always 0 while recording.
#[no_mangle]
pub extern "C" fn reprise_cancel_point() -> c_int {
    crate::ownership::held::end_run();
    if !state::REPLAY.load(Ordering::Relaxed) {
        return 0;
    }
    let Some(t) = this_thread() else { return 0 };
    if !marked_here(t) {
        return 0;
    }
    rt_on();
    let _e = crate::sys::ErrnoGuard::new();
    access::result(t, None);
    rt_off();
    1
}

/// Replay, inside the runtime: if the thread's next recorded result is the cancellation mark
/// at this event, consume it and return true (the caller ends the thread).
pub fn replayed_here(t: &mut Thread) -> bool {
    if !state::REPLAY.load(Ordering::Relaxed) || !marked_here(t) {
        return false;
    }
    access::result(t, None);
    true
}

/// Replay: whether the thread's next recorded result is the cancellation mark at this event.
fn marked_here(t: &Thread) -> bool {
    access::next_result_is(t, t.sh().events.load(Ordering::Relaxed), MARK)
}

/// Record: the real call of a cancellation point is being unwound by a cancellation. Logs the
/// mark; `relock` is the mutex of a condition wait, which glibc re-acquired for the cleanup
/// handlers: that acquisition takes its turn here, as a normal wake-up's does.
#[no_mangle]
pub extern "C" fn reprise_cancelled(relock: *mut libc::pthread_mutex_t) {
    let Some(t) = this_thread() else { return };
    rt_on();
    let _e = crate::sys::ErrnoGuard::new();
    state::status(t.tid)
        .state
        .store(ST_RUNNING, Ordering::SeqCst);
    access::result(t, Some(MARK));
    if !relock.is_null() {
        crate::sync::take_obj(t, relock.cast(), kind::COND);
    }
    rt_off();
}

/// The thread is about to be unwound by a cancellation (recorded or replayed): the main
/// thread has no trampoline whose cleanup would end it (see
/// [`crate::lifecycle::main_unwinding`]).
#[no_mangle]
pub extern "C" fn reprise_cancel_exit() {
    let Some(mut e) = crate::entry::enter() else {
        return;
    };
    let main = e.t().tid == 0;
    drop(e);
    if main {
        crate::lifecycle::main_unwinding();
    }
}

/// Record: a thread ended by an unwind that was neither `pthread_exit` nor a cancellation at
/// one of the runtime's cancellation points (a cancellation inside a libc call the runtime
/// does not interpose): say so, since its replay cannot end the thread at the same place.
#[no_mangle]
pub extern "C" fn reprise_cancel_unseen() {
    let Some(t) = this_thread() else { return };
    if !state::REPLAY.load(Ordering::Relaxed) {
        crate::say!(
            "thread {} was cancelled inside a call the runtime does not interpose (event {}); \
             its replay will not end it there",
            t.tid,
            t.sh().events.load(Ordering::Relaxed)
        );
    }
}

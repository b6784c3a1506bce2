//! The Rust side of `csrc/shim_omp.c`: locks of another library the runtime does not see
//! inside (OpenMP's critical sections, atomic sections and `omp_lock_t`s, which libgomp takes
//! with its own futexes), ordered like mutexes ([`crate::sync`]).
#![allow(unsafe_code)]

use crate::sync::{acquire, attempt, release};
use core::ffi::{c_int, c_void};
use reprise_proto::kind;

/// A lock of another library the runtime does not see inside (OpenMP's critical sections,
/// atomic sections and `omp_lock_t`s: libgomp's own futex locks), for the C interposers of
/// `csrc/shim_omp.c`: ordered on `obj`'s stripe like a mutex; `lock(arg)` acquires it for real.
/// Unseen, such a lock deadlocked replays: the thread that won it waited for an ownership edge
/// from the other, blocked on it.
///
/// # Safety
/// `lock` is callable with `arg`.
#[no_mangle]
pub unsafe extern "C" fn reprise_lock_with(
    obj: *const c_void,
    lock: unsafe extern "C" fn(*mut c_void),
    arg: *mut c_void,
) {
    // SAFETY: the caller's contract.
    unsafe {
        acquire(obj, kind::LOCK, || {
            lock(arg);
            0
        })
    };
}

/// `lock_try(arg)` tries the lock of [`reprise_lock_with`] once (nonzero: taken), `lock(arg)`
/// takes it (replay of a try that succeeded); returns whether it was taken (recorded).
///
/// # Safety
/// `lock` and `lock_try` are callable with `arg`.
#[no_mangle]
pub unsafe extern "C" fn reprise_try_lock_with(
    obj: *const c_void,
    lock_try: unsafe extern "C" fn(*mut c_void) -> c_int,
    lock: unsafe extern "C" fn(*mut c_void),
    arg: *mut c_void,
) -> c_int {
    // SAFETY: the caller's contract.
    let r = unsafe {
        attempt(
            obj,
            kind::LOCK,
            || if lock_try(arg) != 0 { 0 } else { libc::EBUSY },
            || {
                lock(arg);
                0
            },
        )
    };
    (r == 0) as c_int
}

/// The release of a lock of [`reprise_lock_with`]: `unlock(arg)` after a safe point.
///
/// # Safety
/// `unlock` is callable with `arg`.
#[no_mangle]
pub unsafe extern "C" fn reprise_unlock_with(
    unlock: unsafe extern "C" fn(*mut c_void),
    arg: *mut c_void,
) {
    // SAFETY: the caller's contract.
    unsafe {
        release(|| {
            unlock(arg);
            0
        })
    };
}

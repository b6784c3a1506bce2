//! The event channel to the launcher: whole frames written under one runtime-private lock
//! (a futex word the program cannot see), so frames from different threads never interleave.
#![allow(unsafe_code)]

use crate::sys;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use reprise_proto::FD_CHANNEL;

static LOCK: AtomicU32 = AtomicU32::new(0);
static BROKEN: AtomicBool = AtomicBool::new(false);

/// Drepper's three-state futex mutex: 0 free, 1 held, 2 held with waiters. A waiter always
/// takes the lock as 2, so an unlock never misses a sleeper.
fn lock() {
    if LOCK
        .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
        .is_ok()
    {
        return;
    }
    while LOCK.swap(2, Ordering::Acquire) != 0 {
        sys::futex_wait(&LOCK, 2);
    }
}

fn unlock() {
    if LOCK.swap(0, Ordering::Release) == 2 {
        sys::futex_wake(&LOCK, 1);
    }
}

/// Send one complete frame.
pub fn send(frame: &[u8]) {
    if BROKEN.load(Ordering::Relaxed) {
        return;
    }
    let _e = sys::ErrnoGuard::new();
    lock();
    if !sys::write_all(FD_CHANNEL, frame) {
        BROKEN.store(true, Ordering::Relaxed);
    }
    unlock();
}

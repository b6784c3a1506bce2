//! A fair ticket lock (LEAP's stripes and the model stripes): tickets from `next`, served in
//! order by `serving`, sleepers counted so that a release wakes them only when needed; and the
//! yielding phase of the waits that spin, yield, then sleep ([`yield_until`]).

use crate::sys;
use core::sync::atomic::{AtomicU32, Ordering};

/// A fair ticket lock's acquisition, shared by LEAP's stripes and the model stripes: take a
/// ticket from `next`, spin, then (when `yields()`, asked only once the spin is over) yield a
/// few times, then sleep on `serving` counted in `sleepers`, waking every 50 ms to ask
/// `give_up()`: true abandons the ticket (returns false; only once nobody will serve it).
#[inline(always)]
pub(crate) fn ticket_wait(
    next: &AtomicU32,
    serving: &AtomicU32,
    sleepers: &AtomicU32,
    yields: impl Fn() -> bool,
    give_up: impl Fn() -> bool,
) -> bool {
    let t = next.fetch_add(1, Ordering::Relaxed);
    let mut spins = 0u32;
    loop {
        let s = serving.load(Ordering::Acquire);
        if s == t {
            return true;
        }
        spins += 1;
        if spins < 200 {
            core::hint::spin_loop();
        } else if spins < 204 && yields() {
            sys::yield_now();
        } else {
            let _e = sys::ErrnoGuard::new();
            sleepers.fetch_add(1, Ordering::SeqCst);
            sys::futex_wait_for(serving, s, 50_000_000);
            sleepers.fetch_sub(1, Ordering::SeqCst);
            if serving.load(Ordering::Acquire) != t && give_up() {
                return false;
            }
        }
    }
}

/// The release of [`ticket_wait`]'s lock: serve the next ticket, wake sleepers if any.
#[inline(always)]
pub(crate) fn ticket_release(serving: &AtomicU32, sleepers: &AtomicU32) {
    serving.fetch_add(1, Ordering::SeqCst);
    // Dekker with the waiter: it counts itself a sleeper before futex_wait re-checks
    // `serving`, so either it sees the new value or we see it asleep.
    if sleepers.load(Ordering::SeqCst) != 0 {
        let _e = sys::ErrnoGuard::new();
        sys::futex_wake(serving, i32::MAX);
    }
}

/// How long a waiter whose wait usually ends within microseconds yields the CPU (which the
/// thread it waits for may need) before it sleeps on a futex: a full-mode replay's turn
/// (`leap::wait_turn`), the models' lock `G` and their replay steps (`model`). Sleeping at once
/// made every hand-over a futex sleep and wake-up on both sides.
pub(crate) const YIELD_FOR_NS: u64 = 100_000;

/// Yield until `done()` holds or [`YIELD_FOR_NS`] passed; whether `done()` held.
#[inline(always)]
pub(crate) fn yield_until(done: impl Fn() -> bool) -> bool {
    let since = sys::now_ns();
    while sys::now_ns() - since < YIELD_FOR_NS {
        if done() {
            return true;
        }
        sys::yield_now();
    }
    false
}

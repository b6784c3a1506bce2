//! The shared status region: one slot per thread, written by the runtime, read by the
//! launcher's watchdog to say who waits for whom instead of hanging.

use crate::fds::MAX_THREADS;
#[allow(unused_imports)] // doc links
use crate::fds::NO_STRIPE;
use core::sync::atomic::{AtomicU32, AtomicU64};

/// Status of one thread for the watchdog (shared memory, written by the runtime).
#[repr(C)]
#[derive(Debug, Default)]
pub struct ThreadStatus {
    /// One of the `ST_*` constants.
    pub state: AtomicU32,
    /// Stripe the thread waits on, or [`NO_STRIPE`].
    pub stripe: AtomicU32,
    /// Thread whose turn it is on that stripe ([`WAITS_FOR_EXHAUSTED`]: the vector is exhausted;
    /// [`WAITS_FOR_MODEL`]: the model strategy's log, not a stripe, holds the thread).
    pub waits_for: AtomicU32,
    /// What a `ST_BLOCKED` thread waits for, one of the `WAIT_*` constants: only the waits
    /// that nothing but another thread of the program ends (untimed) are named; a deadlock is
    /// every live thread blocked in one of them.
    pub waits_on: AtomicU32,
    /// Events performed so far (updated when the thread waits, and at checkpoints).
    pub events: AtomicU64,
    /// The object a `ST_BLOCKED` thread waits on (mutex, condition variable, barrier, guard;
    /// for a join, the awaited thread's `pthread_t`).
    pub object: AtomicU64,
    /// The thread's kernel id (to name a mutex's holder from the mutex's owner field).
    pub ktid: AtomicU32,
    /// Padding.
    pub _pad: AtomicU32,
}

/// `waits_on`: not blocked, or in a wait that may end by itself (timed, try, a semaphore).
pub const WAIT_NONE: u32 = 0;
/// `waits_on`: acquiring a mutex or a read-write lock.
pub const WAIT_LOCK: u32 = 1;
/// `waits_on`: an untimed condition-variable wait.
pub const WAIT_COND: u32 = 2;
/// `waits_on`: an untimed join.
pub const WAIT_JOIN: u32 = 3;
/// `waits_on`: a barrier.
pub const WAIT_BARRIER: u32 = 4;
/// `waits_on`: another thread's initialisation of a local static or `pthread_once`.
pub const WAIT_ONCE: u32 = 5;
/// `waits_on`: the program's own untimed futex wait (libstdc++'s atomic wait, `std::stop_token`,
/// a futex-based lock of its own).
pub const WAIT_FUTEX: u32 = 6;

/// Thread slot unused.
pub const ST_NONE: u32 = 0;
/// Running program code.
pub const ST_RUNNING: u32 = 1;
/// Parked in the replay gate, waiting for its turn.
pub const ST_WAIT_TURN: u32 = 2;
/// Blocked in a real synchronisation call during replay (lock, barrier, join).
pub const ST_BLOCKED: u32 = 3;
/// Reached the end of its recorded events; parked until the process ends (seed 001, 2.5).
pub const ST_AT_END: u32 = 4;
/// The thread that ends the process, waiting for the others to reach their recorded ends.
pub const ST_EXIT_WAIT: u32 = 5;
/// Returned from its start routine.
pub const ST_EXITED: u32 = 6;

/// Shared status region: a header and [`MAX_THREADS`] slots.
#[repr(C)]
#[derive(Debug, Default)]
pub struct StatusHeader {
    /// Threads registered so far.
    pub nthreads: AtomicU32,
    /// Set when a thread began ending the process.
    pub finishing: AtomicU32,
    /// A signal the launcher sends to end the process (a deadlock found while recording, and
    /// its replay): the runtime ends the process with it whatever the program's handler.
    pub end_request: AtomicU32,
    /// Record (and replay of a cut-short recording): bumped by the launcher every 50 ms; a
    /// thread that sees it changed at a runtime entry sends its buffered records and the
    /// stripes' buffered vectors it can take at once, so a recording cut short (SIGKILL) holds
    /// what happened until shortly before the cut.
    pub flush_epoch: AtomicU32,
}

/// Size of the status memfd.
pub const STATUS_SIZE: usize = core::mem::size_of::<StatusHeader>().next_multiple_of(64)
    + MAX_THREADS * core::mem::size_of::<ThreadStatus>();

/// Offset of slot `i` in the status region.
pub const fn status_slot_off(i: usize) -> usize {
    core::mem::size_of::<StatusHeader>().next_multiple_of(64)
        + i * core::mem::size_of::<ThreadStatus>()
}

/// [`ThreadStatus::waits_for`] of a thread at the end of a stripe's access vector.
pub const WAITS_FOR_EXHAUSTED: u32 = u32::MAX;
/// [`ThreadStatus::waits_for`] of a thread waiting ([`ST_WAIT_TURN`]) for the model strategy's
/// log (AggrePlay, TPLAY) to allow its next event.
pub const WAITS_FOR_MODEL: u32 = u32::MAX - 1;

//! The reprise runtime: a static library linked into every program built with `reprise cc`.
//!
//! It provides the ThreadSanitizer callback ABI ([`tsan`]), interposes the pthread and
//! semaphore calls ([`sync`]) and the malloc family ([`heap`]), and implements the strategies
//! on real threads: [`ownership`] (the default: edges when a granule changes owner, a fast path
//! of one load and compare), [`leap`] (seed 001: every shared access takes a turn on its
//! address stripe, recorded as per-stripe access vectors) and [`model`] (AggrePlay and TPLAY
//! through the reprise-core models). The strategy is fixed at start-up; `tsan` dispatches. [`access`] holds what every event does (safe point, digest, checkpoints, results);
//! [`lifecycle`] starts and ends the process the same way in both modes; [`state`] maps the
//! replay schedule the launcher hands over on a fixed file descriptor.
//!
//! Design decision: one code path for record and replay. Replay runs the recorder too and
//! streams what it re-recorded to the launcher, which compares it with the trace; the only
//! differences are the waits for turns and results taken from the trace instead of the world.
//!
//! Rules inside this crate: no allocation from the program's heap, no lock the program can
//! see, errno preserved across runtime work, every mapping at a fixed address (see
//! [`layout`]). The same archive is linked into `libreprise_rt.so` for sync mode
//! ([`preload`]: unmodified programs, LD_PRELOAD, synchronisation and system calls only).
#![warn(unsafe_op_in_unsafe_fn)]
#![deny(missing_docs)]

pub mod access;
pub mod barriers;
pub mod calls;
pub mod cancel;
pub mod capture;
pub mod channel;
pub mod dl;
pub mod entry;
pub mod foreign;
pub mod handover;
pub mod heap;
pub mod kept;
pub mod layout;
pub mod leap;
pub mod lifecycle;
pub mod memfns;
pub mod model;
pub mod model_rec;
pub mod ownership;
pub mod preload;
pub mod ralloc;
pub mod real;
pub mod rtstack;
pub mod signals;
pub mod slot;
pub mod state;
pub mod strfns;
pub mod sud;
pub mod sync;
pub mod sys;
pub mod threads;
pub mod ticket;
pub mod tsan;
pub mod tsc;

/// Found by `reprise record` in a program built with `reprise cc` even when it is stripped
/// (no `__tsan_init` symbol left): such a program is recorded in full mode, not sync mode.
#[used]
#[no_mangle]
pub static REPRISE_RUNTIME_MARKER: [u8; 28] = *b"\0reprise-runtime-marker-v1\0\0";

#[global_allocator]
static ALLOC: ralloc::RuntimeAlloc = ralloc::RuntimeAlloc;

//! The protocol between the `reprise` launcher and the runtime linked into the recorded program.
//!
//! Three channels cross the process boundary, each on a fixed high file descriptor so the
//! program's own `open()` calls return the same numbers in record and replay:
//!
//! * [`FD_CONFIG`]: a memfd the launcher fills with a [`ConfigHeader`] and, in replay, the
//!   decoded schedule (access vectors, per-thread results and digests). The runtime maps it
//!   read-only at [`CONFIG_ADDR`].
//! * [`FD_CHANNEL`]: a pipe on which the runtime streams [frames](Frame) (access-vector
//!   chunks, per-thread records, the process end). Replay streams the same frames again, so
//!   the launcher compares the re-recorded run with the trace (record/replay symmetry).
//! * [`FD_STATUS`]: a shared memfd of [`ThreadStatus`] slots the launcher's watchdog reads to
//!   say who waits for whom instead of hanging.
//!
//! Design decision: the encoding is fixed-size little-endian records written into caller
//! buffers, with no allocation on the encode side, because the runtime encodes from inside
//! instrumentation callbacks where allocation is forbidden. Decoding (launcher side) may allocate.
//!
//! Modules, all re-exported here: `fds` (file descriptors, fixed addresses, sizes and
//! sentinels), `config` (the config memfd layout, flags, the strategy table, the process end),
//! `status` (the watchdog's status slots), `frame` (frame and record tags, decoded frames) and
//! `codec` (encoding and decoding frames).
//!
//! Not here: the trace file format (crate `reprise-trace`), strategy logic (crate `reprise-core`).
#![cfg_attr(not(feature = "std"), no_std)]
#![deny(missing_docs)]

mod check;
mod codec;
mod config;
mod fds;
mod frame;
mod status;

pub use check::check_config;
pub use codec::*;
pub use config::*;
pub use fds::*;
pub use frame::*;
pub use status::*;

/// Did this change the wire? Bump it; the runtime refuses a config of another version.
pub const PROTO_VERSION: u32 = 10;

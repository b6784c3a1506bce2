//! Frames on the event channel (runtime -> launcher) and the per-thread records inside them.

#[cfg(feature = "std")]
use crate::config::{Pair, ProcessEnd, VecEntry};
#[allow(unused_imports)] // doc links
#[cfg(feature = "std")]
use crate::{decode_frames, edge_source};

/// Frame tag: a piece of one stripe's access vector: `u32 stripe, (u32 tid, u32 count)*`.
pub const F_STRIPE: u8 = 1;
/// Frame tag: records of one thread: `u32 tid`, then [`Record`]s.
pub const F_THREAD: u8 = 2;
/// Frame tag: the process end ([`ProcessEnd`] as raw bytes) plus `(u32 tid, u64 events)*`.
pub const F_END: u8 = 3;
/// Frame tag: replay divergence: `u32 tid, u64 event`, UTF-8 message.
pub const F_DIVERGE: u8 = 4;
/// Frame tag: system calls caught by Syscall User Dispatch: `(u32 number, u32 count)*`.
pub const F_STATS: u8 = 5;
/// Frame tag: a piece of a model strategy's log (`reprise_core::binlog` bytes, concatenated in order).
pub const F_MODEL: u8 = 6;
/// Frame tag: events per kind over all threads, [`KINDS`] `u64` counts indexed by [`kind`];
/// sent once at the process end.
pub const F_KINDS: u8 = 7;
/// Frame tag: code addresses for a report, `u32 tid, u32 what` ([`STACK_FAULT`] or
/// [`STACK_DIVERGE`]), then `u64` addresses, innermost first (for a fault the first one is
/// the faulting instruction, the others return addresses). The launcher names source lines.
pub const F_STACK: u8 = 8;
/// Frame tag: a regular file whose reads are re-executed in replay (checked by hash) instead of
/// recorded, sent once per file while recording: `u64 dev, u64 ino, u64 size, i64 mtime_sec,
/// u64 mtime_nsec`, then its path (from `/proc/self/fd`, may be empty). Replay refuses to start
/// when the file at that path is missing or has another size or modification time.
pub const F_FILE: u8 = 9;
/// Frame tag: a shared library the program loaded itself (`dlopen`) after start, sent once per
/// path while recording: the path as the loader names it, made absolute. The launcher hashes
/// the file into the trace's footer; replay refuses to start when it changed.
pub const F_LIB: u8 = 10;
/// [`F_STACK`] `what`: the stack of the thread whose fault ended the process.
pub const STACK_FAULT: u32 = 0;
/// [`F_STACK`] `what`: the stack of the thread that saw a replay divergence.
pub const STACK_DIVERGE: u32 = 1;
/// Most addresses in one [`F_STACK`] frame.
pub const STACK_MAX: usize = 24;
/// Number of event kinds counted in [`F_KINDS`].
pub const KINDS: usize = 16;

/// Event kinds: folded into the runtime's digests and indices of the [`F_KINDS`] counts.
pub mod kind {
    /// Plain read.
    pub const READ: u64 = 1;
    /// Plain write.
    pub const WRITE: u64 = 2;
    /// Atomic operation.
    pub const ATOMIC: u64 = 3;
    /// Mutex / rwlock / spinlock acquisition.
    pub const LOCK: u64 = 4;
    /// Condition-variable re-acquisition of its mutex.
    pub const COND: u64 = 5;
    /// Semaphore operation.
    pub const SEM: u64 = 6;
    /// Thread creation.
    pub const CREATE: u64 = 7;
    /// pthread_once.
    pub const ONCE: u64 = 8;
    /// Ranged access (memcpy, memset, struct copies).
    pub const RANGE: u64 = 9;
    /// stdio stream or libc RNG call.
    pub const STDIO: u64 = 10;
    /// Thread join.
    pub const JOIN: u64 = 11;
}

/// Record tag in an [`F_THREAD`] frame: thread start, `u32 parent, u32 nth` (8 bytes).
pub const R_START: u8 = 1;
/// Record tag: a nondeterministic result, `u64 event, u64 value` (16 bytes).
pub const R_RESULT: u8 = 2;
/// Record tag: a digest checkpoint, `u64 event, u64 digest` (16 bytes).
pub const R_DIGEST: u8 = 3;
/// Record tag: input data, `u64 event, u32 len`, then `len` bytes (variable size).
pub const R_DATA: u8 = 4;
/// Record tag: an asynchronous signal delivered at runtime entry `u64`, number `u64` (16 bytes).
pub const R_SIGNAL: u8 = 5;
/// Record tag: an ownership edge, `u64 event` (this thread's), `u64 source` ([`edge_source`]):
/// the thread's event `event` happened after the source thread completed its events up to the
/// source count (16 bytes).
pub const R_EDGE: u8 = 6;
/// Largest payload of one [`R_DATA`] record; longer inputs are split.
pub const DATA_MAX: usize = 8192;

/// Frame header: `u32 len` (of tag + payload), `u8 tag`.
pub const FRAME_HDR: usize = 5;

/// Write a frame header for a payload of `payload_len` bytes into `buf[..5]`.
pub fn put_frame_header(buf: &mut [u8], tag: u8, payload_len: usize) {
    buf[..4].copy_from_slice(&((payload_len + 1) as u32).to_le_bytes());
    buf[4] = tag;
}

/// Payload size of a thread record with tag `t` (excluding the tag byte), or None.
pub fn record_size(t: u8) -> Option<usize> {
    match t {
        R_START => Some(8),
        R_RESULT | R_DIGEST | R_SIGNAL | R_EDGE => Some(16),
        _ => None,
    }
}

/// A decoded frame (launcher side).
#[cfg(feature = "std")]
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// Part of a stripe's access vector.
    Stripe {
        /// Stripe id.
        stripe: u32,
        /// Runs in order.
        entries: Vec<VecEntry>,
    },
    /// Records of one thread.
    Thread {
        /// Deterministic thread id.
        tid: u32,
        /// Records in order.
        records: Vec<Record>,
    },
    /// End of the process.
    End {
        /// How it ended.
        end: ProcessEnd,
        /// Every thread's final event count.
        finals: Vec<(u32, u64)>,
    },
    /// System calls caught by Syscall User Dispatch, (number, count).
    Stats(Vec<(u32, u32)>),
    /// A piece of a model strategy's log.
    Model(Vec<u8>),
    /// Events per kind, summed over threads.
    Kinds([u64; KINDS]),
    /// Code addresses for a report ([`F_STACK`]).
    Stack {
        /// Thread.
        tid: u32,
        /// [`STACK_FAULT`] or [`STACK_DIVERGE`].
        what: u32,
        /// Addresses, innermost first.
        pcs: Vec<u64>,
    },
    /// A file whose reads are re-executed in replay ([`F_FILE`]).
    File {
        /// Device.
        dev: u64,
        /// Inode.
        ino: u64,
        /// Size at the first re-executed read.
        size: u64,
        /// Modification time, seconds.
        mtime_sec: i64,
        /// Modification time, nanoseconds.
        mtime_nsec: u64,
        /// Path (bytes; may be empty when unknown).
        path: Vec<u8>,
    },
    /// A shared library the program loaded with `dlopen` ([`F_LIB`]).
    Lib {
        /// Absolute path (bytes).
        path: Vec<u8>,
    },
    /// Divergence seen by the runtime during replay.
    Diverge {
        /// Thread.
        tid: u32,
        /// Event index.
        event: u64,
        /// What differed.
        message: String,
    },
}

/// A per-thread record.
#[cfg(feature = "std")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// Thread start with its creator and birth order.
    Start {
        /// Parent's deterministic id.
        parent: u32,
        /// This thread is the parent's nth child.
        nth: u32,
    },
    /// A nondeterministic result.
    Result(Pair),
    /// A digest checkpoint.
    Digest(Pair),
    /// Input data read by the thread at an event.
    Data(u64, Vec<u8>),
    /// An asynchronous signal delivered at a runtime entry (entry index, signal).
    Signal(Pair),
    /// An ownership edge (this thread's event, packed source).
    Edge(Pair),
}

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
//! Not here: the trace file format (crate `reprise-trace`), strategy logic (crate `reprise-core`).
#![cfg_attr(not(feature = "std"), no_std)]
#![deny(missing_docs)]

mod check;
pub use check::check_config;

use core::sync::atomic::{AtomicU32, AtomicU64};

/// Did this change the wire? Bump it; the runtime refuses a config of another version.
pub const PROTO_VERSION: u32 = 7;
/// Config memfd (launcher -> runtime).
pub const FD_CONFIG: i32 = 1000;
/// Event pipe (runtime -> launcher).
pub const FD_CHANNEL: i32 = 1001;
/// Shared status memfd (runtime <-> launcher watchdog).
pub const FD_STATUS: i32 = 1002;
/// The launcher's own stderr, for the runtime's messages (never mixed into the program's).
pub const FD_LOG: i32 = 1003;

/// Base of the address region reserved for the runtime; every mapping the runtime makes lives
/// at a fixed address above it, identical in record and replay.
pub const REGION_BASE: u64 = 0x1000_0000_0000;
/// Where the config memfd is mapped.
pub const CONFIG_ADDR: u64 = REGION_BASE;
/// Maximal size of the config mapping (address space reserved, not memory).
pub const CONFIG_MAX: u64 = 0x0800_0000_0000; // 8 TiB of address space
/// Where the status memfd is mapped.
pub const STATUS_ADDR: u64 = 0x1900_0000_0000;
/// Number of thread slots (deterministic thread ids are below this).
pub const MAX_THREADS: usize = 4096;

/// Number of address stripes of the access vectors (LEAP Corollary 2: stripes are sound).
pub const STRIPES: usize = 16384;
/// A stripe id that names no stripe.
pub const NO_STRIPE: u32 = u32::MAX;

/// Magic at the start of the config memfd.
pub const CONFIG_MAGIC: u64 = 0x5245_5052_4953_4543; // "REPRISEC"

/// Mode the runtime runs in.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Record a new trace.
    Record = 1,
    /// Replay the schedule in the config and re-record it.
    Replay = 2,
}

/// Start of the config memfd. All offsets are from the start of the mapping.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ConfigHeader {
    /// [`CONFIG_MAGIC`].
    pub magic: u64,
    /// [`PROTO_VERSION`].
    pub version: u32,
    /// [`Mode`] as u32.
    pub mode: u32,
    /// Digest checkpoint every this many events per thread (>= 1).
    pub checkpoint_interval: u64,
    /// Seed of replay jitter (random delays at callbacks); 0 = none.
    pub jitter_seed: u64,
    /// Flags: [`FLAG_HASH_READS`].
    pub flags: u64,
    /// Number of stripes; must equal [`STRIPES`].
    pub stripes: u32,
    /// Number of threads in the recording (replay only).
    pub nthreads: u32,
    /// Offset of `[StripeIndex; STRIPES]` (replay only).
    pub stripe_index_off: u64,
    /// Offset of `[ThreadIndex; nthreads]` (replay only).
    pub thread_index_off: u64,
    /// The recorded end of the process (replay only).
    pub end: ProcessEnd,
    /// Offset of the model strategy's recorded log (JSON), replay of aggreplay/tplay only.
    pub model_off: u64,
    /// Its length.
    pub model_len: u64,
}

/// Config flag: regular-file reads are re-executed in replay and checked by hash, instead of
/// recorded (smaller traces; the files must be unchanged at replay).
pub const FLAG_HASH_READS: u64 = 1;
/// Config flag: the strategy is AggrePlay (seed 000), run as a model on real threads.
pub const FLAG_AGGREPLAY: u64 = 4;
/// Config flag: the strategy is TPLAY (seed 003), run as a model on real threads.
pub const FLAG_TPLAY: u64 = 8;
/// Config flag: the strategy is `ownership` (record only when a granule changes owner; the
/// log is per-thread edges, [`R_EDGE`]).
pub const FLAG_OWNERSHIP: u64 = 16;
/// Flags that select a model strategy (run through the reprise-core models, with a model log).
pub const FLAGS_MODEL: u64 = FLAG_AGGREPLAY | FLAG_TPLAY;

/// The strategies, by `--strategy` name, with the config flag that selects each in the runtime
/// (LEAP is the absence of a strategy flag). The one place that maps names to flags.
pub const STRATEGIES: &[(&str, u64)] = &[
    ("ownership", FLAG_OWNERSHIP),
    ("leap", 0),
    ("aggreplay", FLAG_AGGREPLAY),
    ("tplay", FLAG_TPLAY),
];

/// The config flag of strategy `name`, or None when there is no such strategy.
pub fn strategy_flag(name: &str) -> Option<u64> {
    STRATEGIES.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// Config flag: do not catch system calls with Syscall User Dispatch (for measuring its cost).
pub const FLAG_NO_SUD: u64 = 2;

/// Where one stripe's access vector lives in the config memfd.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct StripeIndex {
    /// Offset of `[VecEntry; len]`.
    pub off: u64,
    /// Number of run-length entries.
    pub len: u64,
}

/// One run of an access vector: `count` consecutive accesses by thread `tid` (LEAP 4.2).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VecEntry {
    /// Deterministic thread id.
    pub tid: u32,
    /// Run length (>= 1).
    pub count: u32,
}

/// Where one thread's recorded records live in the config memfd.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ThreadIndex {
    /// Offset of `[Pair; results_len]`: (event, value) of each recorded result.
    pub results_off: u64,
    /// Number of results.
    pub results_len: u64,
    /// Offset of `[Pair; digests_len]`: (event, digest) checkpoints.
    pub digests_off: u64,
    /// Number of digests.
    pub digests_len: u64,
    /// Offset of the thread's input data: records of `u64 event, u32 len, bytes`.
    pub data_off: u64,
    /// Bytes of input data.
    pub data_len: u64,
    /// Offset of `[Pair; signals_len]`: (runtime entry, signal number) deliveries.
    pub signals_off: u64,
    /// Number of signal deliveries.
    pub signals_len: u64,
    /// Events the thread had performed when the recording ended.
    pub final_events: u64,
    /// Offset of `[Pair; edges_len]`: the thread's incoming ownership edges, sorted by event
    /// (`event` = the thread's event, `value` = [`edge_source`] packed source).
    pub edges_off: u64,
    /// Number of edges.
    pub edges_len: u64,
}

/// Bits of an edge's source event count ([`R_EDGE`] packs `source tid << 48 | source events`).
pub const EDGE_EVENT_BITS: u32 = 48;

/// Pack an ownership edge's source: thread `tid` had completed `events` events.
pub const fn edge_source(tid: u32, events: u64) -> u64 {
    ((tid as u64) << EDGE_EVENT_BITS) | (events & ((1 << EDGE_EVENT_BITS) - 1))
}

/// Unpack an edge source into (thread, completed events).
pub const fn edge_source_parts(v: u64) -> (u32, u64) {
    (
        (v >> EDGE_EVENT_BITS) as u32,
        v & ((1 << EDGE_EVENT_BITS) - 1),
    )
}

/// An (event index, value) pair.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pair {
    /// Event index in the thread.
    pub event: u64,
    /// Value (a result, or a digest).
    pub value: u64,
}

/// How the process ended, as the runtime saw it.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcessEnd {
    /// 0 unknown, 1 exit, 2 fault (synchronous signal), 3 a terminating signal from outside.
    pub kind: u32,
    /// Thread that ended the process ([`END_TID_NONE`]: none, the process was killed from
    /// outside while its threads were where the final event counts say).
    pub tid: u32,
    /// That thread's event count.
    pub event: u64,
    /// Exit code, or signal number.
    pub code: i32,
    /// `si_code` of a fault.
    pub si_code: i32,
    /// Faulting address.
    pub addr: u64,
}

/// [`ProcessEnd::kind`]: unknown (the runtime never saw the end).
pub const END_UNKNOWN: u32 = 0;
/// [`ProcessEnd::kind`]: `exit()` or return from main.
pub const END_EXIT: u32 = 1;
/// [`ProcessEnd::kind`]: a fault or abort.
pub const END_FAULT: u32 = 2;
/// [`ProcessEnd::kind`]: a terminating signal (SIGINT, SIGTERM, SIGHUP) the program does not
/// handle, sent from outside; `code` is the signal. With [`END_TID_NONE`] the process was ended
/// wherever its threads were (replay sends the signal once every thread reached its recorded
/// final event count); otherwise at that thread's runtime entry (a recorded delivery).
pub const END_SIGNAL: u32 = 3;
/// [`ProcessEnd::tid`] of an end that belongs to no thread.
pub const END_TID_NONE: u32 = u32::MAX;
/// Replay config only: the recording was cut short (the program killed by SIGKILL, say) before
/// the runtime saw its end. Each thread's `final_events` is the last event its flushed records
/// show; the replay runs every thread as far as the trace goes (parking past that count or at
/// the end of its recorded data), then the launcher ends it (`StatusHeader::end_request`).
pub const END_CUT: u32 = 4;

/// Status of one thread for the watchdog (shared memory, written by the runtime).
#[repr(C)]
#[derive(Debug, Default)]
pub struct ThreadStatus {
    /// One of the `ST_*` constants.
    pub state: AtomicU32,
    /// Stripe the thread waits on, or [`NO_STRIPE`].
    pub stripe: AtomicU32,
    /// Thread whose turn it is on that stripe (u32::MAX: the vector is exhausted).
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
    /// Record (and replay of a cut-short recording): bumped by the launcher every 50 ms; a thread that sees it changed at a runtime
    /// entry sends its buffered records and the stripes' buffered vectors it can take at once,
    /// so a recording cut short (SIGKILL) holds what happened until shortly before the cut.
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

// ---------------------------------------------------------------------------------------------
// Frames on the event channel.

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
/// Frame tag: a piece of a model strategy's log (JSON bytes, concatenated in order).
pub const F_MODEL: u8 = 6;
/// Frame tag: events per kind over all threads, [`KINDS`] `u64` counts indexed by [`kind`];
/// sent once at the process end.
pub const F_KINDS: u8 = 7;
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

/// Errors decoding the channel.
#[cfg(feature = "std")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub String);

#[cfg(feature = "std")]
impl core::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.0)
    }
}
#[cfg(feature = "std")]
impl std::error::Error for DecodeError {}

#[cfg(feature = "std")]
fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}
#[cfg(feature = "std")]
fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}

/// Split a byte stream into frames. Returns the frames and the number of bytes consumed (a
/// trailing partial frame is left for the next call).
#[cfg(feature = "std")]
pub fn decode_frames(buf: &[u8]) -> Result<(Vec<Frame>, usize), DecodeError> {
    let mut out = Vec::new();
    let mut pos = 0;
    while buf.len() - pos >= 4 {
        let len = u32_at(buf, pos) as usize;
        if len == 0 || len > (64 << 20) {
            return Err(DecodeError(format!("bad frame length {len} at byte {pos}")));
        }
        if buf.len() - pos - 4 < len {
            break;
        }
        let tag = buf[pos + 4];
        let p = &buf[pos + 5..pos + 4 + len];
        out.push(
            decode_frame(tag, p)
                .map_err(|e| DecodeError(format!("{} (frame at byte {pos})", e.0)))?,
        );
        pos += 4 + len;
    }
    Ok((out, pos))
}

#[cfg(feature = "std")]
fn decode_frame(tag: u8, p: &[u8]) -> Result<Frame, DecodeError> {
    let short = || {
        DecodeError(format!(
            "frame of tag {tag} is too short ({} bytes)",
            p.len()
        ))
    };
    match tag {
        F_STRIPE => {
            if p.len() < 4 || (p.len() - 4) % 8 != 0 {
                return Err(short());
            }
            let stripe = u32_at(p, 0);
            if stripe as usize >= STRIPES {
                return Err(DecodeError(format!("stripe {stripe} out of range")));
            }
            let entries = p[4..]
                .chunks_exact(8)
                .map(|c| VecEntry {
                    tid: u32_at(c, 0),
                    count: u32_at(c, 4),
                })
                .collect::<Vec<_>>();
            if entries
                .iter()
                .any(|e| e.count == 0 || e.tid as usize >= MAX_THREADS)
            {
                return Err(DecodeError(format!(
                    "stripe {stripe}: invalid vector entry"
                )));
            }
            Ok(Frame::Stripe { stripe, entries })
        }
        F_THREAD => {
            if p.len() < 4 {
                return Err(short());
            }
            let tid = u32_at(p, 0);
            let mut records = Vec::new();
            let mut o = 4;
            while o < p.len() {
                let t = p[o];
                if t == R_DATA {
                    if o + 13 > p.len() {
                        return Err(short());
                    }
                    let ev = u64_at(p, o + 1);
                    let n = u32_at(p, o + 9) as usize;
                    if n > DATA_MAX || o + 13 + n > p.len() {
                        return Err(DecodeError(format!(
                            "thread {tid}: data record of {n} bytes overruns its frame"
                        )));
                    }
                    records.push(Record::Data(ev, p[o + 13..o + 13 + n].to_vec()));
                    o += 13 + n;
                    continue;
                }
                let n = record_size(t)
                    .ok_or_else(|| DecodeError(format!("thread {tid}: unknown record tag {t}")))?;
                if o + 1 + n > p.len() {
                    return Err(short());
                }
                let b = &p[o + 1..o + 1 + n];
                records.push(match t {
                    R_START => Record::Start {
                        parent: u32_at(b, 0),
                        nth: u32_at(b, 4),
                    },
                    R_RESULT => Record::Result(Pair {
                        event: u64_at(b, 0),
                        value: u64_at(b, 8),
                    }),
                    R_SIGNAL => Record::Signal(Pair {
                        event: u64_at(b, 0),
                        value: u64_at(b, 8),
                    }),
                    R_EDGE => Record::Edge(Pair {
                        event: u64_at(b, 0),
                        value: u64_at(b, 8),
                    }),
                    _ => Record::Digest(Pair {
                        event: u64_at(b, 0),
                        value: u64_at(b, 8),
                    }),
                });
                o += 1 + n;
            }
            Ok(Frame::Thread { tid, records })
        }
        F_END => {
            let n = core::mem::size_of::<ProcessEnd>();
            if p.len() < n || (p.len() - n) % 12 != 0 {
                return Err(short());
            }
            let end = ProcessEnd {
                kind: u32_at(p, 0),
                tid: u32_at(p, 4),
                event: u64_at(p, 8),
                code: u32_at(p, 16) as i32,
                si_code: u32_at(p, 20) as i32,
                addr: u64_at(p, 24),
            };
            let finals = p[n..]
                .chunks_exact(12)
                .map(|c| (u32_at(c, 0), u64_at(c, 4)))
                .collect();
            Ok(Frame::End { end, finals })
        }
        F_STATS => {
            if p.len() % 8 != 0 {
                return Err(short());
            }
            Ok(Frame::Stats(
                p.chunks_exact(8)
                    .map(|c| (u32_at(c, 0), u32_at(c, 4)))
                    .collect(),
            ))
        }
        F_MODEL => Ok(Frame::Model(p.to_vec())),
        F_KINDS => {
            if p.len() != KINDS * 8 {
                return Err(short());
            }
            let mut k = [0u64; KINDS];
            for (i, c) in p.chunks_exact(8).enumerate() {
                k[i] = u64_at(c, 0);
            }
            Ok(Frame::Kinds(k))
        }
        F_DIVERGE => {
            if p.len() < 12 {
                return Err(short());
            }
            Ok(Frame::Diverge {
                tid: u32_at(p, 0),
                event: u64_at(p, 4),
                message: String::from_utf8_lossy(&p[12..]).into_owned(),
            })
        }
        _ => Err(DecodeError(format!("unknown frame tag {tag}"))),
    }
}

/// Encode a frame (launcher side and tests; the runtime encodes in place without allocating).
#[cfg(feature = "std")]
pub fn encode_frame(f: &Frame) -> Vec<u8> {
    let mut p: Vec<u8> = Vec::new();
    let tag = match f {
        Frame::Stripe { stripe, entries } => {
            p.extend_from_slice(&stripe.to_le_bytes());
            for e in entries {
                p.extend_from_slice(&e.tid.to_le_bytes());
                p.extend_from_slice(&e.count.to_le_bytes());
            }
            F_STRIPE
        }
        Frame::Thread { tid, records } => {
            p.extend_from_slice(&tid.to_le_bytes());
            for r in records {
                match r {
                    Record::Start { parent, nth } => {
                        p.push(R_START);
                        p.extend_from_slice(&parent.to_le_bytes());
                        p.extend_from_slice(&nth.to_le_bytes());
                    }
                    Record::Data(ev, bytes) => {
                        p.push(R_DATA);
                        p.extend_from_slice(&ev.to_le_bytes());
                        p.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
                        p.extend_from_slice(bytes);
                    }
                    Record::Result(x) | Record::Digest(x) | Record::Signal(x) | Record::Edge(x) => {
                        p.push(match r {
                            Record::Result(_) => R_RESULT,
                            Record::Digest(_) => R_DIGEST,
                            Record::Edge(_) => R_EDGE,
                            _ => R_SIGNAL,
                        });
                        p.extend_from_slice(&x.event.to_le_bytes());
                        p.extend_from_slice(&x.value.to_le_bytes());
                    }
                }
            }
            F_THREAD
        }
        Frame::End { end, finals } => {
            let mut b = [0u8; 32];
            encode_end(end, &mut b);
            p.extend_from_slice(&b);
            for (t, n) in finals {
                p.extend_from_slice(&t.to_le_bytes());
                p.extend_from_slice(&n.to_le_bytes());
            }
            F_END
        }
        Frame::Model(b) => {
            p.extend_from_slice(b);
            F_MODEL
        }
        Frame::Kinds(k) => {
            for c in k {
                p.extend_from_slice(&c.to_le_bytes());
            }
            F_KINDS
        }
        Frame::Stats(v) => {
            for (n, c) in v {
                p.extend_from_slice(&n.to_le_bytes());
                p.extend_from_slice(&c.to_le_bytes());
            }
            F_STATS
        }
        Frame::Diverge {
            tid,
            event,
            message,
        } => {
            p.extend_from_slice(&tid.to_le_bytes());
            p.extend_from_slice(&event.to_le_bytes());
            p.extend_from_slice(message.as_bytes());
            F_DIVERGE
        }
    };
    let mut out = vec![0u8; FRAME_HDR];
    put_frame_header(&mut out, tag, p.len());
    out.extend_from_slice(&p);
    out
}

/// Encode a [`ProcessEnd`] into 32 bytes (runtime side, no allocation).
pub fn encode_end(e: &ProcessEnd, out: &mut [u8; 32]) {
    out[0..4].copy_from_slice(&e.kind.to_le_bytes());
    out[4..8].copy_from_slice(&e.tid.to_le_bytes());
    out[8..16].copy_from_slice(&e.event.to_le_bytes());
    out[16..20].copy_from_slice(&e.code.to_le_bytes());
    out[20..24].copy_from_slice(&e.si_code.to_le_bytes());
    out[24..32].copy_from_slice(&e.addr.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn end_frame_round_trips() {
        let e = ProcessEnd {
            kind: END_FAULT,
            tid: 3,
            event: 99,
            code: 11,
            si_code: 1,
            addr: 0x10,
        };
        let mut b = [0u8; 32];
        encode_end(&e, &mut b);
        let mut frame = vec![0u8; 5];
        put_frame_header(&mut frame, F_END, 32 + 12);
        frame.extend_from_slice(&b);
        frame.extend_from_slice(&7u32.to_le_bytes());
        frame.extend_from_slice(&42u64.to_le_bytes());
        let (f, used) = decode_frames(&frame).unwrap();
        assert_eq!(used, frame.len());
        assert_eq!(
            f,
            vec![Frame::End {
                end: e,
                finals: vec![(7, 42)]
            }]
        );
    }

    #[test]
    fn partial_frame_is_left() {
        let mut frame = vec![0u8; 5];
        put_frame_header(&mut frame, F_STRIPE, 12);
        frame.extend_from_slice(&5u32.to_le_bytes());
        frame.extend_from_slice(&1u32.to_le_bytes());
        let (f, used) = decode_frames(&frame).unwrap();
        assert!(f.is_empty());
        assert_eq!(used, 0);
        frame.extend_from_slice(&2u32.to_le_bytes());
        let (f, _) = decode_frames(&frame).unwrap();
        assert_eq!(
            f,
            vec![Frame::Stripe {
                stripe: 5,
                entries: vec![VecEntry { tid: 1, count: 2 }]
            }]
        );
    }

    #[test]
    fn every_frame_kind_round_trips() {
        let frames = vec![
            Frame::Stripe {
                stripe: 3,
                entries: vec![VecEntry { tid: 0, count: 4 }, VecEntry { tid: 1, count: 1 }],
            },
            Frame::Thread {
                tid: 2,
                records: vec![
                    Record::Start { parent: 0, nth: 1 },
                    Record::Result(Pair {
                        event: 5,
                        value: 16,
                    }),
                    Record::Data(6, b"hello".to_vec()),
                    Record::Digest(Pair {
                        event: 4096,
                        value: 9,
                    }),
                ],
            },
            Frame::End {
                end: ProcessEnd {
                    kind: END_EXIT,
                    ..Default::default()
                },
                finals: vec![(0, 10), (1, 20)],
            },
            Frame::Diverge {
                tid: 1,
                event: 7,
                message: "differs".into(),
            },
        ];
        let bytes: Vec<u8> = frames.iter().flat_map(encode_frame).collect();
        let (back, used) = decode_frames(&bytes).unwrap();
        assert_eq!(used, bytes.len());
        assert_eq!(back, frames);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(decode_frames(&[9, 0, 0, 0, 77, 1, 2, 3, 4, 5, 6, 7, 8]).is_err());
        assert!(decode_frames(&[0, 0, 0, 0, 1]).is_err());
    }
}

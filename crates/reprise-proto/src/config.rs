//! The config memfd's layout (launcher -> runtime), its flags, the strategy table, and how the
//! process ended.

#[allow(unused_imports)] // doc links
use crate::{CONFIG_MAGIC, PROTO_VERSION, R_EDGE, STRIPES};
use core::mem::{offset_of, size_of};

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
    /// Flags: [`FLAG_HASH_READS`], [`FLAG_PORTABLE`], strategies, [`FLAG_NO_SUD`], [`FLAG_SYNC`].
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
    /// Offset of the model strategy's recorded log (`reprise_core::binlog`), replay of the model strategies only.
    pub model_off: u64,
    /// Its length.
    pub model_len: u64,
}

/// Config flag: every regular-file read is re-executed in replay and checked by hash, instead
/// of recorded (smaller traces; the files must be unchanged at replay). Without it (and without
/// [`FLAG_PORTABLE`]) only reads of files of at least [`REEXEC_FILE_SIZE`] bytes are.
pub const FLAG_HASH_READS: u64 = 1;
/// Config flag: every read's data is recorded (`record --portable`): the trace replays without
/// any input file.
pub const FLAG_PORTABLE: u64 = 128;
/// The default: a read of a regular file at least this large (at the read; not /proc or /sys,
/// not a file the program opened for writing) is re-executed in replay and checked by hash.
pub const REEXEC_FILE_SIZE: u64 = 1 << 20;
/// Config flag: the strategy is AggrePlay (seed 000), run as a model on real threads.
pub const FLAG_AGGREPLAY: u64 = 4;
/// Config flag: the strategy is TPLAY (seed 003), run as a model on real threads.
pub const FLAG_TPLAY: u64 = 8;
/// Config flag: the strategy is `ownership` (record only when a granule changes owner; the
/// log is per-thread edges, [`R_EDGE`]).
pub const FLAG_OWNERSHIP: u64 = 16;
/// Config flag, with [`FLAG_AGGREPLAY`] or [`FLAG_TPLAY`]: the improved variant (`aggreplay+`,
/// `tplay+`: the relations the seed misses added, see `reprise_core::aggreplay_plus` and
/// `reprise_core::tplay::plus`).
pub const FLAG_PLUS: u64 = 32;
/// Flags that select a model strategy (run through the reprise-core models, with a model log).
pub const FLAGS_MODEL: u64 = FLAG_AGGREPLAY | FLAG_TPLAY;

/// The strategies, by `--strategy` name, with the config flag that selects each in the runtime
/// (LEAP is the absence of a strategy flag). The one place that maps names to flags.
pub const STRATEGIES: &[(&str, u64)] = &[
    ("ownership", FLAG_OWNERSHIP),
    ("leap", 0),
    ("aggreplay", FLAG_AGGREPLAY),
    ("tplay", FLAG_TPLAY),
    ("aggreplay+", FLAG_AGGREPLAY | FLAG_PLUS),
    ("tplay+", FLAG_TPLAY | FLAG_PLUS),
];

/// The config flag of strategy `name`, or None when there is no such strategy.
pub fn strategy_flag(name: &str) -> Option<u64> {
    STRATEGIES.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// Config flag: do not catch system calls with Syscall User Dispatch (for measuring its cost).
pub const FLAG_NO_SUD: u64 = 2;
/// Config flag: sync mode: the runtime is a shared object injected with `LD_PRELOAD` into an
/// unmodified program (no memory-access callbacks); it removes `LD_PRELOAD` from the
/// program's environment at start.
pub const FLAG_SYNC: u64 = 64;
/// Ownership's held granules are on (`reprise record --held-granules`; the runtime's
/// `ownership::held`), in record and in replay alike.
pub const FLAG_HELD: u64 = 256;

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

/// The [`ThreadIndex`] lists of [`Pair`] records, as the byte offsets of their (offset, count)
/// fields: results, digests, signals, edges. (The input data, `data_off`/`data_len`, is bytes.)
pub const THREAD_PAIR_LISTS: [(usize, usize); 4] = [
    (
        offset_of!(ThreadIndex, results_off),
        offset_of!(ThreadIndex, results_len),
    ),
    (
        offset_of!(ThreadIndex, digests_off),
        offset_of!(ThreadIndex, digests_len),
    ),
    (
        offset_of!(ThreadIndex, signals_off),
        offset_of!(ThreadIndex, signals_len),
    ),
    (
        offset_of!(ThreadIndex, edges_off),
        offset_of!(ThreadIndex, edges_len),
    ),
];

/// Where a replay config's parts start, for `nthreads` threads: the [`ConfigHeader`] (padded
/// to 8 bytes), the [`StripeIndex`] of every stripe, the [`ThreadIndex`] of every thread, then
/// the data the indexes point into.
#[derive(Debug, Clone, Copy)]
pub struct ConfigLayout {
    /// Offset of `[StripeIndex; STRIPES]`.
    pub stripe_index_off: usize,
    /// Offset of `[ThreadIndex; nthreads]`.
    pub thread_index_off: usize,
    /// Offset of the data (vectors, per-thread records, the model log).
    pub data_off: usize,
}

impl ConfigLayout {
    /// The layout of a config for `nthreads` threads.
    pub const fn new(nthreads: u32) -> ConfigLayout {
        let stripe_index_off = size_of::<ConfigHeader>().next_multiple_of(8);
        let thread_index_off = stripe_index_off + STRIPES * size_of::<StripeIndex>();
        ConfigLayout {
            stripe_index_off,
            thread_index_off,
            data_off: thread_index_off + nthreads as usize * size_of::<ThreadIndex>(),
        }
    }
}

/// Bits of an edge's source event count ([`R_EDGE`] packs `source tid << 48 | source events`).
pub const EDGE_EVENT_BITS: u32 = 48;

/// Pack an ownership edge's source: thread `tid` had completed `events` events.
pub const fn edge_source(tid: u32, events: u64) -> u64 {
    ((tid as u64) << EDGE_EVENT_BITS) | (events & ((1 << EDGE_EVENT_BITS) - 1))
}

/// An ownership edge list's entry that is not an edge but a mark of the thread's held granules
/// (`ownership::held` in the runtime), which replay repeats: after this event, with `value &
/// 0xffff_ffff` hits left, the thread's hits ran out, and (unless [`HELD_CUT_ONLY`] is set) it
/// released its held granules. Its source thread is one no thread has (ids stay below
/// `MAX_THREADS`).
pub const EDGE_RELEASE: u64 = edge_source(0xffff, 0);

/// Set in an [`EDGE_RELEASE`] entry whose thread kept its held granules (only its hits ran out:
/// a requester stopped them, or the recording ended there).
pub const HELD_CUT_ONLY: u64 = 1 << 32;

/// The hits left of an [`EDGE_RELEASE`] entry logged inside an access's slow path: the entry's
/// event is that access's, and the release empties the table before it.
pub const RELEASE_IN_ACCESS: u32 = u32::MAX;

/// An [`EDGE_RELEASE`] entry's (hits left, whether it released), or None for an edge.
pub const fn held_mark(v: u64) -> Option<(u32, bool)> {
    if v >> EDGE_EVENT_BITS == EDGE_RELEASE >> EDGE_EVENT_BITS {
        Some((v as u32, v & HELD_CUT_ONLY == 0))
    } else {
        None
    }
}

/// An ownership edge list's entry that is not an edge but a refinement of the edge before it:
/// its source thread answered inside the slow path of an access that had already taken
/// granules from others (their edges logged at that access's event, which is not complete), and
/// what the answer handed over may be one of those granules, whose bytes come from the threads
/// it took them from. Replay waits, besides the source's completed events, until the source has
/// passed the first `value & 0xffff_ffff_ffff` entries of its own edge list (every edge it had
/// taken when it answered). Its source thread is one no thread has.
pub const EDGE_AFTER: u64 = edge_source(0xfffe, 0);

/// An [`EDGE_AFTER`] entry's count of the source's edge-list entries, or None for another entry.
pub const fn edge_after(v: u64) -> Option<u64> {
    if v >> EDGE_EVENT_BITS == EDGE_AFTER >> EDGE_EVENT_BITS {
        Some(v & ((1 << EDGE_EVENT_BITS) - 1))
    } else {
        None
    }
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

#[cfg(test)]
mod flag_bits {
    use super::*;

    /// Every config flag is its own bit (`FLAG_SYNC` once shared `FLAG_PLUS`'s, so a full-mode
    /// `aggreplay+` recording ran with sync mode's settings).
    #[test]
    fn flags_are_distinct_bits() {
        let flags = [
            FLAG_HASH_READS,
            FLAG_NO_SUD,
            FLAG_AGGREPLAY,
            FLAG_TPLAY,
            FLAG_OWNERSHIP,
            FLAG_PLUS,
            FLAG_SYNC,
            FLAG_PORTABLE,
        ];
        let mut seen = 0u64;
        for f in flags {
            assert_eq!(f.count_ones(), 1, "{f:#x}");
            assert_eq!(seen & f, 0, "{f:#x} used twice");
            seen |= f;
        }
    }
}

#[cfg(test)]
mod edge_entries {
    use super::*;
    use crate::MAX_THREADS;

    /// An edge list's three kinds of entry are told apart: an edge from a real thread, a held
    /// granules mark and an `EDGE_AFTER` refinement, each read back with what it packed.
    #[test]
    fn edges_marks_and_refinements_are_distinct() {
        let edge = edge_source(MAX_THREADS as u32 - 1, (1 << EDGE_EVENT_BITS) - 1);
        assert_eq!(held_mark(edge), None);
        assert_eq!(edge_after(edge), None);
        assert_eq!(
            edge_source_parts(edge),
            (MAX_THREADS as u32 - 1, (1 << EDGE_EVENT_BITS) - 1)
        );
        let after = EDGE_AFTER | 12_345;
        assert_eq!(edge_after(after), Some(12_345));
        assert_eq!(held_mark(after), None);
        assert!(edge_source_parts(after).0 as usize >= MAX_THREADS);
        let mark = EDGE_RELEASE | 7;
        assert_eq!(edge_after(mark), None);
        assert_eq!(held_mark(mark), Some((7, true)));
    }
}

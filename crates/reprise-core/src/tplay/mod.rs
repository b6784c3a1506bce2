//! TPLAY (seed 003): transactions, transactional interleavings (`dSet`), read-write records with RC
//! vectors (`rwSet`), RegionTrack-style atomicity violations with vector clocks (section II-D) and
//! the artificial interleavings `aSet`/`bSet` that replace a violated transactional interleaving.
//!
//! A transaction (definition 1) starts at a write that is a thread's first event or follows a read,
//! and runs until the read before the next such write; events before a thread's first write belong
//! to transaction 0 (algorithm 1 leaves `trID` at 0 for them). Records are 4-tuples
//! `<a,b,c,d>` = (source thread, source transaction or event, sink thread, sink transaction or
//! event) and `<RC, a, b>` for read-write records (V-C).
//!
//! Replay (algorithm 2), per sink thread, each list used as a queue whose head alone is examined:
//! - `bSet` (`checkEvent`, reads and writes): the recorded event waits until the source thread's
//!   transaction id is *greater* than the recorded one (the source transaction is complete);
//! - `aSet` (`checkAv`, reads and writes): the recorded sink transaction waits until the source
//!   thread's current event is past the recorded event;
//! - `rwSet` (`checkRW`, writes): every thread's read count must reach the recorded RC vector;
//! - `dSet` (writes and lock acquisitions): the sink transaction waits until the source thread's
//!   transaction id is *at least* the recorded one (line 8, `>=`).
//!
//! Readings chosen where the extracted text is garbled or ambiguous:
//! - `Ψ := read` in `onRead` (line 15 prints `write`, contradicting definition 1 and the example).
//! - In `onWrite` the transaction id used for the checks is the one the write belongs to (lines
//!   11-12 increment after the check, which would let the first write of `tr2` in the example run
//!   before `tr1`, contrary to the paper's replay narrative).
//! - `rwSet` records only when another thread's entry changed ("not recorded on e8 since the values
//!   in RC_t3 have not changed"); at replay a record applies to writes of its transaction or later
//!   (line 31 compares with `rwSet_t[0]` regardless of transaction, which would pop records early).
//! - A write-write interleaving is not added to `dSet` when the RC vector recorded at the same
//!   write already orders the last writer's thread after that write (it read after it). This is
//!   the only reading that reproduces the example: `e1⇝e7` and `e8⇝e13` are absent from the
//!   published `dSet`, while `e4⇝e8` (no RC record at `e8`) is present until the violation.
//! - Atomicity violations: happens-before includes program order, lock release→acquire, fork/join
//!   and the conflict edges w→r, w→w, r→w (RegionTrack's region conflicts). At event `e` of
//!   transaction `tx` with an incoming conflict or lock edge from `s`, a violation is reported when
//!   `VC(tx.begin) ≤ VC(s)`; at most one per transaction (the example reports `e11` but not `e12`).
//!   `θ` of line 28 is the source of the violating edge.
//! - On a violation the transactional interleaving `θ.tr ⇝ tx` is replaced by the `bSet` record (it
//!   orders the whole source transaction before `e`, hence before the rest of `tx`), so later
//!   events of `tx` do not add it to `dSet` again ("removes any recorded TI associated with the
//!   two events").
//! - `checkAv` pops `aSet` (line 43 prints `bSet`); "current event greater than the recorded
//!   event" ("until e6 has been executed") means the source thread has entered the callback of
//!   a later event, exited, or the substrate reported the source event's access complete
//!   ([`crate::Replayer::completed`]: on real threads a thread blocked in a barrier after its
//!   source event enters no later event, where under Pin the barrier's own accesses would).
//! - A finished thread counts as having a transaction id greater than all of its transactions.
//! - An atomic RMW is a write; lock acquisitions neither start transactions nor change `Ψ`.
//!
//! Log encoding (V-C): 4-tuples of u32, u64, u32, u64; `<RC,a,b>` as one u32 per thread, a u32
//! and a u64; a length per list and thread.

pub mod plus;
mod plus_dry;
mod plus_replay;
mod plus_trace;
mod record;
mod replay;

pub use plus::{TplayPlus, TplayPlusLog};
pub use record::TplayRecorder;
pub use replay::TplayReplayer;

use crate::event::{enc, LockId, ThreadId};
use crate::strategy::{LogSize, Strategy};
use std::collections::BTreeMap;

/// An interleaving record `<a,b,c,d>`.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct Inter {
    /// Source thread.
    pub src: ThreadId,
    /// Source transaction id (`dSet`, `bSet`) or event index (`aSet`).
    pub src_id: u64,
    /// Sink thread.
    pub sink: ThreadId,
    /// Sink transaction id (`dSet`, `aSet`) or event index (`bSet`).
    pub sink_id: u64,
}

impl Inter {
    /// Shorthand constructor.
    pub fn new(src: ThreadId, src_id: u64, sink: ThreadId, sink_id: u64) -> Self {
        Inter {
            src,
            src_id,
            sink,
            sink_id,
        }
    }
}

/// A read-write record `<RC, a, b>`: RC vector, sink thread, sink transaction.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RwRec {
    /// Read counts of every thread, indexed by thread id.
    pub rc: Vec<u32>,
    /// The writing thread.
    pub thread: ThreadId,
    /// Its transaction.
    pub tr: u64,
}

/// Counters of table IV.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TplayStats {
    /// Transactions created.
    pub transactions: u64,
    /// Transactional interleavings in the final `dSet`.
    pub interleavings: u64,
    /// Atomicity violations reported.
    pub violations: u64,
}

/// TPLAY's log, indexed by sink thread.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TplayLog {
    /// Transactional interleavings.
    pub dset: BTreeMap<ThreadId, Vec<Inter>>,
    /// Read-write records.
    pub rwset: BTreeMap<ThreadId, Vec<RwRec>>,
    /// Artificial interleavings `<t, e', t', tr'>` (source event before sink transaction).
    pub aset: BTreeMap<ThreadId, Vec<Inter>>,
    /// Event interleavings `<t', tr', t, e>` (source transaction before sink event).
    pub bset: BTreeMap<ThreadId, Vec<Inter>>,
    /// Counters.
    pub stats: TplayStats,
    /// Acquiring threads per lock, in order (AggrePlay's `L_m`). Not in seed 003, whose
    /// acquisitions are only `dSet` records ("the source transaction has begun"): with real
    /// blocking locks that lets a replay take a lock in another order than the recording
    /// and then wait, holding it, for an event of a thread that blocks on it.
    #[serde(default)]
    pub l: BTreeMap<LockId, Vec<ThreadId>>,
}

impl LogSize for TplayLog {
    fn size_bytes(&self) -> usize {
        let quad = 2 * (enc::TID + enc::CNT);
        let lists = |m: &BTreeMap<ThreadId, Vec<Inter>>| -> usize {
            m.values()
                .map(|v| enc::TID + enc::LEN + v.len() * quad)
                .sum()
        };
        let rw: usize = self
            .rwset
            .values()
            .map(|v| {
                enc::TID
                    + enc::LEN
                    + v.iter()
                        .map(|r| r.rc.len() * enc::RC + enc::TID + enc::CNT)
                        .sum::<usize>()
            })
            .sum();
        lists(&self.dset) + lists(&self.aset) + lists(&self.bset) + rw + enc::lock_lists(&self.l)
    }
}

/// The TPLAY strategy.
#[derive(Clone, Copy, Debug, Default)]
pub struct Tplay;

/// The kind of a thread's last event: transactions begin at a write after a read (or first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Psi {
    None,
    Read,
    Write,
}

impl Strategy for Tplay {
    type Log = TplayLog;
    type Recorder = TplayRecorder;
    type Replayer = TplayReplayer;
    fn name(&self) -> &'static str {
        "tplay"
    }
    fn recorder(&self) -> TplayRecorder {
        TplayRecorder::new()
    }
    fn replayer(&self, log: &TplayLog) -> TplayReplayer {
        TplayReplayer::from_log(log)
    }
}

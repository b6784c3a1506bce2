//! A simulator that needs no C compiler: random programs, a random recorded interleaving, and a
//! replay under an adversarial scheduler that at every step picks randomly among the threads the
//! strategy (and the program's own semantics: locks, joins) allows.
//!
//! Programs have threads (thread 0 is main; the others are forked, possibly by other children),
//! shared locations, non-nested critical sections and joins of children by their parents. Every
//! written value is computed from the values the thread read before, so a wrong order changes
//! later values. A program's control flow does not depend on values, so a replay runs the same
//! events and the recording and the replay can be compared event by event.
//!
//! The recording is atomic per event (the recorded order is the execution order). Replay models
//! the substrate in one of two ways ([`Substrate`]): `Split`, the real one, where the callback for
//! access k and access k are separate steps and other threads may run between them; and `Atomic`,
//! where both happen in one step (as under Pin, which serialises analysis and instruction; seeds
//! 000 and 003 ran there). Replay threads get ids by creation order, mapped to recorded ids with
//! the thread matcher of [`crate::threads`].
//!
//! Modules: `program` (the generator), `sched` (schedulers), `run` (recording and replay on a
//! small machine) and `verdict` (comparison and fidelity counts); all re-exported here.

mod program;
mod run;
mod sched;
mod verdict;

pub use program::{generate, mix, GenConfig, POp, Program, Rng};
pub use run::{record, replay};
pub use sched::{RandomScheduler, Scheduler, ScriptedScheduler};
pub use verdict::{compare, fidelity, run_case, Fidelity, Verdict};

use crate::event::{Event, ThreadId};
use crate::strategy::LogSize;
use crate::threads::ThreadTable;
use std::collections::BTreeMap;

/// How replay models the substrate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Substrate {
    /// Callback and access in one step.
    Atomic,
    /// Callback (gate and bookkeeping) and access are separate steps, as on real threads.
    Split,
}

/// One access to a location as observed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// Program thread.
    pub thread: usize,
    /// Index of the operation in that thread.
    pub index: usize,
    /// True for writes and RMWs.
    pub write: bool,
    /// Value read (reads, RMWs) or written (writes).
    pub value: u64,
}

/// What a run did: per-location access orders, values read, lock orders.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Observation {
    /// Accesses per location in execution order.
    pub locs: BTreeMap<u64, Vec<Access>>,
    /// Values read (reads and RMWs) per program thread, in program order.
    pub reads: Vec<Vec<u64>>,
    /// Acquiring program threads per lock, in order.
    pub locks: BTreeMap<u64, Vec<usize>>,
    /// Program thread of every step taken.
    pub schedule: Vec<usize>,
    /// Every thread ran to its end.
    pub completed: bool,
    /// A replay thread was matched to the wrong recorded thread.
    pub identity_mismatch: bool,
}

/// A recording: the strategy's log, the thread table and the ground truth.
#[derive(Clone, Debug)]
pub struct Recording<L> {
    /// The strategy's log.
    pub log: L,
    /// Thread abstraction `<a,b>` (seed 000 5.4 / seed 003 algorithm 3).
    pub table: ThreadTable,
    /// Recorded id of each program thread.
    pub rec_id: Vec<ThreadId>,
    /// Events in execution order, as the recorder saw them.
    pub events: Vec<Event>,
    /// Ground truth.
    pub obs: Observation,
}

impl<L: LogSize> Recording<L> {
    /// Log size in bytes, plus the thread table when the strategy logs one.
    pub fn size_bytes(&self, with_table: bool) -> usize {
        self.log.size_bytes()
            + if with_table {
                self.table.size_bytes()
            } else {
                0
            }
    }
}

//! TPLAY+ (`tplay+`): TPLAY's records, each checked at the event where it is due, plus the
//! event-level conflict edges that TPLAY's records leave unenforced, with replay bookkeeping at
//! the access.
//!
//! The recorder is the seed's ([`TplayRecorder`]). At `finish`, a *dry run* walks the recorded
//! events in their recorded order, hands each seed record to the event where algorithm 2 would
//! check it (same queue-head rules as [`super::TplayReplayer`]) and evaluates its condition there,
//! at the recorded time. The seed misses relations in three ways, each added here and nothing else
//! (counters in [`PlusStats`]; counter-examples in `tests/plus_variants.rs`):
//! - **checked too early**: a record whose condition does not hold where the seed checks it
//!   (e.g. the read-write record of a transaction, checked at the transaction's first write but
//!   recorded at a later one) is what deadlocks the seed's replays. TPLAY+ checks it at the first
//!   later event of its sink thread where it holds in the recording (the event where it is due):
//!   the record names that event instead of the sink transaction (same size).
//! - **not enforced**: an inter-thread conflict (write→write, write→read, read→write on one
//!   location) that no check at or before the sink event implies, directly or transitively through
//!   program order, locks, fork/join and other checks. TPLAY checks `dSet` only at writes (a
//!   read-only stretch waits for nothing) and as "the source transaction has *begun*", so a
//!   source's later writes are not waited for. TPLAY+ logs such a conflict as an edge `<source
//!   thread, source event, sink thread, sink event>` in `edges`.
//! - **at the callback**: on real threads (split substrate) a transaction id, an event count or
//!   a read count published by the callback runs ahead of the access; TPLAY+ publishes them when
//!   the access is complete (the thread's next callback or its exit), as AggrePlay+ does.
//!
//! Records that algorithm 2 never examines (its `dSet` and `rwSet` pop one record per write) or
//! whose condition never holds before the sink thread ends are dropped (counted); the conflict
//! check covers what they would have ordered. Cost: the recorded order is kept until `finish`
//! (about 3 bytes per event, `plus_trace`; the dry run cannot start earlier without changing
//! the log, see there), and the dry run a vector clock per event whose knowledge of other
//! threads changed, a varint per read and per transaction.
//! The lock order `l` is kept as in [`TplayLog`].

use super::plus_trace::Trace;
use super::{Inter, Psi, RwRec, TplayLog, TplayRecorder};
use crate::event::{enc, Event, Loc, LockId, Op, ThreadId};
use crate::strategy::{LogSize, Recorder, Strategy};
use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeMap;

pub use super::plus_replay::TplayPlusReplayer;

/// A relation TPLAY+ adds (for tests that drop one and watch replays fail).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Added {
    /// Seed records checked where due (dropped: checked where the seed checks them).
    DueEvent,
    /// Write→write edges.
    WriteWrite,
    /// Write→read edges.
    WriteRead,
    /// Read→write edges (never needed: `rwSet` checked where due orders every read before the
    /// next write; the tests assert none is added).
    ReadWrite,
    /// Progress published at the access (dropped: at the callback).
    AtAccess,
}

/// The TPLAY+ strategy.
#[derive(Clone, Copy, Debug, Default)]
pub struct TplayPlus {
    /// Ablation: leave this relation out (`None`: the strategy).
    pub without: Option<Added>,
}

/// What a check waits for (the seed's conditions, and the added edges).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Cond {
    /// `dSet`: the source thread's transaction id is at least `src_id`.
    D(Inter),
    /// `bSet`: the source thread's transaction id is greater than `src_id`.
    B(Inter),
    /// `aSet`: the source thread completed event `src_id`.
    A(Inter),
    /// `rwSet`: every thread's read count reached the vector (boxed: a check is 48 bytes, not
    /// 64; the encoding is the same).
    Rw(Box<RwRec>),
    /// Added edge: the source thread completed event `src_id`.
    Edge(Inter),
}

/// One check: at the sink thread's event `at` (1-based); `seed_at` is where the seed checks it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Check {
    /// Event of the sink thread at which the check applies.
    pub at: u64,
    /// Event at which algorithm 2 examines it (not in the encoded log).
    pub seed_at: u64,
    /// The condition.
    pub cond: Cond,
}

/// Counters of what TPLAY+ changed relative to the seed's log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PlusStats {
    /// Seed records moved to a later event, per kind: dSet, rwSet, aSet, bSet.
    pub late: [u64; 4],
    /// Seed records dropped (their condition never holds before the sink thread's end), per
    /// kind: dSet, rwSet, aSet, bSet.
    pub dropped: [u64; 4],
    /// Added edges: write→write, write→read, read→write.
    pub edges: [u64; 3],
}

/// TPLAY+'s log: per sink thread, its checks in event order; the lock order.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TplayPlusLog {
    /// Checks per sink thread, sorted by `at`.
    pub checks: BTreeMap<ThreadId, Vec<Check>>,
    /// Acquiring threads per lock, in order.
    pub l: BTreeMap<LockId, Vec<ThreadId>>,
    /// The seed's log (for comparisons; not part of the encoded size, nor of the log a
    /// recording keeps: its replayer needs only the checks and `L_m`).
    #[serde(skip)]
    pub seed: TplayLog,
    /// Counters.
    pub stats: PlusStats,
}

impl LogSize for TplayPlusLog {
    /// The seed's encoding: a `<a,b,c,d>` record per `dSet`/`aSet`/`bSet` record and per edge
    /// (the sink event in place of the sink transaction), an `<RC,a,b>` per `rwSet` record, a
    /// thread id and a length per list (four seed lists and the edge list per sink thread).
    fn size_bytes(&self) -> usize {
        let quad = 2 * (enc::TID + enc::CNT);
        let lists: usize = self
            .checks
            .values()
            .map(|v| {
                let kinds = [0, 1, 2, 3, 4]
                    .iter()
                    .filter(|&&k| v.iter().any(|c| kind(&c.cond) == k))
                    .count();
                kinds * (enc::TID + enc::LEN)
                    + v.iter()
                        .map(|c| match &c.cond {
                            Cond::Rw(r) => r.rc.len() * enc::RC + enc::TID + enc::CNT,
                            _ => quad,
                        })
                        .sum::<usize>()
            })
            .sum();
        lists + enc::lock_lists(&self.l)
    }
}

fn kind(c: &Cond) -> usize {
    match c {
        Cond::D(_) => 0,
        Cond::Rw(_) => 1,
        Cond::A(_) => 2,
        Cond::B(_) => 3,
        Cond::Edge(_) => 4,
    }
}

/// Per-thread progress as the replay publishes it (the seed's `trID`, `Ψ`, read counts).
#[derive(Clone, Debug, Default)]
pub(super) struct Progress {
    pub tr: Vec<u64>,
    pub psi: Vec<Option<Psi>>,
    pub passed: Vec<u64>,
    pub reads: Vec<u32>,
    pub finished: Vec<bool>,
}

fn grow<T: Clone + Default>(v: &mut Vec<T>, t: ThreadId) {
    if v.len() <= t as usize {
        v.resize(t as usize + 1, T::default());
    }
}

impl Progress {
    /// Thread `t` completed `op`; whether it began a transaction.
    pub fn step(&mut self, t: ThreadId, op: &Op) -> bool {
        grow(&mut self.tr, t);
        grow(&mut self.psi, t);
        grow(&mut self.passed, t);
        grow(&mut self.reads, t);
        let i = t as usize;
        self.passed[i] += 1;
        let mut begins = false;
        if op.is_write() {
            if !matches!(self.psi[i], Some(Psi::Write)) {
                self.tr[i] += 1;
                begins = true;
            }
            self.psi[i] = Some(Psi::Write);
        } else if op.is_read() {
            self.psi[i] = Some(Psi::Read);
            self.reads[i] += 1;
        }
        begins
    }
    pub fn exit(&mut self, t: ThreadId) {
        grow(&mut self.finished, t);
        self.finished[t as usize] = true;
    }
    fn fin(&self, t: ThreadId) -> bool {
        self.finished.get(t as usize).copied().unwrap_or(false)
    }
    fn get<T: Copy + Default>(v: &[T], t: ThreadId) -> T {
        v.get(t as usize).copied().unwrap_or_default()
    }
    /// Whether `c` holds now (the seed's conditions on the published progress).
    pub fn holds(&self, c: &Cond) -> bool {
        match c {
            Cond::D(i) => self.fin(i.src) || Self::get(&self.tr, i.src) >= i.src_id,
            Cond::B(i) => self.fin(i.src) || Self::get(&self.tr, i.src) > i.src_id,
            Cond::A(i) | Cond::Edge(i) => {
                self.fin(i.src) || Self::get(&self.passed, i.src) >= i.src_id
            }
            Cond::Rw(r) => {
                r.rc.iter()
                    .enumerate()
                    .all(|(u, &n)| Self::get(&self.reads, u as ThreadId) >= n)
            }
        }
    }
}

/// TPLAY+ record side: the seed's recorder, and the recorded order for the dry run at `finish`
/// (compact: [`Trace`]).
#[derive(Clone, Debug)]
pub struct TplayPlusRecorder {
    inner: TplayRecorder,
    trace: Trace,
    without: Option<Added>,
}

impl Recorder for TplayPlusRecorder {
    type Log = TplayPlusLog;
    fn observe(&mut self, e: &Event) {
        self.inner.observe(e);
        self.trace.push(e.thread, Some(e.op));
    }
    fn thread_exit(&mut self, t: ThreadId) {
        self.inner.thread_exit(t);
        self.trace.push(t, None);
    }
    fn finish(self) -> TplayPlusLog {
        let seed = self.inner.finish();
        super::plus_dry::dry_run(seed, self.trace.iter(), self.without)
    }
}

/// Seed records of one sink thread as algorithm 2's queues: the seed's lists, each with the
/// position of its head (the records stay in the seed's log; nothing is copied).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Queues<'a> {
    pub d: &'a [Inter],
    pub rw: &'a [RwRec],
    pub a: &'a [Inter],
    pub b: &'a [Inter],
}

/// Pop the head of `q` if `f` holds for it.
fn pop_if<'a, T>(q: &mut &'a [T], f: impl Fn(&T) -> bool) -> Option<&'a T> {
    let (h, rest) = q.split_first().filter(|(h, _)| f(h))?;
    *q = rest;
    Some(h)
}

impl<'a> Queues<'a> {
    pub fn of(seed: &'a TplayLog) -> HashMap<ThreadId, Queues<'a>> {
        let mut q: HashMap<ThreadId, Queues> = HashMap::default();
        for (&t, v) in &seed.dset {
            q.entry(t).or_default().d = v;
        }
        for (&t, v) in &seed.rwset {
            q.entry(t).or_default().rw = v;
        }
        for (&t, v) in &seed.aset {
            q.entry(t).or_default().a = v;
        }
        for (&t, v) in &seed.bset {
            q.entry(t).or_default().b = v;
        }
        q
    }
    /// The records algorithm 2 examines at event `k` (`op`, sink transaction `cur`), popped.
    pub fn due(&mut self, k: u64, cur: u64, op: &Op) -> Vec<Cond> {
        let mut out = Vec::new();
        if op.loc().is_some() {
            while let Some(r) = pop_if(&mut self.b, |r| k >= r.sink_id) {
                out.push(Cond::B(*r));
            }
            while let Some(r) = pop_if(&mut self.a, |r| cur >= r.sink_id) {
                out.push(Cond::A(*r));
            }
        }
        if op.is_write() {
            if let Some(r) = pop_if(&mut self.rw, |r| r.tr <= cur) {
                out.push(Cond::Rw(Box::new(r.clone())));
            }
            if let Some(r) = pop_if(&mut self.d, |r| cur >= r.sink_id) {
                out.push(Cond::D(*r));
            }
        }
        out
    }
}

impl Strategy for TplayPlus {
    type Log = TplayPlusLog;
    type Recorder = TplayPlusRecorder;
    type Replayer = TplayPlusReplayer;
    fn name(&self) -> &'static str {
        "tplay+"
    }
    fn recorder(&self) -> TplayPlusRecorder {
        TplayPlusRecorder {
            inner: TplayRecorder::new(),
            trace: Trace::default(),
            without: self.without,
        }
    }
    fn replayer(&self, log: &TplayPlusLog) -> TplayPlusReplayer {
        TplayPlusReplayer::from_log(log, self.without)
    }
}

/// Locations' conflict state in the dry run.
#[derive(Clone, Debug, Default)]
pub(super) struct LocState {
    pub last_w: HashMap<Loc, (ThreadId, u64)>,
    pub readers: HashMap<Loc, Vec<(ThreadId, u64)>>,
}

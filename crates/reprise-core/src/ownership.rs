//! Ownership: a location is owned (exclusively, or read-shared) and only a change of owner is
//! recorded, as an edge "event `c` of thread `s` happens before event `k` of thread `t`". Threads
//! that work on private data record nothing; LEAP orders every access to every object.
//!
//! Protocol (per granule: a memory location or a block of `2^granule_shift` locations, a lock, the
//! thread-creation order), with a thread's events numbered 1, 2, 3, ... (all events count):
//! - A thread that may access the granule in its state records nothing: a write by the exclusive
//!   owner, a read by the exclusive owner or by a member of the read-shared set.
//! - `Unowned` → `Exclusive(me)` on any access, no edge (nothing came before).
//! - `Exclusive(o)`, `o != me`: a read makes it `ReadShared{o, me}`, a write `Exclusive(me)`; both
//!   with one edge from `o` at its current count (everything `o` has done so far, which includes
//!   its last access to the granule).
//! - `ReadShared(readers)`: a read by a non-member adds it, with an edge from the owner that made
//!   the granule shared, at its count at that moment (stored with the state; no write has
//!   happened since, so that covers the last write); a write by anyone makes it `Exclusive(me)`
//!   with an edge from **every** other reader at its current count. Each reader's reads must land
//!   before the write, not only the first reader's: readers that joined later are not ordered
//!   after anything but the shared transition, so one edge would leave them free to read the new
//!   value (with an edge from the first reader only, 7.6% of the simulated programs replay wrong).
//! - Lock acquisitions and releases are writes to the lock's granule, so acquisitions replay in
//!   the recorded order; an atomic RMW is a write. Forks are writes to one creation granule, so
//!   threads are created in the recorded global order and get the same ids by creation order
//!   (LEAP's creation vector, section 2.4 of seed 001); no thread table is logged. Joins record
//!   nothing.
//!
//! Edges are dropped when the target thread already waited for a later-or-equal event of the
//! source: through an earlier edge, through the parent at creation (a child's events follow the
//! parent's fork, and what the parent had waited for), or through a join (the joiner's later
//! events follow the child's last one, and what the child had waited for). Creation and joins are
//! enforced by the program itself (and by the simulator's `enabled`), so they need no edges. On
//! the simulated programs this drops about half of the edges.
//!
//! Replay: thread `t`'s event `k` may pass its callback once every edge into `(t, k)` has its
//! source *completed*: thread `s` has completed event `c` when it has entered the callback of its
//! event `c + 1` (which happens right after access `c`) or exited. Counting "the callback of `c`
//! returned" instead would be wrong on the split substrate, where the access follows the callback
//! and other threads may run in between. The recording is atomic per event here; a runtime must
//! read a source's count so that it covers an access whose callback has returned but whose load or
//! store has not landed yet (count an event when its callback is entered, or wait for it).
//!
//! Log encoding: a varint thread count; per thread (by recorded id) its varint final event count,
//! a varint edge count and per edge three varints (target minus the previous edge's target,
//! source thread, source count). Varints are LEB128 (7 bits per byte).

use crate::event::{Event, EventId, Loc, LockId, Op, ThreadId};
use crate::strategy::{LogSize, Recorder, Replayer, Strategy};
use rustc_hash::FxHashMap as HashMap;

/// A unit of ownership.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Granule {
    /// A block of memory locations (`loc >> granule_shift`).
    Mem(Loc),
    /// A lock.
    Lock(LockId),
    /// The global thread-creation order.
    Create,
}

/// The owner state of a granule that has been accessed (an absent granule is unowned).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OwnerState {
    /// One thread may read and write.
    Exclusive(ThreadId),
    /// The readers since the granule became shared may read.
    ReadShared {
        /// Members, in order of joining (the previous exclusive owner first).
        readers: Vec<ThreadId>,
        /// The previous exclusive owner and its event count when the granule became shared.
        writer: EventId,
    },
}

/// One recorded edge into a thread: its event `target` happens after event `source` completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Edge {
    /// 1-based index of the target event in the target thread.
    pub target: u64,
    /// The source event (thread, 1-based count of events it had completed).
    pub source: EventId,
}

/// The log of one thread.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ThreadLog {
    /// Incoming edges sorted by target.
    pub edges: Vec<Edge>,
    /// Number of events the thread performed.
    pub events: u64,
}

/// The ownership log: per recorded thread id, its incoming edges and event count.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OwnershipLog {
    /// Indexed by recorded thread id.
    pub threads: Vec<ThreadLog>,
}

impl OwnershipLog {
    /// Total number of edges.
    pub fn edges(&self) -> usize {
        self.threads.iter().map(|t| t.edges.len()).sum()
    }
}

/// Bytes of `v` as an LEB128 varint.
fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

impl LogSize for OwnershipLog {
    fn size_bytes(&self) -> usize {
        let mut n = varint_len(self.threads.len() as u64);
        for t in &self.threads {
            n += varint_len(t.events) + varint_len(t.edges.len() as u64);
            let mut prev = 0;
            for e in &t.edges {
                n += varint_len(e.target - prev)
                    + varint_len(e.source.thread as u64)
                    + varint_len(e.source.index);
                prev = e.target;
            }
        }
        n
    }
}

/// The ownership strategy; `granule_shift` merges locations into granules of `2^shift` locations.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ownership {
    /// Locations `x` and `y` share a granule when `x >> granule_shift == y >> granule_shift`.
    pub granule_shift: u32,
}

impl Ownership {
    /// The granule of an operation and whether it counts as a write (`None`: joins).
    fn granule(&self, op: &Op) -> Option<(Granule, bool)> {
        match *op {
            Op::Read(x) => Some((Granule::Mem(x >> self.granule_shift), false)),
            Op::Write(x) | Op::Rmw(x) => Some((Granule::Mem(x >> self.granule_shift), true)),
            Op::Acquire(m) | Op::Release(m) => Some((Granule::Lock(m), true)),
            Op::Fork(_) => Some((Granule::Create, true)),
            Op::Join(_) => None,
        }
    }
}

/// Ownership record side.
#[derive(Clone, Debug)]
pub struct OwnershipRecorder {
    cfg: Ownership,
    state: HashMap<Granule, OwnerState>,
    /// Events performed so far, per thread.
    count: Vec<u64>,
    /// `known[t][s]`: the highest event of `s` that `t`'s current event is already ordered after.
    known: Vec<Vec<u64>>,
    log: OwnershipLog,
    /// Sources of the current event's edges (reused buffer).
    sources: Vec<EventId>,
}

fn grow<T: Default + Clone>(v: &mut Vec<T>, i: usize) {
    if v.len() <= i {
        v.resize(i + 1, T::default());
    }
}

impl OwnershipRecorder {
    /// Log an edge `source -> (t, k)` unless it is from `t` itself or already implied.
    fn edge(&mut self, t: ThreadId, k: u64, source: EventId) {
        if source.thread == t {
            return;
        }
        let known = &mut self.known[t as usize];
        grow(known, source.thread as usize);
        if known[source.thread as usize] >= source.index {
            return;
        }
        known[source.thread as usize] = source.index;
        self.log.threads[t as usize]
            .edges
            .push(Edge { target: k, source });
    }
    /// Apply the transition of `t` accessing `g`; the sources of its edges go to `self.sources`.
    fn transition(&mut self, t: ThreadId, g: Granule, write: bool) {
        use std::collections::hash_map::Entry;
        let count = &self.count;
        let now = |s: ThreadId| EventId::new(s, count[s as usize]);
        let st = match self.state.entry(g) {
            Entry::Vacant(v) => {
                v.insert(OwnerState::Exclusive(t));
                return;
            }
            Entry::Occupied(o) => o.into_mut(),
        };
        let next = match st {
            OwnerState::Exclusive(o) if *o == t => None,
            OwnerState::Exclusive(o) => {
                let src = now(*o);
                self.sources.push(src);
                Some(if write {
                    OwnerState::Exclusive(t)
                } else {
                    OwnerState::ReadShared {
                        readers: vec![*o, t],
                        writer: src,
                    }
                })
            }
            OwnerState::ReadShared { readers, writer } => {
                if write {
                    self.sources.extend(readers.iter().map(|&r| now(r)));
                    Some(OwnerState::Exclusive(t))
                } else {
                    if !readers.contains(&t) {
                        readers.push(t);
                        self.sources.push(*writer);
                    }
                    None
                }
            }
        };
        if let Some(n) = next {
            *st = n;
        }
    }
}

impl Recorder for OwnershipRecorder {
    type Log = OwnershipLog;
    fn observe(&mut self, e: &Event) {
        let t = e.thread;
        let ti = t as usize;
        grow(&mut self.count, ti);
        grow(&mut self.known, ti);
        grow(&mut self.log.threads, ti);
        self.count[ti] += 1;
        let k = self.count[ti];
        if let Some((g, write)) = self.cfg.granule(&e.op) {
            self.transition(t, g, write);
            let mut sources = std::mem::take(&mut self.sources);
            for s in sources.drain(..) {
                self.edge(t, k, s);
            }
            self.sources = sources;
        }
        match e.op {
            // The child starts after the fork and after everything the parent was ordered after.
            Op::Fork(c) => {
                let ci = c as usize;
                grow(&mut self.count, ci);
                grow(&mut self.known, ci);
                grow(&mut self.log.threads, ci);
                let mut inherited = self.known[ti].clone();
                grow(&mut inherited, ti);
                inherited[ti] = k;
                self.known[ci] = inherited;
            }
            // The joiner continues after the child's last event and what the child waited for.
            Op::Join(c) => {
                let ci = c as usize;
                let last = self.count.get(ci).copied().unwrap_or(0);
                let child = self.known.get(ci).cloned().unwrap_or_default();
                let known = &mut self.known[ti];
                grow(known, child.len().max(ci + 1) - 1);
                for (s, &n) in child.iter().enumerate() {
                    known[s] = known[s].max(n);
                }
                known[ci] = known[ci].max(last);
            }
            _ => {}
        }
    }
    fn finish(mut self) -> OwnershipLog {
        for (t, n) in self.count.iter().enumerate() {
            self.log.threads[t].events = *n;
        }
        self.log
    }
}

/// Ownership replay side: per thread, the next incoming edge and the events entered and completed.
#[derive(Clone, Debug)]
pub struct OwnershipReplayer {
    log: OwnershipLog,
    /// Index of each thread's next incoming edge.
    next: Vec<usize>,
    /// Index of the event whose callback each thread is in (0 before its first).
    entered: Vec<u64>,
    /// Events each thread has completed (`u64::MAX` once it exited).
    completed: Vec<u64>,
}

impl OwnershipReplayer {
    /// The edges into `t`'s current event.
    fn pending(&self, t: ThreadId) -> &[Edge] {
        let ti = t as usize;
        let (Some(tl), Some(&k)) = (self.log.threads.get(ti), self.entered.get(ti)) else {
            return &[];
        };
        let rest = &tl.edges[self.next[ti]..];
        let n = rest.iter().take_while(|e| e.target == k).count();
        &rest[..n]
    }
}

impl Replayer for OwnershipReplayer {
    fn enter(&mut self, t: ThreadId, _op: &Op) {
        let ti = t as usize;
        grow(&mut self.entered, ti);
        grow(&mut self.completed, ti);
        grow(&mut self.next, ti);
        self.entered[ti] += 1;
        self.completed[ti] = self.entered[ti] - 1;
    }
    fn may_proceed(&self, t: ThreadId, _op: &Op) -> bool {
        self.pending(t).iter().all(|e| {
            self.completed
                .get(e.source.thread as usize)
                .is_some_and(|&c| c >= e.source.index)
        })
    }
    fn proceed(&mut self, t: ThreadId, _op: &Op) {
        let n = self.pending(t).len();
        if let Some(i) = self.next.get_mut(t as usize) {
            *i += n;
        }
    }
    fn thread_exit(&mut self, t: ThreadId) {
        let ti = t as usize;
        grow(&mut self.completed, ti);
        self.completed[ti] = u64::MAX;
    }
}

impl Strategy for Ownership {
    type Log = OwnershipLog;
    type Recorder = OwnershipRecorder;
    type Replayer = OwnershipReplayer;
    fn name(&self) -> &'static str {
        "ownership"
    }
    fn logs_thread_table(&self) -> bool {
        false
    }
    fn recorder(&self) -> OwnershipRecorder {
        OwnershipRecorder {
            cfg: *self,
            state: HashMap::default(),
            count: Vec::new(),
            known: Vec::new(),
            log: OwnershipLog::default(),
            sources: Vec::new(),
        }
    }
    fn replayer(&self, log: &OwnershipLog) -> OwnershipReplayer {
        let n = log.threads.len();
        OwnershipReplayer {
            log: log.clone(),
            next: vec![0; n],
            entered: vec![0; n],
            completed: vec![0; n],
        }
    }
}

//! LEAP (seed 001): per-shared-object access vectors, run-length compacted, and a replay gate
//! "a thread may access x only when x's vector says it is its turn".
//!
//! Objects are memory locations (or stripes of them, Corollary 2 of the paper: merging variables
//! into one vector keeps replay deterministic), locks (an acquisition is an access to the lock
//! object) and the thread-creation order list (section 2.4, which is itself a vector of parent ids
//! and is replayed the same way).
//!
//! Substrate model: a thread *holds* the turn of the object of its event from the moment its
//! callback returns until it enters its next callback (or exits). That is what makes the recorded
//! per-object order the real order on real threads, where the access happens after the callback
//! returns: the next thread in the vector cannot pass its own callback before the access is done.
//!
//! Log encoding (section 4.2): per object an 8-byte id, a 4-byte entry count and entries
//! `(thread id: u32, run length: u32)`; the creation list is run-length encoded the same way.

use crate::event::{enc, Event, Loc, LockId, Op, ThreadId};
use crate::strategy::{LogSize, Recorder, Replayer, Strategy};
use std::collections::{BTreeMap, HashMap};

/// A shared object with its own access vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Object {
    /// A memory location or stripe.
    Mem(Loc),
    /// A lock.
    Lock(LockId),
    /// The global thread-creation order (vector of parent ids).
    Create,
}

/// A run-length compacted access vector: `(thread, count)` runs.
pub type AccessVector = Vec<(ThreadId, u32)>;

/// LEAP's log.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeapLog {
    /// Access vector per object, in object order.
    pub vectors: BTreeMap<Object, AccessVector>,
}

impl LeapLog {
    /// The uncompacted vector of an object (thread ids in access order).
    pub fn expanded(&self, o: Object) -> Vec<ThreadId> {
        self.vectors
            .get(&o)
            .map(|v| {
                v.iter()
                    .flat_map(|&(t, n)| std::iter::repeat_n(t, n as usize))
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl LogSize for LeapLog {
    fn size_bytes(&self) -> usize {
        self.vectors
            .values()
            .map(|v| enc::OBJ + enc::LEN + v.len() * (enc::TID + 4))
            .sum()
    }
}

/// The LEAP strategy; `stripes = Some(n)` merges locations into `n` vectors by `loc % n`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Leap {
    /// Number of stripes for memory locations (`None`: one vector per location).
    pub stripes: Option<u64>,
}

impl Leap {
    fn object(&self, op: &Op, parent: ThreadId) -> Option<Object> {
        let _ = parent;
        match *op {
            Op::Read(x) | Op::Write(x) | Op::Rmw(x) => {
                Some(Object::Mem(self.stripes.map_or(x, |n| x % n.max(1))))
            }
            Op::Acquire(m) => Some(Object::Lock(m)),
            Op::Fork(_) => Some(Object::Create),
            Op::Release(_) | Op::Join(_) => None,
        }
    }
}

/// LEAP record side.
#[derive(Clone, Debug)]
pub struct LeapRecorder {
    cfg: Leap,
    log: LeapLog,
}

impl Recorder for LeapRecorder {
    type Log = LeapLog;
    fn observe(&mut self, e: &Event) {
        if let Some(o) = self.cfg.object(&e.op, e.thread) {
            let v = self.log.vectors.entry(o).or_default();
            match v.last_mut() {
                Some((t, n)) if *t == e.thread => *n += 1,
                _ => v.push((e.thread, 1)),
            }
        }
    }
    fn finish(self) -> LeapLog {
        self.log
    }
}

/// LEAP replay side: a cursor per object; a thread holds its object's turn until its next callback.
#[derive(Clone, Debug)]
pub struct LeapReplayer {
    cfg: Leap,
    log: LeapLog,
    /// (run index, accesses consumed in that run) per object.
    cursor: HashMap<Object, (usize, u32)>,
    held: HashMap<ThreadId, Object>,
}

impl LeapReplayer {
    fn turn(&self, o: Object) -> Option<ThreadId> {
        let (i, _) = self.cursor.get(&o).copied().unwrap_or((0, 0));
        self.log
            .vectors
            .get(&o)
            .and_then(|v| v.get(i))
            .map(|&(t, _)| t)
    }
    fn release(&mut self, t: ThreadId) {
        if let Some(o) = self.held.remove(&t) {
            let runs = self
                .log
                .vectors
                .get(&o)
                .map(|v| v.as_slice())
                .unwrap_or(&[]);
            let c = self.cursor.entry(o).or_insert((0, 0));
            c.1 += 1;
            if let Some(&(_, n)) = runs.get(c.0) {
                if c.1 >= n {
                    *c = (c.0 + 1, 0);
                }
            }
        }
    }
}

impl Replayer for LeapReplayer {
    fn enter(&mut self, t: ThreadId, _op: &Op) {
        self.release(t);
    }
    fn may_proceed(&self, t: ThreadId, op: &Op) -> bool {
        match self.cfg.object(op, t) {
            None => true,
            Some(o) => self.turn(o) == Some(t),
        }
    }
    fn proceed(&mut self, t: ThreadId, op: &Op) {
        if let Some(o) = self.cfg.object(op, t) {
            self.held.insert(t, o);
        }
    }
    fn thread_exit(&mut self, t: ThreadId) {
        self.release(t);
    }
}

impl Strategy for Leap {
    type Log = LeapLog;
    type Recorder = LeapRecorder;
    type Replayer = LeapReplayer;
    fn name(&self) -> &'static str {
        "leap"
    }
    fn logs_thread_table(&self) -> bool {
        false
    }
    fn recorder(&self) -> LeapRecorder {
        LeapRecorder {
            cfg: *self,
            log: LeapLog::default(),
        }
    }
    fn replayer(&self, log: &LeapLog) -> LeapReplayer {
        LeapReplayer {
            cfg: *self,
            log: log.clone(),
            cursor: HashMap::new(),
            held: HashMap::new(),
        }
    }
}

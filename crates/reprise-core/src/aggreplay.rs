//! AggrePlay (seed 000): write lists `W_x`, write-read lists `WR_x`, per-thread read-write lists
//! `EX_t` of read-count (RC) vector clocks, lock lists `L_m`; optimisations O1-O3 (section 5.9).
//!
//! Record (algorithm 1): a read increments `RC_t.x[t]` and, when the last write to `x` is another
//! thread's, appends `<lw, e>` to `WR_x`; a write refreshes `RC_t.x` from every other thread's own
//! count (`updateReadVectors`), appends `<RC_t.x, e>` to `EX_t` (or a null line Θ, O1/O2), and
//! appends `e` to `W_x`; a lock acquisition appends the thread to `L_m`.
//! Replay (algorithm 2): a write waits until it is the head of `W_x` and `checkReads` holds (every
//! thread's read count on `x` has reached the recorded vector, or the head of `EX_t` is Θ); a read
//! whose `<lw, e>` is in `WR_x` waits until the last replayed write of `x` is `lw`; an acquisition
//! waits until its thread heads `L_m`.
//!
//! Readings chosen where the extracted text is ambiguous (each keeps replay faithful):
//! - `WR_x` holds only inter-thread pairs: figure 5 lists `WRz = <e6⇝e7>` but not `e6⇝e8`
//!   (same thread) and no pair for reads of the initial value. At replay a read consults the first
//!   pair *of its own event* (the log stores `e`): read literally, line 19 of algorithm 2 compares
//!   only `lw` with the head of `WR_x`, which would make every read of `x` wait for pairs of other
//!   threads and block reads that have no pair forever.
//! - RC vectors are per thread *and* location (`RC_t.x`, figure 5 `t1.z`), also at replay
//!   (algorithm 2 writes `RC_t`, dropping the `.x`).
//! - O1 and O2 are one rule: `updateReadVectors` only changes other threads' entries, so the
//!   vector is recorded iff another thread's entry changed; otherwise Θ. (O2's "only the executing
//!   thread's value changed" is then the case of own reads since the last write.)
//! - O3: the vector is written as run-length pairs `<c,d>` (value, number of consecutive threads
//!   with it), which is how `init(EX_t)` can resolve it back to a vector.
//! - An atomic RMW is a write (it is ordered in `W_x`; the value it reads is the previous entry).
//! - Fork/join are not ordered by AggrePlay; thread identity comes from `<a,b>` (5.4).
//!
//! Log encoding (5.5): events `<a,b>` = thread id (u32) + thread-local counter (u64); `W_x` and
//! `WR_x` per location with an 8-byte id and a length; `EX_t` entries Θ = 1 byte, else 1 tag byte,
//! a pair count, `<c,d>` pairs of two u32 and the write event; `L_m` thread ids (u32).

pub use crate::aggreplay_rec::{encode_log, encode_log_to, AggLocs, EncList};
use crate::event::{enc, Event, EventId, Loc, LockId, Op, ThreadId};
use crate::strategy::{LogSize, Recorder, Replayer, Strategy};
use rustc_hash::FxHashMap as HashMap;
use std::collections::{BTreeMap, VecDeque};

/// An entry of `EX_t`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ExEntry {
    /// Θ: the RC vector did not change at this write (O1/O2).
    Null,
    /// `<RC_t.x, e>`: the refreshed RC vector (indexed by thread id) and the write event.
    Rc(Vec<u32>, EventId),
}

/// AggrePlay's log (the figure 5 lists plus the thread abstraction).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AggrePlayLog {
    /// `W_x`: writes per location in order.
    pub w: BTreeMap<Loc, Vec<EventId>>,
    /// `WR_x`: inter-thread `<lw, e>` pairs per location.
    pub wr: BTreeMap<Loc, Vec<(EventId, EventId)>>,
    /// `EX_t`: per thread, one entry per write in program order.
    pub ex: BTreeMap<ThreadId, Vec<ExEntry>>,
    /// `L_m`: acquiring threads per lock.
    pub l: BTreeMap<LockId, Vec<ThreadId>>,
}

/// Run-length pairs `<c,d>` of an RC vector (O3).
pub fn o3_pairs(rc: &[u32]) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = Vec::new();
    for &c in rc {
        match out.last_mut() {
            Some((v, d)) if *v == c => *d += 1,
            _ => out.push((c, 1)),
        }
    }
    out
}

impl LogSize for AggrePlayLog {
    fn size_bytes(&self) -> usize {
        let ev = enc::TID + enc::CNT;
        let w: usize = self
            .w
            .values()
            .map(|v| enc::OBJ + enc::LEN + v.len() * ev)
            .sum();
        let wr: usize = self
            .wr
            .values()
            .map(|v| enc::OBJ + enc::LEN + v.len() * 2 * ev)
            .sum();
        let ex: usize = self
            .ex
            .values()
            .map(|v| {
                enc::TID
                    + enc::LEN
                    + v.iter()
                        .map(|e| match e {
                            ExEntry::Null => 1,
                            ExEntry::Rc(rc, _) => 1 + enc::LEN + o3_pairs(rc).len() * 8 + ev,
                        })
                        .sum::<usize>()
            })
            .sum();
        w + wr + ex + enc::lock_lists(&self.l)
    }
}

/// The AggrePlay strategy.
#[derive(Clone, Copy, Debug, Default)]
pub struct AggrePlay;

/// AggrePlay record side (algorithm 1 with O1-O3): the per-thread part (event counters,
/// `EX_t`) around one [`AggLocs`] (everything keyed by location or lock).
#[derive(Clone, Debug, Default)]
pub struct AggrePlayRecorder {
    counter: HashMap<ThreadId, u64>,
    /// `EX_t` by thread, encoded ([`EncList`]).
    ex: HashMap<ThreadId, EncList>,
    nthreads: u32,
    locs: AggLocs,
    /// The version of the last observed event's object ([`AggLocs::version`] after its step).
    version: u64,
}

impl AggrePlayRecorder {
    /// The per-location part (for [`AggLocs::writes_of`] and [`AggLocs::acquisitions_of`]).
    pub fn locs(&self) -> &AggLocs {
        &self.locs
    }

    /// The version of the last observed event's object after its step
    /// ([`AggLocs::version`], without looking it up again).
    pub fn last_version(&self) -> u64 {
        self.version
    }

    /// The log's encoding (`binlog::encode` of [`Recorder::finish`]'s log, written directly).
    pub fn encode(&self) -> Vec<u8> {
        let mut ex: Vec<(ThreadId, &EncList)> = self.ex.iter().map(|(&t, l)| (t, l)).collect();
        ex.sort_unstable_by_key(|p| p.0);
        encode_log(std::iter::once(&self.locs), &ex, self.nthreads)
    }
}

impl Recorder for AggrePlayRecorder {
    type Log = AggrePlayLog;
    fn observe(&mut self, ev: &Event) {
        let t = ev.thread;
        self.nthreads = self.nthreads.max(t + 1);
        let c = self.counter.entry(t).or_insert(0);
        *c += 1;
        let e = EventId::new(t, *c);
        self.version = match ev.op {
            Op::Write(x) | Op::Rmw(x) => {
                let ex = self.ex.entry(t).or_default();
                self.locs.write(e, x, self.nthreads, ex)
            }
            Op::Read(x) => self.locs.read(e, x),
            Op::Acquire(m) => self.locs.acquire(t, m),
            Op::Release(m) => self.locs.acquisitions_of(m),
            Op::Fork(u) => {
                self.nthreads = self.nthreads.max(u + 1);
                0
            }
            Op::Join(_) => 0,
        };
    }
    fn finish(self) -> AggrePlayLog {
        crate::binlog::decode(&self.encode()).expect("the encoder writes a log postcard reads")
    }
}

/// AggrePlay replay side (algorithm 2): the state keyed by location or lock ([`AggRepLocs`])
/// and the state of each thread ([`AggRepThread`]). The runtime splits the same two parts over
/// its model stripes and threads, so threads replay in parallel.
#[derive(Clone, Debug, Default)]
pub struct AggrePlayReplayer {
    locs: AggRepLocs,
    threads: HashMap<ThreadId, AggRepThread>,
}

/// AggrePlay's replay state keyed by location or lock: every event's condition and step reads
/// and writes only its own object's entries here (and its own thread's [`AggRepThread`]).
#[derive(Clone, Debug, Default)]
pub struct AggRepLocs {
    locs: HashMap<Loc, LocRep>,
    l: HashMap<LockId, VecDeque<ThreadId>>,
}

/// One location's replay state (one hash lookup per event).
#[derive(Clone, Debug, Default)]
struct LocRep {
    /// `W_x`, from the next write on.
    w: VecDeque<EventId>,
    /// Read count per thread: `RC_t'.x[t']`.
    reads: Vec<u32>,
    /// `repW_x`'s last element.
    last_write: Option<EventId>,
}

impl AggRepLocs {
    /// Take `W_x` over.
    pub fn insert_writes(&mut self, x: Loc, w: Vec<EventId>) {
        self.locs.entry(x).or_default().w = w.into();
    }
    /// Take `L_m` over.
    pub fn insert_lock(&mut self, m: LockId, l: Vec<ThreadId>) {
        self.l.insert(m, l.into());
    }
}

/// AggrePlay's replay state of one thread: its event counter, `EX_t` and its own `WR_x` pairs.
#[derive(Clone, Debug, Default)]
pub struct AggRepThread {
    counter: u64,
    ex: VecDeque<ExEntry>,
    /// The `WR_x` pairs whose reads are this thread's, of every location, in the order of
    /// the reads: a read finds its own pair at the front (`(x, lw, e)`).
    wr: VecDeque<(Loc, EventId, EventId)>,
}

/// The per-thread parts of a log's lists: `EX_t` and the `WR_x` pairs each thread reads.
pub fn thread_parts(
    ex: BTreeMap<ThreadId, Vec<ExEntry>>,
    wr: BTreeMap<Loc, Vec<(EventId, EventId)>>,
) -> HashMap<ThreadId, AggRepThread> {
    let mut out: HashMap<ThreadId, AggRepThread> = HashMap::default();
    for (x, v) in wr {
        for (lw, e) in v {
            out.entry(e.thread).or_default().wr.push_back((x, lw, e));
        }
    }
    for me in out.values_mut() {
        me.wr.make_contiguous().sort_unstable_by_key(|p| p.2.index);
    }
    for (t, v) in ex {
        out.entry(t).or_default().ex = v.into();
    }
    out
}

impl AggRepThread {
    /// The id thread `t`'s next event will have.
    pub fn next_id(&self, t: ThreadId) -> EventId {
        EventId::new(t, self.counter + 1)
    }
    fn check_reads(&self, loc: Option<&LocRep>) -> bool {
        match self.ex.front() {
            None => false,
            Some(ExEntry::Null) => true,
            Some(ExEntry::Rc(rc, _)) => rc.iter().enumerate().all(|(u, &n)| {
                n == 0 || loc.and_then(|l| l.reads.get(u)).copied().unwrap_or(0) >= n
            }),
        }
    }
    /// Whether thread `t` (this part's thread) may perform `op` now (algorithm 2's waits).
    pub fn may_proceed(&self, locs: &AggRepLocs, t: ThreadId, op: &Op) -> bool {
        let e = self.next_id(t);
        match *op {
            Op::Write(x) | Op::Rmw(x) => {
                let loc = locs.locs.get(&x);
                loc.and_then(|l| l.w.front()) == Some(&e) && self.check_reads(loc)
            }
            Op::Read(x) => match self.wr.front() {
                Some(&(y, lw, re)) if re == e && y == x => {
                    locs.locs.get(&x).and_then(|l| l.last_write) == Some(lw)
                }
                _ => true,
            },
            Op::Acquire(m) => locs.l.get(&m).and_then(|q| q.front()) == Some(&t),
            _ => true,
        }
    }
    /// Count thread `t`'s next event; its id.
    pub fn bump(&mut self, t: ThreadId) -> EventId {
        self.counter += 1;
        // Pairs of earlier events are stale (a diverged replay's read that was not one): drop
        // them, so the front is always this event's pair or a later one.
        while self.wr.front().is_some_and(|p| p.2.index < self.counter) {
            self.wr.pop_front();
        }
        EventId::new(t, self.counter)
    }
    /// The bookkeeping of event `e` (`op`) of thread `t` that `parts` selects (algorithm 2).
    pub fn apply(&mut self, locs: &mut AggRepLocs, t: ThreadId, e: EventId, op: &Op, parts: Parts) {
        match *op {
            Op::Write(x) | Op::Rmw(x) => {
                if parts.own {
                    self.ex.pop_front();
                }
                if parts.w || parts.last_write {
                    let loc = locs.locs.entry(x).or_default();
                    if parts.w {
                        loc.w.pop_front();
                    }
                    if parts.last_write {
                        loc.last_write = Some(e);
                    }
                }
            }
            Op::Read(x) => {
                if parts.read_count {
                    let reads = &mut locs.locs.entry(x).or_default().reads;
                    let u = t as usize;
                    if reads.len() <= u {
                        reads.resize(u + 1, 0);
                    }
                    reads[u] += 1;
                }
                if parts.own && self.wr.front().is_some_and(|p| p.2 == e && p.0 == x) {
                    self.wr.pop_front();
                }
            }
            Op::Acquire(m) if parts.lock => {
                if let Some(q) = locs.l.get_mut(&m) {
                    q.pop_front();
                }
            }
            _ => {}
        }
    }
}

impl Replayer for AggrePlayReplayer {
    fn may_proceed(&self, t: ThreadId, op: &Op) -> bool {
        match self.threads.get(&t) {
            Some(me) => me.may_proceed(&self.locs, t, op),
            None => AggRepThread::default().may_proceed(&self.locs, t, op),
        }
    }
    fn proceed(&mut self, t: ThreadId, op: &Op) {
        let e = self.bump(t);
        self.apply(t, e, op, Parts::ALL);
    }
}

/// Which parts of an event's replay bookkeeping to apply (AggrePlay+ applies some at the access).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parts {
    /// Pop `W_x` (write→write).
    pub w: bool,
    /// Set the last replayed write of `x` (write→read).
    pub last_write: bool,
    /// Count a read (read→write, `checkReads`).
    pub read_count: bool,
    /// Pop `L_m` (lock order).
    pub lock: bool,
    /// The thread's own queues (`EX_t`, its `WR_x` pair): never observed by others.
    pub own: bool,
}

impl Parts {
    /// Every part.
    pub const ALL: Parts = Parts {
        w: true,
        last_write: true,
        read_count: true,
        lock: true,
        own: true,
    };

    /// The parts `self` leaves out.
    pub fn rest(self) -> Parts {
        Parts {
            w: !self.w,
            last_write: !self.last_write,
            read_count: !self.read_count,
            lock: !self.lock,
            own: !self.own,
        }
    }
}

impl AggrePlayReplayer {
    /// Count thread `t`'s next event; its id.
    pub(crate) fn bump(&mut self, t: ThreadId) -> EventId {
        self.threads.entry(t).or_default().bump(t)
    }
    /// The bookkeeping of event `e` (`op`) of thread `t` that `parts` selects (algorithm 2).
    pub(crate) fn apply(&mut self, t: ThreadId, e: EventId, op: &Op, parts: Parts) {
        let me = self.threads.entry(t).or_default();
        me.apply(&mut self.locs, t, e, op, parts);
    }
}

impl AggrePlay {
    /// The replayer of `log`, taking its lists over: `W_x`, `EX_t` and `L_m` become the
    /// replayer's queues without a copy (a real recording's log holds one `EX_t` entry per
    /// write, each with its read counts: copying them was most of a replay's start).
    pub fn replayer_owned(&self, log: AggrePlayLog) -> AggrePlayReplayer {
        let mut r = AggrePlayReplayer::default();
        r.locs.locs.reserve(log.w.len());
        for (x, v) in log.w {
            r.locs.insert_writes(x, v);
        }
        for (m, v) in log.l {
            r.locs.insert_lock(m, v);
        }
        r.threads = thread_parts(log.ex, log.wr);
        r
    }
}

impl Strategy for AggrePlay {
    type Log = AggrePlayLog;
    type Recorder = AggrePlayRecorder;
    type Replayer = AggrePlayReplayer;
    fn name(&self) -> &'static str {
        "aggreplay"
    }
    fn recorder(&self) -> AggrePlayRecorder {
        AggrePlayRecorder::default()
    }
    fn replayer(&self, log: &AggrePlayLog) -> AggrePlayReplayer {
        self.replayer_owned(log.clone())
    }
}

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
//!   event" means the source thread has entered the callback of a later event (or exited).
//! - A finished thread counts as having a transaction id greater than all of its transactions.
//! - An atomic RMW is a write; lock acquisitions neither start transactions nor change `Ψ`.
//!
//! Log encoding (V-C): 4-tuples of u32, u64, u32, u64; `<RC,a,b>` as one u32 per thread, a u32
//! and a u64; a length per list and thread.

use crate::event::{enc, Event, Loc, LockId, Op, ThreadId};
use crate::strategy::{LogSize, Recorder, Replayer, Strategy};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Psi {
    None,
    Read,
    Write,
}

#[derive(Clone, Debug)]
struct RThread {
    rc: Vec<u32>,
    psi: Psi,
    tr: u64,
    counter: u64,
    vc: Vec<u32>,
    /// `vc` shared with the sources made from it; valid while only this thread's own entry
    /// changed since it was taken (a source carries its own entry separately).
    snap: Option<Rc<[u32]>>,
    begin_vc: Vec<u32>,
    av_reported: bool,
    /// Source transactions whose interleavings into the current transaction a `bSet` record covers.
    covered: HashSet<(ThreadId, u64)>,
}

impl RThread {
    fn new(vc: Vec<u32>) -> Self {
        RThread {
            rc: Vec::new(),
            psi: Psi::None,
            tr: 0,
            counter: 0,
            vc,
            snap: None,
            begin_vc: Vec::new(),
            av_reported: false,
            covered: HashSet::default(),
        }
    }

    /// A source at this thread's current event: the shared snapshot and its own clock.
    fn src(&mut self, t: ThreadId, tr: u64) -> Src {
        let vc = self
            .snap
            .get_or_insert_with(|| Rc::from(self.vc.as_slice()))
            .clone();
        Src {
            t,
            tr,
            vc,
            own: at(&self.vc, t),
            begin: at(&self.begin_vc, t),
        }
    }

    /// Join a source's clock into this thread's.
    fn join_src(&mut self, s: &Src) {
        let mut changed = join(&mut self.vc, &s.vc);
        if at(&self.vc, s.t) < s.own {
            set(&mut self.vc, s.t, s.own);
            changed = true;
        }
        if changed {
            self.snap = None;
        }
    }
}

#[derive(Clone, Debug)]
struct Src {
    t: ThreadId,
    tr: u64,
    /// The source thread's clock (its own entry may be older than `own`).
    vc: Rc<[u32]>,
    /// The source thread's own clock at the source event.
    own: u32,
    /// The source thread's own clock when transaction `tr` began (0 for transaction 0).
    begin: u32,
}

#[derive(Clone, Debug)]
struct LastWrite {
    src: Src,
    own_reads: u32,
}

fn at(v: &[u32], i: ThreadId) -> u32 {
    v.get(i as usize).copied().unwrap_or(0)
}
fn set(v: &mut Vec<u32>, i: ThreadId, x: u32) {
    if v.len() <= i as usize {
        v.resize(i as usize + 1, 0);
    }
    v[i as usize] = x;
}
/// `a := a ⊔ b`; whether `a` changed.
fn join(a: &mut Vec<u32>, b: &[u32]) -> bool {
    if a.len() < b.len() {
        a.resize(b.len(), 0);
    }
    let mut changed = false;
    for (x, &y) in a.iter_mut().zip(b) {
        if y > *x {
            *x = y;
            changed = true;
        }
    }
    changed
}
/// `a ≤ VC(s)`.
fn leq_src(a: &[u32], s: &Src) -> bool {
    a.iter().enumerate().all(|(i, &x)| {
        let i = i as ThreadId;
        x <= if i == s.t { s.own } else { at(&s.vc, i) }
    })
}

/// TPLAY record side (algorithm 1 with a RegionTrack-style checker).
#[derive(Clone, Debug, Default)]
pub struct TplayRecorder {
    log: TplayLog,
    threads: HashMap<ThreadId, RThread>,
    lw: HashMap<Loc, LastWrite>,
    /// Last read of each thread since the last write, per location (sources of r→w edges),
    /// by thread id.
    reads: HashMap<Loc, Vec<Src>>,
    /// `L_m`: last acquisition (thread, transaction) and the release.
    locks: HashMap<LockId, (Src, Option<Src>)>,
    /// Reused buffers of the write path (no allocation per event).
    scratch_src: Vec<Src>,
    scratch_counts: Vec<u32>,
    finished: HashMap<ThreadId, Vec<u32>>,
    nthreads: u32,
    /// Every record in `log.dset` (each vector holds its sink thread's records): membership
    /// in O(1) instead of a scan of the vector per interleaving.
    in_dset: HashSet<Inter>,
}

impl TplayRecorder {
    fn thread(&mut self, t: ThreadId) -> &mut RThread {
        self.threads
            .entry(t)
            .or_insert_with(|| RThread::new(Vec::new()))
    }

    fn add_dset(&mut self, t: ThreadId, i: Inter) {
        if self.threads[&t].covered.contains(&(i.src, i.src_id)) {
            return;
        }
        if self.in_dset.insert(i) {
            self.log.dset.entry(t).or_default().push(i);
        }
    }

    /// Remove record `i` from `dSet` (its sink's list); whether it was there.
    fn remove_dset(&mut self, i: Inter) -> bool {
        if !self.in_dset.remove(&i) {
            return false;
        }
        if let Some(d) = self.log.dset.get_mut(&i.sink) {
            if let Some(p) = d.iter().rposition(|x| *x == i) {
                d.remove(p);
            }
        }
        true
    }

    /// Check the incoming edges of the current event of `t` for an atomicity violation
    /// (`VC(tx.begin) ≤ VC(s)`), then join their clocks.
    ///
    /// Every violating source is handled (its transactional interleaving becomes a `bSet`
    /// record): a transaction-level edge from a source that `tx`'s begin happens before is a
    /// cycle at replay (e.g. a thread forked inside `tx` that writes what `tx` writes later), so
    /// leaving one in `dSet` deadlocks the replay. The statistics still count at most one
    /// violation per transaction, as the seed's example does.
    fn edges(&mut self, t: ThreadId, sources: &[Src]) {
        let th = self.threads.get_mut(&t).unwrap();
        let mut violated: Vec<(Src, bool)> = Vec::new();
        if th.tr >= 1 && !th.begin_vc.is_empty() {
            for s in sources {
                if leq_src(&th.begin_vc, s)
                    && !th.covered.contains(&(s.t, s.tr))
                    && !violated.iter().any(|(v, _)| v.t == s.t && v.tr == s.tr)
                {
                    // Whether an earlier event of tx already happens after θ.tr began (a
                    // join, a lock or a conflict edge): then θ.tr cannot wait for tx's previous
                    // event, and the reverse interleaving stays a transactional one.
                    let hb = s.begin > 0 && at(&th.vc, s.t) >= s.begin;
                    violated.push((s.clone(), hb));
                }
            }
        }
        for s in sources {
            th.join_src(s);
        }
        for (theta, hb) in violated {
            self.on_violation(t, theta, hb);
        }
    }

    /// `onAtomicityViolation` (lines 27-33).
    fn on_violation(&mut self, t: ThreadId, theta: Src, hb: bool) {
        let (tr, e, first) = {
            let th = self.threads.get_mut(&t).unwrap();
            let first = !th.av_reported;
            th.av_reported = true;
            th.covered.insert((theta.t, theta.tr));
            (th.tr, th.counter, first)
        };
        if first {
            self.log.stats.violations += 1;
        }
        let rev = Inter::new(t, tr, theta.t, theta.tr);
        if !hb && self.remove_dset(rev) {
            self.log
                .aset
                .entry(theta.t)
                .or_default()
                .push(Inter::new(t, e - 1, theta.t, theta.tr));
        }
        // The forward interleaving θ.tr ⇝ tx is carried by the bSet record instead.
        self.remove_dset(Inter::new(theta.t, theta.tr, t, tr));
        self.log
            .bset
            .entry(t)
            .or_default()
            .push(Inter::new(theta.t, theta.tr, t, e));
    }
}

impl Recorder for TplayRecorder {
    type Log = TplayLog;
    fn observe(&mut self, ev: &Event) {
        let t = ev.thread;
        self.nthreads = self.nthreads.max(t + 1);
        {
            let th = self.thread(t);
            th.counter += 1;
            let c = at(&th.vc, t) + 1;
            set(&mut th.vc, t, c);
        }
        match ev.op {
            Op::Write(x) | Op::Rmw(x) => {
                let th = self.threads.get_mut(&t).unwrap();
                let begins = matches!(th.psi, Psi::None | Psi::Read);
                if begins {
                    th.tr += 1;
                    th.av_reported = false;
                    th.covered.clear();
                    th.begin_vc.clear(); // no check at the begin event itself
                    self.log.stats.transactions += 1;
                }
                let mut sources = std::mem::take(&mut self.scratch_src);
                sources.clear();
                let lw = self.lw.get(&x).cloned();
                if let Some(l) = &lw {
                    if l.src.t != t {
                        sources.push(l.src.clone());
                    }
                }
                if let Some(r) = self.reads.get(&x) {
                    sources.extend(r.iter().filter(|s| s.t != t).cloned());
                }
                self.edges(t, &sources);
                self.scratch_src = sources;
                let n = self.nthreads;
                let mut counts = std::mem::take(&mut self.scratch_counts);
                counts.clear();
                counts.extend((0..n).map(|u| self.threads.get(&u).map_or(0, |o| at(&o.rc, u))));
                let th = self.threads.get_mut(&t).unwrap();
                if begins {
                    th.begin_vc.clone_from(&th.vc);
                }
                // recordRW (lines 23-26).
                let mut changed = false;
                for u in 0..n {
                    if u != t && at(&th.rc, u) != counts[u as usize] {
                        set(&mut th.rc, u, counts[u as usize]);
                        changed = true;
                    }
                }
                self.scratch_counts = counts;
                let tr = th.tr;
                let own = at(&th.rc, t);
                let me = th.src(t, tr);
                let lw_reads = lw.as_ref().map(|l| at(&th.rc, l.src.t));
                if changed {
                    let mut rc = th.rc.clone();
                    rc.resize(n as usize, 0);
                    self.log
                        .rwset
                        .entry(t)
                        .or_default()
                        .push(RwRec { rc, thread: t, tr });
                }
                if let Some(l) = lw {
                    let absorbed = changed && lw_reads.unwrap_or(0) > l.own_reads;
                    if l.src.t != t && !absorbed {
                        self.add_dset(t, Inter::new(l.src.t, l.src.tr, t, tr));
                    }
                }
                self.lw.insert(
                    x,
                    LastWrite {
                        src: me,
                        own_reads: own,
                    },
                );
                if let Some(r) = self.reads.get_mut(&x) {
                    r.clear(); // keeps the allocation for the location's next reads
                }
                self.threads.get_mut(&t).unwrap().psi = Psi::Write;
            }
            Op::Read(x) => {
                {
                    let th = self.threads.get_mut(&t).unwrap();
                    let c = at(&th.rc, t) + 1;
                    set(&mut th.rc, t, c);
                }
                let lw = self.lw.get(&x).cloned();
                let source = lw.as_ref().filter(|l| l.src.t != t).map(|l| l.src.clone());
                self.edges(t, source.as_slice());
                let th = self.threads.get_mut(&t).unwrap();
                th.psi = Psi::Read;
                let tr = th.tr;
                let me = th.src(t, tr);
                let r = self.reads.entry(x).or_default();
                match r.binary_search_by_key(&t, |s| s.t) {
                    Ok(i) => r[i] = me,
                    Err(i) => r.insert(i, me),
                }
                if let Some(l) = lw {
                    if l.src.t != t {
                        self.add_dset(t, Inter::new(l.src.t, l.src.tr, t, tr));
                    }
                }
            }
            Op::Acquire(m) => {
                self.log.l.entry(m).or_default().push(t);
                let prev = self.locks.get(&m).cloned();
                let mut sources = Vec::new();
                if let Some((s, Some(rel))) = &prev {
                    if s.t != t {
                        sources.push(Src {
                            tr: s.tr,
                            begin: s.begin,
                            ..rel.clone()
                        });
                    }
                }
                self.edges(t, &sources);
                let (tr, me) = {
                    let th = self.threads.get_mut(&t).unwrap();
                    (th.tr, th.src(t, th.tr))
                };
                if let Some((s, _)) = prev {
                    if s.t != t {
                        self.add_dset(t, Inter::new(s.t, s.tr, t, tr));
                    }
                }
                self.locks.insert(m, (me, None));
            }
            Op::Release(m) => {
                let th = self.threads.get_mut(&t).unwrap();
                let rel = th.src(t, th.tr);
                if let Some(l) = self.locks.get_mut(&m) {
                    l.1 = Some(rel);
                }
            }
            Op::Fork(u) => {
                self.nthreads = self.nthreads.max(u + 1);
                let vc = self.threads[&t].vc.clone();
                self.threads.insert(u, RThread::new(vc));
            }
            Op::Join(u) => {
                if let Some(vc) = self.finished.get(&u).cloned() {
                    let th = self.thread(t);
                    if join(&mut th.vc, &vc) {
                        th.snap = None;
                    }
                }
            }
        }
    }
    fn thread_exit(&mut self, t: ThreadId) {
        let vc = self.thread(t).vc.clone();
        self.finished.insert(t, vc);
    }
    fn finish(mut self) -> TplayLog {
        // Threads unknown when a record was made had read nothing: pad with zeros.
        for v in self.log.rwset.values_mut() {
            for r in v {
                r.rc.resize(self.nthreads as usize, 0);
            }
        }
        self.log.stats.interleavings = self.log.dset.values().map(|v| v.len() as u64).sum();
        self.log
    }
}

/// TPLAY replay side (algorithm 2).
#[derive(Clone, Debug, Default)]
pub struct TplayReplayer {
    dset: HashMap<ThreadId, VecDeque<Inter>>,
    rwset: HashMap<ThreadId, VecDeque<RwRec>>,
    aset: HashMap<ThreadId, VecDeque<Inter>>,
    bset: HashMap<ThreadId, VecDeque<Inter>>,
    tr: HashMap<ThreadId, u64>,
    psi: HashMap<ThreadId, Psi>,
    /// Events whose callback returned.
    passed: HashMap<ThreadId, u64>,
    /// Index of the event whose callback the thread entered last.
    entered: HashMap<ThreadId, u64>,
    reads: HashMap<ThreadId, u32>,
    finished: HashSet<ThreadId>,
    /// `l` of the log: the next acquirer of each lock.
    l: HashMap<LockId, VecDeque<ThreadId>>,
}

#[derive(Default)]
struct Pops {
    b: usize,
    a: usize,
    rw: bool,
    d: bool,
}

impl TplayReplayer {
    fn tr_of(&self, t: ThreadId) -> u64 {
        if self.finished.contains(&t) {
            u64::MAX
        } else {
            self.tr.get(&t).copied().unwrap_or(0)
        }
    }
    fn cur_tr(&self, t: ThreadId, op: &Op) -> u64 {
        let tr = self.tr.get(&t).copied().unwrap_or(0);
        let psi = self.psi.get(&t).copied().unwrap_or(Psi::None);
        if op.is_write() && matches!(psi, Psi::None | Psi::Read) {
            tr + 1
        } else {
            tr
        }
    }
    fn check(&self, t: ThreadId, op: &Op) -> Option<Pops> {
        let mut p = Pops::default();
        let k = self.passed.get(&t).copied().unwrap_or(0) + 1;
        let cur = self.cur_tr(t, op);
        let mem = op.loc().is_some();
        if mem {
            // checkEvent: every record that applies to this event (a violating transaction
            // can have several sources at one event).
            if let Some(q) = self.bset.get(&t) {
                for r in q.iter().take_while(|r| k >= r.sink_id) {
                    if self.tr_of(r.src) > r.src_id {
                        p.b += 1;
                    } else {
                        return None;
                    }
                }
            }
            // checkAv
            if let Some(q) = self.aset.get(&t) {
                for r in q.iter().take_while(|r| cur >= r.sink_id) {
                    let past = self.finished.contains(&r.src)
                        || self.entered.get(&r.src).copied().unwrap_or(0) > r.src_id;
                    if past {
                        p.a += 1;
                    } else {
                        return None;
                    }
                }
            }
        }
        if op.is_write() {
            // checkRW
            if let Some(r) = self.rwset.get(&t).and_then(|q| q.front()) {
                if r.tr <= cur {
                    let ok =
                        r.rc.iter().enumerate().all(|(u, &n)| {
                            self.reads.get(&(u as ThreadId)).copied().unwrap_or(0) >= n
                        });
                    if ok {
                        p.rw = true;
                    } else {
                        return None;
                    }
                }
            }
        }
        if let Op::Acquire(m) = *op {
            if let Some(q) = self.l.get(&m) {
                if q.front().is_some_and(|&u| u != t) {
                    return None;
                }
            }
        }
        // dSet at writes, and at acquisitions only when the log has no lock order: with `l`,
        // the acquisition order is exact, and a `dSet` record at the head of the queue may
        // come from a later read of the same transaction, whose source can wait for this lock.
        if op.is_write() || (matches!(op, Op::Acquire(_)) && self.l.is_empty()) {
            if let Some(r) = self.dset.get(&t).and_then(|q| q.front()) {
                if cur >= r.sink_id {
                    if self.tr_of(r.src) >= r.src_id {
                        p.d = true;
                    } else {
                        return None;
                    }
                }
            }
        }
        Some(p)
    }
}

impl Replayer for TplayReplayer {
    fn enter(&mut self, t: ThreadId, _op: &Op) {
        let k = self.passed.get(&t).copied().unwrap_or(0) + 1;
        self.entered.insert(t, k);
    }
    fn may_proceed(&self, t: ThreadId, op: &Op) -> bool {
        self.check(t, op).is_some()
    }
    fn proceed(&mut self, t: ThreadId, op: &Op) {
        let p = self.check(t, op).unwrap_or_default();
        let pop = |m: &mut HashMap<ThreadId, VecDeque<Inter>>, n: usize| {
            if let Some(q) = m.get_mut(&t) {
                q.drain(..n.min(q.len()));
            }
        };
        pop(&mut self.bset, p.b);
        pop(&mut self.aset, p.a);
        pop(&mut self.dset, p.d as usize);
        if p.rw {
            if let Some(q) = self.rwset.get_mut(&t) {
                q.pop_front();
            }
        }
        if let Op::Acquire(m) = *op {
            if let Some(q) = self.l.get_mut(&m) {
                q.pop_front();
            }
        }
        let cur = self.cur_tr(t, op);
        self.tr.insert(t, cur);
        *self.passed.entry(t).or_insert(0) += 1;
        if op.is_write() {
            self.psi.insert(t, Psi::Write);
        } else if op.is_read() {
            self.psi.insert(t, Psi::Read);
            *self.reads.entry(t).or_insert(0) += 1;
        }
    }
    fn thread_exit(&mut self, t: ThreadId) {
        self.finished.insert(t);
    }
}

impl Strategy for Tplay {
    type Log = TplayLog;
    type Recorder = TplayRecorder;
    type Replayer = TplayReplayer;
    fn name(&self) -> &'static str {
        "tplay"
    }
    fn recorder(&self) -> TplayRecorder {
        let mut r = TplayRecorder::default();
        r.threads.insert(0, RThread::new(Vec::new()));
        r
    }
    fn replayer(&self, log: &TplayLog) -> TplayReplayer {
        let mut r = TplayReplayer::default();
        for (&t, v) in &log.dset {
            r.dset.insert(t, v.iter().copied().collect());
        }
        for (&t, v) in &log.aset {
            r.aset.insert(t, v.iter().copied().collect());
        }
        for (&t, v) in &log.bset {
            r.bset.insert(t, v.iter().copied().collect());
        }
        for (&t, v) in &log.rwset {
            r.rwset.insert(t, v.iter().cloned().collect());
        }
        for (&m, v) in &log.l {
            r.l.insert(m, v.iter().copied().collect());
        }
        r
    }
}

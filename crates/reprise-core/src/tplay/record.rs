//! TPLAY's record side: algorithm 1 with a RegionTrack-style atomicity checker on vector clocks.

use super::{Inter, Psi, RwRec, TplayLog};
use crate::event::{Event, Loc, LockId, Op, ThreadId};
use crate::strategy::Recorder;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::rc::Rc;

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

/// The recorder's threads by id: a vector indexed by thread id (ids are dense, from 0), where
/// a hash map cost a look-up per access of a thread's state, several per event.
#[derive(Clone, Debug, Default)]
struct Threads(Vec<Option<RThread>>);

impl Threads {
    fn get(&self, t: &ThreadId) -> Option<&RThread> {
        self.0.get(*t as usize).and_then(Option::as_ref)
    }

    fn get_mut(&mut self, t: &ThreadId) -> Option<&mut RThread> {
        self.0.get_mut(*t as usize).and_then(Option::as_mut)
    }

    /// Thread `t`'s state (`make` it if there is none).
    fn or_insert_with(&mut self, t: ThreadId, make: impl FnOnce() -> RThread) -> &mut RThread {
        let i = t as usize;
        if self.0.len() <= i {
            self.0.resize_with(i + 1, || None);
        }
        self.0[i].get_or_insert_with(make)
    }

    fn insert(&mut self, t: ThreadId, th: RThread) {
        *self.or_insert_with(t, || RThread::new(Vec::new())) = th;
    }
}

impl std::ops::Index<&ThreadId> for Threads {
    type Output = RThread;
    fn index(&self, t: &ThreadId) -> &RThread {
        self.get(t).expect("a known thread")
    }
}

/// TPLAY record side (algorithm 1 with a RegionTrack-style checker).
#[derive(Clone, Debug, Default)]
pub struct TplayRecorder {
    log: TplayLog,
    threads: Threads,
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
    /// The records in `log.dset` that a later step may still add or remove (each vector holds
    /// its sink thread's records): membership in O(1) instead of a scan of the vector per
    /// interleaving. Settled records are swept out (`sweep`).
    in_dset: HashSet<Inter>,
    /// `in_dset`'s size after its last sweep.
    swept: usize,
}

impl TplayRecorder {
    /// A recorder that knows the main thread (0).
    pub(super) fn new() -> Self {
        let mut r = TplayRecorder::default();
        r.threads.insert(0, RThread::new(Vec::new()));
        r
    }

    fn thread(&mut self, t: ThreadId) -> &mut RThread {
        self.threads.or_insert_with(t, || RThread::new(Vec::new()))
    }

    fn add_dset(&mut self, t: ThreadId, i: Inter) {
        if self.threads[&t].covered.contains(&(i.src, i.src_id)) {
            return;
        }
        if self.in_dset.insert(i) {
            self.log.dset.entry(t).or_default().push(i);
            if self.in_dset.len() >= 2 * self.swept.max(1 << 12) {
                self.sweep();
            }
        }
    }

    /// Drop from `in_dset` the records no later step can add or remove: a record is added with
    /// its sink's current transaction and removed (`on_violation`) with the violating thread's
    /// current transaction as its source or its sink; a transaction that is not its thread's
    /// current one, or whose thread finished, never is again. Amortized O(1) per record.
    fn sweep(&mut self) {
        let (threads, finished) = (&self.threads, &self.finished);
        let open = |t: ThreadId, tr: u64| {
            threads.get(&t).is_some_and(|th| th.tr == tr) && !finished.contains_key(&t)
        };
        self.in_dset
            .retain(|i| open(i.src, i.src_id) || open(i.sink, i.sink_id));
        self.swept = self.in_dset.len();
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

    /// A write or RMW: maybe a new transaction, conflict edges from the last write and the
    /// reads since, recordRW (lines 23-26), the write-write interleaving.
    fn on_write(&mut self, t: ThreadId, x: Loc) {
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

    /// A read: the edge from the last write, the read-write interleaving.
    fn on_read(&mut self, t: ThreadId, x: Loc) {
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

    /// A lock acquisition: appended to `L_m`, the edge from the last release.
    fn on_acquire(&mut self, t: ThreadId, m: LockId) {
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
            Op::Write(x) | Op::Rmw(x) => self.on_write(t, x),
            Op::Read(x) => self.on_read(t, x),
            Op::Acquire(m) => self.on_acquire(t, m),
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

//! TPLAY+'s dry run: the recorded events in recorded order, the seed's records handed to the
//! events where they are due, and the conflicts no check implies turned into edges.

use super::plus::{Added, Check, Cond, LocState, PlusStats, Progress, Queues, TplayPlusLog};
use super::plus_trace::Seq;
use super::{Inter, Psi, TplayLog};
use crate::event::{Loc, LockId, Op, ThreadId};
use rustc_hash::FxHashMap as HashMap;

/// Per-thread knowledge: the latest event of every thread surely complete before the current one.
#[derive(Clone, Debug, Default)]
struct Known {
    kn: Vec<u64>,
    /// Events completed.
    n: u64,
    /// `kn` after each event `g` whose knowledge of other threads changed, as `(g, kn)`: `kn`
    /// after any event `g` is the last entry at or before it with the thread's own entry `g`.
    hist: Vec<(u64, Vec<u64>)>,
    /// First event of each transaction (index = transaction id; 0 for transaction 0).
    begin: Seq,
    /// Event of each read, in order.
    read_at: Seq,
    deferred: Vec<(u64, Cond)>,
}

/// Index of a seed record's kind in the counters: dSet, rwSet, aSet, bSet.
fn kind(c: &Cond) -> usize {
    match c {
        Cond::D(_) => 0,
        Cond::Rw(_) => 1,
        Cond::A(_) => 2,
        _ => 3,
    }
}

fn join(a: &mut Vec<u64>, b: &[u64]) {
    if a.len() < b.len() {
        a.resize(b.len(), 0);
    }
    for (x, &y) in a.iter_mut().zip(b) {
        *x = (*x).max(y);
    }
}

struct Dry {
    th: HashMap<ThreadId, Known>,
    prog: Progress,
    checks: std::collections::BTreeMap<ThreadId, Vec<Check>>,
    stats: PlusStats,
}

impl Dry {
    fn k(&mut self, t: ThreadId) -> &mut Known {
        self.th.entry(t).or_default()
    }
    /// Thread `t` learns that thread `u` completed event `g` (and all `u` knew then).
    fn learn(&mut self, t: ThreadId, u: ThreadId, g: u64) {
        if g == 0 {
            return;
        }
        let Some(ku) = self.th.get(&u).filter(|k| g <= k.n) else {
            return;
        };
        let p = ku.hist.partition_point(|(f, _)| *f <= g);
        let mut h = ku.hist[p - 1].1.clone();
        h[u as usize] = g;
        join(&mut self.k(t).kn, &h);
    }
    fn last(&self, u: ThreadId) -> u64 {
        self.th.get(&u).map_or(0, |k| k.n)
    }
    /// Events of other threads that `c`, holding, guarantees complete.
    fn guarantees(&self, c: &Cond) -> Vec<(ThreadId, u64)> {
        let begin = |u: ThreadId, tr: u64| -> u64 {
            if tr == 0 {
                return 0;
            }
            self.th
                .get(&u)
                .and_then(|k| k.begin.get(tr as usize))
                .unwrap_or_else(|| self.last(u))
        };
        match c {
            Cond::D(i) => vec![(i.src, begin(i.src, i.src_id))],
            Cond::B(i) => vec![(i.src, begin(i.src, i.src_id + 1))],
            Cond::A(i) | Cond::Edge(i) => vec![(i.src, i.src_id.min(self.last(i.src)))],
            Cond::Rw(r) => {
                r.rc.iter()
                    .enumerate()
                    .filter(|&(_, &n)| n > 0)
                    .map(|(u, &n)| {
                        let u = u as ThreadId;
                        let g = self
                            .th
                            .get(&u)
                            .and_then(|k| k.read_at.get(n as usize - 1))
                            .unwrap_or(0);
                        (u, g)
                    })
                    .collect()
            }
        }
    }
    fn assign(&mut self, t: ThreadId, k: u64, seed_at: u64, cond: Cond) {
        for (u, g) in self.guarantees(&cond) {
            self.learn(t, u, g);
        }
        self.checks.entry(t).or_default().push(Check {
            at: k,
            seed_at,
            cond,
        });
    }
}

/// The dry run (see the module docs of `plus`): one pass over the recorded order; for each event
/// its steps (the seed's records due, program order, conflicts, publishing the event) run in this
/// order on the pass's shared state.
pub(super) fn dry_run(
    seed: TplayLog,
    trace: impl Iterator<Item = (Option<Op>, ThreadId)>,
    without: Option<Added>,
) -> TplayPlusLog {
    let mut q = Queues::of(&seed);
    let mut d = Dry {
        th: HashMap::default(),
        prog: Progress::default(),
        checks: Default::default(),
        stats: PlusStats::default(),
    };
    let mut locs = LocState::default();
    let mut rel: HashMap<LockId, (ThreadId, u64)> = HashMap::default();
    for (op, t) in trace {
        let Some(op) = op else {
            d.prog.exit(t);
            continue;
        };
        let k = d.last(t) + 1;
        let i = t as usize;
        let tr = d.prog.tr.get(i).copied().unwrap_or(0);
        let psi = d.prog.psi.get(i).copied().flatten();
        let cur = if op.is_write() && !matches!(psi, Some(Psi::Write)) {
            tr + 1
        } else {
            tr
        };
        let due = q
            .get_mut(&t)
            .map(|q| q.due(k, cur, &op))
            .unwrap_or_default();
        d.hand_seed(t, k, due, without);
        d.follow_program(&mut rel, t, k, op);
        if let Some(x) = op.loc() {
            d.follow_conflicts(&mut locs, x, t, k, op, without);
        }
        d.publish(t, k, op);
    }
    d.count_undelivered(&q);
    d.finish(seed)
}

impl Dry {
    /// The seed's records examined at event `k` of `t` (`due`), then the ones waiting for their
    /// due event: each one that holds becomes a check, the others keep waiting.
    fn hand_seed(&mut self, t: ThreadId, k: u64, due: Vec<Cond>, without: Option<Added>) {
        let mut waiting = std::mem::take(&mut self.k(t).deferred);
        for c in due {
            if without == Some(Added::DueEvent) {
                self.assign(t, k, k, c);
            } else {
                waiting.push((k, c));
            }
        }
        let mut still = Vec::new();
        for (seed_at, c) in waiting {
            if self.prog.holds(&c) {
                if seed_at != k {
                    self.stats.late[kind(&c)] += 1;
                }
                self.assign(t, k, seed_at, c);
            } else {
                still.push((seed_at, c));
            }
        }
        self.k(t).deferred = still;
    }

    /// Program semantics that order event `k` of `t`: the lock's last release, a joined thread.
    fn follow_program(
        &mut self,
        rel: &mut HashMap<LockId, (ThreadId, u64)>,
        t: ThreadId,
        k: u64,
        op: Op,
    ) {
        match op {
            Op::Acquire(m) => {
                if let Some(&(u, g)) = rel.get(&m) {
                    if u != t {
                        self.learn(t, u, g);
                    }
                }
            }
            Op::Join(u) => {
                let g = self.last(u);
                self.learn(t, u, g);
            }
            Op::Release(m) => {
                rel.insert(m, (t, k));
            }
            _ => {}
        }
    }

    /// Conflicts on location `x`: the sources event `k` of `t` must follow and does not know of
    /// become edges; then `k` becomes the location's last write or one of its readers.
    fn follow_conflicts(
        &mut self,
        locs: &mut LocState,
        x: Loc,
        t: ThreadId,
        k: u64,
        op: Op,
        without: Option<Added>,
    ) {
        let mut src: Vec<(ThreadId, u64, usize)> = Vec::new();
        if let Some(&(u, g)) = locs.last_w.get(&x) {
            if u != t {
                src.push((u, g, if op.is_write() { 0 } else { 1 }));
            }
        }
        if op.is_write() {
            if let Some(r) = locs.readers.get(&x) {
                src.extend(r.iter().filter(|s| s.0 != t).map(|&(u, g)| (u, g, 2)));
            }
        }
        for (u, g, kind) in src {
            let kn = self.k(t).kn.get(u as usize).copied().unwrap_or(0);
            if kn >= g {
                continue;
            }
            let off = match kind {
                0 => Added::WriteWrite,
                1 => Added::WriteRead,
                _ => Added::ReadWrite,
            };
            if without == Some(off) {
                continue;
            }
            self.stats.edges[kind] += 1;
            self.assign(t, k, k, Cond::Edge(Inter::new(u, g, t, k)));
        }
        if op.is_write() {
            locs.last_w.insert(x, (t, k));
            locs.readers.entry(x).or_default().clear();
        } else {
            let r = locs.readers.entry(x).or_default();
            r.retain(|s| s.0 != t);
            r.push((t, k));
        }
    }

    /// Event `k` of `t` is complete: publish it (its knowledge, transaction start, read, and a
    /// forked child's initial knowledge).
    fn publish(&mut self, t: ThreadId, k: u64, op: Op) {
        let i = t as usize;
        let begins = self.prog.step(t, &op);
        let kt = self.k(t);
        if kt.kn.len() <= i {
            kt.kn.resize(i + 1, 0);
        }
        kt.kn[i] = k;
        kt.n = k;
        let same = kt.hist.last().is_some_and(|(_, h)| {
            (0..h.len().max(kt.kn.len()))
                .all(|u| u == i || h.get(u).unwrap_or(&0) == kt.kn.get(u).unwrap_or(&0))
        });
        if !same {
            let snap = kt.kn.clone();
            kt.hist.push((k, snap));
        }
        if kt.begin.is_empty() {
            kt.begin.push(0);
        }
        if begins {
            kt.begin.push(k);
        }
        if op.is_read() {
            kt.read_at.push(k);
        }
        if let Op::Fork(c) = op {
            let kn = self.k(t).kn.clone();
            self.k(c).kn = kn;
        }
    }

    /// After the pass: count the seed's records never handed out as dropped.
    fn count_undelivered(&mut self, q: &HashMap<ThreadId, Queues>) {
        for q in q.values() {
            for (k, n) in [q.d.len(), q.rw.len(), q.a.len(), q.b.len()]
                .into_iter()
                .enumerate()
            {
                self.stats.dropped[k] += n as u64;
            }
        }
    }

    /// Then count the records still waiting as dropped, and sort every thread's checks by event.
    fn finish(mut self, seed: TplayLog) -> TplayPlusLog {
        for k in self.th.values() {
            for (_, c) in &k.deferred {
                self.stats.dropped[kind(c)] += 1;
            }
        }
        for v in self.checks.values_mut() {
            v.sort_by_key(|c| c.at);
        }
        TplayPlusLog {
            checks: self.checks,
            l: seed.l.clone(),
            seed,
            stats: self.stats,
        }
    }
}

//! AggrePlay's record-side state keyed by location or lock ([`AggLocs`]): one record per
//! location holding everything algorithm 1 keeps of it (`W_x`, whose last entry is the last
//! write of `x`; `WR_x` split by reading thread; the read counts `RC_t.x`), found by one hash
//! look-up per event, which also gives the event's version (the length of `W_x` or `L_m`).

use crate::aggreplay::{AggrePlayLog, ExEntry};
use crate::event::{EventId, Loc, LockId, Op, ThreadId};
use rustc_hash::FxHashMap as HashMap;

/// What AggrePlay records of one location `x`.
#[derive(Clone, Debug, Default)]
struct LocRec {
    /// `W_x`; its last entry is the last write of `x`.
    w: Vec<EventId>,
    /// `WR_x` split by reading thread (ascending), each part in the reader's program order: the
    /// canonical order of the log is their concatenation.
    wr: Vec<(ThreadId, Vec<(EventId, EventId)>)>,
    /// `RC_t.x[t]`: each thread's own read count of `x`, by thread.
    own: Vec<u32>,
    /// `RC_t.x` of each thread `t` that wrote `x`: the other threads' counts as its last write
    /// refreshed them (entry `t` unused: it is `own[t]`).
    rows: Vec<(ThreadId, Vec<u32>)>,
}

fn get(v: &[u32], t: usize) -> u32 {
    v.get(t).copied().unwrap_or(0)
}

impl LocRec {
    fn row(&mut self, t: ThreadId) -> &mut Vec<u32> {
        let i = match self.rows.iter().position(|r| r.0 == t) {
            Some(i) => i,
            None => {
                self.rows.push((t, Vec::new()));
                self.rows.len() - 1
            }
        };
        &mut self.rows[i].1
    }

    fn wr_of(&mut self, t: ThreadId) -> &mut Vec<(EventId, EventId)> {
        let i = match self.wr.iter().position(|r| r.0 >= t) {
            Some(i) if self.wr[i].0 == t => i,
            Some(i) => {
                self.wr.insert(i, (t, Vec::new()));
                i
            }
            None => {
                self.wr.push((t, Vec::new()));
                self.wr.len() - 1
            }
        };
        &mut self.wr[i].1
    }
}

/// The part of AggrePlay's recorder keyed by location (`W_x`, `WR_x`, `RC_t.x`, the last
/// write of `x`) or by lock (`L_m`). Each event touches only its own location's (or lock's)
/// entries, so a recorder on real threads runs one `AggLocs` per stripe of locations, each
/// updated at the access's turn on its stripe, with the per-thread part (counters, `EX_t`) in
/// each thread: the same log as one sequential recorder fed the same events in an order that
/// agrees with every location's and every lock's order (which is all the log records).
#[derive(Clone, Debug, Default)]
pub struct AggLocs {
    locs: HashMap<Loc, LocRec>,
    l: HashMap<LockId, Vec<ThreadId>>,
}

impl AggLocs {
    /// Write (or RMW) `e` of `x` while `nthreads` threads are known: updateReadVectors
    /// (lines 20-25) with O1/O2; the thread's `EX_t` entry and the length of `W_x` after it.
    pub fn write(&mut self, e: EventId, x: Loc, nthreads: u32) -> (ExEntry, u64) {
        let t = e.thread;
        let r = self.locs.entry(x).or_default();
        let own = std::mem::take(&mut r.own);
        let row = r.row(t);
        let mut changed = false;
        for (u, &n) in own.iter().enumerate().take(nthreads as usize) {
            if u != t as usize && n > 0 && get(row, u) != n {
                if row.len() <= u {
                    row.resize(u + 1, 0);
                }
                row[u] = n;
                changed = true;
            }
        }
        let entry = if changed {
            let mut v = row.clone();
            v.resize(nthreads as usize, 0);
            v[t as usize] = get(&own, t as usize);
            ExEntry::Rc(v, e)
        } else {
            ExEntry::Null
        };
        r.own = own;
        r.w.push(e);
        (entry, r.w.len() as u64)
    }

    /// Read `e` of `x`; the length of `W_x` (the place of the write it reads).
    pub fn read(&mut self, e: EventId, x: Loc) -> u64 {
        let t = e.thread;
        let r = self.locs.entry(x).or_default();
        if r.own.len() <= t as usize {
            r.own.resize(t as usize + 1, 0);
        }
        r.own[t as usize] += 1;
        if let Some(&lw) = r.w.last() {
            if lw.thread != t {
                r.wr_of(t).push((lw, e));
            }
        }
        r.w.len() as u64
    }

    /// Thread `t` acquired lock `m`; the length of `L_m` after it.
    pub fn acquire(&mut self, t: ThreadId, m: LockId) -> u64 {
        let l = self.l.entry(m).or_default();
        l.push(t);
        l.len() as u64
    }

    /// Writes (and RMWs) of `x` so far: the place of the last one in `W_x`, which a read
    /// after it reads (an order-bearing key a faithful replay reproduces).
    pub fn writes_of(&self, x: Loc) -> u64 {
        self.locs.get(&x).map_or(0, |r| r.w.len() as u64)
    }

    /// Acquisitions of `m` so far (the length of `L_m`).
    pub fn acquisitions_of(&self, m: LockId) -> u64 {
        self.l.get(&m).map_or(0, |v| v.len() as u64)
    }

    /// The version of `op`'s object: [`AggLocs::writes_of`] a location,
    /// [`AggLocs::acquisitions_of`] a lock, 0 for a thread.
    pub fn version(&self, op: &Op) -> u64 {
        match *op {
            Op::Read(x) | Op::Write(x) | Op::Rmw(x) => self.writes_of(x),
            Op::Acquire(m) | Op::Release(m) => self.acquisitions_of(m),
            Op::Fork(_) | Op::Join(_) => 0,
        }
    }

    /// Move this part's lists into `log` (then finished by [`finish_log`]); `WR_x` in
    /// canonical order (by reading thread, then program order).
    pub fn drain_into(&mut self, log: &mut AggrePlayLog) {
        for (x, r) in self.locs.drain() {
            if !r.w.is_empty() {
                log.w.insert(x, r.w);
            }
            if !r.wr.is_empty() {
                let n = r.wr.iter().map(|p| p.1.len()).sum();
                let mut wr = Vec::with_capacity(n);
                for (_, v) in r.wr {
                    wr.extend(v);
                }
                log.wr.insert(x, wr);
            }
        }
        log.l.extend(self.l.drain());
    }
}

/// Put a log assembled from [`AggLocs`] parts and per-thread `EX_t` lists in its final form.
/// `WR_x` is in canonical order: by reading thread, then program order. Reads of different
/// threads between the same two writes are concurrent (their interleaving is not part of the
/// execution AggrePlay reproduces, and the replayer splits `WR_x` by reading thread), so a
/// faithful replay re-records the same log byte for byte. Threads unknown when a vector was
/// recorded had read nothing: vectors are padded with zeros to `nthreads`.
pub fn finish_log(log: &mut AggrePlayLog, nthreads: u32) {
    for v in log.ex.values_mut() {
        for e in v {
            if let ExEntry::Rc(rc, _) = e {
                rc.resize(nthreads as usize, 0);
            }
        }
    }
}

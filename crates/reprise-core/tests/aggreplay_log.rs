//! AggrePlay's recorder produces, byte for byte, the log of the straightforward reading of
//! algorithm 1 kept here as the reference (one hash map per list, `RC_t.x` keyed by (t, x),
//! `WR_x` sorted by (reading thread, index) at the end, postcard), on random event sequences:
//! the recorder's own encoder writes the same bytes postcard writes for the reference's log.

use reprise_core::aggreplay::{AggrePlay, AggrePlayLog, AggrePlayRecorder, ExEntry};
use reprise_core::{binlog, Event, EventId, Loc, LockId, Op, Recorder, Strategy, ThreadId};
use std::collections::HashMap;

#[derive(Default)]
struct Reference {
    log: AggrePlayLog,
    counter: HashMap<ThreadId, u64>,
    nthreads: u32,
    rc: HashMap<(ThreadId, Loc), Vec<u32>>,
    last_write: HashMap<Loc, EventId>,
    versions: Vec<u64>,
}

fn get(v: &[u32], t: usize) -> u32 {
    v.get(t).copied().unwrap_or(0)
}

fn slot(v: &mut Vec<u32>, t: ThreadId) -> &mut u32 {
    if v.len() <= t as usize {
        v.resize(t as usize + 1, 0);
    }
    &mut v[t as usize]
}

impl Reference {
    fn own(&self, t: ThreadId, x: Loc) -> u32 {
        self.rc.get(&(t, x)).map_or(0, |v| get(v, t as usize))
    }

    fn observe(&mut self, t: ThreadId, op: Op) {
        self.nthreads = self.nthreads.max(t + 1);
        let c = self.counter.entry(t).or_insert(0);
        *c += 1;
        let e = EventId::new(t, *c);
        match op {
            Op::Write(x) | Op::Rmw(x) => {
                let others: Vec<(ThreadId, u32)> = (0..self.nthreads)
                    .filter(|&u| u != t)
                    .map(|u| (u, self.own(u, x)))
                    .collect();
                let rc = self.rc.entry((t, x)).or_default();
                let mut changed = false;
                for (u, n) in others {
                    if n > 0 && get(rc, u as usize) != n {
                        *slot(rc, u) = n;
                        changed = true;
                    }
                }
                let entry = if changed {
                    let mut v = rc.clone();
                    v.resize(self.nthreads as usize, 0);
                    ExEntry::Rc(v, e)
                } else {
                    ExEntry::Null
                };
                self.log.ex.entry(t).or_default().push(entry);
                self.log.w.entry(x).or_default().push(e);
                self.last_write.insert(x, e);
            }
            Op::Read(x) => {
                *slot(self.rc.entry((t, x)).or_default(), t) += 1;
                if let Some(&lw) = self.last_write.get(&x) {
                    if lw.thread != t {
                        self.log.wr.entry(x).or_default().push((lw, e));
                    }
                }
            }
            Op::Acquire(m) => self.log.l.entry(m).or_default().push(t),
            Op::Fork(u) => self.nthreads = self.nthreads.max(u + 1),
            Op::Release(_) | Op::Join(_) => {}
        }
        self.versions.push(match op {
            Op::Read(x) | Op::Write(x) | Op::Rmw(x) => {
                self.log.w.get(&x).map_or(0, |v| v.len() as u64)
            }
            Op::Acquire(m) | Op::Release(m) => self.log.l.get(&m).map_or(0, |v| v.len() as u64),
            Op::Fork(_) | Op::Join(_) => 0,
        });
    }

    fn finish(mut self) -> AggrePlayLog {
        for v in self.log.wr.values_mut() {
            v.sort_unstable_by_key(|&(_, e)| (e.thread, e.index));
        }
        for v in self.log.ex.values_mut() {
            for e in v {
                if let ExEntry::Rc(rc, _) = e {
                    rc.resize(self.nthreads as usize, 0);
                }
            }
        }
        self.log
    }
}

/// A random sequence: `threads` threads (each forked by thread 0 before its first event, or
/// not), `locs` locations and two locks.
fn events(seed: u64, n: usize, threads: u32, locs: u64) -> Vec<(ThreadId, Op)> {
    let mut s = seed;
    let mut next = || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        s >> 33
    };
    let mut out = Vec::new();
    let mut started = vec![false; threads as usize];
    started[0] = true;
    for _ in 0..n {
        let t = (next() % threads as u64) as ThreadId;
        if !started[t as usize] {
            started[t as usize] = true;
            if next() % 2 == 0 {
                out.push((0, Op::Fork(t)));
            }
        }
        let x: Loc = 0x1000 + next() % locs;
        let m: LockId = 0x9000 + next() % 2;
        let op = match next() % 10 {
            0..=4 => Op::Read(x),
            5..=6 => Op::Write(x),
            7 => Op::Rmw(x),
            8 => Op::Acquire(m),
            _ => Op::Release(m),
        };
        out.push((t, op));
    }
    out
}

/// Feed `evs` to a new reference and a new recorder, event by event; `after` sees the recorder
/// and the operation after each.
fn feed_both(
    evs: &[(ThreadId, Op)],
    mut after: impl FnMut(&AggrePlayRecorder, Op),
) -> (Reference, AggrePlayRecorder) {
    let mut reference = Reference::default();
    let mut rec = AggrePlay.recorder();
    for &(t, op) in evs {
        reference.observe(t, op);
        rec.observe(&Event {
            thread: t,
            op,
            value: 0,
        });
        after(&rec, op);
    }
    (reference, rec)
}

#[test]
fn recorder_log_equals_the_reference() {
    for seed in 0..400u64 {
        let threads = 1 + (seed % 6) as u32;
        let evs = events(seed, 20 + (seed as usize * 7) % 400, threads, 1 + seed % 9);
        let mut versions = Vec::new();
        let (reference, rec) = feed_both(&evs, |rec, op| {
            versions.push(rec.last_version());
            assert_eq!(rec.locs().version(&op), rec.last_version(), "seed {seed}");
        });
        assert_eq!(versions, reference.versions, "seed {seed}");
        let want = binlog::encode(&reference.finish()).unwrap();
        assert_eq!(rec.encode(), want, "seed {seed}");
        let got = binlog::encode(&rec.finish()).unwrap();
        assert_eq!(got, want, "seed {seed}");
    }
}

/// Logs longer than the encoder's pieces (64 KiB), with lists longer than a piece (2
/// locations) and many short ones (40).
#[test]
fn a_long_log_in_pieces_equals_the_reference() {
    for locs in [2, 40] {
        let evs = events(99, 200_000, 4, locs);
        let (reference, rec) = feed_both(&evs, |_, _| {});
        let want = binlog::encode(&reference.finish()).unwrap();
        assert!(want.len() > 4 << 16, "{} bytes: several pieces", want.len());
        assert_eq!(rec.encode(), want, "{locs} locations");
    }
}

//! The first recorded relation a simulated replay breaks, shared by the `classify` and
//! `tplay_by_size` examples: walking the replay's schedule, the first access whose location
//! epoch, or acquisition whose lock rank, differs from the recording's (write→write,
//! write→read, read→write on one location, or the lock order); on the split substrate also
//! whether the source's callback came before the sink's (the relation held at the callback
//! but not at the access).

use reprise_core::sim::{Observation, POp, Program, Substrate};
use std::collections::HashMap;

/// A broken relation: its kind, and whether it held at the callbacks (split substrate only).
pub struct Violation {
    pub kind: &'static str,
    pub at_callback: bool,
}

// Each example words it one way: the other's method is unused there.
#[allow(dead_code)]
impl Violation {
    /// `classify`'s wording.
    pub fn label(&self) -> String {
        if self.at_callback {
            format!("{}: held at the callback, not at the access", self.kind)
        } else {
            format!("{} not enforced", self.kind)
        }
    }

    /// `tplay_by_size`'s: the kind, "cb" after it when it held at the callbacks.
    pub fn short(&self) -> String {
        if self.at_callback {
            format!("{} cb", self.kind)
        } else {
            self.kind.to_string()
        }
    }
}

/// An operation: (program thread, op index).
type OpId = (usize, usize);

/// The recorded relations, indexed for [`first_violation`].
#[derive(Default)]
struct Recorded {
    /// Of each access: location, writes to it before the access, whether it writes.
    epoch: HashMap<OpId, (u64, usize, bool)>,
    /// Writes of each location in order.
    writes: HashMap<u64, Vec<OpId>>,
    /// Reads of each (location, epoch).
    reads: HashMap<(u64, usize), Vec<OpId>>,
    /// Acquiring op of each (lock, rank).
    acquirer: HashMap<(u64, usize), OpId>,
}

impl Recorded {
    fn new(prog: &Program, rec: &Observation) -> Self {
        let mut r = Recorded::default();
        for (&x, v) in &rec.locs {
            let mut w = 0;
            for a in v {
                r.epoch.insert((a.thread, a.index), (x, w, a.write));
                if a.write {
                    r.writes.entry(x).or_default().push((a.thread, a.index));
                    w += 1;
                } else {
                    r.reads.entry((x, w)).or_default().push((a.thread, a.index));
                }
            }
        }
        let mut pc = vec![0usize; prog.threads.len()];
        let mut rank: HashMap<u64, usize> = HashMap::new();
        for &p in &rec.schedule {
            let i = pc[p];
            pc[p] += 1;
            if let POp::Acquire(m) = prog.threads[p][i] {
                let k = rank.entry(m).or_default();
                r.acquirer.insert((m, *k), (p, i));
                *k += 1;
            }
        }
        r
    }
}

/// The first recorded relation the replay `rep` of recording `rec` breaks.
pub fn first_violation(
    prog: &Program,
    rec: &Observation,
    rep: &Observation,
    sub: Substrate,
) -> Option<Violation> {
    let Recorded {
        epoch,
        writes,
        reads,
        acquirer,
    } = Recorded::new(prog, rec);
    let mut steps = vec![0usize; prog.threads.len()];
    let mut callback: HashMap<OpId, usize> = HashMap::new();
    let mut done: HashMap<OpId, ()> = HashMap::new();
    let mut count: HashMap<u64, usize> = HashMap::new();
    let mut acq: HashMap<u64, usize> = HashMap::new();
    for (n, &p) in rep.schedule.iter().enumerate() {
        let s = steps[p];
        steps[p] += 1;
        let (i, access) = match sub {
            Substrate::Atomic => (s, true),
            Substrate::Split => (s / 2, s % 2 == 1),
        };
        callback.entry((p, i)).or_insert(n);
        if !access {
            continue;
        }
        let me = (p, i);
        let broken = match prog.threads[p][i] {
            POp::Read(_) | POp::Write(_) | POp::Rmw(_) => {
                let (x, w_rec, write) = epoch[&me];
                let c = count.get(&x).copied().unwrap_or(0);
                if c < w_rec {
                    let kind = if write { "W->W" } else { "W->R" };
                    Some((kind, writes[&x][w_rec - 1]))
                } else if let Some(r) = reads
                    .get(&(x, w_rec))
                    .filter(|_| write)
                    .and_then(|v| v.iter().find(|r| **r != me && !done.contains_key(*r)))
                {
                    Some(("R->W", *r))
                } else {
                    if write {
                        *count.entry(x).or_default() += 1;
                    }
                    None
                }
            }
            POp::Acquire(m) => {
                let k = acq.entry(m).or_default();
                let src = acquirer[&(m, *k)];
                *k += 1;
                (src.0 != p).then_some(("lock order", src))
            }
            _ => None,
        };
        if let Some((kind, src)) = broken {
            let cb =
                sub == Substrate::Split && callback.get(&src).is_some_and(|&c| c < callback[&me]);
            return Some(Violation {
                kind,
                at_callback: cb,
            });
        }
        done.insert(me, ());
    }
    None
}

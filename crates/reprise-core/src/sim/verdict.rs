//! Comparing a replay with its recording, and counting outcomes over many random programs.

use super::{
    generate, record, replay, GenConfig, Observation, Program, RandomScheduler, Recording, Rng,
    Substrate,
};
use crate::strategy::Strategy;
use std::collections::BTreeMap;

/// How a replay compares with its recording.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Every thread reached its end (no deadlock, no identity mismatch).
    pub completed: bool,
    /// Every location saw exactly the recorded sequence of accesses (reads among themselves too).
    pub strict_order: bool,
    /// Same write-write, write-read and read-write relations on every location (each access sees
    /// the same number of earlier writes); orders among adjacent reads may differ.
    pub conflict_order: bool,
    /// Every value read is the recorded one.
    pub values: bool,
    /// Every lock was acquired in the recorded order.
    pub lock_order: bool,
}

impl Verdict {
    /// The replay reproduced every interleaving and every value: completed, same conflict order,
    /// same values.
    pub fn exact(&self) -> bool {
        self.completed && self.conflict_order && self.values
    }
}

fn epochs(o: &Observation) -> BTreeMap<(u64, usize, usize), (usize, bool)> {
    let mut out = BTreeMap::new();
    for (&x, v) in &o.locs {
        let mut w = 0;
        for a in v {
            out.insert((x, a.thread, a.index), (w, a.write));
            if a.write {
                w += 1;
            }
        }
    }
    out
}

/// Compare a replay with its recording.
pub fn compare(recorded: &Observation, replayed: &Observation) -> Verdict {
    let key = |o: &Observation| -> BTreeMap<u64, Vec<(usize, usize)>> {
        o.locs
            .iter()
            .map(|(&x, v)| (x, v.iter().map(|a| (a.thread, a.index)).collect()))
            .collect()
    };
    Verdict {
        completed: replayed.completed,
        strict_order: key(recorded) == key(replayed),
        conflict_order: epochs(recorded) == epochs(replayed),
        values: recorded.reads == replayed.reads,
        lock_order: recorded.locks == replayed.locks,
    }
}

/// Record `prog` under seed `rec_seed`, replay under `rep_seed`, compare.
pub fn run_case<S: Strategy>(
    s: &S,
    prog: &Program,
    rec_seed: u64,
    rep_seed: u64,
    substrate: Substrate,
) -> (Recording<S::Log>, Observation, Verdict) {
    let rec = record(s, prog, &mut RandomScheduler(Rng(rec_seed)));
    let obs = replay(
        s,
        prog,
        &rec,
        substrate,
        &mut RandomScheduler(Rng(rep_seed)),
    );
    let v = compare(&rec.obs, &obs);
    (rec, obs, v)
}

/// Aggregate of many simulated cases.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fidelity {
    /// Cases run.
    pub total: u64,
    /// Exact replays ([`Verdict::exact`]).
    pub exact: u64,
    /// Replays with the strict per-location order.
    pub strict: u64,
    /// Replays that deadlocked (did not complete).
    pub deadlocks: u64,
    /// Completed replays with a wrong value or conflict order.
    pub wrong: u64,
    /// Replays with a different lock order.
    pub lock_diff: u64,
    /// Sum of log sizes in bytes.
    pub log_bytes: u64,
    /// Sum of recorded events.
    pub events: u64,
}

/// Run `cases` random programs (program `i` from seed `seed + i`) and count the outcomes.
pub fn fidelity<S: Strategy>(
    s: &S,
    cfg: &GenConfig,
    substrate: Substrate,
    seed: u64,
    cases: u64,
) -> Fidelity {
    let mut f = Fidelity::default();
    for i in 0..cases {
        let mut rng = Rng(seed.wrapping_add(i).wrapping_mul(0x2545_F491_4F6C_DD1D));
        let prog = generate(&mut rng, cfg);
        let (rec, _obs, v) = run_case(s, &prog, rng.next_u64(), rng.next_u64(), substrate);
        f.total += 1;
        f.exact += v.exact() as u64;
        f.strict += (v.completed && v.strict_order && v.values) as u64;
        f.deadlocks += (!v.completed) as u64;
        f.wrong += (v.completed && !(v.conflict_order && v.values)) as u64;
        f.lock_diff += (v.completed && !v.lock_order) as u64;
        f.log_bytes += rec.size_bytes(s.logs_thread_table()) as u64;
        f.events += rec.events.len() as u64;
    }
    f
}

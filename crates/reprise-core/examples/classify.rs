//! Classifies every non-exact replay of `aggreplay` and `tplay` on 10,000 simulated programs per
//! substrate by its cause: the first access of the replay that breaks a recorded relation
//! (write→write, write→read, read→write on one location, or the lock order), whether the
//! callbacks of the two events were in the recorded order (split substrate: the relation held at
//! the callback but not at the access), and for TPLAY's deadlocks which seed records the seed
//! checks before their condition holds (from `tplay+`'s dry run of the same recording).
//!
//! `cargo run -p reprise-core --release --example classify [cases]`

use reprise_core::aggreplay::AggrePlay;
use reprise_core::sim::{
    generate, record, run_case, GenConfig, Observation, POp, Program, RandomScheduler, Rng,
    Substrate,
};
use reprise_core::tplay::{Tplay, TplayPlus};
use reprise_core::Strategy;
use std::collections::{BTreeMap, HashMap};

/// A broken relation: kind, source (thread, op index), sink (thread, op index).
type Violation = (&'static str, (usize, usize), (usize, usize));

/// The first broken relation of the replay.
fn first_violation(
    prog: &Program,
    rec: &Observation,
    rep: &Observation,
    sub: Substrate,
) -> Option<Violation> {
    // Recorded epoch of each access, the writes and the reads of each epoch per location.
    let mut epoch: HashMap<(usize, usize), (u64, usize, bool)> = HashMap::new();
    let mut writes: HashMap<u64, Vec<(usize, usize)>> = HashMap::new();
    let mut reads: HashMap<(u64, usize), Vec<(usize, usize)>> = HashMap::new();
    for (&x, v) in &rec.locs {
        let mut w = 0;
        for a in v {
            epoch.insert((a.thread, a.index), (x, w, a.write));
            if a.write {
                writes.entry(x).or_default().push((a.thread, a.index));
                w += 1;
            } else {
                reads.entry((x, w)).or_default().push((a.thread, a.index));
            }
        }
    }
    let mut steps = vec![0usize; prog.threads.len()];
    let mut callback: HashMap<(usize, usize), usize> = HashMap::new();
    let mut done: HashMap<(usize, usize), bool> = HashMap::new();
    let mut count: HashMap<u64, usize> = HashMap::new();
    let mut acq: HashMap<u64, usize> = HashMap::new();
    for (n, &p) in rep.schedule.iter().enumerate() {
        let s = steps[p];
        steps[p] += 1;
        let (i, access) = match sub {
            Substrate::Atomic => (s, true),
            Substrate::Split => (s / 2, s % 2 == 1),
        };
        if !access {
            callback.insert((p, i), n);
            continue;
        }
        callback.entry((p, i)).or_insert(n);
        let me = (p, i);
        match prog.threads[p][i] {
            POp::Read(_) | POp::Write(_) | POp::Rmw(_) => {
                let (x, w_rec, write) = epoch[&me];
                let c = count.get(&x).copied().unwrap_or(0);
                if c < w_rec {
                    let src = writes[&x][w_rec - 1];
                    return Some((if write { "W->W" } else { "W->R" }, src, me));
                }
                if write {
                    if let Some(r) = reads
                        .get(&(x, w_rec))
                        .and_then(|v| v.iter().find(|r| **r != me && !done.contains_key(*r)))
                    {
                        return Some(("R->W", *r, me));
                    }
                    *count.entry(x).or_default() += 1;
                }
            }
            POp::Acquire(m) => {
                let k = acq.entry(m).or_default();
                let want = rec.locks[&m][*k];
                *k += 1;
                if want != p {
                    let src = (want, nth_acquire(prog, rec, m, *k - 1));
                    return Some(("lock order", src, me));
                }
            }
            _ => {}
        }
        done.insert(me, true);
        let _ = &callback;
    }
    None
}

/// Op index of the `n`-th acquisition of `m` in the recording.
fn nth_acquire(prog: &Program, rec: &Observation, m: u64, n: usize) -> usize {
    let mut pc = vec![0usize; prog.threads.len()];
    let mut seen = 0;
    for &p in &rec.schedule {
        let i = pc[p];
        pc[p] += 1;
        if prog.threads[p][i] == POp::Acquire(m) {
            if seen == n {
                return i;
            }
            seen += 1;
        }
    }
    0
}

fn label(
    kind: &str,
    src: (usize, usize),
    sink: (usize, usize),
    rep: &Observation,
    sub: Substrate,
) -> String {
    if sub == Substrate::Atomic {
        return format!("{kind} not enforced");
    }
    // Split: did the source's callback come before the sink's?
    let pos = |t: (usize, usize)| -> Option<usize> {
        let mut s = 0;
        for (n, &p) in rep.schedule.iter().enumerate() {
            if p == t.0 {
                if s == 2 * t.1 {
                    return Some(n);
                }
                s += 1;
            }
        }
        None
    };
    match (pos(src), pos(sink)) {
        (Some(a), Some(b)) if a < b => format!("{kind}: held at the callback, not at the access"),
        _ => format!("{kind} not enforced"),
    }
}

type Table = BTreeMap<String, (u64, Option<(usize, String)>)>;

fn classify<S: Strategy>(s: &S, sub: Substrate, cases: u64, tplay: bool) -> Table {
    let cfg = GenConfig::default();
    let mut t: Table = BTreeMap::new();
    let mut early: BTreeMap<&str, u64> = BTreeMap::new();
    let mut then_dead: BTreeMap<String, u64> = BTreeMap::new();
    for i in 0..cases {
        let mut rng = Rng(1u64.wrapping_add(i).wrapping_mul(0x2545_F491_4F6C_DD1D));
        let prog = generate(&mut rng, &cfg);
        let (rs, ps) = (rng.next_u64(), rng.next_u64());
        let (rec, obs, v) = run_case(s, &prog, rs, ps, sub);
        if v.exact() && v.lock_order {
            continue;
        }
        let mut l = match first_violation(&prog, &rec.obs, &obs, sub) {
            Some((k, a, b)) => label(k, a, b, &obs, sub),
            None if !v.completed => "deadlock: a record checked before it holds".to_string(),
            None => "other".to_string(),
        };
        if tplay && !v.completed {
            let p = record(&TplayPlus::default(), &prog, &mut RandomScheduler(Rng(rs)));
            let mut any = false;
            for k in 0..4 {
                if p.log.stats.late[k] + p.log.stats.dropped[k] > 0 {
                    *early
                        .entry(["dSet", "rwSet", "aSet", "bSet"][k])
                        .or_default() += 1;
                    any = true;
                }
            }
            if !any {
                *early.entry("none").or_default() += 1;
            }
        }
        if !v.completed && !l.starts_with("deadlock") {
            *then_dead.entry(l.clone()).or_default() += 1;
        }
        if l == "other" {
            l = format!("other {v:?}");
        }
        let e = t.entry(l).or_insert((0, None));
        e.0 += 1;
        let n = prog.len();
        if e.1.as_ref().is_none_or(|(b, _)| n < *b) {
            e.1 = Some((
                n,
                format!(
                    "{:?} rec {rs} rep {ps} (rec sched {:?}, rep sched {:?})",
                    prog.threads, rec.obs.schedule, obs.schedule
                ),
            ));
        }
    }
    for (l, n) in then_dead {
        if let Some(e) = t.get_mut(&l) {
            e.1 =
                e.1.take()
                    .map(|(a, b)| (a, format!("{b}\n         ({n} of these then deadlock)")));
        }
    }
    if !early.is_empty() {
        t.insert(
            format!("(deadlocked replays whose recording has records the seed checks before they hold: {early:?})"),
            (0, None),
        );
    }
    t
}

fn main() {
    let cases: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000);
    for sub in [Substrate::Atomic, Substrate::Split] {
        for (name, t) in [
            ("aggreplay", classify(&AggrePlay, sub, cases, false)),
            ("tplay", classify(&Tplay, sub, cases, true)),
        ] {
            let total: u64 = t.values().map(|v| v.0).sum();
            println!("{name} {sub:?}: {total} of {cases} not exact");
            for (l, (n, ex)) in t {
                println!(
                    "  {n:>5}  {l}\n         e.g. {}",
                    ex.map(|e| e.1).unwrap_or_default()
                );
            }
        }
    }
}

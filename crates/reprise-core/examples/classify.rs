//! Classifies every non-exact replay of `aggreplay` and `tplay` on 10,000 simulated programs per
//! substrate by its cause: the first access of the replay that breaks a recorded relation
//! (write→write, write→read, read→write on one location, or the lock order), whether the
//! callbacks of the two events were in the recorded order (split substrate: the relation held at
//! the callback but not at the access), and for TPLAY's deadlocks which seed records the seed
//! checks before their condition holds (from `tplay+`'s dry run of the same recording).
//!
//! `cargo run -p reprise-core --release --example classify [cases]`

use reprise_core::aggreplay::AggrePlay;
use reprise_core::sim::{generate, record, run_case, GenConfig, RandomScheduler, Rng, Substrate};
use reprise_core::tplay::{Tplay, TplayPlus};
use reprise_core::Strategy;
use std::collections::BTreeMap;

mod violations;
use violations::first_violation;

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
            Some(v) => v.label(),
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

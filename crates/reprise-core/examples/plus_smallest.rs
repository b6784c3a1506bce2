//! The smallest program whose replay fails when one relation of `aggreplay+` or `tplay+` is
//! dropped (for the necessity tests of `tests/plus_variants.rs`).
//!
//! `cargo run -p reprise-core --release --example plus_smallest`

use reprise_core::aggreplay_plus::{AggrePlayPlus, Relation};
use reprise_core::sim::{generate, run_case, GenConfig, Rng, Substrate};
use reprise_core::tplay::{plus::Added, TplayPlus};
use reprise_core::Strategy;

fn search<S: Strategy>(s: &S, label: &str, sub: Substrate) {
    let mut best: Option<(usize, String)> = None;
    for segs in 1..=4 {
        for threads in 2..=3 {
            let cfg = GenConfig {
                max_threads: threads,
                locs: 2,
                locks: 1,
                max_segments: segs,
                rmw_pct: 10,
                lock_pct: 20,
            };
            for i in 0..20_000u64 {
                let mut rng = Rng(i.wrapping_mul(0x9E37) ^ (segs * 1000 + threads));
                let prog = generate(&mut rng, &cfg);
                let (rs, ps) = (rng.next_u64(), rng.next_u64());
                let (rec, obs, v) = run_case(s, &prog, rs, ps, sub);
                if v.exact() && v.lock_order {
                    continue;
                }
                let n = prog.len() * 1000 + obs.schedule.len();
                if best.as_ref().is_none_or(|(b, _)| n < *b) {
                    best = Some((
                        n,
                        format!(
                            "{label} {sub:?}: {} ops\n program {:?}\n rec {rs} rep {ps}\n record schedule {:?}\n replay schedule {:?}\n verdict {:?}",
                            prog.len(), prog.threads, rec.obs.schedule, obs.schedule, v
                        ),
                    ));
                }
            }
        }
    }
    match best {
        Some((_, b)) => println!("{b}\n"),
        None => println!("{label} {sub:?}: no failure\n"),
    }
}

fn main() {
    for sub in [Substrate::Atomic, Substrate::Split] {
        for r in [
            Relation::WriteWrite,
            Relation::WriteRead,
            Relation::ReadWrite,
            Relation::LockOrder,
        ] {
            search(
                &AggrePlayPlus { without: Some(r) },
                &format!("aggreplay+ without {r:?}"),
                sub,
            );
        }
        for a in [
            Added::DueEvent,
            Added::WriteWrite,
            Added::WriteRead,
            Added::AtAccess,
        ] {
            search(
                &TplayPlus { without: Some(a) },
                &format!("tplay+ without {a:?}"),
                sub,
            );
        }
    }
}

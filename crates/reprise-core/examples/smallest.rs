//! Searches small random programs for the smallest replay failure of each strategy and substrate
//! and prints it (program, recorded schedule, replay schedule), for the counter-example tests.
//!
//! `cargo run -p reprise-core --release --example smallest`

use reprise_core::aggreplay::AggrePlay;
use reprise_core::sim::{generate, run_case, GenConfig, Rng, Substrate};
use reprise_core::tplay::Tplay;
use reprise_core::Strategy;

fn search<S: Strategy>(s: &S, sub: Substrate, want_deadlock: Option<bool>) {
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
                if v.exact() {
                    continue;
                }
                if let Some(d) = want_deadlock {
                    if d == v.completed {
                        continue;
                    }
                }
                let n = prog.len();
                if best.as_ref().is_none_or(|(b, _)| n < *b) {
                    best = Some((
                        n,
                        format!(
                            "{} {:?}: {} ops\n program {:?}\n record schedule {:?}\n replay schedule {:?}\n verdict {:?}\n log {:?}\n recorded {:?}\n replayed {:?}",
                            s.name(), sub, n, prog.threads, rec.obs.schedule, obs.schedule, v, rec.log, rec.obs.locs, obs.locs
                        ),
                    ));
                }
            }
        }
    }
    if let Some((_, b)) = best {
        println!("{b}\n");
    }
}

fn main() {
    for sub in [Substrate::Atomic, Substrate::Split] {
        search(&AggrePlay, sub, Some(true));
        search(&AggrePlay, sub, Some(false));
        search(&Tplay, sub, Some(true));
        search(&Tplay, sub, Some(false));
    }
}

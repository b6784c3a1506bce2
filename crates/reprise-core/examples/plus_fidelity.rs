//! Fidelity of the seeds and their `+` variants. `cargo run -p reprise-core --release --example plus_fidelity [cases]`
use reprise_core::aggreplay::AggrePlay;
use reprise_core::aggreplay_plus::{AggrePlayPlus, Relation};
use reprise_core::sim::{fidelity, GenConfig, Substrate};
use reprise_core::tplay::{plus::Added, Tplay, TplayPlus};
use reprise_core::Strategy;

fn row<S: Strategy>(s: &S, cfg: &GenConfig, w: &str, sub: Substrate, cases: u64) {
    let f = fidelity(s, cfg, sub, 1, cases);
    println!(
        "{:<11} {w:<7} {:<7} exact {:>6}/{}  deadlock {:>5} wrong {:>5} lockdiff {:>4}  log {} B",
        s.name(),
        format!("{sub:?}"),
        f.exact,
        f.total,
        f.deadlocks,
        f.wrong,
        f.lock_diff,
        f.log_bytes
    );
}

fn main() {
    let cases: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000);
    let wide = GenConfig {
        max_threads: 6,
        locs: 5,
        locks: 2,
        max_segments: 8,
        rmw_pct: 20,
        lock_pct: 25,
    };
    for (w, cfg) in [("default", GenConfig::default()), ("wide", wide)] {
        for sub in [Substrate::Atomic, Substrate::Split] {
            row(&AggrePlay, &cfg, w, sub, cases);
            row(&AggrePlayPlus::default(), &cfg, w, sub, cases);
            row(&Tplay, &cfg, w, sub, cases);
            row(&TplayPlus::default(), &cfg, w, sub, cases);
            for a in [
                Added::DueEvent,
                Added::WriteWrite,
                Added::WriteRead,
                Added::ReadWrite,
                Added::AtAccess,
            ] {
                print!("  without {a:?}: ");
                row(&TplayPlus { without: Some(a) }, &cfg, w, sub, cases);
            }
            for r in [
                Relation::WriteWrite,
                Relation::WriteRead,
                Relation::ReadWrite,
                Relation::LockOrder,
            ] {
                print!("  without {r:?}: ");
                row(&AggrePlayPlus { without: Some(r) }, &cfg, w, sub, cases);
            }
        }
    }
}

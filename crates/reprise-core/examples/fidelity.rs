//! Prints the fidelity table: simulated programs replayed exactly, per strategy and substrate.
//!
//! `cargo run -p reprise-core --release --example fidelity [cases]`

use reprise_core::aggreplay::AggrePlay;
use reprise_core::leap::Leap;
use reprise_core::ownership::Ownership;
use reprise_core::sim::{fidelity, Fidelity, GenConfig, Substrate};
use reprise_core::tplay::Tplay;
use reprise_core::Strategy;

fn row<S: Strategy>(s: &S, name: &str, cfg: &GenConfig, sub: Substrate, cases: u64) {
    let f: Fidelity = fidelity(s, cfg, sub, 1, cases);
    println!(
        "{:<10} {:<7} {:>7}/{:<7} {:>6.1}%  strict {:>6.1}%  deadlock {:>5}  wrong {:>5}  lock-order-diff {:>5}  log {:>6.1} B/event",
        name,
        format!("{:?}", sub),
        f.exact,
        f.total,
        100.0 * f.exact as f64 / f.total as f64,
        100.0 * f.strict as f64 / f.total as f64,
        f.deadlocks,
        f.wrong,
        f.lock_diff,
        f.log_bytes as f64 / f.events.max(1) as f64
    );
}

fn main() {
    let cases: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000);
    let cfg = GenConfig::default();
    println!("simulated programs: {cases} per row, {:?}", cfg);
    println!("strategy   substrate exact/total    exact%   (strict: same order incl. read-read)");
    for sub in [Substrate::Atomic, Substrate::Split] {
        row(&Leap::default(), "leap", &cfg, sub, cases);
        row(&AggrePlay, "aggreplay", &cfg, sub, cases);
        row(&Tplay, "tplay", &cfg, sub, cases);
        row(&Ownership::default(), "ownership", &cfg, sub, cases);
    }
}

//! Searches small random programs for the smallest replay failure of each strategy and substrate
//! and prints it (program, recorded schedule, replay schedule), for the counter-example tests.
//!
//! `cargo run -p reprise-core --release --example smallest`

mod shared;

use reprise_core::aggreplay::AggrePlay;
use reprise_core::sim::Substrate;
use reprise_core::tplay::Tplay;
use reprise_core::Strategy;
use shared::smallest_failure;

/// Print the smallest failure of `s` on `sub`: a deadlocked replay (`want_deadlock`
/// Some(true)), a completed one (Some(false)), or either (None).
fn search<S: Strategy>(s: &S, sub: Substrate, want_deadlock: Option<bool>)
where
    S::Log: std::fmt::Debug,
{
    let best = smallest_failure(
        s,
        sub,
        |c| !c.v.exact() && want_deadlock.is_none_or(|d| d != c.v.completed),
        |c| c.prog.len(),
        |c| {
            format!(
                "{} {:?}: {} ops\n program {:?}\n record schedule {:?}\n replay schedule {:?}\n verdict {:?}\n log {:?}\n recorded {:?}\n replayed {:?}",
                s.name(), sub, c.prog.len(), c.prog.threads, c.rec.obs.schedule, c.obs.schedule, c.v, c.rec.log, c.rec.obs.locs, c.obs.locs
            )
        },
    );
    if let Some(b) = best {
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

//! The smallest program whose replay fails when one relation of `aggreplay+` or `tplay+` is
//! dropped (for the necessity tests of `tests/plus_variants.rs`).
//!
//! `cargo run -p reprise-core --release --example plus_smallest`

mod shared;

use reprise_core::aggreplay_plus::{AggrePlayPlus, Relation};
use reprise_core::sim::Substrate;
use reprise_core::tplay::{plus::Added, TplayPlus};
use reprise_core::Strategy;
use shared::smallest_failure;

/// Print the smallest failure of `s` (named `label`) on `sub`: a replay that is not exact or
/// that took the locks in another order; the shortest replay schedule among equal programs.
fn search<S: Strategy>(s: &S, label: &str, sub: Substrate) {
    let best = smallest_failure(
        s,
        sub,
        |c| !(c.v.exact() && c.v.lock_order),
        |c| c.prog.len() * 1000 + c.obs.schedule.len(),
        |c| {
            format!(
                "{label} {sub:?}: {} ops\n program {:?}\n rec {} rep {}\n record schedule {:?}\n replay schedule {:?}\n verdict {:?}",
                c.prog.len(), c.prog.threads, c.rec_seed, c.rep_seed, c.rec.obs.schedule, c.obs.schedule, c.v
            )
        },
    );
    match best {
        Some(b) => println!("{b}\n"),
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

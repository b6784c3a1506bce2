//! Property tests over thousands of random programs: every program, recorded under one random
//! interleaving, replayed under an adversarial random scheduler.
//!
//! - LEAP replays exactly (strict per-location order, values, lock order) on both substrates, also
//!   with striped vectors (Corollary 2 of seed 001).
//! - AggrePlay replays exactly on the atomic substrate. This is measured, not claimed by seed 000
//!   (which reports 86.8% on real programs under Pin); on the split substrate it is not exact (see
//!   `counterexamples.rs`).
//! - TPLAY is not exact on either substrate (see `counterexamples.rs`); its record side is checked
//!   for internal consistency instead.

use proptest::prelude::*;
use reprise_core::aggreplay::AggrePlay;
use reprise_core::leap::Leap;
use reprise_core::sim::{
    generate, record, run_case, GenConfig, Program, RandomScheduler, Rng, Substrate,
};
use reprise_core::tplay::Tplay;
use reprise_core::{Op, Recorder, Strategy};

fn program(seed: u64) -> Program {
    generate(&mut Rng(seed), &GenConfig::default())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn leap_replays_exactly(p in any::<u64>(), rs in any::<u64>(), ps in any::<u64>(), split in any::<bool>()) {
        let sub = if split { Substrate::Split } else { Substrate::Atomic };
        let (_, _, v) = run_case(&Leap::default(), &program(p), rs, ps, sub);
        prop_assert!(v.completed && v.strict_order && v.values && v.lock_order, "{:?}", v);
    }

    #[test]
    fn aggreplay_replays_exactly_on_atomic_substrate(p in any::<u64>(), rs in any::<u64>(), ps in any::<u64>()) {
        let (_, _, v) = run_case(&AggrePlay, &program(p), rs, ps, Substrate::Atomic);
        prop_assert!(v.exact() && v.lock_order, "{:?}", v);
    }

    #[test]
    fn tplay_record_side_is_consistent(p in any::<u64>(), rs in any::<u64>()) {
        let prog = program(p);
        let rec = record(&Tplay, &prog, &mut RandomScheduler(Rng(rs)));
        // Recording is a function of the event sequence.
        let mut again = Tplay.recorder();
        for e in &rec.events { again.observe(e); }
        // (thread exits only matter for joins' clocks; replay the observable part)
        let log2 = again.finish();
        prop_assert_eq!(&log2.rwset, &rec.log.rwset);
        // At least one bSet record per violation (one per violating source transaction; the
        // statistics count one violation per transaction), at most one aSet record per bSet one.
        let b: usize = rec.log.bset.values().map(|v| v.len()).sum();
        let a: usize = rec.log.aset.values().map(|v| v.len()).sum();
        prop_assert!(b as u64 >= rec.log.stats.violations);
        prop_assert!(a <= b);
        prop_assert_eq!(b == 0, rec.log.stats.violations == 0);
        // Transactions = writes that are a thread's first memory write or follow a read.
        let mut last: std::collections::HashMap<u32, bool> = Default::default();
        let mut tx = 0;
        for e in &rec.events {
            if e.op.is_write() {
                if !matches!(last.get(&e.thread), Some(true)) { tx += 1; }
                last.insert(e.thread, true);
            } else if let Op::Read(_) = e.op {
                last.insert(e.thread, false);
            }
        }
        prop_assert_eq!(tx, rec.log.stats.transactions);
        // No self-interleavings.
        for v in rec.log.dset.values().chain(rec.log.aset.values()).chain(rec.log.bset.values()) {
            for i in v { prop_assert!(i.src != i.sink); }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn leap_striped_replays_exactly(p in any::<u64>(), rs in any::<u64>(), ps in any::<u64>(), n in 1u64..3) {
        let leap = Leap { stripes: Some(n) };
        let (_, _, v) = run_case(&leap, &program(p), rs, ps, Substrate::Split);
        prop_assert!(v.completed && v.strict_order && v.values && v.lock_order, "{:?}", v);
    }

    #[test]
    fn replay_of_any_strategy_never_mismatches_thread_identity(p in any::<u64>(), rs in any::<u64>(), ps in any::<u64>()) {
        // Wider fork trees: children fork children; the <a,b> matching must name them all.
        let cfg = GenConfig { max_threads: 6, ..GenConfig::default() };
        let prog = generate(&mut Rng(p), &cfg);
        for sub in [Substrate::Atomic, Substrate::Split] {
            let (_, o1, _) = run_case(&Leap::default(), &prog, rs, ps, sub);
            let (_, o2, _) = run_case(&AggrePlay, &prog, rs, ps, sub);
            let (_, o3, _) = run_case(&Tplay, &prog, rs, ps, sub);
            prop_assert!(!o1.identity_mismatch && !o2.identity_mismatch && !o3.identity_mismatch);
        }
    }
}

#[test]
fn log_sizes_are_positive_and_leap_is_run_length_compacted() {
    let prog = Program {
        threads: vec![vec![reprise_core::sim::POp::Write(0); 50]],
    };
    let rec = record(&Leap::default(), &prog, &mut RandomScheduler(Rng(1)));
    // one object, one run: 8 (id) + 4 (len) + 8 (run)
    assert_eq!(rec.size_bytes(Leap::default().logs_thread_table()), 20);
    let rec = record(&AggrePlay, &prog, &mut RandomScheduler(Rng(1)));
    assert!(rec.size_bytes(true) > 50 * 12);
}

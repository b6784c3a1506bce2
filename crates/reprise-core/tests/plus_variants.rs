//! `aggreplay+` and `tplay+`: exact replay of 10,000 simulated programs on both substrates (the
//! default generator and the wider one of the ownership tests), a proptest per variant, and for
//! every relation a variant adds, a known counter-example that fails when that relation is
//! dropped (found by `cargo run --example plus_smallest`) and replays exactly with it.
//!
//! Log sizes over the same 10,000 default programs (`log_sizes`, printed with `--nocapture`;
//! paper encodings, bytes, thread table included for the seeds that log it):
//! aggreplay 2,812,716 = aggreplay+ 2,812,716 (same log); tplay 2,136,176, tplay+ 2,118,128
//! (-0.8%), leap 1,471,492. Wide programs (10,000): aggreplay = aggreplay+ 5,809,237; tplay
//! 4,763,104, tplay+ 4,878,160 (+2.4%), leap 2,515,684.
//! What tplay+ changes over the 10,000 default recordings: seed records moved to a later event
//! [dSet, rwSet, aSet, bSet] = [542, 2530, 676, 961], dropped (never examined, or never holding
//! before the sink thread ends) [5917, 0, 355, 1132]; added edges write→write 2511,
//! write→read 3706, read→write 0.

use proptest::prelude::*;
use reprise_core::aggreplay::AggrePlay;
use reprise_core::aggreplay_plus::{AggrePlayPlus, Relation};
use reprise_core::leap::Leap;
use reprise_core::sim::{
    fidelity, generate, record, run_case, GenConfig, POp, POp::*, Program, RandomScheduler, Rng,
    Substrate, Verdict,
};
use reprise_core::tplay::{plus::Added, Tplay, TplayPlus};
use reprise_core::Strategy;

const BOTH: [Substrate; 2] = [Substrate::Atomic, Substrate::Split];

fn wide() -> GenConfig {
    GenConfig {
        max_threads: 6,
        locs: 5,
        locks: 2,
        max_segments: 8,
        rmw_pct: 20,
        lock_pct: 25,
    }
}

fn all_exact<S: Strategy>(s: &S) {
    for sub in BOTH {
        for (cfg, seed) in [(GenConfig::default(), 1), (wide(), 2)] {
            let f = fidelity(s, &cfg, sub, seed, 10_000);
            println!("{} {sub:?} {cfg:?}: {f:?}", s.name());
            assert_eq!(
                (f.exact, f.lock_diff),
                (f.total, 0),
                "{} {sub:?}: {f:?}",
                s.name()
            );
        }
    }
}

#[test]
fn aggreplay_plus_replays_10000_programs_exactly_on_both_substrates() {
    all_exact(&AggrePlayPlus::default());
}

#[test]
fn tplay_plus_replays_10000_programs_exactly_on_both_substrates() {
    all_exact(&TplayPlus::default());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn aggreplay_plus_replays_exactly(p in any::<u64>(), rs in any::<u64>(), ps in any::<u64>(), w in any::<bool>()) {
        let prog = generate(&mut Rng(p), &if w { wide() } else { GenConfig::default() });
        for sub in BOTH {
            let (_, _, v) = run_case(&AggrePlayPlus::default(), &prog, rs, ps, sub);
            prop_assert!(v.exact() && v.lock_order, "{:?} {:?}", sub, v);
        }
    }

    #[test]
    fn tplay_plus_replays_exactly(p in any::<u64>(), rs in any::<u64>(), ps in any::<u64>(), w in any::<bool>()) {
        let prog = generate(&mut Rng(p), &if w { wide() } else { GenConfig::default() });
        let rec = record(&TplayPlus::default(), &prog, &mut RandomScheduler(Rng(rs)));
        // The seed's log inside is TPLAY's, and read→write never needs an added edge: the
        // read-write records, checked where due, order every read before the next write.
        let seed = record(&Tplay, &prog, &mut RandomScheduler(Rng(rs)));
        prop_assert_eq!(&rec.log.seed, &seed.log);
        prop_assert_eq!(rec.log.stats.edges[2], 0);
        for sub in BOTH {
            let (_, _, v) = run_case(&TplayPlus::default(), &prog, rs, ps, sub);
            prop_assert!(v.exact() && v.lock_order, "{:?} {:?}", sub, v);
        }
    }
}

fn ok(v: Verdict) -> bool {
    v.exact() && v.lock_order
}

/// A counter-example: `prog` recorded under seed `rs`, replayed under `ps` on `sub`; the full
/// variant replays it exactly, the variant without the relation does not.
fn needed<S: Strategy>(
    full: &S,
    without: &S,
    prog: Vec<Vec<POp>>,
    rs: u64,
    ps: u64,
    sub: Substrate,
) {
    let prog = Program { threads: prog };
    let (_, _, v) = run_case(full, &prog, rs, ps, sub);
    assert!(ok(v), "{} replays it: {v:?}", full.name());
    let (_, _, v) = run_case(without, &prog, rs, ps, sub);
    assert!(!ok(v), "fails without the relation: {v:?}");
}

fn agg(r: Relation) -> AggrePlayPlus {
    AggrePlayPlus { without: Some(r) }
}

/// Both threads write x; the child's callback pops `W_x`, main's callback passes and main's store
/// lands first: `W_x` must be popped at the store.
#[test]
fn aggreplay_plus_needs_write_write_at_the_store() {
    let prog = vec![vec![Fork(1), Write(0)], vec![Write(0)]];
    let full = AggrePlayPlus::default();
    needed(
        &full,
        &agg(Relation::WriteWrite),
        prog,
        16653837414954423854,
        5491542277698018911,
        Substrate::Split,
    );
}

/// Main reads the child's write; with the last write set at the callback, main's read passes
/// before the child's store and reads 0.
#[test]
fn aggreplay_plus_needs_write_read_at_the_store() {
    let prog = vec![vec![Fork(1), Read(0)], vec![Write(0)]];
    let full = AggrePlayPlus::default();
    needed(
        &full,
        &agg(Relation::WriteRead),
        prog,
        12499072552650840924,
        9242010314788989477,
        Substrate::Split,
    );
}

/// The child reads x before main's RMW; counted at the callback, the read lets the RMW pass
/// and the RMW's store lands before the load.
#[test]
fn aggreplay_plus_needs_read_write_at_the_load() {
    let prog = vec![vec![Fork(1), Rmw(0)], vec![Read(0)]];
    let full = AggrePlayPlus::default();
    needed(
        &full,
        &agg(Relation::ReadWrite),
        prog,
        12866592290468454996,
        5249318412087355060,
        Substrate::Split,
    );
}

/// `L_m` popped at the callback: main takes the mutex first and waits inside for the child's
/// write, which waits for the mutex (deadlock).
#[test]
fn aggreplay_plus_needs_lock_order_at_the_acquisition() {
    let prog = vec![
        vec![Fork(1), Acquire(0), Read(1), Release(0)],
        vec![Acquire(0), Write(1), Release(0)],
    ];
    let full = AggrePlayPlus::default();
    needed(
        &full,
        &agg(Relation::LockOrder),
        prog,
        15596542081059702603,
        17833163835185200763,
        Substrate::Split,
    );
}

fn tp(a: Added) -> TplayPlus {
    TplayPlus { without: Some(a) }
}

/// The read-write record of main's transaction <rmw x0, fork, write x1> is recorded at the
/// write but checked by the seed at the RMW, before the child exists: nothing can run. Checked
/// where due (at the write), it replays.
#[test]
fn tplay_plus_needs_records_checked_where_due() {
    let prog = vec![vec![Rmw(0), Fork(1), Write(1)], vec![Read(1)]];
    for sub in BOTH {
        needed(
            &TplayPlus::default(),
            &tp(Added::DueEvent),
            prog.clone(),
            11355860172763979969,
            10892084499947756729,
            sub,
        );
    }
}

/// The child's transaction <rmw x1, write x0> precedes main's write of x0; `dSet` waits only
/// until that transaction has *begun* (at the RMW), so main's write can land before the
/// child's: the write→write edge from the child's second write is needed.
#[test]
fn tplay_plus_needs_write_write_edges() {
    let prog = vec![vec![Fork(1), Write(0)], vec![Rmw(1), Write(0)]];
    needed(
        &TplayPlus::default(),
        &tp(Added::WriteWrite),
        prog,
        16976537558996088862,
        8925654740778501712,
        Substrate::Atomic,
    );
}

/// Main reads the child's write in a read-only stretch (transaction 0); algorithm 2 checks
/// `dSet` only at writes, so the read waits for nothing: the write→read edge is needed.
#[test]
fn tplay_plus_needs_write_read_edges() {
    let prog = vec![vec![Fork(1), Read(0)], vec![Write(0)]];
    for sub in BOTH {
        needed(
            &TplayPlus::default(),
            &tp(Added::WriteRead),
            prog.clone(),
            12499072552650840924,
            9242010314788989477,
            sub,
        );
    }
}

/// Progress (event counts, transaction ids) published at the callback lets main's write pass
/// its edge before the child's store lands (split substrate only).
#[test]
fn tplay_plus_needs_progress_at_the_access() {
    let prog = vec![vec![Fork(1), Write(0)], vec![Write(0)]];
    needed(
        &TplayPlus::default(),
        &tp(Added::AtAccess),
        prog.clone(),
        16653837414954423854,
        5491542277698018911,
        Substrate::Split,
    );
    let (_, _, v) = run_case(
        &tp(Added::AtAccess),
        &Program { threads: prog },
        16653837414954423854,
        5491542277698018911,
        Substrate::Atomic,
    );
    assert!(ok(v));
}

/// Log sizes summed over a fixed set of programs (the numbers in the module docs).
#[test]
fn log_sizes() {
    for (name, cfg) in [("default", GenConfig::default()), ("wide", wide())] {
        let sub = Substrate::Atomic;
        let a = fidelity(&AggrePlay, &cfg, sub, 1, 10_000).log_bytes;
        let ap = fidelity(&AggrePlayPlus::default(), &cfg, sub, 1, 10_000).log_bytes;
        let t = fidelity(&Tplay, &cfg, sub, 1, 10_000).log_bytes;
        let tp = fidelity(&TplayPlus::default(), &cfg, sub, 1, 10_000).log_bytes;
        let l = fidelity(&Leap::default(), &cfg, sub, 1, 10_000).log_bytes;
        println!("{name}, 10,000 programs: aggreplay {a} B, aggreplay+ {ap} B; tplay {t} B, tplay+ {tp} B, leap {l} B");
        assert_eq!(a, ap, "aggreplay+ logs what aggreplay logs");
        assert!(
            tp * 10 < t * 12 && t * 10 < tp * 12,
            "tplay+ within 20% of tplay"
        );
        // What tplay+ changed, summed over the same recordings.
        let (mut late, mut dropped, mut edges) = ([0; 4], [0; 4], [0; 3]);
        for i in 0..10_000u64 {
            let mut rng = Rng(1u64.wrapping_add(i).wrapping_mul(0x2545_F491_4F6C_DD1D));
            let prog = generate(&mut rng, &cfg);
            let rec = record(
                &TplayPlus::default(),
                &prog,
                &mut RandomScheduler(Rng(rng.next_u64())),
            );
            let s = rec.log.stats;
            for (a, b) in late.iter_mut().zip(s.late) {
                *a += b;
            }
            for (a, b) in dropped.iter_mut().zip(s.dropped) {
                *a += b;
            }
            for (a, b) in edges.iter_mut().zip(s.edges) {
                *a += b;
            }
        }
        println!("{name}: tplay+ moved later [dSet, rwSet, aSet, bSet] {late:?}, dropped {dropped:?}; added edges [w->w, w->r, r->w] {edges:?}");
        assert_eq!(edges[2], 0);
    }
}

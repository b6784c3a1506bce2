//! The seeds' running examples: AggrePlay figure 2 → figure 5, TPLAY figure 1 → section IV-A's
//! record log, LEAP figure 1 → its access vectors; and replays of each trace under the simulator.
//!
//! Numbering: the papers number events globally (e1..e14) and name transactions globally
//! (tr1..tr4). The logs hold thread-local numbers (`<a,b>` = thread, thread-local counter, seed 000
//! 5.5; transaction ids are per-thread counters, seed 003 algorithm 1 line 4). Each test maps them.
//! Thread t1 is id 0, t2 is 1, t3 is 2 (RC vectors are printed in that order in both papers).

use reprise_core::aggreplay::{AggrePlay, ExEntry};
use reprise_core::leap::{Leap, Object};
use reprise_core::sim::{
    compare, record, replay, POp, Program, RandomScheduler, Rng, ScriptedScheduler, Substrate,
};
use reprise_core::tplay::{Inter, RwRec, Tplay, TplayStats};
use reprise_core::{Event, EventId, Op, Recorder, Strategy};

fn ev(thread: u32, op: Op) -> Event {
    Event {
        thread,
        op,
        value: 0,
    }
}

const X: u64 = 0;
const Y: u64 = 1;
const Z: u64 = 2;

/// Figure 2, trace σ2 = <e1..e9>.
fn sigma2() -> Vec<Event> {
    use Op::*;
    vec![
        ev(0, Write(X)), // e1 = <t1,1>
        ev(1, Write(Y)), // e2 = <t2,1>
        ev(2, Write(X)), // e3 = <t3,1>
        ev(1, Read(X)),  // e4 = <t2,2>
        ev(2, Write(Y)), // e5 = <t3,2>
        ev(1, Write(Z)), // e6 = <t2,3>
        ev(2, Read(Z)),  // e7 = <t3,3>
        ev(1, Read(Z)),  // e8 = <t2,4>
        ev(0, Write(Z)), // e9 = <t1,2>
    ]
}

#[test]
fn aggreplay_figure5() {
    let mut r = AggrePlay.recorder();
    for e in sigma2() {
        r.observe(&e);
    }
    let log = r.finish();
    let e = EventId::new;
    // Figure 5: t1.z = <<[0,1,1], e9>>; every other write has an unchanged RC vector (O1/O2),
    // so it leaves a null line Θ, which figure 5 does not draw.
    assert_eq!(
        log.ex[&0],
        vec![ExEntry::Null, ExEntry::Rc(vec![0, 1, 1], e(0, 2))]
    );
    assert_eq!(log.ex[&1], vec![ExEntry::Null, ExEntry::Null]);
    assert_eq!(log.ex[&2], vec![ExEntry::Null, ExEntry::Null]);
    assert_eq!(log.w[&X], vec![e(0, 1), e(2, 1)]); // Wx = <e1,e3>
    assert_eq!(log.w[&Y], vec![e(1, 1), e(2, 2)]); // Wy = <e2,e5>
    assert_eq!(log.w[&Z], vec![e(1, 3), e(0, 2)]); // Wz = <e6,e9>
    assert_eq!(log.wr[&X], vec![(e(2, 1), e(1, 2))]); // WRx = <e3⇝e4>
    assert_eq!(log.wr[&Z], vec![(e(1, 3), e(2, 3))]); // WRz = <e6⇝e7> (e6⇝e8 is intra-thread)
    assert!(!log.wr.contains_key(&Y));
    assert!(log.l.is_empty());
}

/// TPLAY figure 1, trace σ1 = <e1..e14>.
fn sigma1() -> Vec<Event> {
    use Op::*;
    vec![
        ev(0, Write(X)), // e1  t1#1 tr1
        ev(0, Read(X)),  // e2  t1#2
        ev(0, Read(X)),  // e3  t1#3
        ev(1, Write(Y)), // e4  t2#1 tr2
        ev(1, Read(X)),  // e5  t2#2
        ev(1, Read(X)),  // e6  t2#3
        ev(2, Write(X)), // e7  t3#1 tr3
        ev(2, Write(Y)), // e8  t3#2
        ev(2, Read(Y)),  // e9  t3#3
        ev(2, Read(X)),  // e10 t3#4
        ev(1, Read(Y)),  // e11 t2#4
        ev(1, Read(X)),  // e12 t2#5
        ev(0, Write(Y)), // e13 t1#4 tr4 (t1's 2nd transaction)
        ev(0, Read(Y)),  // e14 t1#5
    ]
}

#[test]
fn tplay_figure1_record_log() {
    let mut r = Tplay.recorder();
    for e in sigma1() {
        r.observe(&e);
    }
    let log = r.finish();
    // tr1 = <t1,1>, tr2 = <t2,1>, tr3 = <t3,1>, tr4 = <t1,2>; e6 = <t2,3>, e11 = <t2,4>.
    // dSet = {<t1,tr1,t2,tr2>}: e1⇝e7 and e8⇝e13 are absorbed by the RC records of e7 and e13
    // (see the tplay module docs), e4⇝e8 is removed by the violation at e11, and e8⇝e11, e7⇝e12
    // are carried by the bSet record.
    let d: Vec<Inter> = log.dset.values().flatten().copied().collect();
    assert_eq!(d, vec![Inter::new(0, 1, 1, 1)]);
    // bSet = {<t3,tr3,t2,e11>}
    let b: Vec<Inter> = log.bset.values().flatten().copied().collect();
    assert_eq!(b, vec![Inter::new(2, 1, 1, 4)]);
    assert_eq!(log.bset[&1], b);
    // aSet = {<t2,e6,t3,tr3>}
    let a: Vec<Inter> = log.aset.values().flatten().copied().collect();
    assert_eq!(a, vec![Inter::new(1, 3, 2, 1)]);
    assert_eq!(log.aset[&2], a);
    // rwSet = {<[2,0,0],t2,tr2>, <[2,2,0],t3,tr3>, <[2,4,2],t1,tr4>}
    assert_eq!(
        log.rwset[&1],
        vec![RwRec {
            rc: vec![2, 0, 0],
            thread: 1,
            tr: 1
        }]
    );
    assert_eq!(
        log.rwset[&2],
        vec![RwRec {
            rc: vec![2, 2, 0],
            thread: 2,
            tr: 1
        }]
    );
    assert_eq!(
        log.rwset[&0],
        vec![RwRec {
            rc: vec![2, 4, 2],
            thread: 0,
            tr: 2
        }]
    );
    assert_eq!(
        log.stats,
        TplayStats {
            transactions: 4,
            interleavings: 1,
            violations: 1
        }
    );
}

#[test]
fn leap_figure1_access_vectors() {
    use Op::*;
    // Schedule 1,5,2,6,7,3 (line 4 is not a shared access): t1 = 0, t2 = 1.
    let trace = [
        ev(0, Write(X)),
        ev(1, Write(Y)),
        ev(0, Write(Y)),
        ev(1, Read(Y)),
        ev(1, Write(X)),
        ev(0, Read(X)),
    ];
    let mut r = Leap::default().recorder();
    for e in &trace {
        r.observe(e);
    }
    let log = r.finish();
    assert_eq!(log.expanded(Object::Mem(X)), vec![0, 1, 0]); // x.vec = <t1,t2,t1>
    assert_eq!(log.expanded(Object::Mem(Y)), vec![1, 0, 1]); // y.vec = <t2,t1,t2>
}

#[test]
fn leap_run_length_compaction() {
    // Section 4.2: <t1,t1,t2,t2,t2> is stored as <t1,t2> with counters <2,3>.
    let mut r = Leap::default().recorder();
    for t in [0, 0, 1, 1, 1] {
        r.observe(&ev(t, Op::Read(X)));
    }
    let log = r.finish();
    assert_eq!(log.vectors[&Object::Mem(X)], vec![(0, 2), (1, 3)]);
}

/// A program whose main thread (t1) forks t2 and t3 first, then runs the example's events, and
/// the recording schedule that reproduces the trace.
fn program_of(trace: &[Event], nthreads: usize) -> (Program, Vec<usize>) {
    let mut threads: Vec<Vec<POp>> = vec![Vec::new(); nthreads];
    let mut sched = Vec::new();
    for c in 1..nthreads {
        threads[0].push(POp::Fork(c));
        sched.push(0);
    }
    for e in trace {
        let p = match e.op {
            Op::Read(x) => POp::Read(x),
            Op::Write(x) => POp::Write(x),
            _ => unreachable!(),
        };
        threads[e.thread as usize].push(p);
        sched.push(e.thread as usize);
    }
    (Program { threads }, sched)
}

fn replays<S: Strategy>(s: &S, trace: &[Event], sub: Substrate, runs: u64) -> u64 {
    let (prog, sched) = program_of(trace, 3);
    let rec = record(s, &prog, &mut ScriptedScheduler::new(sched));
    (0..runs)
        .filter(|&i| {
            compare(
                &rec.obs,
                &replay(s, &prog, &rec, sub, &mut RandomScheduler(Rng(i))),
            )
            .exact()
        })
        .count() as u64
}

#[test]
fn running_examples_replay() {
    // LEAP and AggrePlay replay both traces under every schedule tried, on both substrates
    // except AggrePlay on the split substrate (see the counter-examples).
    for sub in [Substrate::Atomic, Substrate::Split] {
        assert_eq!(replays(&Leap::default(), &sigma1(), sub, 300), 300);
        assert_eq!(replays(&Leap::default(), &sigma2(), sub, 300), 300);
    }
    assert_eq!(replays(&AggrePlay, &sigma1(), Substrate::Atomic, 300), 300);
    assert_eq!(replays(&AggrePlay, &sigma2(), Substrate::Atomic, 300), 300);
    // TPLAY on its own example, as the paper's replay narrative describes (atomic substrate). The
    // forks put the three threads' events after t1's fork events, which shifts t1's event indices
    // but not the transactions.
    assert_eq!(replays(&Tplay, &sigma1(), Substrate::Atomic, 300), 300);
}

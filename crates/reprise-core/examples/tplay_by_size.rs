//! TPLAY's (and, for comparison, AggrePlay's) exact-replay rate on the simulator as a function of
//! program size, on both substrates. Prints:
//!
//! 1. four sweeps from the default [`GenConfig`], each varying one knob: `max_segments`
//!    (1..64), `max_threads` (2..32), `locs` (1..48) and `lock_pct` (0..100); per point the mean
//!    number of recorded events per program and, per strategy and substrate, the exact-replay
//!    and deadlock rates;
//! 2. two pooled tables, the exact rate binned by a program's size: the `max_segments` sweep by
//!    recorded events, and all sweeps by recorded cross-thread dependences ([`conflicts`]); `h`
//!    is the failure hazard per unit that the rate implies if every unit were an independent
//!    chance to fail (`rate = (1 - h)^mean`);
//! 3. for TPLAY, per `max_segments`, the causes of its non-exact replays as a share of all
//!    cases, classified as in the `classify` example: the first access of the replay that breaks
//!    a recorded relation (write→write, write→read, read→write on a location, or the lock order;
//!    on the split substrate "cb" when the source's callback came before the sink's, i.e. the
//!    relation held at the callback but not at the access), else a deadlock with no relation
//!    broken. Then, overlapping, the deadlocked cases (of either kind) whose recording has
//!    records of a given set that the seed checks before they hold (from `tplay+`'s dry run),
//!    and the cases that broke a relation and then deadlocked.
//!
//! Program `i` of a point comes from seed `1 + i` exactly as in [`reprise_core::sim::fidelity`],
//! so the numbers of a point equal `fidelity(strategy, &cfg, substrate, 1, cases)`; the same
//! programs are run by every strategy on both substrates.
//!
//! `cargo run -p reprise-core --release --example tplay_by_size [cases]` (default 2000 per point)

use reprise_core::aggreplay::AggrePlay;
use reprise_core::sim::{
    generate, record, run_case, GenConfig, Observation, RandomScheduler, Rng, Substrate,
};
use reprise_core::tplay::{Tplay, TplayPlus};
use reprise_core::Strategy;

mod violations;
use violations::first_violation;

/// First program seed, as in the `fidelity` example.
const SEED: u64 = 1;

/// Outcome of one simulated case.
struct Outcome {
    /// Recorded events.
    events: usize,
    /// Recorded cross-thread dependences ([`conflicts`]).
    conflicts: usize,
    exact: bool,
    deadlock: bool,
    /// Cause of a non-exact replay.
    class: Option<String>,
    /// Deadlocked, and `tplay+`'s dry run of the same recording finds records of this kind
    /// (dSet, rwSet, aSet, bSet) that the seed checks before they hold.
    early: [bool; 4],
}

/// Recorded dependences between threads: a read or write after another thread's write of the
/// location, a write after another thread's read of the same epoch, and a lock handed from one
/// thread to another.
fn conflicts(rec: &Observation) -> usize {
    let mut n = 0;
    for v in rec.locs.values() {
        let mut last_write: Option<usize> = None;
        let mut readers: Vec<usize> = Vec::new();
        for a in v {
            n += last_write.is_some_and(|t| t != a.thread) as usize;
            if a.write {
                n += readers.iter().filter(|&&t| t != a.thread).count();
                readers.clear();
                last_write = Some(a.thread);
            } else {
                readers.push(a.thread);
            }
        }
    }
    for v in rec.locks.values() {
        n += v.windows(2).filter(|w| w[0] != w[1]).count();
    }
    n
}

/// Record and replay `cases` programs generated from `cfg`; with `dry_run` (TPLAY), fill
/// [`Outcome::early`] of deadlocked replays.
fn outcomes<S: Strategy>(
    s: &S,
    cfg: &GenConfig,
    sub: Substrate,
    cases: u64,
    dry_run: bool,
) -> Vec<Outcome> {
    (0..cases)
        .map(|i| {
            let mut rng = Rng(SEED.wrapping_add(i).wrapping_mul(0x2545_F491_4F6C_DD1D));
            let prog = generate(&mut rng, cfg);
            let (rec_seed, rep_seed) = (rng.next_u64(), rng.next_u64());
            let (rec, obs, v) = run_case(s, &prog, rec_seed, rep_seed, sub);
            let mut early = [false; 4];
            if dry_run && !v.completed {
                let sched = &mut RandomScheduler(Rng(rec_seed));
                let stats = record(&TplayPlus::default(), &prog, sched).log.stats;
                for (k, e) in early.iter_mut().enumerate() {
                    *e = stats.late[k] + stats.dropped[k] > 0;
                }
            }
            let class = (!v.exact()).then(|| match first_violation(&prog, &rec.obs, &obs, sub) {
                Some(c) => c.short(),
                None if !v.completed => "deadlock, no relation broken".to_string(),
                None => "other".to_string(),
            });
            Outcome {
                events: rec.events.len(),
                conflicts: conflicts(&rec.obs),
                exact: v.exact(),
                deadlock: !v.completed,
                class,
                early,
            }
        })
        .collect()
}

fn pct(n: usize, d: usize) -> f64 {
    100.0 * n as f64 / d.max(1) as f64
}

/// "exact% dl%" of a point.
fn cell(o: &[Outcome]) -> String {
    let exact = o.iter().filter(|c| c.exact).count();
    let dl = o.iter().filter(|c| c.deadlock).count();
    format!("{:>5.1} {:>5.1}", pct(exact, o.len()), pct(dl, o.len()))
}

/// The four runs of a point: TPLAY and AggrePlay on the atomic and the split substrate.
fn point(cfg: &GenConfig, cases: u64) -> [Vec<Outcome>; 4] {
    [
        outcomes(&Tplay, cfg, Substrate::Atomic, cases, true),
        outcomes(&Tplay, cfg, Substrate::Split, cases, true),
        outcomes(&AggrePlay, cfg, Substrate::Atomic, cases, false),
        outcomes(&AggrePlay, cfg, Substrate::Split, cases, false),
    ]
}

fn sweep(
    title: &str,
    knob: &str,
    values: &[u64],
    set: impl Fn(&mut GenConfig, u64),
    cases: u64,
) -> Sweep {
    println!("\n{title}");
    println!("{knob:>6}  events/prog  tplay-atomic  tplay-split   aggre-atomic  aggre-split");
    println!(
        "{:>6}  {:>11}  exact%   dl%  exact%   dl%  exact%   dl%  exact%   dl%",
        "", ""
    );
    let mut out = Vec::new();
    for &v in values {
        let mut cfg = GenConfig::default();
        set(&mut cfg, v);
        let p = point(&cfg, cases);
        let events: usize = p[0].iter().map(|c| c.events).sum();
        println!(
            "{v:>6}  {:>11.1}  {}   {}   {}   {}",
            events as f64 / cases as f64,
            cell(&p[0]),
            cell(&p[1]),
            cell(&p[2]),
            cell(&p[3])
        );
        out.push((v, p));
    }
    out
}

/// Exact rates of the cases of `points` binned by `key` (bins start at `starts`), with the hazard
/// `h` per unit of the key that the rate implies if each unit were an independent chance to fail.
fn binned(
    title: &str,
    unit: &str,
    points: &[&[Vec<Outcome>; 4]],
    key: impl Fn(&Outcome) -> usize,
    starts: &[usize],
) {
    println!("\n{title} (h%: implied failure hazard per {unit})");
    print!("{unit:>9}  {:>6}  {:>6}", "cases", "mean");
    for n in ["tplay-atomic", "tplay-split", "aggre-atomic", "aggre-split"] {
        print!("  {n:>12} {:>5}", "h%");
    }
    println!();
    for (b, &lo) in starts.iter().enumerate() {
        let hi = starts.get(b + 1).copied().unwrap_or(usize::MAX);
        let in_bin = |c: &&Outcome| (lo..hi).contains(&key(c));
        let bin = |k: usize| points.iter().flat_map(move |p| p[k].iter().filter(in_bin));
        let n = bin(0).count();
        if n == 0 {
            continue;
        }
        let mean = bin(0).map(&key).sum::<usize>() as f64 / n as f64;
        let range = match hi {
            usize::MAX => format!("{lo}+"),
            _ if hi == lo + 1 => format!("{lo}"),
            _ => format!("{lo}-{}", hi - 1),
        };
        print!("{range:>9}  {n:>6}  {mean:>6.1}");
        for k in 0..4 {
            let rate = bin(k).filter(|c| c.exact).count() as f64 / n as f64;
            if mean > 0.0 && rate > 0.0 {
                let h = 1.0 - rate.powf(1.0 / mean);
                print!("  {:>11.1}% {:>5.2}", 100.0 * rate, 100.0 * h);
            } else {
                print!("  {:>11.1}% {:>5}", 100.0 * rate, "-");
            }
        }
        println!();
    }
}

fn main() {
    let cases: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2000);
    println!(
        "{cases} programs per point, program seeds from {SEED}; base {:?}",
        GenConfig::default()
    );
    println!("exact% = replays with the recorded conflict order and values; dl% = deadlocked");

    let segs = sweep(
        "by max_segments (segments per thread, uniform in 1..=max)",
        "segs",
        &[1, 2, 4, 8, 16, 32, 64],
        |c, v| c.max_segments = v,
        cases,
    );
    let thr = sweep(
        "by max_threads (threads uniform in 2..=max)",
        "thr",
        &[2, 3, 4, 8, 16, 32],
        |c, v| c.max_threads = v,
        cases,
    );
    let locs = sweep(
        "by locs (shared locations)",
        "locs",
        &[1, 2, 3, 6, 12, 24, 48],
        |c, v| c.locs = v,
        cases,
    );
    let lock = sweep(
        "by lock_pct (share of segments that are critical sections)",
        "lock%",
        &[0, 25, 50, 75, 100],
        |c, v| c.lock_pct = v,
        cases,
    );

    let pooled: Vec<&[Vec<Outcome>; 4]> = segs.iter().map(|(_, p)| p).collect();
    binned(
        "max_segments sweep pooled, by recorded events per program",
        "events",
        &pooled,
        |c| c.events,
        &[0, 8, 16, 32, 64, 128, 256, 512],
    );
    let all: Vec<&[Vec<Outcome>; 4]> = [&segs, &thr, &locs, &lock]
        .iter()
        .flat_map(|s| s.iter().map(|(_, p)| p))
        .collect();
    binned(
        "all sweeps pooled, by recorded cross-thread dependences per program",
        "deps",
        &all,
        |c| c.conflicts,
        &[0, 1, 2, 4, 8, 16, 32, 64, 128, 256],
    );

    causes(&segs);
}

/// The points of a sweep: knob value, the four runs.
type Sweep = Vec<(u64, [Vec<Outcome>; 4])>;

/// One row of [`causes`]: the share of cases of run `k` matching `pred`, per point of `segs`.
fn cause_row(label: &str, segs: &Sweep, k: usize, pred: impl Fn(&Outcome) -> bool) {
    print!("{label:<30}");
    for (_, p) in segs {
        let n = p[k].iter().filter(|c| pred(c)).count();
        print!(" {:>6.1}", pct(n, p[k].len()));
    }
    println!();
}

/// TPLAY's causes of non-exact replays per point of the `max_segments` sweep.
fn causes(segs: &Sweep) {
    for (k, sub) in [(0, "atomic"), (1, "split")] {
        let mut classes: Vec<String> = segs
            .iter()
            .flat_map(|(_, p)| p[k].iter().filter_map(|c| c.class.clone()))
            .collect();
        classes.sort();
        classes.dedup();
        println!("\ntplay {sub}: causes of non-exact replays, % of all cases, by max_segments");
        print!("{:<30}", "cause");
        for (v, _) in segs {
            print!(" {v:>6}");
        }
        println!();
        for cl in &classes {
            cause_row(cl, segs, k, |c| c.class.as_ref() == Some(cl));
        }
        for (e, set) in ["dSet", "rwSet", "aSet", "bSet"].iter().enumerate() {
            let label = format!("(dl, {set} checked early)");
            cause_row(&label, segs, k, |c| c.early[e]);
        }
        cause_row("(broken, then dl)", segs, k, |c| {
            c.deadlock && c.class.as_ref().is_some_and(|l| !l.starts_with("dead"))
        });
    }
}

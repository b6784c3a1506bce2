//! `reprise bench`: the seeds' evaluation tables (record and replay slowdown, log size, events, replay success), from our own runs.
//!
//! Each selected program (the suite in `bench/programs/`, the bug programs in
//! `tests/programs/`) is built four ways into a temporary directory:
//!
//! - **native**: `gcc -O2 -pthread`;
//! - **floor**: the same instrumentation `reprise cc` asks for, linked against
//!   `bench/floor/floor.c` (empty ThreadSanitizer callbacks, atomics still performed) instead of
//!   a runtime: the least any compiler-instrumentation recorder can cost;
//! - **tsan**: gcc's own ThreadSanitizer, a peer that instruments the same accesses;
//! - **reprise**: `reprise cc -O2`, then recorded and replayed under each strategy.
//!
//! The full bench runs the suite and the bug programs `bench/programs/bugs.txt` names, at the
//! `tiny` size (a few milliseconds natively; `--size small` is about 1/32 and `--size default`
//! the suite's own 0.3-2 s): the model strategies (AggrePlay, TPLAY and their `+` variants)
//! cost 0.3-1 µs per event under one global lock, so tiny is what fits 30 minutes on two
//! cores with every strategy and 5 runs; at `--size small` a suite program records for
//! minutes under them (fft: more than 10 minutes under AggrePlay), so those runs end at the
//! time limit. A record or replay
//! that runs past `--timeout` is killed with its process group and shown as a lower bound
//! ("> N× (timeout)"); the remaining runs of that program and strategy are skipped.
//!
//! Every configuration runs `--runs` times; the tables show medians, and every ratio divides two
//! medians measured in this same invocation (never against a stored baseline). A strategy that
//! `reprise record` rejects is reported as "unavailable" rather than failing the bench. Output:
//! a Markdown report (also printed to stdout), `runs.csv` and `runs.json` with every raw run, and
//! `record-slowdown.svg`. The exit status is non-zero only when a replay did not verify: timings
//! are reported, never asserted.
//!
//! Modules: [`build`] (manifests and the four builds), [`exec`] (timed runs, record and
//! replay, trace measurement), [`tables`] (medians and the Markdown report), [`chart`] (the
//! SVG chart, with plotters) and [`output`] (runs.csv with the csv crate, runs.json).
//! `--mode sync` runs [`sync`] instead: unmodified programs (the suite built with plain gcc,
//! Debian's compressors) recorded and replayed in sync mode.

mod build;
mod chart;
mod exec;
mod failures;
mod output;
mod sync;
mod tables;

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Options of `reprise bench`.
pub struct BenchOpts {
    /// Program names to run (empty: the whole suite and the bug programs, or the quick set).
    pub programs: Vec<String>,
    /// Strategies to record with, in table order.
    pub strategies: Vec<String>,
    /// Runs per configuration (default 5, 1 with `--quick`).
    pub runs: Option<usize>,
    /// `-t` for suite programs.
    pub threads: u32,
    /// Output directory.
    pub out: PathBuf,
    /// Problem size of suite programs (default: `tiny`).
    pub size: Option<Size>,
    /// Tiny sizes, three programs, one run.
    pub quick: bool,
    /// Longest a single record or replay may run before it is killed and reported as a
    /// timeout (later runs of the same program and strategy are then skipped).
    pub timeout: std::time::Duration,
    /// `--mode sync`: unmodified programs in sync mode (the [`sync`] bench) instead.
    pub sync: bool,
}

/// The programs `--quick` runs when `--programs` is not given.
const QUICK_PROGRAMS: &[&str] = &["histogram", "counter_race", "prodcons"];

/// Problem sizes for suite programs (`--size`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
pub enum Size {
    /// A few milliseconds natively (the default).
    Tiny,
    /// About 1/32 of the default work: a recorded run takes seconds, not minutes.
    Small,
    /// The programs' own defaults (0.3-1 s natively with 2 threads).
    Default,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Kind {
    Suite,
    Bug,
}

/// One program from a manifest.
pub(super) struct Program {
    pub(super) name: String,
    pub(super) kind: Kind,
    pub(super) source: PathBuf,
    pub(super) cxx: bool,
    pub(super) args: Vec<String>,
}

/// The four builds of one program.
pub(super) struct Binaries {
    pub(super) native: PathBuf,
    pub(super) floor: PathBuf,
    pub(super) tsan: PathBuf,
    pub(super) reprise: PathBuf,
}

/// One raw run: a row of runs.csv / runs.json.
#[derive(Serialize, Clone, Default)]
pub(super) struct Run {
    pub(super) program: String,
    /// native, floor, tsan, record or replay.
    pub(super) config: String,
    /// The strategy (record and replay rows only).
    pub(super) strategy: String,
    pub(super) run: usize,
    pub(super) seconds: f64,
    /// Exit status (128 + signal when killed); none when the strategy was unavailable.
    pub(super) exit: Option<i32>,
    /// Killed after `--timeout` seconds.
    pub(super) timed_out: bool,
    /// Trace file size as stored (zstd chunks), record rows.
    pub(super) trace_bytes: Option<u64>,
    /// Raw (decompressed) event bytes, record rows.
    pub(super) event_bytes: Option<u64>,
    /// gzip -9 of the raw event bytes, record rows.
    pub(super) gzip9_bytes: Option<u64>,
    pub(super) events: Option<u64>,
    pub(super) vector_runs: Option<u64>,
    pub(super) threads: Option<u32>,
    /// Record rows: events per kind (plain reads, plain writes, atomics, synchronisation
    /// operations: locks, condvars, semaphores, barriers, once, create and join; ranged
    /// accesses: memcpy/memset/memmove and struct copies; stdio and libc RNG calls).
    pub(super) reads: Option<u64>,
    pub(super) writes: Option<u64>,
    pub(super) atomics: Option<u64>,
    pub(super) syncs: Option<u64>,
    pub(super) ranges: Option<u64>,
    pub(super) stdio: Option<u64>,
    /// Record rows of TPLAY: transactions, transactional interleavings (dSet), atomicity
    /// violations (seed 003 table IV).
    pub(super) transactions: Option<u64>,
    pub(super) interleavings: Option<u64>,
    pub(super) violations: Option<u64>,
    /// Replay rows: did `reprise replay` verify?
    pub(super) verified: Option<bool>,
    /// Why something is missing (unavailable strategy, failed record, ...).
    pub(super) note: String,
}

/// What every run of one bench invocation shares.
struct Ctx<'a> {
    /// The `reprise` binary (this one).
    reprise: PathBuf,
    /// The temporary directory: builds, traces, working directory of every run.
    work: &'a Path,
    strategies: &'a [String],
    runs: usize,
    timeout: std::time::Duration,
}

/// Run the bench; returns the exit status (1 when a replay did not verify).
pub fn run(o: BenchOpts) -> Result<i32> {
    if o.sync {
        return sync::run(&o);
    }
    let started = Instant::now();
    let root = build::find_root()?;
    let reprise = std::env::current_exe().context("cannot locate the reprise binary")?;
    crate::cc::runtime_archive()?; // fail early, before building anything
    let runs = o.runs.unwrap_or(if o.quick { 1 } else { 5 }).max(1);
    let mut o = o;
    if o.strategies.is_empty() {
        o.strategies = default_strategies(o.quick);
    }
    let size = o.size.unwrap_or(Size::Tiny);
    let programs = select_programs(&root, &o, size)?;

    std::fs::create_dir_all(&o.out)
        .with_context(|| format!("cannot create {}", o.out.display()))?;
    let tmp = tempfile::Builder::new()
        .prefix("reprise-bench-")
        .tempdir()
        .context("cannot create a temporary directory")?;
    let ctx = Ctx {
        reprise,
        work: tmp.path(),
        strategies: &o.strategies,
        runs,
        timeout: o.timeout,
    };

    let per_program = 3 + 2 * o.strategies.len();
    let total = 1 + 4 * programs.len() + runs * per_program * programs.len();
    let pb = ProgressBar::new(total as u64);
    pb.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
            .context("progress bar template")?,
    );
    pb.set_message("building the floor");
    let floor_dir = build::build_floor(&root, ctx.work)?;
    pb.inc(1);
    let mut bins = Vec::new();
    for p in &programs {
        bins.push(build::build_program(
            p,
            &ctx.reprise,
            &floor_dir,
            ctx.work,
            &pb,
        )?);
    }

    let mut all: Vec<Run> = Vec::new();
    let mut unavailable: BTreeMap<String, String> = BTreeMap::new();
    for (p, b) in programs.iter().zip(&bins) {
        bench_program(&ctx, p, b, &pb, &mut all, &mut unavailable)?;
    }
    pb.finish_and_clear();

    let elapsed = started.elapsed().as_secs_f64();
    let md = tables::markdown(&tables::Bench {
        programs: &programs,
        strategies: &o.strategies,
        unavailable: &unavailable,
        runs: &all,
        nruns: runs,
        threads: o.threads,
        size,
        elapsed,
    });
    print!("{md}");
    output::write_all(&o, &md, &programs, &unavailable, &all, runs, size)?;
    eprintln!(
        "reprise: bench finished in {elapsed:.1}s; results in {}",
        o.out.display()
    );

    Ok(exit_status(&all))
}

/// The full bench's table order: the five seed-derived strategies, each variant beside its
/// seed, then ownership (any other strategy of `reprise_proto::STRATEGIES` after them).
const TABLE_ORDER: &[&str] = &[
    "leap",
    "aggreplay",
    "aggreplay+",
    "tplay",
    "tplay+",
    "ownership",
];

/// `--quick` checks the default strategy; the full bench compares all of them.
fn default_strategies(quick: bool) -> Vec<String> {
    if quick {
        return vec!["ownership".into()];
    }
    let mut v: Vec<String> = TABLE_ORDER
        .iter()
        .filter(|n| reprise_proto::strategy_flag(n).is_some())
        .map(|n| n.to_string())
        .collect();
    for (n, _) in reprise_proto::STRATEGIES {
        if !v.iter().any(|x| x == n) {
            v.push(n.to_string());
        }
    }
    v
}

/// The strategies that must replay every recording: LEAP, ownership and the improved
/// variants. The seeds' model strategies replay only part of their recordings (that is what
/// the replay success table measures).
fn must_verify(strategy: &str) -> bool {
    matches!(strategy, "leap" | "ownership" | "aggreplay+" | "tplay+")
}

/// 1 when a replay of a strategy that must replay every recording did not verify, else 0.
fn exit_status(all: &[Run]) -> i32 {
    let failed = all
        .iter()
        .filter(|r| r.verified == Some(false) && must_verify(&r.strategy))
        .count();
    if failed > 0 {
        eprintln!(
            "reprise: bench: {failed} leap/ownership/aggreplay+/tplay+ replay(s) did not verify"
        );
        return 1;
    }
    0
}

/// The programs to run, in the order asked for, with their arguments (`-t`, `-n` for the
/// suite).
fn select_programs(root: &Path, o: &BenchOpts, size: Size) -> Result<Vec<Program>> {
    let mut programs = build::load_programs(root)?;
    let wanted: Vec<String> = if !o.programs.is_empty() {
        o.programs.clone()
    } else if o.quick {
        QUICK_PROGRAMS.iter().map(|s| s.to_string()).collect()
    } else {
        build::default_programs(root, &programs)?
    };
    for w in &wanted {
        if !programs.iter().any(|p| &p.name == w) {
            bail!(
                "unknown program `{w}` (known: {})",
                programs
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    programs.retain(|p| wanted.contains(&p.name));
    programs.sort_by_key(|p| wanted.iter().position(|w| w == &p.name));
    for p in &mut programs {
        if p.kind == Kind::Suite {
            p.args = vec!["-t".into(), o.threads.to_string()];
            if let Some(n) = build::size_arg(&p.name, size) {
                p.args.extend(["-n".into(), n.into()]);
            }
        }
    }
    Ok(programs)
}

/// Every run of one program: native, floor and tsan, then record and replay under each
/// strategy, `ctx.runs` times; appends the rows to `all`.
fn bench_program(
    ctx: &Ctx,
    p: &Program,
    b: &Binaries,
    pb: &ProgressBar,
    all: &mut Vec<Run>,
    unavailable: &mut BTreeMap<String, String>,
) -> Result<()> {
    for r in 0..ctx.runs {
        for (config, exe) in [
            ("native", &b.native),
            ("floor", &b.floor),
            ("tsan", &b.tsan),
        ] {
            pb.set_message(format!("{}: {config} (run {})", p.name, r + 1));
            all.push(exec::baseline(ctx, p, config, exe, r)?);
            pb.inc(1);
        }
        for s in ctx.strategies {
            pb.set_message(format!("{}: record {s} (run {})", p.name, r + 1));
            let earlier_timeout = all
                .iter()
                .any(|x| x.program == p.name && x.strategy == *s && x.timed_out && x.run < r);
            let (rec, rep) = if earlier_timeout {
                exec::skipped(p, s, r)
            } else {
                exec::record_and_replay(ctx, p, b, s, r, unavailable)?
            };
            if rep.verified == Some(false) {
                pb.suspend(|| {
                    eprintln!(
                        "reprise: bench: replay of {} ({s}, run {}) did not verify: {}",
                        p.name,
                        r + 1,
                        rep.note
                    )
                });
            }
            all.push(rec);
            all.push(rep);
            pb.inc(2);
        }
    }
    Ok(())
}

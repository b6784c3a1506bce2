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
//! the suite's own 0.3-2 s): the model strategies (AggrePlay, TPLAY) cost 0.3-1 µs per event
//! under one global lock, so tiny is what fits 30 minutes on two cores with all three
//! strategies and 5 runs (about 20 minutes measured). A record or replay
//! that runs past `--timeout` is killed with its process group and shown as a lower bound
//! ("> N× (timeout)"); the remaining runs of that program and strategy are skipped.
//!
//! Every configuration runs `--runs` times; the tables show medians, and every ratio divides two
//! medians measured in this same invocation (never against a stored baseline). A strategy that
//! `reprise record` rejects is reported as "unavailable" rather than failing the bench. Output:
//! a Markdown report (also printed to stdout), `runs.csv` and `runs.json` with every raw run, and
//! `record-slowdown.svg`. The exit status is non-zero only when a replay did not verify: timings
//! are reported, never asserted.

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
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

/// `-n` for a suite program at `size` (none: the program's default).
fn size_arg(name: &str, size: Size) -> Option<&'static str> {
    match size {
        Size::Tiny => Some(tiny_size(name)),
        Size::Small => Some(small_size(name)),
        Size::Default => None,
    }
}

/// About 1/32 of each program's default work (the exponent follows the kernel's complexity).
fn small_size(name: &str) -> &'static str {
    match name {
        "fft" => "32768",
        "lu" => "480",
        "radix" => "524288",
        "ocean" => "192",
        "nbody" => "768",
        "water" => "512",
        "matmul" => "384",
        "histogram" => "1048576",
        "blackscholes" => "16384",
        "kmeans" => "10000",
        _ => "10000",
    }
}

/// A few milliseconds natively.
fn tiny_size(name: &str) -> &'static str {
    match name {
        "fft" => "4096",
        "lu" => "128",
        "radix" => "65536",
        "ocean" => "64",
        "nbody" => "256",
        "water" => "192",
        "matmul" => "128",
        "histogram" => "65536",
        "blackscholes" => "4096",
        "kmeans" => "5000",
        _ => "1000",
    }
}

/// ThreadSanitizer settings for the peer: report, but never fail the run.
const TSAN_OPTIONS: &str = "report_signal_unsafe=0 halt_on_error=0 exitcode=0";

#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize)]
#[serde(rename_all = "lowercase")]
enum Kind {
    Suite,
    Bug,
}

/// One program from a manifest.
struct Program {
    name: String,
    kind: Kind,
    source: PathBuf,
    cxx: bool,
    args: Vec<String>,
}

/// The four builds of one program.
struct Binaries {
    native: PathBuf,
    floor: PathBuf,
    tsan: PathBuf,
    reprise: PathBuf,
}

/// One raw run: a row of runs.csv / runs.json.
#[derive(Serialize, Clone, Default)]
struct Run {
    program: String,
    /// native, floor, tsan, record or replay.
    config: String,
    /// The strategy (record and replay rows only).
    strategy: String,
    run: usize,
    seconds: f64,
    /// Exit status (128 + signal when killed); none when the strategy was unavailable.
    exit: Option<i32>,
    /// Trace file size as stored (zstd chunks), record rows.
    trace_bytes: Option<u64>,
    /// Raw (decompressed) event bytes, record rows.
    event_bytes: Option<u64>,
    /// gzip -9 of the raw event bytes, record rows.
    gzip9_bytes: Option<u64>,
    events: Option<u64>,
    vector_runs: Option<u64>,
    threads: Option<u32>,
    /// Record rows: events per kind (plain reads, plain writes, atomics, synchronisation
    /// operations: locks, condvars, semaphores, barriers, once, create and join; ranged
    /// accesses: memcpy/memset/memmove and struct copies; stdio and libc RNG calls).
    reads: Option<u64>,
    writes: Option<u64>,
    atomics: Option<u64>,
    syncs: Option<u64>,
    ranges: Option<u64>,
    stdio: Option<u64>,
    /// Record rows of TPLAY: transactions, transactional interleavings (dSet), atomicity
    /// violations (seed 003 table IV).
    transactions: Option<u64>,
    interleavings: Option<u64>,
    violations: Option<u64>,
    /// Killed after `--timeout` seconds.
    timed_out: bool,
    /// Replay rows: did `reprise replay` verify?
    verified: Option<bool>,
    /// Why something is missing (unavailable strategy, failed record, ...).
    note: String,
}

/// Everything written to runs.json.
#[derive(Serialize)]
struct Report<'a> {
    threads: u32,
    runs_per_config: usize,
    quick: bool,
    size: String,
    strategies: &'a [String],
    programs: Vec<ProgramInfo>,
    runs: &'a [Run],
}

#[derive(Serialize)]
struct ProgramInfo {
    name: String,
    kind: Kind,
    args: Vec<String>,
}

/// Run the bench; returns the exit status (1 when a replay did not verify).
pub fn run(o: BenchOpts) -> Result<i32> {
    let started = Instant::now();
    let root = find_root()?;
    let reprise = std::env::current_exe().context("cannot locate the reprise binary")?;
    crate::cc::runtime_archive()?; // fail early, before building anything
    let runs = o.runs.unwrap_or(if o.quick { 1 } else { 5 }).max(1);
    let mut o = o;
    if o.strategies.is_empty() {
        // --quick checks the default strategy; the full bench compares all of them.
        o.strategies = if o.quick {
            vec!["ownership".into()]
        } else {
            reprise_proto::STRATEGIES
                .iter()
                .map(|(n, _)| n.to_string())
                .collect()
        };
    }
    let size = o.size.unwrap_or(Size::Tiny);
    let mut programs = load_programs(&root)?;
    let wanted: Vec<String> = if !o.programs.is_empty() {
        o.programs.clone()
    } else if o.quick {
        QUICK_PROGRAMS.iter().map(|s| s.to_string()).collect()
    } else {
        default_programs(&root, &programs)?
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
            if let Some(n) = size_arg(&p.name, size) {
                p.args.extend(["-n".into(), n.into()]);
            }
        }
    }

    std::fs::create_dir_all(&o.out)
        .with_context(|| format!("cannot create {}", o.out.display()))?;
    let tmp = tempfile::Builder::new()
        .prefix("reprise-bench-")
        .tempdir()
        .context("cannot create a temporary directory")?;
    let work = tmp.path();

    let per_program = 3 + 2 * o.strategies.len();
    let total = 1 + 4 * programs.len() + runs * per_program * programs.len();
    let pb = ProgressBar::new(total as u64);
    pb.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
            .context("progress bar template")?,
    );

    pb.set_message("building the floor");
    let floor_dir = build_floor(&root, work)?;
    pb.inc(1);
    let mut bins = Vec::new();
    for p in &programs {
        bins.push(build_program(p, &reprise, &floor_dir, work, &pb)?);
    }

    let mut all: Vec<Run> = Vec::new();
    let mut unavailable: BTreeMap<String, String> = BTreeMap::new();
    for (p, b) in programs.iter().zip(&bins) {
        for r in 0..runs {
            for (config, exe) in [
                ("native", &b.native),
                ("floor", &b.floor),
                ("tsan", &b.tsan),
            ] {
                pb.set_message(format!("{}: {config} (run {})", p.name, r + 1));
                let mut cmd = Command::new(exe);
                cmd.args(&p.args).current_dir(work);
                if config == "tsan" {
                    cmd.env("TSAN_OPTIONS", TSAN_OPTIONS);
                }
                let t = timed(&mut cmd, o.timeout)
                    .with_context(|| format!("cannot run {}", exe.display()))?;
                all.push(Run {
                    program: p.name.clone(),
                    config: config.into(),
                    run: r,
                    seconds: t.seconds,
                    exit: t.exit,
                    timed_out: t.exit.is_none(),
                    ..Default::default()
                });
                pb.inc(1);
            }
            for s in &o.strategies {
                pb.set_message(format!("{}: record {s} (run {})", p.name, r + 1));
                let earlier_timeout = all
                    .iter()
                    .any(|x| x.program == p.name && x.strategy == *s && x.timed_out && x.run < r);
                let (rec, rep) = if earlier_timeout {
                    skipped(p, s, r)
                } else {
                    record_and_replay(p, b, s, r, &reprise, work, o.timeout, &mut unavailable)?
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
    }
    pb.finish_and_clear();

    let elapsed = started.elapsed().as_secs_f64();
    let md = markdown(
        &programs,
        &o.strategies,
        &unavailable,
        &all,
        runs,
        o.threads,
        size,
        elapsed,
    );
    print!("{md}");
    write_file(&o.out.join("bench.md"), md.as_bytes())?;
    write_file(&o.out.join("runs.csv"), csv(&all).as_bytes())?;
    let report = Report {
        threads: o.threads,
        runs_per_config: runs,
        quick: o.quick,
        size: format!("{size:?}").to_lowercase(),
        strategies: &o.strategies,
        programs: programs
            .iter()
            .map(|p| ProgramInfo {
                name: p.name.clone(),
                kind: p.kind,
                args: p.args.clone(),
            })
            .collect(),
        runs: &all,
    };
    let json = serde_json::to_string_pretty(&report).context("cannot serialise the runs")?;
    write_file(&o.out.join("runs.json"), json.as_bytes())?;
    write_file(
        &o.out.join("record-slowdown.svg"),
        svg(&programs, &o.strategies, &unavailable, &all).as_bytes(),
    )?;
    eprintln!(
        "reprise: bench finished in {elapsed:.1}s; results in {}",
        o.out.display()
    );

    // The seeds' model strategies replay only part of their recordings (that is what the
    // replay success table measures); LEAP and ownership must replay every recording.
    let failed = all
        .iter()
        .filter(|r| {
            r.verified == Some(false) && (r.strategy == "leap" || r.strategy == "ownership")
        })
        .count();
    if failed > 0 {
        eprintln!("reprise: bench: {failed} leap/ownership replay(s) did not verify");
        return Ok(1);
    }
    Ok(0)
}

/// The source tree: the first ancestor of the working directory, then of the binary, holding
/// `bench/programs/manifest.txt`.
fn find_root() -> Result<PathBuf> {
    let mut starts = vec![std::env::current_dir().context("cannot read the working directory")?];
    if let Ok(exe) = std::env::current_exe() {
        starts.push(exe);
    }
    for s in starts {
        for d in s.ancestors() {
            if d.join("bench/programs/manifest.txt").is_file() {
                return Ok(d.to_path_buf());
            }
        }
    }
    bail!("cannot find bench/programs/manifest.txt above the working directory or the reprise binary: run the bench inside the reprise source tree")
}

/// The full bench's programs: the suite, then the bug programs `bench/programs/bugs.txt`
/// names (one per line, `#` comments).
fn default_programs(root: &Path, programs: &[Program]) -> Result<Vec<String>> {
    let path = root.join("bench/programs/bugs.txt");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let bugs: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    if let Some(b) = bugs.iter().find(|b| {
        !programs
            .iter()
            .any(|p| p.kind == Kind::Bug && p.name == **b)
    }) {
        bail!(
            "{}: `{b}` is not in tests/programs/manifest.txt",
            path.display()
        );
    }
    Ok(programs
        .iter()
        .filter(|p| p.kind == Kind::Suite || bugs.contains(&p.name.as_str()))
        .map(|p| p.name.clone())
        .collect())
}

/// Both manifests: the suite (`name source args`) then the bug programs
/// (`name source lang racy crashes args`).
fn load_programs(root: &Path) -> Result<Vec<Program>> {
    let mut out = Vec::new();
    for (dir, kind) in [
        ("bench/programs", Kind::Suite),
        ("tests/programs", Kind::Bug),
    ] {
        let dir = root.join(dir);
        let path = dir.join("manifest.txt");
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        for (i, line) in text.lines().enumerate() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.is_empty() || f[0].starts_with('#') {
                continue;
            }
            let (args_from, cxx) = match kind {
                Kind::Suite if f.len() >= 3 => (2, false),
                Kind::Bug if f.len() >= 6 => (5, f[2] == "c++"),
                _ => bail!("{}:{}: malformed line `{line}`", path.display(), i + 1),
            };
            let args = f[args_from..]
                .iter()
                .filter(|a| **a != "-")
                .map(|a| a.to_string())
                .collect();
            out.push(Program {
                name: f[0].into(),
                kind,
                source: dir.join(f[1]),
                cxx,
                args,
            });
        }
    }
    Ok(out)
}

/// Compile `bench/floor/floor.c` into `<work>/floor/libtsan.a`; returns that directory.
fn build_floor(root: &Path, work: &Path) -> Result<PathBuf> {
    let dir = work.join("floor");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let src = root.join("bench/floor/floor.c");
    let obj = dir.join("floor.o");
    let mut cc = Command::new("gcc");
    cc.args(["-O2", "-c"]).arg(&src).arg("-o").arg(&obj);
    check(&mut cc, "compile the floor")?;
    let mut ar = Command::new("ar");
    ar.arg("rcs").arg(dir.join("libtsan.a")).arg(&obj);
    check(&mut ar, "archive the floor")?;
    Ok(dir)
}

/// Build one program native, floor, tsan and with `reprise cc`.
fn build_program(
    p: &Program,
    reprise: &Path,
    floor_dir: &Path,
    work: &Path,
    pb: &ProgressBar,
) -> Result<Binaries> {
    let compiler = if p.cxx { "g++" } else { "gcc" };
    let std_flag = if p.cxx { "-std=c++17" } else { "-std=gnu11" };
    let dir = work.join("bin");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let b = Binaries {
        native: dir.join(format!("{}.native", p.name)),
        floor: dir.join(format!("{}.floor", p.name)),
        tsan: dir.join(format!("{}.tsan", p.name)),
        reprise: dir.join(format!("{}.reprise", p.name)),
    };
    let base = |cmd: &mut Command, out: &Path| {
        cmd.args(["-O2", "-pthread", std_flag])
            .arg(&p.source)
            .arg("-o")
            .arg(out);
    };

    pb.set_message(format!("{}: build native", p.name));
    let mut c = Command::new(compiler);
    base(&mut c, &b.native);
    c.arg("-lm");
    check(&mut c, &format!("build {} natively", p.name))?;
    pb.inc(1);

    pb.set_message(format!("{}: build floor", p.name));
    let mut c = Command::new(compiler);
    c.args([
        "-fsanitize=thread",
        "--param=tsan-instrument-func-entry-exit=0",
    ]);
    base(&mut c, &b.floor);
    // gcc adds -ltsan for -fsanitize=thread: the floor archive, named libtsan.a, is found first.
    c.arg(format!("-L{}", floor_dir.display()))
        .args(["-Wl,-u,__tsan_init", "-lm"]);
    check(&mut c, &format!("build {} against the floor", p.name))?;
    pb.inc(1);

    pb.set_message(format!("{}: build tsan", p.name));
    let mut c = Command::new(compiler);
    c.arg("-fsanitize=thread");
    base(&mut c, &b.tsan);
    c.arg("-lm");
    check(&mut c, &format!("build {} with ThreadSanitizer", p.name))?;
    pb.inc(1);

    pb.set_message(format!("{}: build reprise", p.name));
    let mut c = Command::new(reprise);
    c.arg(if p.cxx { "c++" } else { "cc" });
    base(&mut c, &b.reprise);
    check(&mut c, &format!("build {} with reprise cc", p.name))?;
    pb.inc(1);
    Ok(b)
}

/// Run a command to completion, failing with its stderr when it fails.
fn check(cmd: &mut Command, what: &str) -> Result<()> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot {what}: {cmd:?}"))?;
    if !out.status.success() {
        bail!(
            "cannot {what}: {cmd:?} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// A finished, timed process.
struct Timed {
    seconds: f64,
    /// Exit status (128 + signal when killed by one); None when it ran past the limit.
    exit: Option<i32>,
    stderr: String,
}

/// Run with stdout discarded and stderr captured; wall time from spawn to exit. A process
/// still running after `limit` is killed with its whole process group (a recorded program
/// too) and reported with `exit: None`.
fn timed(cmd: &mut Command, limit: std::time::Duration) -> Result<Timed> {
    use std::io::Read as _;
    use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0);
    let t0 = Instant::now();
    let mut child = cmd.spawn()?;
    let mut err = child.stderr.take().context("no stderr pipe")?;
    let reader = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = err.read_to_end(&mut b);
        b
    });
    let status = loop {
        if let Some(st) = child.try_wait()? {
            break Some(st);
        }
        if t0.elapsed() >= limit {
            // SAFETY: plain kill(2) of the process group we created for the child.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            child.wait()?;
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    let seconds = t0.elapsed().as_secs_f64();
    let stderr = reader.join().unwrap_or_default();
    let exit = status.map(|st| {
        st.code()
            .or_else(|| st.signal().map(|s| 128 + s))
            .unwrap_or(-1)
    });
    Ok(Timed {
        seconds,
        exit,
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    })
}

/// The rows of a run not attempted because an earlier run of the same program and strategy
/// timed out.
fn skipped(p: &Program, strategy: &str, run: usize) -> (Run, Run) {
    let row = |config: &str| Run {
        program: p.name.clone(),
        config: config.into(),
        strategy: strategy.into(),
        run,
        note: "skipped: an earlier run timed out".into(),
        ..Default::default()
    };
    (row("record"), row("replay"))
}

/// The last non-empty line of a process's stderr (for notes).
fn last_line(s: &str) -> String {
    s.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_string()
}

/// Record one run under `strategy`, measure its trace, replay it; returns the two rows.
#[allow(clippy::too_many_arguments)]
fn record_and_replay(
    p: &Program,
    b: &Binaries,
    strategy: &str,
    run: usize,
    reprise: &Path,
    work: &Path,
    limit: std::time::Duration,
    unavailable: &mut BTreeMap<String, String>,
) -> Result<(Run, Run)> {
    let row = |config: &str| Run {
        program: p.name.clone(),
        config: config.into(),
        strategy: strategy.into(),
        run,
        ..Default::default()
    };
    let (mut rec, mut rep) = (row("record"), row("replay"));
    if let Some(why) = unavailable.get(strategy) {
        rec.note = format!("unavailable: {why}");
        rep.note = rec.note.clone();
        return Ok((rec, rep));
    }
    let trace = work.join(format!("{}.{strategy}.{run}.trace", p.name));
    let mut cmd = Command::new(reprise);
    cmd.arg("record")
        .arg("-o")
        .arg(&trace)
        .args(["--strategy", strategy, "--"])
        .arg(&b.reprise)
        .args(&p.args)
        .current_dir(work);
    let t = timed(&mut cmd, limit)
        .with_context(|| format!("cannot run reprise record on {}", p.name))?;
    rec.seconds = t.seconds;
    rec.exit = t.exit;
    if t.exit.is_none() {
        rec.timed_out = true;
        rec.note = format!("timeout: record killed after {:.0}s", limit.as_secs_f64());
        rep.note = "no trace to replay".into();
        std::fs::remove_file(&trace).ok();
        return Ok((rec, rep));
    }
    if !trace.is_file() || !t.stderr.contains("trace saved to") {
        let why = last_line(&t.stderr);
        if why.contains("strategy") {
            // `reprise record` rejected the strategy: report it, don't fail the bench.
            unavailable.insert(
                strategy.to_string(),
                why.trim_start_matches("reprise: ").to_string(),
            );
            rec.exit = None;
            rec.note = format!("unavailable: {}", unavailable[strategy]);
            rep.note = rec.note.clone();
        } else {
            rec.note = format!("record failed: {why}");
            rep.note = "no trace to replay".into();
            rep.verified = Some(false);
        }
        std::fs::remove_file(&trace).ok();
        return Ok((rec, rep));
    }
    match measure_trace(&trace) {
        Ok(m) => {
            rec.trace_bytes = Some(m.file_bytes);
            rec.event_bytes = Some(m.event_bytes);
            rec.gzip9_bytes = Some(m.gzip9_bytes);
            rec.events = Some(m.events);
            rec.vector_runs = Some(m.vector_runs);
            rec.threads = Some(m.threads);
            if let Some(k) = m.kinds {
                use reprise_proto::kind::*;
                let n = |kind: u64| k[kind as usize];
                rec.reads = Some(n(READ));
                rec.writes = Some(n(WRITE));
                rec.atomics = Some(n(ATOMIC));
                rec.syncs = Some([LOCK, COND, SEM, CREATE, ONCE, JOIN].map(n).iter().sum());
                rec.ranges = Some(n(RANGE));
                rec.stdio = Some(n(STDIO));
            }
            if let Some((tx, il, av)) = m.tplay {
                rec.transactions = Some(tx);
                rec.interleavings = Some(il);
                rec.violations = Some(av);
            }
        }
        Err(e) => rec.note = format!("cannot read the trace: {e:#}"),
    }
    let mut cmd = Command::new(reprise);
    cmd.arg("replay").arg(&trace).current_dir(work);
    let t = timed(&mut cmd, limit)
        .with_context(|| format!("cannot run reprise replay on {}", p.name))?;
    rep.seconds = t.seconds;
    rep.exit = t.exit;
    let verified = t.exit.is_some_and(|e| e != 125) && t.stderr.contains("replay verified");
    rep.verified = Some(verified);
    if t.exit.is_none() {
        rep.timed_out = true;
        rep.note = format!("timeout: replay killed after {:.0}s", limit.as_secs_f64());
    } else if !verified {
        rep.note = last_line(&t.stderr);
    }
    std::fs::remove_file(&trace).with_context(|| format!("cannot remove {}", trace.display()))?;
    Ok((rec, rep))
}

/// Sizes and counts of one trace.
struct TraceMeasure {
    file_bytes: u64,
    event_bytes: u64,
    gzip9_bytes: u64,
    events: u64,
    vector_runs: u64,
    threads: u32,
    kinds: Option<[u64; reprise_proto::KINDS]>,
    /// TPLAY's (transactions, transactional interleavings, atomicity violations).
    tplay: Option<(u64, u64, u64)>,
}

/// Decompress the trace's event chunks (the bytes `replay::load` decodes), decode them, and
/// gzip -9 the raw event bytes to compare with the zstd the trace stores. Streams chunk by
/// chunk: a long recording's raw events can be gigabytes.
fn measure_trace(path: &Path) -> Result<TraceMeasure> {
    use flate2::{write::GzEncoder, Compression};
    let file_bytes = std::fs::metadata(path)
        .with_context(|| format!("cannot stat {}", path.display()))?
        .len();
    let mut reader = reprise_trace::TraceReader::open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    let mut rec = crate::recording::Recording::default();
    let mut gz = GzEncoder::new(ByteCounter(0), Compression::new(9));
    let (mut pending, mut event_bytes) = (Vec::new(), 0u64);
    while let Some(c) = reader
        .next_chunk()
        .with_context(|| format!("cannot read {}", path.display()))?
    {
        if c.kind != reprise_trace::ChunkKind::Events {
            continue;
        }
        event_bytes += c.data.len() as u64;
        gz.write_all(&c.data).context("gzip")?;
        pending.extend_from_slice(&c.data);
        let used = rec
            .feed(&pending)
            .with_context(|| format!("{}: events are corrupt", path.display()))?;
        pending.drain(..used);
    }
    if !pending.is_empty() {
        bail!("{}: the event stream ends inside a frame", path.display());
    }
    let gzip9_bytes = gz.finish().context("gzip")?.0;
    Ok(TraceMeasure {
        file_bytes,
        event_bytes,
        gzip9_bytes,
        events: rec.total_events(),
        vector_runs: rec.vector_runs() as u64,
        threads: rec.nthreads(),
        kinds: rec.kinds,
        tplay: tplay_stats(&rec.model_log),
    })
}

/// TPLAY's statistics from its model log (the JSON `TplayLog`); None for other strategies.
fn tplay_stats(log: &[u8]) -> Option<(u64, u64, u64)> {
    // Typed, so the rest of a log of gigabytes is skipped, never built as a JSON tree (which
    // took 21 GiB for one AggrePlay log and got the bench killed).
    #[derive(serde::Deserialize)]
    struct Stats {
        transactions: u64,
        interleavings: u64,
        violations: u64,
    }
    #[derive(serde::Deserialize)]
    struct Log {
        stats: Option<Stats>,
    }
    let st = serde_json::from_slice::<Log>(log).ok()?.stats?;
    Some((st.transactions, st.interleavings, st.violations))
}

/// A writer that only counts: the gzip output's size is all we need.
struct ByteCounter(u64);

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn write_file(path: &Path, data: &[u8]) -> Result<()> {
    std::fs::write(path, data).with_context(|| format!("cannot write {}", path.display()))
}

// ---------------------------------------------------------------------------------------------
// Aggregation and output.

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Median seconds of a program's configuration (record/replay rows of `strategy` only when the
/// run produced a time: unavailable strategies have none).
fn median_secs(runs: &[Run], program: &str, config: &str, strategy: &str) -> Option<f64> {
    median(
        runs.iter()
            .filter(|r| {
                r.program == program
                    && r.config == config
                    && r.strategy == strategy
                    && r.exit.is_some()
            })
            .map(|r| r.seconds)
            .collect(),
    )
}

/// Median of a record-row measurement.
fn median_of(
    runs: &[Run],
    program: &str,
    strategy: &str,
    f: impl Fn(&Run) -> Option<u64>,
) -> Option<f64> {
    median(
        runs.iter()
            .filter(|r| r.program == program && r.config == "record" && r.strategy == strategy)
            .filter_map(|r| f(r).map(|v| v as f64))
            .collect(),
    )
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

fn fmt_x(v: Option<f64>) -> String {
    match v {
        Some(v) if v >= 100.0 => format!("{v:.0}×"),
        Some(v) if v >= 10.0 => format!("{v:.1}×"),
        Some(v) => format!("{v:.2}×"),
        None => "–".into(),
    }
}

/// A median count, or a dash when there is none.
fn fmt_count(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.0}")).unwrap_or("–".into())
}

fn fmt_kib(v: Option<f64>) -> String {
    match v {
        Some(v) => format!("{:.1}", v / 1024.0),
        None => "–".into(),
    }
}

/// A slowdown cell: the ratio of medians, or, when a run of this configuration was killed
/// at the time limit, a lower bound (the medians of the runs that finished would flatter it).
fn slowdown_cell(
    runs: &[Run],
    program: &str,
    config: &str,
    strategy: &str,
    native: Option<f64>,
) -> String {
    let timeouts: Vec<&Run> = runs
        .iter()
        .filter(|r| {
            r.program == program && r.config == config && r.strategy == strategy && r.timed_out
        })
        .collect();
    if let Some(t) = timeouts.first() {
        return format!("> {} (timeout)", fmt_x(ratio(Some(t.seconds), native)));
    }
    fmt_x(ratio(median_secs(runs, program, config, strategy), native))
}

#[allow(clippy::too_many_arguments)]
fn markdown(
    programs: &[Program],
    strategies: &[String],
    unavailable: &BTreeMap<String, String>,
    runs: &[Run],
    nruns: usize,
    threads: u32,
    size: Size,
    elapsed: f64,
) -> String {
    let mut s = String::new();
    let cell = |strategy: &str, v: String| {
        if unavailable.contains_key(strategy) {
            "unavailable".to_string()
        } else {
            v
        }
    };
    let header = |s: &mut String, first: &[&str]| {
        let cols: Vec<String> = first
            .iter()
            .map(|c| c.to_string())
            .chain(strategies.iter().cloned())
            .collect();
        let _ = writeln!(s, "| {} |", cols.join(" | "));
        let _ = writeln!(
            s,
            "|{}",
            cols.iter()
                .enumerate()
                .map(|(i, _)| if i < first.len().min(2) {
                    "---|"
                } else {
                    "---:|"
                })
                .collect::<String>()
        );
    };
    let _ = writeln!(s, "# reprise bench\n");
    let _ = writeln!(
        s,
        "{} program(s), median of {nruns} run(s) per configuration, suite programs with `-t {threads}`{}; {} CPU(s); {elapsed:.0}s in all. \
         Ratios divide medians measured in this invocation.\n",
        programs.len(),
        match size {
            Size::Tiny => " and tiny `-n`",
            Size::Small => " and small `-n` (about 1/32 of the default work)",
            Size::Default => " at their default sizes",
        },
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
    );
    for (st, why) in unavailable {
        let _ = writeln!(
            s,
            "`{st}`: unavailable (`reprise record --strategy {st}` says: {why})\n"
        );
    }

    let _ = writeln!(s, "## Record slowdown (record / native)\n");
    let _ = writeln!(s, "floor: empty ThreadSanitizer callbacks (the instrumentation alone); tsan: gcc's ThreadSanitizer (a peer).\n");
    header(&mut s, &["program", "args", "native (s)", "floor", "tsan"]);
    for p in programs {
        let native = median_secs(runs, &p.name, "native", "");
        let mut row = vec![
            p.name.clone(),
            if p.args.is_empty() {
                "–".into()
            } else {
                format!("`{}`", p.args.join(" "))
            },
            native.map(|v| format!("{v:.3}")).unwrap_or("–".into()),
            fmt_x(ratio(median_secs(runs, &p.name, "floor", ""), native)),
            fmt_x(ratio(median_secs(runs, &p.name, "tsan", ""), native)),
        ];
        for st in strategies {
            row.push(cell(st, slowdown_cell(runs, &p.name, "record", st, native)));
        }
        let _ = writeln!(s, "| {} |", row.join(" | "));
    }

    let _ = writeln!(s, "\n## Replay slowdown (replay / native)\n");
    header(&mut s, &["program"]);
    for p in programs {
        let native = median_secs(runs, &p.name, "native", "");
        let mut row = vec![p.name.clone()];
        for st in strategies {
            row.push(cell(st, slowdown_cell(runs, &p.name, "replay", st, native)));
        }
        let _ = writeln!(s, "| {} |", row.join(" | "));
    }

    let _ = writeln!(
        s,
        "\n## Against the floor (record / floor) and replay / record\n"
    );
    let _ = writeln!(s, "The floor is the same instrumentation with empty callbacks: every nanosecond above it is the strategy's. Last row: geometric means.\n");
    {
        let mut cols = vec!["program".to_string()];
        for st in strategies {
            cols.push(format!("{st} record/floor"));
            cols.push(format!("{st} replay/record"));
        }
        let _ = writeln!(s, "| {} |", cols.join(" | "));
        let _ = writeln!(s, "|{}", "---|".repeat(cols.len()));
        let mut logs: Vec<(f64, f64, usize, usize)> = vec![(0.0, 0.0, 0, 0); strategies.len()];
        for p in programs {
            let floor = median_secs(runs, &p.name, "floor", "");
            let mut row = vec![p.name.clone()];
            for (i, st) in strategies.iter().enumerate() {
                let rec = median_secs(runs, &p.name, "record", st);
                let rf = ratio(rec, floor);
                let rr = ratio(median_secs(runs, &p.name, "replay", st), rec);
                if let Some(v) = rf {
                    logs[i].0 += v.ln();
                    logs[i].2 += 1;
                }
                if let Some(v) = rr {
                    logs[i].1 += v.ln();
                    logs[i].3 += 1;
                }
                row.push(fmt_x(rf));
                row.push(fmt_x(rr));
            }
            let _ = writeln!(s, "| {} |", row.join(" | "));
        }
        let mut row = vec!["geomean".to_string()];
        for l in &logs {
            let g = |sum: f64, n: usize| (n > 0).then(|| (sum / n as f64).exp());
            row.push(fmt_x(g(l.0, l.2)));
            row.push(fmt_x(g(l.1, l.3)));
        }
        let _ = writeln!(s, "| {} |", row.join(" | "));
    }

    let _ = writeln!(s, "\n## Log size (KiB: trace file as stored, zstd / gzip -9 of the raw events / raw events)\n");
    header(&mut s, &["program"]);
    for p in programs {
        let mut row = vec![p.name.clone()];
        for st in strategies {
            let v = format!(
                "{} / {} / {}",
                fmt_kib(median_of(runs, &p.name, st, |r| r.trace_bytes)),
                fmt_kib(median_of(runs, &p.name, st, |r| r.gzip9_bytes)),
                fmt_kib(median_of(runs, &p.name, st, |r| r.event_bytes)),
            );
            row.push(cell(st, v));
        }
        let _ = writeln!(s, "| {} |", row.join(" | "));
    }

    let _ = writeln!(s, "\n## Events (events / vector runs / threads)\n");
    header(&mut s, &["program"]);
    for p in programs {
        let mut row = vec![p.name.clone()];
        for st in strategies {
            let f = fmt_count;
            let v = format!(
                "{} / {} / {}",
                f(median_of(runs, &p.name, st, |r| r.events)),
                f(median_of(runs, &p.name, st, |r| r.vector_runs)),
                f(median_of(runs, &p.name, st, |r| r.threads.map(u64::from))),
            );
            row.push(cell(st, v));
        }
        let _ = writeln!(s, "| {} |", row.join(" | "));
    }

    let _ = writeln!(
        s,
        "\n## Events by kind (the first strategy's recording; sync: locks, condvars, semaphores, barriers, once, create, join; ranged: memcpy/memset/memmove and struct copies)\n"
    );
    let _ = writeln!(
        s,
        "| program | reads | writes | atomics | sync | ranged | stdio |\n|---|---:|---:|---:|---:|---:|---:|"
    );
    for p in programs {
        let st = strategies
            .iter()
            .find(|st| median_of(runs, &p.name, st, |r| r.reads).is_some());
        let f = |g: fn(&Run) -> Option<u64>| {
            fmt_count(st.and_then(|st| median_of(runs, &p.name, st, g)))
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} |",
            p.name,
            f(|r| r.reads),
            f(|r| r.writes),
            f(|r| r.atomics),
            f(|r| r.syncs),
            f(|r| r.ranges),
            f(|r| r.stdio)
        );
    }

    if strategies.iter().any(|s| s == "tplay") && !unavailable.contains_key("tplay") {
        let _ = writeln!(
            s,
            "\n## TPLAY (seed 003 table IV): transactions / transactional interleavings / atomicity violations\n"
        );
        let _ = writeln!(
            s,
            "| program | transactions | interleavings | violations |\n|---|---:|---:|---:|"
        );
        for p in programs {
            let f = |g: fn(&Run) -> Option<u64>| fmt_count(median_of(runs, &p.name, "tplay", g));
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} |",
                p.name,
                f(|r| r.transactions),
                f(|r| r.interleavings),
                f(|r| r.violations)
            );
        }
    }

    let _ = writeln!(s, "\n## Replay success (verified / runs)\n");
    header(&mut s, &["program"]);
    for p in programs {
        let mut row = vec![p.name.clone()];
        for st in strategies {
            let reps: Vec<&Run> = runs
                .iter()
                .filter(|r| r.program == p.name && r.config == "replay" && r.strategy == *st)
                .collect();
            let ok = reps.iter().filter(|r| r.verified == Some(true)).count();
            let tried = reps
                .iter()
                .filter(|r| !r.note.starts_with("skipped"))
                .count();
            let timeouts = runs
                .iter()
                .filter(|r| r.program == p.name && r.strategy == *st && r.timed_out)
                .count();
            row.push(cell(
                st,
                if timeouts > 0 {
                    format!("{ok}/{tried} ({timeouts} timeout)")
                } else {
                    format!("{ok}/{tried}")
                },
            ));
        }
        let _ = writeln!(s, "| {} |", row.join(" | "));
    }
    s
}

/// Columns of runs.csv, in order: the fields of [`Run`].
const CSV_COLUMNS: &[&str] = &[
    "program",
    "config",
    "strategy",
    "run",
    "seconds",
    "exit",
    "timed_out",
    "trace_bytes",
    "event_bytes",
    "gzip9_bytes",
    "events",
    "vector_runs",
    "threads",
    "reads",
    "writes",
    "atomics",
    "syncs",
    "ranges",
    "stdio",
    "transactions",
    "interleavings",
    "violations",
    "verified",
    "note",
];

fn csv(runs: &[Run]) -> String {
    fn field(v: Option<&serde_json::Value>) -> String {
        match v {
            None | Some(serde_json::Value::Null) => String::new(),
            Some(serde_json::Value::String(s)) if s.contains([',', '"', '\n']) => {
                format!("\"{}\"", s.replace('"', "\"\""))
            }
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
        }
    }
    let mut s = CSV_COLUMNS.join(",");
    s.push('\n');
    for r in runs {
        let v = serde_json::to_value(r).unwrap_or_default();
        let row: Vec<String> = CSV_COLUMNS.iter().map(|c| field(v.get(*c))).collect();
        s.push_str(&row.join(","));
        s.push('\n');
    }
    s
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Grouped bar chart of record slowdown (log scale): per program, the floor and tsan for
/// reference, then each available strategy.
fn svg(
    programs: &[Program],
    strategies: &[String],
    unavailable: &BTreeMap<String, String>,
    runs: &[Run],
) -> String {
    const PALETTE: &[&str] = &[
        "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
    ];
    let mut series: Vec<(String, String, &str)> = vec![
        ("floor".into(), String::new(), "#bab0ac"),
        ("tsan".into(), String::new(), "#9c755f"),
    ];
    for (i, st) in strategies
        .iter()
        .filter(|s| !unavailable.contains_key(*s))
        .enumerate()
    {
        series.push((
            format!("record {st}"),
            st.clone(),
            PALETTE[i % PALETTE.len()],
        ));
    }
    let value = |p: &Program, label: &str, st: &str| -> Option<f64> {
        let native = median_secs(runs, &p.name, "native", "");
        let config = if st.is_empty() { label } else { "record" };
        ratio(median_secs(runs, &p.name, config, st), native).filter(|v| *v > 0.0)
    };
    let vals: Vec<f64> = programs
        .iter()
        .flat_map(|p| series.iter().filter_map(|(l, st, _)| value(p, l, st)))
        .collect();
    let lo_exp = vals.iter().cloned().fold(1.0f64, f64::min).log10().floor() as i32;
    let hi_exp =
        (vals.iter().cloned().fold(10.0f64, f64::max).log10().ceil() as i32).max(lo_exp + 1);

    let (bar_w, gap, left, top, plot_h, bottom) = (12.0, 16.0, 70.0, 40.0, 320.0, 110.0);
    let group_w = bar_w * series.len() as f64 + gap;
    let width = left + group_w * programs.len().max(1) as f64 + 170.0;
    let height = top + plot_h + bottom;
    let y = |v: f64| top + plot_h * (1.0 - (v.log10() - lo_exp as f64) / (hi_exp - lo_exp) as f64);

    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{left}" y="20" font-size="14">Record slowdown (run time / native, log scale)</text>"#
    );
    for e in lo_exp..=hi_exp {
        let v = 10f64.powi(e);
        let yy = y(v);
        let label = if e >= 0 {
            format!("{v:.0}×")
        } else {
            format!("{v}×")
        };
        let _ = writeln!(
            s,
            r##"<line x1="{left}" x2="{:.1}" y1="{yy:.1}" y2="{yy:.1}" stroke="#ddd"/>"##,
            width - 170.0
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{label}</text>"#,
            left - 6.0,
            yy + 4.0
        );
    }
    let base = y(10f64.powi(lo_exp));
    for (i, p) in programs.iter().enumerate() {
        let gx = left + gap / 2.0 + group_w * i as f64;
        for (j, (label, st, color)) in series.iter().enumerate() {
            if let Some(v) = value(p, label, st) {
                let x = gx + bar_w * j as f64;
                let yy = y(v);
                let _ = writeln!(
                    s,
                    r#"<rect x="{x:.1}" y="{yy:.1}" width="{:.1}" height="{:.1}" fill="{color}"><title>{} {}: {v:.2}×</title></rect>"#,
                    bar_w - 1.0,
                    (base - yy).max(0.0),
                    xml_escape(&p.name),
                    xml_escape(label),
                );
            }
        }
        let cx = gx + bar_w * series.len() as f64 / 2.0;
        let ly = top + plot_h + 12.0;
        let _ = writeln!(
            s,
            r#"<text x="{cx:.1}" y="{ly:.1}" text-anchor="end" transform="rotate(-40 {cx:.1} {ly:.1})">{}</text>"#,
            xml_escape(&p.name)
        );
    }
    let _ = writeln!(
        s,
        r#"<line x1="{left}" x2="{left}" y1="{top}" y2="{:.1}" stroke="black"/>"#,
        top + plot_h
    );
    let lx = width - 160.0;
    for (j, (label, _, color)) in series.iter().enumerate() {
        let ly = top + 18.0 * j as f64;
        let _ = writeln!(
            s,
            r#"<rect x="{lx:.1}" y="{ly:.1}" width="12" height="12" fill="{color}"/>"#
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}">{}</text>"#,
            lx + 18.0,
            ly + 10.0,
            xml_escape(label)
        );
    }
    let _ = writeln!(s, "</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_past_its_limit_is_killed_with_its_children_and_reported() {
        // A shell whose child outlives it would keep the pipe open: the whole group must go.
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "sleep 30 & sleep 30"]);
        let t0 = Instant::now();
        let t = timed(&mut cmd, std::time::Duration::from_millis(300)).unwrap();
        assert_eq!(t.exit, None, "reported as a timeout");
        assert!(t0.elapsed().as_secs() < 10, "the limit was not enforced");
    }

    #[test]
    fn a_run_within_its_limit_reports_its_status_and_stderr() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo oops >&2; exit 3"]);
        let t = timed(&mut cmd, std::time::Duration::from_secs(30)).unwrap();
        assert_eq!(t.exit, Some(3));
        assert_eq!(t.stderr.trim(), "oops");
    }
}

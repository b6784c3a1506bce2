//! `reprise bench --mode sync`: sync mode's costs (issue 14). Unmodified programs: the suite
//! built with plain `gcc -O2 -pthread` (no instrumentation, no runtime) and Debian's
//! compressors (pigz, xz, zstd, pbzip2, two threads each, when installed) compressing a
//! generated 20 MB file to stdout. Each runs `--runs` times natively, recorded (sync mode, the
//! runtime injected with LD_PRELOAD) and replayed; the table shows medians: record/native,
//! replay/native, the trace's size and how many replays verified, with the geomean of each
//! group. Written to `bench-sync.md` in the output directory and printed. Non-zero exit when a
//! replay did not verify; timings are never asserted. The racy programs of the bug list
//! ([`RACY`], built plain) are recorded and replayed with `--attempts` too: the table shows
//! the attempt each replay verified on (seed 002's re-execution), and their divergences do not
//! fail the bench.

use super::{build, exec, BenchOpts, Kind, Size};
use anyhow::{Context, Result};
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

/// One program's command (program path or name, arguments), group, and how many attempts
/// each replay may take (`replay --attempts`).
struct Job {
    name: String,
    group: &'static str,
    cmd: Vec<String>,
    attempts: u32,
}

/// The racy programs of `bench/programs/bugs.txt` (data races or inline atomics, invisible to
/// sync mode: tests/sync_mode.rs treats them as racy), built with plain gcc: each replay may
/// take up to [`RACY_ATTEMPTS`] attempts, and the table shows how many each needed.
const RACY: [&str; 6] = [
    "counter_race",
    "check_then_act",
    "order_violation",
    "dcl",
    "lockfree_stack",
    "crash_sometimes",
];
/// `replay --attempts` for the racy programs.
const RACY_ATTEMPTS: u32 = 10;

/// Medians of one program.
struct Row {
    name: String,
    group: &'static str,
    native: f64,
    record: f64,
    replay: f64,
    trace_bytes: u64,
    verified: usize,
    runs: usize,
    /// Racy programs: the attempts each replay took (0: none of them verified).
    attempts: Vec<u32>,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return f64::NAN;
    }
    v[v.len() / 2]
}

/// A compressible, varied 20 MB text file from a fixed generator.
fn input_file(path: &Path) -> Result<()> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut text = String::with_capacity(21 << 20);
    while text.len() < 20 << 20 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let _ = writeln!(text, "line {} value {:x} of {}", x % 1000, x >> 40, x % 37);
    }
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

fn installed(prog: &str) -> bool {
    Command::new(prog)
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok()
}

/// The jobs: suite programs built natively, then the Debian programs that are installed.
fn jobs(o: &BenchOpts, root: &Path, work: &Path, size: Size) -> Result<Vec<Job>> {
    let wanted = |n: &str| o.programs.is_empty() || o.programs.iter().any(|p| p == n);
    let mut out = Vec::new();
    for p in build::load_programs(root)? {
        if p.kind != Kind::Suite || !wanted(&p.name) {
            continue;
        }
        let exe = work.join(format!("{}-native", p.name));
        let st = Command::new("gcc")
            .args(["-O2", "-pthread", "-o"])
            .arg(&exe)
            .arg(&p.source)
            .arg("-lm")
            .status()
            .context("cannot run gcc")?;
        anyhow::ensure!(st.success(), "building {} failed", p.name);
        let mut cmd = vec![
            exe.display().to_string(),
            "-t".into(),
            o.threads.to_string(),
        ];
        if let Some(n) = build::size_arg(&p.name, size) {
            cmd.extend(["-n".into(), n.into()]);
        }
        out.push(Job {
            name: p.name.clone(),
            group: "suite",
            cmd,
            attempts: 1,
        });
    }
    for p in build::load_programs(root)? {
        if p.kind != Kind::Bug || !RACY.contains(&p.name.as_str()) || !wanted(&p.name) {
            continue;
        }
        let exe = work.join(format!("{}-native", p.name));
        let st = Command::new(if p.cxx { "g++" } else { "gcc" })
            .args(["-O2", "-pthread", "-o"])
            .arg(&exe)
            .arg(&p.source)
            .status()
            .context("cannot run gcc")?;
        anyhow::ensure!(st.success(), "building {} failed", p.name);
        let mut cmd = vec![exe.display().to_string()];
        cmd.extend(p.args.iter().cloned());
        out.push(Job {
            name: p.name.clone(),
            group: "racy",
            cmd,
            attempts: RACY_ATTEMPTS,
        });
    }
    let input = work.join("input-20MB.txt");
    let debian: [(&str, &[&str]); 4] = [
        ("pigz", &["-p", "2", "-c"]),
        ("xz", &["-T2", "--block-size=4MiB", "-3", "-c"]),
        ("zstd", &["-T2", "-q", "-c"]),
        ("pbzip2", &["-p2", "-c"]),
    ];
    for (prog, args) in debian {
        if !wanted(prog) {
            continue;
        }
        if !installed(prog) {
            eprintln!("reprise: bench: {prog} is not installed (apt-get install {prog}); skipped");
            continue;
        }
        if !input.exists() {
            input_file(&input)?;
        }
        let mut cmd = vec![prog.to_string()];
        cmd.extend(args.iter().map(|a| a.to_string()));
        cmd.push(input.display().to_string());
        out.push(Job {
            name: prog.into(),
            group: "Debian",
            cmd,
            attempts: 1,
        });
    }
    Ok(out)
}

fn bench_job(o: &BenchOpts, reprise: &Path, work: &Path, j: &Job, runs: usize) -> Result<Row> {
    let (mut nat, mut rec, mut rep) = (Vec::new(), Vec::new(), Vec::new());
    let (mut verified, mut trace_bytes, mut attempts) = (0, 0, Vec::new());
    let trace = work.join(format!("{}.trace", j.name));
    for _ in 0..runs {
        let t = exec::timed(Command::new(&j.cmd[0]).args(&j.cmd[1..]), o.timeout)?;
        nat.push(t.seconds);
        let t = exec::timed(
            Command::new(reprise)
                .args(["record", "--mode", "sync", "-o"])
                .arg(&trace)
                .arg("--")
                .args(&j.cmd),
            o.timeout,
        )?;
        rec.push(t.seconds);
        trace_bytes = std::fs::metadata(&trace).map(|m| m.len()).unwrap_or(0);
        let mut replay = Command::new(reprise);
        replay.arg("replay").arg(&trace);
        if j.attempts > 1 {
            replay.args(["--attempts", &j.attempts.to_string()]);
        }
        let t = exec::timed(&mut replay, o.timeout)?;
        rep.push(t.seconds);
        if t.stderr.contains("reprise: replay verified") {
            verified += 1;
            if j.attempts > 1 {
                attempts.push(attempt_of(&t.stderr));
            }
        } else if j.attempts > 1 {
            attempts.push(0);
        } else {
            eprintln!(
                "reprise: bench: a replay of {} did not verify: {}",
                j.name,
                t.stderr.lines().last().unwrap_or("")
            );
        }
        std::fs::remove_file(&trace).ok();
    }
    Ok(Row {
        name: j.name.clone(),
        group: j.group,
        native: median(nat),
        record: median(rec),
        replay: median(rep),
        trace_bytes,
        verified,
        runs,
        attempts,
    })
}

/// The attempt a verified replay verified on ("verified on attempt K of up to N"; 1 when it
/// does not say).
fn attempt_of(stderr: &str) -> u32 {
    stderr
        .split("verified on attempt ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|k| k.parse().ok())
        .unwrap_or(1)
}

fn geomean(v: impl Iterator<Item = f64>) -> f64 {
    let (mut s, mut n) = (0.0, 0);
    for x in v {
        s += x.ln();
        n += 1;
    }
    (s / n.max(1) as f64).exp()
}

fn markdown(rows: &[Row], runs: usize) -> String {
    let mut md = String::from("# reprise bench --mode sync\n\n");
    let _ = writeln!(
        md,
        "Unmodified programs recorded in sync mode (LD_PRELOAD); medians of {runs} runs. Racy programs: each replay with `--attempts {RACY_ATTEMPTS}`, the attempt it verified on (none: diverged in all, exit 125 naming the race).\n"
    );
    md.push_str(
        "| program | group | native s | record/native | replay/native | trace bytes | verified | attempts |\n",
    );
    md.push_str("|---|---|---:|---:|---:|---:|---:|---|\n");
    for r in rows {
        let attempts = if r.attempts.is_empty() {
            "-".to_string()
        } else {
            let each: Vec<String> = r
                .attempts
                .iter()
                .map(|&a| if a == 0 { "none".into() } else { a.to_string() })
                .collect();
            each.join(",")
        };
        let _ = writeln!(
            md,
            "| {} | {} | {:.3} | {:.2}x | {:.2}x | {} | {}/{} | {attempts} |",
            r.name,
            r.group,
            r.native,
            r.record / r.native,
            r.replay / r.native,
            r.trace_bytes,
            r.verified,
            r.runs
        );
    }
    for g in ["suite", "Debian", "racy"] {
        let in_g: Vec<&Row> = rows.iter().filter(|r| r.group == g).collect();
        if in_g.is_empty() {
            continue;
        }
        let _ = writeln!(
            md,
            "\n{g}: record/native geomean {:.3}, replay/native geomean {:.3}",
            geomean(in_g.iter().map(|r| r.record / r.native)),
            geomean(in_g.iter().map(|r| r.replay / r.native))
        );
    }
    md
}

/// Run the sync-mode bench; returns the exit status.
pub(super) fn run(o: &BenchOpts) -> Result<i32> {
    let root = build::find_root()?;
    let reprise = std::env::current_exe().context("cannot locate the reprise binary")?;
    crate::syncmode::runtime_shared()?; // fail early, before building anything
    let runs = o.runs.unwrap_or(if o.quick { 1 } else { 5 }).max(1);
    let size = o.size.unwrap_or(Size::Default);
    std::fs::create_dir_all(&o.out)
        .with_context(|| format!("cannot create {}", o.out.display()))?;
    let tmp = tempfile::Builder::new()
        .prefix("reprise-bench-sync-")
        .tempdir()
        .context("cannot create a temporary directory")?;
    let mut rows = Vec::new();
    for j in jobs(o, &root, tmp.path(), size)? {
        eprintln!("reprise: bench: {} ({} runs)", j.name, runs);
        rows.push(bench_job(o, &reprise, tmp.path(), &j, runs)?);
    }
    let md = markdown(&rows, runs);
    print!("{md}");
    let path = o.out.join("bench-sync.md");
    std::fs::write(&path, &md).with_context(|| format!("cannot write {}", path.display()))?;
    eprintln!("reprise: bench results in {}", path.display());
    // A racy program's replay may diverge in every attempt (exit 125 naming the race): that is
    // sync mode's documented limit, not a failure of the bench.
    Ok(i32::from(
        rows.iter()
            .any(|r| r.group != "racy" && r.verified < r.runs),
    ))
}

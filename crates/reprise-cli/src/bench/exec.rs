//! Running the builds: timed runs killed at a limit, record and replay under one strategy,
//! and the measurements of a trace.

use super::{Binaries, Ctx, Program, Run};
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

/// ThreadSanitizer settings for the peer: report, but never fail the run.
const TSAN_OPTIONS: &str = "report_signal_unsafe=0 halt_on_error=0 exitcode=0";

/// A finished, timed process.
pub(super) struct Timed {
    pub(super) seconds: f64,
    /// Exit status (128 + signal when killed by one); None when it ran past the limit.
    pub(super) exit: Option<i32>,
    pub(super) stderr: String,
}

/// Run with stdout discarded and stderr captured; wall time from spawn to exit. A process
/// still running after `limit` is killed with its whole process group (a recorded program
/// too) and reported with `exit: None`.
pub(super) fn timed(cmd: &mut Command, limit: std::time::Duration) -> Result<Timed> {
    use std::io::Read as _;
    use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
    use wait_timeout::ChildExt as _;
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
    // Woken by the child's exit (wait-timeout), not by polling: a 5 ms poll rounded every
    // time up to the next 5 ms, which at `--size small` (runs of 5-30 ms) distorted every ratio.
    let status = match child.wait_timeout(limit.saturating_sub(t0.elapsed()))? {
        Some(st) => Some(st),
        None => {
            // SAFETY: plain kill(2) of the process group we created for the child.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            child.wait()?;
            None
        }
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
pub(super) fn skipped(p: &Program, strategy: &str, run: usize) -> (Run, Run) {
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

/// A failed replay's note: its last line, or for a stuck replay the report with what each
/// thread was doing (one line: the failure table classifies by all of them).
fn failure_note(s: &str) -> String {
    let Some(i) = s
        .lines()
        .position(|l| l.contains("replay is stuck") || l.contains("replay made no progress"))
    else {
        return last_line(s);
    };
    let mut lines = s.lines().skip(i);
    let mut note = lines.next().unwrap_or("").trim().to_string();
    for l in lines.take_while(|l| l.starts_with("  thread ")) {
        note.push_str("; ");
        note.push_str(l.trim());
    }
    note
}

/// One run of a native, floor or tsan build.
pub(super) fn baseline(
    ctx: &Ctx,
    p: &Program,
    config: &str,
    exe: &Path,
    run: usize,
) -> Result<Run> {
    let mut cmd = Command::new(exe);
    cmd.args(&p.args).current_dir(ctx.work);
    if config == "tsan" {
        cmd.env("TSAN_OPTIONS", TSAN_OPTIONS);
    }
    let t =
        timed(&mut cmd, ctx.timeout).with_context(|| format!("cannot run {}", exe.display()))?;
    Ok(Run {
        program: p.name.clone(),
        config: config.into(),
        run,
        seconds: t.seconds,
        exit: t.exit,
        timed_out: t.exit.is_none(),
        ..Default::default()
    })
}

/// Record one run under `strategy`, measure its trace, replay it; returns the two rows.
pub(super) fn record_and_replay(
    ctx: &Ctx,
    p: &Program,
    b: &Binaries,
    strategy: &str,
    run: usize,
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
    let trace = ctx.work.join(format!("{}.{strategy}.{run}.trace", p.name));
    if record(ctx, p, b, strategy, &trace, &mut rec, &mut rep, unavailable)? {
        match measure_trace(&trace) {
            Ok(m) => m.fill(&mut rec),
            Err(e) => rec.note = format!("cannot read the trace: {e:#}"),
        }
        replay(ctx, p, &trace, &mut rep)?;
    }
    std::fs::remove_file(&trace).ok();
    Ok((rec, rep))
}

/// `reprise record` one run into `trace`, filling the record row (and the replay row's note
/// when there is nothing to replay); true when a trace was saved.
#[allow(clippy::too_many_arguments)]
fn record(
    ctx: &Ctx,
    p: &Program,
    b: &Binaries,
    strategy: &str,
    trace: &Path,
    rec: &mut Run,
    rep: &mut Run,
    unavailable: &mut BTreeMap<String, String>,
) -> Result<bool> {
    let mut cmd = Command::new(&ctx.reprise);
    cmd.arg("record")
        .arg("-o")
        .arg(trace)
        .args(["--strategy", strategy, "--"])
        .arg(&b.reprise)
        .args(&p.args)
        .current_dir(ctx.work);
    let t = timed(&mut cmd, ctx.timeout)
        .with_context(|| format!("cannot run reprise record on {}", p.name))?;
    rec.seconds = t.seconds;
    rec.exit = t.exit;
    if t.exit.is_none() {
        rec.timed_out = true;
        rec.note = format!(
            "timeout: record killed after {:.0}s",
            ctx.timeout.as_secs_f64()
        );
        rep.note = "no trace to replay".into();
        return Ok(false);
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
        return Ok(false);
    }
    Ok(true)
}

/// `reprise replay` a trace, filling the replay row.
fn replay(ctx: &Ctx, p: &Program, trace: &Path, rep: &mut Run) -> Result<()> {
    let mut cmd = Command::new(&ctx.reprise);
    cmd.arg("replay").arg(trace).current_dir(ctx.work);
    let t = timed(&mut cmd, ctx.timeout)
        .with_context(|| format!("cannot run reprise replay on {}", p.name))?;
    rep.seconds = t.seconds;
    rep.exit = t.exit;
    let verified = t.exit.is_some_and(|e| e != 125) && t.stderr.contains("replay verified");
    rep.verified = Some(verified);
    if t.exit.is_none() {
        rep.timed_out = true;
        rep.note = format!(
            "timeout: replay killed after {:.0}s",
            ctx.timeout.as_secs_f64()
        );
    } else if !verified {
        rep.note = failure_note(&t.stderr);
    }
    std::fs::remove_file(trace).with_context(|| format!("cannot remove {}", trace.display()))
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

impl TraceMeasure {
    /// Copy the measurements into a record row.
    fn fill(&self, rec: &mut Run) {
        rec.trace_bytes = Some(self.file_bytes);
        rec.event_bytes = Some(self.event_bytes);
        rec.gzip9_bytes = Some(self.gzip9_bytes);
        rec.events = Some(self.events);
        rec.vector_runs = Some(self.vector_runs);
        rec.threads = Some(self.threads);
        if let Some(k) = self.kinds {
            use reprise_proto::kind::*;
            let n = |kind: u64| k[kind as usize];
            rec.reads = Some(n(READ));
            rec.writes = Some(n(WRITE));
            rec.atomics = Some(n(ATOMIC));
            rec.syncs = Some([LOCK, COND, SEM, CREATE, ONCE, JOIN].map(n).iter().sum());
            rec.ranges = Some(n(RANGE));
            rec.stdio = Some(n(STDIO));
        }
        if let Some((tx, il, av)) = self.tplay {
            rec.transactions = Some(tx);
            rec.interleavings = Some(il);
            rec.violations = Some(av);
        }
    }
}

/// Decompress the trace's event chunks (the bytes `loaded::load` decodes), decode them, and
/// gzip -9 the raw event bytes to compare with the zstd the trace stores. Streams chunk by
/// chunk: a long recording's raw events can be gigabytes.
fn measure_trace(path: &Path) -> Result<TraceMeasure> {
    use flate2::{write::GzEncoder, Compression};
    let file_bytes = std::fs::metadata(path)
        .with_context(|| format!("cannot stat {}", path.display()))?
        .len();
    let mut reader = reprise_trace::TraceReader::open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    let strategy = reader.header().strategy.clone();
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
        rec.feed_piece(&mut pending, &c.data)
            .with_context(|| format!("{}: events are corrupt", path.display()))?;
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
        tplay: tplay_stats(&strategy, &rec.model_log),
    })
}

/// TPLAY's statistics from its model log (a `TplayLog`, `reprise_core::binlog`); None for
/// other strategies.
fn tplay_stats(strategy: &str, log: &[u8]) -> Option<(u64, u64, u64)> {
    if strategy != "tplay" {
        return None;
    }
    let st = reprise_core::binlog::decode::<reprise_core::tplay::TplayLog>(log)
        .ok()?
        .stats;
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
    fn a_stuck_replay_is_noted_with_every_thread_and_classified_by_them() {
        let stderr = "out\nreprise: replay is stuck: every thread waits\n  thread 0 at event 6 is blocked in a lock, barrier or join\n  thread 1 at event 762 reached the end of its recorded events\n  thread 2 at event 784 has exited\nreprise: exit 125\n";
        let note = failure_note(stderr);
        assert_eq!(
            note,
            "reprise: replay is stuck: every thread waits; thread 0 at event 6 is blocked in a lock, barrier or join; thread 1 at event 762 reached the end of its recorded events; thread 2 at event 784 has exited"
        );
        let run = super::super::Run {
            note,
            ..Default::default()
        };
        assert!(super::super::failures::symptom(&run).starts_with("ran past its recorded events"));
        assert_eq!(
            failure_note("a\nreprise: values differ\n"),
            "reprise: values differ"
        );
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

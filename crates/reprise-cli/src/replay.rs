//! `reprise replay`: run the program again under the recorded schedule, reproduce its output,
//! and verify.

use crate::exit::Failure;
use crate::launch::{self, Launch, Sink};
use crate::loaded::{load, Loaded};
use crate::outcheck::{OutputCheck, RecordedOutput};
use crate::recording::Recording;
use crate::verify::{self, Outputs, RunOutput};
use anyhow::{Context, Result};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Options of `reprise replay`.
pub struct ReplayOpts {
    /// Trace path (None: the latest).
    pub trace: Option<PathBuf>,
    /// Seed of random delays at callbacks (0: none).
    pub jitter: u64,
    /// Timeout without progress.
    pub timeout: Option<Duration>,
    /// Re-run a diverged replay with varied timing up to this many times in all (seed 002's
    /// re-execution, for sync-mode traces of programs with races).
    pub attempts: u32,
    /// Run under gdb with these arguments for gdb.
    pub gdb: Option<Vec<std::ffi::OsString>>,
}

/// A replay failure ([`Failure::Replay`]: status 125) saying `msg`.
fn fail<T>(msg: impl Into<String>) -> Result<T> {
    Err(Failure::Replay(msg.into()).into())
}

/// What a replay produced: its re-recorded events, and its output compared with the recorded
/// output as it comes.
struct ReplaySink<'a> {
    rec: Recording,
    pending: Vec<u8>,
    out: OutputCheck<'a>,
    err: OutputCheck<'a>,
}

impl<'a> ReplaySink<'a> {
    /// Comparing with the recorded `out` and `err`; `keep`: keep the replay's output too (to
    /// show it after the run).
    fn new(out: &'a RecordedOutput, err: &'a RecordedOutput, keep: bool) -> ReplaySink<'a> {
        let check = if keep {
            OutputCheck::keeping
        } else {
            OutputCheck::new
        };
        ReplaySink {
            rec: Recording::default(),
            pending: Vec::new(),
            out: check(out),
            err: check(err),
        }
    }

    /// How the output compared; Err(Fail) when a recorded chunk is damaged.
    fn outputs(&self, path: &std::path::Path) -> Result<Outputs> {
        let damaged =
            |e: &reprise_trace::TraceError| Failure::Replay(format!("{}: {e}", path.display()));
        Ok(Outputs {
            stdout: self.out.verdict().map_err(damaged)?,
            stderr: self.err.verdict().map_err(damaged)?,
        })
    }
}

impl Sink for ReplaySink<'_> {
    fn events(&mut self, b: &[u8]) -> Result<()> {
        self.rec
            .feed_piece(&mut self.pending, b)
            .map_err(|e| Failure::Replay(format!("the replay's event stream is corrupt: {e}")))?;
        Ok(())
    }
    fn stdout(&mut self, b: &[u8]) -> Result<()> {
        self.out.feed(b);
        Ok(())
    }
    fn stderr(&mut self, b: &[u8]) -> Result<()> {
        self.err.feed(b);
        Ok(())
    }
}

/// Whether this reprise can replay a trace with `header` and recording `rec`: Err(Failure::Replay) says
/// why not; else the strategy's config flag.
fn replayable(header: &reprise_trace::Header, rec: &Recording) -> Result<u64> {
    if rec.frames == 0 {
        return fail(
            "the trace holds no runtime events: the program was not built with `reprise cc`",
        );
    }
    let Some(strategy_flag) = reprise_proto::strategy_flag(&header.strategy) else {
        return fail(format!(
            "the trace was recorded with strategy `{}`, which this reprise cannot replay",
            header.strategy
        ));
    };
    if strategy_flag & reprise_proto::FLAGS_MODEL != 0 && rec.model_log.is_empty() {
        return fail(format!(
            "the trace has no {} log (the recording did not end normally)",
            header.strategy
        ));
    }
    if header.runtime_version != env!("CARGO_PKG_VERSION") {
        return fail(format!(
            "the trace was recorded with reprise runtime {}, this is {}: replay it with that version or record again",
            header.runtime_version,
            env!("CARGO_PKG_VERSION")
        ));
    }
    Ok(strategy_flag)
}

/// The recorded program, as it will run, is the one recorded (same content hash); Err(Failure::Replay)
/// says what changed.
fn check_exe(header: &reprise_trace::Header) -> Result<()> {
    // The program runs in the recorded directory (a relative path is relative to it): hash
    // the file that will run, not one at the same relative path here.
    let exe: PathBuf = PathBuf::from(std::ffi::OsStr::from_bytes(&header.cwd))
        .join(std::ffi::OsStr::from_bytes(&header.exe_path))
        .components()
        .filter(|c| *c != std::path::Component::CurDir)
        .collect();
    let hash = crate::hashcache::file_hash(&exe)
        .map_err(|e| Failure::Replay(format!("the recorded program is missing: {e}")))?;
    if hash != header.exe_hash {
        return fail(format!("{} changed since the recording (content hash {} now, {} recorded): rebuild it as it was or record again", exe.display(), hash, header.exe_hash));
    }
    Ok(())
}

/// Sync mode: the runtime's shared object to preload (a warning when it is not the build the
/// recording used).
fn runtime_for(header: &reprise_trace::Header) -> Result<PathBuf> {
    let so = crate::syncmode::runtime_shared().map_err(|e| Failure::Replay(format!("{e:#}")))?;
    if runtime_rebuilt(header, &so) {
        eprintln!("reprise: warning: the runtime {} changed since the recording (reprise was rebuilt): a divergence may come from that", so.display());
    }
    Ok(so)
}

/// Whether the runtime's shared object `so` is another build than the one the sync-mode
/// recording `header` used.
fn runtime_rebuilt(header: &reprise_trace::Header, so: &Path) -> bool {
    let recorded = header.extra.get("runtime_so_hash").map(String::as_str);
    recorded.is_some_and(|h| {
        !h.is_empty() && crate::hashcache::file_hash(so).ok().as_deref() != Some(h)
    })
}

/// The replay config's flags: the strategy's, `FLAG_NO_SUD` when the recording ran without
/// Syscall User Dispatch, `FLAG_SYNC` in sync mode.
fn replay_flags(header: &reprise_trace::Header, strategy_flag: u64, sync: bool) -> u64 {
    strategy_flag
        | if header
            .extra
            .get("sud")
            .map(|v| v == "false")
            .unwrap_or(false)
        {
            reprise_proto::FLAG_NO_SUD
        } else {
            0
        }
        | if sync { reprise_proto::FLAG_SYNC } else { 0 }
        | if header.extra.get("held").is_some_and(|v| v == "true") {
            reprise_proto::FLAG_HELD
        } else {
            0
        }
}

/// Say what a verified replay verified (a cut-short recording: up to its cut; the attempt
/// that verified, of up to `attempts`; a recorded deadlock reached again); the status to exit
/// with.
fn say_verified(
    cut_verified: Option<verify::CutVerified>,
    why_cut: &str,
    footer: &reprise_trace::Footer,
    rec: &Recording,
    attempts: u32,
    tried: u32,
) -> i32 {
    if let Some(v) = cut_verified {
        eprintln!(
            "reprise: replay verified up to the end of the recording ({}): {} events, {} threads, {} of {} output bytes",
            why_cut,
            v.events,
            rec.nthreads(),
            v.out.0,
            v.out.1
        );
        return footer.exit.shell_status();
    }
    eprintln!(
        "reprise: replay verified ({} events, {} threads)",
        rec.total_events(),
        rec.nthreads()
    );
    if attempts > 1 {
        eprintln!("reprise: the replay verified on attempt {tried} of up to {attempts}");
    }
    if let Some(report) = &footer.deadlock {
        // Every thread reached its recorded last event, blocked as it was: the same deadlock.
        crate::record::say_lines("the replay reached the recorded ", report);
        return crate::exit::DEADLOCK_STATUS;
    }
    footer.exit.shell_status()
}

/// A replay that verified: what it produced and, for a cut-short recording, how far it went.
type Verified<'a> = (ReplaySink<'a>, Option<verify::CutVerified>);

/// Judge one replay (`sink`, `ended`) against the recording `a` of a trace with `header`
/// (`cut`: replayed as cut short; `interrupted`: its recorder was killed, so its outputs may
/// stop short of its events): Ok when it verified, else why not (a divergence the runtime saw, naming the source line
/// when it can; the watchdog's report; the first difference [`verify`] finds).
fn judge<'a>(
    header: &reprise_trace::Header,
    a: &RunOutput<'_>,
    (sink, outputs): (ReplaySink<'a>, Outputs),
    ended: launch::Ended,
    (cut, interrupted): (bool, bool),
    strategy_flag: u64,
) -> std::result::Result<Verified<'a>, String> {
    if let Some((_, _, msg)) = &sink.rec.diverged {
        // Name the source line where the diverging thread was (its access or call).
        let at = sink.rec.diverge_stack.as_ref().and_then(|(_, pcs)| {
            crate::sym::stack_place(&crate::sym::recorded_exe(header), pcs, false)
        });
        let why = match at {
            Some(at) => format!("replay diverged: {msg}, in code at {at}"),
            None => format!("replay diverged: {msg}"),
        };
        // On the same line: the bench classifies a failed replay by its last line.
        return Err(match seed_gap(&header.strategy) {
            Some(gap) => format!("{why}; {gap}"),
            None => why,
        });
    }
    if let Some(report) = ended.stuck {
        return Err(match seed_gap(&header.strategy) {
            Some(gap) => format!("{report}\n{gap}"),
            None => report,
        });
    }
    let b = RunOutput {
        rec: &sink.rec,
        exit: &ended.exit,
    };
    if cut {
        return match verify::compare_cut(a, &b, &outputs, interrupted) {
            Ok(v) => Ok((sink, Some(v))),
            Err(why) => Err(format!("replay diverged: {why}")),
        };
    }
    let exact_log = verify::model_log_is_exact(strategy_flag);
    if let Err(why) = verify::compare(a, &b, &outputs, exact_log) {
        return Err(format!("replay diverged: {why}"));
    }
    Ok((sink, None))
}

/// A replay that diverged (`msg`, in each of `attempts`): Err(Failure::Replay) saying so, and in sync
/// mode that the program probably has a data race (`preload`: the runtime preloaded), unless
/// the runtime itself is another build than the recording's, or only the order of output
/// lines differs (processes the program started wrote them).
fn say_diverged(
    msg: &str,
    attempts: u32,
    header: &reprise_trace::Header,
    preload: Option<&Path>,
) -> Result<i32> {
    let tries = if attempts > 1 {
        format!(" (in each of {attempts} attempts)")
    } else {
        String::new()
    };
    if preload.is_some_and(|so| runtime_rebuilt(header, so)) {
        // Another runtime build may lay out memory or order calls differently (its size
        // moves the libraries mapped after it): no hint about the program's races.
        return fail(format!("{msg}{tries}\nreprise: the runtime changed since the recording (reprise was rebuilt): record again with this build"));
    }
    let hint = (header.libs.as_deref())
        .and_then(crate::libs::self_synchronising)
        .map(crate::libs::file_name)
        .map(|l| format!("\nreprise: {l} schedules the program's threads with atomics of its own, which reprise orders only in code `reprise cc` built: rebuild it with `reprise cc`, or run it with one thread"))
        .unwrap_or_default();
    // Sync mode orders synchronisation only: a divergence means the program's
    // unordered accesses (a data race, inline atomics) went another way than while
    // recording.
    if preload.is_some() && !msg.contains(crate::verify::REORDERED) {
        fail(format!("{msg}{tries}\nreprise: the program probably has a data race here (or synchronises with atomic instructions, which sync mode does not see): record it with `reprise cc` for exact replay{hint}"))
    } else {
        fail(format!("{msg}{tries}{hint}"))
    }
}

/// A recording ended by a terminating signal from outside: the signal and each thread's
/// recorded final event count, for the launcher to send it at the same point.
fn end_signal(rec: &Recording) -> Option<(i32, Vec<(u32, u64)>)> {
    rec.end.as_ref().and_then(|(end, finals)| {
        (end.kind == reprise_proto::END_SIGNAL && end.tid == reprise_proto::END_TID_NONE)
            .then(|| (end.code, finals.iter().map(|(&t, &n)| (t, n)).collect()))
    })
}

/// The output of the replay that verified, shown once at the end (with several attempts it is
/// not shown live).
fn show_output(sink: &ReplaySink<'_>) {
    use std::io::Write;
    let _ = std::io::stdout().write_all(sink.out.kept());
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().write_all(sink.err.kept());
}

/// Run `attempt` until one verifies, `attempts` times at the most (the first with jitter seed
/// `seed`); the last verdict and how many were run.
fn until_verified<'a>(
    attempts: u32,
    seed: u64,
    attempt: impl Fn(u64) -> Result<std::result::Result<Verified<'a>, String>>,
) -> Result<(std::result::Result<Verified<'a>, String>, u32)> {
    if seed != 0 {
        eprintln!("reprise: replaying with jitter (seed {seed}): random delays at the program's runtime entries make this replay slower than a plain one");
    }
    let mut tried = 0;
    let verdict = loop {
        tried += 1;
        // Attempts after the first vary the timing (seeded delays at every runtime entry).
        let jitter = if tried == 1 {
            seed
        } else {
            seed.wrapping_add(tried as u64)
        };
        let r = attempt(jitter)?;
        if r.is_ok() || tried >= attempts {
            break r;
        }
    };
    Ok((verdict, tried))
}

/// What must hold before a replay starts: the trace has events, its strategy replays, the
/// program, its libraries and the files whose reads are re-executed are unchanged. Returns the
/// strategy's runtime flag, whether the trace is sync mode, and then the runtime to preload.
fn preflight(
    header: &reprise_trace::Header,
    rec: &Recording,
    footer: &reprise_trace::Footer,
    interrupted: bool,
) -> Result<(u64, bool, Option<PathBuf>)> {
    if rec.frames == 0 && interrupted {
        return fail(
            "the trace ends without its footer before any runtime events: its recorder was killed before it wrote them, so there is nothing to replay",
        );
    }
    let strategy_flag = replayable(header, rec)?;
    check_exe(header)?;
    crate::libs::check(header).map_err(Failure::Replay)?;
    crate::libs::check_dlopened(footer, &rec.dlopened).map_err(Failure::Replay)?;
    // Files whose reads are re-executed (and hash-checked) must be there, unchanged.
    if let Some(why) = rec.files.iter().find_map(|f| f.changed()) {
        return fail(why);
    }
    fewer_cpus(header);
    let sync = header.extra.get("mode").is_some_and(|m| m == "sync");
    let preload = if sync {
        Some(runtime_for(header)?)
    } else {
        None
    };
    Ok((strategy_flag, sync, preload))
}

/// The improved variant of a seed strategy whose replays may stall by design (its log misses
/// orders: AggrePlay's and TPLAY's papers report 86.8% and 96.6% of replays succeeding).
/// Said after a stuck or diverged replay of such a trace (None for the other strategies).
fn seed_gap(strategy: &str) -> Option<String> {
    let plus = match strategy {
        "aggreplay" => "aggreplay+",
        "tplay" => "tplay+",
        _ => return None,
    };
    Some(format!("{strategy}'s log, as its paper specifies it, misses orders some replays need (a known gap of the seed, not a damaged trace): record with --strategy {plus} to replay every run"))
}

/// The CPUs this process may run on (its affinity: `taskset` counts).
pub fn usable_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Warn when the replay may run on fewer CPUs than the recording could and the program uses
/// OpenMP (libgomp): the program sees the recorded CPUs, so libgomp spins at its waits as if
/// every thread had a CPU of its own, and on one CPU each barrier spins its full count while
/// the thread it waits for cannot run (a 0.15 s clustalo run replayed in 25-55 s pinned).
fn fewer_cpus(header: &reprise_trace::Header) {
    let recorded: usize = match header.extra.get("cpus").and_then(|c| c.parse().ok()) {
        Some(n) => n,
        None => return,
    };
    let now = usable_cpus();
    let gomp = header
        .libs
        .iter()
        .flatten()
        .any(|(p, _)| crate::libs::file_name(p).starts_with("libgomp"));
    if now < recorded && gomp {
        eprintln!("reprise: warning: this replay may run on {now} CPU(s), the recording on {recorded}; the program uses OpenMP, whose threads spin while they wait as if each had a CPU (the program sees the recorded CPUs): the replay may be very slow. Replay on {recorded} CPUs, or record with OMP_WAIT_POLICY=passive");
    }
}

/// Replay; returns the shell status to exit with.
pub fn replay(o: ReplayOpts) -> Result<i32> {
    let path = crate::tracedir::resolve(o.trace.clone())?;
    let loaded = load(&path)?;
    let why_cut = loaded.cut_reason();
    let Loaded {
        header,
        rec,
        stdout: out,
        stderr: err,
        footer,
        interrupted,
    } = loaded;
    let (strategy_flag, sync, preload) = preflight(&header, &rec, &footer, interrupted)?;
    // A recording cut short (the program killed by SIGKILL, `_exit`, exec): the runtime never
    // saw its end. Replay it as far as the trace goes and check everything up to there.
    // So is one whose recorder was killed (no footer): its last frames, output included, may
    // be missing even if the runtime saw the end.
    let cut = rec.end.is_none() || interrupted;
    let cut_rec;
    let rec = if cut {
        cut_rec = rec.as_cut(libc::SIGTERM);
        &cut_rec
    } else {
        &rec
    };
    let timeout = o
        .timeout
        .unwrap_or_else(|| Duration::from_secs(60).max(Duration::from_nanos(footer.wall_ns) * 20));
    let config = |jitter: u64| {
        rec.replay_config(
            header.checkpoint_interval,
            jitter,
            replay_flags(&header, strategy_flag, sync),
        )
    };
    let attempts = o.attempts.max(1);
    // With several attempts the program's output is shown once, from the attempt that verified
    // (or the last one), not live.
    let echo = attempts == 1;
    let recorded = RunOutput {
        rec,
        exit: &footer.exit,
    };
    // One replay: Ok(Ok(sink, how far a cut-short one went)) verified, Ok(Err(why)) diverged.
    let attempt = |jitter: u64| -> Result<std::result::Result<Verified<'_>, String>> {
        let launch = Launch {
            // Under gdb the program may stay stopped for as long as the user likes.
            watchdog: if o.gdb.is_some() { None } else { Some(timeout) },
            end_signal: end_signal(rec),
            gdb: o.gdb.clone(),
            cut,
            echo,
            ..Launch::for_header(&header, config(jitter), preload.clone())
        };
        // The output is compared as it comes; with several attempts it is also kept, to be
        // shown once at the end.
        let mut sink = ReplaySink::new(&out, &err, !echo);
        let ended = launch::run(&launch, &mut sink).context("cannot run the replay")?;
        let outputs = sink.outputs(&path)?;
        Ok(judge(
            &header,
            &recorded,
            (sink, outputs),
            ended,
            (cut, interrupted),
            strategy_flag,
        ))
    };
    let (verdict, tried) = until_verified(attempts, o.jitter, attempt)?;
    let cut_verified = match verdict {
        Ok((sink, v)) => {
            if !echo {
                show_output(&sink);
            }
            v
        }
        Err(msg) => return say_diverged(&msg, attempts, &header, preload.as_deref()),
    };
    Ok(say_verified(
        cut_verified,
        &why_cut,
        &footer,
        rec,
        attempts,
        tried,
    ))
}

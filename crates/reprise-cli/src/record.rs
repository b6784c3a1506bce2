//! `reprise record`: run the program under the runtime and stream a trace.

use crate::exit::{Failure, DEADLOCK_STATUS, NOT_INSTRUMENTED_STATUS};
use crate::launch::{self, Launch, Sink};
use crate::recording::{record_config, Recording};
use anyhow::{bail, Context, Result};
use reprise_trace::{ChunkKind, Footer, Header, TraceWriter};
use std::io::BufWriter;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Options of `reprise record`.
pub struct RecordOpts {
    /// Output path, or the default directory.
    pub output: Option<PathBuf>,
    /// Recording strategy.
    pub strategy: crate::options::Strategy,
    /// Digest checkpoint interval.
    pub checkpoint: u64,
    /// Program and arguments.
    pub cmd: Vec<std::ffi::OsString>,
    /// Record up to this many runs and keep the first that fails.
    pub until_fail: Option<u32>,
    /// With `until_fail`: the failing run is the one with this shell status.
    pub until_status: Option<i32>,
    /// With `until_fail`: the failing run is the one whose output matches (or, with
    /// `until_status` too, either).
    pub until_output: Option<regex::Regex>,
    /// Perturb scheduling while recording (seeded random yields and sleeps at every access).
    pub chaos: bool,
    /// Re-execute regular-file reads in replay (checked by hash) instead of recording them.
    pub hash_reads: bool,
    /// Record every read's data (no re-executed file reads at all).
    pub portable: bool,
    /// Turn Syscall User Dispatch off.
    pub no_sud: bool,
    /// Ownership's held granules (`FLAG_HELD`).
    pub held_granules: bool,
    /// `--mode`: None picks full when the program holds the runtime, else sync.
    pub mode: Option<crate::options::Mode>,
}

/// The mode to record `exe` in: `--mode`, else full when it holds the reprise runtime and sync
/// (with a one-line notice, once per `record`) otherwise.
fn pick_mode(o: &RecordOpts, exe: &Path, announce: bool) -> Result<crate::options::Mode> {
    use crate::options::Mode;
    let built = crate::syncmode::has_runtime(exe);
    match (o.mode, built) {
        (Some(Mode::Full), false) => bail!(
            "{} was not built with `reprise cc` (no reprise runtime in it): rebuild it with `reprise cc`, or record it with --mode sync",
            exe.display()
        ),
        (Some(Mode::Sync), true) => bail!(
            "{} was built with `reprise cc`: record it in full mode (--mode full), or build it with plain gcc for --mode sync",
            exe.display()
        ),
        (Some(m), _) => Ok(m),
        (None, true) => Ok(Mode::Full),
        (None, false) => {
            if announce {
                eprintln!("reprise: {} was not built with `reprise cc`: recording in sync mode (synchronisation and system calls only; use `reprise cc` for exact replay of racy code)", exe.display());
            }
            Ok(Mode::Sync)
        }
    }
}

/// Whether `p` is a regular file someone may execute.
fn executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Resolve the program like execvp would; Err says why not, with the shell's status for it.
pub fn resolve_exe(prog: &std::ffi::OsStr) -> std::result::Result<PathBuf, Failure> {
    let p = Path::new(prog);
    if prog.as_bytes().contains(&b'/') {
        if !p.exists() {
            return Err(Failure::NoSuchFile(p.into()));
        }
        if !executable(p) {
            return Err(Failure::NotExecutable(p.into()));
        }
        return Ok(p.to_path_buf());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for d in std::env::split_paths(&path) {
        let c = d.join(p);
        if executable(&c) {
            return Ok(c);
        }
    }
    Err(Failure::NotFound(p.into()))
}

/// Print a multi-line report on stderr, every line marked as reprise's (so it never reads as
/// the program's output), the first after `lead`.
pub fn say_lines(lead: &str, report: &str) {
    for (i, l) in report.lines().enumerate() {
        if i == 0 {
            eprintln!("reprise: {lead}{l}");
        } else {
            eprintln!("reprise: {l}");
        }
    }
}

/// Content hash of the executable.
/// Streamed through a small buffer: reading a large binary (the runtime's debug information
/// makes 10 MB common) into one allocation cost more than the hashing.
pub fn exe_hash(p: &Path) -> Result<String> {
    use std::io::Read;
    let cant = || format!("cannot read {}", p.display());
    let mut f = std::fs::File::open(p).with_context(cant)?;
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    let mut buf = vec![0u8; 256 << 10];
    loop {
        let n = f.read(&mut buf).with_context(cant)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(format!("{:016x}", h.digest()))
}

/// Output is written to the trace in chunks of this size while the program runs, not all at
/// its end: a compressor writing megabytes to stdout (zstd -T2: 6.5 MB in 60 ms) otherwise
/// left the launcher compressing and writing all of it after the program exited, in buffers
/// grown to the whole output (their pages faulted in once each), about 10 ms of wall time.
const OUTPUT_CHUNK: usize = 1 << 20;

struct RecordSink {
    w: TraceWriter<BufWriter<std::fs::File>>,
    ev: Vec<u8>,
    out: Vec<u8>,
    err: Vec<u8>,
    last: Instant,
    /// Decoded alongside, to summarise at the end.
    rec: Recording,
    pending: Vec<u8>,
    /// Whether to keep every byte of stdout and stderr (`--until-output`).
    keep_output: bool,
    all_out: Vec<u8>,
    all_err: Vec<u8>,
    /// The libraries the program loaded itself (`rec.dlopened`), hashed as they were reported.
    dlopened: Vec<(Vec<u8>, String)>,
}

impl RecordSink {
    /// Writing to `w`; `keep_output`: keep every byte of stdout and stderr.
    fn new(w: TraceWriter<BufWriter<std::fs::File>>, keep_output: bool) -> RecordSink {
        RecordSink {
            w,
            ev: Vec::new(),
            out: Vec::new(),
            err: Vec::new(),
            last: Instant::now(),
            rec: Recording::default(),
            pending: Vec::new(),
            keep_output,
            all_out: Vec::new(),
            all_err: Vec::new(),
            dlopened: Vec::new(),
        }
    }

    fn flush(&mut self) -> Result<()> {
        for (k, buf) in [
            (ChunkKind::Events, &mut self.ev),
            (ChunkKind::Stdout, &mut self.out),
            (ChunkKind::Stderr, &mut self.err),
        ] {
            if !buf.is_empty() {
                self.w.write_chunk(k, buf)?;
                buf.clear();
            }
        }
        self.last = Instant::now();
        Ok(())
    }
}

impl Sink for RecordSink {
    fn events(&mut self, b: &[u8]) -> Result<()> {
        self.ev.extend_from_slice(b);
        self.rec.feed_piece(&mut self.pending, b)?;
        // A library the program just loaded: hashed now (an empty hash when it cannot be read:
        // the replay then warns that it cannot check it).
        for p in &self.rec.dlopened[self.dlopened.len()..] {
            let path = std::path::Path::new(std::ffi::OsStr::from_bytes(p));
            let hash = crate::hashcache::file_hash(path).unwrap_or_default();
            self.dlopened.push((p.clone(), hash));
        }
        if self.ev.len() >= 1 << 20 {
            self.flush()?;
        }
        Ok(())
    }
    fn stdout(&mut self, b: &[u8]) -> Result<()> {
        self.out.extend_from_slice(b);
        if self.keep_output {
            self.all_out.extend_from_slice(b);
        }
        if self.out.len() >= OUTPUT_CHUNK {
            self.w.write_chunk(ChunkKind::Stdout, &self.out)?;
            self.out.clear();
        }
        Ok(())
    }
    fn stderr(&mut self, b: &[u8]) -> Result<()> {
        self.err.extend_from_slice(b);
        if self.keep_output {
            self.all_err.extend_from_slice(b);
        }
        if self.err.len() >= OUTPUT_CHUNK {
            self.w.write_chunk(ChunkKind::Stderr, &self.err)?;
            self.err.clear();
        }
        Ok(())
    }
    fn tick(&mut self) -> Result<()> {
        // Crash safety: at most ~250 ms of events are only in memory.
        if self.last.elapsed() > Duration::from_millis(250) {
            self.flush()?;
        }
        Ok(())
    }
}

/// Record; returns the shell status to exit with.
pub fn record(o: RecordOpts) -> Result<i32> {
    let Some(n) = o.until_fail else {
        return Ok(record_one(&o, true, true)?.status);
    };
    if n == 0 {
        bail!("--until-fail takes a number of runs of at least 1");
    }
    for run in 1..=n {
        let Run {
            status,
            trace,
            output,
        } = record_one(&o, false, run == 1)?;
        let Some(path) = trace else {
            return Ok(status); // nothing to replay (not built with `reprise cc`)
        };
        let failed = match (o.until_status, &o.until_output) {
            (None, None) => status != 0,
            (s, re) => s == Some(status) || re.as_ref().is_some_and(|re| re.is_match(&output)),
        };
        if failed {
            if o.output.is_none() {
                crate::tracedir::set_latest(&path);
            }
            let what = if o.until_status.is_some() || o.until_output.is_some() {
                "met the condition"
            } else {
                "failed"
            };
            eprintln!(
                "reprise: run {run} of up to {n} {what} (status {status}): trace saved to {}",
                path.display()
            );
            return Ok(status);
        }
        std::fs::remove_file(&path)
            .with_context(|| format!("cannot delete the passing run's trace {}", path.display()))?;
    }
    eprintln!("reprise: no run failed in {n} recordings (their traces are deleted)");
    Ok(0)
}

/// One recorded run.
struct Run {
    /// The status `reprise record` exits with.
    status: i32,
    /// The trace (None: nothing was run).
    trace: Option<PathBuf>,
    /// The program's stdout then stderr, when `--until-output` looks at them.
    output: String,
}

/// A fresh `--chaos` seed (odd, never 0) from the clock.
fn chaos_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64 | 1)
        .unwrap_or(1)
}

/// The trace header of a recording of `exe` (`o.cmd` its argv) from here: this environment,
/// working directory and stack limit, `strategy`, `mode`, the chaos seed and the sync-mode
/// runtime `preload`'s hash.
fn record_header(
    o: &RecordOpts,
    exe: &std::path::Path,
    strategy: crate::options::Strategy,
    mode: crate::options::Mode,
    chaos: u64,
    preload: Option<&std::path::Path>,
) -> Result<Header> {
    let cwd = std::env::current_dir().context("cannot read the working directory")?;
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: rl is a valid out-parameter.
    unsafe { libc::getrlimit(libc::RLIMIT_STACK, &mut rl) };
    let env: Vec<Vec<u8>> = std::env::vars_os()
        .map(|(k, v)| {
            let mut b = k.into_vec();
            b.push(b'=');
            b.extend(v.into_vec());
            b
        })
        .collect();
    let libs = match crate::libs::resolve(exe, &cwd, &env) {
        Ok(l) => {
            warn_unrecorded_runtimes(&l);
            Some(l)
        }
        Err(e) => {
            eprintln!("reprise: warning: cannot list the shared libraries of {} ({e:#}): a replay cannot check them", exe.display());
            None
        }
    };
    Ok(Header {
        libs,
        format_version: reprise_trace::TRACE_VERSION,
        runtime_version: env!("CARGO_PKG_VERSION").into(),
        strategy: strategy.name().to_string(),
        exe_path: exe.as_os_str().as_bytes().to_vec(),
        exe_hash: crate::hashcache::file_hash(exe)?,
        argv: o.cmd.iter().map(|a| a.as_bytes().to_vec()).collect(),
        env,
        cwd: cwd.as_os_str().as_bytes().to_vec(),
        rlimit_stack: (rl.rlim_cur, rl.rlim_max),
        stripes: reprise_proto::STRIPES as u32,
        checkpoint_interval: o.checkpoint,
        created_unix: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        extra: [
            ("hash_reads".to_string(), o.hash_reads.to_string()),
            ("portable".to_string(), o.portable.to_string()),
            ("sud".to_string(), (!o.no_sud).to_string()),
            ("held".to_string(), o.held_granules.to_string()),
            ("chaos_seed".to_string(), chaos.to_string()),
            ("mode".to_string(), mode.name().to_string()),
            // The CPUs the program could run on (a replay on fewer warns: `replay::fewer_cpus`).
            ("cpus".to_string(), crate::replay::usable_cpus().to_string()),
            (
                "runtime_so_hash".to_string(),
                match preload {
                    Some(so) => crate::hashcache::file_hash(so)?,
                    None => String::new(),
                },
            ),
        ]
        .into_iter()
        .collect(),
    })
}

/// The config flags of a recording: the strategy's, sync mode, `--hash-reads`, `--portable`,
/// `--no-sud`.
fn record_flags(o: &RecordOpts, strategy: crate::options::Strategy, sync: bool) -> u64 {
    strategy.flag()
        | if sync { reprise_proto::FLAG_SYNC } else { 0 }
        | if o.hash_reads {
            reprise_proto::FLAG_HASH_READS
        } else {
            0
        }
        | if o.portable {
            reprise_proto::FLAG_PORTABLE
        } else {
            0
        }
        | if o.no_sud {
            reprise_proto::FLAG_NO_SUD
        } else {
            0
        }
        | if o.held_granules {
            reprise_proto::FLAG_HELD
        } else {
            0
        }
}

/// Warn about a library whose own synchronisation the runtime does not record
/// (`libs::self_synchronising`).
fn warn_unrecorded_runtimes(libs: &[(Vec<u8>, String)]) {
    let Some(path) = crate::libs::self_synchronising(libs) else {
        return;
    };
    let tbb = crate::libs::file_name(path).starts_with("libtbb");
    let path = String::from_utf8_lossy(path);
    if tbb {
        eprintln!("reprise: warning: the program uses oneTBB ({path}), whose scheduler's own atomics are not recorded: its replays may diverge unless libtbb is built with `reprise cc`");
    } else {
        eprintln!(
            "reprise: warning: the program uses LLVM's OpenMP runtime ({path}), whose scheduling is not recorded: its replays will diverge; build it with gcc's -fopenmp (libgomp) instead"
        );
    }
}

/// Say why a run of `exe` that sent no events keeps no trace.
fn say_no_events(exe: &std::path::Path, sync: bool, started: bool) {
    if started {
        eprintln!(
            "reprise: {} ended before the runtime sent any event (it was killed, or ended or exec'd another program by a means the runtime does not see), so no trace was kept",
            exe.display()
        );
    } else if sync {
        eprintln!(
            "reprise: the reprise runtime did not start in {} (a statically linked program cannot be recorded in sync mode), so no trace was kept",
            exe.display()
        );
    } else {
        // Full mode runs a binary with the runtime in it only (`syncmode::has_runtime`).
        eprintln!(
            "reprise: the runtime in {} did not start recording (see the messages above), so no trace was kept",
            exe.display()
        );
    }
}

/// Finish the recording of `exe` (`sink`, writing the trace at `path`: its last chunks and
/// footer); what it leaves: no trace when the program sent no events; else the trace (the latest unless `-o` or not `announce`), what
/// is worth saying (cut short, where the trace went when `announce`, a deadlock's report), the
/// status to exit with and the output `--until-output` looks at.
fn finish_recording(
    o: &RecordOpts,
    announce: bool,
    exe: &std::path::Path,
    sync: bool,
    path: PathBuf,
    mut sink: RecordSink,
    ended: &launch::Ended,
) -> Result<Run> {
    sink.flush()?;
    let footer = Footer {
        exit: ended.exit.clone(),
        wall_ns: ended.wall.as_nanos() as u64,
        chunks: 0,
        raw_bytes: 0,
        deadlock: ended.deadlock.clone(),
        dlopened: std::mem::take(&mut sink.dlopened),
    };
    sink.w.finish(&footer)?;
    if sink.rec.frames == 0 {
        // Nothing to replay: keep no trace (and never make it the latest).
        let _ = std::fs::remove_file(&path);
        say_no_events(exe, sync, ended.started);
        return Ok(Run {
            status: NOT_INSTRUMENTED_STATUS,
            trace: None,
            output: String::new(),
        });
    }
    if o.output.is_none() && announce {
        crate::tracedir::set_latest(&path);
    }
    if sink.rec.end.is_none() {
        eprintln!(
            "reprise: the recording was cut short ({}): a replay checks it up to the cut",
            crate::loaded::cut_reason(&ended.exit)
        );
    }
    if announce {
        eprintln!("reprise: trace saved to {}", path.display());
    }
    if let Some(report) = &ended.deadlock {
        say_lines("", report);
    }
    let mut output = String::from_utf8_lossy(&sink.all_out).into_owned();
    output.push_str(&String::from_utf8_lossy(&sink.all_err));
    Ok(Run {
        status: if ended.deadlock.is_some() {
            DEADLOCK_STATUS
        } else {
            ended.exit.shell_status()
        },
        trace: Some(path),
        output,
    })
}

/// Record one run; `announce`: say where the trace went and make it the latest; `notice`: say
/// that the program is recorded in sync mode, when it is.
fn record_one(o: &RecordOpts, announce: bool, notice: bool) -> Result<Run> {
    // A fresh seed per run (a run that fails is replayed from what it recorded, not re-run).
    let chaos = if o.chaos { chaos_seed() } else { 0 };
    if o.checkpoint == 0 {
        bail!("--checkpoint must be at least 1");
    }
    let Some(prog) = o.cmd.first() else {
        bail!("no program given: reprise record -- PROGRAM [ARGS...]")
    };
    // As a shell would: nothing is run, no trace is saved, the status says why.
    let exe = resolve_exe(prog)?;
    let mode = pick_mode(o, &exe, notice)?;
    let sync = mode == crate::options::Mode::Sync;
    let preload = if sync {
        Some(crate::syncmode::runtime_shared()?)
    } else {
        None
    };
    // Sync mode orders synchronisation only: LEAP's per-object vectors.
    let strategy = if sync {
        crate::options::Strategy::Leap
    } else {
        o.strategy
    };
    let name = exe
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "trace".into());
    let path = match &o.output {
        Some(p) => p.clone(),
        None => crate::tracedir::new_trace(&name)?,
    };
    let header = record_header(o, &exe, strategy, mode, chaos, preload.as_deref())?;
    let f = std::fs::File::create(&path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    // An ownership recording's events compress as well at level 1, for less of the CPU the
    // program runs on (see `reprise_trace::ZSTD_LEVEL_FAST`).
    let level = if strategy == crate::options::Strategy::Ownership {
        reprise_trace::ZSTD_LEVEL_FAST
    } else {
        reprise_trace::ZSTD_LEVEL
    };
    let w = TraceWriter::new(BufWriter::new(f), &header)?.with_level(level);
    let flags = record_flags(o, strategy, sync);
    let launch = Launch {
        forward_signals: true,
        find_deadlocks: true,
        echo: true,
        ..Launch::for_header(
            &header,
            record_config(o.checkpoint, flags, chaos),
            preload.clone(),
        )
    };
    let mut sink = RecordSink::new(w, o.until_output.is_some());
    let ended = launch::run(&launch, &mut sink)?;
    finish_recording(o, announce, &exe, sync, path, sink, &ended)
}

//! `reprise`: deterministic record and replay of multithreaded C/C++ programs.
//!
//! Subcommands: `cc`/`c++` (compiler wrappers that instrument and link the runtime),
//! `record`, `replay`, `info`. Every message of reprise itself goes to stderr prefixed
//! `reprise:`; record exits with the program's status, replay with the recorded status when
//! verified and 125 otherwise.

mod bench;
mod cc;
mod exit;
mod hashcache;
mod info;
mod kvcache;
mod launch;
mod libs;
mod loaded;
mod options;
mod outcheck;
mod record;
mod recording;
mod replay;
mod sym;
mod syncmode;
mod tracedir;
mod verify;
mod view;
mod watchdog;

use clap::{Parser, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "reprise",
    version,
    about = "Deterministic record and replay of multithreaded C/C++ programs"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Compile and link C with instrumentation and the reprise runtime (wraps gcc; --clang for clang).
    #[command(disable_help_flag = true)]
    Cc {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
    /// Compile and link C++ (wraps g++; --clang for clang++).
    #[command(name = "c++", alias = "cxx", disable_help_flag = true)]
    Cxx {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
    /// Record a run of PROGRAM.
    Record {
        /// Trace file to write (default: a new file in the trace directory).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Recording strategy: ownership (the default: records only when a variable changes owner), leap, aggreplay, aggreplay+, tplay or tplay+ (the seeds' aggreplay and tplay may fail to replay some runs; their + variants replay every run).
        #[arg(long, value_enum, default_value_t = options::Strategy::Ownership)]
        strategy: options::Strategy,
        /// Digest checkpoint every N events per thread (1 = verify every event).
        #[arg(long, default_value_t = 4096)]
        checkpoint: u64,
        /// `full` checkpoints every event (same as --checkpoint 1).
        #[arg(long, value_enum)]
        verify: Option<options::Verify>,
        /// Re-execute every regular-file read in replay, checked by hash, instead of recording
        /// its data (smaller traces; replay fails clearly if a file changed). By default only
        /// files of 1 MiB or more are (the rest is recorded).
        #[arg(long, conflicts_with = "portable")]
        hash_reads: bool,
        /// Record every byte read, so the trace replays without any input file (larger traces,
        /// slower recording of programs that read large files).
        #[arg(long)]
        portable: bool,
        /// Do not catch the program's other system calls with Syscall User Dispatch.
        #[arg(long)]
        no_sud: bool,
        /// Ownership: take a thread's repeated accesses to the granules it holds without
        /// counting them (faster on kernels whose data stays with a thread; slower where data
        /// migrates or is falsely shared, whose lines it cannot split). Kept in the trace.
        #[arg(long)]
        held_granules: bool,
        /// Record up to N runs and keep the first whose program fails (non-zero status, a
        /// signal, a deadlock); the passing runs' traces are deleted. Exits with its status.
        #[arg(long, value_name = "N")]
        until_fail: Option<u32>,
        /// With --until-fail: a run fails when it exits with this shell status (128 + the
        /// signal's number for a signal, 124 for a deadlock) instead of any non-zero one.
        #[arg(long, value_name = "S", requires = "until_fail")]
        until_status: Option<i32>,
        /// With --until-fail: a run fails when its stdout or stderr matches this regular
        /// expression (or, with --until-status too, when either holds).
        #[arg(long, value_name = "REGEX", requires = "until_fail")]
        until_output: Option<regex::Regex>,
        /// Perturb scheduling while recording (seeded random yields and short sleeps at every
        /// access and synchronisation) so rare interleavings show more often; slower. The
        /// trace replays exactly without it (the seed is kept in the trace header).
        #[arg(long)]
        chaos: bool,
        /// `full` (a program built with `reprise cc`: exact replay) or `sync` (an unmodified
        /// program, runtime injected with LD_PRELOAD: synchronisation and system calls only).
        /// Default: full when the program holds the reprise runtime, else sync.
        #[arg(long, value_enum)]
        mode: Option<options::Mode>,
        /// The program and its arguments.
        #[arg(trailing_var_arg = true, required = true)]
        cmd: Vec<OsString>,
    },
    /// Replay a trace (default: the latest) and verify it.
    Replay {
        /// Trace file.
        trace: Option<PathBuf>,
        /// Inject seeded random delays at callbacks (proves order is enforced, not lucky).
        /// They cost about 0.3 us per runtime entry on average: a program making hundreds of
        /// millions of accesses replays a hundred times slower.
        #[arg(long, default_value_t = 0)]
        jitter: u64,
        /// Give up after this many seconds without progress (default: max(60, 20x the recording)).
        #[arg(long)]
        timeout: Option<u64>,
        /// Re-run a diverged replay with varied timing, up to N runs in all, until one verifies
        /// (for sync-mode traces of programs with data races); the output shown is the
        /// verified run's.
        #[arg(long, value_name = "N", default_value_t = 1, conflicts_with = "gdb")]
        attempts: u32,
        /// Replay under gdb, stopped before main (`-- GDB ARGS` go to gdb, e.g.
        /// `-- -batch -ex continue -ex bt`); the replay still verifies at its end.
        #[arg(long)]
        gdb: bool,
        /// Arguments for gdb (after `--`, with --gdb).
        #[arg(last = true, requires = "gdb")]
        gdb_args: Vec<OsString>,
    },
    /// Summarise a trace (default: the latest).
    Info {
        /// Trace file.
        trace: Option<PathBuf>,
        /// Also list every thread's recorded results, signals, inputs and digests.
        #[arg(long)]
        records: bool,
    },
    /// Write a trace's timeline as Chrome trace-event JSON (open in ui.perfetto.dev or
    /// chrome://tracing): one track per thread, time = each thread's event index.
    View {
        /// Trace file.
        trace: Option<PathBuf>,
        /// JSON file to write.
        #[arg(short, long, default_value = "reprise-timeline.json")]
        output: PathBuf,
    },
    /// Benchmark native, floor, tsan, record and replay on the suite and bug programs.
    Bench {
        /// Programs to run, comma-separated (default: the suite and the bug programs of bench/programs/bugs.txt; with --quick: histogram,counter_race,prodcons).
        #[arg(long, value_delimiter = ',')]
        programs: Vec<String>,
        /// Strategies to record with, comma-separated, in table order (default: every strategy: leap, aggreplay, aggreplay+, tplay, tplay+, ownership; ownership with --quick).
        #[arg(long, value_enum, value_delimiter = ',')]
        strategies: Vec<options::Strategy>,
        /// Runs per configuration; tables show medians (default 5, 1 with --quick).
        #[arg(long)]
        runs: Option<usize>,
        /// Worker threads (`-t`) for suite programs.
        #[arg(long, default_value_t = 2)]
        threads: u32,
        /// Output directory.
        #[arg(long, default_value = "bench-results")]
        out: PathBuf,
        /// Problem size of suite programs (default: tiny, a few milliseconds natively; small is
        /// about 1/32 of the programs' own 0.3-2 s, default their own size).
        #[arg(long, value_enum)]
        size: Option<bench::Size>,
        /// Three programs, tiny sizes, one run.
        #[arg(long)]
        quick: bool,
        /// Seconds a single record or replay may take before it is killed and reported as a
        /// timeout; later runs of that program and strategy are then skipped.
        #[arg(long, default_value_t = 30)]
        timeout: u64,
        /// `sync`: unmodified programs (the suite built with plain gcc, and pigz, xz, zstd,
        /// pbzip2 when installed) recorded in sync mode: record/native, replay/native, trace
        /// size, verified/N (size default: the programs' own).
        #[arg(long, value_enum)]
        mode: Option<options::Mode>,
    },
}

/// For the commands that only print (`info`, `view`): a reader that goes away (`reprise info T
/// | head`) ends reprise quietly by SIGPIPE, as it ends any Unix filter, instead of a panic of
/// `println!` on EPIPE (Rust ignores SIGPIPE before `main`). Not for `record` and `replay`: the
/// launcher keeps ignoring it (a program that closes its end of a pipe must not kill it).
fn die_on_broken_pipe() {
    // SAFETY: plain FFI call restoring a signal's default disposition; no handler involved.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

// Over 80 lines: one match that moves each subcommand's options into its command.
#[allow(clippy::too_many_lines)]
fn main() {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Cc { args } => cc::run(false, args),
        Cmd::Cxx { args } => cc::run(true, args),
        Cmd::Record {
            output,
            strategy,
            checkpoint,
            verify,
            hash_reads,
            portable,
            no_sud,
            held_granules,
            until_fail,
            until_status,
            until_output,
            chaos,
            mode,
            cmd,
        } => {
            let checkpoint = match verify {
                Some(options::Verify::Full) => 1,
                Some(options::Verify::Default) | None => checkpoint,
            };
            record::record(record::RecordOpts {
                output,
                strategy,
                checkpoint,
                cmd,
                hash_reads,
                portable,
                no_sud,
                held_granules,
                until_fail,
                until_status,
                until_output,
                chaos,
                mode,
            })
        }
        Cmd::Replay {
            trace,
            jitter,
            timeout,
            attempts,
            gdb,
            gdb_args,
        } => replay::replay(replay::ReplayOpts {
            trace,
            jitter,
            timeout: timeout.map(std::time::Duration::from_secs),
            attempts,
            gdb: gdb.then_some(gdb_args),
        })
        // Replay failures of any kind exit 125 (never a status the program could have).
        .map_err(exit::Failure::replay),
        Cmd::Info { trace, records } => {
            die_on_broken_pipe();
            info::info(trace, records)
        }
        Cmd::View { trace, output } => {
            die_on_broken_pipe();
            view::view(trace, output)
        }
        Cmd::Bench {
            programs,
            strategies,
            runs,
            threads,
            out,
            size,
            quick,
            timeout,
            mode,
        } => bench::run(bench::BenchOpts {
            programs,
            strategies: strategies.iter().map(|s| s.name().to_string()).collect(),
            runs,
            threads,
            out,
            size,
            quick,
            timeout: std::time::Duration::from_secs(timeout.max(1)),
            sync: mode == Some(options::Mode::Sync),
        }),
    };
    match r {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("reprise: {e:#}");
            std::process::exit(exit::status_of(&e));
        }
    }
}

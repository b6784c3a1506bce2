//! Shared helpers of the end-to-end tests: build a test program with `reprise cc`, record it,
//! replay it, and read what happened. Everything runs the real binary on real programs.
#![allow(dead_code)]

pub mod kept;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The reprise binary under test.
pub fn reprise() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_reprise"))
}

/// Repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// One line of tests/programs/manifest.txt.
#[derive(Debug, Clone)]
pub struct Program {
    pub name: String,
    pub source: PathBuf,
    pub cplusplus: bool,
    pub racy: bool,
    /// Prints clock readings (manifest `racy=clock`): outcomes are compared with numbers masked.
    pub clock: bool,
    pub crashes: bool,
    pub args: Vec<String>,
}

pub fn manifest(dir: &str) -> Vec<Program> {
    let dir = root().join(dir);
    let text = std::fs::read_to_string(dir.join("manifest.txt")).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Program {
                name: f[0].into(),
                source: dir.join(f[1]),
                cplusplus: f[2] == "c++",
                racy: f[3] == "yes" || f[3] == "clock",
                clock: f[3] == "clock",
                crashes: f[4] == "yes",
                args: if f.len() > 5 && f[5] != "-" {
                    f[5..].iter().map(|s| s.to_string()).collect()
                } else {
                    vec![]
                },
            }
        })
        .collect()
}

pub fn program(name: &str) -> Program {
    manifest("tests/programs")
        .into_iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no program {name}"))
}

/// A scratch directory that also holds the traces (REPRISE_TRACE_DIR). Kept, and its path
/// printed, when a replay in it was not verified ([`replay_verified`]): its binaries and
/// traces are what a rare failure needs to be replayed again (a trace names its program by
/// this directory).
pub struct Work {
    pub dir: tempfile::TempDir,
    keep: std::cell::Cell<bool>,
}

impl Drop for Work {
    fn drop(&mut self) {
        if self.keep.get() {
            self.dir.disable_cleanup(true);
            eprintln!("kept the test's directory {}", self.dir.path().display());
        }
    }
}

impl Work {
    pub fn new() -> Work {
        Work {
            dir: tempfile::tempdir().unwrap(),
            keep: std::cell::Cell::new(false),
        }
    }
    pub fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }
    pub fn cmd(&self) -> Command {
        let mut c = Command::new(reprise());
        c.current_dir(self.dir.path())
            .env("REPRISE_TRACE_DIR", self.path("traces"));
        c
    }
    /// `reprise record -o t EXTRA -- ./bin` (the program's arguments go after it).
    pub fn record_cmd(&self, t: &Path, extra: &[&str], bin: &str) -> Command {
        let mut c = self.cmd();
        record_args(&mut c, t, extra, bin);
        c
    }
    /// Start [`Work::record_cmd`] (stdin null, stdout and stderr piped) and wait until the
    /// program runs: the recorder and the program's pid (its child, to signal or kill).
    pub fn start_recording(&self, t: &Path, extra: &[&str], bin: &str) -> (Child, i32) {
        let child = self
            .record_cmd(t, extra, bin)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let prog = program_child(child.id(), bin);
        (child, prog)
    }
    /// Build `lib{name}.so` here with plain gcc: one function, `{name}_value`, returning `v`
    /// (a library the tests change between record and replay).
    pub fn build_value_lib(&self, name: &str, v: i32) {
        let src = format!("{name}.c");
        std::fs::write(
            self.path(&src),
            format!("int {name}_value(void) {{ return {v}; }}\n"),
        )
        .unwrap();
        let o = Command::new("gcc")
            .current_dir(self.dir.path())
            .args([
                "-shared",
                "-fPIC",
                "-O2",
                "-o",
                &format!("lib{name}.so"),
                &src,
            ])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    /// Build `p` with `reprise cc`/`c++` (compiler: "gcc" or "clang"); returns the binary name.
    pub fn build(&self, p: &Program, compiler: &str) -> String {
        let out = format!("{}-{compiler}", p.name);
        let mut c = self.cmd();
        c.arg(if p.cplusplus { "c++" } else { "cc" });
        if compiler == "clang" {
            c.arg("--clang");
        }
        c.args(["-O2", "-g", "-o", &out]);
        built(c, p, out)
    }
    /// Write the C program `source` here as `{name}.c` and build it twice at `opt` (`-O1`...):
    /// with `reprise cc` (full mode) and with plain gcc (sync mode); returns the two binaries'
    /// names, `{name}` and `{name}-plain`.
    pub fn build_source(&self, name: &str, source: &str, opt: &str) -> [String; 2] {
        let src = format!("{name}.c");
        std::fs::write(self.path(&src), source).unwrap();
        let plain = format!("{name}-plain");
        let mut full = self.cmd();
        full.args(["cc", opt, "-o", name, &src]);
        let mut gcc = Command::new("gcc");
        gcc.current_dir(self.dir.path())
            .args([opt, "-o", &plain, &src]);
        for c in [full, gcc] {
            let o = run_limited(c, Duration::from_secs(300));
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        }
        [name.to_string(), plain]
    }
    /// Build `p` here as a plain binary, without the runtime (`gcc`, or `g++ -std=c++20` for
    /// C++; `-O2 -pthread -g`), as a native run or sync mode wants it; returns its name,
    /// `{name}-plain`.
    pub fn build_plain(&self, p: &Program) -> String {
        let out = format!("{}-plain", p.name);
        let mut c = Command::new(if p.cplusplus { "g++" } else { "gcc" });
        c.current_dir(self.dir.path())
            .args(["-O2", "-pthread", "-g", "-o", &out]);
        built(c, p, out)
    }
}

/// Run the compiler command `c` on `p`'s source (C++20 for C++), asserting it succeeds;
/// returns `out`, the binary's name.
fn built(mut c: Command, p: &Program, out: String) -> String {
    c.arg(&p.source);
    if p.cplusplus {
        c.arg("-std=c++20");
    }
    let o = c.output().unwrap();
    assert!(
        o.status.success(),
        "building {} failed:\n{}",
        p.name,
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

/// Run `cmd` with a hard time limit (a hang is a failure, never a silent pass).
pub fn run_limited(mut cmd: Command, limit: Duration) -> Output {
    use std::io::Read;
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .stdin(std::process::Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let t1 = std::thread::spawn(move || {
        let mut v = Vec::new();
        so.read_to_end(&mut v).ok();
        v
    });
    let t2 = std::thread::spawn(move || {
        let mut v = Vec::new();
        se.read_to_end(&mut v).ok();
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > limit {
            child.kill().ok();
            panic!("{:?} did not finish within {:?}", cmd, limit);
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Output {
        status,
        stdout: t1.join().unwrap(),
        stderr: t2.join().unwrap(),
    }
}

/// Shell-style status (128+signal for a signal death).
pub fn shell_status(o: &Output) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    o.status
        .code()
        .unwrap_or_else(|| 128 + o.status.signal().unwrap_or(0))
}

/// A recording: the trace path, the program's stdout and status.
pub struct Recorded {
    pub trace: PathBuf,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub status: i32,
}

pub fn record(w: &Work, bin: &str, args: &[String], trace: &str, extra: &[&str]) -> Recorded {
    record_with(w, w.cmd(), bin, args, trace, extra)
}

/// [`record`] with every thread of the recording on one CPU (`taskset`): each thread runs
/// only while the others are preempted.
pub fn record_on_one_cpu(
    w: &Work,
    bin: &str,
    args: &[String],
    trace: &str,
    extra: &[&str],
) -> Recorded {
    record_with(w, on_one_cpu(w), bin, args, trace, extra)
}

/// `taskset -c N reprise` in `w`: every thread of the run on one CPU. Successive calls take
/// the CPUs in turn, so that tests running in parallel (each pinning its runs) do not all
/// queue on CPU 0 while the others idle.
fn on_one_cpu(w: &Work) -> Command {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpu = NEXT.fetch_add(1, Ordering::Relaxed) % cpus;
    let mut c = Command::new("taskset");
    c.current_dir(w.dir.path())
        .env("REPRISE_TRACE_DIR", w.path("traces"))
        .args(["-c", &cpu.to_string()])
        .arg(reprise());
    c
}

fn record_with(
    w: &Work,
    mut c: Command,
    bin: &str,
    args: &[String],
    trace: &str,
    extra: &[&str],
) -> Recorded {
    let t = w.path(trace);
    record_args(&mut c, &t, extra, bin).args(args);
    let o = run_limited(c, Duration::from_secs(120));
    recorded(t, &o)
}

/// Add `record -o t EXTRA -- ./bin` to `c`.
fn record_args<'c>(c: &'c mut Command, t: &Path, extra: &[&str], bin: &str) -> &'c mut Command {
    c.arg("record")
        .arg("-o")
        .arg(t)
        .args(extra)
        .arg("--")
        .arg(format!("./{bin}"))
}

/// What `reprise record` into trace `t` printed and returned: the program's output and
/// status (stderr without the recorder's own `reprise:` lines). Asserts the trace was saved.
pub fn recorded(t: PathBuf, o: &Output) -> Recorded {
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("reprise: trace saved to {}", t.display())),
        "record did not report its trace:\n{err}"
    );
    let prog_err: Vec<u8> = err
        .lines()
        .filter(|l| !l.starts_with("reprise:"))
        .flat_map(|l| format!("{l}\n").into_bytes())
        .collect();
    Recorded {
        trace: t,
        stdout: o.stdout.clone(),
        stderr: prog_err,
        status: shell_status(o),
    }
}

/// How to run a replay.
#[derive(Clone, Copy, Debug)]
pub enum How {
    Plain,
    OneCpu,
    Jitter(u64),
}

/// Replay and assert it is verified with the recording's output and status.
pub fn replay_verified(w: &Work, r: &Recorded, how: How) {
    let c = match how {
        How::OneCpu => on_one_cpu(w),
        _ => w.cmd(),
    };
    let mut c = c;
    c.arg("replay").arg(&r.trace);
    if let How::Jitter(seed) = how {
        c.arg("--jitter").arg(seed.to_string());
    }
    let o = run_limited(c, Duration::from_secs(180));
    let err = String::from_utf8_lossy(&o.stderr);
    if !err.contains("reprise: replay verified") {
        w.keep.set(true);
    }
    assert!(
        err.contains("reprise: replay verified"),
        "replay ({how:?}) of {} not verified (status {}):\n{err}",
        r.trace.display(),
        shell_status(&o)
    );
    assert_eq!(
        o.stdout, r.stdout,
        "replay ({how:?}) stdout differs from the recording"
    );
    let prog_err: Vec<u8> = err
        .lines()
        .filter(|l| !l.starts_with("reprise:"))
        .flat_map(|l| format!("{l}\n").into_bytes())
        .collect();
    assert_eq!(
        prog_err, r.stderr,
        "replay ({how:?}) stderr differs from the recording"
    );
    assert_eq!(
        shell_status(&o),
        r.status,
        "replay ({how:?}) exit status differs from the recording"
    );
}

/// Replay expecting failure: exit 125, a `reprise:` reason, never `verified`.
pub fn replay_rejected(w: &Work, trace: &Path) -> String {
    let mut c = w.cmd();
    c.arg("replay").arg(trace).args(["--timeout", "30"]);
    let o = run_limited(c, Duration::from_secs(120));
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(
        !err.contains("replay verified"),
        "a damaged trace replayed as verified:\n{err}"
    );
    assert_eq!(
        shell_status(&o),
        125,
        "a damaged trace must exit 125:\n{err}"
    );
    assert!(
        err.lines().any(|l| l.starts_with("reprise: ")),
        "no reason given:\n{err}"
    );
    // A replay that hangs until the watchdog ends it has not named what was damaged.
    assert!(
        !err.contains("replay is stuck"),
        "a damaged trace made the replay hang instead of naming the damage:\n{err}"
    );
    err
}

/// What of a racy program's output shows the interleaving: its stdout, with every number of
/// two or more digits masked for a program that prints clock readings (those differ in every
/// run, and would make any two recordings look like two outcomes of the race).
pub fn race_outcome(p: &Program, stdout: &[u8]) -> Vec<u8> {
    if !p.clock {
        return stdout.to_vec();
    }
    let mut out = Vec::with_capacity(stdout.len());
    let mut i = 0;
    while i < stdout.len() {
        let n = stdout[i..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if n >= 2 {
            out.push(b'#');
            i += n;
        } else {
            out.push(stdout[i]);
            i += 1;
        }
    }
    out
}

/// Record program `name` (built with `compiler`) `recordings` times with the extra record
/// arguments `extra`; every recording replays verified plainly, pinned to one CPU and with
/// jitter. A racy program must show at least two outcomes: when the first recordings show one,
/// up to 60 more are made (each replayed verified) before concluding the recorder serialises
/// the race (outcome variety depends on the machine's load).
pub fn record_replay_all_ways(name: &str, compiler: &str, recordings: usize, extra: &[&str]) {
    let p = program(name);
    let w = Work::new();
    let bin = w.build(&p, compiler);
    let mut outcomes = std::collections::BTreeSet::new();
    let outcome = |r: &Recorded| (race_outcome(&p, &r.stdout), r.status);
    for i in 0..recordings {
        let r = record(&w, &bin, &p.args, &format!("{name}-{i}.trace"), extra);
        outcomes.insert(outcome(&r));
        // A failing trace is kept (target/tmp/failed-traces), to be read after the run.
        let kept = format!("{name}-{compiler}-{i}");
        kept::replay_kept_how(&w, &r, &kept, How::Plain);
        kept::replay_kept_how(&w, &r, &kept, How::OneCpu);
        kept::replay_kept_how(&w, &r, &kept, How::Jitter(i as u64 + 1));
    }
    if p.racy {
        let mut more = 0;
        while outcomes.len() < 2 && more < 60 {
            let r = record(&w, &bin, &p.args, &format!("{name}-x{more}.trace"), extra);
            outcomes.insert(outcome(&r));
            replay_verified(&w, &r, How::Plain);
            more += 1;
        }
        assert!(
            outcomes.len() >= 2,
            "{name}: all {} recordings ({extra:?}) had the same outcome; the recorder serialises the race",
            recordings + more
        );
    }
}

/// The pid of the program `./{bin}` that the recorder `recorder` runs, once it is exec'd (the
/// recorder's other children, such as the dynamic loader listing the libraries, and the
/// program before its exec, are not it). Panics after 20 s.
pub fn program_child(recorder: u32, bin: &str) -> i32 {
    let want = format!("./{bin}");
    let start = Instant::now();
    loop {
        let kids = std::fs::read_to_string(format!("/proc/{recorder}/task/{recorder}/children"))
            .unwrap_or_default();
        for k in kids.split_whitespace() {
            let cmd = std::fs::read(format!("/proc/{k}/cmdline")).unwrap_or_default();
            if cmd.split(|&b| b == 0).next() == Some(want.as_bytes()) {
                return k.parse().unwrap();
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the program {want} did not start"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// `$then!(PROGRAMS..., $more...)`: the test programs every strategy's acceptance runs
/// (acceptance.rs under `ownership`, plus_acceptance.rs under `aggreplay+` and `tplay+`), each
/// a name in tests/programs, followed by `$more`.
#[allow(unused_macros)]
macro_rules! acceptance_programs {
    ($then:ident $(, $more:ident)*) => {
        $then!(
            counter_race,
            check_then_act,
            order_violation,
            dcl,
            bank,
            prodcons,
            stencil,
            lockfree_stack,
            addresses,
            cxx_threads,
            // The long tail (issue 6) and inputs/outputs (issue 5).
            spin_plain,
            spin_yield,
            trylock_loop,
            timedwait,
            detached_exit,
            errno_after,
            struct_copy_race,
            local_static,
            cv_wait_for,
            stdio_threads,
            tls_dtor,
            threads_rand,
            timestamps,
            echo_server,
            sigalrm,
            rdtsc,
            // Ends without exit() (issue 14's sweep of real programs).
            quick_exit,
            // C++20 waits: libstdc++'s own futex calls.
            cxx20_sync,
            // Signals delivered at runtime entries that replay skips nothing of.
            cond_alarm,
            // A signal sent to the pid getpid() gave (the recording's, in replay).
            kill_self,
            // A worker's signal wakes main from sigsuspend; main ends without a join.
            self_signal,
            // A signal among lines of output: replay's writes make no runtime entry the
            // recording's did not (each moved the delivery one entry late).
            signal_lines,
            // Data handed through POSIX semaphores only (waits, polls, timed waits).
            semaphores,
            // The program's own SIGSYS handlers (bash's), beside Syscall User Dispatch's.
            sigsys_handler
            $(, $more)*
        );
    };
}

#[allow(unused_imports)]
pub(crate) use acceptance_programs;

/// A generated text file of `size` bytes (compressible, varied, from a fixed generator) named
/// input.txt in `w`.
pub fn input_file(w: &Work, size: usize) {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut text = Vec::with_capacity(size + 64);
    while text.len() < size {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        text.extend_from_slice(format!("line {} value {:x}\n", x % 1000, x >> 40).as_bytes());
    }
    std::fs::write(w.path("input.txt"), &text).unwrap();
}

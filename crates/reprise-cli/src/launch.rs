//! Starting the program under the runtime, identically in record and replay, and collecting
//! what it produces.
//!
//! The child gets: ASLR off (personality), the recorded argv/env/cwd/RLIMIT_STACK, exec'd by
//! the same path; the config memfd, the event pipe, the status memfd and the launcher's
//! stderr on fixed high descriptors (so the program's own descriptors and environment are
//! the same in both modes); pipes on stdout and stderr, which the launcher copies to its own
//! and keeps (for the trace, or to compare in replay). A watchdog reads the status memfd
//! during replay and reports who waits for whom instead of hanging.
//!
//! Signals: while recording, SIGINT, SIGTERM and SIGHUP sent to the launcher are sent on to
//! the program, as if sent to it directly (the runtime ends the trace if the program does not
//! handle them). Unless stdin is a terminal the program runs in its own process group, so a
//! signal to the launcher's group reaches it once, through the launcher; with a terminal it
//! shares the launcher's group (it may read the terminal), and what the terminal sends (Ctrl-C,
//! hangup) reaches both directly and is not sent again. The program never outlives the
//! launcher (PR_SET_PDEATHSIG). In replay, a recording ended by such a signal from outside is
//! ended the same way: the launcher sends it once every thread reached its recorded final
//! event count.

use crate::watchdog::Watchdog;
use anyhow::{bail, Context, Result};
use reprise_proto::*;
use std::ffi::CString;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What to run.
pub struct Launch {
    /// Path exec'd.
    pub exe: Vec<u8>,
    /// argv, argv[0] included.
    pub argv: Vec<Vec<u8>>,
    /// Environment in order.
    pub env: Vec<Vec<u8>>,
    /// Working directory.
    pub cwd: Vec<u8>,
    /// RLIMIT_STACK (soft, hard).
    pub rlimit_stack: (u64, u64),
    /// Config memfd contents.
    pub config: Vec<u8>,
    /// Watchdog: on in replay; the timeout without any progress.
    pub watchdog: Option<Duration>,
    /// Record: send SIGINT, SIGTERM and SIGHUP on to the program.
    pub forward_signals: bool,
    /// Replay of a recording ended by a terminating signal from outside: the signal, and each
    /// thread's recorded final event count, which the replay reaches before it is sent.
    pub end_signal: Option<(i32, Vec<(u32, u64)>)>,
    /// Record: end the program (complete trace) when every thread is blocked for good.
    pub find_deadlocks: bool,
    /// Replay under gdb: the arguments given to gdb after reprise's own (see [`GDB_SETUP`]).
    pub gdb: Option<Vec<std::ffi::OsString>>,
    /// Replay of a cut-short recording: once every thread went as far as the trace goes
    /// ([`Watchdog::at_cut`]), end the replay (SIGTERM, asked through the status header) so
    /// that the runtime sends what it re-recorded.
    pub cut: bool,
    /// Sync mode: the runtime shared object, put first in `LD_PRELOAD` (the runtime removes it
    /// from the program's environment at start).
    pub preload: Option<std::path::PathBuf>,
    /// Copy the program's stdout and stderr to reprise's as they come (else only the sink
    /// gets them).
    pub echo: bool,
}

impl Launch {
    /// The program a trace header names (path, argv, environment, working directory, stack
    /// limit), with `config` and `preload`, and every per-mode option off (no watchdog, no
    /// signals sent on or at the end, no deadlock search, no gdb, not cut, output not echoed):
    /// record and replay each turn on what they need.
    pub fn for_header(
        header: &reprise_trace::Header,
        config: Vec<u8>,
        preload: Option<std::path::PathBuf>,
    ) -> Launch {
        Launch {
            exe: header.exe_path.clone(),
            argv: header.argv.clone(),
            env: header.env.clone(),
            cwd: header.cwd.clone(),
            rlimit_stack: header.rlimit_stack,
            config,
            watchdog: None,
            forward_signals: false,
            end_signal: None,
            find_deadlocks: false,
            gdb: None,
            cut: false,
            preload,
            echo: false,
        }
    }
}

/// gdb commands run before the user's: the signals the runtime uses pass silently (Syscall
/// User Dispatch's SIGSYS, the hand-over signal 62, timer signals), then gdb lets the
/// program, waiting for it before its exec, reach the exec and stops there: before `main`, with the
/// program's symbols loaded.
const GDB_SETUP: &[&str] = &[
    "set pagination off",
    "handle SIGSYS nostop noprint pass",
    "handle SIG62 nostop noprint pass",
    "handle SIGALRM nostop noprint pass",
    "handle SIGVTALRM nostop noprint pass",
    "handle SIGPROF nostop noprint pass",
    "catch exec",
    "continue",
    "delete",
    "echo reprise: the replay is stopped before main; continue to run it (turns are enforced, and it verifies at its end)\\n",
];

/// The signal that ends a deadlocked program (asked through the status header, so the
/// program's own handler for it does not keep it alive).
const DEADLOCK_SIGNAL: i32 = libc::SIGTERM;

/// The program's pid while it runs (for the signal-forwarding handler), else 0.
static CHILD: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);
/// Whether the program shares the launcher's process group.
static SAME_GROUP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
const FORWARDED: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

extern "C" fn forward(sig: i32, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    use std::sync::atomic::Ordering;
    let pid = CHILD.load(Ordering::SeqCst);
    if pid <= 0 {
        return;
    }
    // SAFETY: the kernel's siginfo for this signal.
    let code = unsafe { (*info).si_code };
    if SAME_GROUP.load(Ordering::SeqCst) && code == libc::SI_KERNEL {
        // From the terminal, to the whole foreground group: the program has its own copy.
        return;
    }
    // SAFETY: kill(2) on our own child, async-signal-safe.
    unsafe { libc::kill(pid, sig) };
}

fn install_forwarding() {
    for sig in FORWARDED {
        // SAFETY: a zeroed sigaction with our handler and SA_SIGINFO is valid.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction =
                forward as extern "C" fn(i32, *mut libc::siginfo_t, *mut libc::c_void) as usize;
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// Where the child's output goes as it arrives.
pub trait Sink {
    /// Runtime event bytes.
    fn events(&mut self, b: &[u8]) -> Result<()>;
    /// Program stdout bytes (already copied to our stdout).
    fn stdout(&mut self, b: &[u8]) -> Result<()>;
    /// Program stderr bytes (already copied to our stderr).
    fn stderr(&mut self, b: &[u8]) -> Result<()>;
    /// Called about every 100 ms.
    fn tick(&mut self) -> Result<()> {
        Ok(())
    }
}

/// How the child ended.
pub struct Ended {
    /// Exit.
    pub exit: reprise_trace::Exit,
    /// Wall time.
    pub wall: Duration,
    /// The watchdog stopped it: the report.
    pub stuck: Option<String>,
    /// The recorder found it deadlocked and ended it: the report.
    pub deadlock: Option<String>,
}

fn memfd(name: &str, data: &[u8], size: usize) -> Result<OwnedFd> {
    let n = CString::new(name).unwrap();
    // SAFETY: valid NUL-terminated name; returns a new fd or -1.
    let fd = unsafe { libc::memfd_create(n.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        bail!("memfd_create failed: {}", std::io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor we own.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut f = std::fs::File::from(fd.try_clone()?);
    f.set_len(size.max(data.len()) as u64)?;
    f.write_all(data)?;
    Ok(fd)
}

fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    let mut p = [0; 2];
    // SAFETY: p is a valid out-array of two ints.
    if unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        bail!("pipe2 failed: {}", std::io::Error::last_os_error());
    }
    // SAFETY: both are fresh descriptors we own.
    Ok(unsafe { (OwnedFd::from_raw_fd(p[0]), OwnedFd::from_raw_fd(p[1])) })
}

fn cstrs(v: &[Vec<u8>]) -> Result<Vec<CString>> {
    v.iter()
        .map(|s| CString::new(s.clone()).context("argument or environment contains a NUL byte"))
        .collect()
}

enum Msg {
    Events(Vec<u8>),
    Stdout(Vec<u8>),
    Stderr(Vec<u8>),
    Eof,
}

fn reader(fd: OwnedFd, tx: mpsc::Sender<Msg>, wrap: fn(Vec<u8>) -> Msg) {
    std::thread::spawn(move || {
        let mut f = std::fs::File::from(fd);
        let mut buf = vec![0u8; 1 << 16];
        loop {
            match f.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if tx.send(wrap(buf[..n].to_vec())).is_err() {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        let _ = tx.send(Msg::Eof);
    });
}

/// How the launcher ends the program while it runs ([`run`]'s loop, each pass while the
/// program has not exited): a replay's recorded end signal, a cut-short replay's end, a
/// recorded deadlock, or the watchdog's verdict on a stuck program.
#[derive(Default)]
struct Ending {
    /// When the launcher last sent the program its end.
    end_sent: Option<Instant>,
    /// The watchdog stopped the program: the report.
    stuck: Option<String>,
    /// The recorder found the program deadlocked and ended it: the report.
    deadlock: Option<String>,
}

impl Ending {
    /// One pass: send what is due to the running program `pid`.
    fn step(&mut self, l: &Launch, wd: &mut Watchdog, pid: i32) {
        if let Some((sig, finals)) = &l.end_signal {
            // Replay of an end by a signal from outside: once every thread is where the
            // recording's were, send it (again every 200 ms: a thread busy inside the
            // runtime lets it pass).
            if self
                .end_sent
                .is_none_or(|t| t.elapsed() > Duration::from_millis(200))
                && wd.reached(finals)
            {
                wd.request_end(*sig);
                // SAFETY: signalling our own child.
                unsafe { libc::kill(pid, *sig) };
                self.end_sent = Some(Instant::now());
            }
        } else if l.cut {
            // Sent again every 200 ms until a thread takes it (one busy inside the runtime
            // lets it pass), never once the runtime is ending the process (a second one
            // would kill it before it sent what it re-recorded).
            let finishing = wd
                .header()
                .finishing
                .load(std::sync::atomic::Ordering::SeqCst)
                != 0;
            if !finishing
                && self
                    .end_sent
                    .is_none_or(|t| t.elapsed() > Duration::from_millis(200))
                && (self.end_sent.is_some() || wd.at_cut())
            {
                wd.request_end(libc::SIGTERM);
                // SAFETY: signalling our own child.
                unsafe { libc::kill(pid, libc::SIGTERM) };
                self.end_sent.get_or_insert(Instant::now());
            }
        } else if l.find_deadlocks {
            match self.end_sent {
                None => {
                    if let Some(report) = wd.deadlock(pid) {
                        wd.request_end(DEADLOCK_SIGNAL);
                        // SAFETY: signalling our own child.
                        unsafe { libc::kill(pid, DEADLOCK_SIGNAL) };
                        self.end_sent = Some(Instant::now());
                        self.deadlock = Some(report);
                    }
                }
                Some(t) if t.elapsed() > Duration::from_secs(5) => {
                    // The program did not end: it is killed (the trace is partial).
                    // SAFETY: killing our own child.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                    self.end_sent = Some(Instant::now());
                }
                Some(_) => {}
            }
        }
        let sent_long_ago = self
            .end_sent
            .is_none_or(|t| t.elapsed() > Duration::from_secs(5));
        if self.stuck.is_none() && sent_long_ago {
            if let Some(report) = wd.check(pid) {
                self.stuck = Some(report);
                // SAFETY: killing our own child.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
}

/// Hand `m` to `sink`, the program's output copied to reprise's own as well when `echo`
/// (stdout flushed at once when `live`); whether `m` was the end of one of the pipes.
fn deliver(m: Msg, echo: bool, live: bool, sink: &mut dyn Sink) -> Result<bool> {
    match m {
        Msg::Events(b) => sink.events(&b)?,
        Msg::Stdout(b) => {
            if echo {
                let mut stdout = std::io::stdout();
                let _ = stdout.write_all(&b);
                if live {
                    let _ = stdout.flush();
                }
            }
            sink.stdout(&b)?
        }
        Msg::Stderr(b) => {
            if echo {
                let _ = std::io::stderr().write_all(&b);
            }
            sink.stderr(&b)?
        }
        Msg::Eof => return Ok(true),
    }
    Ok(false)
}

/// The status region (`status`, [`STATUS_SIZE`] bytes) mapped for the watchdog.
fn map_status(status: &OwnedFd) -> Result<*mut libc::c_void> {
    // Map the status region for the watchdog (writable: the end request goes the other way).
    // SAFETY: mapping a memfd we own, of STATUS_SIZE bytes, shared; unmapped never (process
    // lifetime is short), accessed with atomics only.
    let status_map = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            STATUS_SIZE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            status.as_raw_fd(),
            0,
        )
    };
    if status_map == libc::MAP_FAILED {
        bail!("cannot map the status region");
    }
    Ok(status_map)
}

/// [`run`]'s loop while the program `pid` runs: hand what comes through `rx` to `sink`, ask
/// the runtime to flush, tick the sink, reap the program and (through `ending`) end it when
/// that is due; until every pipe is closed, or 2 s after the program exited (descendants may
/// keep the pipes open). The program's exit, if it was reaped.
fn supervise(
    l: &Launch,
    sink: &mut dyn Sink,
    pid: i32,
    rx: &mpsc::Receiver<Msg>,
    wd: &mut Watchdog,
    ending: &mut Ending,
) -> Result<Option<reprise_trace::Exit>> {
    let mut open = 3;
    let mut exit: Option<reprise_trace::Exit> = None;
    let mut exited_at: Option<Instant> = None;
    let mut last_tick = Instant::now();
    let mut last_flush = Instant::now();
    while open > 0 {
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok(m) => {
                if deliver(m, l.echo, true, sink)? {
                    open -= 1;
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        if (l.forward_signals || l.cut) && last_flush.elapsed() >= Duration::from_millis(50) {
            // Record: ask the runtime to send what it buffered (a cut-short recording then
            // holds what happened until shortly before the cut).
            wd.header()
                .flush_epoch
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            last_flush = Instant::now();
        }
        if last_tick.elapsed() >= Duration::from_millis(100) {
            sink.tick()?;
            last_tick = Instant::now();
        }
        if exit.is_none() {
            let mut st = 0;
            // SAFETY: waiting for our own child.
            let r = unsafe { libc::waitpid(pid, &mut st, libc::WNOHANG) };
            if r == pid {
                exit = Some(decode_status(st));
                exited_at = Some(Instant::now());
                CHILD.store(0, std::sync::atomic::Ordering::SeqCst);
            } else {
                ending.step(l, wd, pid);
            }
        } else if exited_at.unwrap().elapsed() > Duration::from_secs(2) {
            // Descendants keep our pipes open; stop waiting for them.
            break;
        }
    }
    Ok(exit)
}

/// Run the program to its end, feeding `sink`.
// Over 80 lines: one sequence (descriptors and C strings, fork, supervision, drain) whose
// steps share what must live from before the fork to the end (the descriptors, the strings
// the child's pointers point into); what stands alone is in its own function (`exec_child`,
// `supervise`, `Ending::step`, `deliver`, `map_status`).
pub fn run(l: &Launch, sink: &mut dyn Sink) -> Result<Ended> {
    let config = memfd("reprise-config", &l.config, 0)?;
    let status = memfd("reprise-status", &[], STATUS_SIZE)?;
    let (ev_r, ev_w) = pipe()?;
    let (out_r, out_w) = pipe()?;
    let (err_r, err_w) = pipe()?;
    // SAFETY: raising the pipe size is advisory; failure is harmless.
    unsafe { libc::fcntl(ev_w.as_raw_fd(), libc::F_SETPIPE_SZ, 1 << 20) };
    let exe = CString::new(l.exe.clone())?;
    let argv = cstrs(&l.argv)?;
    let env = cstrs(&crate::syncmode::program_env(&l.env, l.preload.as_deref()))?;
    let cwd = CString::new(l.cwd.clone())?;
    let mut argv_p: Vec<*const libc::c_char> = argv.iter().map(|c| c.as_ptr()).collect();
    argv_p.push(std::ptr::null());
    let mut env_p: Vec<*const libc::c_char> = env.iter().map(|c| c.as_ptr()).collect();
    env_p.push(std::ptr::null());
    let fds: [(RawFd, RawFd); 6] = [
        (config.as_raw_fd(), FD_CONFIG),
        (ev_w.as_raw_fd(), FD_CHANNEL),
        (status.as_raw_fd(), FD_STATUS),
        (2, FD_LOG),
        (out_w.as_raw_fd(), 1),
        (err_w.as_raw_fd(), 2),
    ];
    let rl = libc::rlimit {
        rlim_cur: l.rlimit_stack.0,
        rlim_max: l.rlimit_stack.1,
    };
    let status_map = map_status(&status)?;
    // SAFETY: isatty and getpid have no preconditions.
    let own_group = unsafe { libc::isatty(0) } == 0;
    let parent = unsafe { libc::getpid() };
    SAME_GROUP.store(!own_group, std::sync::atomic::Ordering::SeqCst);
    if l.forward_signals {
        install_forwarding();
    }
    // Under gdb: the program waits before its exec until the launcher writes to this pipe.
    let go_pipe = match l.gdb {
        Some(_) => Some(pipe()?),
        None => None,
    };
    let go = go_pipe.as_ref().map(|(r, _)| r.as_raw_fd());
    let child = ChildExec {
        parent,
        own_group,
        fds,
        cwd: &cwd,
        rl,
        go,
        exe: &exe,
        argv_p: &argv_p,
        env_p: &env_p,
    };
    let start = Instant::now();
    // SAFETY: between fork and exec the child only makes async-signal-safe calls (dup2,
    // chdir, setrlimit, personality, setpgid, prctl, getppid, execve, _exit) on data prepared
    // before the fork.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        bail!("fork failed: {}", std::io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: this is the child, just forked; `child` was prepared before the fork.
        unsafe { exec_child(&child) }
    }
    if own_group {
        // Also from this side, so a signal sent right after fork finds the group.
        // SAFETY: setpgid on our own child.
        unsafe { libc::setpgid(pid, pid) };
    }
    CHILD.store(pid, std::sync::atomic::Ordering::SeqCst);
    let mut debugger = match &l.gdb {
        Some(args) => Some(start_gdb(pid, args, go_pipe.map(|(_, w)| w).unwrap())?),
        None => None,
    };
    drop((ev_w, out_w, err_w));
    let (tx, rx) = mpsc::channel();
    reader(ev_r, tx.clone(), Msg::Events);
    reader(out_r, tx.clone(), Msg::Stdout);
    reader(err_r, tx, Msg::Stderr);
    let mut wd = Watchdog::new(status_map as *const u8, l.watchdog);
    let mut ending = Ending::default();
    let mut exit = supervise(l, sink, pid, &rx, &mut wd, &mut ending)?;
    if exit.is_none() {
        let mut st = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(pid, &mut st, 0) };
        exit = Some(decode_status(st));
    }
    CHILD.store(0, std::sync::atomic::Ordering::SeqCst);
    if let Some(g) = debugger.as_mut() {
        let _ = g.wait();
    }
    // Drain what is still queued.
    while let Ok(m) = rx.try_recv() {
        deliver(m, l.echo, false, sink)?;
    }
    let _ = std::io::stdout().flush();
    Ok(Ended {
        exit: exit.unwrap(),
        wall: start.elapsed(),
        stuck: ending.stuck,
        deadlock: ending.deadlock,
    })
}

/// What the child needs between fork and exec, all prepared before the fork.
struct ChildExec<'a> {
    /// The launcher's pid (the child ends if its parent already changed).
    parent: libc::pid_t,
    /// Put the program in its own process group.
    own_group: bool,
    /// Descriptors to duplicate: (from, to).
    fds: [(RawFd, RawFd); 6],
    cwd: &'a CString,
    rl: libc::rlimit,
    /// Under gdb: the pipe end to wait on before the exec.
    go: Option<RawFd>,
    exe: &'a CString,
    argv_p: &'a [*const libc::c_char],
    env_p: &'a [*const libc::c_char],
}

/// The child's side of the fork in [`run`]: set up the descriptors, process group, working
/// directory, stack limit and personality, then exec the program (or end with 125/127).
///
/// # Safety
/// Only in the child just forked by [`run`], before anything else: it makes only
/// async-signal-safe calls (dup2, chdir, setrlimit, personality, setpgid, prctl, getppid,
/// execve, _exit) on `c`, whose pointers are valid NUL-terminated arrays.
unsafe fn exec_child(c: &ChildExec<'_>) -> ! {
    let ChildExec {
        parent,
        own_group,
        fds,
        cwd,
        rl,
        go,
        exe,
        argv_p,
        env_p,
    } = *c;
    unsafe {
        // Never outlive the launcher.
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        if libc::getppid() != parent {
            libc::_exit(125);
        }
        if own_group {
            libc::setpgid(0, 0);
        }
        // The launcher's forwarding handlers are not the program's (exec resets caught
        // signals; this covers the instant before).
        for sig in FORWARDED {
            libc::signal(sig, libc::SIG_DFL);
        }
        for (from, to) in fds {
            if libc::dup2(from, to) < 0 {
                libc::_exit(127);
            }
        }
        if libc::chdir(cwd.as_ptr()) != 0 {
            let m = b"reprise: cannot enter the recorded working directory\n";
            libc::write(FD_LOG, m.as_ptr().cast(), m.len());
            libc::_exit(125);
        }
        libc::setrlimit(libc::RLIMIT_STACK, &rl);
        if let Some(fd) = go {
            // Let gdb attach (Yama's ptrace_scope 1 allows only ancestors otherwise) and
            // wait here, before the exec, until it has: gdb starts nothing itself, so the
            // program's environment and stack are the recording's.
            libc::prctl(libc::PR_SET_PTRACER, libc::PR_SET_PTRACER_ANY, 0, 0, 0);
            let mut b = 0u8;
            while libc::read(fd, (&mut b as *mut u8).cast(), 1) < 0 {}
        }
        let p = libc::personality(0xffff_ffff);
        libc::personality((p as libc::c_ulong) | libc::ADDR_NO_RANDOMIZE as libc::c_ulong);
        libc::execve(exe.as_ptr(), argv_p.as_ptr(), env_p.as_ptr());
        let m = b"reprise: cannot execute the program\n";
        libc::write(FD_LOG, m.as_ptr().cast(), m.len());
        libc::_exit(127);
    }
}

/// Start gdb on the program `pid`, stopped before its exec; the launcher ignores SIGINT from
/// then on (Ctrl-C is gdb's, which stops the program).
fn start_gdb(pid: i32, args: &[std::ffi::OsString], go: OwnedFd) -> Result<std::process::Child> {
    let mut c = std::process::Command::new("gdb");
    c.arg("-q").arg("-p").arg(pid.to_string());
    for cmd in GDB_SETUP {
        c.arg("-ex").arg(cmd);
    }
    c.args(args);
    let child = match c.spawn() {
        Ok(ch) => ch,
        Err(e) => {
            // SAFETY: killing our own stopped child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            bail!("cannot run gdb ({e}): install it (apt-get install gdb)");
        }
    };
    // SAFETY: ignoring SIGINT in the launcher; gdb and the program have their own.
    unsafe { libc::signal(libc::SIGINT, libc::SIG_IGN) };
    // Once gdb is attached (the program's TracerPid is set), let the program go on to its exec.
    let mut child = child;
    let status = format!("/proc/{pid}/status");
    let t0 = Instant::now();
    loop {
        let traced = std::fs::read_to_string(&status)
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("TracerPid:").map(|v| v.trim() != "0"))
            })
            .unwrap_or(false);
        if traced {
            break;
        }
        if let Ok(Some(st)) = child.try_wait() {
            // SAFETY: killing our own waiting child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            bail!("gdb ended ({st}) before attaching to the replay (is ptrace allowed here? see /proc/sys/kernel/yama/ptrace_scope)");
        }
        if t0.elapsed() > Duration::from_secs(60) {
            // SAFETY: killing our own waiting child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            let _ = child.kill();
            bail!("gdb did not attach to the replay within 60 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    std::fs::File::from(go).write_all(&[1])?;
    Ok(child)
}

fn decode_status(st: i32) -> reprise_trace::Exit {
    if libc::WIFSIGNALED(st) {
        reprise_trace::Exit::Signaled(libc::WTERMSIG(st))
    } else {
        reprise_trace::Exit::Exited(libc::WEXITSTATUS(st))
    }
}

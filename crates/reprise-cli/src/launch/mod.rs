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

mod child;
mod echo;
mod signals;

use crate::watchdog::Watchdog;
use anyhow::{bail, Context, Result};
use child::{exec_child, start_gdb, ChildExec};
use echo::{deliver, Echoed};
use reprise_proto::*;
use signals::stopped_by;
use signals::{forward, install_on_forwarded, stop, CHILD, SAME_GROUP};
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
    /// Config memfd contents, taken (and freed) once the memfd holds them: a long
    /// `--verify=full` recording's checkpoints are gigabytes, which the launcher need not hold
    /// twice while the program runs.
    pub config: std::cell::Cell<Vec<u8>>,
    /// Watchdog: on in replay; the timeout without any progress.
    pub watchdog: Option<Duration>,
    /// Record: send SIGINT, SIGTERM and SIGHUP on to the program.
    pub forward_signals: bool,
    /// Replay of a recording ended by a terminating signal from outside: the signal, and each
    /// thread's recorded final event count, which the replay reaches before it is sent.
    pub end_signal: Option<(i32, Vec<(u32, u64)>)>,
    /// Record: end the program (complete trace) when every thread is blocked for good.
    pub find_deadlocks: bool,
    /// Replay under gdb: the arguments given to gdb after reprise's own (see [`child::GDB_SETUP`]).
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
            config: std::cell::Cell::new(config),
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

/// The signal that ends a deadlocked program (asked through the status header, so the
/// program's own handler for it does not keep it alive).
const DEADLOCK_SIGNAL: i32 = libc::SIGTERM;

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
    /// The runtime started in it (registered a thread).
    pub started: bool,
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

/// Put the calling thread (not the process) under SCHED_BATCH: it keeps its fair share of the
/// CPU, but its wake-ups no longer preempt the running thread (the kernel preempts for
/// SCHED_NORMAL wakees only). The launcher's threads wake each time the program writes to one
/// of its pipes (stdout, the runtime's channel); as SCHED_NORMAL wakees they preempted the
/// writer inside its `write` and ran the hand-over chain (reader thread, this loop) first: xz
/// -T2 recorded, its main thread's 8 KiB stdout writes took about 1 ms each that way while
/// its two workers, fed by that thread, sat waiting for input (166 condition waits against
/// 46 natively). Called after the fork: the program keeps the policy it was started with.
fn batch_thread() {
    let p = libc::sched_param { sched_priority: 0 };
    // SAFETY: plain FFI call on the calling thread (pid 0) with a valid parameter; failure is
    // harmless (the thread stays SCHED_NORMAL).
    unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &p) };
}

/// Bytes a reader thread reads at once at most.
const READ_CHUNK: usize = 1 << 18;

fn reader(fd: OwnedFd, tx: mpsc::Sender<Msg>, wrap: fn(Vec<u8>) -> Msg) {
    std::thread::spawn(move || {
        batch_thread();
        let mut f = std::fs::File::from(fd);
        // Up to the pipe's size at once (a program writing megabytes fills it between two
        // reads), into one buffer reused for every read; what was read is copied out into an
        // allocation of its own size (malloc's reused memory, never zeroed). Handing out the
        // read buffer itself needs a fresh one each time: zeroing 256 KiB for each of the
        // runtime's event pieces of a few KiB was most of the launcher's work in a short
        // recording (21 M instructions of `memset` of 25 M). For a program writing megabytes
        // to stdout the copy measured the same as sending large reads in place (zstd -c of
        // 20 MB: 9,200-9,700 page faults either way), and it keeps one path.
        let mut buf = vec![0u8; READ_CHUNK];
        loop {
            match f.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let out = buf[..n].to_vec();
                    if tx.send(wrap(out)).is_err() {
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
    echoed: &mut Echoed,
) -> Result<Option<reprise_trace::Exit>> {
    let mut open = 3;
    let mut exit: Option<reprise_trace::Exit> = None;
    let mut exited_at: Option<Instant> = None;
    let mut last_tick = Instant::now();
    let mut last_flush = Instant::now();
    while open > 0 {
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok(m) => {
                if deliver(m, l.echo, echoed, sink)? {
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
#[allow(clippy::too_many_lines)]
pub fn run(l: &Launch, sink: &mut dyn Sink) -> Result<Ended> {
    let config = memfd("reprise-config", &l.config.take(), 0)?;
    let status = memfd("reprise-status", &[], STATUS_SIZE)?;
    let (ev_r, ev_w) = pipe()?;
    let (out_r, out_w) = pipe()?;
    let (err_r, err_w) = pipe()?;
    // Raising the pipe sizes is advisory; failure is harmless. The output pipes too, in
    // record and replay alike: a program writing megabytes (a compressor to stdout) then
    // blocks on a full pipe a sixteenth as often, each block a sleep and a wake-up that a
    // replay, whose threads wait for each other's recorded turns, pays again downstream.
    for fd in [&ev_w, &out_w, &err_w] {
        // SAFETY: fcntl on a descriptor we own.
        unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETPIPE_SZ, 1 << 20) };
    }
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
        install_on_forwarded(forward);
    } else if l.gdb.is_none() {
        // (Under gdb, SIGINT is gdb's: the launcher ignores it.)
        install_on_forwarded(stop);
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
    // Raw fork/exec, not `std::process::Command` + `pre_exec` (issue 17), for two things
    // Command cannot do (measured with rustc 1.95):
    // - the environment in the recorded order: Command keeps it in a sorted map (given ZZ, AA,
    //   MM, AA the child saw AA=4, MM=3, ZZ=1), so the program's `environ` would not be the
    //   one it was started with, and sync mode's padded LD_PRELOAD entry would not be last,
    //   which `preload::hide_ld_preload` needs to blank it from /proc/self/environ;
    // - acting between fork and exec: `spawn` returns only once the exec happened (with a
    //   300 ms sleep in `pre_exec` it returned after 301.7 ms), so `--gdb` could not be
    //   started on the pid the program waits in before its exec, and the forwarding handler
    //   could not know the pid (`CHILD`) during the exec.
    // Command would also change what the program inherits: it resets the signal mask (the
    // child resets SIGPIPE, which the Rust launcher ignores, itself: `child::exec_child`).
    // SAFETY: between fork and exec the child runs only `child::exec_child`, which makes only
    // async-signal-safe calls (its Safety section lists them) on data prepared before the fork.
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
    batch_thread();
    let (tx, rx) = mpsc::channel();
    reader(ev_r, tx.clone(), Msg::Events);
    reader(out_r, tx.clone(), Msg::Stdout);
    reader(err_r, tx, Msg::Stderr);
    let mut wd = Watchdog::new(status_map as *const u8, l.watchdog);
    let mut ending = Ending::default();
    let mut echoed = Echoed::default();
    let mut exit = supervise(l, sink, pid, &rx, &mut wd, &mut ending, &mut echoed)?;
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
        deliver(m, l.echo, &mut echoed, sink)?;
    }
    let _ = std::io::stdout().flush();
    if l.echo {
        echoed.end_line();
    }
    if let Some(sig) = stopped_by() {
        return Err(crate::exit::Failure::Stopped(sig).into());
    }
    Ok(Ended {
        exit: exit.unwrap(),
        wall: start.elapsed(),
        stuck: ending.stuck,
        deadlock: ending.deadlock,
        started: wd
            .header()
            .nthreads
            .load(std::sync::atomic::Ordering::Acquire)
            > 0,
    })
}

fn decode_status(st: i32) -> reprise_trace::Exit {
    if libc::WIFSIGNALED(st) {
        reprise_trace::Exit::Signaled(libc::WTERMSIG(st))
    } else {
        reprise_trace::Exit::Exited(libc::WEXITSTATUS(st))
    }
}

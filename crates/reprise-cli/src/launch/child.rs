//! The child's side of [`super::run`]'s fork (descriptors, process group, working directory,
//! stack limit, personality, then the exec) and the debugger of `replay --gdb`.

use super::signals::FORWARDED;
use anyhow::{bail, Result};
use reprise_proto::*;
use std::ffi::CString;
use std::io::Write;
use std::os::fd::{OwnedFd, RawFd};
use std::time::{Duration, Instant};

/// gdb commands run before the user's: the signals the runtime uses pass silently (Syscall
/// User Dispatch's SIGSYS, the hand-over signal 62, timer signals), then gdb lets the
/// program, waiting for it before its exec, reach the exec and stops there: before `main`, with the
/// program's symbols loaded.
pub(super) const GDB_SETUP: &[&str] = &[
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

/// What the child needs between fork and exec, all prepared before the fork.
pub(super) struct ChildExec<'a> {
    /// The launcher's pid (the child ends if its parent already changed).
    pub(super) parent: libc::pid_t,
    /// Put the program in its own process group.
    pub(super) own_group: bool,
    /// Descriptors to duplicate: (from, to).
    pub(super) fds: [(RawFd, RawFd); 6],
    pub(super) cwd: &'a CString,
    pub(super) rl: libc::rlimit,
    /// Under gdb: the pipe end to wait on before the exec.
    pub(super) go: Option<RawFd>,
    pub(super) exe: &'a CString,
    pub(super) argv_p: &'a [*const libc::c_char],
    pub(super) env_p: &'a [*const libc::c_char],
}

/// The child's side of the fork in [`super::run`]: set up the descriptors, process group, working
/// directory, stack limit and personality, then exec the program (or end with 125/127).
///
/// # Safety
/// Only in the child just forked by [`super::run`], before anything else: it makes only
/// async-signal-safe calls (prctl, getppid, setpgid, signal, dup2, chdir, setrlimit, read,
/// personality, execve, write, _exit) on `c`, whose pointers are valid NUL-terminated arrays.
pub(super) unsafe fn exec_child(c: &ChildExec<'_>) -> ! {
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
        // Rust's runtime ignores SIGPIPE in the launcher, and an ignored signal stays ignored
        // across exec: the program (and every command it starts) would get EPIPE where it
        // dies of SIGPIPE natively (`prog | head`; `ls: write error` from a popen'd pipeline).
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
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
pub(super) fn start_gdb(
    pid: i32,
    args: &[std::ffi::OsString],
    go: OwnedFd,
) -> Result<std::process::Child> {
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

//! Recordings the program does not end by itself: SIGINT, SIGTERM or SIGHUP sent to `reprise
//! record` (or its process group) while the program runs, a lock-order deadlock and a futex
//! deadlock the recorder detects (exit 124, the same report in replay), and a recorder killed
//! outright. Each program
//! is built with gcc and with clang; a failing recording's trace is kept under
//! `target/tmp/failed-traces/`.

mod common;
use common::kept::*;
use common::*;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

const RECORDINGS: usize = 20;

/// Start `reprise record` of `bin` (in its own process group, as a shell runs a command), and
/// wait until the program printed its `ready pid=N` line; returns the recorder and N.
fn start_interrupted(w: &Work, bin: &str, trace: &Path) -> (std::process::Child, i32, Vec<u8>) {
    start_interrupted_with(w, bin, trace, Stdio::null())
}

/// [`start_interrupted`] with the program's standard input `stdin`.
fn start_interrupted_with(
    w: &Work,
    bin: &str,
    trace: &Path,
    stdin: Stdio,
) -> (std::process::Child, i32, Vec<u8>) {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    let mut c = w.record_cmd(trace, &[], bin);
    c.stdin(stdin).stdout(Stdio::piped()).stderr(Stdio::piped());
    c.process_group(0);
    let mut child = c.spawn().unwrap();
    let mut out = Vec::new();
    let mut so = child.stdout.take().unwrap();
    let start = Instant::now();
    while !out.ends_with(b"\n") || !out.starts_with(b"ready") {
        let mut b = [0u8; 64];
        let n = so.read(&mut b).unwrap();
        assert!(
            n > 0 && start.elapsed() < Duration::from_secs(60),
            "no `ready` line"
        );
        out.extend_from_slice(&b[..n]);
    }
    let line = String::from_utf8_lossy(&out).into_owned();
    let pid: i32 = line.trim().rsplit('=').next().unwrap().parse().unwrap();
    child.stdout = Some(so);
    (child, pid, out)
}

/// Wait for `child` (at most 60 s); its status, stdout and stderr.
fn finish_limited(mut child: std::process::Child, mut out: Vec<u8>) -> (i32, Vec<u8>, String) {
    use std::io::Read;
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(60) {
            child.kill().ok();
            panic!("the recorder did not end after the signal");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    child.stdout.take().unwrap().read_to_end(&mut out).ok();
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).ok();
    (shell_status_of(status), out, err)
}

/// A program that never ends by itself (a deadlock, a worker looping forever) is recorded until
/// SIGINT, SIGTERM or SIGHUP reaches `reprise record` (sent to it, or to its process group as a
/// terminal's Ctrl-C is): the program gets the signal as if sent to it directly, the trace is
/// complete, the recorder exits with the program's status (128 + signal) and leaves no program
/// behind; the replay verifies up to the interruption and ends with the same status.
fn interrupted(compiler: &str) {
    let p = program("interrupted");
    let w = Work::new();
    let bin = w.build(&p, compiler);
    let sigs = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];
    for i in 0..RECORDINGS {
        let sig = sigs[i % 3];
        let to_group = i % 2 == 1;
        let trace = w.path(&format!("interrupted-{i}.trace"));
        let (child, pid, out) = start_interrupted(&w, &bin, &trace);
        let target = if to_group {
            -(child.id() as i32)
        } else {
            child.id() as i32
        };
        // SAFETY: signalling the recorder we started (or its own process group).
        unsafe { libc::kill(target, sig) };
        let (status, out, err) = finish_limited(child, out);
        assert_eq!(
            status,
            128 + sig,
            "recording {i} (signal {sig}, group {to_group}):\n{err}"
        );
        assert!(err.contains("reprise: trace saved to"), "{err}");
        assert!(!err.contains("partial"), "the trace is partial:\n{err}");
        assert!(!alive(pid), "the program outlived its recorder");
        assert!(String::from_utf8_lossy(&out).starts_with("ready pid="));
        let prog_err: Vec<u8> = err
            .lines()
            .filter(|l| !l.starts_with("reprise:"))
            .flat_map(|l| format!("{l}\n").into_bytes())
            .collect();
        let r = Recorded {
            trace,
            stdout: out,
            stderr: prog_err,
            status,
        };
        replay_kept(&w, &r, &format!("interrupted-{compiler}-{i}"));
    }
}

both_compilers!(interrupted);

/// A lock-order deadlock: the recorder notices that every thread is blocked for good, says
/// who waits for what (and who holds the lock), ends the program with a complete trace and
/// exits 124; the replay verifies up to the deadlock, reports it and exits 124 too.
fn deadlock(compiler: &str) {
    let p = program("deadlock");
    let w = Work::new();
    let bin = w.build(&p, compiler);
    let mut counters = std::collections::BTreeSet::new();
    // Up to 20 more recordings while the race has shown one outcome only (on a loaded
    // machine the two threads may seldom run at once).
    let mut i = 0;
    while i < RECORDINGS || (counters.len() < 2 && i < RECORDINGS + 20) {
        i += 1;
        let (r, ours) = record_stdin(
            &w,
            &bin,
            &p.args,
            &format!("deadlock-{i}.trace"),
            Input::Null,
        );
        let out = String::from_utf8_lossy(&r.stdout).into_owned();
        assert_eq!(r.status, 124, "recording {i}:\n{ours}");
        assert!(out.starts_with("both hold a lock; counter "), "{out}");
        assert!(!out.contains("unreachable"), "{out}");
        assert!(!ours.contains("partial"), "the trace is partial:\n{ours}");
        for l in [
            "reprise: deadlock: every thread is blocked, waiting for another",
            "thread 0 at event",
            "waits to join a thread",
            "waits to lock `b` (0x",
            "waits to lock `a` (0x",
            ", held by thread 1",
            ", held by thread 2",
            // Where each thread called the blocking function, by source line.
            "(main at ",
            "(ab at ",
            "deadlock.c:37)",
            "(ba at ",
            "deadlock.c:49)",
        ] {
            assert!(ours.contains(l), "`{l}` missing from:\n{ours}");
        }
        counters.insert(out);
        replay_kept(&w, &r, &format!("deadlock-{compiler}-{i}"));
        let mut c = w.cmd();
        c.arg("replay").arg(&r.trace);
        let o = run_limited(c, Duration::from_secs(120));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(
                "reprise: the replay reached the recorded deadlock: every thread is blocked"
            ),
            "{err}"
        );
        assert_eq!(shell_status(&o), 124, "{err}");
    }
    assert!(counters.len() >= 2, "the race never showed: {counters:?}");
}

both_compilers!(deadlock);

/// A deadlock through a futex wait of the program's own (`syscall(SYS_futex)`, as libstdc++'s
/// atomic waits make): the runtime marks the wait blocked, so the recorder reports the deadlock
/// (exit 124) and the replay reaches it, instead of both waiting forever. In full mode (gcc,
/// clang) and in sync mode (a plain gcc build), 3 recordings each.
fn futex_deadlock(compiler: &str) {
    let p = program("futex_deadlock");
    let w = Work::new();
    let mut bins = vec![w.build(&p, compiler)];
    if compiler == "gcc" {
        bins.push(w.build_plain(&p));
    }
    for bin in &bins {
        for i in 0..3 {
            let trace = format!("{bin}-{i}.trace");
            let (r, ours) = record_stdin(&w, bin, &[], &trace, Input::Null);
            assert_eq!(r.status, 124, "{bin} recording {i}:\n{ours}");
            assert_eq!(r.stdout, b"waiting\n", "{ours}");
            for l in [
                "reprise: deadlock: every thread is blocked, waiting for another",
                "waits to join a thread",
                "waits on futex `word` (0x",
                "(waiter at ",
            ] {
                assert!(ours.contains(l), "`{l}` missing from:\n{ours}");
            }
            let mut c = w.cmd();
            c.arg("replay").arg(&r.trace);
            let o = run_limited(c, Duration::from_secs(120));
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(
                err.contains("reprise: the replay reached the recorded deadlock")
                    && err.contains("waits on futex `word`"),
                "{err}"
            );
            assert_eq!(shell_status(&o), 124, "{err}");
        }
    }
}

both_compilers!(futex_deadlock);

/// Whether process `pid` exists and is not a zombie (a dead program that is not our child
/// waits for an init that may never reap it).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => {
            s.rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().next())
                != Some("Z")
        }
        Err(_) => false,
    }
}

/// A recorder killed outright (SIGKILL: nothing can be forwarded) takes its program with it.
#[test]
fn killed_recorder_leaves_no_program() {
    let p = program("interrupted");
    let w = Work::new();
    let bin = w.build(&p, "gcc");
    let (mut child, pid, _) = start_interrupted(&w, &bin, &w.path("k.trace"));
    child.kill().unwrap();
    child.wait().unwrap();
    let start = Instant::now();
    while alive(pid) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the program outlived its recorder"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn shell_status_of(s: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0))
}

/// The children of process `pid` (any of its threads').
fn children_of(pid: u32) -> Vec<i32> {
    let mut v = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let f = t.unwrap().path().join("children");
        let s = std::fs::read_to_string(f).unwrap_or_default();
        v.extend(s.split_whitespace().map(|p| p.parse::<i32>().unwrap()));
    }
    v
}

/// SIGINT, SIGTERM or SIGHUP sent to `reprise replay` while the program runs stops the replay:
/// the program is killed (it leaves no process) and reprise says so and exits with 128 + the
/// signal, never a verdict. Before, it died of the signal silently, and the program with it
/// only by PR_SET_PDEATHSIG.
#[test]
fn a_replay_stopped_by_a_signal_says_so() {
    use std::io::Read;
    let p = program("long_run");
    let w = Work::new();
    let bin = w.build(&p, "gcc");
    let args = ["1000000".to_string()];
    let r = record(&w, &bin, &args, "long.trace", &[]);
    assert_eq!(r.stdout, b"started\ntotal 1999998\n");
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        let mut c = w.cmd();
        c.arg("replay")
            .arg(&r.trace)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        let mut so = child.stdout.take().unwrap();
        let mut first = [0u8; 8];
        so.read_exact(&mut first).unwrap();
        assert_eq!(&first, b"started\n");
        let programs = children_of(child.id());
        assert_eq!(programs.len(), 1, "{programs:?}");
        // SAFETY: signalling the replayer we started.
        unsafe { libc::kill(child.id() as i32, sig) };
        child.stdout = Some(so);
        let (status, _, err) = finish_limited(child, Vec::new());
        assert_eq!(status, 128 + sig, "{err}");
        let name = match sig {
            libc::SIGINT => "SIGINT",
            libc::SIGTERM => "SIGTERM",
            _ => "SIGHUP",
        };
        assert!(
            err.contains(&format!(
                "reprise: replay stopped by {name} before its end: no verdict"
            )),
            "{err}"
        );
        assert!(
            !err.contains("verified") && !err.contains("diverged"),
            "{err}"
        );
        assert!(!alive(programs[0]), "the program outlived its replay");
    }
}

/// Waits for a line on stdin with stdio, as a UCI chess engine waits for its next command.
const WAIT_LINE: &str = r#"#include <stdio.h>
#include <unistd.h>
int main(void) {
    char b[64];
    printf("ready pid=%d\n", getpid());
    fflush(stdout);
    char *r = fgets(b, sizeof b, stdin);
    printf("fgets returned %s\n", r ? "a line" : "NULL");
    return 0;
}
"#;

/// A program waiting for input in stdio (`fgets` on a pipe nobody writes) ends at SIGINT, as
/// it does natively. The runtime makes stdio's read inside its Syscall User Dispatch handler;
/// the read now marks the thread blocked (`capture.rs`), where the signal had waited for the
/// read to return: for a line or the end of the input (Ctrl-C did nothing to a recorded chess
/// engine until a command was typed). Full and sync mode; the replay ends the same way.
#[test]
fn sigint_ends_a_program_waiting_in_a_stdio_read() {
    let w = Work::new();
    for bin in w.build_source("wait_line", WAIT_LINE, "-O1") {
        let trace = w.path(&format!("{bin}.trace"));
        let (mut child, _, out) = start_interrupted_with(&w, &bin, &trace, Stdio::piped());
        // Held open until the recorder ended: the read never returns by itself.
        let input = child.stdin.take();
        // SAFETY: signalling the recorder we started.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let (status, out, err) = finish_limited(child, out);
        drop(input);
        assert_eq!(status, 128 + libc::SIGINT, "{bin}:\n{err}");
        assert!(err.contains("reprise: trace saved to"), "{err}");
        let r = Recorded {
            trace,
            stdout: out,
            stderr: Vec::new(),
            status,
        };
        replay_kept(&w, &r, &bin);
    }
}

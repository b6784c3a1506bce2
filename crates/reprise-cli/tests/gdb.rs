//! `reprise replay --gdb`: a crash caught by `record --until-fail` replays under gdb in batch
//! mode to the crash, with a backtrace naming the crashing function; a breakpoint stops the
//! replay; the replay still verifies at its end with the recorded status.

mod common;
use common::*;
use std::process::Output;
use std::time::Duration;

fn gdb_replay(w: &Work, gdb_args: &[&str]) -> (Output, String) {
    let mut c = w.cmd();
    c.args(["replay", "--gdb", "fail.trace", "--"])
        .args(gdb_args);
    c.stdin(std::process::Stdio::null());
    let o = run_limited(c, Duration::from_secs(300));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o, text)
}

// Over 80 lines: one scenario (a crash caught, then replayed under gdb) checked step by step.
#[test]
fn crash_replays_under_gdb_to_a_backtrace() {
    assert!(
        std::process::Command::new("gdb")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success()),
        "gdb is not installed (scripts/test installs it)"
    );
    let p = program("crash_sometimes");
    let w = Work::new();
    let bin = w.build(&p, "gcc");
    let mut c = w.cmd();
    c.args([
        "record",
        "--chaos",
        "--until-fail",
        "200",
        "-o",
        "fail.trace",
        "--",
    ])
    .arg(format!("./{bin}"))
    .args(&p.args);
    let o = run_limited(c, Duration::from_secs(600));
    let status = shell_status(&o);
    assert!(
        status == 134 || status == 139,
        "no crash caught (status {status}):\n{}",
        String::from_utf8_lossy(&o.stderr)
    );

    let (o, text) = gdb_replay(&w, &["-batch", "-ex", "continue", "-ex", "bt"]);
    // Stopped before main first, at the program's exec.
    assert!(
        text.contains("reprise: the replay is stopped before main"),
        "{text}"
    );
    let sig = if status == 134 { "SIGABRT" } else { "SIGSEGV" };
    assert!(text.contains(&format!("received signal {sig}")), "{text}");
    // The backtrace names the crashing function and its source file.
    assert!(
        text.lines().any(|l| l.starts_with('#')
            && l.contains(" reader (")
            && l.contains("crash_sometimes.c:")),
        "no backtrace frame in reader:\n{text}"
    );
    assert!(text.contains("reprise: replay verified"), "{text}");
    assert_eq!(shell_status(&o), status, "{text}");

    // A breakpoint stops the replay in the program, stepping goes on line by line (past a
    // barrier the other threads reach on their turns), and the replay still verifies after
    // gdb detaches.
    let (o, text) = gdb_replay(
        &w,
        &[
            "-batch",
            "-ex",
            "break reader",
            "-ex",
            "continue",
            "-ex",
            "next",
            "-ex",
            "next",
            "-ex",
            "next",
            "-ex",
            "bt 1",
        ],
    );
    assert!(
        text.lines()
            .any(|l| l.contains("hit Breakpoint") && l.contains(", reader (")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.contains("if (shared == NULL) break;")),
        "stepping did not reach the reader's check:\n{text}"
    );
    assert!(text.contains("reprise: replay verified"), "{text}");
    assert_eq!(shell_status(&o), status, "{text}");
}

/// Sync mode: gdb finds the runtime the dynamic loader preloaded (its name in the loader's list
/// is its path, not the padded `LD_PRELOAD` entry), so a backtrace from a thread goes through the
/// runtime's thread start to glibc's, and the replay verifies after gdb detaches.
#[test]
fn a_sync_mode_replay_under_gdb_knows_the_runtime() {
    // Race-free (a racy program may take another path in a sync-mode replay).
    let p = program("self_signal");
    let w = Work::new();
    let bin = w.build_plain(&p);
    let mut c = w.cmd();
    c.args(["record", "-o", "fail.trace", "--"])
        .arg(format!("./{bin}"))
        .args(&p.args);
    let o = run_limited(c, Duration::from_secs(300));
    let status = shell_status(&o);
    let (o, text) = gdb_replay(
        &w,
        &[
            "-batch",
            "-ex",
            "break worker",
            "-ex",
            "continue",
            "-ex",
            "bt",
        ],
    );
    assert!(!text.contains("not in executable format"), "{text}");
    assert!(
        text.lines().any(|l| l.starts_with('#')
            && l.contains("reprise_trampoline")
            && l.contains("libreprise_rt.so")),
        "no frame in the runtime:\n{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with('#') && l.contains("start_thread")),
        "the backtrace stops before glibc's thread start:\n{text}"
    );
    assert!(text.contains("reprise: replay verified"), "{text}");
    assert_eq!(shell_status(&o), status, "{text}");
}

//! Profiling a recording works: `valgrind --tool=callgrind --trace-children=yes reprise record`
//! is how a floor/record instruction profile is taken (ARCHITECTURE.md, Benchmarks). valgrind
//! extends the main thread's stack only for a fault near the stack pointer: the runtime's
//! start-up, zeroing 64 KiB below it from the bottom up, faulted there, and every recording made
//! under valgrind ended at "event 0" with one thread while the program ran on unrecorded.

mod common;
use common::*;
use std::process::Command;
use std::time::Duration;

#[test]
fn a_recording_under_valgrind_counts_the_programs_threads_and_events() {
    let p = program("counter_race");
    let w = Work::new();
    let bin = w.build(&p, "gcc");
    let t = w.path("vg.trace");
    let mut c = Command::new("valgrind");
    c.current_dir(w.dir.path())
        .args(["-q", "--tool=none", "--trace-children=yes"])
        .arg(reprise())
        // valgrind does not emulate Syscall User Dispatch.
        .args(["record", "--no-sud", "-o"])
        .arg(&t)
        .arg("--")
        .arg(format!("./{bin}"))
        .args(&p.args);
    let o = run_limited(c, Duration::from_secs(300));
    assert!(
        o.status.success(),
        "recording under valgrind failed (is valgrind installed? scripts/test installs it):\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let info = w.cmd().arg("info").arg(&t).output().unwrap();
    let s = String::from_utf8_lossy(&info.stdout);
    let field = |name: &str| -> u64 {
        let line = s
            .lines()
            .find(|l| l.starts_with("threads:"))
            .unwrap_or_else(|| panic!("no threads line in reprise info:\n{s}"));
        let mut words = line.split_whitespace();
        words.find(|w| *w == name);
        words.next().and_then(|v| v.parse().ok()).unwrap()
    };
    // counter_race: main and three workers, 30 000 increments each.
    assert_eq!(field("threads:"), 4, "reprise info:\n{s}");
    assert!(field("events:") > 90_000, "reprise info:\n{s}");
    assert!(
        s.lines().any(|l| l.starts_with("end: exit in thread 0")),
        "the recording did not end at the program's exit:\n{s}"
    );
}

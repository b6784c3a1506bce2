//! Bad input to `reprise record` gets one clear `reprise:` line and a shell's status, saves no
//! trace and never hangs: a program that does not exist or cannot be executed, a trace
//! directory where no file can be created.

mod common;
use common::*;
use std::time::Duration;

/// Run `reprise record` with `args` (trace directory `dir`): its status and stderr.
fn record(w: &Work, dir: &str, args: &[&str]) -> (i32, String) {
    let mut c = w.cmd();
    c.env("REPRISE_TRACE_DIR", dir).arg("record").args(args);
    let o = run_limited(c, Duration::from_secs(60));
    (
        shell_status(&o),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn no_trace_saved(w: &Work, err: &str) {
    assert!(!err.contains("trace saved"), "{err}");
    let traces = std::fs::read_dir(w.path("traces"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(traces, 0, "a trace was left behind:\n{err}");
}

#[test]
fn missing_program_exits_127_and_saves_nothing() {
    let w = Work::new();
    let traces = w.path("traces");
    let (st, err) = record(&w, traces.to_str().unwrap(), &["--", "./no-such-program"]);
    assert_eq!(st, 127, "{err}");
    assert!(
        err.contains("reprise: ./no-such-program: no such file"),
        "{err}"
    );
    no_trace_saved(&w, &err);
    let (st, err) = record(
        &w,
        traces.to_str().unwrap(),
        &["--", "no-such-command-anywhere"],
    );
    assert_eq!(st, 127, "{err}");
    assert!(err.contains("command not found"), "{err}");
    no_trace_saved(&w, &err);
}

#[test]
fn non_executable_file_exits_126_and_saves_nothing() {
    let w = Work::new();
    let traces = w.path("traces");
    std::fs::write(w.path("data.txt"), "not a program\n").unwrap();
    let (st, err) = record(&w, traces.to_str().unwrap(), &["--", "./data.txt"]);
    assert_eq!(st, 126, "{err}");
    assert!(
        err.contains("reprise: ./data.txt: not an executable file"),
        "{err}"
    );
    no_trace_saved(&w, &err);
}

#[test]
fn unwritable_trace_directory_is_an_error_not_a_hang() {
    let w = Work::new();
    // /proc exists and cannot hold a file: creating a trace there fails at once.
    let (st, err) = record(&w, "/proc", &["--", "/bin/true"]);
    assert_ne!(st, 0, "{err}");
    assert!(
        err.contains("reprise: cannot create a trace in /proc"),
        "{err}"
    );
}

//! Bad input to `reprise record` gets one clear `reprise:` line and a shell's status, saves no
//! trace and never hangs: a program that does not exist or cannot be executed, a trace
//! directory where no file can be created.

mod common;
use common::*;
use std::process::Command;
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

#[test]
fn program_the_runtime_cannot_enter_saves_no_trace() {
    // A statically linked program built with plain gcc: sync mode's LD_PRELOAD cannot reach
    // it, so it runs unrecorded: nothing to replay, so no trace (and no "latest").
    let w = Work::new();
    std::fs::write(
        w.path("hello.c"),
        "#include <stdio.h>\nint main(void){puts(\"hi\");return 0;}\n",
    )
    .unwrap();
    let o = Command::new("gcc")
        .current_dir(w.dir.path())
        .args(["-O2", "-static", "-o", "hello", "hello.c"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let traces = w.path("traces");
    let (st, err) = record(&w, traces.to_str().unwrap(), &["--", "./hello"]);
    assert_eq!(st, 2, "{err}");
    assert!(
        err.lines().any(|l| l
            == "reprise: the reprise runtime did not start in ./hello (a statically linked program cannot be recorded in sync mode), so no trace was kept"),
        "{err}"
    );
    no_trace_saved(&w, &err);
    let mut c = w.cmd();
    c.env("REPRISE_TRACE_DIR", &traces).arg("replay");
    let o = run_limited(c, Duration::from_secs(60));
    assert_ne!(shell_status(&o), 0);
}

#[test]
fn a_virtual_memory_limit_refusing_the_shadow_is_explained() {
    // `ownership` reserves 8 TiB of address space for its shadow (committed on touch): a
    // limit on virtual memory (`ulimit -v`, 64 GiB here) refuses it. The runtime says so and
    // what to do, the program runs unrecorded, no trace is kept; `--strategy leap` records.
    let p = program("counter_race");
    let w = Work::new();
    let bin = w.build(&p, "gcc");
    let limited = |extra: &[&str]| {
        let mut c = Command::new("sh");
        c.current_dir(w.dir.path())
            .env("REPRISE_TRACE_DIR", w.path("traces"))
            .args(["-c", "ulimit -v 67108864 && exec \"$0\" \"$@\""])
            .arg(reprise())
            .arg("record")
            .args(extra)
            .arg("--")
            .arg(format!("./{bin}"))
            .args(&p.args);
        let o = run_limited(c, Duration::from_secs(60));
        (
            shell_status(&o),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (st, err) = limited(&[]);
    assert_eq!(st, 2, "{err}");
    assert!(err.contains("cannot reserve the ownership shadow"), "{err}");
    assert!(err.contains("`ulimit -v`"), "{err}");
    assert!(err.contains("did not start recording"), "{err}");
    assert!(!err.contains("not built with"), "{err}");
    no_trace_saved(&w, &err);
    let (st, err) = limited(&["--strategy", "leap", "-o", "leap.trace"]);
    assert_eq!(st, 0, "{err}");
    let mut c = w.cmd();
    c.args(["replay", "leap.trace"]);
    let o = run_limited(c, Duration::from_secs(60));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(shell_status(&o), 0, "{err}");
    assert!(err.contains("replay verified"), "{err}");
}

/// Record counter_race as `./counter_race-gcc` in the work directory.
fn recorded_here() -> (Work, Recorded) {
    let p = program("counter_race");
    let w = Work::new();
    let bin = w.build(&p, "gcc");
    let r = common::record(&w, &bin, &p.args, "orig.trace", &[]);
    (w, r)
}

#[test]
fn replay_from_another_directory_finds_the_recorded_program() {
    let (w, r) = recorded_here();
    let elsewhere = w.path("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let mut c = w.cmd();
    c.current_dir(&elsewhere).arg("replay").arg(&r.trace);
    let o = run_limited(c, Duration::from_secs(120));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("reprise: replay verified"), "{err}");
    assert_eq!(o.stdout, r.stdout);
    assert_eq!(shell_status(&o), r.status, "{err}");
}

#[test]
fn a_copy_in_the_current_directory_does_not_mask_a_changed_program() {
    let (w, r) = recorded_here();
    let elsewhere = w.path("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let bin = w.path("counter_race-gcc");
    std::fs::copy(&bin, elsewhere.join("counter_race-gcc")).unwrap();
    let mut b = std::fs::read(&bin).unwrap();
    b.push(0);
    std::fs::write(&bin, b).unwrap();
    let mut c = w.cmd();
    c.current_dir(&elsewhere).arg("replay").arg(&r.trace);
    let o = run_limited(c, Duration::from_secs(120));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(shell_status(&o), 125, "{err}");
    assert!(
        err.contains("counter_race-gcc changed since the recording"),
        "{err}"
    );
    assert!(!err.contains("verified"), "{err}");
}

#[test]
fn another_runtime_version_is_refused() {
    use reprise_trace::{TraceReader, TraceWriter};
    let (w, r) = recorded_here();
    let (mut header, chunks, footer) = TraceReader::open(&r.trace).unwrap().read_all().unwrap();
    header.runtime_version = "0.0.0-other".into();
    let dst = w.path("other.trace");
    let mut t = TraceWriter::new(std::fs::File::create(&dst).unwrap(), &header).unwrap();
    for c in &chunks {
        t.write_chunk(c.kind, &c.data).unwrap();
    }
    t.finish(&footer).unwrap();
    let err = replay_rejected(&w, &dst);
    assert!(
        err.contains("recorded with reprise runtime 0.0.0-other"),
        "{err}"
    );
}

#[test]
fn info_into_a_pipe_closed_early_ends_quietly() {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    // `_w` keeps the work directory (and the trace) alive. The pipe's reading end is closed
    // before `reprise info` starts, so its first write fails whatever the timing and whatever
    // the output's size (a reader that exits early, as `head` does, races the writer).
    let (_w, r) = recorded_here();
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut c = Command::new(reprise());
    c.arg("info")
        .arg("--records")
        .arg(&r.trace)
        .stdin(std::process::Stdio::null())
        .stdout(writer)
        .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    // Dropping the Command closes this process's copy of the writing end.
    drop(c);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            child.kill().ok();
            panic!("reprise info into a closed pipe did not end within 60 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(!err.contains("panicked"), "{err}");
    // Ended by SIGPIPE, as a Unix filter is, with nothing else said.
    assert_eq!(status.signal(), Some(libc::SIGPIPE), "{status:?}: {err}");
    assert_eq!(err, "");
}

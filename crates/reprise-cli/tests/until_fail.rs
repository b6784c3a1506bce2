//! Keeping the run that matters: `record --until-fail N` (with and without `--chaos`),
//! `--until-status` and `--until-output`; the kept trace replays verified. `--chaos`
//! recordings replay verified.

mod common;
use common::kept::*;
use common::*;
use std::time::Duration;

/// `record --until-fail 200 -o fail.trace [extra]` of crash_sometimes (gcc) in `w`: asserts a
/// crash was caught and that its trace replays verified to the same status; returns the
/// recorder's stderr.
fn catch_crash(w: &Work, extra: &[&str]) -> String {
    let p = program("crash_sometimes");
    let bin = w.build(&p, "gcc");
    let mut c = w.cmd();
    c.arg("record")
        .args(extra)
        .args(["--until-fail", "200", "-o", "fail.trace", "--"])
        .arg(format!("./{bin}"))
        .args(&p.args);
    let o = run_limited(c, Duration::from_secs(600));
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    let status = shell_status(&o);
    assert!(
        status == 134 || status == 139,
        "no crash caught (status {status}):\n{err}"
    );
    assert!(
        err.contains(&format!(
            "failed (status {status}): trace saved to fail.trace"
        )),
        "{err}"
    );
    let mut c = w.cmd();
    c.arg("replay").arg("fail.trace");
    let rep = run_limited(c, Duration::from_secs(120));
    let rerr = String::from_utf8_lossy(&rep.stderr);
    assert!(rerr.contains("reprise: replay verified"), "{rerr}");
    assert_eq!(shell_status(&rep), status, "{rerr}");
    err
}

/// `--until-fail N` keeps the first failing run's trace (here a crash that shows in some
/// recordings only), deletes the passing ones, exits with the failure's status, and the kept
/// trace replays verified to the same crash; a program that never fails leaves nothing.
#[test]
fn until_fail_keeps_the_first_failing_run() {
    let w = Work::new();
    catch_crash(&w, &[]);
    let left: Vec<_> = std::fs::read_dir(w.dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "trace"))
        .collect();
    assert_eq!(left.len(), 1, "passing runs' traces were kept: {left:?}");

    let q = program("addresses");
    let bin = w.build(&q, "gcc");
    let mut c = w.cmd();
    c.args(["record", "--until-fail", "3", "--"])
        .arg(format!("./{bin}"));
    let o = run_limited(c, Duration::from_secs(120));
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(shell_status(&o), 0, "{err}");
    assert!(
        err.contains("reprise: no run failed in 3 recordings"),
        "{err}"
    );
    let kept = std::fs::read_dir(w.path("traces"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.path().extension().is_some_and(|x| x == "trace"))
                .count()
        })
        .unwrap_or(0);
    assert_eq!(kept, 0, "a passing run's trace was kept");
}

/// `--chaos` perturbs the recorded run's schedule, never its replay: racy programs recorded
/// with it replay verified (with the same racy output), and `--until-fail --chaos` catches
/// the rare crash.
#[test]
fn chaos_recordings_replay_verified() {
    for name in ["counter_race", "check_then_act", "prodcons"] {
        let p = program(name);
        let w = Work::new();
        let bin = w.build(&p, "gcc");
        for i in 0..5 {
            let r = record(
                &w,
                &bin,
                &p.args,
                &format!("{name}-chaos-{i}.trace"),
                &["--chaos"],
            );
            replay_kept(&w, &r, &format!("{name}-chaos-{i}"));
        }
    }
    catch_crash(&Work::new(), &["--chaos"]);
}

/// `--until-status S` keeps the first run that exits with S (here crash_sometimes' clean exit,
/// 0), `--until-output REGEX` the first whose output matches (counter_race's lost update: a
/// final count other than 90000); each kept trace replays verified with the matching output.
#[test]
fn until_status_and_until_output_pick_the_run() {
    for (name, cond, want) in [
        ("crash_sometimes", ["--until-status", "0"], None),
        (
            "counter_race",
            ["--until-output", "final=([0-8][0-9]{4}|[0-9]{1,4})\\b"],
            Some("final="),
        ),
    ] {
        let p = program(name);
        let w = Work::new();
        let bin = w.build(&p, "gcc");
        let mut c = w.cmd();
        c.args(["record", "--until-fail", "100", "-o", "kept.trace"])
            .args(cond)
            .arg("--")
            .arg(format!("./{bin}"))
            .args(&p.args);
        let o = run_limited(c, Duration::from_secs(600));
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(
            err.contains("met the condition (status ") && err.contains("trace saved to kept.trace"),
            "{name}: no run kept:\n{err}"
        );
        // The kept run's own output, from its trace (the runs before it printed theirs too).
        let (_, chunks, _) = reprise_trace::TraceReader::open(&w.path("kept.trace"))
            .unwrap()
            .read_all()
            .unwrap();
        let of = |k| -> Vec<u8> {
            chunks
                .iter()
                .filter(|c| c.kind == k)
                .flat_map(|c| c.data.clone())
                .collect()
        };
        let (stdout, stderr) = (
            of(reprise_trace::ChunkKind::Stdout),
            of(reprise_trace::ChunkKind::Stderr),
        );
        let out = String::from_utf8_lossy(&stdout).into_owned();
        if let Some(w) = want {
            assert!(out.contains(w) && !out.contains("final=90000"), "{out}");
        } else {
            assert_eq!(shell_status(&o), 0, "{err}");
        }
        let r = Recorded {
            trace: w.path("kept.trace"),
            stdout,
            stderr,
            status: shell_status(&o),
        };
        replay_kept(&w, &r, &format!("{name}-until-condition"));
    }
}

//! `reprise view`: the timeline JSON of real recordings parses and follows the Chrome
//! trace-event format's rules, with one track per thread of the recording.

mod common;
use common::*;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

/// Run `reprise view` on `trace`; the parsed document.
fn view(w: &Work, trace: &Path) -> Value {
    let out = w.path("timeline.json");
    let mut c = w.cmd();
    // From another directory than the recording's: the program is found by its recorded path.
    c.current_dir("/");
    c.arg("view").arg(trace).arg("-o").arg(&out);
    let o = run_limited(c, Duration::from_secs(60));
    assert!(
        o.status.success(),
        "view failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = std::fs::read(&out).unwrap();
    serde_json::from_slice(&text).expect("the timeline is not JSON")
}

/// The trace-event rules: every event has ph, pid, tid; ts where the phase needs one; X has a
/// non-negative dur; B/E balance per track; each flow id has one start and one finish, the
/// finish not before the start on the time axis. Returns (thread names of pid 1, events by ph).
fn check_rules(doc: &Value) -> (BTreeMap<u64, String>, BTreeMap<String, usize>) {
    let evs = doc["traceEvents"].as_array().expect("no traceEvents array");
    assert!(!evs.is_empty());
    let mut names = BTreeMap::new();
    let mut phases: BTreeMap<String, usize> = BTreeMap::new();
    let mut depth: BTreeMap<(u64, u64), i64> = BTreeMap::new();
    let mut flows: BTreeMap<String, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for e in evs {
        let ph = e["ph"]
            .as_str()
            .unwrap_or_else(|| panic!("event without ph: {e}"));
        *phases.entry(ph.to_string()).or_default() += 1;
        let pid = e["pid"].as_u64().unwrap_or_else(|| panic!("no pid: {e}"));
        let tid = e["tid"].as_u64().unwrap_or_else(|| panic!("no tid: {e}"));
        assert!(e["name"].is_string(), "no name: {e}");
        if ph != "M" {
            let ts = e["ts"].as_f64().unwrap_or_else(|| panic!("no ts: {e}"));
            assert!(ts >= 0.0, "{e}");
        }
        match ph {
            "M" => {
                assert!(e["args"].is_object(), "metadata without args: {e}");
                if e["name"] == "thread_name" && pid == 1 {
                    names.insert(tid, e["args"]["name"].as_str().unwrap().to_string());
                }
            }
            "X" => {
                let d = e["dur"]
                    .as_f64()
                    .unwrap_or_else(|| panic!("X without dur: {e}"));
                assert!(d >= 0.0, "{e}");
            }
            "B" => *depth.entry((pid, tid)).or_default() += 1,
            "E" => {
                let d = depth.entry((pid, tid)).or_default();
                *d -= 1;
                assert!(*d >= 0, "E without B on {pid}/{tid}");
            }
            "i" | "I" => {
                let s = e["s"].as_str().unwrap_or("t");
                assert!(["g", "p", "t"].contains(&s), "{e}");
            }
            "s" | "f" => {
                let id = e["id"].to_string();
                assert!(id != "null", "flow without id: {e}");
                let ts = e["ts"].as_f64().unwrap();
                let f = flows.entry(id).or_default();
                if ph == "s" {
                    f.0.push(ts)
                } else {
                    f.1.push(ts)
                }
            }
            other => panic!("unexpected phase {other}: {e}"),
        }
    }
    assert!(depth.values().all(|&d| d == 0), "unbalanced B/E: {depth:?}");
    for (id, (s, f)) in &flows {
        assert_eq!((s.len(), f.len()), (1, 1), "flow {id} does not pair up");
    }
    *phases.entry("flows".into()).or_default() = flows.len();
    (names, phases)
}

/// Number of threads `reprise info` reports for a trace.
fn info_threads(w: &Work, trace: &Path) -> u64 {
    let mut c = w.cmd();
    c.arg("info").arg(trace);
    let o = run_limited(c, Duration::from_secs(60));
    let s = String::from_utf8_lossy(&o.stdout);
    let line = s.lines().find(|l| l.starts_with("threads: ")).unwrap();
    line["threads: ".len()..]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn ownership_timeline_has_a_track_per_thread_and_edge_arrows() {
    let p = program("counter_race");
    let w = Work::new();
    let bin = w.build(&p, "gcc");
    let r = record(&w, &bin, &p.args, "race.trace", &[]);
    let doc = view(&w, &r.trace);
    let (names, phases) = check_rules(&doc);
    let n = info_threads(&w, &r.trace);
    assert!(n >= 3, "counter_race has a main thread and workers");
    // Track ids are thread ids + 1, each named after its thread.
    let want: BTreeSet<u64> = (1..=n).collect();
    assert_eq!(
        names.keys().copied().collect::<BTreeSet<_>>(),
        want,
        "{names:?}"
    );
    let meta = &doc["metadata"];
    for (tid, name) in &names {
        assert!(name.starts_with(&format!("thread {} ", tid - 1)), "{name}");
    }
    assert!(meta["time_axis"].as_str().unwrap().contains("event index"));
    let edges = meta["ownership_edges"].as_u64().unwrap();
    assert!(edges > 0, "a racy counter changes owner: {meta}");
    assert!(phases["flows"] as u64 >= meta["ownership_edge_arrows"].as_u64().unwrap());
    assert!(phases["flows"] > 0);
    // The end is an instant on the thread that ended the process.
    let evs = doc["traceEvents"].as_array().unwrap();
    assert!(evs
        .iter()
        .any(|e| e["cat"] == "end" && e["name"].as_str().unwrap().starts_with("end: exit")));
}

#[test]
fn leap_timeline_shows_stripe_handovers_and_a_crash() {
    // LEAP: every access goes through stripe vectors, shown with hand-over arrows.
    let p = program("stencil");
    let w = Work::new();
    let bin = w.build(&p, "gcc");
    let r = record(&w, &bin, &p.args, "leap.trace", &["--strategy", "leap"]);
    let doc = view(&w, &r.trace);
    let (names, _) = check_rules(&doc);
    assert_eq!(names.len() as u64, info_threads(&w, &r.trace));
    let meta = &doc["metadata"];
    assert!(meta["vector_handovers"].as_u64().unwrap() > 0, "{meta}");
    assert!(
        meta["vector_handover_arrows"].as_u64().unwrap() > 0,
        "{meta}"
    );
    // A crashing recording: the end is a fault instant.
    let p = program("crash_sometimes");
    let bin = w.build(&p, "gcc");
    let t = w.path("crash.trace");
    let mut c = w.record_cmd(&t, &["--chaos", "--until-fail", "200"], &bin);
    c.args(&p.args);
    let o = run_limited(c, Duration::from_secs(600));
    assert_ne!(
        shell_status(&o),
        0,
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let doc = view(&w, &t);
    check_rules(&doc);
    let evs = doc["traceEvents"].as_array().unwrap();
    let end = evs
        .iter()
        .find(|e| e["cat"] == "end")
        .expect("no end instant");
    assert!(end["name"].as_str().unwrap().contains("fault"), "{end}");
    // The crash names the reader's source line, in the timeline and in `reprise info`.
    let src = end["args"]["source"]
        .as_str()
        .unwrap_or_else(|| panic!("{end}"));
    assert!(
        src.starts_with("reader at ") && src.contains("crash_sometimes.c:"),
        "{end}"
    );
    let mut c = w.cmd();
    c.current_dir("/");
    c.arg("info").arg(&t);
    let o = run_limited(c, Duration::from_secs(60));
    let info = String::from_utf8_lossy(&o.stdout);
    let line = info.lines().find(|l| l.starts_with("end: fault")).unwrap();
    assert!(
        line.contains("in code at 0x") && line.contains(src),
        "{line}"
    );
}

#[test]
fn deadlock_timeline_shows_each_wait_with_its_source_line() {
    let p = program("deadlock");
    let w = Work::new();
    let bin = w.build(&p, "gcc");
    let t = w.path("deadlock.trace");
    let o = run_limited(w.record_cmd(&t, &[], &bin), Duration::from_secs(120));
    assert_eq!(
        shell_status(&o),
        124,
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let doc = view(&w, &t);
    let (names, _) = check_rules(&doc);
    assert_eq!(names.len(), 3);
    let evs = doc["traceEvents"].as_array().unwrap();
    let waits: Vec<&Value> = evs
        .iter()
        .filter(|e| e["ph"] == "X" && e["name"].as_str().unwrap().starts_with("blocked: "))
        .collect();
    assert_eq!(waits.len(), 3, "one wait per thread: {waits:?}");
    for (tid, line) in [(2u64, "deadlock.c:37)"), (3, "deadlock.c:49)")] {
        let w = waits.iter().find(|e| e["tid"] == tid).unwrap();
        assert!(w["name"].as_str().unwrap().contains("waits to lock"), "{w}");
        assert!(w["args"]["source"].as_str().unwrap().ends_with(line), "{w}");
    }
}

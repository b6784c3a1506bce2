//! Recordings cut short (issue 13): the program killed by SIGKILL, by itself or from outside.
//! The runtime never sees that end; the trace holds what the runtime sent until shortly before
//! (it flushes every 50 ms). `reprise info` says so, and the replay runs to where the trace
//! ends, checks everything up to there and exits with the recorded status (137).

mod common;
use common::*;
use reprise_proto::{decode_frames, encode_frame, Frame, Record};
use reprise_trace::{ChunkKind, TraceReader, TraceWriter};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

fn killed() -> Program {
    Program {
        name: "killed".into(),
        source: root().join("tests/programs/killed.c"),
        cplusplus: false,
        racy: true,
        crashes: false,
        clock: false,
        args: vec![],
    }
}

const KILLED: &str = "the program was killed by SIGKILL";

/// Replay a cut-short trace: exit 137, the promised message; returns (events, reproduced
/// output bytes) from it.
fn replay_cut(w: &Work, r: &Recorded) -> (u64, u64) {
    replay_cut_as(w, r, KILLED)
}

fn replay_cut_as(w: &Work, r: &Recorded, why: &str) -> (u64, u64) {
    let mut c = w.cmd();
    c.arg("replay").arg(&r.trace);
    let o = run_limited(c, Duration::from_secs(120));
    let err = String::from_utf8_lossy(&o.stderr);
    let lead = format!("reprise: replay verified up to the end of the recording ({why}): ");
    let line = err
        .lines()
        .find(|l| l.starts_with(&lead))
        .unwrap_or_else(|| {
            panic!(
                "not verified up to the cut (status {}):\n{err}",
                shell_status(&o)
            )
        });
    assert_eq!(shell_status(&o), r.status, "{err}");
    assert!(
        r.stdout.starts_with(&o.stdout),
        "the replay's output is not the recording's"
    );
    // "<E> events, <T> threads, <K> of <N> output bytes"
    let f: Vec<&str> = line[lead.len()..].split_whitespace().collect();
    let events: u64 = f[0].parse().unwrap();
    let bytes: u64 = f[4].parse().unwrap();
    assert_eq!(bytes, o.stdout.len() as u64);
    (events, bytes)
}

fn info_says_cut(w: &Work, r: &Recorded) {
    let o = w.cmd().arg("info").arg(&r.trace).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("recording: cut short (the program was killed by SIGKILL)"),
        "{out}"
    );
    assert!(out.contains("events: at least "), "{out}");
    assert!(!out.contains("events: 0 "), "{out}");
}

#[test]
fn program_killing_itself_replays_to_the_cut() {
    let p = killed();
    let w = Work::new();
    let bin = w.build(&p, "gcc");
    for (k, strategy) in ["ownership", "ownership", "ownership", "leap", "leap"]
        .iter()
        .enumerate()
    {
        let r = record(
            &w,
            &bin,
            &["self".into()],
            &format!("k{k}.trace"),
            &["--strategy", strategy],
        );
        assert_eq!(r.status, 137);
        info_says_cut(&w, &r);
        let (events, bytes) = replay_cut(&w, &r);
        // 300 ms of the run, flushed every 50 ms: most of it is in the trace.
        assert!(events > 1000, "{strategy}: only {events} events replayed");
        assert!(bytes > 0, "{strategy}: no output replayed");
    }
}

#[test]
fn program_calling_exit_directly_replays_to_the_cut() {
    let p = killed();
    let w = Work::new();
    let bin = w.build(&p, "gcc");
    let r = record(&w, &bin, &["exit".into()], "exit.trace", &[]);
    assert_eq!(r.status, 3);
    let (events, _) = replay_cut_as(
        &w,
        &r,
        "the program ended with status 3 where the runtime did not see it: `_exit` or exec",
    );
    assert!(events > 1000, "only {events} events replayed");
}

#[test]
fn program_killed_from_outside_replays_to_the_cut() {
    let p = killed();
    let w = Work::new();
    let bin = w.build(&p, "gcc");
    let t = w.path("outside.trace");
    let mut c = w.cmd();
    c.arg("record")
        .arg("-o")
        .arg(&t)
        .arg("--")
        .arg(format!("./{bin}"));
    let child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The recorded program is the recorder's child: kill it (and only it) after 400 ms.
    let pid = child.id();
    let start = Instant::now();
    let prog = loop {
        let kids =
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        if let Some(k) = kids.split_whitespace().next() {
            break k.parse::<i32>().unwrap();
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the program did not start"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    std::thread::sleep(Duration::from_millis(400));
    // SAFETY: sending SIGKILL to the program this test started (through the recorder).
    unsafe { libc::kill(prog, libc::SIGKILL) };
    let o = child.wait_with_output().unwrap();
    let r = recorded(t, &o);
    assert_eq!(r.status, 137);
    info_says_cut(&w, &r);
    let (events, _) = replay_cut(&w, &r);
    assert!(events > 1000, "only {events} events replayed");
}

#[test]
fn a_changed_checkpoint_before_the_cut_is_rejected() {
    let p = killed();
    let w = Work::new();
    let bin = w.build(&p, "gcc");
    // Checkpoints every 256 events: the default 4096 is about what each thread reaches in the
    // program's 300 ms, so on a loaded machine a recording could end before its first one.
    let r = record(
        &w,
        &bin,
        &["self".into()],
        "orig.trace",
        &["--checkpoint", "256"],
    );
    let dst = w.path("changed.trace");
    let (header, chunks, footer) = TraceReader::open(&r.trace).unwrap().read_all().unwrap();
    let ev: Vec<u8> = chunks
        .iter()
        .filter(|c| c.kind == ChunkKind::Events)
        .flat_map(|c| c.data.clone())
        .collect();
    let (mut frames, _) = decode_frames(&ev).unwrap();
    let mut changed = None;
    'f: for f in frames.iter_mut() {
        if let Frame::Thread { tid, records } = f {
            for rec in records.iter_mut() {
                if let Record::Digest(d) = rec {
                    d.value ^= 1;
                    changed = Some(*tid);
                    break 'f;
                }
            }
        }
    }
    let tid = changed.expect("no checkpoint before the cut");
    write(&dst, &header, &frames, &chunks, &footer);
    let why = replay_rejected(&w, &dst);
    assert!(why.contains(&format!("thread {tid} diverged")), "{why}");
}

fn write(
    dst: &Path,
    header: &reprise_trace::Header,
    frames: &[Frame],
    chunks: &[reprise_trace::Chunk],
    footer: &reprise_trace::Footer,
) {
    let raw: Vec<u8> = frames.iter().flat_map(encode_frame).collect();
    let mut t = TraceWriter::new(std::fs::File::create(dst).unwrap(), header).unwrap();
    t.write_chunk(ChunkKind::Events, &raw).unwrap();
    for c in chunks.iter().filter(|c| c.kind != ChunkKind::Events) {
        t.write_chunk(c.kind, &c.data).unwrap();
    }
    t.finish(footer).unwrap();
}

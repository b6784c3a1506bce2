//! Recordings cut short (issue 13): the program killed by SIGKILL, by itself or from outside.
//! The runtime never sees that end; the trace holds what the runtime sent until shortly before
//! (it flushes every 50 ms). `reprise info` says so, and the replay runs to where the trace
//! ends, checks everything up to there and exits with the recorded status (137).

mod common;
use common::*;
use reprise_proto::{decode_frames, encode_frame, Frame, Record};
use reprise_trace::{ChunkKind, TraceReader, TraceWriter};
use std::path::Path;
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
    replay_cut_full(w, r, why, false)
}

/// `output_cut`: the recorder was killed, so its trace's output is cut too, maybe before the
/// events: the replay's output and the recorded one agree as far as both go.
fn replay_cut_full(w: &Work, r: &Recorded, why: &str, output_cut: bool) -> (u64, u64) {
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
    // "<E> events, <T> threads, <K> of <N> output bytes"
    let f: Vec<&str> = line[lead.len()..].split_whitespace().collect();
    let events: u64 = f[0].parse().unwrap();
    let bytes: u64 = f[4].parse().unwrap();
    if output_cut {
        let n = r.stdout.len().min(o.stdout.len());
        assert_eq!(
            r.stdout[..n],
            o.stdout[..n],
            "the replay's output is not the recording's"
        );
        assert!(bytes <= n as u64, "{bytes} bytes compared of {n}");
    } else {
        assert!(
            r.stdout.starts_with(&o.stdout),
            "the replay's output is not the recording's"
        );
        assert_eq!(bytes, o.stdout.len() as u64);
    }
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

/// `_exit` skips `atexit`, but the runtime sees it (its interposer ends the recording as
/// `exit` would): a complete trace, replayed verified to its end with status 3.
#[test]
fn program_calling_underscore_exit_is_recorded_to_its_end() {
    let p = killed();
    let w = Work::new();
    let bin = w.build(&p, "gcc");
    let r = record(&w, &bin, &["exit".into()], "exit.trace", &[]);
    assert_eq!(r.status, 3);
    let o = w.cmd().arg("info").arg(&r.trace).output().unwrap();
    let info = String::from_utf8_lossy(&o.stdout);
    assert!(info.contains("status:      complete"), "{info}");
    replay_verified(&w, &r, How::Plain);
}

/// A program that execs another one leaves the runtime behind: the recording is cut where it
/// exec'd, and the replay runs to there.
#[test]
fn program_calling_exec_replays_to_the_cut() {
    let p = killed();
    let w = Work::new();
    let bin = w.build(&p, "gcc");
    let (r, err) = kept::record_stdin(&w, &bin, &["exec".into()], "exec.trace", kept::Input::Null);
    assert!(
        err.contains("execs /bin/sh after event")
            && err.contains("what that program does is not recorded"),
        "the exec was not reported:\n{err}"
    );
    assert_eq!(r.status, 5);
    let (events, _) = replay_cut_as(
        &w,
        &r,
        "the program ended with status 5 where the runtime did not see it: it exec'd another program, or made the exit system call by itself with Syscall User Dispatch off",
    );
    assert!(events > 1000, "only {events} events replayed");
}

/// A program that execs another one as soon as it starts (a shell script's `exec`) keeps a
/// trace of what came before: the runtime sends its buffered events at the exec (there was no
/// event on the way yet, and the recorder kept no trace, exit 2). Sync mode, Debian's `sh`.
#[test]
fn program_that_execs_at_once_keeps_its_trace() {
    let w = Work::new();
    let t = w.path("sh.trace");
    let mut c = w.cmd();
    c.arg("record")
        .arg("-o")
        .arg(&t)
        .args(["--", "sh", "-c", "echo hi; exec /bin/echo there"]);
    let o = run_limited(c, Duration::from_secs(60));
    let r = recorded(t, &o);
    assert_eq!((r.status, r.stdout.as_slice()), (0, &b"hi\nthere\n"[..]));
    let (_, bytes) = replay_cut_as(
        &w,
        &r,
        "the program ended with status 0 where the runtime did not see it: it exec'd another program, or made the exit system call by itself with Syscall User Dispatch off",
    );
    assert_eq!(bytes, 9, "the output was not replayed whole");
}

#[test]
fn program_killed_from_outside_replays_to_the_cut() {
    let p = killed();
    let w = Work::new();
    let bin = w.build(&p, "gcc");
    let t = w.path("outside.trace");
    // The recorded program is the recorder's child: kill it (and only it) after 400 ms.
    let (child, prog) = w.start_recording(&t, &[], &bin);
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

const RECORDER_KILLED: &str =
    "the recorder was killed, and the program with it by SIGKILL; the trace has no footer";

/// Whether process `pid` is gone (or a zombie waiting to be reaped).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
    }
}

/// `reprise record` itself killed with SIGKILL while the program runs: the program dies with
/// it (it never runs on unrecorded), the trace has no footer and perhaps a torn last frame;
/// `info` says so, and the replay goes to where the trace ends, verified, exit 137.
#[test]
fn killed_recorder_replays_to_the_cut() {
    use std::io::Read;
    let p = killed();
    let w = Work::new();
    let bin = w.build(&p, "gcc");
    let t = w.path("recorder-killed.trace");
    let (mut child, prog) = w.start_recording(&t, &[], &bin);
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let t1 = std::thread::spawn(move || {
        let mut v = Vec::new();
        so.read_to_end(&mut v).ok();
        v
    });
    let t2 = std::thread::spawn(move || {
        let mut v = Vec::new();
        se.read_to_end(&mut v).ok();
        v
    });
    let pid = child.id() as i32;
    // The recorder writes what it has every 250 ms: let it write a few times.
    std::thread::sleep(Duration::from_millis(1200));
    // SAFETY: sending SIGKILL to the recorder this test started.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the recorder did not die"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    // The program does not run on unrecorded: it dies with its recorder.
    while !gone(prog) {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the program outlived its killed recorder"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let o = std::process::Output {
        status,
        stdout: t1.join().unwrap(),
        stderr: t2.join().unwrap(),
    };
    assert_eq!(shell_status(&o), 137);
    let r = Recorded {
        trace: t.clone(),
        stdout: o.stdout.clone(),
        stderr: vec![],
        status: 137,
    };
    // A trace without its footer: `info` says why, and how far it goes.
    let io = w.cmd().arg("info").arg(&t).output().unwrap();
    let out = String::from_utf8_lossy(&io.stdout);
    assert!(io.status.success(), "{out}");
    assert!(
        out.contains(&format!("recording: cut short ({RECORDER_KILLED})")),
        "{out}"
    );
    assert!(out.contains("status:      interrupted: "), "{out}");
    assert!(out.contains("events: at least "), "{out}");
    assert!(!out.contains("events: at least 0 "), "{out}");
    let (events, bytes) = replay_cut_full(&w, &r, RECORDER_KILLED, true);
    assert!(events > 1000, "only {events} events replayed");
    assert!(bytes > 0, "no output replayed");

    // The recorder killed while writing a frame: the torn frame is ignored.
    let whole = std::fs::read(&t).unwrap();
    let torn = w.path("torn.trace");
    std::fs::write(&torn, &whole[..whole.len() - 7]).unwrap();
    let r = Recorded {
        trace: torn.clone(),
        ..r
    };
    let (torn_events, _) = replay_cut_full(&w, &r, RECORDER_KILLED, true);
    assert!(torn_events > 1000, "only {torn_events} events replayed");
    // A damaged frame before the end is still an error, not a cut.
    let mut bad = whole.clone();
    let mid = whole.len() / 2;
    bad[mid] ^= 0x40;
    let damaged = w.path("damaged.trace");
    std::fs::write(&damaged, &bad).unwrap();
    let why = replay_rejected(&w, &damaged);
    assert!(why.contains("corrupt"), "{why}");
}

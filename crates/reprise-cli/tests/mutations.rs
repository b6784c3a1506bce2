//! Damaged traces never replay as verified and never hang: two access-vector entries swapped,
//! a recorded result changed, a byte flipped in a chunk, the recorded output changed. Each makes `reprise replay` exit 125
//! with a reason. A cut tail (what a killed recorder leaves) replays only up to where it ends. The semantic mutations rewrite the trace with
//! valid checksums, so only the replay's own checks can catch them.

mod common;
use common::*;
use reprise_proto::{decode_frames, encode_frame, Frame, Record};
use reprise_trace::{ChunkKind, TraceReader, TraceWriter};
use std::path::Path;

/// Decode a trace's event frames; rewrite it with `f` applied to them.
fn rewrite(src: &Path, dst: &Path, f: impl FnOnce(&mut Vec<Frame>) -> bool) -> bool {
    let (header, chunks, footer) = TraceReader::open(src).unwrap().read_all().unwrap();
    let mut events = Vec::new();
    for c in chunks.iter().filter(|c| c.kind == ChunkKind::Events) {
        events.extend_from_slice(&c.data);
    }
    let (mut frames, used) = decode_frames(&events).unwrap();
    assert_eq!(used, events.len());
    if !f(&mut frames) {
        return false;
    }
    let raw: Vec<u8> = frames.iter().flat_map(encode_frame).collect();
    let mut w = TraceWriter::new(std::fs::File::create(dst).unwrap(), &header).unwrap();
    w.write_chunk(ChunkKind::Events, &raw).unwrap();
    for c in chunks.iter().filter(|c| c.kind != ChunkKind::Events) {
        w.write_chunk(c.kind, &c.data).unwrap();
    }
    w.finish(&footer).unwrap();
    true
}

fn recorded(name: &str) -> (Work, Recorded) {
    recorded_with(name, &[])
}

fn recorded_with(name: &str, extra: &[&str]) -> (Work, Recorded) {
    let p = program(name);
    let w = Work::new();
    let bin = w.build(&p, "gcc");
    let r = record(&w, &bin, &p.args, "orig.trace", extra);
    replay_verified(&w, &r, How::Plain);
    (w, r)
}

/// Replay a trace whose access vectors were reordered: either a thread's divergence is named,
/// or (the swapped runs contradict another stripe's order) the watchdog reports every thread
/// waiting for a turn the trace gives to another waiting thread: a cycle in the recorded order,
/// which is checked here (any other wait is a hang, not a rejection).
fn replay_rejected_or_cycle(w: &Work, trace: &Path) -> String {
    let mut c = w.cmd();
    c.arg("replay").arg(trace).args(["--timeout", "30"]);
    let o = run_limited(c, std::time::Duration::from_secs(120));
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(shell_status(&o), 125, "{err}");
    assert!(!err.contains("replay verified"), "{err}");
    if !err.contains("replay is stuck") {
        return err;
    }
    // "thread A at event N waits for its turn on stripe S, which the trace gives to thread B next"
    let mut next = std::collections::BTreeMap::new();
    for l in err.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        if w.len() >= 20 && w[0] == "thread" && w[5] == "waits" && w[17] == "thread" {
            next.insert(w[1].to_string(), w[18].to_string());
        }
    }
    let start = next.keys().next().cloned().expect(&err);
    let mut at = start;
    for _ in 0..=next.len() {
        match next.get(&at) {
            Some(b) => at = b.clone(),
            None => panic!("a wait that is not a cycle of turns: {err}"),
        }
    }
    format!("{err}\n(a cycle of recorded turns)")
}

/// Frames of the counter's stripe (the busiest) holding two runs of different threads: a swap
/// there changes the values read, which the digests name (a swap in a thread-start or join
/// stripe may instead make the schedule impossible: a replay that waits forever).
fn counter_frames(frames: &[Frame]) -> Vec<usize> {
    let mut runs = std::collections::BTreeMap::<u32, usize>::new();
    for f in frames.iter() {
        if let Frame::Stripe { stripe, entries } = f {
            *runs.entry(*stripe).or_default() += entries.len();
        }
    }
    let busiest = runs.iter().max_by_key(|(_, n)| **n).map(|(s, _)| *s);
    frames
        .iter()
        .enumerate()
        .filter(|(_, f)| {
            matches!(f, Frame::Stripe { stripe, entries }
                if Some(*stripe) == busiest && entries.windows(2).any(|e| e[0].tid != e[1].tid))
        })
        .map(|(i, _)| i)
        .collect()
}

#[test]
fn swapped_access_vector_entries_are_rejected() {
    // LEAP orders memory with access vectors (ownership keeps vectors for synchronisation only).
    // A recording whose counter stripe spans several frames (most do; a run where the threads
    // barely overlapped may not: record again).
    let (w, r, ok) = (0..5)
        .map(|_| {
            let (w, r) = recorded_with("counter_race", &["--strategy", "leap"]);
            let probe = w.path("probe.trace");
            let ok = rewrite(&r.trace, &probe, |frames| counter_frames(frames).len() >= 4);
            (w, r, ok)
        })
        .find(|(_, _, ok)| *ok)
        .unwrap();
    assert!(ok);
    let mut swapped = 0;
    // Several different swaps, each in its own trace: early, middle and late in a vector.
    for (k, frac) in [0.1f64, 0.5, 0.9].iter().enumerate() {
        let dst = w.path(&format!("swap-{k}.trace"));
        let ok = rewrite(&r.trace, &dst, |frames| {
            let cands = counter_frames(frames);
            // Not the stripe's first frame: its first runs precede the other threads' starts,
            // and moving one before them is an impossible schedule rather than another order.
            let cands = &cands[1..];
            let i = cands[((cands.len() - 1) as f64 * frac) as usize];
            if let Frame::Stripe { entries, .. } = &mut frames[i] {
                let mid = entries.len() / 2;
                let j = (0..entries.len() - 1)
                    .filter(|&j| entries[j].tid != entries[j + 1].tid)
                    .min_by_key(|&j| j.abs_diff(mid))
                    .unwrap();
                entries.swap(j, j + 1);
            }
            true
        });
        assert!(ok, "the recording has no vector with two runs");
        let why = replay_rejected_or_cycle(&w, &dst);
        assert!(
            why.contains("reprise: replay diverged: thread ") || why.contains("a cycle"),
            "the reason is not a thread's divergence: {why}"
        );
        eprintln!("swap {k}: {why}");
        swapped += 1;
    }
    assert_eq!(swapped, 3);
}

#[test]
fn misplaced_ownership_edge_is_rejected() {
    // An ownership trace whose edge list is out of order (an edge moved to an event the thread
    // has already passed) is named at that thread and event, never replayed as verified.
    let (w, r) = recorded_with("counter_race", &["--strategy", "ownership"]);
    let dst = w.path("edge.trace");
    let ok = rewrite(&r.trace, &dst, |frames| {
        for f in frames.iter_mut() {
            if let Frame::Thread { records, .. } = f {
                let edges: Vec<usize> = records
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| matches!(r, Record::Edge(_)))
                    .map(|(i, _)| i)
                    .collect();
                if edges.len() >= 2 {
                    if let Record::Edge(p) = &mut records[edges[1]] {
                        p.event = 0;
                        return true;
                    }
                }
            }
        }
        false
    });
    assert!(ok, "the ownership recording has no thread with two edges");
    let why = replay_rejected(&w, &dst);
    assert!(
        why.contains("reprise: replay diverged: thread ")
            && why.contains("its recorded edge at event 0"),
        "the reason names no edge: {why}"
    );
    eprintln!("misplaced edge: {why}");
}

#[test]
fn changed_result_is_rejected() {
    // timestamps records its clock reads as results: one changed value must be named as a
    // divergence of the thread that read it (its digest folds each result), never a hang.
    let (w, r) = recorded("timestamps");
    for tid in [0u32, 1] {
        let dst = w.path(&format!("result-{tid}.trace"));
        let ok = rewrite(&r.trace, &dst, |frames| {
            for f in frames.iter_mut() {
                if let Frame::Thread { tid: t, records } = f {
                    if *t != tid {
                        continue;
                    }
                    // Its last clock read (main's usleep measurement, the thread's second snap).
                    for rec in records.iter_mut().rev() {
                        if let Record::Result(p) = rec {
                            p.value ^= 1;
                            return true;
                        }
                    }
                }
            }
            false
        });
        assert!(ok, "thread {tid} of the timestamps recording has no result");
        let why = replay_rejected(&w, &dst);
        assert!(
            why.contains(&format!("reprise: replay diverged: thread {tid} diverged")),
            "the reason does not name thread {tid}'s divergence: {why}"
        );
        eprintln!("changed result of thread {tid}: {why}");
    }
}

/// Rewrite a trace with its recorded stdout replaced by `f` of it, split into chunks of
/// `piece` bytes (valid checksums).
fn rewrite_stdout(src: &Path, dst: &Path, piece: usize, f: impl FnOnce(&mut Vec<u8>)) {
    let (header, chunks, footer) = TraceReader::open(src).unwrap().read_all().unwrap();
    let mut out: Vec<u8> = chunks
        .iter()
        .filter(|c| c.kind == ChunkKind::Stdout)
        .flat_map(|c| c.data.iter().copied())
        .collect();
    f(&mut out);
    let mut w = TraceWriter::new(std::fs::File::create(dst).unwrap(), &header).unwrap();
    for c in chunks.iter().filter(|c| c.kind != ChunkKind::Stdout) {
        w.write_chunk(c.kind, &c.data).unwrap();
    }
    for p in out.chunks(piece) {
        w.write_chunk(ChunkKind::Stdout, p).unwrap();
    }
    w.finish(&footer).unwrap();
}

#[test]
fn changed_output_is_rejected_at_its_byte() {
    // The replay's output is compared with the recorded one piece by piece as it comes (the
    // recorded chunks decompressed one at a time): a changed, missing or extra byte is named.
    let (w, r) = recorded("prodcons");
    let n = r.stdout.len();
    assert!(n >= 8, "prodcons prints too little to change: {n} bytes");
    type Edit = fn(&mut Vec<u8>);
    let cases: [(&str, Edit, String); 3] = [
        (
            "changed",
            |o| {
                let at = o.len() - 3;
                o[at] ^= 0x01
            },
            format!(
                "stdout differs at byte {} (recorded {n} bytes, replayed {n} bytes)",
                n - 3
            ),
        ),
        (
            "longer",
            |o| o.push(b'x'),
            format!(
                "stdout differs at byte {n} (recorded {} bytes, replayed {n} bytes)",
                n + 1
            ),
        ),
        (
            "shorter",
            |o| {
                o.pop();
            },
            format!(
                "stdout differs at byte {} (recorded {} bytes, replayed {n} bytes)",
                n - 1,
                n - 1
            ),
        ),
    ];
    for (name, f, want) in cases {
        // Pieces of 3 bytes: the difference falls inside a later chunk than the first.
        let dst = w.path(&format!("out-{name}.trace"));
        rewrite_stdout(&r.trace, &dst, 3, f);
        let why = replay_rejected(&w, &dst);
        assert!(why.contains(&want), "{name}: want {want:?} in {why}");
    }
    // The same output in other pieces verifies.
    let dst = w.path("out-same.trace");
    rewrite_stdout(&r.trace, &dst, 5, |_| {});
    let mut c = w.cmd();
    c.arg("replay").arg(&dst);
    let o = run_limited(c, std::time::Duration::from_secs(120));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("reprise: replay verified ("), "{err}");
    assert_eq!(o.stdout, r.stdout);
}

#[test]
fn flipped_byte_and_cut_tail_are_rejected() {
    let (w, r) = recorded("prodcons");
    let bytes = std::fs::read(&r.trace).unwrap();
    for (k, at) in [bytes.len() / 2, bytes.len() - 40, bytes.len() * 3 / 4]
        .into_iter()
        .enumerate()
    {
        let mut b = bytes.clone();
        b[at] ^= 0x20;
        let dst = w.path(&format!("flip-{k}.trace"));
        std::fs::write(&dst, &b).unwrap();
        replay_rejected(&w, &dst);
    }
    // The middle of the first frame (prodcons's one events chunk), after the prologue (magic,
    // version, header length, header, its crc): half the file lands in the header when the
    // events compress well.
    let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap()) as usize;
    let first = 20 + u32_at(12);
    assert_eq!(bytes[first], 1, "the first frame holds events");
    let mid_events = first + 17 + u32_at(first + 5) / 2;
    // A cut tail is what a killed recorder leaves (no footer, the last frame torn): it is
    // never verified as a whole recording, only up to where it ends, and says so.
    for (k, len) in [bytes.len() - 1, bytes.len() - 30, mid_events]
        .into_iter()
        .enumerate()
    {
        let dst = w.path(&format!("cut-{k}.trace"));
        std::fs::write(&dst, &bytes[..len]).unwrap();
        if k == 2 {
            // Half of prodcons's one events chunk: no event is left.
            let why = replay_rejected(&w, &dst);
            assert!(why.contains("before any runtime events"), "{why}");
            continue;
        }
        let mut c = w.cmd();
        c.arg("replay").arg(&dst).args(["--timeout", "30"]);
        let o = run_limited(c, std::time::Duration::from_secs(120));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.contains("reprise: replay verified ("), "{err}");
        assert!(
            err.contains(
                "reprise: replay verified up to the end of the recording (the recorder was killed"
            ),
            "{err}"
        );
        let n = o.stdout.len().min(r.stdout.len());
        assert_eq!(o.stdout[..n], r.stdout[..n], "{err}");
        eprintln!("cut at {len}: status {}: {err}", shell_status(&o));
    }
}

#[test]
fn changed_binary_is_rejected() {
    let (w, r) = recorded("counter_race");
    let bin = w.path("counter_race-gcc");
    let mut b = std::fs::read(&bin).unwrap();
    b.push(0);
    std::fs::write(&bin, b).unwrap();
    let why = replay_rejected(&w, &r.trace);
    assert!(
        why.contains("counter_race-gcc changed since the recording"),
        "{why}"
    );
}

#[test]
fn divergence_report_names_the_source_line() {
    // A changed digest checkpoint of a worker: the replay diverges there, and the report names
    // the access's source line and function in the program, next to the address. Checkpoints
    // every 64 events: most of a worker's accesses are uncounted hits on its held granules, so
    // with the default interval its only checkpoint is its final one, at its exit.
    let (w, r) = recorded_with(
        "counter_race",
        &["--strategy", "ownership", "--checkpoint", "64"],
    );
    let dst = w.path("digest.trace");
    let ok = rewrite(&r.trace, &dst, |frames| {
        for f in frames.iter_mut() {
            if let Frame::Thread { tid, records } = f {
                if *tid == 0 {
                    continue;
                }
                for rec in records.iter_mut() {
                    if let Record::Digest(p) = rec {
                        p.value ^= 1;
                        return true;
                    }
                }
            }
        }
        false
    });
    assert!(ok, "the recording has no worker checkpoint");
    let why = replay_rejected(&w, &dst);
    eprintln!("changed digest: {why}");
    assert!(why.contains("diverged in events"), "{why}");
    assert!(
        why.contains("in code at 0x"),
        "the report names no code address: {why}"
    );
    let at = why
        .find("counter_race.c:")
        .unwrap_or_else(|| panic!("no source line of counter_race.c: {why}"));
    let line: String = why[at + "counter_race.c:".len()..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    let line: usize = line
        .parse()
        .unwrap_or_else(|_| panic!("no line number: {why}"));
    let src = std::fs::read_to_string(root().join("tests/programs/counter_race.c")).unwrap();
    assert!(line >= 1 && line <= src.lines().count(), "{why}");
    assert!(
        why.contains("worker at "),
        "the report names no function: {why}"
    );
}

/// Rewrite `src`'s events as chunks of `piece` bytes (runtime frames then span chunks), the
/// stream's last `cut` bytes left out; the other chunks as they were.
fn rechunk_events(src: &Path, dst: &Path, piece: usize, cut: usize) {
    let (header, chunks, footer) = TraceReader::open(src).unwrap().read_all().unwrap();
    let mut events = Vec::new();
    for c in chunks.iter().filter(|c| c.kind == ChunkKind::Events) {
        events.extend_from_slice(&c.data);
    }
    events.truncate(events.len() - cut);
    let mut w = TraceWriter::new(std::fs::File::create(dst).unwrap(), &header).unwrap();
    for p in events.chunks(piece) {
        w.write_chunk(ChunkKind::Events, p).unwrap();
    }
    for c in chunks.iter().filter(|c| c.kind != ChunkKind::Events) {
        w.write_chunk(c.kind, &c.data).unwrap();
    }
    w.finish(&footer).unwrap();
}

#[test]
fn frames_across_chunks_replay_and_a_complete_trace_cut_inside_a_frame_is_rejected() {
    // The replay decodes the events chunk by chunk (a long recording's stream is never held
    // whole): a frame split over chunks is put together again, and a complete trace (it has
    // its footer) whose stream ends inside a frame is damage, not a cut-short recording.
    let (w, r) = recorded_with("counter_race", &["--checkpoint", "1"]);
    for piece in [1000, 4093] {
        let dst = w.path(&format!("pieces-{piece}.trace"));
        rechunk_events(&r.trace, &dst, piece, 0);
        let mut c = w.cmd();
        c.arg("replay").arg(&dst);
        let o = run_limited(c, std::time::Duration::from_secs(120));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("reprise: replay verified ("), "{err}");
        assert_eq!(o.stdout, r.stdout, "{err}");
    }
    let dst = w.path("cut-frame.trace");
    rechunk_events(&r.trace, &dst, 4093, 3);
    let why = replay_rejected(&w, &dst);
    assert!(
        why.contains("events are corrupt: the event stream ends inside a frame"),
        "{why}"
    );
}

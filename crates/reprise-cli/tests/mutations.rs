//! Damaged traces never replay as verified and never hang: two access-vector entries swapped,
//! a recorded result changed, a byte flipped in a chunk, the tail cut off. Each makes
//! `reprise replay` exit 125 with a reason. The semantic mutations rewrite the trace with
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

#[test]
fn swapped_access_vector_entries_are_rejected() {
    // LEAP orders memory with access vectors (ownership keeps vectors for synchronisation only).
    let (w, r) = recorded_with("counter_race", &["--strategy", "leap"]);
    let mut swapped = 0;
    // Several different swaps, each in its own trace: early, middle and late in a vector.
    for (k, frac) in [0.1f64, 0.5, 0.9].iter().enumerate() {
        let dst = w.path(&format!("swap-{k}.trace"));
        let ok = rewrite(&r.trace, &dst, |frames| {
            let cands: Vec<usize> = frames
                .iter()
                .enumerate()
                .filter(|(_, f)| matches!(f, Frame::Stripe { entries, .. } if entries.len() >= 2))
                .map(|(i, _)| i)
                .collect();
            if cands.is_empty() {
                return false;
            }
            let i = cands[((cands.len() - 1) as f64 * frac) as usize];
            if let Frame::Stripe { entries, .. } = &mut frames[i] {
                let j = entries
                    .windows(2)
                    .position(|e| e[0].tid != e[1].tid)
                    .unwrap();
                entries.swap(j, j + 1);
            }
            true
        });
        assert!(ok, "the recording has no vector with two runs");
        let why = replay_rejected(&w, &dst);
        assert!(why.contains("thread"), "the reason names no thread: {why}");
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
    assert!(why.contains("edge"), "the reason names no edge: {why}");
    eprintln!("misplaced edge: {why}");
}

#[test]
fn changed_result_is_rejected() {
    // stencil records which thread is the barrier's serial thread: a result.
    let (w, r) = recorded("stencil");
    let dst = w.path("result.trace");
    let ok = rewrite(&r.trace, &dst, |frames| {
        for f in frames.iter_mut() {
            if let Frame::Thread { records, .. } = f {
                for rec in records.iter_mut() {
                    if let Record::Result(p) = rec {
                        // PTHREAD_BARRIER_SERIAL_THREAD is -1; swap it with 0.
                        p.value = if p.value == 0 { u32::MAX as u64 } else { 0 };
                        return true;
                    }
                }
            }
        }
        false
    });
    assert!(ok, "the stencil recording has no result");
    let why = replay_rejected(&w, &dst);
    assert!(why.contains("thread"), "the reason names no thread: {why}");
    eprintln!("changed result: {why}");
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
    for (k, len) in [bytes.len() - 1, bytes.len() - 30, bytes.len() / 2]
        .into_iter()
        .enumerate()
    {
        let dst = w.path(&format!("cut-{k}.trace"));
        std::fs::write(&dst, &bytes[..len]).unwrap();
        let why = replay_rejected(&w, &dst);
        assert!(
            why.contains("truncat") || why.contains("incomplete") || why.contains("ends"),
            "{why}"
        );
        eprintln!("cut at {len}: {why}");
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
    assert!(why.contains("changed"), "{why}");
}

#[test]
fn divergence_report_names_the_source_line() {
    // A changed digest checkpoint of a worker: the replay diverges there, and the report names
    // the access's source line and function in the program, next to the address.
    let (w, r) = recorded_with("counter_race", &["--strategy", "ownership"]);
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

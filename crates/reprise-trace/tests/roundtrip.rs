//! Writing and reading back intact traces, and hand-crafted oddities.

mod common;

use common::*;
use reprise_trace::*;

#[test]
fn round_trip_through_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.reprise");
    let input = chunks();
    write_trace(&path, &input);

    let (h, got, f) = read_path(&path).unwrap();
    let mut want_header = header();
    want_header.format_version = TRACE_VERSION;
    assert_eq!(h, want_header);
    assert_eq!(got.len(), input.len());
    let bytes = std::fs::read(&path).unwrap();
    let starts = frame_starts(&bytes);
    for (i, (c, (k, d))) in got.iter().zip(&input).enumerate() {
        assert_eq!(c.index, i as u64);
        assert_eq!(c.offset, starts[i] as u64);
        assert_eq!(c.kind, *k);
        assert_eq!(&c.data, d);
    }
    let raw: u64 = input.iter().map(|(_, d)| d.len() as u64).sum();
    assert_eq!(
        f,
        Footer {
            chunks: input.len() as u64,
            raw_bytes: raw,
            ..footer()
        }
    );
    assert_eq!(bytes[..8], *MAGIC);
}

#[test]
fn stream_reader_matches_file_reader_and_stops_after_footer() {
    let bytes = to_bytes(&chunks());
    let mut r = TraceReader::from_reader(std::io::Cursor::new(bytes.clone())).unwrap();
    assert_eq!(r.header().strategy, "stripes");
    let mut n = 0;
    while let Some(c) = r.next_chunk().unwrap() {
        assert!(
            r.footer().is_none(),
            "footer visible before chunk {}",
            c.index
        );
        n += 1;
    }
    assert_eq!(n, chunks().len());
    assert_eq!(r.footer().unwrap().exit, Exit::Signaled(11));
    assert!(r.next_chunk().unwrap().is_none());
    assert!(r.next_chunk().unwrap().is_none());

    let dir = tempfile::tempdir().unwrap();
    let p = tmpfile(&dir, "t", &bytes);
    assert_eq!(read_path(&p).unwrap().1, read_bytes(&bytes).unwrap().1);
}

#[test]
fn empty_trace_has_only_header_and_footer() {
    let bytes = to_bytes(&[]);
    let (_, c, f) = read_bytes(&bytes).unwrap();
    assert!(c.is_empty());
    assert_eq!((f.chunks, f.raw_bytes), (0, 0));
}

#[test]
fn writer_counts_and_flushes_each_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live");
    let mut w = TraceWriter::new(
        std::io::BufWriter::new(std::fs::File::create(&path).unwrap()),
        &header(),
    )
    .unwrap();
    w.write_chunk(ChunkKind::Events, b"abc").unwrap();
    w.write_chunk(ChunkKind::Stdout, b"de").unwrap();
    assert_eq!((w.chunks_written(), w.raw_bytes_written()), (2, 5));
    // Without finish(): as if the recorder had crashed. Both chunks must be on disk.
    let err = read_path(&path).unwrap_err();
    assert!(
        matches!(err, TraceError::MissingFooter { chunks: 2 }),
        "{err:?}"
    );
    drop(w);
}

#[test]
fn wrong_magic_is_not_a_trace() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = to_bytes(&chunks());
    bytes[0] = b'X';
    let p = tmpfile(&dir, "bad", &bytes);
    assert!(matches!(TraceReader::open(&p), Err(TraceError::NotATrace)));
    for junk in [
        &b""[..],
        b"hello",
        b"#!/bin/sh\necho hi\n",
        b"\x7fELF\x02\x01\x01\x00\x00\x00",
    ] {
        let p = tmpfile(&dir, "junk", junk);
        assert!(
            matches!(TraceReader::open(&p), Err(TraceError::NotATrace)),
            "{junk:?}"
        );
        assert!(matches!(summarize(&p), Err(TraceError::NotATrace)));
    }
}

#[test]
fn next_version_is_unsupported() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = to_bytes(&chunks());
    bytes[8..12].copy_from_slice(&(TRACE_VERSION + 1).to_le_bytes());
    let p = tmpfile(&dir, "v2", &bytes);
    match TraceReader::open(&p) {
        Err(e @ TraceError::UnsupportedVersion { found, supported }) => {
            assert_eq!((found, supported), (TRACE_VERSION + 1, TRACE_VERSION));
            assert!(
                e.to_string()
                    .contains(&format!("version {}", TRACE_VERSION + 1)),
                "{e}"
            );
        }
        other => panic!("{:?}", other.err()),
    }
}

#[test]
fn huge_header_length_is_rejected_before_reading() {
    let mut bytes = MAGIC.to_vec();
    bytes.extend_from_slice(&TRACE_VERSION.to_le_bytes());
    bytes.extend_from_slice(&u32::MAX.to_le_bytes());
    bytes.extend_from_slice(b"{}");
    match TraceReader::from_reader(std::io::Cursor::new(bytes)) {
        Err(TraceError::BadHeader(m)) => assert!(m.contains("limit"), "{m}"),
        other => panic!("{:?}", other.err()),
    }
}

/// The prologue of an intact trace with no chunks.
fn prologue() -> Vec<u8> {
    let b = to_bytes(&[]);
    b[..frame_starts(&b)[0]].to_vec()
}

fn zst(data: &[u8]) -> Vec<u8> {
    zstd::bulk::compress(data, 3).unwrap()
}

#[test]
fn oversized_declared_length_is_corrupt_even_with_good_checksums() {
    let mut bytes = prologue();
    let at = bytes.len() as u64;
    bytes.extend(frame(0, 1, 1 << 30, &zst(b"small")));
    match read_bytes(&bytes) {
        Err(TraceError::Corrupt {
            chunk: 0,
            offset,
            why,
        }) => {
            assert_eq!(offset, at);
            assert!(why.contains("limit"), "{why}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn unknown_kind_wrong_length_and_bad_footer_are_corrupt() {
    let base = prologue();
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (frame(0, 7, 5, &zst(b"hello")), "unknown kind"),
        (frame(0, 1, 4, &zst(b"hello")), "decompress"),
        (frame(0, 1, 6, &zst(b"hello")), "decompress"),
        (frame(0, 1, 5, b"hello"), "decompress"),
        (frame(0, 0xFF, 4, &zst(b"null")), "not valid JSON"),
        {
            let json = br#"{"exit":{"Exited":0},"wall_ns":1,"chunks":3,"raw_bytes":0}"#;
            (
                frame(0, 0xFF, json.len() as u32, &zst(json)),
                "counts 3 chunks",
            )
        },
    ];
    for (f, want) in cases {
        let mut bytes = base.clone();
        bytes.extend(f);
        match read_bytes(&bytes) {
            Err(e @ TraceError::Corrupt { chunk: 0, .. }) => {
                let msg = e.to_string();
                assert!(msg.contains(want), "{msg} should mention {want}");
                assert!(
                    msg.contains(&format!("chunk 0 at byte {}", base.len())),
                    "{msg}"
                );
            }
            other => panic!("{want}: {other:?}"),
        }
    }
}

#[test]
fn bytes_after_the_footer_are_corrupt() {
    let mut bytes = to_bytes(&chunks());
    let len = bytes.len();
    bytes.push(0);
    match read_bytes(&bytes) {
        Err(TraceError::Corrupt { chunk, offset, .. }) => {
            assert_eq!(chunk, chunks().len() as u64 + 1);
            assert_eq!(offset, len as u64);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn frames_are_bound_to_their_position() {
    // Swapping two identical-looking chunks' frames must not go unnoticed.
    let input = vec![
        (ChunkKind::Stdout, b"one".to_vec()),
        (ChunkKind::Stdout, b"two".to_vec()),
    ];
    let bytes = to_bytes(&input);
    let s = frame_starts(&bytes);
    let mut swapped = bytes[..s[0]].to_vec();
    swapped.extend_from_slice(&bytes[s[1]..s[2]]);
    swapped.extend_from_slice(&bytes[s[0]..s[1]]);
    swapped.extend_from_slice(&bytes[s[2]..]);
    assert!(matches!(
        read_bytes(&swapped),
        Err(TraceError::Checksum { chunk: 0, .. })
    ));
}

#[test]
fn summarize_complete_trace() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    let input = chunks();
    write_trace(&path, &input);
    let s = summarize(&path).unwrap();
    assert!(s.is_complete());
    assert!(s.error.is_none());
    assert_eq!(s.chunks_ok, input.len() as u64);
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(s.file_size, bytes.len() as u64);
    for (i, (kind, comp, raw)) in s.bytes_by_kind.iter().enumerate() {
        assert_eq!(*kind, ChunkKind::ALL[i]);
        let want: u64 = input
            .iter()
            .filter(|(k, _)| k == kind)
            .map(|(_, d)| d.len() as u64)
            .sum();
        assert_eq!(*raw, want, "{kind:?}");
        assert!(*comp > 0);
    }
    // Compressed sizes add up: prologue + frame heads + payloads + footer frame.
    let starts = frame_starts(&bytes);
    let comp_total: u64 = s.bytes_by_kind.iter().map(|t| t.1).sum();
    let footer_frame = (bytes.len() - starts[starts.len() - 2]) as u64;
    assert_eq!(
        starts[0] as u64 + 17 * input.len() as u64 + comp_total + footer_frame,
        s.file_size
    );
    let text = s.to_string();
    for want in [
        "stripes",
        "/tmp/prog",
        "7 intact",
        "killed by signal 11",
        "shell status 139",
        "complete",
        "events",
        "stderr",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
}

#[test]
fn summarize_truncated_trace_reports_intact_chunks_and_error() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = to_bytes(&chunks());
    let starts = frame_starts(&bytes);
    // Cut in the middle of chunk 4.
    let cut = (starts[4] + starts[5]) / 2;
    let p = tmpfile(&dir, "cut", &bytes[..cut]);
    let s = summarize(&p).unwrap();
    assert_eq!(s.chunks_ok, 4);
    assert!(s.footer.is_none());
    assert!(!s.is_complete());
    assert_eq!(s.file_size, cut as u64);
    let e = s.error.as_ref().unwrap();
    assert!(
        matches!(e, TraceError::Truncated { chunk: 4, offset } if *offset == starts[4] as u64),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        format!(
            "trace is truncated: chunk 4 at byte {} ends early",
            starts[4]
        )
    );
    let text = s.to_string();
    assert!(
        text.contains("4 intact") && text.contains("truncated") && text.contains("no footer"),
        "{text}"
    );

    // Cut exactly between chunks: a clean but incomplete trace.
    let p = tmpfile(&dir, "cut2", &bytes[..starts[3]]);
    let s = summarize(&p).unwrap();
    assert_eq!(s.chunks_ok, 3);
    assert!(matches!(
        s.error,
        Some(TraceError::MissingFooter { chunks: 3 })
    ));
    assert!(s.to_string().contains("3 intact chunks without a footer"));
}

#[test]
fn shell_status() {
    assert_eq!(Exit::Exited(0).shell_status(), 0);
    assert_eq!(Exit::Exited(3).shell_status(), 3);
    assert_eq!(Exit::Signaled(9).shell_status(), 137);
    assert_eq!(ChunkKind::from_u8(2), Some(ChunkKind::Stdout));
    assert_eq!(ChunkKind::from_u8(0), None);
    assert_eq!(ChunkKind::from_u8(0xFF), None);
}

#[test]
fn raw_chunks_decompress_to_the_chunks() {
    let bytes = to_bytes(&chunks());
    let dir = tempfile::tempdir().unwrap();
    let p = tmpfile(&dir, "t", &bytes);
    let (_, want, f) = read_path(&p).unwrap();
    let (_, raw, g) = TraceReader::open(&p).unwrap().read_salvaged_raw().unwrap();
    assert_eq!(Some(f), g);
    assert_eq!(raw.len(), want.len());
    let mut dec = zstd::bulk::Decompressor::new().unwrap();
    let mut buf = Vec::new();
    for (r, c) in raw.iter().zip(&want) {
        assert_eq!((r.index, r.offset, r.kind), (c.index, c.offset, c.kind));
        assert_eq!(r.raw_len as usize, c.data.len());
        r.decompress_into(&mut dec, &mut buf).unwrap();
        assert_eq!(buf, c.data);
        assert_eq!(&r.clone().decompress().unwrap(), c);
    }
}

/// Output chunks left in the file decompress to the same bytes as chunks read into memory
/// (events stay in memory); a payload changed in the file after it was read past is refused
/// by its checksum when it is read back, not decompressed into wrong output.
#[test]
fn outputs_left_in_the_file_read_back_and_a_changed_file_is_refused() {
    let bytes = to_bytes(&chunks());
    let dir = tempfile::tempdir().unwrap();
    let p = tmpfile(&dir, "t", &bytes);
    let (_, want, _) = read_path(&p).unwrap();
    let (_, raw, _) = TraceReader::open(&p)
        .unwrap()
        .outputs_left_in_file()
        .read_salvaged_raw()
        .unwrap();
    let mut dec = zstd::bulk::Decompressor::new().unwrap();
    let mut buf = Vec::new();
    assert!(raw
        .iter()
        .any(|r| r.kind == ChunkKind::Stdout && r.raw_len > 0));
    for (r, c) in raw.iter().zip(&want) {
        r.decompress_into(&mut dec, &mut buf).unwrap();
        assert_eq!((r.kind, &buf), (c.kind, &c.data));
    }
    // Flip the last byte of the first non-empty stdout payload, in place.
    let out = raw
        .iter()
        .find(|r| r.kind == ChunkKind::Stdout && r.comp_len() > 0)
        .unwrap();
    let next = raw
        .iter()
        .find(|r| r.index == out.index + 1)
        .map_or(0, |r| r.offset);
    assert!(next > 0, "a chunk follows the stdout chunk");
    let mut changed = bytes.clone();
    changed[next as usize - 1] ^= 0x55;
    std::fs::write(&p, &changed).unwrap();
    match out.decompress_into(&mut dec, &mut buf) {
        Err(TraceError::Checksum { chunk, .. }) => assert_eq!(chunk, out.index),
        other => panic!("a changed payload read back: {other:?}"),
    }
}

/// Large chunks that do not compress (a compressor's output recorded as stdout) are stored in
/// raw zstd blocks; they read back like any other, beside compressible ones, and the file is
/// barely larger than the data.
#[test]
fn incompressible_chunks_are_stored_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.reprise");
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let noise: Vec<u8> = (0..(3 << 20) + 17)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    let text: Vec<u8> = b"the same line again\n".repeat(60_000);
    let input = vec![
        (ChunkKind::Stdout, noise.clone()),
        (ChunkKind::Stdout, text.clone()),
        (ChunkKind::Stderr, noise[..1 << 20].to_vec()),
    ];
    write_trace(&path, &input);
    let (_, got, _) = read_path(&path).unwrap();
    assert_eq!(got.len(), 3);
    for (c, (k, d)) in got.iter().zip(&input) {
        assert_eq!((c.kind, &c.data), (*k, d));
    }
    let size = std::fs::metadata(&path).unwrap().len();
    let raw = (noise.len() + (1 << 20)) as u64;
    assert!(
        size > raw && size < raw + raw / 100 + 64 * 1024,
        "{size} bytes for {raw} of noise"
    );
}

#[test]
fn chunks_written_at_the_fast_level_read_back() {
    let input = chunks();
    let text: Vec<u8> = b"edge 1 -> 2 at 4096\n".repeat(20_000);
    let write = |level: i32| {
        let mut w = TraceWriter::new(Vec::new(), &header())
            .unwrap()
            .with_level(level);
        for (k, d) in input
            .iter()
            .chain([(ChunkKind::Events, text.clone())].iter())
        {
            w.write_chunk(*k, d).unwrap();
        }
        w.finish(&footer()).unwrap()
    };
    let fast = write(ZSTD_LEVEL_FAST);
    let (_, got, _) = read_bytes(&fast).unwrap();
    assert_eq!(got.len(), input.len() + 1);
    for (c, (k, d)) in got.iter().zip(&input) {
        assert_eq!((c.kind, &c.data), (*k, d));
    }
    assert_eq!(got.last().unwrap().data, text);
    // The level is the writer's own: the same chunks at the default level differ in bytes.
    assert_ne!(fast, write(ZSTD_LEVEL));
}

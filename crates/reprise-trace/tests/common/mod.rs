#![allow(dead_code)]
//! Helpers shared by the integration tests.

use std::path::{Path, PathBuf};

use reprise_trace::*;

pub fn header() -> Header {
    let mut extra = std::collections::BTreeMap::new();
    extra.insert("host".to_string(), "test-box".to_string());
    extra.insert("seed".to_string(), "42".to_string());
    Header {
        format_version: 0, // the writer must set it
        runtime_version: "0.1.0".into(),
        strategy: "stripes".into(),
        exe_path: b"/tmp/prog\xff\xfe".to_vec(),
        exe_hash: "ab".repeat(32),
        argv: vec![b"prog".to_vec(), b"--n\x00=3".to_vec(), vec![0x80, 0x81]],
        env: vec![b"PATH=/bin".to_vec(), b"A=".to_vec(), b"A=again".to_vec()],
        cwd: b"/work".to_vec(),
        rlimit_stack: (8 << 20, u64::MAX),
        stripes: 64,
        checkpoint_interval: 10_000,
        created_unix: 1_700_000_000,
        extra,
        libs: Some(vec![(b"/lib/libc.so.6".to_vec(), "cd".repeat(8))]),
    }
}

pub fn footer() -> Footer {
    Footer {
        exit: Exit::Signaled(11),
        wall_ns: 1_234_567_890,
        chunks: 0,
        raw_bytes: 0,
        deadlock: None,
        dlopened: vec![(b"/tmp/libplugin.so".to_vec(), "0123abcd".into())],
    }
}

/// A deterministic mix of chunks of every kind, including an empty one and
/// one that does not compress.
pub fn chunks() -> Vec<(ChunkKind, Vec<u8>)> {
    let mut x: u32 = 0x1234_5678;
    let mut noise = vec![0u8; 3000];
    for b in &mut noise {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        *b = x as u8;
    }
    vec![
        (
            ChunkKind::Events,
            (0..2000u32).flat_map(|i| (i % 7).to_le_bytes()).collect(),
        ),
        (ChunkKind::Stdout, b"hello, world\n".to_vec()),
        (ChunkKind::Events, noise),
        (ChunkKind::Stderr, b"warning: something\n".repeat(20)),
        (ChunkKind::Stdout, Vec::new()),
        (ChunkKind::Events, vec![0xAA; 50_000]),
        (ChunkKind::Stderr, b"x".to_vec()),
    ]
}

pub fn write_trace(path: &Path, chunks: &[(ChunkKind, Vec<u8>)]) {
    let f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut w = TraceWriter::new(f, &header()).unwrap();
    for (k, d) in chunks {
        w.write_chunk(*k, d).unwrap();
    }
    w.finish(&footer()).unwrap();
}

pub fn to_bytes(chunks: &[(ChunkKind, Vec<u8>)]) -> Vec<u8> {
    let mut w = TraceWriter::new(Vec::new(), &header()).unwrap();
    for (k, d) in chunks {
        w.write_chunk(*k, d).unwrap();
    }
    w.finish(&footer()).unwrap()
}

/// Byte offsets where frames start, parsed independently of the reader:
/// the prologue end, each frame start, and finally the file length.
pub fn frame_starts(bytes: &[u8]) -> Vec<usize> {
    let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap()) as usize;
    let mut pos = 16 + u32_at(12) + 4;
    let mut starts = vec![pos];
    while pos < bytes.len() {
        pos += 17 + u32_at(pos + 5);
        starts.push(pos);
    }
    assert_eq!(pos, bytes.len(), "frames must tile the file");
    starts
}

/// Index of the frame containing byte `at` (at >= first frame start).
pub fn frame_of(starts: &[usize], at: usize) -> usize {
    starts.iter().rposition(|&s| s <= at).unwrap()
}

pub fn tmpfile(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// Reads the whole trace at `path`.
pub fn read_path(path: &Path) -> Result<(Header, Vec<Chunk>, Footer), TraceError> {
    TraceReader::open(path)?.read_all()
}

/// Reads the whole trace in `bytes`.
pub fn read_bytes(bytes: &[u8]) -> Result<(Header, Vec<Chunk>, Footer), TraceError> {
    TraceReader::from_reader(std::io::Cursor::new(bytes.to_vec()))?.read_all()
}

/// A hand-made frame with correct checksums, for crafting odd traces.
pub fn frame(index: u64, kind: u8, raw_len: u32, comp: &[u8]) -> Vec<u8> {
    let data_crc = crc32fast::hash(comp);
    let mut h = crc32fast::Hasher::new();
    h.update(&index.to_le_bytes());
    h.update(&[kind]);
    h.update(&raw_len.to_le_bytes());
    h.update(&(comp.len() as u32).to_le_bytes());
    h.update(&data_crc.to_le_bytes());
    let mut v = vec![kind];
    v.extend_from_slice(&raw_len.to_le_bytes());
    v.extend_from_slice(&(comp.len() as u32).to_le_bytes());
    v.extend_from_slice(&data_crc.to_le_bytes());
    v.extend_from_slice(&h.finalize().to_le_bytes());
    v.extend_from_slice(comp);
    v
}

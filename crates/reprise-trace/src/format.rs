//! The on-disk format of a reprise trace, version [`TRACE_VERSION`].
//!
//! All integers are little-endian. A trace is a prologue followed by
//! frames, the last of which is the footer:
//!
//! ```text
//! prologue:
//!   magic          8 bytes   b"REPRISE\0"
//!   version        u32       TRACE_VERSION
//!   header_len     u32       length of the header JSON, at most MAX_HEADER_LEN
//!   header         header_len bytes of JSON (serde_json of `Header`)
//!   header_crc     u32       crc32 of version | header_len | header
//!
//! frame (FRAME_HEAD_LEN = 17 bytes of head, then the payload):
//!   kind           u8        1 events, 2 stdout, 3 stderr, 0xFF footer
//!   raw_len        u32       payload length after decompression, <= MAX_CHUNK_LEN
//!   comp_len       u32       payload length on disk, <= MAX_CHUNK_LEN
//!   data_crc       u32       crc32 of the comp_len payload bytes
//!   head_crc       u32       crc32 of index (u64) | kind | raw_len | comp_len | data_crc
//!   payload        comp_len bytes, a zstd frame (level 3; 1 in ownership recordings)
//! ```
//!
//! `index` in `head_crc` is the frame's position in the file (0 for the first
//! frame after the prologue) and is not stored: a frame moved, dropped or
//! duplicated fails its check. The head has its own checksum so that a
//! damaged length is reported as a checksum error before anything is
//! allocated or read on its behalf, and so that any single damaged byte in a
//! frame is reported as [`TraceError::Checksum`](crate::TraceError::Checksum)
//! and never mistaken for truncation.
//!
//! The footer frame (kind 0xFF) carries the JSON of `Footer`, compressed like
//! any other payload. Its `chunks` must equal the number of data frames
//! before it and its `raw_bytes` the sum of their `raw_len`. Nothing may follow
//! the footer. A file that ends on a frame boundary without a footer is an
//! interrupted recording ([`TraceError::MissingFooter`](crate::TraceError::MissingFooter));
//! one that ends inside a frame is truncated
//! ([`TraceError::Truncated`](crate::TraceError::Truncated)).
//!
//! Did this change the format? Bump TRACE_VERSION.

/// Version of the on-disk format described in this module.
/// Did this change the format? Bump TRACE_VERSION.
pub const TRACE_VERSION: u32 = 1;

/// The eight bytes every trace starts with.
pub const MAGIC: &[u8; 8] = b"REPRISE\0";

/// Largest accepted header JSON, in bytes.
pub const MAX_HEADER_LEN: u32 = 16 << 20;

/// Largest accepted chunk payload, compressed or raw, in bytes.
pub const MAX_CHUNK_LEN: u32 = 256 << 20;

/// Bytes in a frame head: kind, raw_len, comp_len, data_crc, head_crc.
pub const FRAME_HEAD_LEN: usize = 17;

/// Kind byte of the footer frame.
pub const FOOTER_KIND: u8 = 0xFF;

/// Compression level of the payloads unless the writer is given another
/// ([`crate::TraceWriter::with_level`]); the reader takes any.
pub const ZSTD_LEVEL: i32 = 3;
/// The level for streams that compress well fast: an ownership recording's events (edges and
/// checkpoints). Level 1 took the launcher recording lu (`-t 2`, small) from 116 M to 86 M
/// instructions (callgrind) at the same trace size (686 KB and 622 KB in two recordings),
/// while a LEAP trace (kmeans, small) grew by 29% (level 2: 14%), so LEAP and the models keep
/// level 3.
pub const ZSTD_LEVEL_FAST: i32 = 1;

/// Bytes in the fixed part of the prologue before the header JSON.
pub(crate) const PROLOGUE_FIXED_LEN: u64 = 8 + 4 + 4;

/// crc32 of the prologue fields that the header checksum covers.
pub(crate) fn header_crc(version: u32, json: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&version.to_le_bytes());
    h.update(&(json.len() as u32).to_le_bytes());
    h.update(json);
    h.finalize()
}

/// crc32 that protects a frame head.
pub(crate) fn head_crc(index: u64, kind: u8, raw_len: u32, comp_len: u32, data_crc: u32) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&index.to_le_bytes());
    h.update(&[kind]);
    h.update(&raw_len.to_le_bytes());
    h.update(&comp_len.to_le_bytes());
    h.update(&data_crc.to_le_bytes());
    h.finalize()
}

/// The decoded 17-byte head of a frame.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FrameHead {
    pub kind: u8,
    pub raw_len: u32,
    pub comp_len: u32,
    pub data_crc: u32,
    pub head_crc: u32,
}

impl FrameHead {
    pub(crate) fn new(index: u64, kind: u8, raw_len: u32, comp: &[u8]) -> Self {
        let comp_len = comp.len() as u32;
        let data_crc = crc32fast::hash(comp);
        FrameHead {
            kind,
            raw_len,
            comp_len,
            data_crc,
            head_crc: head_crc(index, kind, raw_len, comp_len, data_crc),
        }
    }

    pub(crate) fn encode(&self) -> [u8; FRAME_HEAD_LEN] {
        let mut b = [0u8; FRAME_HEAD_LEN];
        b[0] = self.kind;
        b[1..5].copy_from_slice(&self.raw_len.to_le_bytes());
        b[5..9].copy_from_slice(&self.comp_len.to_le_bytes());
        b[9..13].copy_from_slice(&self.data_crc.to_le_bytes());
        b[13..17].copy_from_slice(&self.head_crc.to_le_bytes());
        b
    }

    pub(crate) fn decode(b: &[u8; FRAME_HEAD_LEN]) -> Self {
        let u = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        FrameHead {
            kind: b[0],
            raw_len: u(1),
            comp_len: u(5),
            data_crc: u(9),
            head_crc: u(13),
        }
    }

    /// Whether the head checksum matches for a frame at position `index`.
    pub(crate) fn head_ok(&self, index: u64) -> bool {
        self.head_crc == head_crc(index, self.kind, self.raw_len, self.comp_len, self.data_crc)
    }
}

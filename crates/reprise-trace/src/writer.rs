//! Writing a trace.

use std::io::Write;

use crate::format::{
    self, FrameHead, FOOTER_KIND, MAX_CHUNK_LEN, MAX_HEADER_LEN, TRACE_VERSION, ZSTD_LEVEL,
};
use crate::{ChunkKind, Footer, Header, TraceError};

/// Writes a trace to any [`Write`]: the prologue on [`new`](Self::new), one
/// frame per [`write_chunk`](Self::write_chunk), the footer on
/// [`finish`](Self::finish).
///
/// Every frame is written whole and then flushed, so if the recorder dies
/// only chunks not yet handed to `write_chunk` are lost (the bytes are handed
/// to the OS, not synced to the disk). After any error the writer is poisoned
/// and refuses further chunks, since the file may end mid-frame.
pub struct TraceWriter<W: Write> {
    w: W,
    next_index: u64,
    raw_bytes: u64,
    poisoned: bool,
    zstd: Option<zstd::bulk::Compressor<'static>>,
    /// zstd level of the payloads ([`ZSTD_LEVEL`] unless [`TraceWriter::with_level`]).
    level: i32,
    /// The compressed frame, reused: a fresh buffer per chunk costs the first touch of each of
    /// its pages (a 6 MB chunk of a compressor's output: about 1600 page faults).
    comp: Vec<u8>,
}

impl<W: Write> TraceWriter<W> {
    /// Writes the magic, version and `header` (with `format_version` set to
    /// [`TRACE_VERSION`]) and flushes.
    pub fn new(mut w: W, header: &Header) -> Result<Self, TraceError> {
        let mut header = header.clone();
        header.format_version = TRACE_VERSION;
        let json = serde_json::to_vec(&header)
            .map_err(|e| TraceError::BadHeader(format!("cannot encode the header: {e}")))?;
        if json.len() > MAX_HEADER_LEN as usize {
            return Err(TraceError::BadHeader(format!(
                "the header is {} bytes of JSON, more than the limit of {MAX_HEADER_LEN}",
                json.len()
            )));
        }
        let mut buf = Vec::with_capacity(json.len() + 20);
        buf.extend_from_slice(format::MAGIC);
        buf.extend_from_slice(&TRACE_VERSION.to_le_bytes());
        buf.extend_from_slice(&(json.len() as u32).to_le_bytes());
        buf.extend_from_slice(&json);
        buf.extend_from_slice(&format::header_crc(TRACE_VERSION, &json).to_le_bytes());
        w.write_all(&buf)?;
        w.flush()?;
        Ok(TraceWriter {
            w,
            next_index: 0,
            raw_bytes: 0,
            poisoned: false,
            zstd: None,
            level: ZSTD_LEVEL,
            comp: Vec::new(),
        })
    }

    /// Compress the payloads at zstd `level` instead of [`ZSTD_LEVEL`] (before the first
    /// chunk; the reader takes any level).
    pub fn with_level(mut self, level: i32) -> Self {
        self.level = level;
        self.zstd = None;
        self
    }

    /// Compresses `raw` (zstd, at the writer's level; a large chunk that does not compress is
    /// stored in raw zstd blocks), writes it as one checksummed frame and flushes. Empty chunks
    /// are allowed.
    pub fn write_chunk(&mut self, kind: ChunkKind, raw: &[u8]) -> Result<(), TraceError> {
        self.write_frame(kind as u8, raw)?;
        self.raw_bytes += raw.len() as u64;
        Ok(())
    }

    /// Number of data chunks written so far.
    pub fn chunks_written(&self) -> u64 {
        self.next_index
    }

    /// Sum of the raw sizes of the data chunks written so far.
    pub fn raw_bytes_written(&self) -> u64 {
        self.raw_bytes
    }

    /// Writes the footer, which marks the trace complete, flushes, and
    /// returns the inner writer. `footer.chunks` and `footer.raw_bytes` are
    /// replaced by the writer's own counts.
    pub fn finish(mut self, footer: &Footer) -> Result<W, TraceError> {
        let mut footer = footer.clone();
        footer.chunks = self.next_index;
        footer.raw_bytes = self.raw_bytes;
        let json = serde_json::to_vec(&footer)
            .map_err(|e| std::io::Error::other(format!("cannot encode the footer: {e}")))?;
        self.write_frame(FOOTER_KIND, &json)?;
        Ok(self.w)
    }

    fn write_frame(&mut self, kind: u8, raw: &[u8]) -> Result<(), TraceError> {
        if self.poisoned {
            return Err(TraceError::WriterPoisoned);
        }
        if raw.len() > MAX_CHUNK_LEN as usize {
            return Err(TraceError::ChunkTooLarge {
                len: raw.len() as u64,
                max: MAX_CHUNK_LEN as u64,
            });
        }
        // One compression context for the whole trace: a fresh one per chunk costs its tables'
        // allocation and first touch every time (about a thousand page faults).
        if self.zstd.is_none() {
            self.zstd = Some(zstd::bulk::Compressor::new(self.level)?);
        }
        let zstd = self.zstd.as_mut().expect("set above");
        let comp = &mut self.comp;
        comp.clear();
        if incompressible(zstd, raw, comp)? {
            comp.clear();
            raw_frame(raw, comp);
        } else {
            comp.clear();
            comp.reserve(zstd::zstd_safe::compress_bound(raw.len()));
            zstd.compress_to_buffer(raw, comp)?;
        }
        if comp.len() > MAX_CHUNK_LEN as usize {
            return Err(TraceError::ChunkTooLarge {
                len: comp.len() as u64,
                max: MAX_CHUNK_LEN as u64,
            });
        }
        let head = FrameHead::new(self.next_index, kind, raw.len() as u32, comp);
        // Poison first: if the write fails half-way, the file ends mid-frame.
        self.poisoned = true;
        self.w.write_all(&head.encode())?;
        self.w.write_all(comp)?;
        self.w.flush()?;
        self.poisoned = false;
        if kind != FOOTER_KIND {
            self.next_index += 1;
        }
        Ok(())
    }
}

/// Bytes of the sample [`incompressible`] compresses, and the smallest chunk it samples.
const SAMPLE: usize = 64 << 10;

/// Whether `raw` is not worth compressing: a large chunk whose first [`SAMPLE`] bytes shrink by
/// less than 3% (a compressor's or an archiver's output, recorded as the program's stdout: zstd
/// spends about 4 instructions a byte to find nothing, on the recorder's CPU, which the
/// program's threads need). `scratch` is the caller's buffer, left with garbage.
fn incompressible(
    zstd: &mut zstd::bulk::Compressor<'static>,
    raw: &[u8],
    scratch: &mut Vec<u8>,
) -> Result<bool, TraceError> {
    if raw.len() < 4 * SAMPLE {
        return Ok(false);
    }
    scratch.reserve(zstd::zstd_safe::compress_bound(SAMPLE));
    let n = zstd.compress_to_buffer(&raw[..SAMPLE], scratch)?;
    Ok(n * 100 > SAMPLE * 97)
}

/// `raw` as one zstd frame of raw (stored) blocks, which every zstd decoder reads (RFC 8878,
/// section 3.1.1): the magic, a single-segment frame header with the 8-byte content size, then
/// blocks of at most 128 KiB, each a 3-byte header (last-block bit, type 0 = raw, size).
fn raw_frame(raw: &[u8], out: &mut Vec<u8>) {
    const MAX_BLOCK: usize = 128 << 10;
    out.reserve(raw.len() + 16 + 3 * (raw.len() / MAX_BLOCK + 1));
    out.extend_from_slice(&0xFD2F_B528u32.to_le_bytes());
    // Frame header descriptor: content size field of 8 bytes (0b11 << 6), single segment
    // (1 << 5: no window descriptor), no checksum, no dictionary.
    out.push(0b1110_0000);
    out.extend_from_slice(&(raw.len() as u64).to_le_bytes());
    let mut blocks = raw.chunks(MAX_BLOCK).peekable();
    if blocks.peek().is_none() {
        out.extend_from_slice(&[1, 0, 0]);
    }
    while let Some(b) = blocks.next() {
        let last = u32::from(blocks.peek().is_none());
        let head = last | ((b.len() as u32) << 3);
        out.extend_from_slice(&head.to_le_bytes()[..3]);
        out.extend_from_slice(b);
    }
}

#[cfg(test)]
mod raw_frame_tests {
    use super::raw_frame;

    #[test]
    fn raw_frames_decode_with_zstd() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for len in [0usize, 1, 5, 128 << 10, (128 << 10) + 1, 3 << 20] {
            let data: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            let mut f = Vec::new();
            raw_frame(&data, &mut f);
            assert_eq!(
                zstd::bulk::decompress(&f, len + 1).unwrap(),
                data,
                "length {len}"
            );
        }
    }
}

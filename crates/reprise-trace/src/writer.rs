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
            comp: Vec::new(),
        })
    }

    /// Compresses `raw` (zstd level 3), writes it as one checksummed frame
    /// and flushes. Empty chunks are allowed.
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
            self.zstd = Some(zstd::bulk::Compressor::new(ZSTD_LEVEL)?);
        }
        let comp = &mut self.comp;
        comp.clear();
        comp.reserve(zstd::zstd_safe::compress_bound(raw.len()));
        self.zstd
            .as_mut()
            .expect("set above")
            .compress_to_buffer(raw, comp)?;
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

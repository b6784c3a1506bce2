//! Reading a trace back, chunk by chunk.

use std::io::{self, BufReader, Read};
use std::path::Path;
use std::sync::Arc;

use crate::format::{
    self, FrameHead, FOOTER_KIND, FRAME_HEAD_LEN, MAX_CHUNK_LEN, MAX_HEADER_LEN,
    PROLOGUE_FIXED_LEN, TRACE_VERSION,
};
use crate::types::Payload;
use crate::{Chunk, ChunkKind, Footer, Header, RawChunk, TraceError};

/// A shared file read through `Read` (the reader's stream, while chunks left in the file read
/// it with `pread`).
struct ArcFile(Arc<std::fs::File>);

impl Read for ArcFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (&*self.0).read(buf)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Reading,
    Done,
    Failed,
}

/// Reads a trace written by [`TraceWriter`](crate::TraceWriter): the header
/// on opening, then one verified, decompressed chunk per
/// [`next_chunk`](Self::next_chunk) call.
///
/// Reading is streaming: memory use is bounded by one chunk, and nothing is
/// allocated for a chunk before its head checksum has been verified.
pub struct TraceReader {
    r: Box<dyn Read>,
    header: Header,
    /// Byte offset of the next frame.
    pos: u64,
    /// Index of the next frame.
    index: u64,
    raw_bytes: u64,
    footer: Option<Footer>,
    state: State,
    /// Compressed size of the chunk last returned, for [`summarize`](crate::summarize).
    pub(crate) last_comp_len: u64,
    /// The file, when opened by path: output chunks may then be left in it.
    file: Option<Arc<std::fs::File>>,
    /// Leave output chunks' payloads in `file` ([`TraceReader::outputs_left_in_file`]).
    lazy_outputs: bool,
    /// The payload of a chunk left in the file, read to check it (reused).
    scratch: Vec<u8>,
}

/// Reads until `buf` is full or the input ends; returns how many bytes were read.
fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Reads up to `len` bytes, growing the buffer only as data arrives.
fn read_up_to(r: &mut dyn Read, len: u32) -> io::Result<Vec<u8>> {
    let mut v = Vec::new();
    r.take(len as u64).read_to_end(&mut v)?;
    Ok(v)
}

fn read_u32(r: &mut dyn Read, at: u64, what: &str) -> Result<u32, TraceError> {
    let mut b = [0u8; 4];
    let n = read_full(r, &mut b)?;
    if n < 4 {
        return Err(TraceError::BadHeader(format!(
            "the file ends at byte {}, inside the {what}",
            at + n as u64
        )));
    }
    Ok(u32::from_le_bytes(b))
}

impl TraceReader {
    /// Opens the trace at `path` and reads its header.
    pub fn open(path: &Path) -> Result<Self, TraceError> {
        let f = Arc::new(std::fs::File::open(path)?);
        let mut r = Self::from_reader(ArcFile(f.clone()))?;
        r.file = Some(f);
        Ok(r)
    }

    /// Leave the payloads of output chunks (stdout, stderr) in the file rather than in memory
    /// ([`next_raw_chunk`](Self::next_raw_chunk); a reader opened by path only): they are
    /// still read and checked as the reader passes them, and read again when decompressed. A
    /// replay keeps the recorded output to compare with as the program writes: for a program
    /// writing megabytes (a compressor's output), holding it in memory cost fresh pages
    /// (about 1600 page faults for 6.5 MB) before the program could start.
    pub fn outputs_left_in_file(mut self) -> Self {
        self.lazy_outputs = self.file.is_some();
        self
    }

    /// Reads a trace from any byte stream (buffered internally) and reads its header.
    pub fn from_reader(r: impl Read + 'static) -> Result<Self, TraceError> {
        let mut r: Box<dyn Read> = Box::new(BufReader::with_capacity(64 << 10, r));
        let header = Self::read_prologue(&mut *r)?;
        let pos = PROLOGUE_FIXED_LEN + header.1 as u64 + 4;
        Ok(TraceReader {
            r,
            header: header.0,
            pos,
            index: 0,
            raw_bytes: 0,
            footer: None,
            state: State::Reading,
            last_comp_len: 0,
            file: None,
            lazy_outputs: false,
            scratch: Vec::new(),
        })
    }

    fn read_prologue(r: &mut dyn Read) -> Result<(Header, u32), TraceError> {
        let mut magic = [0u8; 8];
        let n = read_full(r, &mut magic)?;
        if n < 8 {
            if n > 0 && magic[..n] == format::MAGIC[..n] {
                return Err(TraceError::BadHeader(format!(
                    "the file ends at byte {n}, inside the magic number"
                )));
            }
            return Err(TraceError::NotATrace);
        }
        if &magic != format::MAGIC {
            return Err(TraceError::NotATrace);
        }
        let version = read_u32(r, 8, "format version")?;
        if version != TRACE_VERSION {
            return Err(TraceError::UnsupportedVersion {
                found: version,
                supported: TRACE_VERSION,
            });
        }
        let len = read_u32(r, 12, "header length")?;
        if len > MAX_HEADER_LEN {
            return Err(TraceError::BadHeader(format!(
                "the header claims to be {len} bytes long, more than the limit of {MAX_HEADER_LEN}"
            )));
        }
        let json = read_up_to(r, len)?;
        if json.len() < len as usize {
            return Err(TraceError::BadHeader(format!(
                "the file ends at byte {}, inside the header, which should end at byte {}",
                PROLOGUE_FIXED_LEN + json.len() as u64,
                PROLOGUE_FIXED_LEN + len as u64
            )));
        }
        let crc = read_u32(r, PROLOGUE_FIXED_LEN + len as u64, "header checksum")?;
        if crc != format::header_crc(version, &json) {
            return Err(TraceError::BadHeader(format!(
                "the header (bytes {PROLOGUE_FIXED_LEN} to {}) fails its checksum",
                PROLOGUE_FIXED_LEN + len as u64 + 4
            )));
        }
        let header: Header = serde_json::from_slice(&json)
            .map_err(|e| TraceError::BadHeader(format!("the header is not valid JSON: {e}")))?;
        if header.format_version != TRACE_VERSION {
            return Err(TraceError::BadHeader(format!(
                "the header says format version {} but the file says {TRACE_VERSION}",
                header.format_version
            )));
        }
        Ok((header, len))
    }

    /// The header read on opening.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The footer, once [`next_chunk`](Self::next_chunk) has read it.
    pub fn footer(&self) -> Option<&Footer> {
        self.footer.as_ref()
    }

    /// The next data chunk, verified and decompressed; `Ok(None)` once the
    /// footer has been read. A file that ends cleanly before the footer gives
    /// [`TraceError::MissingFooter`], one that ends inside a chunk
    /// [`TraceError::Truncated`]. After an error every call fails.
    pub fn next_chunk(&mut self) -> Result<Option<Chunk>, TraceError> {
        let r = self
            .next_raw_chunk()
            .and_then(|c| c.map(RawChunk::decompress).transpose());
        if r.is_err() {
            self.state = State::Failed;
        }
        r
    }

    /// The next data chunk, verified (head and payload checksums) but left compressed, as
    /// [`next_chunk`](Self::next_chunk) otherwise (the footer is decompressed and checked).
    pub fn next_raw_chunk(&mut self) -> Result<Option<RawChunk>, TraceError> {
        match self.state {
            State::Done => return Ok(None),
            State::Failed => {
                return Err(TraceError::Corrupt {
                    chunk: self.index,
                    offset: self.pos,
                    why: "was not read because reading stopped at an earlier error".into(),
                })
            }
            State::Reading => {}
        }
        let r = self.read_frame();
        self.state = match &r {
            Ok(Some(_)) => State::Reading,
            Ok(None) => State::Done,
            Err(_) => State::Failed,
        };
        r
    }

    fn read_frame(&mut self) -> Result<Option<RawChunk>, TraceError> {
        let (chunk, offset) = (self.index, self.pos);
        let truncated = TraceError::Truncated { chunk, offset };
        let corrupt = |why: String| TraceError::Corrupt { chunk, offset, why };

        let mut hb = [0u8; FRAME_HEAD_LEN];
        let n = read_full(&mut *self.r, &mut hb)?;
        if n == 0 {
            return Err(TraceError::MissingFooter { chunks: chunk });
        }
        if n < FRAME_HEAD_LEN {
            return Err(truncated);
        }
        let head = FrameHead::decode(&hb);
        if !head.head_ok(chunk) {
            return Err(TraceError::Checksum { chunk, offset });
        }
        if head.comp_len > MAX_CHUNK_LEN || head.raw_len > MAX_CHUNK_LEN {
            return Err(corrupt(format!(
                "declares {} compressed and {} raw bytes, more than the limit of {MAX_CHUNK_LEN}",
                head.comp_len, head.raw_len
            )));
        }
        let kind = if head.kind == FOOTER_KIND {
            None
        } else {
            Some(
                ChunkKind::from_u8(head.kind)
                    .ok_or_else(|| corrupt(format!("has unknown kind {:#04x}", head.kind)))?,
            )
        };
        let left_in_file = match (&self.file, kind) {
            (Some(f), Some(ChunkKind::Stdout | ChunkKind::Stderr)) if self.lazy_outputs => {
                Some(f.clone())
            }
            _ => None,
        };
        // The head passed its checksum: its length is the writer's, so the buffer is sized at
        // once (growing it as the bytes came copied a large chunk several times over).
        let mut comp = if left_in_file.is_some() {
            std::mem::take(&mut self.scratch)
        } else {
            Vec::with_capacity(head.comp_len as usize)
        };
        comp.clear();
        (&mut *self.r)
            .take(head.comp_len as u64)
            .read_to_end(&mut comp)?;
        if comp.len() < head.comp_len as usize {
            return Err(truncated);
        }
        if crc32fast::hash(&comp) != head.data_crc {
            return Err(TraceError::Checksum { chunk, offset });
        }
        self.pos += (FRAME_HEAD_LEN + comp.len()) as u64;
        self.last_comp_len = comp.len() as u64;
        let Some(kind) = kind else {
            return self
                .footer_frame(chunk, offset, &comp, head.raw_len)
                .map(|()| None);
        };
        let comp = match left_in_file {
            Some(file) => {
                self.scratch = comp;
                Payload::InFile {
                    file,
                    at: offset + FRAME_HEAD_LEN as u64,
                    len: head.comp_len,
                    crc: head.data_crc,
                }
            }
            None => Payload::Here(comp),
        };
        self.index += 1;
        self.raw_bytes += head.raw_len as u64;
        Ok(Some(RawChunk {
            index: chunk,
            offset,
            kind,
            raw_len: head.raw_len,
            comp,
        }))
    }

    /// The footer frame's payload `comp`, of `raw_len` bytes decompressed, read and checked.
    fn footer_frame(
        &mut self,
        chunk: u64,
        offset: u64,
        comp: &[u8],
        raw_len: u32,
    ) -> Result<(), TraceError> {
        let corrupt = |why: String| TraceError::Corrupt { chunk, offset, why };
        let data = zstd::bulk::decompress(comp, raw_len as usize)
            .map_err(|e| corrupt(format!("does not decompress: {e}")))?;
        if data.len() != raw_len as usize {
            return Err(corrupt(format!(
                "decompresses to {} bytes instead of the declared {raw_len}",
                data.len()
            )));
        }
        self.read_footer(chunk, offset, &data)
    }

    /// The footer frame (chunk `chunk` at byte `offset`, decompressed `data`): it counts the
    /// chunks and bytes before it, and nothing follows it.
    fn read_footer(&mut self, chunk: u64, offset: u64, data: &[u8]) -> Result<(), TraceError> {
        let corrupt = |why: String| TraceError::Corrupt { chunk, offset, why };
        let footer: Footer = serde_json::from_slice(data)
            .map_err(|e| corrupt(format!("holds a footer that is not valid JSON: {e}")))?;
        if footer.chunks != chunk || footer.raw_bytes != self.raw_bytes {
            return Err(corrupt(format!(
                "holds a footer that counts {} chunks and {} raw bytes, but the trace has {} chunks and {} raw bytes",
                footer.chunks, footer.raw_bytes, chunk, self.raw_bytes
            )));
        }
        let mut extra = [0u8; 1];
        if read_full(&mut *self.r, &mut extra)? != 0 {
            return Err(TraceError::Corrupt {
                chunk: chunk + 1,
                offset: self.pos,
                why: "follows the footer, but nothing may come after the footer".into(),
            });
        }
        self.footer = Some(footer);
        Ok(())
    }

    /// Reads what a recorder that was killed left: every remaining intact chunk, and the
    /// footer if there is one. A file that ends without a footer, or inside its last frame
    /// (a torn tail: the recorder died while writing it, the frame is ignored), is accepted;
    /// a frame that fails its checksum or makes no sense is an error wherever it is (the
    /// writer appends whole frames, so only the last one can be torn, and a torn frame is
    /// short, never wrong).
    pub fn read_salvaged(mut self) -> Result<(Header, Vec<Chunk>, Option<Footer>), TraceError> {
        let mut chunks = Vec::new();
        loop {
            match self.next_chunk() {
                Ok(Some(c)) => chunks.push(c),
                Ok(None) => break,
                Err(TraceError::MissingFooter { .. } | TraceError::Truncated { .. }) => break,
                Err(e) => return Err(e),
            }
        }
        Ok((self.header, chunks, self.footer))
    }

    /// [`read_salvaged`](Self::read_salvaged), the chunks left compressed
    /// ([`RawChunk::decompress`]): a damaged payload that passes its checksum is found only
    /// when it is decompressed.
    pub fn read_salvaged_raw(
        mut self,
    ) -> Result<(Header, Vec<RawChunk>, Option<Footer>), TraceError> {
        let mut chunks = Vec::new();
        loop {
            match self.next_raw_chunk() {
                Ok(Some(c)) => chunks.push(c),
                Ok(None) => break,
                Err(TraceError::MissingFooter { .. } | TraceError::Truncated { .. }) => break,
                Err(e) => return Err(e),
            }
        }
        Ok((self.header, chunks, self.footer))
    }

    /// Reads every remaining chunk and the footer. Fails on the first damaged
    /// chunk, or with [`TraceError::MissingFooter`] if the trace has no footer.
    pub fn read_all(mut self) -> Result<(Header, Vec<Chunk>, Footer), TraceError> {
        let mut chunks = Vec::new();
        while let Some(c) = self.next_chunk()? {
            chunks.push(c);
        }
        match self.footer {
            Some(f) => Ok((self.header, chunks, f)),
            None => Err(TraceError::MissingFooter { chunks: self.index }),
        }
    }
}

//! The values stored in a trace: header, chunk kinds, footer.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What a trace records about the run, written once at the start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Header {
    /// Format version; the writer sets it to [`TRACE_VERSION`](crate::TRACE_VERSION).
    pub format_version: u32,
    /// Version of the runtime that recorded the trace.
    pub runtime_version: String,
    /// Name of the scheduling strategy used while recording.
    pub strategy: String,
    /// Path of the recorded executable, raw OS bytes.
    pub exe_path: Vec<u8>,
    /// Hash of the executable, hex.
    pub exe_hash: String,
    /// Arguments, raw OS bytes, argv\[0\] first.
    pub argv: Vec<Vec<u8>>,
    /// Environment as `K=V` raw bytes, in order.
    pub env: Vec<Vec<u8>>,
    /// Working directory, raw OS bytes.
    pub cwd: Vec<u8>,
    /// `RLIMIT_STACK` as (soft, hard).
    pub rlimit_stack: (u64, u64),
    /// Number of lock stripes the runtime used.
    pub stripes: u32,
    /// Events between checkpoints.
    pub checkpoint_interval: u64,
    /// Seconds since the Unix epoch when recording started.
    pub created_unix: u64,
    /// Free-form extra facts, kept in key order.
    pub extra: BTreeMap<String, String>,
    /// The program's shared libraries as its dynamic loader found them (raw path bytes,
    /// relative ones to `cwd`) with their content hashes; None when they could not be
    /// listed (or the trace predates the list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub libs: Option<Vec<(Vec<u8>, String)>>,
}

/// What a data chunk holds.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChunkKind {
    /// Encoded runtime events.
    Events = 1,
    /// Bytes the program wrote to standard output.
    Stdout = 2,
    /// Bytes the program wrote to standard error.
    Stderr = 3,
}

impl ChunkKind {
    /// All kinds, in byte order.
    pub const ALL: [ChunkKind; 3] = [ChunkKind::Events, ChunkKind::Stdout, ChunkKind::Stderr];

    /// The kind with this byte value, if any.
    pub fn from_u8(b: u8) -> Option<ChunkKind> {
        match b {
            1 => Some(ChunkKind::Events),
            2 => Some(ChunkKind::Stdout),
            3 => Some(ChunkKind::Stderr),
            _ => None,
        }
    }

    /// Lower-case name, as shown by `reprise info`.
    pub fn name(self) -> &'static str {
        match self {
            ChunkKind::Events => "events",
            ChunkKind::Stdout => "stdout",
            ChunkKind::Stderr => "stderr",
        }
    }
}

/// How the recorded program ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Exit {
    /// It exited with this status code.
    Exited(i32),
    /// It was killed by this signal number.
    Signaled(i32),
}

impl Exit {
    /// The status a shell would report: the exit code, or 128 + signal.
    pub fn shell_status(&self) -> i32 {
        match *self {
            Exit::Exited(c) => c,
            Exit::Signaled(s) => 128i32.saturating_add(s),
        }
    }
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Exited(c) => write!(f, "exited with status {c}"),
            Exit::Signaled(s) => write!(f, "killed by signal {s}"),
        }
    }
}

/// Written last; its presence marks a complete trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Footer {
    /// How the program ended.
    pub exit: Exit,
    /// Wall-clock duration of the recording, nanoseconds.
    pub wall_ns: u64,
    /// Number of data chunks in the trace (set by the writer).
    pub chunks: u64,
    /// Sum of the raw (decompressed) sizes of all data chunks (set by the writer).
    pub raw_bytes: u64,
    /// The recorder found the program deadlocked and ended it: its report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadlock: Option<String>,
    /// Shared libraries the program loaded itself (`dlopen`) after start, as absolute raw
    /// paths, with their content hashes when the recorder could read them (empty otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dlopened: Vec<(Vec<u8>, String)>,
}

/// One data chunk as read back.
#[derive(Debug, Clone, PartialEq)]
pub struct Chunk {
    /// Position of the chunk in the file, from 0.
    pub index: u64,
    /// Byte offset of the chunk's frame in the file.
    pub offset: u64,
    /// What the chunk holds.
    pub kind: ChunkKind,
    /// The decompressed payload.
    pub data: Vec<u8>,
}

/// One data chunk as read and checked (its head and payload checksums), not yet
/// decompressed: [`TraceReader::next_raw_chunk`](crate::TraceReader::next_raw_chunk) gives
/// it, [`RawChunk::decompress`] gives its payload when it is needed (a replay keeps the
/// recorded output compressed and decompresses it piece by piece as it compares). The
/// payload is in memory, or left in the file
/// ([`TraceReader::outputs_left_in_file`](crate::TraceReader::outputs_left_in_file)).
#[derive(Debug, Clone)]
pub struct RawChunk {
    /// Position of the chunk in the file, from 0.
    pub index: u64,
    /// Byte offset of the chunk's frame in the file.
    pub offset: u64,
    /// What the chunk holds.
    pub kind: ChunkKind,
    /// The payload's length once decompressed (declared by the head, checked by
    /// [`RawChunk::decompress`]).
    pub raw_len: u32,
    /// The zstd frame as stored.
    pub(crate) comp: Payload,
}

/// Where a [`RawChunk`]'s compressed payload is.
#[derive(Debug, Clone)]
pub(crate) enum Payload {
    /// Read into memory.
    Here(Vec<u8>),
    /// Left in the trace file, at byte `at`, `len` bytes whose CRC-32 is `crc` (checked when
    /// it was read past, and again when it is read back: the file may have changed since).
    InFile {
        file: std::sync::Arc<std::fs::File>,
        at: u64,
        len: u32,
        crc: u32,
    },
}

impl RawChunk {
    /// Bytes the chunk takes on disk (its payload, compressed).
    pub fn comp_len(&self) -> usize {
        match &self.comp {
            Payload::Here(v) => v.len(),
            Payload::InFile { len, .. } => *len as usize,
        }
    }

    /// The decompressed payload, appended to `out` (cleared first), with `dec` (a
    /// decompression context, reused across chunks). Fails, naming the chunk, if the payload
    /// does not decompress to its declared length.
    pub fn decompress_into(
        &self,
        dec: &mut zstd::bulk::Decompressor<'_>,
        out: &mut Vec<u8>,
    ) -> Result<(), crate::TraceError> {
        let corrupt = |why: String| crate::TraceError::Corrupt {
            chunk: self.index,
            offset: self.offset,
            why,
        };
        let read_back;
        let comp = match &self.comp {
            Payload::Here(v) => v,
            Payload::InFile { file, at, len, crc } => {
                let mut b = vec![0u8; *len as usize];
                std::os::unix::fs::FileExt::read_exact_at(&**file, &mut b, *at).map_err(|e| {
                    corrupt(format!("cannot be read back from the trace file: {e}"))
                })?;
                if crc32fast::hash(&b) != *crc {
                    return Err(crate::TraceError::Checksum {
                        chunk: self.index,
                        offset: self.offset,
                    });
                }
                read_back = b;
                &read_back
            }
        };
        out.clear();
        out.reserve(self.raw_len as usize);
        let n = dec
            .decompress_to_buffer(comp, out)
            .map_err(|e| corrupt(format!("does not decompress: {e}")))?;
        if n != self.raw_len as usize {
            return Err(corrupt(format!(
                "decompresses to {n} bytes instead of the declared {}",
                self.raw_len
            )));
        }
        Ok(())
    }

    /// The decompressed payload as a [`Chunk`].
    pub fn decompress(self) -> Result<Chunk, crate::TraceError> {
        let mut dec = zstd::bulk::Decompressor::new()?;
        let mut data = Vec::new();
        self.decompress_into(&mut dec, &mut data)?;
        Ok(Chunk {
            index: self.index,
            offset: self.offset,
            kind: self.kind,
            data,
        })
    }
}

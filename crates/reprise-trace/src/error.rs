//! The one error type of this crate.

/// Everything that can go wrong writing or reading a trace.
///
/// `chunk` is the frame's position in the file (the footer counts as the
/// frame after the last data chunk) and `offset` the byte offset of the start
/// of that frame.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The operating system failed a read or write.
    #[error("I/O error on the trace file: {0}")]
    Io(#[from] std::io::Error),
    /// The file does not start with [`MAGIC`](crate::MAGIC).
    #[error("not a reprise trace: the file does not start with the REPRISE magic bytes")]
    NotATrace,
    /// The trace was written in a format version this build cannot read.
    #[error(
        "trace format version {found} is not supported: this build reads version {supported} only"
    )]
    UnsupportedVersion {
        /// Version found in the file.
        found: u32,
        /// Version this build reads and writes.
        supported: u32,
    },
    /// The header is damaged, cut short or not valid JSON.
    #[error("the trace header is unreadable: {0}")]
    BadHeader(String),
    /// The file ends in the middle of a chunk.
    #[error("trace is truncated: chunk {chunk} at byte {offset} ends early")]
    Truncated {
        /// Index of the chunk that is cut short.
        chunk: u64,
        /// Byte offset where that chunk starts.
        offset: u64,
    },
    /// A chunk's checksum does not match its bytes.
    #[error("trace is corrupt: chunk {chunk} at byte {offset} fails its checksum")]
    Checksum {
        /// Index of the damaged chunk.
        chunk: u64,
        /// Byte offset where that chunk starts.
        offset: u64,
    },
    /// A chunk passed its checksum but its contents make no sense.
    #[error("trace is corrupt: chunk {chunk} at byte {offset} {why}")]
    Corrupt {
        /// Index of the bad chunk.
        chunk: u64,
        /// Byte offset where that chunk starts.
        offset: u64,
        /// What is wrong with it, phrased to follow "chunk N at byte M".
        why: String,
    },
    /// The file ends cleanly between chunks but has no footer: the recording
    /// was interrupted.
    #[error("trace is incomplete: it ends after {chunks} intact chunks without a footer, so the recording was interrupted")]
    MissingFooter {
        /// Number of intact data chunks before the end of the file.
        chunks: u64,
    },
    /// The writer was asked to store a chunk larger than
    /// [`MAX_CHUNK_LEN`](crate::MAX_CHUNK_LEN).
    #[error("cannot write a chunk of {len} bytes: the limit is {max} bytes per chunk")]
    ChunkTooLarge {
        /// Size of the rejected chunk (raw or compressed).
        len: u64,
        /// The limit.
        max: u64,
    },
    /// The writer failed earlier and the file may end mid-chunk; it accepts
    /// no more writes.
    #[error("the trace writer failed earlier and accepts no more chunks")]
    WriterPoisoned,
}

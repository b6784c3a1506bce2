//! The reprise trace file: everything a recording leaves on disk, as bytes.
//!
//! A trace is a [`Header`] (what was run, and how), a sequence of [`Chunk`]s
//! (opaque event bytes, or the program's stdout/stderr, each a [`ChunkKind`])
//! and a [`Footer`] (how the program ended, and counts that cross-check the
//! chunks). [`TraceWriter`] produces one, [`TraceReader`] streams it back, and
//! [`summarize`] reports how much of a possibly damaged file is intact, as a
//! [`Summary`] that prints for `reprise info`. Every failure is a
//! [`TraceError`] naming the chunk and byte offset concerned.
//!
//! Design decision: each chunk is compressed and checksummed on its own, and
//! its head (kind and lengths) carries a separate checksum that also covers
//! the chunk's index. So a recorder that dies loses only the chunk it was
//! writing, a reader can trust a length before allocating for it, and any
//! damaged byte is reported as a checksum failure in the right chunk rather
//! than as truncation or garbage. The footer's presence is what makes a trace
//! complete.
//!
//! This crate does not know what the event bytes mean, nor anything of
//! threads or the runtime; it does not fsync, seek, index or repair traces.
//! The byte layout is documented in [`format`](mod@format).
#![deny(missing_docs)]

pub mod format;

mod error;
mod reader;
mod summary;
mod types;
mod writer;

pub use error::TraceError;
pub use format::{
    MAGIC, MAX_CHUNK_LEN, MAX_HEADER_LEN, TRACE_VERSION, ZSTD_LEVEL, ZSTD_LEVEL_FAST,
};
pub use reader::TraceReader;
pub use summary::{summarize, Summary};
pub use types::{Chunk, ChunkKind, Exit, Footer, Header, RawChunk};
pub use writer::TraceWriter;

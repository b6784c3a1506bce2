//! How much of a trace is intact, for `reprise info`.

use std::fmt;
use std::path::Path;

use crate::{ChunkKind, Footer, Header, TraceError, TraceReader};

/// What [`summarize`] found in a trace file.
#[derive(Debug)]
pub struct Summary {
    /// The header (a summary exists only if the header is intact).
    pub header: Header,
    /// Number of data chunks that were read and verified.
    pub chunks_ok: u64,
    /// Per kind, in the order events, stdout, stderr: (kind, compressed bytes, raw bytes) of the intact chunks.
    pub bytes_by_kind: [(ChunkKind, u64, u64); 3],
    /// The footer, if the trace is complete.
    pub footer: Option<Footer>,
    /// The first error met after the header, if any.
    pub error: Option<TraceError>,
    /// Size of the file in bytes.
    pub file_size: u64,
}

impl Summary {
    /// Whether the trace was read to its footer without error.
    pub fn is_complete(&self) -> bool {
        self.footer.is_some() && self.error.is_none()
    }

    /// Whether the trace is what a recorder killed while recording leaves: intact chunks
    /// up to where the file ends, without a footer, the last frame perhaps torn
    /// ([`TraceReader::read_salvaged`] reads it).
    pub fn is_interrupted(&self) -> bool {
        self.footer.is_none()
            && matches!(
                self.error,
                None | Some(TraceError::MissingFooter { .. } | TraceError::Truncated { .. })
            )
    }
}

/// Reads the whole trace at `path` and reports what is intact. Fails only if
/// the file cannot be opened or its header is unreadable; any later damage is
/// reported in [`Summary::error`].
pub fn summarize(path: &Path) -> Result<Summary, TraceError> {
    let file_size = std::fs::metadata(path)?.len();
    let mut reader = TraceReader::open(path)?;
    let mut bytes_by_kind = ChunkKind::ALL.map(|k| (k, 0u64, 0u64));
    let mut chunks_ok = 0;
    let mut error = None;
    loop {
        match reader.next_chunk() {
            Ok(Some(c)) => {
                chunks_ok += 1;
                let slot = &mut bytes_by_kind[c.kind as usize - 1];
                slot.1 += reader.last_comp_len;
                slot.2 += c.data.len() as u64;
            }
            Ok(None) => break,
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    let footer = reader.footer().cloned();
    Ok(Summary {
        header: reader.header().clone(),
        chunks_ok,
        bytes_by_kind,
        footer,
        error,
        file_size,
    })
}

fn lossy(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = &self.header;
        writeln!(
            f,
            "format:      reprise trace version {}, {} bytes",
            h.format_version, self.file_size
        )?;
        writeln!(
            f,
            "recorded by: runtime {}, strategy {}, {} stripes, checkpoint every {}",
            h.runtime_version, h.strategy, h.stripes, h.checkpoint_interval
        )?;
        writeln!(f, "created:     {} (unix seconds)", h.created_unix)?;
        writeln!(
            f,
            "program:     {} (hash {})",
            lossy(&h.exe_path),
            h.exe_hash
        )?;
        match &h.libs {
            Some(libs) => {
                for (l, hash) in libs {
                    writeln!(f, "library:     {} (hash {hash})", lossy(l))?;
                }
            }
            None => writeln!(f, "libraries:   not listed (cannot be checked)")?,
        }
        let argv: Vec<_> = h.argv.iter().map(|a| lossy(a).into_owned()).collect();
        writeln!(f, "argv:        {:?}", argv)?;
        writeln!(f, "cwd:         {}", lossy(&h.cwd))?;
        writeln!(
            f,
            "environment: {} variables; stack limit {}/{}",
            h.env.len(),
            h.rlimit_stack.0,
            h.rlimit_stack.1
        )?;
        for (k, v) in &h.extra {
            writeln!(f, "extra:       {k} = {v}")?;
        }
        writeln!(f, "chunks:      {} intact", self.chunks_ok)?;
        for (kind, comp, raw) in &self.bytes_by_kind {
            writeln!(f, "  {:<7}    {raw} bytes, {comp} compressed", kind.name())?;
        }
        match &self.footer {
            Some(ft) => writeln!(
                f,
                "exit:        {} (shell status {}) after {:.3} s",
                ft.exit,
                ft.exit.shell_status(),
                ft.wall_ns as f64 / 1e9
            )?,
            None => writeln!(f, "exit:        unknown, the trace has no footer")?,
        }
        for (l, hash) in self.footer.iter().flat_map(|ft| &ft.dlopened) {
            let hash = if hash.is_empty() { "unreadable" } else { hash };
            writeln!(f, "dlopened:    {} (hash {hash})", lossy(l))?;
        }
        match &self.error {
            None if self.footer.is_some() => write!(f, "status:      complete"),
            None => write!(f, "status:      incomplete"),
            Some(e @ TraceError::Truncated { .. }) => write!(
                f,
                "status:      interrupted: {e} (a torn last frame, ignored: the recorder was killed while writing it); the intact chunks before it replay to where they end"
            ),
            Some(e @ TraceError::MissingFooter { .. }) => write!(
                f,
                "status:      interrupted: {e}; the intact chunks replay to where they end"
            ),
            Some(e) => write!(f, "status:      damaged: {e}"),
        }
    }
}

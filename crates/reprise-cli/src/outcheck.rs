//! The recorded output of a trace, kept compressed as stored, and a replay's output compared
//! with it piece by piece as the replay produces it: a replay starts without decompressing the
//! recorded output first, and holds neither stream whole (only one decompressed chunk).

use crate::verify::StreamMatch;
use reprise_trace::{RawChunk, TraceError};

/// One output stream (stdout or stderr) of a trace: its chunks, compressed.
#[derive(Default)]
pub struct RecordedOutput {
    chunks: Vec<RawChunk>,
    len: u64,
}

impl RecordedOutput {
    /// Append the next chunk of this stream.
    pub fn push(&mut self, c: RawChunk) {
        self.len += c.raw_len as u64;
        self.chunks.push(c);
    }

    /// Bytes in the stream.
    pub fn len(&self) -> u64 {
        self.len
    }
}

/// A replay's output stream compared with the recorded one as it comes ([`OutputCheck::feed`]).
pub struct OutputCheck<'a> {
    rec: &'a RecordedOutput,
    /// The next recorded chunk to decompress.
    next: usize,
    /// The recorded chunk being compared, decompressed, and how far it was compared.
    cur: Vec<u8>,
    at: usize,
    dec: Option<zstd::bulk::Decompressor<'static>>,
    /// Bytes the replay produced, and the first position where they differ from the
    /// recording (None while they agree, as far as both go).
    replayed: u64,
    first_diff: Option<u64>,
    /// A recorded chunk that does not decompress (a damaged trace).
    damaged: Option<TraceError>,
    /// The replay's bytes, when asked to keep them ([`OutputCheck::keeping`]).
    kept: Option<Vec<u8>>,
    /// The replay's bytes since the last newline of the part that agrees with the recording
    /// (None past [`LINE_MAX`]), then from the first difference on, its lines in any order
    /// (`lines`), and where in the stream those start (`lines_from`): the two streams are
    /// compared line by line, in any order, only once they differ.
    line: Option<Vec<u8>>,
    lines: Lines,
    lines_from: u64,
}

/// The longest line kept while the streams agree (longer: no line-order verdict).
const LINE_MAX: usize = 64 * 1024;

/// A digest of a stream's lines that does not depend on their order: the sum of the lines'
/// hashes (the last one may lack its newline), and their count.
#[derive(Default, Clone, Copy, PartialEq, Eq, Debug)]
struct Lines {
    sum: u64,
    count: u64,
    /// The hash of the line so far, and whether it has any byte.
    cur: u64,
    open: bool,
}

impl Lines {
    const SEED: u64 = 0xcbf2_9ce4_8422_2325;

    fn feed(&mut self, b: &[u8]) {
        for &c in b {
            if !self.open {
                self.cur = Self::SEED;
                self.open = true;
            }
            self.cur = (self.cur ^ u64::from(c)).wrapping_mul(0x0100_0000_01b3);
            if c == b'\n' {
                self.end_line();
            }
        }
    }

    fn end_line(&mut self) {
        if self.open {
            // Mixed, so that equal sums of different lines are unlikely.
            let h = (self.cur ^ (self.cur >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            self.sum = self.sum.wrapping_add(h ^ (h >> 32));
            self.count += 1;
            // A closed line leaves no trace but in the sum (digests compare whole).
            self.cur = 0;
            self.open = false;
        }
    }

    /// The digest once the stream ended.
    fn finished(mut self) -> Lines {
        self.end_line();
        self
    }
}

impl<'a> OutputCheck<'a> {
    /// A comparison with `rec` that keeps only the verdict.
    pub fn new(rec: &'a RecordedOutput) -> OutputCheck<'a> {
        OutputCheck {
            rec,
            next: 0,
            cur: Vec::new(),
            at: 0,
            dec: None,
            replayed: 0,
            first_diff: None,
            damaged: None,
            kept: None,
            line: Some(Vec::new()),
            lines: Lines::default(),
            lines_from: 0,
        }
    }

    /// A comparison with `rec` that also keeps the replay's bytes ([`OutputCheck::kept`]).
    pub fn keeping(rec: &'a RecordedOutput) -> OutputCheck<'a> {
        OutputCheck {
            kept: Some(Vec::new()),
            ..OutputCheck::new(rec)
        }
    }

    /// The next recorded chunk, decompressed into `cur`; false when the recording has no more
    /// (or a chunk is damaged, kept in `damaged`).
    fn refill(&mut self) -> bool {
        while self.at == self.cur.len() {
            let Some(c) = self.rec.chunks.get(self.next) else {
                return false;
            };
            self.next += 1;
            let dec = match &mut self.dec {
                Some(d) => d,
                None => match zstd::bulk::Decompressor::new() {
                    Ok(d) => self.dec.insert(d),
                    Err(e) => {
                        self.damaged = Some(e.into());
                        return false;
                    }
                },
            };
            if let Err(e) = c.decompress_into(dec, &mut self.cur) {
                self.damaged = Some(e);
                self.cur.clear();
                return false;
            }
            self.at = 0;
        }
        true
    }

    /// The replay produced `b` next.
    pub fn feed(&mut self, mut b: &[u8]) {
        if let Some(k) = &mut self.kept {
            k.extend_from_slice(b);
        }
        if self.first_diff.is_some() {
            self.lines.feed(b);
        }
        while self.first_diff.is_none() && self.damaged.is_none() && !b.is_empty() {
            if !self.refill() {
                break;
            }
            let n = b.len().min(self.cur.len() - self.at);
            let (want, got) = (&self.cur[self.at..self.at + n], &b[..n]);
            // One vectorised compare of the piece; the byte only when they differ.
            let same = if want == got {
                n
            } else {
                want.iter().zip(got).position(|(x, y)| x != y).unwrap_or(0)
            };
            self.agreed_line(&got[..same]);
            if same < n {
                let d = self.replayed + same as u64;
                self.first_diff = Some(d);
                if let Some(line) = &self.line {
                    self.lines_from = d - line.len() as u64;
                    self.lines.feed(line);
                }
                self.lines.feed(&b[same..]);
            }
            self.at += n;
            self.replayed += n as u64;
            b = &b[n..];
        }
        self.replayed += b.len() as u64;
    }

    /// Keep the replay's bytes since the last newline of `agreed` (bytes equal to the
    /// recording's), for [`OutputCheck::verdict`]'s line-order check.
    fn agreed_line(&mut self, agreed: &[u8]) {
        let Some(line) = &mut self.line else {
            return;
        };
        let tail = match memchr::memrchr(b'\n', agreed) {
            Some(nl) => {
                line.clear();
                &agreed[nl + 1..]
            }
            None => agreed,
        };
        if line.len() + tail.len() > LINE_MAX {
            self.line = None;
        } else {
            line.extend_from_slice(tail);
        }
    }

    /// How the replay's stream compared with the recorded one so far; Err when a recorded
    /// chunk it reached is damaged.
    pub fn verdict(&self) -> Result<StreamMatch, &TraceError> {
        if let Some(e) = &self.damaged {
            return Err(e);
        }
        Ok(StreamMatch {
            recorded: self.rec.len,
            replayed: self.replayed,
            first_diff: self.first_diff,
            reordered: self.first_diff.is_some()
                && self.line.is_some()
                && self.replayed == self.rec.len
                && self.recorded_lines() == Some(self.lines.finished()),
        })
    }

    /// The recorded stream's lines from `lines_from` on (read again, only for a replay whose
    /// stream differs), or None when a chunk does not decompress.
    fn recorded_lines(&self) -> Option<Lines> {
        let mut dec = zstd::bulk::Decompressor::new().ok()?;
        let mut buf = Vec::new();
        let mut lines = Lines::default();
        let mut at = 0u64;
        for c in &self.rec.chunks {
            c.decompress_into(&mut dec, &mut buf).ok()?;
            let skip = self.lines_from.saturating_sub(at).min(buf.len() as u64) as usize;
            lines.feed(&buf[skip..]);
            at += buf.len() as u64;
        }
        Some(lines.finished())
    }

    /// The replay's bytes, when kept.
    pub fn kept(&self) -> &[u8] {
        self.kept.as_deref().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reprise_trace::{ChunkKind, Exit, Footer, Header, TraceReader, TraceWriter};

    /// A stream recorded as the chunks `pieces`, read back compressed.
    fn recorded(pieces: &[&[u8]]) -> RecordedOutput {
        let mut w = TraceWriter::new(Vec::new(), &Header::default()).unwrap();
        for p in pieces {
            w.write_chunk(ChunkKind::Stdout, p).unwrap();
        }
        let footer = Footer {
            exit: Exit::Exited(0),
            wall_ns: 0,
            chunks: 0,
            raw_bytes: 0,
            deadlock: None,
            dlopened: Vec::new(),
        };
        let bytes = w.finish(&footer).unwrap();
        let r = TraceReader::from_reader(std::io::Cursor::new(bytes)).unwrap();
        let mut out = RecordedOutput::default();
        for c in r.read_salvaged_raw().unwrap().1 {
            out.push(c);
        }
        out
    }

    /// `rec` compared with the replay's `fed` pieces.
    fn check(rec: &RecordedOutput, fed: &[&[u8]]) -> StreamMatch {
        let mut c = OutputCheck::keeping(rec);
        for f in fed {
            c.feed(f);
        }
        assert_eq!(c.kept(), fed.concat());
        c.verdict().unwrap()
    }

    #[test]
    fn equal_streams_in_other_pieces_agree() {
        let rec = recorded(&[b"hello ", b"", b"world", b"!\n"]);
        assert_eq!(rec.len(), 13);
        let m = check(&rec, &[b"he", b"llo wo", b"rld!", b"\n"]);
        assert!(m.equal() && m.replay_is_prefix());
        assert_eq!((m.recorded, m.replayed, m.first_diff), (13, 13, None));
    }

    #[test]
    fn a_difference_is_placed_and_the_lengths_counted() {
        let rec = recorded(&[b"hello ", b"world\n"]);
        let m = check(&rec, &[b"hello w", b"Orld\n", b"more"]);
        assert_eq!((m.recorded, m.replayed, m.first_diff), (12, 16, Some(7)));
        assert!(!m.equal() && !m.agrees_so_far());
        assert_eq!(m.diff_at(), 7);
    }

    #[test]
    fn shorter_and_longer_replays_are_prefixes_not_equal() {
        let rec = recorded(&[b"abc", b"def"]);
        let short = check(&rec, &[b"abcd"]);
        assert!(!short.equal() && short.replay_is_prefix() && short.agrees_so_far());
        assert_eq!(short.diff_at(), 4);
        let long = check(&rec, &[b"abcdefg"]);
        assert!(!long.equal() && !long.replay_is_prefix() && long.agrees_so_far());
        assert_eq!(long.diff_at(), 6);
        let none = check(&recorded(&[]), &[]);
        assert!(none.equal());
    }

    #[test]
    fn the_same_lines_in_another_order_are_told_apart() {
        let rec = recorded(&[b"built f1.o\nbuil", b"t f2.o\nlinked\n"]);
        let swapped = check(&rec, &[b"built f2.o\n", b"built f1.o\nlinked\n"]);
        assert!(!swapped.equal() && swapped.reordered);
        assert_eq!(swapped.diff_at(), 7);
        // Another line, or one line twice, is not a reordering.
        let other = check(&rec, &[b"built f3.o\nbuilt f1.o\nlinked\n"]);
        assert!(!other.equal() && !other.reordered);
        let twice = check(&rec, &[b"built f1.o\nbuilt f1.o\nlinked\n"]);
        assert!(!twice.reordered);
        assert!(!check(&rec, &[b"built f1.o\nbuilt f2.o\nlinked\n"]).reordered);
        // A difference late in a line that began in an earlier piece and chunk.
        let rec = recorded(&[b"aa\nxy", b"z1\nxyz2\n"]);
        let late = check(&rec, &[b"aa\nx", b"yz2\nxyz1\n"]);
        assert!(late.reordered);
        assert_eq!(late.diff_at(), 6);
        assert!(!check(&rec, &[b"aa\nx", b"yz2\nxyz3\n"]).reordered);
    }
}

//! Encoding and decoding frames. Decoding (launcher side) allocates and never panics on input;
//! [`encode_end`] is the runtime's, without allocation.

use crate::config::ProcessEnd;
#[cfg(feature = "std")]
use crate::config::{Pair, VecEntry};
#[cfg(feature = "std")]
use crate::fds::{MAX_THREADS, STRIPES};
#[cfg(feature = "std")]
use crate::frame::*;

/// Errors decoding the channel.
#[cfg(feature = "std")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub String);

#[cfg(feature = "std")]
impl core::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.0)
    }
}
#[cfg(feature = "std")]
impl std::error::Error for DecodeError {}

#[cfg(feature = "std")]
fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}
#[cfg(feature = "std")]
fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}

/// Split a byte stream into frames. Returns the frames and the number of bytes consumed (a
/// trailing partial frame is left for the next call).
#[cfg(feature = "std")]
pub fn decode_frames(buf: &[u8]) -> Result<(Vec<Frame>, usize), DecodeError> {
    let mut out = Vec::new();
    let used = decode_frames_each(buf, |f| out.push(f))?;
    Ok((out, used))
}

/// [`decode_frames`], handing each frame to `each` as it is decoded (a replay of a long
/// recording never holds its whole event stream decoded twice); the bytes used.
#[cfg(feature = "std")]
pub fn decode_frames_each(buf: &[u8], mut each: impl FnMut(Frame)) -> Result<usize, DecodeError> {
    let mut pos = 0;
    while buf.len() - pos >= 4 {
        let len = u32_at(buf, pos) as usize;
        if len == 0 || len > (64 << 20) {
            return Err(DecodeError(format!("bad frame length {len} at byte {pos}")));
        }
        if buf.len() - pos - 4 < len {
            break;
        }
        let tag = buf[pos + 4];
        let p = &buf[pos + 5..pos + 4 + len];
        each(
            decode_frame(tag, p)
                .map_err(|e| DecodeError(format!("{} (frame at byte {pos})", e.0)))?,
        );
        pos += 4 + len;
    }
    Ok(pos)
}

#[cfg(feature = "std")]
fn decode_frame(tag: u8, p: &[u8]) -> Result<Frame, DecodeError> {
    let short = || {
        DecodeError(format!(
            "frame of tag {tag} is too short ({} bytes)",
            p.len()
        ))
    };
    match tag {
        F_STRIPE => decode_stripe(p).ok_or_else(short)?,
        F_THREAD => decode_thread(p).ok_or_else(short)?,
        F_END => decode_end(p).ok_or_else(short),
        F_STATS => {
            if !p.len().is_multiple_of(8) {
                return Err(short());
            }
            Ok(Frame::Stats(
                p.chunks_exact(8)
                    .map(|c| (u32_at(c, 0), u32_at(c, 4)))
                    .collect(),
            ))
        }
        F_MODEL => Ok(Frame::Model(p.to_vec())),
        F_KINDS => decode_kinds(p).ok_or_else(short),
        F_DIVERGE => {
            if p.len() < 12 {
                return Err(short());
            }
            Ok(Frame::Diverge {
                tid: u32_at(p, 0),
                event: u64_at(p, 4),
                message: String::from_utf8_lossy(&p[12..]).into_owned(),
            })
        }
        F_STACK => decode_stack(p).ok_or_else(short),
        F_FILE => decode_file(p).ok_or_else(short),
        F_LIB => Ok(Frame::Lib { path: p.to_vec() }),
        _ => Err(DecodeError(format!("unknown frame tag {tag}"))),
    }
}

/// An [`F_END`] payload; None when it is too short or its final counts are cut.
#[cfg(feature = "std")]
fn decode_end(p: &[u8]) -> Option<Frame> {
    let n = core::mem::size_of::<ProcessEnd>();
    if p.len() < n || !(p.len() - n).is_multiple_of(12) {
        return None;
    }
    let end = ProcessEnd {
        kind: u32_at(p, 0),
        tid: u32_at(p, 4),
        event: u64_at(p, 8),
        code: u32_at(p, 16) as i32,
        si_code: u32_at(p, 20) as i32,
        addr: u64_at(p, 24),
    };
    let finals = p[n..]
        .chunks_exact(12)
        .map(|c| (u32_at(c, 0), u64_at(c, 4)))
        .collect();
    Some(Frame::End { end, finals })
}

/// An [`F_KINDS`] payload; None when it is not [`KINDS`] counts.
#[cfg(feature = "std")]
fn decode_kinds(p: &[u8]) -> Option<Frame> {
    if p.len() != KINDS * 8 {
        return None;
    }
    let mut k = [0u64; KINDS];
    for (i, c) in p.chunks_exact(8).enumerate() {
        k[i] = u64_at(c, 0);
    }
    Some(Frame::Kinds(k))
}

/// An [`F_STACK`] payload; None when it is too short or an address is cut.
#[cfg(feature = "std")]
fn decode_stack(p: &[u8]) -> Option<Frame> {
    if p.len() < 8 || !(p.len() - 8).is_multiple_of(8) {
        return None;
    }
    Some(Frame::Stack {
        tid: u32_at(p, 0),
        what: u32_at(p, 4),
        pcs: p[8..].chunks_exact(8).map(|c| u64_at(c, 0)).collect(),
    })
}

/// An [`F_FILE`] payload; None when it is too short.
#[cfg(feature = "std")]
fn decode_file(p: &[u8]) -> Option<Frame> {
    if p.len() < 40 {
        return None;
    }
    Some(Frame::File {
        dev: u64_at(p, 0),
        ino: u64_at(p, 8),
        size: u64_at(p, 16),
        mtime_sec: u64_at(p, 24) as i64,
        mtime_nsec: u64_at(p, 32),
        path: p[40..].to_vec(),
    })
}

/// An [`F_STRIPE`] payload; None when it is too short (the caller says so).
#[cfg(feature = "std")]
fn decode_stripe(p: &[u8]) -> Option<Result<Frame, DecodeError>> {
    if p.len() < 4 || !(p.len() - 4).is_multiple_of(8) {
        return None;
    }
    let stripe = u32_at(p, 0);
    if stripe as usize >= STRIPES {
        return Some(Err(DecodeError(format!("stripe {stripe} out of range"))));
    }
    let entries = p[4..]
        .chunks_exact(8)
        .map(|c| VecEntry {
            tid: u32_at(c, 0),
            count: u32_at(c, 4),
        })
        .collect::<Vec<_>>();
    if entries
        .iter()
        .any(|e| e.count == 0 || e.tid as usize >= MAX_THREADS)
    {
        return Some(Err(DecodeError(format!(
            "stripe {stripe}: invalid vector entry"
        ))));
    }
    Some(Ok(Frame::Stripe { stripe, entries }))
}

/// An [`F_THREAD`] payload; None when it (or a record in it) is too short.
#[cfg(feature = "std")]
fn decode_thread(p: &[u8]) -> Option<Result<Frame, DecodeError>> {
    if p.len() < 4 {
        return None;
    }
    let tid = u32_at(p, 0);
    let mut records = Vec::new();
    let mut o = 4;
    while o < p.len() {
        let t = p[o];
        if t == R_DATA {
            if o + 13 > p.len() {
                return None;
            }
            let ev = u64_at(p, o + 1);
            let n = u32_at(p, o + 9) as usize;
            if n > DATA_MAX || o + 13 + n > p.len() {
                return Some(Err(DecodeError(format!(
                    "thread {tid}: data record of {n} bytes overruns its frame"
                ))));
            }
            records.push(Record::Data(ev, p[o + 13..o + 13 + n].to_vec()));
            o += 13 + n;
            continue;
        }
        let Some(n) = record_size(t) else {
            return Some(Err(DecodeError(format!(
                "thread {tid}: unknown record tag {t}"
            ))));
        };
        if o + 1 + n > p.len() {
            return None;
        }
        let b = &p[o + 1..o + 1 + n];
        let pair = || Pair {
            event: u64_at(b, 0),
            value: u64_at(b, 8),
        };
        records.push(match t {
            R_START => Record::Start {
                parent: u32_at(b, 0),
                nth: u32_at(b, 4),
            },
            R_RESULT => Record::Result(pair()),
            R_SIGNAL => Record::Signal(pair()),
            R_EDGE => Record::Edge(pair()),
            _ => Record::Digest(pair()),
        });
        o += 1 + n;
    }
    Some(Ok(Frame::Thread { tid, records }))
}

/// Encode a frame (launcher side and tests; the runtime encodes in place without allocating).
#[cfg(feature = "std")]
pub fn encode_frame(f: &Frame) -> Vec<u8> {
    let mut p: Vec<u8> = Vec::new();
    let tag = match f {
        Frame::Stripe { stripe, entries } => {
            p.extend_from_slice(&stripe.to_le_bytes());
            for e in entries {
                p.extend_from_slice(&e.tid.to_le_bytes());
                p.extend_from_slice(&e.count.to_le_bytes());
            }
            F_STRIPE
        }
        Frame::Thread { tid, records } => {
            p.extend_from_slice(&tid.to_le_bytes());
            for r in records {
                encode_record(r, &mut p);
            }
            F_THREAD
        }
        Frame::End { end, finals } => {
            let mut b = [0u8; 32];
            encode_end(end, &mut b);
            p.extend_from_slice(&b);
            for (t, n) in finals {
                p.extend_from_slice(&t.to_le_bytes());
                p.extend_from_slice(&n.to_le_bytes());
            }
            F_END
        }
        _ => encode_report(f, &mut p),
    };
    let mut out = vec![0u8; FRAME_HDR];
    put_frame_header(&mut out, tag, p.len());
    out.extend_from_slice(&p);
    out
}

/// Append the payload of a frame that is not part of the recorded log ([`encode_frame`] encodes
/// stripes, thread records and the end) to `p`; returns its tag.
#[cfg(feature = "std")]
fn encode_report(f: &Frame, p: &mut Vec<u8>) -> u8 {
    match f {
        Frame::Model(b) => {
            p.extend_from_slice(b);
            F_MODEL
        }
        Frame::Kinds(k) => {
            for c in k {
                p.extend_from_slice(&c.to_le_bytes());
            }
            F_KINDS
        }
        Frame::Stats(v) => {
            for (n, c) in v {
                p.extend_from_slice(&n.to_le_bytes());
                p.extend_from_slice(&c.to_le_bytes());
            }
            F_STATS
        }
        Frame::Stack { tid, what, pcs } => {
            p.extend_from_slice(&tid.to_le_bytes());
            p.extend_from_slice(&what.to_le_bytes());
            for a in pcs {
                p.extend_from_slice(&a.to_le_bytes());
            }
            F_STACK
        }
        Frame::File {
            dev,
            ino,
            size,
            mtime_sec,
            mtime_nsec,
            path,
        } => {
            for v in [*dev, *ino, *size, *mtime_sec as u64, *mtime_nsec] {
                p.extend_from_slice(&v.to_le_bytes());
            }
            p.extend_from_slice(path);
            F_FILE
        }
        Frame::Lib { path } => {
            p.extend_from_slice(path);
            F_LIB
        }
        Frame::Diverge {
            tid,
            event,
            message,
        } => {
            p.extend_from_slice(&tid.to_le_bytes());
            p.extend_from_slice(&event.to_le_bytes());
            p.extend_from_slice(message.as_bytes());
            F_DIVERGE
        }
        Frame::Stripe { .. } | Frame::Thread { .. } | Frame::End { .. } => {
            unreachable!("encode_frame encodes the log frames itself")
        }
    }
}

/// Append one thread record (tag and payload) to `p`.
#[cfg(feature = "std")]
fn encode_record(r: &Record, p: &mut Vec<u8>) {
    match r {
        Record::Start { parent, nth } => {
            p.push(R_START);
            p.extend_from_slice(&parent.to_le_bytes());
            p.extend_from_slice(&nth.to_le_bytes());
        }
        Record::Data(ev, bytes) => {
            p.push(R_DATA);
            p.extend_from_slice(&ev.to_le_bytes());
            p.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
            p.extend_from_slice(bytes);
        }
        Record::Result(x) | Record::Digest(x) | Record::Signal(x) | Record::Edge(x) => {
            p.push(match r {
                Record::Result(_) => R_RESULT,
                Record::Digest(_) => R_DIGEST,
                Record::Edge(_) => R_EDGE,
                _ => R_SIGNAL,
            });
            p.extend_from_slice(&x.event.to_le_bytes());
            p.extend_from_slice(&x.value.to_le_bytes());
        }
    }
}

/// Encode a [`ProcessEnd`] into 32 bytes (runtime side, no allocation).
pub fn encode_end(e: &ProcessEnd, out: &mut [u8; 32]) {
    out[0..4].copy_from_slice(&e.kind.to_le_bytes());
    out[4..8].copy_from_slice(&e.tid.to_le_bytes());
    out[8..16].copy_from_slice(&e.event.to_le_bytes());
    out[16..20].copy_from_slice(&e.code.to_le_bytes());
    out[20..24].copy_from_slice(&e.si_code.to_le_bytes());
    out[24..32].copy_from_slice(&e.addr.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{END_EXIT, END_FAULT};

    #[test]
    fn end_frame_round_trips() {
        let e = ProcessEnd {
            kind: END_FAULT,
            tid: 3,
            event: 99,
            code: 11,
            si_code: 1,
            addr: 0x10,
        };
        let mut b = [0u8; 32];
        encode_end(&e, &mut b);
        let mut frame = vec![0u8; 5];
        put_frame_header(&mut frame, F_END, 32 + 12);
        frame.extend_from_slice(&b);
        frame.extend_from_slice(&7u32.to_le_bytes());
        frame.extend_from_slice(&42u64.to_le_bytes());
        let (f, used) = decode_frames(&frame).unwrap();
        assert_eq!(used, frame.len());
        assert_eq!(
            f,
            vec![Frame::End {
                end: e,
                finals: vec![(7, 42)]
            }]
        );
    }

    #[test]
    fn partial_frame_is_left() {
        let mut frame = vec![0u8; 5];
        put_frame_header(&mut frame, F_STRIPE, 12);
        frame.extend_from_slice(&5u32.to_le_bytes());
        frame.extend_from_slice(&1u32.to_le_bytes());
        let (f, used) = decode_frames(&frame).unwrap();
        assert!(f.is_empty());
        assert_eq!(used, 0);
        frame.extend_from_slice(&2u32.to_le_bytes());
        let (f, _) = decode_frames(&frame).unwrap();
        assert_eq!(
            f,
            vec![Frame::Stripe {
                stripe: 5,
                entries: vec![VecEntry { tid: 1, count: 2 }]
            }]
        );
    }

    #[test]
    fn every_frame_kind_round_trips() {
        let frames = vec![
            Frame::Stripe {
                stripe: 3,
                entries: vec![VecEntry { tid: 0, count: 4 }, VecEntry { tid: 1, count: 1 }],
            },
            Frame::Thread {
                tid: 2,
                records: vec![
                    Record::Start { parent: 0, nth: 1 },
                    Record::Result(Pair {
                        event: 5,
                        value: 16,
                    }),
                    Record::Data(6, b"hello".to_vec()),
                    Record::Digest(Pair {
                        event: 4096,
                        value: 9,
                    }),
                ],
            },
            Frame::End {
                end: ProcessEnd {
                    kind: END_EXIT,
                    ..Default::default()
                },
                finals: vec![(0, 10), (1, 20)],
            },
            Frame::Diverge {
                tid: 1,
                event: 7,
                message: "differs".into(),
            },
            Frame::Lib {
                path: b"/tmp/libplugin.so".to_vec(),
            },
        ];
        let bytes: Vec<u8> = frames.iter().flat_map(encode_frame).collect();
        let (back, used) = decode_frames(&bytes).unwrap();
        assert_eq!(used, bytes.len());
        assert_eq!(back, frames);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(decode_frames(&[9, 0, 0, 0, 77, 1, 2, 3, 4, 5, 6, 7, 8]).is_err());
        assert!(decode_frames(&[0, 0, 0, 0, 1]).is_err());
    }
}

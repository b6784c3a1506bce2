//! TPLAY+'s compact storage for what the dry run needs until `finish`: the recorded order
//! (thread and operation of every event, no value) as a byte stream, and increasing sequences
//! of event indices (a thread's reads, its transactions' first events) as varint deltas.
//!
//! The dry run cannot start before `finish` without changing the log: algorithm 2 examines a
//! transaction's records at its first write, and the seed's recorder appends records to that
//! transaction until it ends (and removes some while their source transaction is open), which
//! can be after the whole parallel phase (a main thread in `pthread_join`). So the order is
//! kept, in about 3 bytes per event instead of a 40-byte `Event`.

use crate::event::{Op, ThreadId};

/// Bytes per chunk of the stream (chunks are never reallocated, so growing copies nothing).
const CHUNK: usize = 1 << 20;
/// Longest encoding of one item: a tag, a thread varint, an operand varint.
const MAX_ITEM: usize = 1 + 5 + 10;

fn put(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push(v as u8 | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

fn get(buf: &[u8], pos: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let b = buf[*pos];
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return v;
        }
        shift += 7;
    }
}

fn zigzag(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}

fn unzigzag(z: u64) -> i64 {
    (z >> 1) as i64 ^ -((z & 1) as i64)
}

/// The recorded order: per item a tag byte (operation kind in the low 3 bits, the thread in the
/// high 5 when below 31), the thread as a varint otherwise, and the operand: a location as the
/// zigzag difference from the thread's previous location, a lock or thread id as is.
#[derive(Clone, Debug, Default)]
pub(super) struct Trace {
    chunks: Vec<Vec<u8>>,
    last: Vec<u64>,
}

/// Kind 7: the thread exited.
const EXIT: u8 = 7;

impl Trace {
    /// Append an event (`Some`) or a thread's exit (`None`).
    pub fn push(&mut self, t: ThreadId, op: Option<Op>) {
        if self
            .chunks
            .last()
            .is_none_or(|c| c.len() + MAX_ITEM > CHUNK)
        {
            self.chunks.push(Vec::with_capacity(CHUNK));
        }
        let buf = self.chunks.last_mut().unwrap();
        let (kind, arg) = match op {
            Some(Op::Read(x)) => (0, x),
            Some(Op::Write(x)) => (1, x),
            Some(Op::Rmw(x)) => (2, x),
            Some(Op::Acquire(m)) => (3, m),
            Some(Op::Release(m)) => (4, m),
            Some(Op::Fork(u)) => (5, u64::from(u)),
            Some(Op::Join(u)) => (6, u64::from(u)),
            None => (EXIT, 0),
        };
        let small = t.min(31) as u8;
        buf.push(kind | small << 3);
        if small == 31 {
            put(buf, u64::from(t));
        }
        match kind {
            0..=2 => {
                let i = t as usize;
                if self.last.len() <= i {
                    self.last.resize(i + 1, 0);
                }
                put(buf, zigzag(arg.wrapping_sub(self.last[i]) as i64));
                self.last[i] = arg;
            }
            EXIT => {}
            _ => put(buf, arg),
        }
    }

    /// The items in order: the operation (`None`: the thread exited) and the thread.
    pub fn iter(&self) -> TraceIter<'_> {
        TraceIter {
            trace: self,
            chunk: 0,
            pos: 0,
            last: Vec::new(),
        }
    }
}

/// Decoder of a [`Trace`].
pub(super) struct TraceIter<'a> {
    trace: &'a Trace,
    chunk: usize,
    pos: usize,
    last: Vec<u64>,
}

impl Iterator for TraceIter<'_> {
    type Item = (Option<Op>, ThreadId);
    fn next(&mut self) -> Option<Self::Item> {
        let mut c = self.trace.chunks.get(self.chunk)?;
        if self.pos >= c.len() {
            self.chunk += 1;
            self.pos = 0;
            c = self.trace.chunks.get(self.chunk)?;
        }
        let pos = &mut self.pos;
        let tag = c[*pos];
        *pos += 1;
        let mut t = ThreadId::from(tag >> 3);
        if t == 31 {
            t = get(c, pos) as ThreadId;
        }
        let kind = tag & 7;
        let op = match kind {
            0..=2 => {
                let i = t as usize;
                if self.last.len() <= i {
                    self.last.resize(i + 1, 0);
                }
                let x = self.last[i].wrapping_add(unzigzag(get(c, pos)) as u64);
                self.last[i] = x;
                Some(match kind {
                    0 => Op::Read(x),
                    1 => Op::Write(x),
                    _ => Op::Rmw(x),
                })
            }
            EXIT => None,
            _ => {
                let a = get(c, pos);
                Some(match kind {
                    3 => Op::Acquire(a),
                    4 => Op::Release(a),
                    5 => Op::Fork(a as ThreadId),
                    _ => Op::Join(a as ThreadId),
                })
            }
        };
        Some((op, t))
    }
}

/// Entries between two index points of a [`Seq`].
const STRIDE: usize = 64;

/// An increasing sequence of u64 as varint deltas, with an index point every [`STRIDE`] entries.
#[derive(Clone, Debug, Default)]
pub(super) struct Seq {
    bytes: Vec<u8>,
    /// Value and byte offset of entries `0, STRIDE, 2 STRIDE, ...` (the entry itself follows).
    index: Vec<(u64, usize)>,
    len: usize,
    last: u64,
}

impl Seq {
    pub fn push(&mut self, v: u64) {
        debug_assert!(self.len == 0 || v >= self.last);
        if self.len.is_multiple_of(STRIDE) {
            self.index.push((v, self.bytes.len()));
        } else {
            put(&mut self.bytes, v - self.last);
        }
        self.last = v;
        self.len += 1;
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn get(&self, i: usize) -> Option<u64> {
        if i >= self.len {
            return None;
        }
        let (mut v, mut pos) = self.index[i / STRIDE];
        for _ in 0..i % STRIDE {
            v += get(&self.bytes, &mut pos);
        }
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_round_trips() {
        let items = [
            (Some(Op::Write(0x7fff_0000_1000)), 0),
            (Some(Op::Read(0x10)), 40),
            (Some(Op::Read(0x7fff_0000_0ff8)), 0),
            (Some(Op::Rmw(u64::MAX)), 3),
            (Some(Op::Acquire(0xdead_beef)), 31),
            (Some(Op::Release(0xdead_beef)), 30),
            (Some(Op::Fork(4094)), 2),
            (Some(Op::Join(7)), 1),
            (None, 4094),
            (Some(Op::Write(0)), 3),
        ];
        let mut tr = Trace::default();
        for _ in 0..100_000 {
            for &(op, t) in &items {
                tr.push(t, op);
            }
        }
        assert!(tr.chunks.len() > 1);
        let got: Vec<_> = tr.iter().collect();
        assert_eq!(got.len(), items.len() * 100_000);
        for (i, g) in got.iter().enumerate() {
            assert_eq!(*g, items[i % items.len()]);
        }
    }

    #[test]
    fn seq_gets_what_was_pushed() {
        let mut s = Seq::default();
        let mut v = Vec::new();
        let mut x = 0u64;
        for i in 0..1000u64 {
            x += i % 7 + (i % 100) * 1_000_000;
            s.push(x);
            v.push(x);
        }
        for (i, &x) in v.iter().enumerate() {
            assert_eq!(s.get(i), Some(x));
        }
        assert_eq!(s.get(1000), None);
    }
}

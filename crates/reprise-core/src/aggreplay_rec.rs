//! AggrePlay's record-side state keyed by location or lock ([`AggLocs`]): one record per
//! location holding everything algorithm 1 keeps of it (`W_x`; the last write of `x`; `WR_x`
//! split by reading thread; the read counts `RC_t.x`), found by one hash look-up per event,
//! which also gives the event's version (the length of `W_x` or `L_m`).
//!
//! The lists are kept in their wire form as they grow ([`EncList`]: the count and the
//! postcard bytes of the elements, a few bytes an event where `EventId`s take 16), and
//! [`encode_log`] writes the log's postcard encoding from them directly: byte for byte what
//! `binlog::encode` gives the same log as an [`AggrePlayLog`], without building its maps.

use crate::event::{EventId, Loc, LockId, Op, ThreadId};
use rustc_hash::FxHashMap as HashMap;

/// Append `v` as a LEB128 varint (postcard's encoding of every integer).
pub fn put_varint(out: &mut Vec<u8>, v: u64) {
    let mut b = Varints::default();
    b.put(v);
    b.append_to(out);
}

/// Up to two events' (or three integers') varints gathered on the stack and appended at once
/// (one capacity check and a fixed-size copy instead of a push per byte: the recorder appends
/// one or two events per event it observes).
#[derive(Default)]
struct Varints {
    b: [u8; 32],
    n: usize,
}

impl Varints {
    #[inline(always)]
    fn put(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.b[self.n] = v as u8 | 0x80;
            self.n += 1;
            v >>= 7;
        }
        self.b[self.n] = v as u8;
        self.n += 1;
    }

    #[inline(always)]
    fn event(&mut self, e: EventId) {
        self.put(e.thread as u64);
        self.put(e.index);
    }

    #[inline(always)]
    fn append_to(&self, out: &mut Vec<u8>) {
        let len = out.len();
        out.extend_from_slice(&self.b);
        out.truncate(len + self.n);
    }
}

fn put_event(out: &mut Vec<u8>, e: EventId) {
    let mut b = Varints::default();
    b.event(e);
    b.append_to(out);
}

/// The length of the varint at the start of `b`.
fn varint_len(b: &[u8]) -> usize {
    b.iter().position(|&c| c < 0x80).map_or(b.len(), |i| i + 1)
}

/// A varint at the start of `b` and its length.
fn get_varint(b: &[u8]) -> (u64, usize) {
    let n = varint_len(b);
    let v = b[..n]
        .iter()
        .rev()
        .fold(0u64, |v, &c| v << 7 | (c & 0x7f) as u64);
    (v, n)
}

/// A list kept in its encoding: the number of elements and their bytes, in chunks that never
/// move once written (a chunk twice its predecessor's size, up to [`CHUNK_MAX`]): a growing
/// list touches each page once, where a doubling vector copied itself into fresh pages at
/// every growth (most of a recording's page faults). An element never straddles two chunks.
#[derive(Clone, Debug, Default)]
pub struct EncList {
    n: u64,
    chunks: Vec<Vec<u8>>,
}

/// The largest chunk of an [`EncList`].
const CHUNK_MAX: usize = 1 << 20;

impl EncList {
    /// Elements so far.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// No element yet.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The chunk to append `need` more bytes to (a new one if the last has no room).
    #[inline(always)]
    fn room(&mut self, need: usize) -> &mut Vec<u8> {
        let full = self
            .chunks
            .last()
            .is_none_or(|c| c.capacity() - c.len() < need);
        if full {
            self.grow(need);
        }
        self.chunks.last_mut().expect("grown")
    }

    #[cold]
    fn grow(&mut self, need: usize) {
        let cap = self
            .chunks
            .last()
            .map_or(32, |c| (2 * c.capacity()).min(CHUNK_MAX));
        self.chunks.push(Vec::with_capacity(cap.max(need)));
    }

    /// Append one element's varints.
    #[inline(always)]
    fn push(&mut self, b: &Varints) {
        self.n += 1;
        b.append_to(self.room(b.b.len()));
    }

    /// Append one element's bytes.
    fn push_bytes(&mut self, b: &[u8]) {
        self.n += 1;
        self.room(b.len()).extend_from_slice(b);
    }
}

/// What AggrePlay records of one location `x`.
#[derive(Clone, Debug, Default)]
struct LocRec {
    /// The last write of `x` (the last entry of `W_x`).
    last: Option<EventId>,
    /// `W_x`.
    w: EncList,
    /// `WR_x` split by reading thread (ascending), each part in the reader's program order: the
    /// canonical order of the log is their concatenation.
    wr: Vec<(ThreadId, EncList)>,
    /// `RC_t.x[t]`: each thread's own read count of `x`, by thread.
    own: Vec<u32>,
    /// `RC_t.x` of each thread `t` that wrote `x`: the other threads' counts as its last write
    /// refreshed them (entry `t` unused: it is `own[t]`).
    rows: Vec<(ThreadId, Vec<u32>)>,
}

fn get(v: &[u32], t: usize) -> u32 {
    v.get(t).copied().unwrap_or(0)
}

impl LocRec {
    fn row(&mut self, t: ThreadId) -> &mut Vec<u32> {
        let i = match self.rows.iter().position(|r| r.0 == t) {
            Some(i) => i,
            None => {
                self.rows.push((t, Vec::new()));
                self.rows.len() - 1
            }
        };
        &mut self.rows[i].1
    }

    /// Thread `t`'s first read of `x` (its count 1).
    #[cold]
    fn first_read(&mut self, t: ThreadId) {
        self.own.resize(t as usize + 1, 0);
        self.own[t as usize] = 1;
    }

    #[inline]
    fn wr_of(&mut self, t: ThreadId) -> &mut EncList {
        let i = match self.wr.iter().position(|r| r.0 >= t) {
            Some(i) if self.wr[i].0 == t => i,
            i => self.new_reader(t, i),
        };
        &mut self.wr[i].1
    }

    /// `WR_x`'s part for reading thread `t`, made at `i` (None: at the end); its index.
    #[cold]
    fn new_reader(&mut self, t: ThreadId, i: Option<usize>) -> usize {
        let i = i.unwrap_or(self.wr.len());
        self.wr.insert(i, (t, EncList::default()));
        i
    }
}

/// The part of AggrePlay's recorder keyed by location (`W_x`, `WR_x`, `RC_t.x`, the last
/// write of `x`) or by lock (`L_m`). Each event touches only its own location's (or lock's)
/// entries, so a recorder on real threads runs one `AggLocs` per stripe of locations, each
/// updated at the access's turn on its stripe, with the per-thread part (counters, `EX_t`) in
/// each thread: the same log as one sequential recorder fed the same events in an order that
/// agrees with every location's and every lock's order (which is all the log records).
#[derive(Clone, Debug, Default)]
pub struct AggLocs {
    locs: HashMap<Loc, LocRec>,
    l: HashMap<LockId, Vec<ThreadId>>,
}

impl AggLocs {
    /// Write (or RMW) `e` of `x` while `nthreads` threads are known: updateReadVectors
    /// (lines 20-25) with O1/O2; appends the thread's `EX_t` entry to `ex` (Θ, or the vector at
    /// `nthreads` entries, padded at the end by [`encode_log`]). The length of `W_x` after it.
    pub fn write(&mut self, e: EventId, x: Loc, nthreads: u32, ex: &mut EncList) -> u64 {
        let t = e.thread;
        let r = self.locs.entry(x).or_default();
        let own = std::mem::take(&mut r.own);
        let row = r.row(t);
        let mut changed = false;
        for (u, &n) in own.iter().enumerate().take(nthreads as usize) {
            if u != t as usize && n > 0 && get(row, u) != n {
                if row.len() <= u {
                    row.resize(u + 1, 0);
                }
                row[u] = n;
                changed = true;
            }
        }
        if changed {
            let mut b = vec![1];
            put_varint(&mut b, nthreads as u64);
            for u in 0..nthreads as usize {
                let c = if u == t as usize {
                    get(&own, u)
                } else {
                    get(row, u)
                };
                put_varint(&mut b, c as u64);
            }
            put_event(&mut b, e);
            ex.push_bytes(&b);
        } else {
            ex.push_bytes(&[0]);
        }
        r.own = own;
        r.last = Some(e);
        let mut b = Varints::default();
        b.event(e);
        r.w.push(&b);
        r.w.n
    }

    /// Read `e` of `x`; the length of `W_x` (the place of the write it reads).
    #[inline]
    pub fn read(&mut self, e: EventId, x: Loc) -> u64 {
        let t = e.thread;
        let r = self.locs.entry(x).or_default();
        match r.own.get_mut(t as usize) {
            Some(c) => *c += 1,
            None => r.first_read(t),
        }
        if let Some(lw) = r.last {
            if lw.thread != t {
                let mut b = Varints::default();
                b.event(lw);
                b.event(e);
                r.wr_of(t).push(&b);
            }
        }
        r.w.n
    }

    /// Thread `t` acquired lock `m`; the length of `L_m` after it.
    pub fn acquire(&mut self, t: ThreadId, m: LockId) -> u64 {
        let l = self.l.entry(m).or_default();
        l.push(t);
        l.len() as u64
    }

    /// Writes (and RMWs) of `x` so far: the place of the last one in `W_x`, which a read
    /// after it reads (an order-bearing key a faithful replay reproduces).
    pub fn writes_of(&self, x: Loc) -> u64 {
        self.locs.get(&x).map_or(0, |r| r.w.n)
    }

    /// Acquisitions of `m` so far (the length of `L_m`).
    pub fn acquisitions_of(&self, m: LockId) -> u64 {
        self.l.get(&m).map_or(0, |v| v.len() as u64)
    }

    /// The version of `op`'s object: [`AggLocs::writes_of`] a location,
    /// [`AggLocs::acquisitions_of`] a lock, 0 for a thread.
    pub fn version(&self, op: &Op) -> u64 {
        match *op {
            Op::Read(x) | Op::Write(x) | Op::Rmw(x) => self.writes_of(x),
            Op::Acquire(m) | Op::Release(m) => self.acquisitions_of(m),
            Op::Fork(_) | Op::Join(_) => 0,
        }
    }
}

/// Where [`encode_log_to`] writes: bytes gathered into pieces of about [`PIECE`] bytes
/// handed to `f` (a list longer than that goes to `f` whole, without a copy).
struct Out<'f> {
    buf: Vec<u8>,
    f: &'f mut dyn FnMut(&[u8]),
}

/// The size of the pieces [`encode_log_to`] hands out.
const PIECE: usize = 1 << 16;

impl Out<'_> {
    fn flush(&mut self) {
        if !self.buf.is_empty() {
            (self.f)(&self.buf);
            self.buf.clear();
        }
    }

    /// Flush once a piece is full.
    fn check(&mut self) {
        if self.buf.len() >= PIECE {
            self.flush();
        }
    }

    fn varint(&mut self, v: u64) {
        put_varint(&mut self.buf, v);
        self.check();
    }

    fn bytes(&mut self, b: &[u8]) {
        if self.buf.len() + b.len() > PIECE {
            self.flush();
        }
        if b.len() >= PIECE {
            (self.f)(b);
        } else {
            self.buf.extend_from_slice(b);
        }
    }
}

/// Copy `EX_t` (`ex`, `n` entries) with every vector padded with zeros to `nthreads` entries:
/// threads unknown when it was recorded had read nothing.
fn put_ex(o: &mut Out, ex: &EncList, nthreads: u32) {
    o.varint(ex.n);
    for b in &ex.chunks {
        let mut i = 0;
        while i < b.len() {
            let out = &mut o.buf;
            let tag = b[i];
            out.push(tag);
            i += 1;
            if tag != 0 {
                let (len, k) = get_varint(&b[i..]);
                i += k;
                put_varint(out, len.max(nthreads as u64));
                let start = i;
                for _ in 0..len {
                    i += varint_len(&b[i..]);
                }
                out.extend_from_slice(&b[start..i]);
                out.resize(
                    out.len() + (nthreads as u64).saturating_sub(len) as usize,
                    0,
                );
                let start = i;
                i += varint_len(&b[i..]);
                i += varint_len(&b[i..]);
                out.extend_from_slice(&b[start..i]);
            }
            o.check();
        }
    }
}

/// The log's postcard encoding (an `AggrePlayLog`: `W_x`, `WR_x` by location, `EX_t` by
/// thread, `L_m` by lock, each map in key order) from the location parts `parts` (disjoint:
/// each location and lock in one part) and the threads' `EX_t` lists `ex` (ascending thread
/// ids), `nthreads` threads known at the end. `WR_x` comes out in canonical order: by reading
/// thread, then program order. Reads of different threads between the same two writes are
/// concurrent (their interleaving is not part of the execution AggrePlay reproduces, and the
/// replayer splits `WR_x` by reading thread), so a faithful replay re-records the same log
/// byte for byte.
pub fn encode_log<'a>(
    parts: impl Iterator<Item = &'a AggLocs>,
    ex: &[(ThreadId, &EncList)],
    nthreads: u32,
) -> Vec<u8> {
    let mut out = Vec::new();
    encode_log_to(parts, ex, nthreads, &mut |b| out.extend_from_slice(b));
    out
}

/// [`encode_log`] handed to `f` piece by piece (in order; never the whole log in one buffer).
pub fn encode_log_to<'a>(
    parts: impl Iterator<Item = &'a AggLocs>,
    ex: &[(ThreadId, &EncList)],
    nthreads: u32,
    f: &mut dyn FnMut(&[u8]),
) {
    let mut locs: Vec<(Loc, &LocRec)> = Vec::new();
    let mut locks: Vec<(LockId, &Vec<ThreadId>)> = Vec::new();
    for p in parts {
        locs.extend(
            p.locs
                .iter()
                .filter(|(_, r)| !r.w.is_empty() || !r.wr.is_empty())
                .map(|(&x, r)| (x, r)),
        );
        locks.extend(p.l.iter().map(|(&m, v)| (m, v)));
    }
    locs.sort_unstable_by_key(|p| p.0);
    locks.sort_unstable_by_key(|p| p.0);
    let o = &mut Out {
        buf: Vec::with_capacity(PIECE + 64),
        f,
    };
    o.varint(locs.iter().filter(|p| !p.1.w.is_empty()).count() as u64);
    for (x, r) in locs.iter().filter(|p| !p.1.w.is_empty()) {
        o.varint(*x);
        o.varint(r.w.n);
        for c in &r.w.chunks {
            o.bytes(c);
        }
    }
    o.varint(locs.iter().filter(|p| !p.1.wr.is_empty()).count() as u64);
    for (x, r) in locs.iter().filter(|p| !p.1.wr.is_empty()) {
        o.varint(*x);
        o.varint(r.wr.iter().map(|p| p.1.n).sum());
        for c in r.wr.iter().flat_map(|p| &p.1.chunks) {
            o.bytes(c);
        }
    }
    let ex: Vec<_> = ex.iter().filter(|p| !p.1.is_empty()).collect();
    o.varint(ex.len() as u64);
    for (t, l) in ex {
        o.varint(*t as u64);
        put_ex(o, l, nthreads);
    }
    o.varint(locks.len() as u64);
    for (m, v) in locks {
        o.varint(m);
        o.varint(v.len() as u64);
        for &t in v {
            o.varint(t as u64);
        }
    }
    o.flush();
}

//! What one run produced, decoded from the runtime's frames: the access vectors, each
//! thread's records, the final event counts and the process end. The same type describes a
//! trace (record side) and a replay's re-recording, so verification compares like with like.
//! Also builds the replay config memfd the runtime maps.

use anyhow::Result;
use reprise_proto::*;
use std::collections::BTreeMap;

/// Records of one thread.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ThreadRec {
    /// (parent, nth) from its start record.
    pub start: Option<(u32, u32)>,
    /// Nondeterministic results in order.
    pub results: Vec<Pair>,
    /// Digest checkpoints in order.
    pub digests: Vec<Pair>,
    /// Input data records (event, bytes) in order.
    pub data: Vec<(u64, Vec<u8>)>,
    /// Asynchronous signal deliveries (runtime entry, signal) in order.
    pub signals: Vec<Pair>,
    /// Incoming ownership edges (event, packed source), in the order recorded (sorted by
    /// event: a thread logs the edges of an event when it performs it), and the thread's
    /// held-granule marks among them (`reprise_proto::held_mark`).
    pub edges: Vec<Pair>,
}

/// Everything the runtime reported for one run.
#[derive(Debug, Default, Clone)]
pub struct Recording {
    /// Access vector of each stripe (run-length entries, adjacent runs merged).
    pub vectors: BTreeMap<u32, Vec<VecEntry>>,
    /// Per-thread records.
    pub threads: BTreeMap<u32, ThreadRec>,
    /// How the process ended and every thread's final event count.
    pub end: Option<(ProcessEnd, BTreeMap<u32, u64>)>,
    /// A divergence reported by the runtime (replay only).
    pub diverged: Option<(u32, u64, String)>,
    /// Frames seen.
    pub frames: u64,
    /// System calls caught by Syscall User Dispatch (number -> count).
    pub trapped: BTreeMap<u32, u64>,
    /// The model strategy's log (`reprise_core::binlog`: postcard), for the model strategies.
    pub model_log: Vec<u8>,
    /// Events per kind (`reprise_proto::F_KINDS`), when the end was recorded.
    pub kinds: Option<[u64; KINDS]>,
    /// Stacks of threads that faulted, the first of each: (thread, the faulting instruction
    /// then return addresses); see [`Recording::fault_stack`].
    pub fault_stacks: Vec<(u32, Vec<u64>)>,
    /// Stack of the thread that reported a divergence (replay only): return addresses.
    pub diverge_stack: Option<(u32, Vec<u64>)>,
    /// Files whose reads are re-executed in replay (`F_FILE`), once each, in order.
    pub files: Vec<ReexecFile>,
    /// Shared libraries the program loaded itself (`F_LIB`: dlopen), once each, in order.
    pub dlopened: Vec<Vec<u8>>,
}

/// A file whose reads the recording left to be re-executed in replay (checked by hash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReexecFile {
    /// Device and inode while recording.
    pub dev: u64,
    /// Inode.
    pub ino: u64,
    /// Size at its first re-executed read.
    pub size: u64,
    /// Modification time (seconds, nanoseconds).
    pub mtime: (i64, u64),
    /// Its path (from /proc/self/fd; empty when unknown).
    pub path: Vec<u8>,
}

impl ReexecFile {
    /// Why this file cannot be re-read in replay as recorded: missing, or another size or
    /// modification time; None when it looks unchanged (every read is still hash-checked).
    pub fn changed(&self) -> Option<String> {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::fs::MetadataExt;
        if self.path.is_empty() {
            return None;
        }
        let p = std::path::Path::new(std::ffi::OsStr::from_bytes(&self.path));
        let why = match std::fs::metadata(p) {
            Err(e) => format!("is missing ({e})"),
            Ok(m) if m.size() != self.size => {
                format!(
                    "changed since the recording ({} bytes now, {} then)",
                    m.size(),
                    self.size
                )
            }
            Ok(m) if (m.mtime(), m.mtime_nsec() as u64) != self.mtime => {
                "changed since the recording (its modification time)".to_string()
            }
            Ok(_) => return None,
        };
        Some(format!(
            "the recording re-reads {} in replay (its reads were checked by hash, not recorded: by default those of files of 1 MiB or more; a file the program maps with mmap is always mapped again), which {why}: restore it, or record with `--portable` to keep the bytes read (of a file read, not mapped)",
            p.display()
        ))
    }
}

impl Recording {
    /// Feed raw channel bytes; returns how many were consumed (the rest is a partial frame).
    pub fn feed(&mut self, buf: &[u8]) -> Result<usize> {
        Ok(decode_frames_each(buf, |f| self.apply(f))?)
    }

    /// Feed the next piece of an event stream that arrives in pieces (a frame may span two):
    /// what the pieces so far leave of a frame waits in `carry` for the next. The bytes decoded.
    pub fn feed_piece(&mut self, carry: &mut Vec<u8>, piece: &[u8]) -> Result<usize> {
        if carry.is_empty() {
            let used = self.feed(piece)?;
            carry.extend_from_slice(&piece[used..]);
            return Ok(used);
        }
        carry.extend_from_slice(piece);
        let used = self.feed(carry)?;
        carry.drain(..used);
        Ok(used)
    }

    fn apply(&mut self, f: Frame) {
        self.frames += 1;
        match f {
            Frame::Stripe { stripe, entries } => self.apply_stripe(stripe, entries),
            Frame::Thread { tid, records } => self.apply_thread(tid, records),
            Frame::End { end, finals } => {
                let e = self.end.get_or_insert((end, BTreeMap::new()));
                e.0 = end;
                e.1.extend(finals);
            }
            Frame::Model(b) => self.model_log.extend_from_slice(&b),
            Frame::Kinds(k) => self.kinds = Some(k),
            Frame::Stats(v) => {
                for (n, c) in v {
                    *self.trapped.entry(n).or_default() += c as u64;
                }
            }
            Frame::Stack { tid, what, pcs } => {
                if what == STACK_FAULT {
                    if !self.fault_stacks.iter().any(|(t, _)| *t == tid) {
                        self.fault_stacks.push((tid, pcs));
                    }
                } else if self.diverge_stack.is_none() {
                    self.diverge_stack = Some((tid, pcs));
                }
            }
            Frame::File {
                dev,
                ino,
                size,
                mtime_sec,
                mtime_nsec,
                path,
            } => {
                if !self.files.iter().any(|f| f.dev == dev && f.ino == ino) {
                    self.files.push(ReexecFile {
                        dev,
                        ino,
                        size,
                        mtime: (mtime_sec, mtime_nsec),
                        path,
                    });
                }
            }
            Frame::Lib { path } => {
                if !self.dlopened.contains(&path) {
                    self.dlopened.push(path);
                }
            }
            Frame::Diverge {
                tid,
                event,
                message,
            } => {
                if self.diverged.is_none() {
                    self.diverged = Some((tid, event, message));
                }
            }
        }
    }

    /// Append a piece of a stripe's access vector, merging a run that continues the last one
    /// (while its count fits).
    fn apply_stripe(&mut self, stripe: u32, entries: Vec<VecEntry>) {
        let v = self.vectors.entry(stripe).or_default();
        for e in entries {
            match v.last_mut() {
                Some(l)
                    if l.tid == e.tid && (l.count as u64 + e.count as u64) <= u32::MAX as u64 =>
                {
                    l.count += e.count
                }
                _ => v.push(e),
            }
        }
    }

    /// Append a thread's records to what it recorded so far.
    fn apply_thread(&mut self, tid: u32, records: Vec<Record>) {
        let t = self.threads.entry(tid).or_default();
        for r in records {
            match r {
                Record::Start { parent, nth } => t.start = Some((parent, nth)),
                Record::Result(p) => t.results.push(p),
                Record::Digest(p) => t.digests.push(p),
                Record::Data(ev, b) => t.data.push((ev, b)),
                Record::Signal(p) => t.signals.push(p),
                Record::Edge(p) => t.edges.push(p),
            }
        }
    }

    /// The stack of the thread whose fault ended the process (two threads may fault at once:
    /// the one that ended it is the end's).
    pub fn fault_stack(&self) -> Option<&[u64]> {
        let (end, _) = self.end.as_ref()?;
        (end.kind == END_FAULT).then_some(())?;
        self.fault_stacks
            .iter()
            .find(|(t, _)| *t == end.tid)
            .map(|(_, pcs)| pcs.as_slice())
    }

    /// Total events (sum of final counts), when the end was recorded.
    pub fn total_events(&self) -> u64 {
        self.end
            .as_ref()
            .map(|(_, f)| f.values().sum())
            .unwrap_or(0)
    }

    /// A recording cut short (no process end): each thread's last event its flushed records
    /// show (digest checkpoints, results, input data, incoming edges), for every thread seen.
    pub fn known_progress(&self) -> BTreeMap<u32, u64> {
        let mut out = BTreeMap::new();
        for (tid, t) in &self.threads {
            let m = t
                .digests
                .iter()
                .chain(&t.results)
                .chain(&t.edges)
                .map(|p| p.event)
                .chain(t.data.iter().map(|d| d.0))
                .max()
                .unwrap_or(0);
            out.insert(*tid, m);
        }
        for e in self.vectors.values().flatten() {
            out.entry(e.tid).or_insert(0);
        }
        out
    }

    /// This recording as its replay config sees a cut-short recording: an end of kind
    /// `END_CUT` (ending signal `sig`) with each thread's known progress as its final count.
    pub fn as_cut(&self, sig: i32) -> Recording {
        let mut r = self.clone();
        let end = ProcessEnd {
            kind: END_CUT,
            tid: END_TID_NONE,
            event: 0,
            code: sig,
            si_code: 0,
            addr: 0,
        };
        r.end = Some((end, self.known_progress()));
        r
    }

    /// Total vector entries (runs) over all stripes.
    pub fn vector_runs(&self) -> usize {
        self.vectors.values().map(|v| v.len()).sum()
    }

    /// Number of threads the run had.
    pub fn nthreads(&self) -> u32 {
        let a = self.threads.keys().next_back().map(|t| t + 1).unwrap_or(0);
        let b = self
            .end
            .as_ref()
            .and_then(|(_, f)| f.keys().next_back().map(|t| t + 1))
            .unwrap_or(0);
        a.max(b)
    }

    /// Build the replay config memfd contents for this recording.
    pub fn replay_config(&self, checkpoint: u64, jitter: u64, flags: u64) -> Vec<u8> {
        let nthreads = self.nthreads();
        let layout = ConfigLayout::new(nthreads);
        // One buffer, the data appended after the room left for the header and the indexes,
        // which are written last (a long `--verify=full` recording's checkpoints are
        // gigabytes: a copy of them per thread, then of all the data, tripled the launcher's
        // memory while it built the config).
        let mut out: Vec<u8> = vec![0; layout.data_off];
        let mut sidx = vec![StripeIndex::default(); STRIPES];
        for (s, v) in &self.vectors {
            let (off, len) = put_slice(&mut out, v);
            sidx[*s as usize] = StripeIndex { off, len };
        }
        let mut tidx = vec![ThreadIndex::default(); nthreads as usize];
        let finals = self.end.as_ref().map(|e| e.1.clone()).unwrap_or_default();
        let none = ThreadRec::default();
        for t in 0..nthreads {
            let ti = &mut tidx[t as usize];
            put_thread(&mut out, self.threads.get(&t).unwrap_or(&none), ti);
            ti.final_events = finals.get(&t).copied().unwrap_or(0);
        }
        let model_off = out.len();
        out.extend_from_slice(&self.model_log);
        let hdr = ConfigHeader {
            magic: CONFIG_MAGIC,
            version: PROTO_VERSION,
            mode: Mode::Replay as u32,
            checkpoint_interval: checkpoint,
            jitter_seed: jitter,
            flags,
            stripes: STRIPES as u32,
            nthreads,
            stripe_index_off: layout.stripe_index_off as u64,
            thread_index_off: layout.thread_index_off as u64,
            end: self.end.as_ref().map(|e| e.0).unwrap_or_default(),
            model_off: model_off as u64,
            model_len: self.model_log.len() as u64,
        };
        let mut head = Vec::with_capacity(layout.data_off);
        put(&mut head, &hdr);
        head.resize(layout.stripe_index_off, 0);
        for s in &sidx {
            put(&mut head, s);
        }
        for t in &tidx {
            put(&mut head, t);
        }
        debug_assert!(head.len() <= layout.data_off);
        out[..head.len()].copy_from_slice(&head);
        out
    }
}

/// Append `v` to `out`, byte for byte.
fn put<T: Copy>(out: &mut Vec<u8>, v: &T) {
    // Plain-old-data repr(C) structs of the protocol, written in native layout for
    // the runtime on this same machine.
    let b =
        unsafe { std::slice::from_raw_parts(v as *const T as *const u8, std::mem::size_of::<T>()) };
    out.extend_from_slice(b);
}

/// Append `items` to the config `out`; their offset and count.
fn put_slice<T: Copy>(out: &mut Vec<u8>, items: &[T]) -> (u64, u64) {
    let off = out.len() as u64;
    out.reserve(std::mem::size_of_val(items));
    for p in items {
        put(out, p);
    }
    (off, items.len() as u64)
}

/// Append one thread's records (results, digests, signals, edges, then its input data padded
/// to 8 bytes) to the config `out`, and say where in `ti`.
fn put_thread(out: &mut Vec<u8>, rec: &ThreadRec, ti: &mut ThreadIndex) {
    (ti.results_off, ti.results_len) = put_slice(out, &rec.results);
    (ti.digests_off, ti.digests_len) = put_slice(out, &rec.digests);
    (ti.signals_off, ti.signals_len) = put_slice(out, &rec.signals);
    (ti.edges_off, ti.edges_len) = put_slice(out, &rec.edges);
    ti.data_off = out.len() as u64;
    for (ev, b) in &rec.data {
        out.extend_from_slice(&ev.to_le_bytes());
        out.extend_from_slice(&(b.len() as u32).to_le_bytes());
        out.extend_from_slice(b);
    }
    ti.data_len = out.len() as u64 - ti.data_off;
    while !out.len().is_multiple_of(8) {
        out.push(0);
    }
}

/// The config of a recording run.
pub fn record_config(checkpoint: u64, flags: u64, chaos: u64) -> Vec<u8> {
    let hdr = ConfigHeader {
        magic: CONFIG_MAGIC,
        version: PROTO_VERSION,
        mode: Mode::Record as u32,
        checkpoint_interval: checkpoint,
        stripes: STRIPES as u32,
        flags,
        // Chaos: the runtime's seeded random delays (every access then takes the slow path,
        // where a few in 256 yield or sleep), while recording.
        jitter_seed: chaos,
        ..Default::default()
    };
    // SAFETY: ConfigHeader is repr(C) plain data.
    unsafe {
        std::slice::from_raw_parts(
            &hdr as *const _ as *const u8,
            std::mem::size_of::<ConfigHeader>(),
        )
    }
    .to_vec()
}

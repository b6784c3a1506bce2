//! The launcher's watchdog: reads the runtime's per-thread status slots (shared memory) to
//! tell a stuck replay (every thread waits) and a recorded deadlock (every thread blocked for
//! good), and names what they wait on (symbols of the program's data, call sites).

use reprise_proto::*;
use std::time::{Duration, Instant};

/// How long every thread must stay blocked, unchanged, before the recorder calls it a deadlock.
const DEADLOCK_AFTER: Duration = Duration::from_secs(1);

/// Reads the status region and decides when a replay is stuck.
pub(crate) struct Watchdog {
    base: *const u8,
    timeout: Option<Duration>,
    last_sig: Vec<(u32, u64)>,
    stable_since: Instant,
    /// Deadlock detection: the last blocked-state snapshot and since when it held.
    dl_sig: Vec<(u32, u32, u64, u64)>,
    dl_since: Instant,
    /// Cut-short replay: the last (state, waits for, events) snapshot and since when it held.
    cut_sig: Vec<(u32, u32, u64)>,
    cut_since: Instant,
}

impl Watchdog {
    pub(crate) fn new(base: *const u8, timeout: Option<Duration>) -> Self {
        Watchdog {
            base,
            timeout,
            last_sig: Vec::new(),
            stable_since: Instant::now(),
            dl_sig: Vec::new(),
            dl_since: Instant::now(),
            cut_sig: Vec::new(),
            cut_since: Instant::now(),
        }
    }

    pub(crate) fn header(&self) -> &StatusHeader {
        // SAFETY: the header is at the start of the region; all fields atomic.
        unsafe { &*(self.base as *const StatusHeader) }
    }

    /// Ask the runtime to end the process with `sig` whatever the program's handler for it.
    pub(crate) fn request_end(&self, sig: i32) {
        self.header()
            .end_request
            .store(sig as u32, std::sync::atomic::Ordering::SeqCst);
    }

    /// Record: Some(report) once every live thread has been blocked for good (each in a wait
    /// that only another thread can end), unchanged, for [`DEADLOCK_AFTER`].
    pub(crate) fn deadlock(&mut self, pid: i32) -> Option<String> {
        use std::sync::atomic::Ordering::Relaxed;
        let n = (self.header().nthreads.load(Relaxed) as usize).min(MAX_THREADS);
        let sig: Vec<(u32, u32, u64, u64)> = (0..n)
            .map(|i| {
                let s = self.slot(i);
                (
                    s.state.load(Relaxed),
                    s.waits_on.load(Relaxed),
                    s.events.load(Relaxed),
                    s.object.load(Relaxed),
                )
            })
            .collect();
        let live: Vec<(usize, &_)> = sig
            .iter()
            .enumerate()
            .filter(|(_, (s, ..))| *s != ST_NONE && *s != ST_EXITED)
            .collect();
        let stuck = !live.is_empty()
            && live
                .iter()
                .all(|(_, (s, on, ..))| *s == ST_BLOCKED && *on != WAIT_NONE);
        if !stuck || sig != self.dl_sig {
            self.dl_sig = if stuck { sig } else { Vec::new() };
            self.dl_since = Instant::now();
            return None;
        }
        if self.dl_since.elapsed() < DEADLOCK_AFTER {
            return None;
        }
        let mut r = String::from("deadlock: every thread is blocked, waiting for another");
        let names = Symbols::of(pid);
        let sym = crate::sym::Symbolizer::new(std::path::Path::new(&format!("/proc/{pid}/exe")));
        for (i, &(_, on, e, obj)) in live {
            let name = names.name(obj);
            let what = match on {
                WAIT_LOCK => format!(
                    "waits to lock {name}{}",
                    self.mutex_holder(pid, obj)
                        .map(|h| format!(", held by thread {h}"))
                        .unwrap_or_default()
                ),
                WAIT_COND => format!("waits on a condition variable (with mutex {name})"),
                WAIT_JOIN => "waits to join a thread".to_string(),
                WAIT_BARRIER => format!("waits at barrier {name}"),
                WAIT_ONCE => format!("waits for another thread's initialisation of {name}"),
                WAIT_FUTEX => format!("waits on futex {name} (an atomic wait of its own)"),
                _ => "waits".to_string(),
            };
            let ktid = self.slot(i).ktid.load(Relaxed);
            let at = sym
                .as_ref()
                .and_then(|sym| crate::sym::blocked_call_site(sym, pid, ktid))
                .map(|(pc, p)| format!(", called at {pc:#x} ({p})"))
                .unwrap_or_default();
            r.push_str(&format!("\n  thread {i} at event {e} {what}{at}"));
        }
        Some(r)
    }

    /// The thread holding the glibc mutex at `obj` in process `pid` (its owner's kernel id, at
    /// offset 8 of `pthread_mutex_t`), when that names one of the program's threads.
    pub(crate) fn mutex_holder(&self, pid: i32, obj: u64) -> Option<usize> {
        use std::sync::atomic::Ordering::Relaxed;
        let mut owner: i32 = 0;
        let local = libc::iovec {
            iov_base: (&mut owner as *mut i32).cast(),
            iov_len: 4,
        };
        let remote = libc::iovec {
            iov_base: (obj as usize + 8) as *mut libc::c_void,
            iov_len: 4,
        };
        // SAFETY: reads 4 bytes of our child into `owner`; a bad address fails cleanly.
        let n = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
        if n != 4 || owner <= 0 {
            return None;
        }
        let count = (self.header().nthreads.load(Relaxed) as usize).min(MAX_THREADS);
        (0..count).find(|&i| self.slot(i).ktid.load(Relaxed) == owner as u32)
    }

    /// Replay of a cut-short recording: whether every live thread went as far as the trace
    /// goes: parked at the end of its recorded data, blocked, or waiting for a turn of a thread
    /// that is one of those (a cycle of turn waits is an impossible schedule, left to the
    /// stuck report), unchanged for 500 ms.
    pub(crate) fn at_cut(&mut self) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        let n = (self.header().nthreads.load(Relaxed) as usize).min(MAX_THREADS);
        let sig: Vec<(u32, u32, u64)> = (0..n)
            .map(|i| {
                let s = self.slot(i);
                (
                    s.state.load(Relaxed),
                    s.waits_for.load(Relaxed),
                    s.events.load(Relaxed),
                )
            })
            .collect();
        if sig != self.cut_sig {
            self.cut_sig = sig;
            self.cut_since = Instant::now();
            return false;
        }
        if self.cut_since.elapsed() < Duration::from_millis(500) {
            return false;
        }
        let live = sig
            .iter()
            .filter(|(s, _, _)| *s != ST_NONE && *s != ST_EXITED);
        if live.clone().count() == 0
            || !live
                .clone()
                .all(|(s, _, _)| matches!(*s, ST_AT_END | ST_WAIT_TURN | ST_BLOCKED))
        {
            return false;
        }
        sig.iter().all(|&(s, w, _)| {
            if s != ST_WAIT_TURN {
                return true;
            }
            let mut at = w;
            for _ in 0..=n {
                match sig.get(at as usize) {
                    Some(&(ST_WAIT_TURN, next, _)) => at = next,
                    Some(_) => return true,
                    None => return false, // waits for the strategy's log, or an unknown thread
                }
            }
            false
        })
    }

    /// Whether every thread of `finals` is where the recording's was: parked at the end of
    /// its recorded events, exited, or waiting (blocked, or for a turn) at its final count.
    pub(crate) fn reached(&self, finals: &[(u32, u64)]) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        finals.iter().all(|&(tid, n)| {
            let st = self.slot(tid as usize);
            match st.state.load(Relaxed) {
                ST_EXITED | ST_AT_END => true,
                ST_BLOCKED | ST_WAIT_TURN => st.events.load(Relaxed) >= n,
                _ => false,
            }
        })
    }

    pub(crate) fn slot(&self, i: usize) -> &ThreadStatus {
        // SAFETY: the region is STATUS_SIZE bytes with MAX_THREADS slots; all fields atomic.
        unsafe { &*(self.base.add(status_slot_off(i)) as *const ThreadStatus) }
    }

    pub(crate) fn check(&mut self, pid: i32) -> Option<String> {
        let timeout = self.timeout?;
        // SAFETY: the header is at the start of the region.
        let hdr = unsafe { &*(self.base as *const StatusHeader) };
        let n = (hdr.nthreads.load(std::sync::atomic::Ordering::Relaxed) as usize).min(MAX_THREADS);
        let sig: Vec<(u32, u64)> = (0..n)
            .map(|i| {
                let s = self.slot(i);
                (
                    s.state.load(std::sync::atomic::Ordering::Relaxed),
                    s.events.load(std::sync::atomic::Ordering::Relaxed),
                )
            })
            .collect();
        if sig != self.last_sig {
            self.last_sig = sig;
            self.stable_since = Instant::now();
            return None;
        }
        let live: Vec<&(u32, u64)> = sig
            .iter()
            .filter(|(s, _)| *s != ST_NONE && *s != ST_EXITED)
            .collect();
        let all_waiting = !live.is_empty()
            && live
                .iter()
                .all(|(s, _)| matches!(*s, ST_WAIT_TURN | ST_AT_END | ST_BLOCKED | ST_EXIT_WAIT))
            && live
                .iter()
                .any(|(s, _)| matches!(*s, ST_WAIT_TURN | ST_EXIT_WAIT | ST_AT_END));
        let stable = self.stable_since.elapsed();
        if (all_waiting && stable > Duration::from_millis(1500)) || stable > timeout {
            let mut r = String::from(if all_waiting {
                "replay is stuck: every thread waits"
            } else {
                "replay made no progress within the timeout"
            });
            let sym =
                crate::sym::Symbolizer::new(std::path::Path::new(&format!("/proc/{pid}/exe")));
            for (i, (s, e)) in sig.iter().enumerate() {
                let st = self.slot(i);
                let what = match *s {
                    ST_WAIT_TURN if st.waits_for.load(std::sync::atomic::Ordering::Relaxed) == reprise_proto::WAITS_FOR_MODEL => {
                        "waits for the strategy's log to allow its next event".to_string()
                    }
                    ST_WAIT_TURN => format!(
                        "waits for its turn on stripe {}, which the trace gives to thread {} next",
                        st.stripe.load(std::sync::atomic::Ordering::Relaxed),
                        st.waits_for.load(std::sync::atomic::Ordering::Relaxed)
                    ),
                    ST_AT_END => "reached the end of its recorded events".to_string(),
                    ST_BLOCKED if st.waits_on.load(std::sync::atomic::Ordering::Relaxed) == WAIT_FUTEX => {
                        "is blocked in a futex wait of its own (synchronisation through atomics, which the trace does not order)".to_string()
                    }
                    ST_BLOCKED => "is blocked in a lock, barrier or join".to_string(),
                    ST_EXIT_WAIT => "is ending the process and waits for the others to reach their recorded ends".to_string(),
                    ST_EXITED => "has exited".to_string(),
                    ST_RUNNING => "is running".to_string(),
                    _ => continue,
                };
                let ktid = st.ktid.load(std::sync::atomic::Ordering::Relaxed);
                let at = sym
                    .as_ref()
                    .filter(|_| *s != ST_EXITED)
                    .and_then(|sym| crate::sym::blocked_call_site(sym, pid, ktid))
                    .map(|(pc, p)| format!(", called at {pc:#x} ({p})"))
                    .unwrap_or_default();
                r.push_str(&format!("\n  thread {i} at event {e} {what}{at}"));
            }
            return Some(r);
        }
        None
    }
}

/// Names of the program's data objects, from the symbol tables of the files mapped in process
/// `pid` (a deadlock report names `mutex_a`, not an address, when the binary has symbols).
pub(crate) struct Symbols {
    /// (start, end, name) of each object, by address in the process.
    spans: Vec<(u64, u64, String)>,
}

impl Symbols {
    pub(crate) fn of(pid: i32) -> Symbols {
        use object::{Object, ObjectSymbol};
        let mut spans = Vec::new();
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
        // Each file's load bias: its first mapping's start minus that mapping's file offset.
        let mut seen = std::collections::HashSet::new();
        for line in maps.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 6 || !f[5].starts_with('/') || !seen.insert(f[5].to_string()) {
                continue;
            }
            let (Some((lo, _)), Ok(off)) = (f[0].split_once('-'), u64::from_str_radix(f[2], 16))
            else {
                continue;
            };
            let Ok(lo) = u64::from_str_radix(lo, 16) else {
                continue;
            };
            let Ok(data) = std::fs::read(f[5]) else {
                continue;
            };
            let Ok(file) = object::File::parse(&*data) else {
                continue;
            };
            // A position-dependent executable is mapped at its own addresses.
            let bias = if file.kind() == object::ObjectKind::Executable {
                0
            } else {
                lo - off
            };
            for s in file.symbols() {
                if s.kind() == object::SymbolKind::Data && s.size() > 0 {
                    if let Ok(n) = s.name() {
                        let a = s.address() + bias;
                        spans.push((a, a + s.size(), n.to_string()));
                    }
                }
            }
        }
        Symbols { spans }
    }

    /// `name` (or `name+offset`) with the address, or the address alone.
    pub(crate) fn name(&self, addr: u64) -> String {
        match self.spans.iter().find(|(a, b, _)| (*a..*b).contains(&addr)) {
            Some((a, _, n)) if *a == addr => format!("`{n}` ({addr:#x})"),
            Some((a, _, n)) => format!("`{n}+{}` ({addr:#x})", addr - a),
            None => format!("{addr:#x}"),
        }
    }
}

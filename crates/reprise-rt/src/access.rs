//! What every runtime entry does with an event: the safe point (the previous access is
//! complete, fold its value into the digest and release its stripe), the turn on the new
//! access's stripe, the order-sensitive digest and its checkpoints, and the per-thread log
//! of results and digests. Record and replay run the same code; replay additionally compares
//! each checkpoint and each result with the recording as it goes, so a divergence is named at
//! the first window where it shows.
#![allow(unsafe_code)]

use crate::leap;
use crate::state::{self, Thread, LOG_BUF};
use core::sync::atomic::Ordering;
use reprise_proto::*;

/// Event kinds folded into the digest (and counted per thread for `F_KINDS`).
pub use reprise_proto::kind;

/// Order-sensitive mixing step of the digests.
#[inline(always)]
pub fn mix(d: u64, x: u64) -> u64 {
    (d ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29)
}

/// Read the `size` bytes at `addr` as a digest word (all of them: a ranged access's every byte).
///
/// # Safety
/// `[addr, addr+size)` was just accessed by the program and is still mapped (the caller runs
/// at the first safe point after that access).
#[inline(always)]
pub unsafe fn value_at(addr: usize, size: usize) -> u64 {
    // SAFETY: per the function contract; unaligned volatile reads of program memory.
    unsafe {
        match size {
            1 => core::ptr::read_volatile(addr as *const u8) as u64,
            2 => core::ptr::read_unaligned(addr as *const u16) as u64,
            4 => core::ptr::read_unaligned(addr as *const u32) as u64,
            8 => core::ptr::read_unaligned(addr as *const u64),
            _ => {
                let n = size;
                let mut h = 0u64;
                let mut i = 0;
                while i + 8 <= n {
                    h = mix(h, core::ptr::read_unaligned((addr + i) as *const u64));
                    i += 8;
                }
                while i < n {
                    h = mix(h, core::ptr::read_volatile((addr + i) as *const u8) as u64);
                    i += 1;
                }
                h
            }
        }
    }
}

/// The safe point: fold the pending access's value and release held stripes.
#[inline(always)]
pub fn safe_point(t: &mut Thread) {
    fold_pending(t);
    leap::release_held(t);
    crate::ownership::publish(t.sh());
}

/// Fold the pending access's value into the digest (without releasing).
#[inline(always)]
pub fn fold_pending(t: &mut Thread) {
    if t.sh().pending_size.get() != 0 {
        // SAFETY: the pending access completed (we are at the next runtime entry) and no
        // unmapping call ran in between: munmap and free are runtime entries themselves.
        let v = unsafe {
            value_at(
                t.sh().pending_addr.get() as usize,
                t.sh().pending_size.get() as usize,
            )
        };
        t.sh().digest.set(mix(t.sh().digest.get(), v));
        // Read before it is cleared: a requester that sees it cleared may take the granule
        // (`handover::folding`).
        core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::Release);
        t.sh().pending_size.set(0);
    }
}

/// Drop the pending access without reading it (it faulted).
pub fn forget_pending(t: &mut Thread) {
    t.sh().pending_size.set(0);
}

/// Count one event at vector position `pos` of stripe `s`, fold it, checkpoint if due.
#[inline(always)]
pub fn count_event(t: &mut Thread, s: u64, pos: u64, k: u64) {
    t.sh()
        .digest
        .set(mix(t.sh().digest.get(), (pos << 20) ^ (s << 4) ^ k));
    t.sh().kinds[k as usize % KINDS].bump();
    let e = t.sh().events.load(Ordering::Relaxed) + 1;
    crate::ownership::held::replay_releases(t, e);
    t.sh().events.store(e, Ordering::Relaxed);
    // The entry was counted by `entry::enter`: the event is not another.
    t.entry_bias = t.entry_bias.wrapping_sub(1);
    // A compare, not a division, on the hot path: `next_ckpt` is the next multiple of the
    // checkpoint interval (0 until the thread's first event computes it).
    if e >= t.next_ckpt {
        checkpoint_due(t, e);
    }
}

/// The slow half of [`count_event`]: checkpoint when `e` is a multiple of the interval and
/// compute the next one.
#[cold]
fn checkpoint_due(t: &mut Thread, e: u64) {
    let every = state::CHECKPOINT.load(Ordering::Relaxed);
    if e.is_multiple_of(every) {
        checkpoint(t, e);
    }
    t.next_ckpt = (e / every + 1) * every;
}

/// Log (record) and compare (replay) a digest checkpoint at event `e`.
#[cold]
pub fn checkpoint(t: &mut Thread, e: u64) {
    state::status(t.tid).events.store(e, Ordering::Relaxed);
    let d = t.sh().digest.get();
    if state::REPLAY.load(Ordering::Relaxed)
        && state::config().end.kind != END_UNKNOWN
        && state::FINISHER.load(Ordering::Relaxed) != t.tid
    {
        if let Some(ti) = state::thread_index(t.tid) {
            if t.next_digest >= ti.digests_len as usize {
                // The recording ended before this thread got here (another thread ended the
                // process while it ran on past its last event, say to its end): it parks, as
                // it was stopped then, and logs nothing the recording does not have.
                crate::leap::release_held(t);
                crate::ownership::set_free(t.sh());
                crate::leap::park_forever(t.tid, ST_AT_END);
            }
        }
    }
    log_pair(t, R_DIGEST, e, d);
    if state::REPLAY.load(Ordering::Relaxed) {
        let Some(ti) = state::thread_index(t.tid) else {
            diverge(
                t,
                e,
                format_args!("thread {} did not exist in the recording", t.tid),
            );
        };
        let ds = state::pairs(ti.digests_off, ti.digests_len);
        let i = t.next_digest;
        if i >= ds.len() {
            // Past the recorded end: the thread parks at its next turn (early termination).
            return;
        }
        t.next_digest += 1;
        let rec = ds[i];
        // The window: past the last checkpoint that matched, up to this one (a thread's last
        // checkpoint is at its end, not at a multiple of the interval).
        let from = if i > 0 { ds[i - 1].event + 1 } else { 1 };
        let last = LastAccess(t.sh().pending_addr.get() as usize);
        if rec.event != e {
            // Another number of events since that checkpoint: the thread took another path
            // (or ended elsewhere).
            diverge(
                t,
                e,
                format_args!(
                    "thread {} diverged in events {}..{}: its next checkpoint was at event {} in the recording, at event {} now (digest {:#018x} recorded, {:#018x} now){}",
                    t.tid,
                    from,
                    e.min(rec.event),
                    rec.event,
                    e,
                    rec.value,
                    d,
                    last
                ),
            );
        }
        if rec.value != d {
            diverge(
                t,
                e,
                format_args!(
                    "thread {} diverged in events {}..{}: digest {:#018x} recorded, {:#018x} now{}",
                    t.tid, from, e, rec.value, d, last
                ),
            );
        }
    }
}

/// " (last access at 0xADDR)" when the thread has a pending access's address (LEAP and the
/// model strategies, and ownership's full verification), else nothing.
struct LastAccess(usize);
impl core::fmt::Display for LastAccess {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        if self.0 != 0 {
            write!(f, " (last access at {:#x})", self.0)?;
        }
        Ok(())
    }
}

/// Report a replay divergence to the launcher and end the process with status 125.
#[cold]
pub fn diverge(t: &Thread, e: u64, msg: core::fmt::Arguments<'_>) -> ! {
    struct Buf {
        b: [u8; 600],
        n: usize,
    }
    impl core::fmt::Write for Buf {
        fn write_str(&mut self, s: &str) -> core::fmt::Result {
            for &c in s.as_bytes() {
                if self.n < self.b.len() {
                    self.b[self.n] = c;
                    self.n += 1;
                }
            }
            Ok(())
        }
    }
    // Where the thread is (the access or call whose callback saw it), for the source line.
    crate::channel::send_stack(t.tid, STACK_DIVERGE, None);
    let mut b = Buf {
        b: [0; 600],
        n: FRAME_HDR + 12,
    };
    let _ = core::fmt::write(&mut b, msg);
    let n = b.n;
    put_frame_header(&mut b.b, F_DIVERGE, n - FRAME_HDR);
    b.b[5..9].copy_from_slice(&t.tid.to_le_bytes());
    b.b[9..17].copy_from_slice(&e.to_le_bytes());
    crate::channel::send(&b.b[..n]);
    crate::sys::exit_group(125)
}

/// Append a 16-byte record to the thread's log, flushing it when full.
pub fn log_pair(t: &Thread, tag: u8, a: u64, b: u64) {
    log_pair_of(t.tid, tag, a, b)
}

/// [`log_pair`] into thread `tid`'s log (the ending thread logs the others' final checkpoints).
pub fn log_pair_of(tid: u32, tag: u8, a: u64, b: u64) {
    state::log(tid).with(|l| {
        if tag == R_EDGE {
            // Counted under the log's lock, in the order of the list.
            let sh = state::shared(tid);
            sh.edges_logged.bump();
            sh.last_edge_event.set(a);
        }
        if l.len + 17 > LOG_BUF - FRAME_HDR - 4 {
            flush_log_locked(tid, l);
        }
        let o = FRAME_HDR + 4 + l.len;
        l.bytes[o] = tag;
        l.bytes[o + 1..o + 9].copy_from_slice(&a.to_le_bytes());
        l.bytes[o + 9..o + 17].copy_from_slice(&b.to_le_bytes());
        l.len += 17;
    });
}

/// Log input bytes read at the current event (split into records of at most DATA_MAX).
pub fn log_data(t: &Thread, bytes: &[u8]) {
    let e = t.sh().events.load(Ordering::Relaxed);
    let tid = t.tid;
    for chunk in bytes.chunks(DATA_MAX) {
        state::log(tid).with(|l| {
            if l.len + 13 + chunk.len() > LOG_BUF - FRAME_HDR - 4 {
                flush_log_locked(tid, l);
            }
            let o = FRAME_HDR + 4 + l.len;
            l.bytes[o] = R_DATA;
            l.bytes[o + 1..o + 9].copy_from_slice(&e.to_le_bytes());
            l.bytes[o + 9..o + 13].copy_from_slice(&(chunk.len() as u32).to_le_bytes());
            l.bytes[o + 13..o + 13 + chunk.len()].copy_from_slice(chunk);
            l.len += 13 + chunk.len();
        });
    }
}

/// Replay: fill `out` with the input bytes the recording read at this event.
pub fn take_data(t: &mut Thread, out: &mut [u8]) {
    let e = t.sh().events.load(Ordering::Relaxed);
    let Some(ti) = state::thread_index(t.tid) else {
        diverge(
            t,
            e,
            format_args!("thread {} did not exist in the recording", t.tid),
        );
    };
    // SAFETY: the data area was bounds-checked at init.
    let area = unsafe {
        core::slice::from_raw_parts(
            (crate::layout::CONFIG_ADDR + ti.data_off) as *const u8,
            ti.data_len as usize,
        )
    };
    let mut filled = 0;
    while filled < out.len() {
        let o = t.next_data;
        if o + 12 > area.len() {
            leap::release_held(t);
            leap::park_forever(t.tid, ST_AT_END);
        }
        let ev = u64::from_le_bytes(area[o..o + 8].try_into().unwrap());
        let n = u32::from_le_bytes(area[o + 8..o + 12].try_into().unwrap()) as usize;
        if ev != e || o + 12 + n > area.len() || filled + n > out.len() {
            diverge(t, e, format_args!("thread {} diverged at event {}: it reads {} input bytes where the recording read data at event {}", t.tid, e, out.len(), ev));
        }
        out[filled..filled + n].copy_from_slice(&area[o + 12..o + 12 + n]);
        filled += n;
        t.next_data = o + 12 + n;
    }
}

/// Append the thread-start record.
pub fn log_start(t: &Thread) {
    let (parent, nth) = (t.parent, t.nth);
    state::log(t.tid).with(|l| {
        let o = FRAME_HDR + 4 + l.len;
        l.bytes[o] = R_START;
        l.bytes[o + 1..o + 5].copy_from_slice(&parent.to_le_bytes());
        l.bytes[o + 5..o + 9].copy_from_slice(&nth.to_le_bytes());
        l.len += 9;
    });
}

fn flush_log_locked(tid: u32, l: &mut state::LogBuf) {
    if l.len == 0 {
        return;
    }
    let n = 4 + l.len;
    put_frame_header(&mut l.bytes, F_THREAD, n);
    l.bytes[5..9].copy_from_slice(&tid.to_le_bytes());
    crate::channel::send(&l.bytes[..FRAME_HDR + n]);
    l.len = 0;
}

/// Send the thread's buffered records.
pub fn flush_log(tid: u32) {
    state::log(tid).with(|l| flush_log_locked(tid, l));
}

/// Replay: whether thread `t`'s next recorded result is `v`, logged at event `e` (a mark a call
/// looks for before it decides how to go on: a cancellation, a static's initialisation).
pub fn next_result_is(t: &Thread, e: u64, v: u64) -> bool {
    next_result_from(t, e, e) == Some(v)
}

/// Replay: thread `t`'s next recorded result, when it was logged at an event from `e` to
/// `last` (not taken).
pub fn next_result_from(t: &Thread, e: u64, last: u64) -> Option<u64> {
    let ti = state::thread_index(t.tid)?;
    let rs = state::pairs(ti.results_off, ti.results_len);
    rs.get(t.sh().next_result.load(Ordering::Relaxed))
        .filter(|r| (e..=last).contains(&r.event))
        .map(|r| r.value)
}

/// A nondeterministic result: recorded while recording; returned from the trace in replay.
/// `live` is the value this run produced (record) or None when replay must not perform the
/// operation and takes the recorded value.
pub fn result(t: &mut Thread, live: Option<u64>) -> u64 {
    let e = t.sh().events.load(Ordering::Relaxed);
    let v = if state::REPLAY.load(Ordering::Relaxed) {
        let Some(ti) = state::thread_index(t.tid) else {
            diverge(
                t,
                e,
                format_args!("thread {} did not exist in the recording", t.tid),
            );
        };
        let rs = state::pairs(ti.results_off, ti.results_len);
        let i = t.sh().next_result.load(Ordering::Relaxed);
        if i >= rs.len() {
            leap::release_held(t);
            leap::park_forever(t.tid, ST_AT_END);
        }
        t.sh().next_result.store(i + 1, Ordering::Release);
        if rs[i].event != e {
            diverge(
                t,
                e,
                format_args!(
                    "thread {} diverged at event {}: its next recorded result belongs to event {}",
                    t.tid, e, rs[i].event
                ),
            );
        }
        rs[i].value
    } else {
        live.unwrap_or(0)
    };
    t.sh()
        .digest
        .set(mix(t.sh().digest.get(), v ^ 0x5245_5355_4c54));
    log_pair(t, R_RESULT, e, v);
    v
}

/// Replay jitter: seeded random delays at callbacks, to prove order is enforced, not lucky.
#[inline(always)]
pub fn jitter(t: &mut Thread) {
    if state::JITTER.load(Ordering::Relaxed) == 0 {
        return;
    }
    t.rng ^= t.rng << 13;
    t.rng ^= t.rng >> 7;
    t.rng ^= t.rng << 17;
    match t.rng % 256 {
        0..=3 => crate::sys::yield_now(),
        4 => crate::sys::sleep_ns(50_000),
        _ => {}
    }
}

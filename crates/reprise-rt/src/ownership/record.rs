//! Record side of `ownership`: taking a granule (lock it, ask its owner or steal it, log the
//! edge), read-shared epochs, and the window batches a transfer moves (see the parent module).

use super::split::{
    false_sharing, fields, is_split, take_subs, with_fields, ALL_SUBS, SPLIT, SUB_SHIFT,
};
use super::*;

/// Log the edge of event `e` from thread `src`'s answer `(completed events, fwd)` ([`request`]):
/// a nonzero `fwd` (the source answered inside an access that had taken granules from others)
/// follows the edge as an [`EDGE_AFTER`] entry.
pub(super) fn add_edge_after(t: &mut Thread, e: u64, src: u32, (src_events, fwd): (u64, u64)) {
    if src != t.tid && (src_events > 0 || fwd > 0) {
        access::log_pair(t, R_EDGE, e, edge_source(src, src_events));
        if fwd > 0 {
            access::log_pair(t, R_EDGE, e, EDGE_AFTER | fwd);
        }
    }
}

/// Ask thread `x` for its granules; returns its completed events when it answered (or was
/// free), with the count of edge-list entries the answer depends on (`Acks::fwd`; 0 when it
/// depends on the completed events alone). The caller has locked the granule it wants.
pub(super) fn request(t: &mut Thread, x: u32, idx: u64) -> (u64, u64) {
    let xs = state::shared(x);
    if xs.mb.free.load(Ordering::SeqCst) != 0 {
        return (xs.mb.done.load(Ordering::Acquire), 0);
    }
    let q0 = xs.mb.ack.seq.load(Ordering::SeqCst);
    xs.mb.req.store(1, Ordering::SeqCst);
    xs.fast_limit.store(0, Ordering::SeqCst);
    super::held::stop(xs);
    if xs.mb.sleeping.load(Ordering::SeqCst) != 0 {
        // The owner itself waits for someone: it answers requests, once awake.
        xs.mb.wake.fetch_add(1, Ordering::SeqCst);
        sys::futex_wake(&xs.mb.wake, 1);
    }
    let mut clock = WaitClock::default();
    let mut asked = None;
    let mut next_steal = handover::STEAL_AFTER_NS;
    let mut polls = 0u32;
    let src = loop {
        if xs.mb.ack.seq.load(Ordering::Acquire) != q0 {
            let done = xs.mb.ack.done.load(Ordering::Acquire);
            break (done, xs.mb.ack.fwd.load(Ordering::Relaxed));
        }
        // The free state every 8th time (the first included): its line is the one the owner
        // writes on its way to answering (see `Mailbox`).
        if polls.is_multiple_of(8) && xs.mb.free.load(Ordering::SeqCst) != 0 {
            break (xs.mb.done.load(Ordering::Acquire), 0);
        }
        polls = polls.wrapping_add(1);
        if let Some(g) = asked.and_then(|serial| handover::granted(t, serial)) {
            break (g, 0);
        }
        answer(t.sh());
        if state::mode() == state::M_DONE {
            // The process is ending: this thread stops here, as at any runtime entry.
            set_free(t.sh());
            crate::leap::park_forever(t.tid, ST_AT_END);
        }
        let Some(waited) = clock.tick(t, x) else {
            continue;
        };
        if waited >= next_steal {
            // The owner is slow to answer (perhaps not running at all): look for itself.
            if let Some(src) = handover::steal(xs, slot_tag(idx)) {
                break (src, 0);
            }
            next_steal = waited + handover::STEAL_EVERY_NS;
        }
        if waited > handover::SIGNAL_AFTER_NS && asked.is_none() {
            // The owner is slow to reach a safe point: ask its handler, and be woken.
            asked = Some(handover::ask(t, x, slot_tag(idx)));
        }
        if asked.is_some() && waited > handover::SLEEP_AFTER_NS {
            // Sleep until the owner answers, turns free or grants (each wakes us), or a
            // request to this thread needs an answer (bounded by the timeout).
            let w = t.sh().mb.wake.load(Ordering::SeqCst);
            t.sh().mb.sleeping.store(1, Ordering::SeqCst);
            if xs.mb.ack.seq.load(Ordering::SeqCst) == q0
                && xs.mb.free.load(Ordering::SeqCst) == 0
                && t.sh().mb.grant.load(Ordering::SeqCst) == 0
                && t.sh().mb.req.load(Ordering::SeqCst) == 0
                && state::mode() != state::M_DONE
            {
                sys::futex_wait_for(&t.sh().mb.wake, w, 200_000);
            }
            t.sh().mb.sleeping.store(0, Ordering::SeqCst);
        } else if waited > 5_000 {
            // On an oversubscribed machine the owner may need this CPU.
            sys::yield_now();
        }
    };
    if asked.is_some() {
        handover::withdraw(t);
    }
    clock.done(t);
    src
}

/// Read-shared epochs: the current epoch and, per thread, the latest completion any
/// read-shared transition so far depended on.
static EPOCH_LOCK: AtomicU32 = AtomicU32::new(0);
static EPOCH: AtomicU32 = AtomicU32::new(0);
static CUM: [AtomicU64; MAX_THREADS] = [const { AtomicU64::new(0) }; MAX_THREADS];
/// The `fwd` of the answer that gave each thread's [`CUM`] (0: none): the pair is one answer's,
/// so that an `EDGE_AFTER` entry follows its own edge's source event.
static CUM_FWD: [AtomicU64; MAX_THREADS] = [const { AtomicU64::new(0) }; MAX_THREADS];

fn epoch_lock(t: &Thread) {
    let mut spins = 0;
    while EPOCH_LOCK.swap(1, Ordering::Acquire) != 0 {
        answer(t.sh());
        backoff(&mut spins);
    }
}

fn epoch_unlock() {
    EPOCH_LOCK.store(0, Ordering::Release);
}

/// A new read-shared epoch whose granule depended on `x`'s answer `(src, fwd)`; None when
/// epochs ran out.
fn new_epoch(t: &Thread, x: u32, (src, fwd): (u64, u64)) -> Option<u32> {
    epoch_lock(t);
    let c = EPOCH.load(Ordering::Relaxed) + 1;
    let r = if c > MAX_EPOCH {
        None
    } else {
        // A later answer covers an earlier one: its source event is at least as late, and
        // the edges an earlier one forwarded were taken at events it completed.
        let (cum, cf) = (&CUM[x as usize], &CUM_FWD[x as usize]);
        let old = cum.load(Ordering::Relaxed);
        if src > old {
            cum.store(src, Ordering::Relaxed);
            cf.store(fwd, Ordering::Relaxed);
        } else if src == old {
            cf.fetch_max(fwd, Ordering::Relaxed);
        }
        EPOCH.store(c, Ordering::Relaxed);
        Some(c)
    };
    epoch_unlock();
    r
}

/// Synchronise with every read-shared transition so far (edges from their sources).
fn sync_epochs(t: &mut Thread, e: u64) {
    epoch_lock(t);
    let c = EPOCH.load(Ordering::Relaxed);
    let n = state::NEXT_TID
        .load(Ordering::SeqCst)
        .min(MAX_THREADS as u32);
    for x in 0..n {
        let src = CUM[x as usize].load(Ordering::Relaxed);
        let fwd = CUM_FWD[x as usize].load(Ordering::Relaxed);
        add_edge_after(t, e, x, (src, fwd));
    }
    epoch_unlock();
    t.set_rdsh_seen(c);
}

/// Take granule `addr` for a read or a write of event `e`.
// Over 80 lines: one loop over the granule's shadow states, each case a compare-exchange on
// (or a wait for) the same shadow word with the same spin count; the record side's slow path.
#[allow(clippy::too_many_lines)]
fn acquire_one(t: &mut Thread, addr: usize, subs: u32, write: bool, e: u64) {
    let sh = shadow(addr);
    let mut spins = 0;
    loop {
        let s = sh.load(Ordering::Acquire);
        if s == t.own_me() || (!write && s == t.own_me() | RDEX_BIT) {
            return;
        }
        if is_split(s) {
            if take_subs(t, addr, s, subs, write, e) {
                return;
            }
            answer(t.sh());
            backoff(&mut spins);
            continue;
        }
        if s >= SHARED {
            let c = s - SHARED;
            if !write {
                if c <= t.rdsh_seen() {
                    return;
                }
                sync_epochs(t, e);
                continue;
            }
            if sh
                .compare_exchange(s, LOCKED | t.tid, Ordering::SeqCst, Ordering::Relaxed)
                .is_err()
            {
                continue;
            }
            // Any thread may be reading it: each one answers (or is free). The answers cover
            // every read-shared granule of the window, taken along (as `lock_batch` does for
            // one owner's).
            let idx = slot_of(addr);
            let batch = lock_batch(t, idx, SHARED);
            let n = state::NEXT_TID
                .load(Ordering::SeqCst)
                .min(MAX_THREADS as u32);
            for x in 0..n {
                if x != t.tid {
                    let src = request(t, x, idx);
                    add_edge_after(t, e, x, src);
                }
            }
            sh.store(t.own_me(), Ordering::Release);
            unlock_batch(idx, batch, t.own_me());
            return;
        }
        if s & LOCKED != 0 {
            // Another thread is taking it over.
            answer(t.sh());
            backoff(&mut spins);
            continue;
        }
        if s == 0 {
            if sh
                .compare_exchange(0, t.own_me(), Ordering::SeqCst, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
            continue;
        }
        if write && s == t.own_me() | RDEX_BIT {
            // Upgrade: nobody else may read it (unless someone is taking it over right now,
            // which the compare-exchange sees).
            if sh
                .compare_exchange(s, t.own_me(), Ordering::SeqCst, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
            continue;
        }
        let x = (s & !RDEX_BIT) - 1;
        if sh
            .compare_exchange(s, LOCKED | t.tid, Ordering::SeqCst, Ordering::Relaxed)
            .is_err()
        {
            continue;
        }
        let idx = slot_of(addr);
        // Two threads taking turns writing disjoint bytes: split the granule, the taker
        // getting the sub-granules it touches, the owner keeping the rest. The window's other
        // granules in the same state are split alike (the taker gets the same sub-granules of
        // each): false sharing comes in runs (fft's bit-reversal copy writes alternate 16-byte
        // elements of every line from the two threads), and one answer then covers the run,
        // where each line was split by a round trip of its own (fft `-t 2 -n 32768`, merges
        // already batched: 170 000-185 000 edges -> 122 000-127 000). A wrong guess costs at
        // most one transfer of those fields back to the owner, which then owns all four and
        // merges the line again. (Counting reads' takes too split radix's per-thread
        // histograms sharing a line, whose increments take it by their reads, but gave lu's
        // readers of a block's edge lines a field each instead of sharing them: lu `-t 2`
        // record/floor 2.3 -> 2.7, measured and left.)
        let split = write && false_sharing(idx, t.tid, x, subs);
        let batch = lock_batch(t, idx, s);
        let src = request(t, x, idx);
        add_edge_after(t, e, x, src);
        let next = if split {
            with_fields(SPLIT | fields(ALL_SUBS, s & !RDEX_BIT), subs, t.own_me())
        } else if write {
            t.own_me()
        } else if s & RDEX_BIT == 0 || !READ_SHARING {
            t.own_me() | RDEX_BIT
        } else {
            // A second reader: share it.
            match new_epoch(t, x, src) {
                Some(c) => SHARED | c,
                None => t.own_me() | RDEX_BIT,
            }
        };
        sh.store(next, Ordering::Release);
        unlock_batch(idx, batch, next);
        return;
    }
}

/// log2 of the granules moved by one transfer at most: the aligned window (1 KiB) around the
/// requested granule. Within a window, slots are `window base | j` (the address block's mix
/// constant is the same for all), so the handover handler refuses a whole window when its
/// pending access lies in it.
pub const BATCH_SHIFT: u32 = 4;
// `lock_window` returns the window's locked slots as a `u32` bit mask (with 64 slots, `1 << j`
// wrapped and a transfer left granules locked for good: the recording stalled). Measured
// at 5 (2 KiB windows): fft `-t 2` made 115 000 requests instead of 135 000, but waited longer
// for them (148-199 ms against 62-73 ms in all).
const _: () = assert!(BATCH_SHIFT <= 5);

/// Lock, for the transfer of slot `idx` from its owner, the other granules of its window that
/// the owner holds in the same state `s`: data that migrates between threads (a transpose, a
/// scatter, a producer's buffer) then moves a window per round trip, not a line. The answer
/// that covers `idx` covers them (every access of the owner up to its answer is complete, and
/// the locks stop later ones). `s == SHARED` locks every read-shared granule of the window,
/// whatever its epoch (a write that asked every thread). Returns the bit mask of the locked
/// window slots.
fn lock_batch(t: &Thread, idx: u64, s: u32) -> u32 {
    // `SHARED` stands for every read-shared epoch.
    lock_window(idx, |v| {
        (v == s || (s == SHARED && v > SHARED)).then_some(LOCKED | t.tid)
    })
}

/// Lock the other granules of slot `idx`'s window whose shadow word `v` the caller wants
/// (`lock(v)`: the locked word to set, by a compare-exchange from `v`); returns the bit mask of
/// the window slots locked.
pub(super) fn lock_window(idx: u64, lock: impl Fn(u32) -> Option<u32>) -> u32 {
    let base = idx & !((1 << BATCH_SHIFT) - 1);
    let mut taken = 0u32;
    for j in 0..1u32 << BATCH_SHIFT {
        let k = base | u64::from(j);
        if k == idx {
            continue;
        }
        let w = slot_word(k);
        let v = w.load(Ordering::Relaxed);
        if let Some(l) = lock(v) {
            if w.compare_exchange(v, l, Ordering::SeqCst, Ordering::Relaxed)
                .is_ok()
            {
                taken |= 1 << j;
            }
        }
    }
    taken
}

/// Give the granules that [`lock_window`] locked (for [`lock_batch`] or a split granule's
/// merge) their new state `next`.
pub(super) fn unlock_batch(idx: u64, mut taken: u32, next: u32) {
    let base = idx & !((1 << BATCH_SHIFT) - 1);
    while taken != 0 {
        let j = taken.trailing_zeros();
        slot_word(base | u64::from(j)).store(next, Ordering::Release);
        taken &= taken - 1;
    }
}

/// Take every granule of the byte ranges (ascending within each range). If the thread answered
/// a request meanwhile, it may have handed over a granule it had already taken: take them again.
pub(super) fn acquire_ranges(t: &mut Thread, ranges: &[(usize, usize, bool)], e: u64) {
    loop {
        let before = t.sh().mb.ack.seq.load(Ordering::Relaxed);
        for &(addr, size, write) in ranges {
            if size == 0 {
                continue;
            }
            let mut g = addr >> GRANULE_SHIFT;
            let last = (addr + size - 1) >> GRANULE_SHIFT;
            while g <= last {
                // The sub-granules of this granule the range touches (for a split one).
                let lo = addr.max(g << GRANULE_SHIFT);
                let hi = (addr + size - 1).min(((g + 1) << GRANULE_SHIFT) - 1);
                let (a, b) = ((lo >> SUB_SHIFT) & 3, (hi >> SUB_SHIFT) & 3);
                let subs = ((1u32 << (b + 1)) - 1) & !((1u32 << a) - 1);
                acquire_one(t, g << GRANULE_SHIFT, subs, write, e);
                g += 1;
            }
        }
        let single = ranges.len() == 1 && {
            let (a, n, _) = ranges[0];
            (a ^ (a + n.max(1) - 1)) >> GRANULE_SHIFT == 0
        };
        if single || t.sh().mb.ack.seq.load(Ordering::Relaxed) == before {
            return;
        }
    }
}

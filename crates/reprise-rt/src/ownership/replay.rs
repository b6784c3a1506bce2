//! Replay side of `ownership`: a thread at an event with recorded edges waits until each
//! edge's source has passed its source event (see the parent module).

use super::*;

/// Replay: wait until every edge into event `e` is satisfied; park past the recorded end.
pub(super) fn gate_replay(t: &mut Thread, e: u64) {
    let Some(ti) = state::thread_index(t.tid) else {
        access::diverge(
            t,
            e,
            format_args!("thread {} did not exist in the recording", t.tid),
        );
    };
    let end = &state::config().end;
    // The recording's faulting thread may fault inside the callback after its last counted
    // event (reading the value of an access to a bad address): let it run that callback.
    let faulted_here = end.kind == END_FAULT && end.tid == t.tid && e == ti.final_events + 1;
    if end.kind != END_UNKNOWN && e > ti.final_events && !faulted_here {
        // Early termination (seed 001, 2.5): the recording ended before this event.
        set_free(t.sh());
        crate::leap::park_forever(t.tid, ST_AT_END);
    }
    held::replay_clear(t, e);
    let edges = state::pairs(ti.edges_off, ti.edges_len);
    while let Some(p) = edges.get(t.next_edge) {
        // Threads whose edges were taken from this one inside its slow path wait for this.
        t.sh()
            .mb
            .edges_passed
            .store(t.next_edge as u64, Ordering::Release);
        if p.event > e {
            break;
        }
        if held::replay_mark(t, e, p) {
            continue;
        }
        let (x, s) = edge_source_parts(p.value);
        let after = edges.get(t.next_edge + 1).and_then(|q| edge_after(q.value));
        if let (Some(k), true) = (after, p.event == e && (x as usize) < MAX_THREADS) {
            wait_after(t, x, s, k);
            t.next_edge += 2;
            continue;
        }
        if p.event < e || x as usize >= MAX_THREADS {
            access::diverge(
                t,
                e,
                format_args!(
                    "thread {} diverged at event {e}: its recorded edge at event {} from thread {x} was not reached",
                    t.tid, p.event
                ),
            );
        }
        let xs = state::shared(x);
        let mut clock = WaitClock::default();
        let passed = |xs: &Shared| xs.events.load(Ordering::Acquire) > s;
        if !passed(xs) && xs.mb.done.load(Ordering::Acquire) < s {
            // Every access of this thread before `e` is complete: say so before waiting. A
            // thread may wait here for one whose next edge waits for this one's last access
            // (OpenMP's worker, gated after the main thread's access that preceded its own
            // gated one): that one goes on when this count is published, as the recording's
            // requester answered while it waited.
            publish(t.sh());
            // Wait by time, as requesters do: spin (the source is usually running and close),
            // then yield the CPU (it may need it), then sleep briefly. The spin polls `done`,
            // which the source publishes at its event `s + 1` (`ring`), not its count, which
            // shares the line the source writes at every event. The count is read again after
            // each ring: the source may have passed `s + 1` before its limit was lowered.
            if !(ring(xs, s) && passed(xs)) {
                while xs.mb.done.load(Ordering::Acquire) < s {
                    let Some(waited) = clock.tick(t, x) else {
                        continue;
                    };
                    // Every 64 spins, the count (a doorbell raced by the source is never
                    // answered), and the doorbell again (another waiter's, met and cleared,
                    // may have replaced it).
                    if passed(xs) || (ring(xs, s) && passed(xs)) {
                        break;
                    }
                    pause(waited);
                }
            }
        }
        clock.done(t);
        t.next_edge += 1;
    }
    t.sh()
        .mb
        .edges_passed
        .store(t.next_edge as u64, Ordering::Release);
}

/// Replay: wait at an edge from thread `x` after `s` events refined by an `EDGE_AFTER` entry:
/// until `x` has passed the first `k` entries of its edge list (the granules its answer handed
/// over were taken at its pending event), or its next event altogether.
#[cold]
fn wait_after(t: &mut Thread, x: u32, s: u64, k: u64) {
    let xs = state::shared(x);
    let passed = |xs: &Shared| {
        xs.events.load(Ordering::Acquire) > s || xs.mb.edges_passed.load(Ordering::Acquire) >= k
    };
    if passed(xs) {
        return;
    }
    // Every access of this thread before its event is complete (see `gate_replay`).
    publish(t.sh());
    let mut clock = WaitClock::default();
    while !passed(xs) {
        if let Some(waited) = clock.tick(t, x) {
            pause(waited);
        }
    }
    clock.done(t);
}

/// A replay wait's pause after `waited` ns: none at first (the source is usually running and
/// close), then a yield of the CPU (it may need it), then a brief sleep.
fn pause(waited: u64) {
    if waited > 2_000_000 {
        sys::sleep_ns(20_000);
    } else if waited > 5_000 {
        sys::yield_now();
    }
}

/// Replay: ask thread `xs` to publish its completed count (`Mailbox::done`) once it reaches
/// event `s + 1` (a slow entry there: its limit is lowered to it, and [`recompute`] keeps it
/// there until it passed), so that a waiter polls `done`, on the mailbox's line, instead of
/// the count, which shares the line of the fast path's fields: the source writes that line at
/// every event, and each poll took it away (a cache miss per event of the source for as long
/// as anyone waited). True when this call set the doorbell (false: one at `s + 1` or earlier
/// is set already).
fn ring(xs: &Shared, s: u64) -> bool {
    let want = s + 1;
    let set = xs
        .mb
        .replay_want
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |w| {
            (w == 0 || w > want).then_some(want)
        })
        .is_ok();
    if set {
        xs.fast_limit.fetch_min(want, Ordering::SeqCst);
    }
    set
}

//! The door into the runtime: every callback and interposer calls [`enter`] first. It
//! initialises lazily (libstdc++ allocates before `__tsan_init`), passes through when the
//! runtime is off, re-entered, or the thread is unknown, parks threads once the process is
//! ending, and marks the thread as running runtime code until the guard drops.
#![allow(unsafe_code)]

use crate::state::{self, Thread, IN_RT, M_DONE, M_OFF, M_UNINIT};

/// Proof that the current thread is inside the runtime; derefs to its slot.
pub struct Entry {
    t: *mut Thread,
}

impl Entry {
    /// The current thread's slot, borrowed from the entry: one `&mut` at a time.
    #[inline(always)]
    pub fn t(&mut self) -> &mut Thread {
        // SAFETY: `t` is the private part of the current thread's own slot (set by the thread
        // itself). Only this thread makes references to it (other threads, and this thread's
        // signal handlers, reach the slot's `Shared` part, which lies outside it, and the
        // ending thread folds a stopped thread's digest and pending access there too), and
        // the `&mut self` borrow makes this the only one the entry hands out while it lives.
        unsafe { &mut *self.t }
    }
}

impl Drop for Entry {
    #[inline(always)]
    fn drop(&mut self) {
        IN_RT.with(|c| c.set(false));
        // Back in program code: its next system call is caught (a safe point).
        // SAFETY: the current thread's own slot.
        let t = unsafe { &mut *self.t };
        crate::ownership::recompute(t);
        if t.sud_on && !t.sud_hold {
            t.sh()
                .sud
                .store(crate::sud::BLOCK, core::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// Enter the runtime, or None to run the operation natively.
#[inline(always)]
pub fn enter() -> Option<Entry> {
    enter_delivering(true)
}

/// Enter the runtime to log (record) or take (replay) the result of a call the program made
/// before this entry: the signals due at this entry are delivered only once the result is
/// logged, by [`end_then_deliver`] (their handlers still run before the call returns to the
/// program). Replay may then peek at the result before the entry ([`crate::calls`]'s
/// `reprise_peek_result`) and find the call's own, not one of a handler's: bash's SIGCHLD
/// handler reaps `$(...)`'s child while the read of its output that the signal interrupted
/// returns, and replay, draining the pipe by the peeked count before the entry, drained the
/// handler's wait result's worth (a pid) instead of the read's 4096 bytes, so the child could
/// never write its last bytes and the handler's wait for it never returned.
#[inline(always)]
pub fn enter_result_first() -> Option<Entry> {
    enter_delivering(false)
}

/// End an entry made by [`enter_result_first`], then deliver the signals due at it.
pub fn end_then_deliver(e: Entry) {
    let t = e.t;
    drop(e);
    // SAFETY: `t` is the current thread's own slot (from the ended entry), and no entry is
    // open: no other reference to it exists.
    deliver_due(unsafe { &mut *t });
}

/// Deliver the signals due at the thread's current entry, if any (outside runtime state).
#[inline(always)]
fn deliver_due(th: &mut Thread) {
    if th.entries() == th.next_sig_at
        || th
            .sh()
            .sig_pending
            .load(core::sync::atomic::Ordering::Relaxed)
            != 0
    {
        crate::signals::deliver(th);
    }
}

#[inline(always)]
fn enter_delivering(deliver_now: bool) -> Option<Entry> {
    let mut m = state::mode();
    if m == M_UNINIT {
        m = state::init();
    }
    if m <= M_OFF || IN_RT.with(|c| c.get()) {
        return None;
    }
    let t = state::cur();
    if t.is_null() {
        return None;
    }
    if m == M_DONE {
        // SAFETY: t is this thread's slot.
        let th = unsafe { &mut *t };
        if th.passthrough {
            return None;
        }
        IN_RT.with(|c| c.set(true));
        crate::threads::park_after_end(th);
        IN_RT.with(|c| c.set(false));
        return None;
    }
    // SAFETY: t is this thread's own slot.
    let th = unsafe { &mut *t };
    th.entry_bias = th.entry_bias.wrapping_add(1);
    if deliver_now {
        deliver_due(th);
    }
    IN_RT.with(|c| c.set(true));
    // Libraries this thread's last dlopen loaded (runtime work: IN_RT set).
    crate::dl::check();
    if state::status_header()
        .flush_epoch
        .load(core::sync::atomic::Ordering::Relaxed)
        != th.seen_epoch
    {
        // Runtime work (IN_RT set: its own copies are not the program's accesses).
        crate::leap::periodic_flush(th);
    }
    th.sud_hold = th.fd_hold;
    if th.sud_on {
        th.sh()
            .sud
            .store(crate::sud::ALLOW, core::sync::atomic::Ordering::Relaxed);
    }
    Some(Entry { t })
}

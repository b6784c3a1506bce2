//! Ownership handovers by signal: an owner that stays out of the runtime (a long loop with no
//! instrumented access, uninstrumented library code) must not stall the threads that request
//! its granules until its next callback.
//!
//! A requester that has waited a little registers what it wants in its own mailbox (`want`:
//! owner, serial, shadow slot) and sends the owner [`SIG`]. The owner's handler, running in
//! program code, grants every registered request except one for the window of granules (a
//! transfer moves the requested granule's window, see `ownership::lock_batch`) holding its
//! *pending* access: the callback precedes its access, so the granule the thread's last callback
//! checked may still be about to be read or written. Everything else the thread accessed is
//! complete, so the grant's source is the thread's completed event count:
//! * the pending word `Thread::pend` is `(event << 32) | shadow slot`, stored by every
//!   plain-access callback *before* it loads the shadow (so a handler that interrupts the
//!   callback before the store runs before the load, which then sees the requester's lock);
//! * when `pend`'s event equals the thread's count, that event's access may be pending: the
//!   source is the count minus one; when it is the next event (the handler interrupted the
//!   callback before it counted), the source is the count;
//! * atomic callbacks perform the operation themselves, and still leave `pend` naming their
//!   granule until the next callback: the compiler may follow an instrumented atomic load with
//!   an uninstrumented read-modify-write of the same word (GCC's OpenMP reductions: a
//!   `lock cmpxchg` retry loop after `__tsan_atomic64_load`), which must stay ordered with the
//!   load (handed over in between, the loop's retries differed in replay and it stalled).
//!
//! A thread inside the runtime (`IN_RT`) answers at its own safe points and the handler does
//! nothing; a thread that blocks the signal answers at its next callback, as without it.
//! The SIGSYS handler blocks [`SIG`] (it runs system calls for the program), and requesters
//! never signal a *free* thread, so a real blocking call is interrupted only if the thread
//! turned free in the few nanoseconds between the requester's last look and its signal (a
//! sleep or a semaphore wait may then return EINTR early; the outcome is recorded as any).
#![allow(unsafe_code)]

use crate::ownership::held;
use crate::state::{self, Shared, Thread, IN_RT};
use crate::sys;
use core::ffi::c_int;
use core::sync::atomic::{compiler_fence, Ordering};
use reprise_proto::MAX_THREADS;
use rustix::thread::MembarrierCommand;

/// The handover signal: a real-time signal (queued, never merged) programs rarely use.
pub const SIG: c_int = 62;
/// `pend`: nothing pending (no callback yet).
pub const PEND_NONE: u64 = 0;
/// `pend`: a ranged access may be pending on any granule (the handler grants nothing).
pub const PEND_ALL: u64 = u64::MAX;
/// Nanoseconds a requester spins (answering requests to itself) before it signals the owner:
/// an owner running instrumented code answers at its next callback, well within this.
pub const SIGNAL_AFTER_NS: u64 = 20_000;
/// Nanoseconds of waiting after which a requester sleeps on its futex word between checks.
pub const SLEEP_AFTER_NS: u64 = 100_000;

/// Pack a pending access: event `e` on shadow slot `idx` (its tag, `ownership::slot_tag`: the
/// low half), as two 4-byte stores (the event's low half first, then the slot: two
/// instructions where packing the word took four). A reader
/// of the whole word (this thread's handler, a stealer after its barrier) may find the new
/// event with the previous slot; the slot it then refuses is the wrong one, but the callback in
/// progress has not loaded the shadow yet (it does so after the second store), so it sees the
/// granule taken and goes to the slow path; the source that event gives is the count, all of
/// whose accesses are complete.
#[inline(always)]
pub fn pend(t: &Shared, e: u64, idx: u64) {
    // SAFETY: two aligned 4-byte stores into `t.pend` (an `AtomicU64` at an 8-aligned offset of
    // the thread's own shared part, written only by this thread; readers load it whole, and
    // x86-64 makes the two stores visible in program order). Without `nomem` the asm is also a
    // compiler barrier: the handler (on this thread) sees the stores before the callback loads
    // the shadow.
    unsafe {
        core::arch::asm!(
            "movl {e:e}, {hi}({t})",
            "movl {i:e}, {lo}({t})",
            t = in(reg) t as *const Shared,
            e = in(reg) e,
            i = in(reg) idx,
            hi = const core::mem::offset_of!(Shared, pend) + 4,
            lo = const core::mem::offset_of!(Shared, pend),
            options(att_syntax, nostack, preserves_flags),
        );
    }
}

/// Install the handler (record under ownership).
pub fn install() {
    // The steal's process-wide barrier (below) needs this registration once; without it (old
    // kernels) requesters wait for answers and signals as before.
    let r = rustix::thread::membarrier(MembarrierCommand::RegisterPrivateExpedited);
    MEMBARRIER.store(r.is_ok(), Ordering::Release);
    // SAFETY: a zeroed sigaction with our handler, restarting interrupted calls, is valid.
    unsafe {
        let mut sa: libc::sigaction = core::mem::zeroed();
        sa.sa_sigaction =
            on_signal as extern "C" fn(c_int, *mut libc::siginfo_t, *mut libc::c_void) as usize;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        crate::signals::install(SIG, &sa);
    }
    INSTALLED.store(true, Ordering::Release);
}

static INSTALLED: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
static MEMBARRIER: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// Nanoseconds a requester waits for an answer before it tries [`steal`]: an owner running
/// instrumented code answers well within this; one that is not running (preempted on an
/// oversubscribed machine) never would until the scheduler runs it again.
pub const STEAL_AFTER_NS: u64 = 4_000;
/// Nanoseconds between two attempts of [`steal`] (each costs a barrier: about 0.2 us when no
/// other thread of the process runs, 8 us when one does, an inter-processor interrupt in a VM).
pub const STEAL_EVERY_NS: u64 = 50_000;

/// Take the granule window of the shadow slot tagged `idx` (`ownership::slot_tag`) from owner
/// `x` without its answer: the asymmetric half of a Dekker handshake, with `membarrier` as the
/// owner's fence.
///
/// The requester has locked the window (`LOCKED`, a sequentially consistent CAS) before. The
/// barrier makes every thread of the process that is running execute a full fence (a thread
/// not running passed one when it was switched out). So every shadow load the owner makes after
/// the barrier sees the lock and takes the slow path, and every `pend` store the owner made
/// before it is visible now. The owner's plain-access callbacks store `pend` before their shadow
/// load, so the `pend` read after the barrier names an event at least as late as the last one
/// whose shadow load preceded it. Stores leave a CPU in program order, so every access before
/// that event is complete; that event's own access is the only one that may be pending. If it
/// lies outside the requested window, the owner has nothing in flight on the window: the
/// source is the event before it. Refused (None) when the owner's pending access may touch the
/// window, when a ranged access may be pending (`PEND_ALL`), or when the last callback was an
/// atomic operation (`PEND_NONE` carries no event; the owner answers soon anyway).
pub fn steal(x: &Shared, idx: u32) -> Option<u64> {
    if !barrier() {
        return None;
    }
    // The held table before `pend`: the owner evicts a granule from it at the end of a
    // callback whose `pend` it stored first, so a granule found gone comes with a `pend` read
    // after it naming that callback or a later one, and the source below covers the hits on
    // the granule before its eviction (read in the other order, an older `pend` would be taken
    // with a table that no longer shows the granule just hit: counter_race replays diverged).
    if held::in_window(x, idx) {
        return None;
    }
    let p = x.pend.load(Ordering::Acquire);
    let ev = x.events.load(Ordering::Acquire);
    if p == PEND_ALL || p == PEND_NONE {
        return None;
    }
    let shift = crate::ownership::BATCH_SHIFT;
    if (p & 0xffff_ffff) >> shift == idx as u64 >> shift || folding(x, idx) {
        return None;
    }
    // `pend` keeps the low 32 bits of its event, which is at most one past the count read
    // after it (the callback stores `pend` before it counts) and never 2^31 behind it.
    let pe = (p >> 32) as u32;
    let lag = ((ev + 1) as u32).wrapping_sub(pe) as u64;
    if lag > ev + 1 || lag >= 1 << 31 {
        return None;
    }
    let event = ev + 1 - lag;
    Some(event.saturating_sub(1))
}

/// Whether the window of shadow slot `idx` holds bytes of `x`'s last access whose value is
/// still to be folded into its digest: under `--verify=full` (checkpoint every event) each
/// access's value is folded once it is complete, at the thread's next runtime entry
/// (`access::fold_pending`), and the next callback's `pend` no longer names that access. Granted
/// before the fold, the fold would read what the requester wrote meanwhile, which a replay does
/// not reproduce (counter_race recorded with `--checkpoint 1`: 4 of 10 replays diverged).
fn folding(x: &Shared, idx: u32) -> bool {
    let n = x.pending_size.get() as usize;
    if n == 0 {
        return false;
    }
    let a = x.pending_addr.get() as usize;
    let shift = crate::ownership::BATCH_SHIFT;
    let window =
        |b: usize| u64::from(crate::ownership::slot_tag(crate::ownership::slot_of(b))) >> shift;
    let (lo, hi, i) = (
        window(a),
        window(a.wrapping_add(n - 1)),
        u64::from(idx) >> shift,
    );
    // (A range whose tags wrap refuses every window.)
    hi < lo || (lo <= i && i <= hi)
}

/// A process-wide full barrier (`membarrier`): every thread of the process that is running
/// executes a full fence (one not running passed one when it was switched out). False when
/// the kernel does not offer it.
pub fn barrier() -> bool {
    if !MEMBARRIER.load(Ordering::Relaxed) {
        return false;
    }
    rustix::thread::membarrier(MembarrierCommand::PrivateExpedited).is_ok()
}

/// Whether this run uses the handover signal.
pub fn installed() -> bool {
    INSTALLED.load(Ordering::Relaxed)
}

fn want_word(owner: u32, serial: u64, idx: u32) -> u64 {
    ((owner as u64 + 1) << 48) | ((serial & 0xffff) << 32) | idx as u64
}

/// Register the request of `t` for the shadow slot tagged `idx` (`ownership::slot_tag`) of
/// owner `x` (so the owner wakes it when it answers or turns free) and, when the owner runs
/// program code, signal it. Returns the serial to pass to [`granted`].
pub fn ask(t: &mut Thread, x: u32, idx: u32) -> u64 {
    t.want_serial = (t.want_serial + 1) & 0xffff;
    let serial = t.want_serial;
    t.sh().mb.grant.store(0, Ordering::SeqCst);
    t.sh()
        .mb
        .want
        .store(want_word(x, serial, idx), Ordering::SeqCst);
    let xs = state::shared(x);
    // Counted before the caller next looks at the owner's answer and free state (all
    // sequentially consistent): an owner that then finds no askers has answered or turned free
    // before this, and the caller sees it without sleeping.
    xs.mb.askers.fetch_add(1, Ordering::SeqCst);
    let ktid = xs.mb.ktid.load(Ordering::Acquire);
    if !INSTALLED.load(Ordering::Acquire) || ktid == 0 || xs.mb.free.load(Ordering::SeqCst) != 0 {
        return serial;
    }
    // SAFETY: tgkill on a thread of this process with a signal whose handler is ours.
    unsafe {
        sys::syscall6(
            libc::SYS_tgkill,
            sys::getpid() as u64,
            ktid as u64,
            SIG as u64,
            0,
            0,
            0,
        )
    };
    serial
}

/// Wake every thread whose registered request is addressed to `owner` (it answered or turned
/// free). Called inside the runtime (system calls allowed).
pub fn wake_requesters(owner: u32) {
    if state::shared(owner).mb.askers.load(Ordering::SeqCst) == 0 {
        return;
    }
    let n = state::NEXT_TID
        .load(Ordering::SeqCst)
        .min(MAX_THREADS as u32);
    for r in 0..n {
        let rs = state::shared(r);
        let w = rs.mb.want.load(Ordering::SeqCst);
        if w != 0 && (w >> 48) as u32 == owner + 1 {
            rs.mb.wake.fetch_add(1, Ordering::SeqCst);
            sys::futex_wake(&rs.mb.wake, 1);
        }
    }
}

/// The owner's completed events if it granted request `serial` from its handler.
#[inline]
pub fn granted(t: &Thread, serial: u64) -> Option<u64> {
    let g = t.sh().mb.grant.load(Ordering::Acquire);
    (g != 0 && g >> 48 == serial).then(|| (g & ((1 << 48) - 1)) - 1)
}

/// Withdraw a registered request (answered one way or another).
pub fn withdraw(t: &Thread) {
    let w = t.sh().mb.want.swap(0, Ordering::SeqCst);
    let owner = (w >> 48) as u32;
    if owner != 0 && owner as usize <= MAX_THREADS {
        // The owner's id + 1, from `want_word`.
        state::shared(owner - 1)
            .mb
            .askers
            .fetch_sub(1, Ordering::SeqCst);
    }
}

extern "C" fn on_signal(_sig: c_int, _info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    if state::cur().is_null() || IN_RT.with(|c| c.get()) {
        return;
    }
    // SAFETY: this thread has a slot (checked above): its shared part, all atomics (the
    // handler may interrupt the thread's own code holding its `&mut Thread`, which does not
    // cover this part); other slots' shared parts are read and written (their mailboxes).
    let t = unsafe { &*state::cur_or_idle() };
    let ev = t.events.load(Ordering::Relaxed);
    let p = t.pend.load(Ordering::Relaxed);
    compiler_fence(Ordering::SeqCst);
    if p == PEND_ALL {
        return;
    }
    let (done, except) = if p == PEND_NONE {
        (ev, u64::MAX)
    } else if (p >> 32) as u32 == ev as u32 {
        (ev.saturating_sub(1), p & 0xffff_ffff)
    } else {
        (ev, p & 0xffff_ffff)
    };
    let me = t.tid.load(Ordering::Relaxed);
    let n = state::NEXT_TID
        .load(Ordering::SeqCst)
        .min(MAX_THREADS as u32);
    for r in 0..n {
        if r == me {
            continue;
        }
        let rs = state::shared(r);
        let w = rs.mb.want.load(Ordering::SeqCst);
        if w == 0 || (w >> 48) as u32 != me + 1 {
            continue;
        }
        // A transfer takes the requested granule's whole window (`ownership::BATCH_SHIFT`).
        let shift = crate::ownership::BATCH_SHIFT;
        if except != u64::MAX && (w & 0xffff_ffff) >> shift == except >> shift {
            continue;
        }
        if folding(t, (w & 0xffff_ffff) as u32) {
            continue;
        }
        // A held granule may be accessed without a callback (`ownership::held`).
        if held::in_window(t, (w & 0xffff_ffff) as u32) {
            continue;
        }
        let serial = (w >> 32) & 0xffff;
        rs.mb
            .grant
            .store((serial << 48) | (done + 1), Ordering::Release);
        rs.mb.wake.fetch_add(1, Ordering::SeqCst);
        // Program code traps system calls (Syscall User Dispatch): allow this one.
        let sel = t.sud.swap(crate::sud::ALLOW, Ordering::Relaxed);
        sys::futex_wake(&rs.mb.wake, 1);
        t.sud.store(sel, Ordering::Relaxed);
    }
}

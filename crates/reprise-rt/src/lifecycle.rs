//! Start, thread end, process end and faults.
//!
//! The process ends through [`finish`], in record and replay alike: the ending thread (exit or
//! fault) waits in replay until every other thread reached its recorded event count (so the
//! process ends in the recorded state, seed 001 section 2.5), then takes every stripe's ticket
//! (every other thread parks at its next turn, for good), sends the buffered vectors, every
//! thread's records and the final event counts, and lets the process end.
#![allow(unsafe_code)]

use crate::access;
use crate::layout::*;
use crate::leap;
use crate::state::{self, Thread};
use crate::sys;
use core::sync::atomic::Ordering;
use reprise_proto::*;

/// Called once after the runtime switched to record or replay.
pub fn after_init() {
    // Runtime work: its own memset/memcpy (zeroed structs) must not be recorded accesses.
    let was = state::IN_RT.with(|c| c.get());
    crate::cancel::rt_on();
    after_init_inner();
    if !was {
        crate::cancel::rt_off();
    }
}

fn after_init_inner() {
    // SAFETY: registering a plain C function with atexit, and installing signal handlers
    // with a valid sigaction; neither touches program state.
    PID.store(sys::getpid(), Ordering::Relaxed);
    unsafe {
        libc::atexit(at_exit);
        libc::pthread_atfork(None, None, Some(in_fork_child));
        for sig in [
            libc::SIGSEGV,
            libc::SIGBUS,
            libc::SIGFPE,
            libc::SIGILL,
            libc::SIGABRT,
            libc::SIGTRAP,
        ] {
            let mut sa: libc::sigaction = core::mem::zeroed();
            sa.sa_sigaction =
                on_fault as extern "C" fn(i32, *mut libc::siginfo_t, *mut libc::c_void) as usize;
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_NODEFER;
            crate::signals::install(sig, &sa);
        }
    }
    crate::sud::install_handler();
    crate::signals::catch_terminators();
    if state::strategy() == state::Strategy::Ownership && !state::REPLAY.load(Ordering::Relaxed) {
        crate::handover::install();
    }
    crate::dl::load_unwinder_at_start();
    // The libraries loaded so far are the program's own (in the trace's header) and, in sync
    // mode, the runtime's: only those the program loads later are reported.
    crate::dl::at_start();
    // The runtime's descriptors are not for programs this one starts.
    for fd in [FD_CONFIG, FD_CHANNEL, FD_STATUS, FD_LOG] {
        sys::set_cloexec(fd);
    }
    // rdtsc/rdtscp trap (SIGSEGV) so their values are recorded and replayed; inherited by
    // every thread created afterwards.
    sys::tsc_trap(true);
    let t = state::cur();
    if !t.is_null() {
        // SAFETY: the main thread's own slot.
        let th = unsafe { &mut *t };
        access::log_start(th);
        crate::rtstack::prepare(th);
        crate::sud::enable(th);
    }
}

/// A stack for thread `id` of `size` bytes (plus a guard page) in its fixed window.
pub fn stack_window(id: u32, size: usize) -> Option<u64> {
    let size = (size as u64).next_multiple_of(4096);
    if size + 4096 > STACK_WIN - RT_STACK {
        return None;
    }
    let base = STACKS_ADDR + id as u64 * STACK_WIN;
    sys::mmap_fixed(
        base,
        size + 4096,
        libc::PROT_READ | libc::PROT_WRITE,
        -1,
        false,
    )
    .ok()?;
    sys::mprotect(base, 4096, libc::PROT_NONE);
    Some(base + 4096)
}

/// `Shared::final_claim`: nobody has taken the thread's final checkpoint yet.
const FINAL_OPEN: u32 = 0;
/// A thread (itself, or the one ending the process) is taking it.
const FINAL_CLAIMED: u32 = 1;
/// It is in the thread's log.
const FINAL_LOGGED: u32 = 2;

/// Claim the final checkpoint of the thread whose shared part is `sh` (once per thread).
fn claim_final(sh: &crate::slot::Shared) -> bool {
    sh.final_claim
        .compare_exchange(
            FINAL_OPEN,
            FINAL_CLAIMED,
            Ordering::SeqCst,
            Ordering::SeqCst,
        )
        .is_ok()
}

/// Log the final digest of `t` unless a checkpoint just did (once per thread).
fn final_checkpoint(t: &mut Thread) {
    if !claim_final(t.sh()) {
        return;
    }
    let e = t.sh().events.load(Ordering::Relaxed);
    if !e.is_multiple_of(state::CHECKPOINT.load(Ordering::Relaxed)) {
        access::checkpoint(t, e);
    }
    t.sh().final_claim.store(FINAL_LOGGED, Ordering::SeqCst);
}

/// The ending thread found thread `tid`'s final checkpoint claimed by the thread itself, which
/// is ending (returned from its start routine after its last event): wait until the pair is
/// in its log, or the thread parked instead (past the recorded end), so that the logs sent next
/// have it. Without this the process could end between the claim and the pair: the recording
/// or its replay then lacked the thread's last checkpoint (`self_signal.c`: main `_exit`s
/// while the worker that woke it returns; about one run in a thousand under load).
fn wait_final_logged(tid: u32) {
    let o = state::shared(tid);
    let st = state::status(tid);
    let mut waited = 0;
    while waited < 40_000
        && o.final_claim.load(Ordering::SeqCst) == FINAL_CLAIMED
        && st.state.load(Ordering::SeqCst) != ST_AT_END
    {
        sys::sleep_ns(50_000);
        waited += 1;
    }
}

/// The final checkpoint of the thread ending the process for a signal from outside: its
/// pending access folded (see [`end_by_signal`]: one still unfolded was complete), its digest
/// and count as they stand.
fn outside_final(t: &mut Thread) {
    access::fold_pending(t);
    if !claim_final(t.sh()) {
        return;
    }
    let e = t.sh().events.load(Ordering::Acquire);
    if !e.is_multiple_of(state::CHECKPOINT.load(Ordering::Relaxed)) {
        access::log_pair(t, R_DIGEST, e, t.sh().digest.get());
    }
    t.sh().final_claim.store(FINAL_LOGGED, Ordering::SeqCst);
}

/// The final checkpoint of a thread still alive when another ends the process, logged by the
/// ending thread (`me`) once every other thread is stopped: its pending access folded (it is
/// complete: the thread reached its next runtime entry and parked, or released its stripe, or
/// is blocked outside the runtime), its digest and count as they stand. Record and replay stop
/// each thread after the same last event, so both sides log the same pair and verification
/// requires it. For an end from outside too (every thread but `skip`: see [`end_by_signal`]).
fn final_checkpoint_of_others(me: u32, n: u32, skip: u32) {
    // Replay: the others reached their recorded counts; let those still running reach their
    // next runtime entry (where they park), as `ownership::stop_all` does while recording.
    if state::REPLAY.load(Ordering::Relaxed) {
        for tid in 0..n {
            if tid == me {
                continue;
            }
            let other = state::shared(tid);
            let st = state::status(tid);
            let mut waited = 0;
            while waited < 2_000
                && other.mb.free.load(Ordering::SeqCst) == 0
                && st.state.load(Ordering::SeqCst) == ST_RUNNING
            {
                sys::sleep_ns(50_000);
                waited += 1;
            }
        }
    }
    for tid in 0..n {
        if tid == me || tid == skip || state::status(tid).state.load(Ordering::SeqCst) == ST_EXITED
        {
            continue;
        }
        // The other thread is stopped: parked at its next runtime entry, blocked in a call, or
        // outside the runtime between accesses, and it never touches its digest or pending
        // access again (a parked thread stays parked; the others are ended by this thread's
        // exit_group). So the ending thread alone reads and writes them now, in its shared
        // part (atomics; its owner's `&mut Thread` does not cover them); the pending access
        // is complete (see above), its memory mapped (unmapping calls are runtime entries,
        // which fold first).
        let o = state::shared(tid);
        if o.pending_size.get() != 0 {
            // SAFETY: the pending access's bytes are mapped and no longer written (above).
            let v = unsafe {
                access::value_at(o.pending_addr.get() as usize, o.pending_size.get() as usize)
            };
            o.digest.set(access::mix(o.digest.get(), v));
            o.pending_size.set(0);
        }
        if !claim_final(o) {
            wait_final_logged(tid);
            continue;
        }
        let (digest, e) = (o.digest.get(), o.events.load(Ordering::Acquire));
        // Where among its hits the thread stopped (replay stops it there): still running
        // (outside instrumented code, or preempted among its hits), or parked at an access a
        // requester's stop sent to the slow path (replay, with no requester, would go on).
        if !state::REPLAY.load(Ordering::Relaxed) {
            crate::ownership::held::log_end(o);
        }
        if e % state::CHECKPOINT.load(Ordering::Relaxed) != 0 {
            access::log_pair_of(tid, R_DIGEST, e, digest);
        }
    }
}

std::thread_local! {
    /// The current thread has ended ([`thread_end`]); it may still run its thread-local
    /// destructors, and glibc's exit if it is the last thread.
    static ENDED: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
}

/// The current thread returned from its start routine (or called pthread_exit).
pub fn thread_end() {
    let Some(mut e) = crate::entry::enter() else {
        return;
    };
    ENDED.with(|c| c.set(true));
    let t = e.t();
    access::safe_point(t);
    crate::model::thread_exit(t);
    final_checkpoint(t);
    access::flush_log(t.tid);
    let st = state::status(t.tid);
    st.events
        .store(t.sh().events.load(Ordering::Relaxed), Ordering::Relaxed);
    crate::ownership::set_free(t.sh());
    st.state.store(ST_EXITED, Ordering::SeqCst);
}

/// The main thread is about to be unwound (pthread_exit, cancellation) while the process goes
/// on. It has no trampoline whose cleanup would end it after the program's cleanup handlers,
/// but glibc runs its thread-specific data destructors once the unwind is over: a key's
/// destructor ends it there (its last turn must be released, or the process could never end).
pub fn main_unwinding() {
    extern "C" fn main_end(_: *mut libc::c_void) {
        thread_end();
    }
    let mut k: libc::pthread_key_t = 0;
    // SAFETY: creating a key with a plain C destructor, and giving this thread a non-null value
    // for it, so that the destructor runs.
    let armed = unsafe {
        libc::pthread_key_create(&mut k, Some(main_end)) == 0
            && libc::pthread_setspecific(k, core::ptr::dangling::<libc::c_void>()) == 0
    };
    if !armed {
        thread_end();
    }
}

/// A fork child runs unrecorded (one process is recorded): the runtime turns off in it, and
/// its descriptors to the launcher close on exec, so a program it execs is not recorded into
/// this trace either.
extern "C" fn in_fork_child() {
    state::set_mode(state::M_OFF);
    crate::tsc::reprise_tsc_trap(0);
    crate::say!("a forked child runs unrecorded (only the parent process is recorded)");
}

/// The process whose runtime this is (a `vfork` child shares its memory, and must not end it).
static PID: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);

/// Whether the calling process is the one whose runtime this is (not a `vfork` child).
pub(crate) fn own_process() -> bool {
    PID.load(Ordering::Relaxed) == sys::getpid()
}

/// The process ends without `exit()`: `_exit`, `_Exit` (shim_process.c) or a raw `exit_group`
/// (caught by Syscall User Dispatch, `sud.rs`). Its end is the one `exit()` records (the
/// `atexit` handler below); the second call of the pair that `exit()` makes (its own
/// `exit_group`) finds the runtime done and does nothing.
#[no_mangle]
pub extern "C" fn reprise_process_exiting() {
    if !own_process() {
        return;
    }
    at_exit();
}

extern "C" fn at_exit() {
    let Some(mut e) = crate::entry::enter() else {
        return;
    };
    let t = e.t();
    access::safe_point(t);
    // After main called pthread_exit, the process ends when its last thread ends: glibc's
    // exit(0) from whichever thread decrements its thread count last, a race the program does
    // not see. That end is the main thread's (its recorded last event), whoever runs it.
    let implicit = ENDED.with(|c| c.get());
    let (tid, event) = if implicit {
        // SAFETY: slot 0 (the main thread) is initialised; its events are atomic.
        (0, state::shared(0).events.load(Ordering::Relaxed))
    } else {
        (t.tid, t.sh().events.load(Ordering::Relaxed))
    };
    let end = ProcessEnd {
        kind: END_EXIT,
        tid,
        event,
        code: 0,
        si_code: 0,
        addr: 0,
    };
    finish(t, end);
}

extern "C" fn on_fault(sig: i32, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    if sig == libc::SIGSEGV && crate::tsc::emulate_tsc(ctx) {
        return;
    }
    if crate::kept::program_kept(sig, info, ctx) {
        return; // the program's handler ran (returning retries the faulting instruction)
    }
    let t = state::cur();
    let m = state::mode();
    if !t.is_null() && (m == state::M_RECORD || m == state::M_REPLAY) {
        state::IN_RT.with(|c| c.set(true));
        // SAFETY: t is this thread's slot; info is the kernel's siginfo for this signal.
        let th = unsafe { &mut *t };
        let (code, addr) = unsafe {
            (
                (*info).si_code,
                if sig == libc::SIGABRT {
                    0
                } else {
                    (*info).si_addr() as u64
                },
            )
        };
        access::forget_pending(th);
        // The faulting instruction (the kernel's saved RIP) and the stack, for source lines.
        let rip = if ctx.is_null() {
            None
        } else {
            // SAFETY: ctx is the kernel's ucontext for this synchronous signal.
            let uc = unsafe { &*(ctx as *const libc::ucontext_t) };
            Some(uc.uc_mcontext.gregs[libc::REG_RIP as usize] as u64)
        };
        crate::channel::send_stack(th.tid, STACK_FAULT, rip);
        let end = ProcessEnd {
            kind: END_FAULT,
            tid: th.tid,
            event: th.sh().events.load(Ordering::Relaxed),
            code: sig,
            si_code: code,
            addr,
        };
        finish(th, end);
    }
    // Die of the signal: restore the default action; returning re-executes the faulting
    // instruction (or abort() raises again).
    // SAFETY: resetting a disposition to SIG_DFL.
    unsafe {
        let mut dfl: libc::sigaction = core::mem::zeroed();
        dfl.sa_sigaction = libc::SIG_DFL;
        crate::signals::install(sig, &dfl);
        if sig == libc::SIGTRAP {
            libc::raise(sig);
        }
    }
}

/// A terminating signal the program does not handle ends the process (see
/// `signals::terminator`): finish the trace, then die of the signal, as the process would
/// have. `external`: the end belongs to no thread (the signal landed where the thread held
/// nothing of the runtime's); otherwise it is this thread's, at its current runtime entry.
///
/// An end from outside takes every live thread's final checkpoint, as any other end does,
/// except for the thread the signal interrupted in program code with an access pending: its
/// access may or may not have happened (the callback precedes it), while in the replay every
/// thread stands at its next runtime entry with that access done. That thread is named in
/// the end (`ProcessEnd::addr` = its id + 1; 0: none), and the replay leaves the same thread
/// without one, whichever thread the kernel gives the signal to there.
pub fn end_by_signal(t: &mut Thread, sig: i32, external: bool) -> ! {
    crate::cancel::rt_on();
    let skip = if !external {
        0
    } else if state::REPLAY.load(Ordering::Relaxed) {
        state::config().end.addr
    } else if t.sh().pending_size.get() != 0 {
        t.tid as u64 + 1
    } else {
        0
    };
    let end = ProcessEnd {
        kind: END_SIGNAL,
        tid: if external { END_TID_NONE } else { t.tid },
        event: if external {
            0
        } else {
            t.sh().events.load(Ordering::Relaxed)
        },
        code: sig,
        si_code: 0,
        addr: skip,
    };
    finish(t, end);
    die_of(sig)
}

/// Die of `sig` by its default action, from anywhere (a handler of it included).
pub fn die_of(sig: i32) -> ! {
    crate::cancel::rt_on();
    // SAFETY: restoring the default action, unblocking the signal for this thread, and sending
    // it to this thread: the default action ends the process.
    unsafe {
        let mut dfl: libc::sigaction = core::mem::zeroed();
        dfl.sa_sigaction = libc::SIG_DFL;
        crate::signals::install(sig, &dfl);
        let set: u64 = 1 << (sig - 1);
        sys::syscall6(
            libc::SYS_rt_sigprocmask,
            libc::SIG_UNBLOCK as u64,
            &set as *const u64 as u64,
            0,
            8,
            0,
            0,
        );
        sys::syscall6(
            libc::SYS_tgkill,
            sys::getpid() as u64,
            sys::gettid() as u64,
            sig as u64,
            0,
            0,
            0,
        );
    }
    sys::exit_group(128 + sig)
}

/// Replay of an end by a signal from outside: whether every thread is where the recording's was
/// when it came (its final count reached, every recorded result taken: a thread blocked in a
/// call that returned in the recording is not there yet, though its count is).
pub fn replay_end_reached() -> bool {
    if state::config().end.kind == END_CUT {
        // A cut-short recording: the launcher ends the replay once every thread went as far
        // as the trace goes (whatever its count).
        return true;
    }
    let n = state::config().nthreads;
    (0..n).all(|tid| {
        let Some(ti) = state::thread_index(tid) else {
            return true;
        };
        let other = state::shared(tid);
        other.events.load(Ordering::Relaxed) >= ti.final_events
            && other.next_result.load(Ordering::Acquire) as u64 >= ti.results_len
    })
}

/// End the process in the recorded way (see the module doc). Only one thread finishes;
/// any other thread that tries parks.
// Over 80 lines: the end sequence of the module doc, step by step (become the finisher, wait
// for the others' recorded counts in replay, take the stripes, send every record, end); each
// step relies on the one before.
#[allow(clippy::too_many_lines)]
pub fn finish(t: &mut Thread, end: ProcessEnd) {
    if state::FINISHER
        .compare_exchange(u32::MAX, t.tid, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        leap::release_held(t);
        leap::park_forever(t.tid, ST_AT_END);
    }
    state::status_header().finishing.store(1, Ordering::SeqCst);
    leap::release_held(t);
    // An end from outside (a signal landing wherever its threads were) has its final
    // checkpoints taken like any other, but in a cut-short recording's replay, ended by the
    // launcher where the trace ends, where the recording has none.
    let outside_finals = end.tid == END_TID_NONE
        && end.kind == END_SIGNAL
        && !(state::REPLAY.load(Ordering::Relaxed) && state::config().end.kind == END_CUT);
    let skip = if outside_finals && end.addr != 0 {
        (end.addr - 1) as u32
    } else {
        u32::MAX
    };
    if !ENDED.with(|c| c.get()) && end.tid != END_TID_NONE {
        // (An ended thread logged its final checkpoint at its end.)
        final_checkpoint(t);
    }
    let st = state::status(t.tid);
    st.events
        .store(t.sh().events.load(Ordering::Relaxed), Ordering::Relaxed);
    st.state.store(ST_EXIT_WAIT, Ordering::SeqCst);
    if state::REPLAY.load(Ordering::Relaxed) && state::config().end.kind != END_CUT {
        let n = state::config().nthreads;
        for tid in 0..n {
            if tid == t.tid {
                continue;
            }
            // Its final count, and every result it took (a thread whose call returned in the
            // recording, its result logged, before its count moved: a worker just out of a
            // barrier when another thread called _exit).
            let (want, results) = state::thread_index(tid)
                .map(|ti| (ti.final_events, ti.results_len))
                .unwrap_or((0, 0));
            let other = state::shared(tid);
            while other.events.load(Ordering::Relaxed) < want
                || (other.next_result.load(Ordering::Acquire) as u64) < results
            {
                sys::sleep_ns(200_000);
            }
        }
    }
    // Done waiting: the rest (a model strategy serialises its whole log here) is work, not a
    // wait the replay watchdog may take for a stuck replay.
    st.state.store(ST_RUNNING, Ordering::SeqCst);
    state::set_mode(state::M_DONE);
    t.passthrough = true;
    if state::strategy() == state::Strategy::Ownership && !state::REPLAY.load(Ordering::Relaxed) {
        crate::ownership::stop_all(t.tid);
    }
    if state::REPLAY.load(Ordering::Relaxed) && state::config().end.kind == END_CUT {
        leap::try_lock_and_flush_all();
    } else {
        leap::lock_and_flush_all();
    }
    crate::model::finish(t.tid);
    let n = state::NEXT_TID.load(Ordering::SeqCst);
    if end.tid != END_TID_NONE || outside_finals {
        final_checkpoint_of_others(t.tid, n, skip);
    }
    if outside_finals && skip != t.tid && !ENDED.with(|c| c.get()) {
        // The thread the signal landed on, at its next runtime entry in the replay (its
        // access done), blocked in a call, or in program code with no access pending.
        outside_final(t);
    }
    // Every other thread is now parked or blocked outside the runtime: send all records.
    let mut frame = [0u8; FRAME_HDR + 32 + 12 * 64];
    let mut finals: usize = 0;
    let mut kinds = [0u64; KINDS];
    let mut end_bytes = [0u8; 32];
    encode_end(&end, &mut end_bytes);
    let flush_finals = |frame: &mut [u8], finals: usize| {
        put_frame_header(frame, F_END, 32 + finals * 12);
        frame[FRAME_HDR..FRAME_HDR + 32].copy_from_slice(&end_bytes);
        crate::channel::send(&frame[..FRAME_HDR + 32 + finals * 12]);
    };
    for tid in 0..n {
        access::flush_log(tid);
        // Every other thread is parked or outside the runtime now: its kind counters no
        // longer change (read in its shared part).
        let o = state::shared(tid);
        let their_kinds: [u64; KINDS] = core::array::from_fn(|k| o.kinds[k].get());
        let events = o.events.load(Ordering::Relaxed);
        for (s, c) in kinds.iter_mut().zip(their_kinds.iter()) {
            *s += c;
        }
        // Fast-path reads are the events no kind counted (`ownership::count_fast`).
        let counted: u64 = their_kinds.iter().sum();
        kinds[access::kind::READ as usize] += events.saturating_sub(counted);
        let o = FRAME_HDR + 32 + finals * 12;
        frame[o..o + 4].copy_from_slice(&tid.to_le_bytes());
        frame[o + 4..o + 12].copy_from_slice(&events.to_le_bytes());
        finals += 1;
        if finals == 64 {
            flush_finals(&mut frame, finals);
            finals = 0;
        }
    }
    flush_finals(&mut frame, finals);
    send_kinds(&kinds);
    crate::sud::send_stats();
    crate::threads::end_sent();
}

/// Send the events per kind, summed over threads (for `reprise bench`).
fn send_kinds(kinds: &[u64; KINDS]) {
    let mut frame = [0u8; FRAME_HDR + KINDS * 8];
    put_frame_header(&mut frame, F_KINDS, KINDS * 8);
    for (i, c) in kinds.iter().enumerate() {
        frame[FRAME_HDR + i * 8..FRAME_HDR + i * 8 + 8].copy_from_slice(&c.to_le_bytes());
    }
    crate::channel::send(&frame);
}

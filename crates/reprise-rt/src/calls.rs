//! The runtime's side of the C interposers in `csrc/shim_*.c` (ordered stdio and libc
//! random state, recorded clock and identity reads), and the sleep/yield family.
//!
//! Sleeps are safe points; while recording they sleep for real and their outcome is recorded;
//! replay does not sleep (no real time in replay) and returns the recorded outcome.
#![allow(unsafe_code)]
#![allow(missing_docs)]

use crate::access::{self, kind};
use crate::entry::enter;
use crate::real;
use crate::state;
use core::ffi::{c_int, c_void};
use core::sync::atomic::Ordering;

#[inline(always)]
fn replaying() -> bool {
    state::REPLAY.load(Ordering::Relaxed)
}

/// Safe point, then an ordered event on the stripe of `obj` (a FILE, the RNG state). Returns
/// 0 when the runtime is not active for this call.
///
/// The caller then runs uninstrumented libc work with its system calls untrapped (the turn is
/// held until the next runtime entry: the stdio wrappers make one right after the real call,
/// `reprise_safe_point`), so the thread is free meanwhile, as in
/// [`crate::capture`]'s calls: it may not come back to the runtime for a long time. Not free,
/// a thread that printed and then slept in a wait the runtime does not see (libgomp's barriers
/// and thread pool) kept the granule of its last access for good: with that access's window
/// refused by its handover handler and no system call trapped, a requester of it waited
/// forever (an OpenMP `single` that printed, its team's master then reading what the single's
/// tasks wrote: a recording hung).
#[no_mangle]
pub extern "C" fn reprise_ordered(obj: *const c_void) -> c_int {
    let Some(mut e) = enter() else { return 0 };
    let t = e.t();
    access::safe_point(t);
    crate::sync::take_obj(t, obj, kind::STDIO);
    crate::ownership::set_free(t.sh());
    t.sud_hold = true;
    1
}

/// Fold the pending access's value now, before a C interposer's first `dlsym` (shim.h `REAL`):
/// dlsym catches errors with `__sigsetjmp`, which stores pointer-mangled registers (random per
/// process) on the stack, over the dead locals of frames that have returned. When the pending
/// access was a store to such a local, the value folded at the next runtime entry was that
/// random one, and every replay diverged (xz under LEAP or `--verify=full`: the `struct
/// sigaction` its message_init filled, folded after sysconf's first call). The value now is
/// the access's own; the later entry folds nothing. Not a runtime entry (no turn, not counted:
/// which thread resolves a name first may differ in replay), and the fold itself is the same
/// wherever it happens when nothing overwrote the value.
#[no_mangle]
pub extern "C" fn reprise_fold_pending() {
    let m = state::mode();
    if m <= state::M_OFF || m == state::M_DONE || state::IN_RT.with(|c| c.get()) {
        return;
    }
    let t = state::cur();
    if t.is_null() {
        return;
    }
    let _rt = state::RtGuard::new();
    // SAFETY: t is this thread's own slot, and IN_RT keeps the runtime out while it is used.
    access::fold_pending(unsafe { &mut *t });
}

/// A safe point (the previous access is complete; release its turn). The thread's system
/// calls stay untrapped until its next runtime entry: the first one would only have made this
/// same safe point again (see `sud`), at the cost of a SIGSYS (the shim's reads paid two per
/// call: its descriptor check and the read itself).
#[no_mangle]
pub extern "C" fn reprise_safe_point() {
    if let Some(mut e) = enter() {
        access::safe_point(e.t());
        // The caller (the C shim) performs uninstrumented libc work, possibly blocking, before
        // the program's next callback: ownership requests are granted meanwhile.
        crate::ownership::set_free(e.t().sh());
        untrap(e.t());
    }
}

/// Right after a safe point, with no turn taken since: what the thread's next SIGSYS would do
/// (`sud::on_sigsys`: ownership requests granted, system calls untrapped up to the next
/// runtime entry), done now, without the signal. Nothing without Syscall User Dispatch, nor
/// inside a stdio call (its system calls must trap: they are captured).
pub fn untrap(t: &mut state::Thread) {
    if t.sud_on && !crate::capture::on() {
        crate::ownership::set_free(t.sh());
        t.sud_hold = true;
    }
}

/// Whether the runtime records or replays this thread now.
#[no_mangle]
pub extern "C" fn reprise_active() -> c_int {
    let m = state::mode();
    let on = (m == state::M_RECORD || m == state::M_REPLAY)
        && !state::cur().is_null()
        && !state::IN_RT.with(|c| c.get());
    on as c_int
}

/// [`reprise_active`], starting the runtime first if nothing did yet: for the calls a shared
/// library's constructor makes before the program's own start the runtime (libgomp sizes its
/// thread pool by `pthread_getaffinity_np` there).
#[no_mangle]
pub extern "C" fn reprise_active_init() -> c_int {
    if state::mode() == state::M_UNINIT && !state::IN_RT.with(|c| c.get()) {
        state::init();
    }
    reprise_active()
}

/// Replay of a call that allocates a descriptor (open, socket, accept, mkstemp): right after
/// its turn (`reprise_ordered`), keep the turn and the thread's system calls untrapped across
/// the runtime entries that give back the recorded result and data, until
/// [`reprise_fd_hold_end`]. The real calls that make the descriptor (a temporary open, the
/// `dup2` onto the recorded number, the close of the temporary) then run inside the turn, as
/// the recording's open did. Before, the entry's return re-armed the trap, the first of them
/// trapped, its safe point released the turn, and another thread's pipe or dup drew its
/// number while the temporary was open (fd_race.c: 3 replays in 10 diverged). Not entries
/// (nothing counted).
#[no_mangle]
pub extern "C" fn reprise_fd_hold_begin() {
    let t = state::cur();
    if !t.is_null() && replaying() && !state::IN_RT.with(|c| c.get()) {
        // SAFETY: this thread's own slot, outside any runtime entry.
        unsafe { (*t).fd_hold = true };
    }
}

/// The end of [`reprise_fd_hold_begin`]'s hold: system calls trap again, so the next one is
/// the safe point that releases the turn, as after the recording's call.
#[no_mangle]
pub extern "C" fn reprise_fd_hold_end() {
    let t = state::cur();
    if t.is_null() || state::IN_RT.with(|c| c.get()) {
        return;
    }
    // SAFETY: this thread's own slot, outside any runtime entry.
    let t = unsafe { &mut *t };
    if t.fd_hold {
        t.fd_hold = false;
        t.sud_hold = false;
        if t.sud_on {
            t.sh().sud.store(crate::sud::BLOCK, Ordering::Relaxed);
        }
    }
}

/// An input: recorded while recording, given back from the trace in replay.
#[no_mangle]
pub extern "C" fn reprise_input(live: u64) -> u64 {
    let Some(mut e) = enter() else { return live };
    let t = e.t();
    access::fold_pending(t);
    access::result(t, if replaying() { None } else { Some(live) })
}

/// [`reprise_input`] for the result of a call made before this entry (a read, a wait): the
/// signals due at the entry are delivered after the result is logged
/// ([`crate::entry::enter_result_first`] says why).
#[no_mangle]
pub extern "C" fn reprise_call_result(live: u64) -> u64 {
    let Some(mut e) = crate::entry::enter_result_first() else {
        return live;
    };
    let t = e.t();
    access::fold_pending(t);
    let v = access::result(t, if replaying() { None } else { Some(live) });
    crate::entry::end_then_deliver(e);
    v
}

/// Replay: the calling thread's next recorded result, else `dflt`; not taken, and no runtime
/// entry (nothing counted, no signal delivered). For a call replay makes for real before its
/// result's entry, where the recording made it, and which needs the recorded outcome to do so
/// (`shim_child.c`: the child a recorded wait reaped is reaped before the entry at which a
/// signal recorded after that wait is delivered). A call's result entry
/// ([`reprise_call_result`]) delivers its signals after the result, so the next result is the
/// call's own; other entries deliver theirs first, as events of their own (a turn on the
/// signal's stripe), so a result may belong to a later event than the thread's current one.
#[no_mangle]
pub extern "C" fn reprise_peek_result(dflt: u64) -> u64 {
    let t = state::cur();
    if state::mode() != state::M_REPLAY || t.is_null() || state::IN_RT.with(|c| c.get()) {
        return dflt;
    }
    // SAFETY: the current thread's own slot, outside any runtime entry; only read here.
    let t = unsafe { &*t };
    let e = t.sh().events.load(Ordering::Relaxed);
    access::next_result_from(t, e, e + PEEK_EVENTS).unwrap_or(dflt)
}

/// How many events (signal deliveries) may come between a peeked result's call and its entry.
const PEEK_EVENTS: u64 = 64;

/// Replay: the program was given thread id `given` (the recording's) for the calling thread.
#[no_mangle]
pub extern "C" fn reprise_note_given_tid(given: u32) {
    let t = state::cur();
    if !t.is_null() {
        // SAFETY: `cur` is this thread's slot (or null, handled above).
        unsafe { &*t }
            .sh()
            .given_tid
            .store(given, Ordering::Relaxed);
    }
}

/// Replay: the kernel thread id of the thread the program knows as `given` (the recording's
/// id, from `gettid`), or `given` itself when no thread was given it.
#[no_mangle]
pub extern "C" fn reprise_real_tid(given: u32) -> u32 {
    let n = state::NEXT_TID
        .load(Ordering::SeqCst)
        .min(crate::layout::MAX_THREADS as u32);
    (0..n)
        .map(state::shared)
        .find(|s| given != 0 && s.given_tid.load(Ordering::Relaxed) == given)
        .map_or(given, |s| s.mb.ktid.load(Ordering::Acquire))
}

/// A sleep (`nanosleep`, `clock_nanosleep`, `usleep`, `sleep`: the C interposer makes the real
/// call, a cancellation point), before the real call: a safe point. Record sleeps for real and
/// records the outcome in [`reprise_sleep_post`]; replay does not sleep (no real time in
/// replay): it stores the recorded outcome (`return value | errno << 32`) in `out`, or ends
/// the thread where the recording's was cancelled.
///
/// # Safety
/// `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn reprise_sleep_pre(out: *mut u64) -> c_int {
    let Some(mut e) = enter() else {
        return crate::sync::PRE_NATIVE;
    };
    let t = e.t();
    access::safe_point(t);
    if !replaying() {
        t.sud_hold = true;
        // Uninstrumented work until the real sleep returns: ownership requests are granted.
        crate::ownership::set_free(t.sh());
        return crate::sync::PRE_CALL;
    }
    if crate::cancel::replayed_here(t) {
        return crate::sync::PRE_CANCEL;
    }
    // SAFETY: the caller's out-slot.
    unsafe { *out = access::result(t, None) };
    crate::sync::PRE_DONE
}

/// The real sleep of [`reprise_sleep_pre`] ended with `outcome` (`return value | errno << 32`).
#[no_mangle]
pub extern "C" fn reprise_sleep_post(outcome: u64) {
    let _e = crate::sys::ErrnoGuard::new();
    if let Some(mut g) = crate::sync::resume() {
        access::result(g.t(), Some(outcome));
    }
}

/// # Safety
/// Called as libc's `sched_yield` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
#[export_name = "reprise_sched_yield"]
pub unsafe extern "C" fn sched_yield() -> c_int {
    if let Some(mut e) = enter() {
        access::safe_point(e.t());
        access::jitter(e.t());
    }
    unsafe { real::sched_yield() }
}

/// Pseudo-objects whose stripes order I/O per file descriptor.
static FD_OBJS: [u64; 1024] = [0; 1024];

/// Safe point, then an ordered event on descriptor `fd`. Returns 0 when not active.
#[no_mangle]
pub extern "C" fn reprise_fd_event(fd: c_int) -> c_int {
    let i = (fd.max(0) as usize).min(FD_OBJS.len() - 1);
    reprise_ordered(core::ptr::addr_of!(FD_OBJS[i]).cast())
}

/// The command of futex operation `op`, without its private and clock flags (the kernel's
/// `FUTEX_CMD_MASK`).
fn futex_cmd(op: c_int) -> c_int {
    op & !(libc::FUTEX_PRIVATE_FLAG | libc::FUTEX_CLOCK_REALTIME)
}

/// Whether the program's own `syscall(SYS_futex, _, op, ..)` is a recorded result (see
/// `shim_process.c`): in full mode, for the plain wait and wake operations (and their bitset
/// forms), while this thread records or replays. Their outcome is timing: a wait sleeps,
/// returns EAGAIN (the word changed first), times out or is interrupted, and a wake wakes
/// however many slept; libstdc++'s atomic wait (`std::barrier`, `std::latch`,
/// `std::atomic::wait`) reads `errno` after one. The operations that change the word or move
/// waiters (requeue, wake-op, priority inheritance) run for real, as in sync mode, where the
/// atomics that order a futex are invisible, so its wait must really wait.
#[no_mangle]
pub extern "C" fn reprise_futex_recorded(op: c_int) -> c_int {
    let plain = matches!(
        futex_cmd(op),
        libc::FUTEX_WAIT | libc::FUTEX_WAKE | libc::FUTEX_WAIT_BITSET | libc::FUTEX_WAKE_BITSET
    );
    (plain && !crate::preload::sync() && reprise_active() != 0) as c_int
}

/// The safe point of the program's futex operation `op` on `addr` (`timed`: with a timeout),
/// about to run for real ([`reprise_safe_point`] otherwise): a wait is also marked blocked for
/// the watchdogs (untimed and private: only another thread can end it), so a replay stuck on
/// synchronisation the trace does not order (atomics and futexes of the program's own, in sync
/// mode) is reported instead of hanging. Returns whether it marked the thread blocked (the
/// same runtime entry as the plain safe point: signal positions count entries).
#[no_mangle]
pub extern "C" fn reprise_futex_block_begin(op: c_int, addr: usize, timed: c_int) -> c_int {
    if !matches!(futex_cmd(op), libc::FUTEX_WAIT | libc::FUTEX_WAIT_BITSET) {
        reprise_safe_point();
        return 0;
    }
    let Some(mut e) = enter() else { return 0 };
    let t = e.t();
    access::safe_point(t);
    // Untimed and private: only another thread of this process can end it.
    let on = if timed == 0 && op & libc::FUTEX_PRIVATE_FLAG != 0 {
        reprise_proto::WAIT_FUTEX
    } else {
        reprise_proto::WAIT_NONE
    };
    // Grants ownership requests and keeps system calls untrapped, as `untrap` does.
    crate::sync::block_begin(t, on, addr);
    1
}

/// The real futex wait of [`reprise_futex_block_begin`] returned.
#[no_mangle]
pub extern "C" fn reprise_futex_block_end() {
    if let Some(mut g) = crate::sync::resume() {
        crate::sync::block_end(g.t());
    }
}

/// Whether this thread is replaying.
#[no_mangle]
pub extern "C" fn reprise_io_replaying() -> c_int {
    (reprise_active() != 0 && replaying()) as c_int
}

/// A value that must be the same in replay as recorded (a result re-executed in replay, the
/// hash of data written): recorded, and compared in replay.
///
/// # Safety
/// `what` is a NUL-terminated string (the C shim passes a literal).
#[no_mangle]
pub unsafe extern "C" fn reprise_io_check(live: u64, what: *const core::ffi::c_char) -> u64 {
    let Some(mut e) = enter() else { return live };
    let t = e.t();
    access::fold_pending(t);
    if replaying() {
        let want = access::result(t, None);
        if want != live {
            // SAFETY: `what` is a NUL-terminated literal from the C shim.
            let w = unsafe { core::ffi::CStr::from_ptr(what) }
                .to_str()
                .unwrap_or("?");
            let ev = t.sh().events.load(Ordering::Relaxed);
            access::diverge(
                t,
                ev,
                format_args!(
                    "thread {} diverged at event {}: {} gave {:#x}, the recording {:#x}",
                    t.tid, ev, w, live, want
                ),
            );
        }
        live
    } else {
        access::result(t, Some(live))
    }
}

/// Input bytes: recorded while recording; copied from the trace into `buf` in replay.
///
/// # Safety
/// `buf` is valid for reads (record) and writes (replay) of `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn reprise_io_data(buf: *mut u8, len: usize) {
    if len == 0 {
        return;
    }
    let Some(mut e) = enter() else { return };
    let t = e.t();
    // SAFETY: buf holds `len` bytes the real call wrote (record) or will receive (replay).
    let b = unsafe { core::slice::from_raw_parts_mut(buf, len) };
    if replaying() {
        access::take_data(t, b);
    }
    access::log_data(t, b);
}

/// How regular-file reads go, for the shim's `file_read_class`: bit 0 every one re-executed and
/// hash-checked (`--hash-reads`), bit 1 none (`--portable`); neither: files of at least
/// `REEXEC_FILE_SIZE` bytes are. Decided at record time; replay follows each read's recorded
/// class. Plain code (also called from the SIGSYS handler).
#[no_mangle]
pub extern "C" fn reprise_read_flags() -> c_int {
    let f = state::config().flags;
    (f & reprise_proto::FLAG_HASH_READS != 0) as c_int
        | (((f & reprise_proto::FLAG_PORTABLE != 0) as c_int) << 1)
}

/// The program replaces itself (`execve` and its family, shim_process.c), about to: what the
/// new program runs is not recorded (the runtime's descriptors close on exec, and sync mode's
/// preload is not in the program's environment), which the user is told here, once per exec,
/// while recording and replaying (a replay runs it again natively; its output is still
/// compared, and a recording that ends in it is a cut trace or a complete one by its exit).
///
/// # Safety
/// `path` is null (an `fexecve`) or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn reprise_exec_note(path: *const core::ffi::c_char) {
    let name = if path.is_null() {
        None
    } else {
        // SAFETY: per the function contract.
        unsafe { core::ffi::CStr::from_ptr(path) }.to_str().ok()
    };
    let name = name.unwrap_or("another program");
    const UNRECORDED: &str = "what that program does is not recorded (a replay runs it again, natively, and compares its output)";
    if !crate::lifecycle::own_process() {
        // A vfork child (another pid, the parent's memory: nothing of the runtime's state
        // may change here) execs its own program, as shells run a command.
        crate::say!("a child process execs {name}: {UNRECORDED}");
        return;
    }
    let Some(mut e) = crate::entry::enter() else {
        return;
    };
    let t = e.t();
    crate::say!(
        "thread {} execs {name} after event {}: {UNRECORDED}",
        t.tid,
        t.sh().events.load(Ordering::Relaxed)
    );
    // The recording ends here if the exec succeeds: send what is buffered now, as a periodic
    // flush does (every thread's records, the free stripes' vectors), so that the trace holds
    // the run up to the exec (else a program that exec'd at once kept no trace, and one that
    // exec'd after its work kept only what the last periodic flush had sent).
    crate::state::status_header()
        .flush_epoch
        .fetch_add(1, Ordering::Relaxed);
    crate::leap::periodic_flush(t);
}

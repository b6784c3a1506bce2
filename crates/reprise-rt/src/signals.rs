//! Asynchronous signals: deferred to a runtime entry while recording, injected at the same
//! entry in replay. Without performance counters nothing finer than
//! "the same runtime entry" is possible.
//!
//! The program's handlers are wrapped: `sigaction`/`signal` store the program's handler and
//! install [`on_async`], which only marks the signal pending on the thread it landed on. The
//! thread's next runtime entry logs (entry index, signal) and runs the program's handler. In
//! replay, timers (`alarm`, `setitimer`, `timer_settime`) are not armed, real asynchronous
//! signals for wrapped handlers are dropped, and each recorded delivery is made when the thread
//! reaches the recorded entry. Synchronous signals (faults) keep the fault path of
//! [`crate::lifecycle`].
#![allow(unsafe_code)]
#![allow(missing_docs)]

use crate::access;
use crate::state::{self, Thread, IN_RT};
use core::ffi::{c_int, c_void};
use core::sync::atomic::{AtomicUsize, Ordering};
use reprise_proto::R_SIGNAL;

const NSIG: usize = 65;
/// The program's handler (sa_sigaction or sa_handler) per signal; 0 = not wrapped.
static PROG: [AtomicUsize; NSIG] = [const { AtomicUsize::new(0) }; NSIG];
/// Whether the program's handler takes siginfo (SA_SIGINFO).
static SIGINFO: [AtomicUsize; NSIG] = [const { AtomicUsize::new(0) }; NSIG];
/// `PROG` value of a terminating signal whose disposition is the default: the runtime catches
/// it, ends the trace, and the process then dies of it as it would have.
const DEFAULT_TERM: usize = usize::MAX;
/// One object per signal, whose stripe orders the program's sending of that signal to itself
/// ([`reprise_self_signal`]) with its deliveries ([`deliver`]).
static SELF_SIG: [u64; NSIG] = [0; NSIG];
/// The signals a user sends to stop a program (Ctrl-C, kill, a closed terminal).
const TERMINATORS: [c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Whether the runtime wraps the program's disposition of `sig` (its handler, or a default
/// that ends the trace): in replay, real deliveries of it are dropped and the recorded ones
/// injected (`shim_process.c`'s `kill` of the program itself sends none then).
#[no_mangle]
pub extern "C" fn reprise_signal_wrapped(sig: c_int) -> c_int {
    (sig > 0 && (sig as usize) < NSIG && PROG[sig as usize].load(Ordering::Relaxed) != 0) as c_int
}

/// The handler the program believes it has installed.
fn program_view(h: usize) -> usize {
    if h == DEFAULT_TERM {
        libc::SIG_DFL
    } else {
        h
    }
}

/// At start: catch the terminating signals whose disposition is the default (an ignored one
/// stays ignored), so the recording ends with a complete trace when one arrives.
pub fn catch_terminators() {
    for sig in TERMINATORS {
        let mut cur = core::mem::MaybeUninit::<libc::sigaction>::uninit();
        // SAFETY: reading the current action into `cur`, which the call fills.
        let cur = unsafe {
            real_sigaction()(sig, core::ptr::null(), cur.as_mut_ptr());
            cur.assume_init()
        };
        if cur.sa_sigaction == libc::SIG_DFL && PROG[sig as usize].load(Ordering::Relaxed) == 0 {
            PROG[sig as usize].store(DEFAULT_TERM, Ordering::Relaxed);
            install_wrapper(sig, &cur);
        }
    }
}

/// Install `on_async` for `sig`, with the flags and mask of `a`.
fn install_wrapper(sig: c_int, a: &libc::sigaction) {
    let mut ours = *a;
    ours.sa_sigaction =
        on_async as extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) as usize;
    ours.sa_flags |= libc::SA_SIGINFO | libc::SA_RESTART;
    ours.sa_flags &= !libc::SA_RESETHAND;
    install(sig, &ours);
}

fn synchronous(sig: c_int) -> bool {
    matches!(
        sig,
        libc::SIGSEGV
            | libc::SIGBUS
            | libc::SIGFPE
            | libc::SIGILL
            | libc::SIGABRT
            | libc::SIGTRAP
            | libc::SIGSYS
            | libc::SIGKILL
            | libc::SIGSTOP
    )
}

fn active() -> bool {
    let m = state::mode();
    m == state::M_RECORD || m == state::M_REPLAY
}

type SigactionFn =
    unsafe extern "C" fn(c_int, *const libc::sigaction, *mut libc::sigaction) -> c_int;

pub(crate) fn real_sigaction() -> SigactionFn {
    static P: AtomicUsize = AtomicUsize::new(0);
    let mut p = P.load(Ordering::Relaxed);
    if p == 0 {
        // SAFETY: NUL-terminated name; RTLD_NEXT finds libc's sigaction.
        p = unsafe { libc::dlsym(libc::RTLD_NEXT, c"sigaction".as_ptr()) } as usize;
        P.store(p, Ordering::Relaxed);
    }
    // SAFETY: p is libc's sigaction, of this type.
    unsafe { core::mem::transmute(p) }
}

/// Install a handler through libc, bypassing our interposer (the runtime's own handlers).
pub fn install(sig: c_int, act: &libc::sigaction) {
    // SAFETY: a valid sigaction for a valid signal number.
    unsafe { real_sigaction()(sig, act, core::ptr::null_mut()) };
}

extern "C" fn on_async(sig: c_int, _info: *mut libc::siginfo_t, _ctx: *mut c_void) {
    let t = state::cur();
    if PROG[sig as usize].load(Ordering::Relaxed) == DEFAULT_TERM || end_requested(sig) {
        return terminator(sig, t);
    }
    if t.is_null() || !active() {
        return call_program(sig, None);
    }
    if state::REPLAY.load(Ordering::Relaxed) {
        return; // replay injects recorded deliveries only
    }
    // SAFETY: the current thread has a slot (checked above): its shared part, all atomics
    // (the handler may interrupt the thread's own runtime code, whose `&mut Thread` does not
    // cover it). The next callback takes the slow path, which delivers the signal.
    let sh = unsafe { &*state::cur_or_idle() };
    sh.sig_pending.fetch_or(1 << sig, Ordering::SeqCst);
    sh.fast_limit.store(0, Ordering::SeqCst);
}

/// A terminating signal arrived whose disposition is the default. Where the thread it landed on
/// holds nothing of the runtime's (in program code, blocked in a real call, or in replay
/// parked or waiting for a turn) the process ends here: the trace is finished with an end that
/// belongs to no thread (replay sends the same signal once every thread reached its final
/// count). A thread busy inside the runtime defers it to its next runtime entry (a recorded
/// delivery, replayed there). Replay ignores a signal it cannot take now: its launcher resends.
fn terminator(sig: c_int, t: *mut Thread) {
    // A fork child before its at-fork handler turned its runtime off (the parent's kill of a
    // child it has just forked): its runtime state is a copy of the parent's, and this signal is
    // the child's, which dies of it. Replay had ignored it as early and left the child alive.
    // (`getpid` with the selector at "allow": a trapped system call in a signal handler would be
    // a runtime entry wherever the signal landed.)
    if t.is_null() || !active() || !crate::sud::allowing(crate::lifecycle::own_process) {
        crate::lifecycle::die_of(sig);
    }
    // SAFETY: the current thread's own slot.
    let th = unsafe { &mut *t };
    if th.passthrough {
        crate::lifecycle::die_of(sig);
    }
    let replay = state::REPLAY.load(Ordering::Relaxed);
    let st = state::status(th.tid).state.load(Ordering::SeqCst);
    let idle = !IN_RT.with(|c| c.get())
        || st == reprise_proto::ST_BLOCKED
        || (replay && (st == reprise_proto::ST_AT_END || st == reprise_proto::ST_WAIT_TURN));
    if idle {
        if replay && !crate::lifecycle::replay_end_reached() {
            // Early: a thread has yet to get where the recording's was (a blocking call it
            // returned from, a count short). The launcher sends it again.
            return;
        }
        crate::lifecycle::end_by_signal(th, sig, true);
    }
    if !replay {
        th.sh().sig_pending.fetch_or(1 << sig, Ordering::SeqCst);
    }
}

/// Whether the launcher asked to end the process with `sig` (a deadlock it found), whatever the
/// program's own disposition.
fn end_requested(sig: c_int) -> bool {
    state::status_header().end_request.load(Ordering::SeqCst) == sig as u32
}

/// Run the program's handler for `sig`, or end the process for a terminating one. `t`: the
/// thread's own `&mut`, passed down by a deferred delivery at a runtime entry ([`deliver`]);
/// None from a signal handler on a thread without a slot or with the runtime inactive.
fn call_program(sig: c_int, t: Option<&mut Thread>) {
    let h = PROG[sig as usize].load(Ordering::Relaxed);
    if h == DEFAULT_TERM || end_requested(sig) {
        if let Some(t) = t.filter(|_| active()) {
            // A deferred delivery (at this runtime entry, recorded; replayed here).
            crate::lifecycle::end_by_signal(t, sig, false);
        }
        crate::lifecycle::die_of(sig);
    }
    if h == 0 || h == libc::SIG_IGN || h == libc::SIG_DFL {
        return;
    }
    // SAFETY: h is the handler the program installed for `sig`, called with the signature it
    // declared (SA_SIGINFO or not); siginfo carries the signal number, no context.
    unsafe {
        if SIGINFO[sig as usize].load(Ordering::Relaxed) != 0 {
            let mut info: libc::siginfo_t = core::mem::zeroed();
            info.si_signo = sig;
            let f: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) =
                core::mem::transmute(h);
            f(sig, &mut info, core::ptr::null_mut());
        } else {
            let f: extern "C" fn(c_int) = core::mem::transmute(h);
            f(sig);
        }
    }
}

/// The program sends itself `sig`, whose disposition the runtime wraps (`kill`, `tgkill` or
/// `sigqueue` to its own pid, `shim_process.c`): a turn on the signal's stripe, taken before
/// the real call in record and instead of it in replay. A delivery takes a turn on it too
/// ([`delivery_turn`]), so replay delivers the signal only once its sender has sent it:
/// without, a replayed `sigsuspend`, which returns the recorded outcome at once, let lbzip2's
/// main thread run on and end the process before the worker that wakes it had written its
/// output (`lbzip2 -d`: every sync-mode replay diverged).
#[no_mangle]
pub extern "C" fn reprise_self_signal(sig: c_int) {
    if (1..NSIG as c_int).contains(&sig) {
        crate::calls::reprise_ordered(core::ptr::addr_of!(SELF_SIG[sig as usize]).cast());
    }
}

/// A delivery of `sig` at this entry: its turn after the program's own sending of it, if any
/// ([`reprise_self_signal`]). The caller has set `IN_RT`.
fn delivery_turn(t: &mut Thread, sig: c_int) {
    let obj = core::ptr::addr_of!(SELF_SIG[sig as usize]).cast();
    crate::sync::take_obj(t, obj, access::kind::SEM);
}

/// Deliver what is due at this entry (called by `entry::enter` outside runtime state, so the
/// handler's own accesses are recorded like any other code of the thread).
#[cold]
pub fn deliver(t: &mut Thread) {
    let e = t.entries();
    if state::REPLAY.load(Ordering::Relaxed) {
        while t.next_sig_at == e {
            let Some(ti) = state::thread_index(t.tid) else {
                return;
            };
            let list = state::pairs(ti.signals_off, ti.signals_len);
            let sig = list[t.next_sig].value as c_int;
            t.next_sig += 1;
            t.next_sig_at = list.get(t.next_sig).map(|p| p.event).unwrap_or(u64::MAX);
            IN_RT.with(|c| c.set(true));
            access::log_pair(t, R_SIGNAL, e, sig as u64);
            delivery_turn(t, sig);
            IN_RT.with(|c| c.set(false));
            call_program(sig, Some(&mut *t));
        }
        return;
    }
    let pending = t.sh().sig_pending.swap(0, Ordering::SeqCst);
    for sig in 1..NSIG as c_int {
        if pending & (1 << sig) != 0 {
            IN_RT.with(|c| c.set(true));
            access::log_pair(t, R_SIGNAL, e, sig as u64);
            delivery_turn(t, sig);
            IN_RT.with(|c| c.set(false));
            call_program(sig, Some(&mut *t));
        }
    }
}

/// # Safety
/// Called as libc's `sigaction` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
#[export_name = "reprise_sigaction"]
pub unsafe extern "C" fn sigaction(
    sig: c_int,
    act: *const libc::sigaction,
    old: *mut libc::sigaction,
) -> c_int {
    if state::mode() == state::M_UNINIT {
        state::init();
    }
    // Runtime work: the structure copies below are not the program's accesses.
    let _rt = state::RtGuard::new();
    if (sig == libc::SIGSEGV || (sig == libc::SIGSYS && crate::sud::handler_installed()))
        && active()
    {
        // SAFETY: the caller's sigaction pointers, forwarded to `kept::kept_action`.
        return unsafe { crate::kept::kept_action(sig, act, old) };
    }
    if sig == crate::handover::SIG && crate::handover::installed() && !act.is_null() {
        // The recorder's own signal (ownership handovers): refused, not silently replaced.
        crate::say!("the program installs a handler for signal {sig}, which reprise uses while recording; refused (record with --strategy leap to let the program have it)");
        // SAFETY: this thread's errno.
        unsafe { *libc::__errno_location() = libc::EINVAL };
        return -1;
    }
    let wrapped_before = (sig as usize) < NSIG && PROG[sig as usize].load(Ordering::Relaxed) != 0;
    let prev = if (sig as usize) < NSIG {
        program_view(PROG[sig as usize].load(Ordering::Relaxed))
    } else {
        0
    };
    if act.is_null() || synchronous(sig) || !active() || sig <= 0 || sig as usize >= NSIG {
        // SAFETY: forwarded unchanged.
        let r = unsafe { real_sigaction()(sig, act, old) };
        if r == 0 && !old.is_null() && wrapped_before {
            // SAFETY: old is the caller's out-parameter, just filled.
            unsafe { (*old).sa_sigaction = prev };
        }
        return r;
    }
    // SAFETY: act is the caller's valid sigaction.
    let a = unsafe { *act };
    let h = a.sa_sigaction;
    if h == libc::SIG_DFL && TERMINATORS.contains(&sig) {
        // Still caught, to end the trace (see `catch_terminators`).
        PROG[sig as usize].store(DEFAULT_TERM, Ordering::Relaxed);
        // (No zeroed struct here: a memset in the program's call would be a recorded access.)
        let mut cur = core::mem::MaybeUninit::<libc::sigaction>::uninit();
        // SAFETY: reading the current action into `cur`; `old` is the caller's out-parameter.
        unsafe {
            real_sigaction()(sig, core::ptr::null(), cur.as_mut_ptr());
            if !old.is_null() {
                *old = cur.assume_init();
                (*old).sa_sigaction = prev;
            }
        }
        install_wrapper(sig, &a);
        return 0;
    }
    if h == libc::SIG_IGN || h == libc::SIG_DFL {
        PROG[sig as usize].store(0, Ordering::Relaxed);
        // SAFETY: forwarded unchanged.
        let r = unsafe { real_sigaction()(sig, act, old) };
        if r == 0 && !old.is_null() && wrapped_before {
            unsafe { (*old).sa_sigaction = prev };
        }
        return r;
    }
    PROG[sig as usize].store(h, Ordering::Relaxed);
    SIGINFO[sig as usize].store(
        (a.sa_flags & libc::SA_SIGINFO != 0) as usize,
        Ordering::Relaxed,
    );
    let mut ours = a;
    ours.sa_sigaction =
        on_async as extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) as usize;
    ours.sa_flags |= libc::SA_SIGINFO | libc::SA_RESTART;
    // SAFETY: a valid sigaction derived from the caller's.
    let r = unsafe { real_sigaction()(sig, &ours, old) };
    if r == 0 && !old.is_null() && wrapped_before {
        unsafe { (*old).sa_sigaction = prev };
    }
    r
}

type MaskFn = unsafe extern "C" fn(c_int, *const libc::sigset_t, *mut libc::sigset_t) -> c_int;

fn real_mask(slot: &AtomicUsize, name: &core::ffi::CStr) -> MaskFn {
    let mut p = slot.load(Ordering::Relaxed);
    if p == 0 {
        // SAFETY: NUL-terminated name; RTLD_NEXT finds libc's function.
        p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) } as usize;
        slot.store(p, Ordering::Relaxed);
    }
    // SAFETY: p is libc's sigprocmask/pthread_sigmask, of this type.
    unsafe { core::mem::transmute(p) }
}

/// A signal mask change: SIGSYS is never blocked while the runtime is active (a system call
/// trapped by Syscall User Dispatch with SIGSYS blocked kills the process; programs such as
/// xz block every signal in their threads).
fn mask_change(
    f: MaskFn,
    how: c_int,
    set: *const libc::sigset_t,
    old: *mut libc::sigset_t,
) -> c_int {
    if set.is_null() || how == libc::SIG_UNBLOCK || !active() {
        // SAFETY: forwarded unchanged.
        return unsafe { f(how, set, old) };
    }
    // Runtime work: the copy is not the program's access.
    let _rt = state::RtGuard::new();
    // SAFETY: `set` is the caller's valid signal set; the copy is ours.
    unsafe {
        let mut mine = *set;
        libc::sigdelset(&mut mine, libc::SIGSYS);
        f(how, &mine, old)
    }
}

/// # Safety
/// Called as libc's `sigprocmask` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
#[export_name = "reprise_sigprocmask"]
pub unsafe extern "C" fn sigprocmask(
    how: c_int,
    set: *const libc::sigset_t,
    old: *mut libc::sigset_t,
) -> c_int {
    static P: AtomicUsize = AtomicUsize::new(0);
    mask_change(real_mask(&P, c"sigprocmask"), how, set, old)
}

/// # Safety
/// Called as libc's `pthread_sigmask` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
#[export_name = "reprise_pthread_sigmask"]
pub unsafe extern "C" fn pthread_sigmask(
    how: c_int,
    set: *const libc::sigset_t,
    old: *mut libc::sigset_t,
) -> c_int {
    static P: AtomicUsize = AtomicUsize::new(0);
    mask_change(real_mask(&P, c"pthread_sigmask"), how, set, old)
}

/// `sysv_signal`: a one-shot handler (SA_RESETHAND | SA_NODEFER), through [`sigaction`].
///
/// # Safety
/// Called as libc's `sysv_signal` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
#[export_name = "reprise_sysv_signal"]
pub unsafe extern "C" fn sysv_signal(sig: c_int, h: libc::sighandler_t) -> libc::sighandler_t {
    // Runtime work: zeroing the structures is not the program's access.
    let _rt = state::RtGuard::new();
    // SAFETY: building a plain sigaction; `sigaction` above does the rest.
    unsafe {
        let mut a: libc::sigaction = core::mem::zeroed();
        a.sa_sigaction = h;
        a.sa_flags = libc::SA_RESETHAND | libc::SA_NODEFER;
        let mut old: libc::sigaction = core::mem::zeroed();
        if sigaction(sig, &a, &mut old) != 0 {
            return libc::SIG_ERR;
        }
        old.sa_sigaction
    }
}

/// # Safety
/// Called as libc's `signal` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
#[export_name = "reprise_signal"]
pub unsafe extern "C" fn signal(sig: c_int, h: libc::sighandler_t) -> libc::sighandler_t {
    // Runtime work: zeroing the structures is not the program's access.
    let _rt = state::RtGuard::new();
    // SAFETY: building a plain sigaction; `sigaction` above does the rest.
    unsafe {
        let mut a: libc::sigaction = core::mem::zeroed();
        a.sa_sigaction = h;
        a.sa_flags = libc::SA_RESTART;
        let mut old: libc::sigaction = core::mem::zeroed();
        if sigaction(sig, &a, &mut old) != 0 {
            return libc::SIG_ERR;
        }
        old.sa_sigaction
    }
}

/// A timer call: performed while recording (result recorded), not armed in replay.
fn timer_call(f: impl FnOnce() -> c_int, old: *mut c_void, old_size: usize) -> c_int {
    let Some(mut e) = crate::entry::enter() else {
        return f();
    };
    let t = e.t();
    access::safe_point(t);
    if state::REPLAY.load(Ordering::Relaxed) {
        if !old.is_null() {
            // SAFETY: the caller's out-parameter of old_size bytes.
            unsafe { core::ptr::write_bytes(old as *mut u8, 0, old_size) };
        }
        access::result(t, None) as u32 as c_int
    } else {
        let r = f();
        access::result(t, Some(r as u32 as u64));
        r
    }
}

/// # Safety
/// Called as libc's `setitimer` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
#[export_name = "reprise_setitimer"]
pub unsafe extern "C" fn setitimer(
    which: c_int,
    new: *const libc::itimerval,
    old: *mut libc::itimerval,
) -> c_int {
    type F = unsafe extern "C" fn(c_int, *const libc::itimerval, *mut libc::itimerval) -> c_int;
    // SAFETY: libc's setitimer has this type.
    let real: F =
        unsafe { core::mem::transmute(libc::dlsym(libc::RTLD_NEXT, c"setitimer".as_ptr())) };
    timer_call(
        || unsafe { real(which, new, old) },
        old.cast(),
        core::mem::size_of::<libc::itimerval>(),
    )
}

/// # Safety
/// Called as libc's `alarm` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
#[export_name = "reprise_alarm"]
pub unsafe extern "C" fn alarm(s: libc::c_uint) -> libc::c_uint {
    type F = unsafe extern "C" fn(libc::c_uint) -> libc::c_uint;
    // SAFETY: libc's alarm has this type.
    let real: F = unsafe { core::mem::transmute(libc::dlsym(libc::RTLD_NEXT, c"alarm".as_ptr())) };
    timer_call(|| unsafe { real(s) as c_int }, core::ptr::null_mut(), 0) as libc::c_uint
}

/// # Safety
/// Called as libc's `timer_settime` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
#[export_name = "reprise_timer_settime"]
pub unsafe extern "C" fn timer_settime(
    id: *mut c_void,
    flags: c_int,
    new: *const libc::itimerspec,
    old: *mut libc::itimerspec,
) -> c_int {
    type F = unsafe extern "C" fn(
        *mut c_void,
        c_int,
        *const libc::itimerspec,
        *mut libc::itimerspec,
    ) -> c_int;
    // SAFETY: libc's timer_settime has this type.
    let real: F =
        unsafe { core::mem::transmute(libc::dlsym(libc::RTLD_NEXT, c"timer_settime".as_ptr())) };
    timer_call(
        || unsafe { real(id, flags, new, old) },
        old.cast(),
        core::mem::size_of::<libc::itimerspec>(),
    )
}

//! The program's own SIGSEGV and SIGSYS handlers, kept behind the runtime's: its `sigaction`
//! of either (while the runtime is active, and for SIGSYS while Syscall User Dispatch is on)
//! is stored, not installed, and the runtime's handler calls it for every signal that is not
//! the runtime's.
#![allow(unsafe_code)]

use crate::signals::real_sigaction;
use core::ffi::{c_int, c_void};
use core::sync::atomic::{AtomicUsize, Ordering};

/// The program's own SIGSEGV and SIGSYS handlers (index [`kept`]; 0: none) and their flags
/// (1: takes siginfo, 2: `SA_RESETHAND`, 4: ignored): the runtime's handlers stay installed
/// and call these for every signal that is not theirs. SIGSEGV's emulates the trapped `rdtsc`
/// (also the vDSO's clock reads); SIGSYS's runs the system calls that Syscall User Dispatch
/// traps (bash installs a handler for every fatal signal: installed, it took the next trapped
/// call's SIGSYS, raised it again and died of it, so no bash script could be recorded in sync
/// mode).
static KEPT_PROG: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];
static KEPT_FLAGS: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];

/// The index of `sig`'s kept action (SIGSEGV or SIGSYS).
fn kept(sig: c_int) -> usize {
    usize::from(sig == libc::SIGSYS)
}

/// `sigaction(SIGSEGV or SIGSYS, ...)` while the runtime is active: kept, not installed.
///
/// # Safety
/// `act` and `old` are null or valid, as for `sigaction`.
pub(crate) unsafe fn kept_action(
    sig: c_int,
    act: *const libc::sigaction,
    old: *mut libc::sigaction,
) -> c_int {
    let k = kept(sig);
    if !old.is_null() {
        let prev = KEPT_PROG[k].load(Ordering::Relaxed);
        let flags = KEPT_FLAGS[k].load(Ordering::Relaxed);
        // SAFETY: reading the installed action into the caller's out-parameter, then showing
        // the program its own handler.
        unsafe {
            real_sigaction()(sig, core::ptr::null(), old);
            (*old).sa_sigaction = if flags & 4 != 0 {
                libc::SIG_IGN
            } else if prev == 0 {
                libc::SIG_DFL
            } else {
                prev
            };
            if flags & 1 == 0 {
                (*old).sa_flags &= !libc::SA_SIGINFO;
            }
        }
    }
    if !act.is_null() {
        // SAFETY: act is the caller's valid sigaction.
        let a = unsafe { *act };
        let h = a.sa_sigaction;
        let ignored = h == libc::SIG_IGN;
        let h = if h == libc::SIG_DFL || h == libc::SIG_IGN {
            0
        } else {
            h
        };
        let flags = ((a.sa_flags & libc::SA_SIGINFO != 0) as usize)
            | (2 * (a.sa_flags & libc::SA_RESETHAND != 0) as usize)
            | (4 * ignored as usize);
        KEPT_FLAGS[k].store(flags, Ordering::Relaxed);
        KEPT_PROG[k].store(h, Ordering::Relaxed);
    }
    0
}

/// Run the program's own handler of `sig` (SIGSEGV or SIGSYS) for a signal that is not the
/// runtime's (a fault other than a trapped `rdtsc`; a SIGSYS that Syscall User Dispatch did
/// not raise); false when it has none (the default action is due). An ignored one is handled.
pub fn program_kept(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) -> bool {
    if sig != libc::SIGSEGV && sig != libc::SIGSYS {
        return false;
    }
    let k = kept(sig);
    let h = KEPT_PROG[k].load(Ordering::Relaxed);
    let flags = KEPT_FLAGS[k].load(Ordering::Relaxed);
    if flags & 4 != 0 {
        // An ignored SIGSYS sent from outside is ignored; an ignored SIGSEGV takes the default
        // action, as the kernel makes it for a fault (returning would fault again forever).
        return sig == libc::SIGSYS;
    }
    if h == 0 {
        return false;
    }
    if flags & 2 != 0 {
        KEPT_PROG[k].store(0, Ordering::Relaxed); // SA_RESETHAND: the default action next time
    }
    // SAFETY: h is the handler the program installed for `sig`, called with the signature it
    // declared, with the kernel's siginfo and context.
    unsafe {
        if flags & 1 != 0 {
            let f: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) =
                core::mem::transmute(h);
            f(sig, info, ctx);
        } else {
            let f: extern "C" fn(c_int) = core::mem::transmute(h);
            f(sig);
        }
    }
    true
}

//! Every system call is a safe point: Syscall User Dispatch (Linux 5.11+) catches the system
//! calls that symbol interposition misses (glibc's internal `read`/`write`/`futex`, libstdc++'s
//! raw futex waits, ...).
//!
//! Each thread's selector is "allow" while the thread runs runtime code and "block" once it
//! returns to the program. The first system call the program makes after that raises SIGSYS;
//! the handler marks the safe point (the previous access is complete: fold its value, release
//! its turn), switches the selector to "allow", counts the call and rewinds the instruction
//! pointer so the call re-executes natively. Every later call up to the thread's next runtime
//! entry runs untrapped: the thread holds no turn then, so none of them can block another
//! thread's turn, which is what the safe-point rule needs. A runtime call that ends with a
//! safe point and takes no turn after it leaves the selector at "allow" itself
//! ([`crate::calls::untrap`]): the trap would only have repeated that safe point.
//!
//! Inside a stdio call every system call is trapped and performed by the handler instead
//! ([`crate::capture`]); the handler then returns with the selector still trapping, which the
//! allowed region makes possible: glibc's signal trampoline (`__restore_rt`, whose
//! `rt_sigreturn` would otherwise trap too).
#![allow(unsafe_code)]

use crate::access;
use crate::state::{self, Thread, IN_RT};
use crate::sys;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use reprise_proto::*;

/// Selector value: system calls pass.
pub const ALLOW: u8 = 0;
/// Selector value: system calls raise SIGSYS.
pub const BLOCK: u8 = 1;
const PR_SET_SYSCALL_USER_DISPATCH: u64 = 59;
const PR_SYS_DISPATCH_ON: u64 = 1;
const NSYS: usize = 512;
static COUNTS: [AtomicU32; NSYS] = [const { AtomicU32::new(0) }; NSYS];
/// glibc's signal trampoline (the SIGSYS handler's sa_restorer): system calls from there are
/// always allowed.
static RESTORER: AtomicU64 = AtomicU64::new(0);

/// Install the SIGSYS handler (once, at start).
pub fn install_handler() {
    // SAFETY: a zeroed sigaction with our handler is valid.
    let mut sa: libc::sigaction = unsafe { core::mem::zeroed() };
    sa.sa_sigaction =
        on_sigsys as extern "C" fn(i32, *mut libc::siginfo_t, *mut libc::c_void) as usize;
    sa.sa_flags = libc::SA_SIGINFO;
    // The handler runs system calls for the program: no handover signal may interrupt them.
    // SAFETY: sa_mask is a valid, zeroed signal set.
    unsafe { libc::sigaddset(&mut sa.sa_mask, crate::handover::SIG) };
    crate::signals::install(libc::SIGSYS, &sa);
    HANDLER.store(true, Ordering::Relaxed);
    // The kernel's view of the action holds the trampoline glibc installed.
    let mut k = [0u64; 4]; // handler, flags, restorer, mask
                           // SAFETY: rt_sigaction with a null new action reads the current one into k (32 bytes).
    let r = unsafe {
        sys::syscall6(
            libc::SYS_rt_sigaction,
            libc::SIGSYS as u64,
            0,
            k.as_mut_ptr() as u64,
            8,
            0,
            0,
        )
    };
    const SA_RESTORER: u64 = 0x0400_0000;
    if r == 0 && k[1] & SA_RESTORER != 0 {
        RESTORER.store(k[2], Ordering::Relaxed);
    }
}

/// Turn dispatch on for the current thread (selector starts at "allow").
pub fn enable(t: &mut Thread) {
    if state::config().flags & FLAG_NO_SUD != 0 {
        return;
    }
    t.sh().sud.store(ALLOW, Ordering::Relaxed);
    // The allowed region: the signal trampoline's `mov $15, %rax; syscall` (the kernel
    // compares the address after the `syscall` instruction), or none (offset 0).
    // A raw call, not `rustix::thread::enable_syscall_user_dispatch`: that takes the region as
    // a slice, which cannot say "none": an empty slice's address is 1, and the kernel refuses
    // a non-zero offset with length 0 (EINVAL), which would leave the thread untrapped.
    let tramp = RESTORER.load(Ordering::Relaxed);
    let len = if tramp != 0 { 16 } else { 0 };
    // SAFETY: the selector lives in the thread's slot, mapped for the whole process lifetime.
    let r = unsafe {
        sys::syscall6(
            libc::SYS_prctl,
            PR_SET_SYSCALL_USER_DISPATCH,
            PR_SYS_DISPATCH_ON,
            tramp,
            len,
            t.sh().sud.as_ptr() as u64,
            0,
        )
    };
    t.sud_on = r == 0;
}

/// Whether the runtime's SIGSYS handler is installed (the program's own is then kept aside,
/// `kept::kept_action`).
static HANDLER: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// Whether the runtime's SIGSYS handler is installed.
pub fn handler_installed() -> bool {
    HANDLER.load(Ordering::Relaxed)
}

/// `si_code` of a SIGSYS raised by Syscall User Dispatch.
const SYS_USER_DISPATCH: i32 = 2;

extern "C" fn on_sigsys(_sig: i32, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel's siginfo for this signal (null only if called by hand).
    if !info.is_null() && unsafe { (*info).si_code } != SYS_USER_DISPATCH {
        // Not a trapped system call (sent with `kill`, or a seccomp filter's trap): the
        // program's own disposition, its system calls untrapped meanwhile.
        return foreign_sigsys(info, ctx);
    }
    let t = state::cur();
    if t.is_null() || ctx.is_null() {
        return;
    }
    // SAFETY: t is this thread's slot; ctx is the kernel's ucontext for this SIGSYS.
    let th = unsafe { &mut *t };
    th.sh().sud.store(ALLOW, Ordering::Relaxed);
    let uc = unsafe { &mut *(ctx as *mut libc::ucontext_t) };
    let g = &mut uc.uc_mcontext.gregs;
    let nr = g[libc::REG_RAX as usize] as usize;
    if nr < NSYS {
        COUNTS[nr].fetch_add(1, Ordering::Relaxed);
    }
    let m = state::mode();
    let active = (m == state::M_RECORD || m == state::M_REPLAY) && !th.passthrough;
    if active
        && crate::capture::on()
        && RESTORER.load(Ordering::Relaxed) != 0
        && crate::capture::handle(th, g)
    {
        // Performed here; the thread goes on trapping until the stdio call ends.
        th.sh().sud.store(BLOCK, Ordering::Relaxed);
        return;
    }
    if active && nr == libc::SYS_exit_group as usize && !IN_RT.with(|c| c.get()) {
        // A raw exit_group (not through exit(), _exit or _Exit): end the recording first.
        crate::lifecycle::reprise_process_exiting();
    } else if active && !IN_RT.with(|c| c.get()) {
        IN_RT.with(|c| c.set(true));
        let _e = sys::ErrnoGuard::new();
        access::safe_point(th);
        // The thread runs system calls, not instrumented code, until its next callback.
        crate::ownership::set_free(th.sh());
        IN_RT.with(|c| c.set(false));
    }
    // Re-execute the `syscall` instruction (2 bytes) natively; RAX holds the number again
    // after the kernel's rollback.
    g[libc::REG_RIP as usize] -= 2;
    g[libc::REG_RAX as usize] = nr as i64;
}

/// Send the counts to the launcher (at the end of the process).
pub fn send_stats() {
    let mut frame = [0u8; FRAME_HDR + 8 * 64];
    let mut n = 0;
    let flush = |frame: &mut [u8], n: usize| {
        if n > 0 {
            put_frame_header(frame, F_STATS, n * 8);
            crate::channel::send(&frame[..FRAME_HDR + n * 8]);
        }
    };
    for (nr, c) in COUNTS.iter().enumerate() {
        let c = c.load(Ordering::Relaxed);
        if c == 0 {
            continue;
        }
        let o = FRAME_HDR + n * 8;
        frame[o..o + 4].copy_from_slice(&(nr as u32).to_le_bytes());
        frame[o + 4..o + 8].copy_from_slice(&c.to_le_bytes());
        n += 1;
        if n == 64 {
            flush(&mut frame, n);
            n = 0;
        }
    }
    flush(&mut frame, n);
}

/// Run `f` with the current thread's system calls allowed (its selector restored after): the
/// runtime's own calls made in the program's context, from a signal handler or an interposer.
pub fn allowing<R>(f: impl FnOnce() -> R) -> R {
    let t = state::cur();
    // SAFETY: this thread's own slot, when it has one (its selector is a byte only the thread
    // and the kernel use).
    let sel = (!t.is_null()).then(|| unsafe { (*t).sh().sud.swap(ALLOW, Ordering::Relaxed) });
    let r = f();
    if let Some(sel) = sel {
        // SAFETY: as above.
        unsafe { (*t).sh().sud.store(sel, Ordering::Relaxed) };
    }
    r
}

/// A system call the shim makes for the program in replay, in program context (its output
/// written again, `put_all` in shim_fdio.c): with the selector at "allow", so that it is not a
/// safe point of its own. Trapped, it was one runtime entry more than the recording's real
/// call, which ran untrapped: every later recorded signal delivery came one entry late per
/// line written (dash's SIGCHLD, delivered past the wait it had preceded: 7 replays of 10
/// diverged). Returns the raw result (`-errno` on failure).
#[no_mangle]
pub extern "C" fn reprise_untrapped_syscall3(n: i64, a1: u64, a2: u64, a3: u64) -> i64 {
    // SAFETY: the shim's call with its own valid arguments (a write of the program's buffer,
    // a poll of one pollfd).
    allowing(|| unsafe { sys::syscall6(n, a1, a2, a3, 0, 0, 0) })
}

/// A SIGSYS the runtime did not cause: the program's handler (kept aside by its `sigaction`),
/// else the default action.
fn foreign_sigsys(info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let handled = allowing(|| crate::kept::program_kept(libc::SIGSYS, info, ctx));
    if !handled {
        crate::lifecycle::die_of(libc::SIGSYS);
    }
}

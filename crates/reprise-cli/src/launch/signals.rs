//! The launcher's handlers for SIGINT, SIGTERM and SIGHUP (see the module above): forwarded
//! to the program while recording, stopping the replay in replay.

/// The program's pid while it runs (for the signal-forwarding handler), else 0.
pub(super) static CHILD: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);
/// Whether the program shares the launcher's process group.
pub(super) static SAME_GROUP: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);
pub(super) const FORWARDED: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

pub(super) extern "C" fn forward(sig: i32, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    use std::sync::atomic::Ordering;
    let pid = CHILD.load(Ordering::SeqCst);
    if pid <= 0 {
        return;
    }
    // SAFETY: the kernel's siginfo for this signal.
    let code = unsafe { (*info).si_code };
    if SAME_GROUP.load(Ordering::SeqCst) && code == libc::SI_KERNEL {
        // From the terminal, to the whole foreground group: the program has its own copy.
        return;
    }
    // SAFETY: kill(2) on our own child, async-signal-safe.
    unsafe { libc::kill(pid, sig) };
}

/// The signal (SIGINT, SIGTERM, SIGHUP) that stopped a replay, else 0.
static STOPPED: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// Replay: such a signal ends the replayed program (SIGKILL: the replay must not run a
/// handler the recording did not) and the replay with it, without a verdict.
pub(super) extern "C" fn stop(sig: i32, _info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    use std::sync::atomic::Ordering;
    STOPPED.store(sig, Ordering::SeqCst);
    let pid = CHILD.load(Ordering::SeqCst);
    if pid > 0 {
        // SAFETY: kill(2) on our own child, async-signal-safe.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

/// The signal that stopped the replay (see [`stop`]), if one did.
pub fn stopped_by() -> Option<i32> {
    match STOPPED.load(std::sync::atomic::Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// Install `handler` for SIGINT, SIGTERM and SIGHUP.
pub(super) fn install_on_forwarded(
    handler: extern "C" fn(i32, *mut libc::siginfo_t, *mut libc::c_void),
) {
    for sig in FORWARDED {
        // SAFETY: a zeroed sigaction with our handler and SA_SIGINFO is valid.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = handler as usize;
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

//! Sync mode: the runtime as a shared object injected with `LD_PRELOAD` into an unmodified
//! program (seed 002, iReplayer). The same interposers as full mode are reached through the
//! program's PLT instead of static linking; there are no memory-access callbacks, so only
//! synchronisation, system calls and the heap are ordered and recorded.
//!
//! The launcher links this crate's archive into `libreprise_rt.so` with
//! `-init=reprise_preload_init`, so the runtime starts before any constructor of the program
//! and removes `LD_PRELOAD` from the environment before the program can read it (its children
//! do not inherit it). Record and replay do this identically: the entry stays on the stack
//! where it was, only the `environ` array changes and the entry's bytes are overwritten with
//! NULs (the kernel's copy, `/proc/self/environ`, reads them from there), so addresses stay
//! equal.
#![allow(unsafe_code)]

use core::ffi::c_char;
use core::sync::atomic::{AtomicBool, Ordering};

/// True when the runtime runs in sync mode (set at init from the config flags).
pub static SYNC: AtomicBool = AtomicBool::new(false);

/// Whether this run is in sync mode.
#[inline(always)]
pub fn sync() -> bool {
    SYNC.load(Ordering::Relaxed)
}

/// Whether replay gives the program its children's pids as the recording had them (1), as it
/// gives `getpid`'s, or as they are in the replay (0). Full mode: a pid the program keeps in
/// memory is read through its callbacks, into the value digests (`pid = fork()` then
/// `waitpid(pid)` at `-O0`: every replay diverged); the runtime maps it back for the calls
/// that take one (the wait family, kill: shim_child.c). Sync mode has no value digests and
/// gives the replay's: bash compares them with pids it reads elsewhere.
#[no_mangle]
pub extern "C" fn reprise_recorded_pids() -> core::ffi::c_int {
    core::ffi::c_int::from(!sync())
}

/// The shared object's initialiser (`DT_INIT`): start the runtime now, before the program's
/// constructors and `main`.
#[no_mangle]
pub extern "C" fn reprise_preload_init() {
    if crate::state::mode() == crate::state::M_UNINIT {
        crate::state::init();
    }
    // The runtime may have started earlier (the dynamic loader's first malloc), before libc
    // set `environ`.
    if sync() {
        hide_ld_preload();
    }
}

static HIDDEN: AtomicBool = AtomicBool::new(false);

extern "C" {
    static mut environ: *mut *mut c_char;
}

const KEY: &[u8] = b"LD_PRELOAD=";

/// Remove the runtime from `LD_PRELOAD`: the launcher puts the runtime's path first; a
/// program's own preloads follow it after a `:` and stay (moved to the front of the value, in
/// place); when there is none the variable is removed from `environ`.
pub fn hide_ld_preload() {
    // SAFETY: `environ` is libc's NULL-terminated array of NUL-terminated strings; nothing
    // else runs yet (the runtime starts before the program's constructors), so editing it in
    // place races with nobody.
    unsafe {
        let env = environ;
        if env.is_null() || HIDDEN.swap(true, Ordering::Relaxed) {
            return;
        }
        let mut i = 0;
        while !(*env.add(i)).is_null() {
            let e = *env.add(i) as *mut u8;
            if KEY.iter().enumerate().all(|(k, &b)| *e.add(k) == b) {
                let val = e.add(KEY.len());
                let mut n = 0;
                while *val.add(n) != 0 && *val.add(n) != b':' {
                    n += 1;
                }
                if *val.add(n) == b':' {
                    // Keep the program's own preloads: shift them over the runtime's path.
                    let rest = val.add(n + 1);
                    let mut m = 0;
                    while *rest.add(m) != 0 {
                        m += 1;
                    }
                    core::ptr::copy(rest, val, m + 1);
                    // The old tail, after the new terminator, would show in
                    // /proc/self/environ.
                    for k in m + 1..m + 1 + n {
                        core::ptr::write_volatile(val.add(k), 0);
                    }
                } else {
                    // The kernel's copy (/proc/self/environ) is these bytes: blank them.
                    let mut len = KEY.len() + n;
                    while len > 0 {
                        len -= 1;
                        core::ptr::write_volatile(e.add(len), 0);
                    }
                    let mut j = i;
                    loop {
                        let next = *env.add(j + 1);
                        *env.add(j) = next;
                        if next.is_null() {
                            break;
                        }
                        j += 1;
                    }
                }
                return;
            }
            i += 1;
        }
    }
}

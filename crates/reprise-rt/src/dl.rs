//! Libraries the program loads itself (`dlopen`): the C shim (`csrc/shim_dl.c`) notes each call
//! and jumps to the real one; the calling thread's next runtime entry ([`check`]) walks the
//! loader's list and, while recording, sends every object loaded since start ([`F_LIB`]) to the
//! launcher, which hashes it into the trace. The objects present at start are marked seen
//! ([`at_start`]): the program's own libraries are in the trace's header, and in sync mode the
//! runtime's .so is one of them, so it never lists itself. Also the runtime's own early load of
//! glibc's unwinder ([`load_unwinder_at_start`]).
#![allow(unsafe_code)]

use core::cell::Cell;
use core::sync::atomic::{AtomicBool, Ordering};
use reprise_proto::F_LIB;

extern "C" {
    fn reprise_shim_dl_walk(send: i32) -> i32;
}

std::thread_local! {
    /// This thread called `dlopen` since its last walk.
    static PENDING: Cell<bool> = const { Cell::new(false) };
}

/// Called by the `dlopen` stub before it jumps to the real one (program code, any thread).
#[no_mangle]
pub extern "C" fn reprise_dlopen_seen() {
    PENDING.with(|p| p.set(true));
}

/// At a runtime entry: report the libraries of this thread's last `dlopen` (kept pending while
/// the loader is in the middle of a change: a later entry reports them).
#[inline(always)]
pub fn check() {
    if PENDING.with(|p| p.get()) {
        walk();
    }
}

#[cold]
fn walk() {
    // Cleared first: nothing the walk does may start another one on this thread (it holds the
    // shim's spin lock).
    PENDING.with(|p| p.set(false));
    let send = !crate::state::REPLAY.load(core::sync::atomic::Ordering::Relaxed);
    // SAFETY: the shim's walk takes the loader's own lock (dl_iterate_phdr) and its private
    // spin lock; its callback sends frames with stack buffers only.
    if unsafe { reprise_shim_dl_walk(send as i32) } == 0 {
        PENDING.with(|p| p.set(true));
    }
}

/// Mark every object loaded at start as seen (record and replay alike).
pub fn at_start() {
    // SAFETY: as in `walk`; nothing is sent.
    unsafe { reprise_shim_dl_walk(0) };
}

/// Send a library's path to the launcher ([`F_LIB`]).
///
/// # Safety
/// `path` must point to `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn reprise_send_lib(path: *const u8, len: usize) {
    let mut frame = [0u8; reprise_proto::FRAME_HDR + 4096];
    let n = len.min(4096);
    reprise_proto::put_frame_header(&mut frame, F_LIB, n);
    // SAFETY: the caller passes `len` readable bytes.
    let p = unsafe { core::slice::from_raw_parts(path, n) };
    frame[reprise_proto::FRAME_HDR..reprise_proto::FRAME_HDR + n].copy_from_slice(p);
    crate::channel::send(&frame[..reprise_proto::FRAME_HDR + n]);
}

/// glibc loads the unwinder (libgcc_s) the first time a thread unwinds (pthread_exit,
/// cancellation) or calls pthread_cancel, with allocations from whichever thread gets there
/// first: racy, and a replayed cancellation unwinds at another moment than the recorded one
/// (replay does not perform pthread_cancel). Loading it now, at start in both modes, takes
/// that work out of the program's run.
///
/// Not from a full-mode program's `.preinit_array` (`__tsan_init`), which runs before libc's
/// own initialisation: loading a library there ran libc's initialiser inside that `dlopen`,
/// with the `__environ`, argc and argv libc had not yet set (null), and libc never ran it
/// again: the program found no environment variables at all (`getenv` returned null, so
/// `OMP_NUM_THREADS` and every other setting was ignored while recording and replaying).
/// Then [`late_unwinder`] loads it, after libc's start, before the program's constructors.
fn load_unwinder() {
    extern "C" {
        fn backtrace(buf: *mut *mut libc::c_void, n: libc::c_int) -> libc::c_int;
    }
    let mut buf = [core::ptr::null_mut(); 1];
    // SAFETY: a one-entry buffer; glibc's backtrace loads its unwind link on first use.
    unsafe { backtrace(buf.as_mut_ptr(), 1) };
}

/// The unwinder's load waits for [`late_unwinder`].
static UNWINDER_DEFERRED: AtomicBool = AtomicBool::new(false);

/// At the runtime's start: [`load_unwinder`] now, or from [`late_unwinder`] when libc has not
/// started yet.
pub fn load_unwinder_at_start() {
    if libc_started() {
        load_unwinder();
    } else {
        UNWINDER_DEFERRED.store(true, Ordering::Relaxed);
    }
}

/// Whether libc ran its initialiser: it sets `environ` (an empty environment is an empty
/// array, not null); in a `.preinit_array` function it is still null.
fn libc_started() -> bool {
    extern "C" {
        static environ: *const *const libc::c_char;
    }
    // SAFETY: reading libc's `environ` pointer (written only by libc's start and by setenv).
    unsafe { !core::ptr::addr_of!(environ).read_volatile().is_null() }
}

/// The unwinder's load deferred by a start inside `.preinit_array` (see [`load_unwinder`]).
extern "C" fn late_unwinder() {
    if UNWINDER_DEFERRED.swap(false, Ordering::Relaxed) {
        load_unwinder();
        // libgcc_s is the runtime's load, not the program's: never reported as one.
        at_start();
    }
}

/// [`late_unwinder`] as a constructor of the first priority a program may use (101): after
/// every library's initialiser, libc's included, and before the program's own constructors.
#[used]
#[link_section = ".init_array.00101"]
static LATE_UNWINDER: extern "C" fn() = late_unwinder;

//! Libraries the program loads itself (`dlopen`): the C shim (`csrc/shim_dl.c`) notes each call
//! and jumps to the real one; the calling thread's next runtime entry ([`check`]) walks the
//! loader's list and, while recording, sends every object loaded since start ([`F_LIB`]) to the
//! launcher, which hashes it into the trace. The objects present at start are marked seen
//! ([`at_start`]): the program's own libraries are in the trace's header, and in sync mode the
//! runtime's .so is one of them, so it never lists itself.
#![allow(unsafe_code)]

use core::cell::Cell;
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

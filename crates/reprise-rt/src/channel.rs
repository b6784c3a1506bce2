//! The event channel to the launcher: whole frames written under one runtime-private lock
//! (a futex word the program cannot see), so frames from different threads never interleave.
#![allow(unsafe_code)]

use crate::sys;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use reprise_proto::{put_frame_header, FD_CHANNEL, FRAME_HDR, F_FILE, F_STACK, STACK_MAX};

static LOCK: AtomicU32 = AtomicU32::new(0);
static BROKEN: AtomicBool = AtomicBool::new(false);

/// Drepper's three-state futex mutex: 0 free, 1 held, 2 held with waiters. A waiter always
/// takes the lock as 2, so an unlock never misses a sleeper.
fn lock() {
    if LOCK
        .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
        .is_ok()
    {
        return;
    }
    while LOCK.swap(2, Ordering::Acquire) != 0 {
        sys::futex_wait(&LOCK, 2);
    }
}

fn unlock() {
    if LOCK.swap(0, Ordering::Release) == 2 {
        sys::futex_wake(&LOCK, 1);
    }
}

/// Send one complete frame.
pub fn send(frame: &[u8]) {
    if BROKEN.load(Ordering::Relaxed) {
        return;
    }
    let _e = sys::ErrnoGuard::new();
    lock();
    if !sys::write_all(FD_CHANNEL, frame) {
        BROKEN.store(true, Ordering::Relaxed);
    }
    unlock();
}

/// Words of the program's stack [`send_stack`] adds when the thread runs on its runtime stack.
const PROGRAM_WORDS: usize = 16;

/// Send the code addresses of this thread's stack for a report ([`F_STACK`]): `first` (a
/// fault's instruction) and then the return addresses glibc's `backtrace` finds (the unwinder
/// was loaded at start, so it allocates nothing now). Only on the way to the process's end
/// (a fault, a divergence); the launcher names their source lines.
#[cold]
pub fn send_stack(tid: u32, what: u32, first: Option<u64>) {
    extern "C" {
        fn backtrace(buf: *mut *mut libc::c_void, n: libc::c_int) -> libc::c_int;
    }
    let mut pcs = [core::ptr::null_mut::<libc::c_void>(); STACK_MAX];
    let mut n = 0usize;
    if let Some(pc) = first {
        pcs[0] = pc as *mut libc::c_void;
        n = 1;
    }
    // SAFETY: `backtrace` writes at most the given count of entries into the buffer's rest.
    let got = unsafe { backtrace(pcs.as_mut_ptr().add(n), (STACK_MAX - n) as libc::c_int) };
    n += got.max(0) as usize;
    // On the runtime stack (`rtstack`) the unwind ends at the switch: the words at the top of
    // the program's stack follow, its callback's return address into the program among them
    // (the launcher names the first that is the program's code).
    if let Some(sp) = crate::rtstack::program_sp() {
        for i in 0..PROGRAM_WORDS.min(STACK_MAX - n) {
            // SAFETY: the program's stack at its pointer when the thread switched, mapped (a
            // thread's stack has its descriptor above it, the main thread's its environment).
            pcs[n] = unsafe { *((sp + 8 * i as u64) as *const *mut libc::c_void) };
            n += 1;
        }
    }
    let mut frame = [0u8; FRAME_HDR + 8 + 8 * STACK_MAX];
    put_frame_header(&mut frame, F_STACK, 8 + 8 * n);
    frame[FRAME_HDR..FRAME_HDR + 4].copy_from_slice(&tid.to_le_bytes());
    frame[FRAME_HDR + 4..FRAME_HDR + 8].copy_from_slice(&what.to_le_bytes());
    for (i, p) in pcs[..n].iter().enumerate() {
        let o = FRAME_HDR + 8 + 8 * i;
        frame[o..o + 8].copy_from_slice(&(*p as u64).to_le_bytes());
    }
    send(&frame[..FRAME_HDR + 8 + 8 * n]);
}

/// Send a file whose reads are re-executed in replay ([`F_FILE`]), from the C shim when it
/// first classes a read of it so (while recording): its identity and `path_len` bytes of its
/// path. Plain code (also reached from the SIGSYS handler): a stack buffer, one write.
/// The shim calls it outside any runtime entry, so it copies with libc's own memset and
/// memcpy (`real`): the compiler's, in a `reprise cc` link, are the `--wrap`ped ones, whose
/// ranged accesses would count as the program's events while recording only (replay sends no
/// file), and a re-executed read then diverged at its first result.
///
/// # Safety
/// `path` must point to `path_len` readable bytes (or `path_len` be 0).
#[no_mangle]
pub unsafe extern "C" fn reprise_send_file(
    dev: u64,
    ino: u64,
    size: u64,
    mtime_sec: i64,
    mtime_nsec: u64,
    path: *const u8,
    path_len: usize,
) {
    const LEN: usize = FRAME_HDR + 40 + 1024;
    let mut buf = core::mem::MaybeUninit::<[u8; LEN]>::uninit();
    // SAFETY: libc's memset (not the `--wrap`ped one) initialises all LEN bytes.
    let frame = unsafe {
        crate::real::__real_memset(buf.as_mut_ptr().cast(), 0, LEN);
        buf.assume_init_mut()
    };
    let n = path_len.min(1024);
    put_frame_header(frame, F_FILE, 40 + n);
    for (i, v) in [dev, ino, size, mtime_sec as u64, mtime_nsec]
        .iter()
        .enumerate()
    {
        let o = FRAME_HDR + 8 * i;
        frame[o..o + 8].copy_from_slice(&v.to_le_bytes());
    }
    if n > 0 {
        // SAFETY: the shim passes `path_len` readable bytes at `path`; the frame has room
        // for n <= 1024 bytes after its 40 bytes of identity.
        unsafe {
            crate::real::__real_memcpy(
                frame.as_mut_ptr().add(FRAME_HDR + 40).cast(),
                path.cast(),
                n,
            )
        };
    }
    send(&frame[..FRAME_HDR + 40 + n]);
}

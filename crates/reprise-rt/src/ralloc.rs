//! The runtime's own global allocator: size classes over a fixed region.
//!
//! Runtime memory must never come from the program's heap (that would move the program's
//! addresses between record and replay) and must never call `malloc` (we *are* `malloc`).
//! LEAP allocates almost nothing after start-up, but the model strategies (AggrePlay, TPLAY)
//! allocate and free at every event (vector clocks, growing logs), so freed blocks must be
//! reused: every request is rounded up to a power of two (at least 16 bytes), carved from a
//! bump region reserved with MAP_NORESERVE at a fixed address, and returned on free to the
//! free list of its class (blocks of 1 MiB and more give their pages back to the kernel, all
//! but the first). One runtime-private spinlock (never seen by the program) guards the
//! lists; the bump pointer itself is lock-free.
#![allow(unsafe_code)]

use crate::layout::{RALLOC_ADDR, RALLOC_SIZE};
use core::alloc::{GlobalAlloc, Layout};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Size-class allocator over `[RALLOC_ADDR, RALLOC_ADDR + RALLOC_SIZE)`.
pub struct RuntimeAlloc;

static NEXT: AtomicU64 = AtomicU64::new(0);
static MAPPED: AtomicU64 = AtomicU64::new(0);
/// Classes 2^4 .. 2^63: head of each free list (0: empty), guarded by `LOCK`.
static mut FREE: [u64; 64] = [0; 64];
static LOCK: AtomicBool = AtomicBool::new(false);
/// Freed blocks of this class (1 MiB) and above give their pages back to the kernel: a growing
/// vector leaves every smaller buffer it outgrew on a free list of another class, which only
/// another vector of that size would reuse (the models' logs would otherwise stay resident
/// about twice over).
const DISCARD_CLASS: usize = 20;

fn ensure_mapped() -> bool {
    if MAPPED.load(Ordering::Acquire) == 1 {
        return true;
    }
    // Racing first callers: one maps, the others see EEXIST, which is fine.
    let _ = crate::sys::mmap_fixed(
        RALLOC_ADDR,
        RALLOC_SIZE,
        libc::PROT_READ | libc::PROT_WRITE,
        -1,
        false,
    );
    MAPPED.store(1, Ordering::Release);
    true
}

/// Size class of a request: log2 of its block size.
#[inline]
fn class(l: &Layout) -> u32 {
    let n = l.size().max(l.align()).max(16);
    usize::BITS - (n - 1).leading_zeros()
}

/// Run `f` on the free lists under the allocator's spinlock (held for a few instructions).
fn with_free<R>(f: impl FnOnce(&mut [u64; 64]) -> R) -> R {
    while LOCK
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        core::hint::spin_loop();
    }
    // SAFETY: FREE is only touched here, under LOCK.
    let r = f(unsafe { &mut *core::ptr::addr_of_mut!(FREE) });
    LOCK.store(false, Ordering::Release);
    r
}

// SAFETY: alloc returns memory inside a private mapping that nothing else uses, aligned as
// requested (a block of class c is aligned to min(2^c, 4096) and c covers the alignment),
// never handed out twice: a block is either fresh from the bump pointer, which only grows, or
// popped from its class's free list, where only dealloc of a block of that class puts it.
unsafe impl GlobalAlloc for RuntimeAlloc {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ensure_mapped();
        let c = class(&l);
        if c >= 40 {
            return core::ptr::null_mut();
        }
        let reused = with_free(|free| {
            let head = free[c as usize];
            if head != 0 {
                // SAFETY: `head` is a freed block of this class; its first word links the list.
                free[c as usize] = unsafe { *(head as *const u64) };
            }
            head
        });
        if reused != 0 {
            return reused as *mut u8;
        }
        let size = 1u64 << c;
        let align = size.min(4096);
        let mut cur = NEXT.load(Ordering::Relaxed);
        loop {
            let start = (cur + align - 1) & !(align - 1);
            let end = start + size;
            if end > RALLOC_SIZE {
                return core::ptr::null_mut();
            }
            match NEXT.compare_exchange_weak(cur, end, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return (RALLOC_ADDR + start) as *mut u8,
                Err(c) => cur = c,
            }
        }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        let c = class(&l) as usize;
        if c >= DISCARD_CLASS {
            // SAFETY: the block is the caller's no longer; its pages past the first (which
            // keeps the free list's link word) are inside the runtime's private mapping.
            unsafe { crate::sys::discard(p as u64 + 4096, (1u64 << c) - 4096) };
        }
        with_free(|free| {
            // SAFETY: `p` is a block of class c that the caller no longer uses; at least 16
            // bytes, 16-aligned, so its first word can link the free list.
            unsafe { *(p as *mut u64) = free[c] };
            free[c] = p as u64;
        });
    }
}

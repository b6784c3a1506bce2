//! The runtime's own global allocator: a bump allocator over a fixed region.
//!
//! Runtime memory must never come from the program's heap (that would move the program's
//! addresses between record and replay) and must never call `malloc` (we *are* `malloc`).
//! The runtime allocates almost nothing after start-up, so a bump allocator that never frees is
//! enough; the region is reserved with MAP_NORESERVE at a fixed address.
#![allow(unsafe_code)]

use crate::layout::{RALLOC_ADDR, RALLOC_SIZE};
use core::alloc::{GlobalAlloc, Layout};
use core::sync::atomic::{AtomicU64, Ordering};

/// Bump allocator over `[RALLOC_ADDR, RALLOC_ADDR + RALLOC_SIZE)`.
pub struct RuntimeAlloc;

static NEXT: AtomicU64 = AtomicU64::new(0);
static MAPPED: AtomicU64 = AtomicU64::new(0);

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

// SAFETY: alloc returns memory inside a private mapping that nothing else uses, aligned as
// requested, never handed out twice (the bump pointer only grows); dealloc is a no-op.
unsafe impl GlobalAlloc for RuntimeAlloc {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ensure_mapped();
        let align = l.align().max(16) as u64;
        let mut cur = NEXT.load(Ordering::Relaxed);
        loop {
            let start = (cur + align - 1) & !(align - 1);
            let end = start + l.size() as u64;
            if end > RALLOC_SIZE {
                return core::ptr::null_mut();
            }
            match NEXT.compare_exchange_weak(cur, end, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return (RALLOC_ADDR + start) as *mut u8,
                Err(c) => cur = c,
            }
        }
    }
    unsafe fn dealloc(&self, _p: *mut u8, _l: Layout) {}
}

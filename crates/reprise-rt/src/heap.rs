//! The program's deterministic allocator: the whole malloc family, with one heap per
//! deterministic thread id in a fixed address window (seed 002, section 2.2.4).
//!
//! glibc's arenas are assigned to threads racily, so the same program gets different heap
//! layouts run to run; here each thread allocates only from its own window, so its sequence
//! of malloc/free calls (deterministic in replay) yields the same addresses. A block freed by
//! another thread goes to the freeing thread's free list: still deterministic, no locks.
//! Allocations by threads the runtime does not know (before start-up, foreign threads) use a
//! shared orphan window under a spinlock.
#![allow(unsafe_code)]
#![allow(missing_docs)]

use crate::layout::*;
use crate::state;
use core::ffi::{c_int, c_void};
use core::sync::atomic::{AtomicBool, Ordering};

const HDR: usize = 16;
const SMALL_STEP: usize = 16;
const SMALL_MAX: usize = 1024;
const NSMALL: usize = SMALL_MAX / SMALL_STEP; // classes 1..=64
const NCLASS: usize = NSMALL + 40;
const MAGIC: u32 = 0x5245_4150;
const ALIGNED: u32 = 0xA11C;

/// Heap metadata at the start of each window.
#[repr(C)]
struct Heap {
    bump: usize,
    mapped: bool,
    free: [usize; NCLASS + 1],
}

static ORPHAN_LOCK: AtomicBool = AtomicBool::new(false);

fn class_of(n: usize) -> (usize, usize) {
    let n = n.max(1);
    if n <= SMALL_MAX {
        let c = n.div_ceil(SMALL_STEP);
        (c, c * SMALL_STEP)
    } else {
        let p = n.next_power_of_two();
        (NSMALL + (p.trailing_zeros() as usize - 10), p)
    }
}

fn heap_for(idx: usize) -> Option<&'static mut Heap> {
    let base = HEAPS_ADDR + idx as u64 * HEAP_WIN;
    // SAFETY: the window is ours alone; its first page holds the Heap once mapped.
    let h = base as *mut Heap;
    // Map lazily: the whole window is reserved NORESERVE at the fixed address.
    static MAPPED: [AtomicBool; MAX_THREADS + 1] =
        [const { AtomicBool::new(false) }; MAX_THREADS + 1];
    if !MAPPED[idx].load(Ordering::Acquire) {
        if crate::sys::mmap_fixed(
            base,
            HEAP_WIN,
            libc::PROT_READ | libc::PROT_WRITE,
            -1,
            false,
        )
        .is_err()
        {
            return None;
        }
        // SAFETY: freshly mapped, zeroed, owned by this thread.
        unsafe { (*h).bump = base as usize + 4096 };
        MAPPED[idx].store(true, Ordering::Release);
    }
    // SAFETY: mapped above or earlier; only the owning thread (or the orphan lock holder) uses it.
    Some(unsafe { &mut *h })
}

fn with_heap<R>(f: impl FnOnce(Option<&'static mut Heap>, usize) -> R) -> R {
    let t = state::cur();
    if !t.is_null() {
        // SAFETY: t is this thread's slot.
        let idx = unsafe { (*t).tid } as usize;
        return f(heap_for(idx), idx);
    }
    while ORPHAN_LOCK.swap(true, Ordering::Acquire) {
        core::hint::spin_loop();
    }
    let r = f(heap_for(ORPHAN_HEAP), ORPHAN_HEAP);
    ORPHAN_LOCK.store(false, Ordering::Release);
    r
}

fn alloc(n: usize) -> *mut c_void {
    if n > (HEAP_WIN as usize) / 2 {
        return core::ptr::null_mut();
    }
    let (c, size) = class_of(n);
    with_heap(|h, idx| {
        let Some(h) = h else {
            return core::ptr::null_mut();
        };
        let b = if h.free[c] != 0 {
            let b = h.free[c];
            // SAFETY: free-list links live in the first word of freed blocks' payloads.
            h.free[c] = unsafe { *((b + HDR) as *const usize) };
            b
        } else {
            let b = h.bump;
            let end = b + HDR + size;
            if end as u64 > HEAPS_ADDR + (idx as u64 + 1) * HEAP_WIN {
                return core::ptr::null_mut();
            }
            h.bump = end;
            b
        };
        // SAFETY: b is a block header inside this window.
        unsafe {
            *(b as *mut u32) = MAGIC;
            *((b + 4) as *mut u32) = c as u32;
            *((b + 8) as *mut usize) = 0;
        }
        (b + HDR) as *mut c_void
    })
}

/// Header of block `p`, following an aligned block to its real start.
unsafe fn header(p: *mut c_void) -> Option<usize> {
    let mut b = p as usize - HDR;
    // SAFETY: p came from this allocator (the caller's contract for free/realloc).
    unsafe {
        if *(b as *const u32) == ALIGNED {
            b = *((b + 8) as *const usize);
        }
        if *(b as *const u32) != MAGIC {
            return None;
        }
    }
    Some(b)
}

fn usable(b: usize, p: usize) -> usize {
    // SAFETY: b is a valid header.
    let c = unsafe { *((b + 4) as *const u32) } as usize;
    let size = if c <= NSMALL {
        c * SMALL_STEP
    } else {
        1usize << (c - NSMALL + 10)
    };
    b + HDR + size - p
}

fn free_block(p: *mut c_void) {
    if p.is_null() {
        return;
    }
    let addr = p as u64;
    if !(HEAPS_ADDR..HEAPS_ADDR + (MAX_THREADS as u64 + 1) * HEAP_WIN).contains(&addr) {
        // Not ours (e.g. memory from a custom allocator the program passed by mistake).
        return;
    }
    // SAFETY: p is in our heap region.
    let Some(b) = (unsafe { header(p) }) else {
        crate::say!("free({p:p}): not a block of this heap (double free or corruption); ignored");
        return;
    };
    // SAFETY: valid header.
    let c = unsafe { *((b + 4) as *const u32) } as usize;
    with_heap(|h, _| {
        if let Some(h) = h {
            // SAFETY: the freed block's payload now holds the free-list link.
            unsafe {
                *(b as *mut u32) = 0;
                *((b + 4) as *mut u32) = c as u32;
                *((b + HDR) as *mut usize) = h.free[c];
            }
            h.free[c] = b;
        }
    })
}

fn alloc_aligned(align: usize, n: usize) -> *mut c_void {
    if align <= 16 {
        return alloc(n);
    }
    if !align.is_power_of_two() {
        return core::ptr::null_mut();
    }
    let raw = alloc(n + align + HDR);
    if raw.is_null() {
        return raw;
    }
    let b = raw as usize - HDR;
    let p = (raw as usize + HDR + align - 1) & !(align - 1);
    // SAFETY: p - HDR >= raw, inside the block; write an alias header pointing at b.
    unsafe {
        *((p - HDR) as *mut u32) = ALIGNED;
        *((p - HDR + 8) as *mut usize) = b;
    }
    p as *mut c_void
}

fn zero(p: *mut c_void, n: usize) {
    // SAFETY: p has at least n usable bytes; write_bytes may lower to memset, which the
    // wrapper passes through because we run with IN_RT set (or before init).
    unsafe { core::ptr::write_bytes(p as *mut u8, 0, n) };
}

struct RtGuard(bool);
impl RtGuard {
    fn new() -> Self {
        RtGuard(state::IN_RT.with(|c| c.replace(true)))
    }
}
impl Drop for RtGuard {
    fn drop(&mut self) {
        let v = self.0;
        state::IN_RT.with(|c| c.set(v));
    }
}

#[export_name = "reprise_malloc"]
pub extern "C" fn malloc(n: usize) -> *mut c_void {
    let _g = RtGuard::new();
    let p = alloc(n);
    if p.is_null() {
        // SAFETY: this thread's errno.
        unsafe { *libc::__errno_location() = libc::ENOMEM };
    }
    p
}
#[export_name = "reprise_free"]
pub extern "C" fn free(p: *mut c_void) {
    let _g = RtGuard::new();
    free_block(p)
}
#[export_name = "reprise_cfree"]
pub extern "C" fn cfree(p: *mut c_void) {
    free(p)
}
#[export_name = "reprise_calloc"]
pub extern "C" fn calloc(a: usize, b: usize) -> *mut c_void {
    let _g = RtGuard::new();
    let Some(n) = a.checked_mul(b) else {
        // SAFETY: this thread's errno.
        unsafe { *libc::__errno_location() = libc::ENOMEM };
        return core::ptr::null_mut();
    };
    let p = alloc(n);
    if !p.is_null() {
        zero(p, n);
    }
    p
}
#[export_name = "reprise_realloc"]
pub extern "C" fn realloc(p: *mut c_void, n: usize) -> *mut c_void {
    let _g = RtGuard::new();
    if p.is_null() {
        return alloc(n);
    }
    if n == 0 {
        free_block(p);
        return core::ptr::null_mut();
    }
    // SAFETY: p was allocated here (caller contract).
    let Some(b) = (unsafe { header(p) }) else {
        return core::ptr::null_mut();
    };
    let have = usable(b, p as usize);
    if have >= n {
        return p;
    }
    let q = alloc(n);
    if !q.is_null() {
        // SAFETY: both blocks are valid for `have` bytes and distinct.
        unsafe { core::ptr::copy_nonoverlapping(p as *const u8, q as *mut u8, have) };
        free_block(p);
    }
    q
}
#[export_name = "reprise_reallocarray"]
pub extern "C" fn reallocarray(p: *mut c_void, a: usize, b: usize) -> *mut c_void {
    match a.checked_mul(b) {
        Some(n) => realloc(p, n),
        None => core::ptr::null_mut(),
    }
}
#[export_name = "reprise_memalign"]
pub extern "C" fn memalign(align: usize, n: usize) -> *mut c_void {
    let _g = RtGuard::new();
    alloc_aligned(align, n)
}
#[export_name = "reprise_aligned_alloc"]
pub extern "C" fn aligned_alloc(align: usize, n: usize) -> *mut c_void {
    memalign(align, n)
}
#[export_name = "reprise_valloc"]
pub extern "C" fn valloc(n: usize) -> *mut c_void {
    memalign(4096, n)
}
#[export_name = "reprise_pvalloc"]
pub extern "C" fn pvalloc(n: usize) -> *mut c_void {
    memalign(4096, n.next_multiple_of(4096))
}
#[export_name = "reprise_posix_memalign"]
pub unsafe extern "C" fn posix_memalign(out: *mut *mut c_void, align: usize, n: usize) -> c_int {
    if !align.is_power_of_two() || align % core::mem::size_of::<usize>() != 0 {
        return libc::EINVAL;
    }
    let p = memalign(align, n);
    if p.is_null() {
        return libc::ENOMEM;
    }
    // SAFETY: out is the caller's result slot.
    unsafe { *out = p };
    0
}
#[export_name = "reprise_malloc_usable_size"]
pub unsafe extern "C" fn malloc_usable_size(p: *mut c_void) -> usize {
    if p.is_null() {
        return 0;
    }
    // SAFETY: p was allocated here (caller contract).
    match unsafe { header(p) } {
        Some(b) => usable(b, p as usize),
        None => 0,
    }
}

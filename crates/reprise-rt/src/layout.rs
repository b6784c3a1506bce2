//! The fixed address map of the runtime's own mappings and of the program's deterministic
//! heaps and thread stacks. Every address here is identical in record and replay (ASLR is off
//! and nothing else maps there), which is what keeps the program's addresses identical.

pub use reprise_proto::{CONFIG_ADDR, MAX_THREADS, STATUS_ADDR, STRIPES};

/// Large blocks of the program's heap (see `heap`): one region shared by all threads, whose
/// allocations are ordered events, so their addresses are the recorded ones. Below the runtime's
/// own regions, above a non-PIE executable and its brk.
pub const LARGE_ADDR: u64 = 0x0200_0000_0000;
/// Size of the large-block region (24 TiB).
pub const LARGE_SIZE: u64 = 0x1800_0000_0000;
/// Runtime bump allocator region.
pub const RALLOC_ADDR: u64 = 0x1a00_0000_0000;
/// Size of the runtime allocator region.
pub const RALLOC_SIZE: u64 = 1 << 38;
/// Thread state table.
pub const THREADS_ADDR: u64 = 0x1b00_0000_0000;
/// Stripe table.
pub const STRIPES_ADDR: u64 = 0x1c00_0000_0000;
/// Ownership shadow: one `u32` owner word per 64-byte granule of the address space (8 TiB
/// reserved, see `ownership::shadow`), between the heaps' block-start bitmaps and a non-PIE
/// or ASLR-off executable (0x5555_5555_4000).
pub const SHADOW_ADDR: u64 = 0x4800_0000_0000;
/// Per-thread heap windows: thread `t` owns `[HEAPS_ADDR + t*HEAP_WIN, +HEAP_WIN)`.
pub const HEAPS_ADDR: u64 = 0x2000_0000_0000;
/// Size of one heap window.
pub const HEAP_WIN: u64 = 1 << 34;
/// Heap window of allocations made by threads the runtime does not know (shared, locked).
pub const ORPHAN_HEAP: usize = MAX_THREADS; // one past the last thread window
/// Per-window bitmaps of where the heap's small blocks start (`heap::stable_id`): one bit per
/// 16 bytes of a heap window, window `w`'s at `HEAP_STARTS_ADDR + w*HEAP_STARTS_WIN`.
pub const HEAP_STARTS_ADDR: u64 = 0x4000_0000_0000;
/// Size of one window's block-start bitmap.
pub const HEAP_STARTS_WIN: u64 = HEAP_WIN / 128;
/// Per-thread stack windows: thread `t`'s stack lives in `[STACKS_ADDR + t*STACK_WIN, +STACK_WIN)`.
pub const STACKS_ADDR: u64 = 0x6100_0000_0000;
/// Size of one stack window.
pub const STACK_WIN: u64 = 1 << 28;
/// The top of each stack window: the thread's runtime stack (`rtstack`), this many bytes (a
/// guard page included); the program's stack gets the rest of the window, from its bottom.
pub const RT_STACK: u64 = 1 << 18;

/// Whether `addr` lies on a thread's stack: a stack window, or the main thread's stack when
/// the caller runs on it (between its frame and where the kernel started it). Stack bytes a
/// frame never wrote hold what earlier frames left there, the runtime's own included, which
/// differ between record and replay. Deterministic in both: every address is.
#[allow(unsafe_code)]
pub fn on_a_stack(addr: usize) -> bool {
    let lo = STACKS_ADDR as usize;
    let hi = lo + MAX_THREADS * STACK_WIN as usize;
    if (lo..hi).contains(&addr) {
        return true;
    }
    let here = 0u8;
    let sp = core::ptr::addr_of!(here) as usize;
    if (lo..hi).contains(&sp) {
        return false;
    }
    extern "C" {
        /// Where the kernel started the main thread's stack (glibc's dynamic loader).
        static __libc_stack_end: *const core::ffi::c_void;
    }
    // SAFETY: a pointer-sized read of a symbol the dynamic loader defines and sets before
    // any program code runs; never written afterwards.
    let top = unsafe { __libc_stack_end } as usize;
    // The main thread's stack (not a stack the program placed itself, far from it).
    sp < top && top - sp < 1 << 30 && (sp..=top).contains(&addr)
}

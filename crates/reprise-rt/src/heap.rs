//! The program's deterministic allocator: the whole malloc family, with one heap per
//! deterministic thread id in a fixed address window (seed 002, section 2.2.4).
//!
//! glibc's arenas are assigned to threads racily, so the same program gets different heap
//! layouts run to run; here each thread allocates only from its own window, so its sequence
//! of malloc/free calls (deterministic in replay) yields the same addresses. A block freed by
//! another thread goes to the freeing thread's free list: still deterministic, no locks.
//! Allocations by threads the runtime does not know (before start-up, foreign threads) use a
//! shared orphan window under a spinlock.
//!
//! A block's header holds the thread that allocated it and that thread's count of allocations
//! so far ([`stable_id`]): the identity by which sync mode orders a synchronisation object on
//! the heap. Its address may differ in replay: which thread frees a block last can be decided
//! by an atomic reference count (`std::shared_ptr`), invisible to sync mode, and that thread's
//! free list then gets the block back.
//!
//! Large blocks (from [`LARGE_MIN`], or any block once the thread's window is full) come from one
//! region shared by all threads ([`LARGE_ADDR`], 24 TiB of address space): each is mapped on
//! demand at its own address and unmapped when freed, as glibc maps its large chunks, so a
//! program may hold many gigabytes mostly untouched, and an allocation fails only where the
//! kernel would refuse glibc's own mapping (the same overcommit policy applies: the block is
//! mapped without MAP_NORESERVE; its pages are committed lazily, on first touch). Which thread
//! gets which range depends on the order of allocations and frees across threads, so each is
//! an ordered event (on one object's stripe) and its success is a recorded result: replay
//! takes the recorded turns and gets the recorded addresses.
#![allow(unsafe_code)]
#![allow(missing_docs)]

use crate::layout::*;
use crate::state::{self, RtGuard};
use core::ffi::{c_int, c_void};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

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
    /// Allocations made by the window's thread so far (the orphan window's: by unknown threads).
    allocs: u64,
}

static ORPHAN_LOCK: AtomicBool = AtomicBool::new(false);

/// Requests of at least this many bytes are large blocks.
pub const LARGE_MIN: usize = 32 << 20;
/// Header magic of a large block (its header holds the mapped length).
const LARGE: u32 = 0x4c52_4745;

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

/// Which windows are mapped.
static MAPPED: [AtomicBool; MAX_THREADS + 1] = [const { AtomicBool::new(false) }; MAX_THREADS + 1];
/// Which windows' block-start bitmaps are mapped (a window whose bitmap could not be is used
/// without: its blocks have no [`stable_id`]).
static STARTS: [AtomicBool; MAX_THREADS + 1] = [const { AtomicBool::new(false) }; MAX_THREADS + 1];

fn heap_for(idx: usize) -> Option<&'static mut Heap> {
    let base = HEAPS_ADDR + idx as u64 * HEAP_WIN;
    // SAFETY: the window is ours alone; its first page holds the Heap once mapped.
    let h = base as *mut Heap;
    // Map lazily: the whole window is reserved NORESERVE at the fixed address.
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
        let starts = HEAP_STARTS_ADDR + idx as u64 * HEAP_STARTS_WIN;
        let prot = libc::PROT_READ | libc::PROT_WRITE;
        if crate::sys::mmap_fixed(starts, HEAP_STARTS_WIN, prot, -1, false).is_ok() {
            STARTS[idx].store(true, Ordering::Release);
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

/// A block for `n` bytes: from the thread's window, or a large block.
fn alloc(n: usize) -> *mut c_void {
    if n < LARGE_MIN {
        let p = {
            let _g = RtGuard::new();
            alloc_small(n)
        };
        if !p.is_null() {
            return p;
        }
    }
    large::alloc(n)
}

/// A block from the thread's window (null when the window is full).
fn alloc_small(n: usize) -> *mut c_void {
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
            mark_start(idx, b);
            b
        };
        h.allocs += 1;
        // SAFETY: b is a block header inside this window.
        unsafe {
            *(b as *mut u32) = MAGIC;
            *((b + 4) as *mut u32) = c as u32;
            *((b + 8) as *mut u64) = ((idx as u64) << ALLOCS_BITS) | (h.allocs & ALLOCS_MASK);
        }
        (b + HDR) as *mut c_void
    })
}

/// Bits of a small block's header word that count its thread's allocations (the thread's
/// window index is above them).
const ALLOCS_BITS: u32 = 48;
const ALLOCS_MASK: u64 = (1 << ALLOCS_BITS) - 1;

/// The word of window `idx`'s block-start bitmap holding the bit of byte `a` of the window.
fn start_word(idx: usize, a: usize) -> &'static AtomicU64 {
    let unit = (a as u64 - (HEAPS_ADDR + idx as u64 * HEAP_WIN)) / HDR as u64;
    let w = HEAP_STARTS_ADDR + idx as u64 * HEAP_STARTS_WIN + unit / 64 * 8;
    // SAFETY: the bitmap of a window is mapped with the window (`heap_for`), and `a` lies in
    // the window; its words are only accessed atomically.
    unsafe { &*(w as *const AtomicU64) }
}

/// Mark block header `b` of window `idx` as a block start (a block carved from the bump
/// pointer keeps its start for good: freed blocks are reused whole, by size class). Only the
/// window's thread carves its blocks (the orphan window's, under its lock).
fn mark_start(idx: usize, b: usize) {
    if !STARTS[idx].load(Ordering::Relaxed) {
        return;
    }
    let w = start_word(idx, b);
    let bit = 1u64 << ((b - HEAPS_ADDR as usize) / HDR % 64);
    w.store(w.load(Ordering::Relaxed) | bit, Ordering::Release);
}

/// Words of the bitmap [`stable_id`] searches back for a block's start (64 KiB of heap).
const START_SEARCH: usize = 64;

/// A run-independent identity of byte `a` when it lies in a small heap block: the thread that
/// allocated the block and the number of that thread's allocation, and the offset in the
/// block (see the module docs); None elsewhere (then its address is its identity).
pub fn stable_id(a: usize) -> Option<u64> {
    let off = (a as u64).checked_sub(HEAPS_ADDR)?;
    let idx = (off / HEAP_WIN) as usize;
    let base = (HEAPS_ADDR + idx as u64 * HEAP_WIN) as usize;
    // The windows of high thread numbers overlap the executable's mappings: only a mapped
    // window is one.
    if idx > ORPHAN_HEAP || !STARTS[idx].load(Ordering::Acquire) || a < base + 4096 + HDR {
        return None;
    }
    // The last block start at or before `a - HDR` (a payload byte lies past its header).
    let last = a - HDR;
    let unit = (last - HEAPS_ADDR as usize) / HDR;
    let mut bits = start_word(idx, last).load(Ordering::Acquire) & (u64::MAX >> (63 - unit % 64));
    let mut word = last;
    for _ in 0..START_SEARCH {
        if bits != 0 {
            let b = (word - HEAPS_ADDR as usize) / (64 * HDR) * (64 * HDR)
                + (63 - bits.leading_zeros() as usize) * HDR
                + HEAPS_ADDR as usize;
            // SAFETY: `b` is a block start of this window (its bit is set once it is carved).
            let (m, id) = unsafe { (*(b as *const u32), *((b + 8) as *const u64)) };
            return (m == MAGIC && a < b + usable(b, b + HDR) + HDR)
                .then(|| id.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (a - b) as u64);
        }
        word = word.checked_sub(64 * HDR)?;
        if word < base {
            return None;
        }
        bits = start_word(idx, word).load(Ordering::Acquire);
    }
    None
}

/// Header of block `p`, following an aligned block to its real start.
unsafe fn header(p: *mut c_void) -> Option<usize> {
    let mut b = p as usize - HDR;
    // SAFETY: p came from this allocator (the caller's contract for free/realloc).
    unsafe {
        if *(b as *const u32) == ALIGNED {
            b = *((b + 8) as *const usize);
        }
        let m = *(b as *const u32);
        if m != MAGIC && m != LARGE {
            return None;
        }
    }
    Some(b)
}

fn usable(b: usize, p: usize) -> usize {
    // SAFETY: b is a valid header.
    if unsafe { *(b as *const u32) } == LARGE {
        // SAFETY: a large block's header holds its mapped length.
        return b + unsafe { *((b + 8) as *const usize) } - p;
    }
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
    let small = (HEAPS_ADDR..HEAPS_ADDR + (MAX_THREADS as u64 + 1) * HEAP_WIN).contains(&addr);
    if !small && !(LARGE_ADDR..LARGE_ADDR + LARGE_SIZE).contains(&addr) {
        // Not ours (e.g. memory from a custom allocator the program passed by mistake).
        return;
    }
    // SAFETY: p is in our heap regions.
    let Some(b) = (unsafe { header(p) }) else {
        crate::say!("free({p:p}): not a block of this heap (double free or corruption); ignored");
        return;
    };
    if !small {
        large::free(b);
        return;
    }
    let _g = RtGuard::new();
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

/// Zero `n` bytes at `p` with libc's own memset: not the `--wrap`ped one (which would record
/// a ranged access), and not the compiler's memset intrinsic, across which the compiler may
/// drop a store to IN_RT (it cannot know the linker wraps memset).
fn zero(p: *mut c_void, n: usize) {
    // SAFETY: p has at least n usable bytes.
    unsafe { crate::real::__real_memset(p, 0, n) };
}

#[export_name = "reprise_malloc"]
pub extern "C" fn malloc(n: usize) -> *mut c_void {
    let p = alloc(n);
    if p.is_null() {
        // SAFETY: this thread's errno.
        unsafe { *libc::__errno_location() = libc::ENOMEM };
    }
    p
}
#[export_name = "reprise_free"]
pub extern "C" fn free(p: *mut c_void) {
    free_block(p)
}
#[export_name = "reprise_cfree"]
pub extern "C" fn cfree(p: *mut c_void) {
    free(p)
}
#[export_name = "reprise_calloc"]
pub extern "C" fn calloc(a: usize, b: usize) -> *mut c_void {
    let Some(n) = a.checked_mul(b) else {
        // SAFETY: this thread's errno.
        unsafe { *libc::__errno_location() = libc::ENOMEM };
        return core::ptr::null_mut();
    };
    let p = alloc(n);
    // A large block is a fresh mapping: zero already.
    if !p.is_null() && !large::contains(p as usize) {
        zero(p, n);
    }
    p
}
/// # Safety
/// `p` is null or a block this allocator returned and not yet freed (as for libc's realloc).
#[export_name = "reprise_realloc"]
pub unsafe extern "C" fn realloc(p: *mut c_void, n: usize) -> *mut c_void {
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
        // SAFETY: both blocks are valid for `have` bytes and distinct; libc's own memcpy (see
        // `zero`).
        unsafe { crate::real::__real_memcpy(q, p, have) };
        free_block(p);
    }
    q
}
/// # Safety
/// As for [`realloc`].
#[export_name = "reprise_reallocarray"]
pub unsafe extern "C" fn reallocarray(p: *mut c_void, a: usize, b: usize) -> *mut c_void {
    match a.checked_mul(b) {
        // SAFETY: forwarded under reallocarray's own contract (realloc's).
        Some(n) => unsafe { realloc(p, n) },
        None => core::ptr::null_mut(),
    }
}
#[export_name = "reprise_memalign"]
pub extern "C" fn memalign(align: usize, n: usize) -> *mut c_void {
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
/// # Safety
/// Called as libc's `posix_memalign` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
#[export_name = "reprise_posix_memalign"]
pub unsafe extern "C" fn posix_memalign(out: *mut *mut c_void, align: usize, n: usize) -> c_int {
    if !align.is_power_of_two() || !align.is_multiple_of(core::mem::size_of::<usize>()) {
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
/// # Safety
/// Called as libc's `malloc_usable_size` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
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

/// Large blocks: one shared region, allocations ordered across threads (see the module doc).
mod large {
    use super::{HDR, LARGE};
    use crate::access::{self, kind};
    use crate::layout::{LARGE_ADDR, LARGE_SIZE};
    use crate::state;
    use core::ffi::c_void;
    use core::sync::atomic::{AtomicBool, Ordering};

    /// The object whose stripe orders large allocations and frees.
    static ORDER: u64 = 0;
    static LOCK: AtomicBool = AtomicBool::new(false);

    /// Free ranges `(start, len)`, sorted by start, and the high-water mark; under `LOCK`.
    struct Region {
        bump: u64,
        free: std::vec::Vec<(u64, u64)>,
    }
    static mut REGION: Region = Region {
        bump: LARGE_ADDR,
        free: std::vec::Vec::new(),
    };

    fn region() -> &'static mut Region {
        // SAFETY: only touched with LOCK held (see `locked`).
        unsafe { &mut *core::ptr::addr_of_mut!(REGION) }
    }

    fn locked<R>(f: impl FnOnce(&mut Region) -> R) -> R {
        while LOCK.swap(true, Ordering::Acquire) {
            core::hint::spin_loop();
        }
        let r = f(region());
        LOCK.store(false, Ordering::Release);
        r
    }

    /// Whether `a` lies in the large-block region.
    pub fn contains(a: usize) -> bool {
        (LARGE_ADDR..LARGE_ADDR + LARGE_SIZE).contains(&(a as u64))
    }

    /// Take the turn that orders large-block operations, when the runtime records or replays
    /// this call (not from inside the runtime, not for unknown threads).
    fn ordered() -> Option<crate::entry::Entry> {
        let mut e = crate::entry::enter()?;
        let t = e.t();
        access::safe_point(t);
        crate::sync::take_obj(t, core::ptr::addr_of!(ORDER).cast(), kind::LOCK);
        Some(e)
    }

    impl Region {
        /// The lowest free range of `len` bytes.
        fn take(&mut self, len: u64) -> Option<u64> {
            if let Some(i) = self.free.iter().position(|&(_, l)| l >= len) {
                let (a, l) = self.free[i];
                if l == len {
                    self.free.remove(i);
                } else {
                    self.free[i] = (a + len, l - len);
                }
                return Some(a);
            }
            if self.bump + len > LARGE_ADDR + LARGE_SIZE {
                return None;
            }
            let a = self.bump;
            self.bump += len;
            Some(a)
        }

        /// Return `[a, a+len)`, merged with its free neighbours.
        fn give(&mut self, a: u64, len: u64) {
            let i = self.free.partition_point(|&(s, _)| s < a);
            self.free.insert(i, (a, len));
            if i + 1 < self.free.len() && self.free[i].0 + self.free[i].1 == self.free[i + 1].0 {
                self.free[i].1 += self.free[i + 1].1;
                self.free.remove(i + 1);
            }
            if i > 0 && self.free[i - 1].0 + self.free[i - 1].1 == self.free[i].0 {
                self.free[i - 1].1 += self.free[i].1;
                self.free.remove(i);
            }
            if let Some(&(s, l)) = self.free.last() {
                if s + l == self.bump {
                    self.bump = s;
                    self.free.pop();
                }
            }
        }
    }

    /// A large block for `n` bytes (null where the kernel refuses the mapping).
    pub fn alloc(n: usize) -> *mut c_void {
        let Some(len) = n.checked_add(HDR + 4095).map(|x| (x & !4095) as u64) else {
            return core::ptr::null_mut();
        };
        let mut e = ordered();
        let replay = e.is_some() && state::REPLAY.load(Ordering::Relaxed);
        if replay && access::result(e.as_mut().unwrap().t(), None) == 0 {
            // The recording's allocation failed here.
            return core::ptr::null_mut();
        }
        let a = locked(|r| {
            let a = r.take(len)?;
            if crate::sys::mmap_fixed_committed(a, len).is_err() {
                r.give(a, len);
                return None;
            }
            Some(a)
        });
        if let Some(e) = &mut e {
            if !replay {
                access::result(e.t(), Some(a.is_some() as u64));
            } else if a.is_none() {
                crate::say!("malloc({n}): the recording's allocation succeeded; this one fails");
            }
        }
        let Some(a) = a else {
            return core::ptr::null_mut();
        };
        // SAFETY: a fresh mapping of len >= HDR bytes.
        unsafe {
            *(a as *mut u32) = LARGE;
            *((a + 8) as *mut usize) = len as usize;
        }
        (a as usize + HDR) as *mut c_void
    }

    /// Free the large block whose header is at `b`.
    pub fn free(b: usize) {
        // SAFETY: b is a large block's header (checked by the caller).
        let len = unsafe { *((b + 8) as *const usize) } as u64;
        let _e = ordered();
        locked(|r| {
            // SAFETY: unmapping the block being freed, which the program gives up.
            unsafe { crate::sys::munmap(b as u64, len) };
            r.give(b as u64, len);
        });
    }
}

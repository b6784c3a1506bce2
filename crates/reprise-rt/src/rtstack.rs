//! The runtime's own stack, one per thread, for the slow path of the access callbacks.
//!
//! A callback runs on the program's stack, and its slow path goes deep (taking a granule,
//! answering requests, logging, waiting at a replay edge). What those frames leave below the
//! program's stack pointer differs between record and replay (their paths differ: a request
//! to answer lowers a thread's limit at any access while recording, and a replay waits where
//! the recording took), and a program that reads stack bytes it never wrote (a local left
//! partly set, a struct's padding) then reads different values: 7-Zip's `7zr a` diverged in
//! every replay that way. So the slow path runs on a stack of its own, at the top of the
//! thread's stack window (`layout::RT_STACK`), mapped when the thread starts; the program's
//! stack sees only the callback's own frame, the same in both modes. Zeroing the program's
//! stack below the callback after each slow path fixed 7-Zip too, but cost lu 14% and fft 31%
//! of their recording time (4 KiB per slow path).
#![allow(unsafe_code)]

use crate::layout::{RT_STACK, STACKS_ADDR, STACK_WIN};
use crate::state::Thread;
use crate::sys;

/// Map thread `t`'s runtime stack (before its first access; outside Syscall User Dispatch).
/// Without it (the mapping failed) the slow path runs on the program's stack, as before.
pub fn prepare(t: &mut Thread) {
    let top = STACKS_ADDR + (t.tid as u64 + 1) * STACK_WIN;
    let base = top - RT_STACK;
    if sys::mmap_fixed(
        base,
        RT_STACK,
        libc::PROT_READ | libc::PROT_WRITE,
        -1,
        false,
    )
    .is_err()
    {
        return;
    }
    sys::mprotect(base, 4096, libc::PROT_NONE);
    t.rt_stack = top;
}

/// Call `f(a, b, c)` on the current thread's runtime stack, or directly when it has none or
/// already runs on it (a program's signal handler the runtime delivered, whose callbacks
/// reach the slow path again). Never inlined (see [`switch_call`], the inlined form).
#[inline(never)]
pub fn call(f: extern "C" fn(usize, usize, u64), a: usize, b: usize, c: u64) {
    if !switch_call(f, a, b, c) {
        f(a, b, c);
    }
}

/// The stack pointer.
#[inline(always)]
fn sp() -> u64 {
    let sp: u64;
    // SAFETY: reads the stack pointer.
    unsafe {
        core::arch::asm!("mov {}, rsp", out(reg) sp, options(nomem, nostack, preserves_flags))
    };
    sp
}

/// The top of the current thread's runtime stack (0: it has none), and whether the thread runs
/// on it now.
#[inline(always)]
fn where_now() -> (u64, bool) {
    let t = crate::state::cur();
    // SAFETY: `cur` is this thread's own slot (or null); only this thread reads `rt_stack`.
    let top = if t.is_null() {
        0
    } else {
        unsafe { (*t).rt_stack }
    };
    (top, top != 0 && (top - RT_STACK..top).contains(&sp()))
}

/// [`call`] inlined into an access callback, which must write nothing on the program's stack
/// that its fast path does not (the callback's own frame is the same on both paths): the old
/// stack pointer is kept at the top of the runtime stack, not in a register the callback would
/// have to save in its prologue (that cost fft 16% of its recording), and no local is spilled.
/// Returns false, having done nothing, when the thread has no runtime stack or runs on it.
#[inline(always)]
pub fn switch_call(f: extern "C" fn(usize, usize, u64), a: usize, b: usize, c: u64) -> bool {
    let (top, on_it) = where_now();
    if top == 0 || on_it {
        return false;
    }
    // SAFETY: `top` is the 16-aligned top of this thread's mapped runtime stack, unused while
    // the thread runs outside it: the old stack pointer goes in its top word, the call's
    // return address below it (16-aligned before the `call`, as the ABI wants), and comes back
    // from there; `f` follows the C ABI (every caller-saved register clobbered, declared).
    unsafe {
        core::arch::asm!(
            "mov [{top} - 8], rsp",
            "lea rsp, [{top} - 16]",
            "call {f}",
            "mov rsp, [rsp + 8]",
            top = in(reg) top,
            f = in(reg) f,
            in("rdi") a,
            in("rsi") b,
            in("rdx") c,
            clobber_abi("C"),
        );
    }
    true
}

/// Run `f` on the current thread's runtime stack (see [`call`]) and return its result. Never
/// inlined, like [`call`]; `f` and its result pass through a slot on the caller's stack, which
/// holds the same bytes in both modes (the closure's captures and the result).
#[inline(never)]
pub fn run<R, F: FnOnce() -> R>(f: F) -> R {
    let mut slot: (Option<F>, core::mem::MaybeUninit<R>) =
        (Some(f), core::mem::MaybeUninit::uninit());
    extern "C" fn shim<R, F: FnOnce() -> R>(p: usize, _: usize, _: u64) {
        // SAFETY: `p` is the address of `run`'s slot, alive and not otherwise borrowed while
        // `call` runs this.
        let s = unsafe { &mut *(p as *mut (Option<F>, core::mem::MaybeUninit<R>)) };
        if let Some(f) = s.0.take() {
            s.1.write(f());
        }
    }
    call(shim::<R, F>, core::ptr::addr_of_mut!(slot) as usize, 0, 0);
    // SAFETY: `shim` ran `f` (it takes it exactly once) and wrote its result.
    unsafe { slot.1.assume_init() }
}

/// Bytes [`reprise_scrub_stack`] zeroes below its caller's frame.
const SCRUB: u64 = 64 << 10;

/// Zero the [`SCRUB`] bytes of the thread's stack below this frame (bounded by a stack window's
/// guard page; the main thread's stack grows on demand; a stack the program gave a thread is
/// left alone): what the runtime's start-up left there (its initialisation on the main thread,
/// `reprise_thread_begin` on another), which differs between record and replay, before the
/// program's first frame lies over it. Called by `__tsan_init` and the thread trampoline, once
/// per thread. Up to the stack pointer itself, with `rep stosb` (a call of `memset` would
/// leave its own frame's gap unzeroed, and `ptr::write_bytes` is a call of the wrapped
/// `memset`, an event of the program's).
#[no_mangle]
pub extern "C" fn reprise_scrub_stack() {
    let sp = sp();
    let t = crate::state::cur();
    // SAFETY: this thread's own slot, or null.
    let tid = if t.is_null() {
        u32::MAX
    } else {
        unsafe { (*t).tid }
    };
    let in_window = sp.wrapping_sub(STACKS_ADDR) < crate::layout::MAX_THREADS as u64 * STACK_WIN;
    let low = if in_window {
        STACKS_ADDR + (sp - STACKS_ADDR) / STACK_WIN * STACK_WIN + 4096
    } else if tid == 0 {
        0
    } else {
        return;
    };
    let from = sp.saturating_sub(SCRUB).max(low);
    // The main thread's stack may not be mapped that far down yet: it grows on a fault at the
    // stack pointer, and not on every kernel (nor under valgrind, which extends a stack only for
    // a fault within its red zone below the stack pointer: the runtime's first fault there ended
    // every recording made under callgrind at "event 0") on one 64 KiB below it. So the stack
    // pointer first walks down a page at a time, touching each page, as a compiler's stack
    // probes do, then the bytes are zeroed from the bottom up.
    // SAFETY: `[from, rsp)` lies below this frame and above the stack's guard page: dead bytes
    // of this thread's stack (no `nostack`: the compiler keeps nothing in the red zone across
    // this). The stack pointer moves only within that range and is restored before the
    // zeroing (a signal arriving meanwhile lands below it, in bytes zeroed after); clobbers
    // rdi, rcx, rdx, rax (declared); the direction flag is clear (ABI).
    unsafe {
        core::arch::asm!(
            "mov rdx, rsp",
            "2:",
            "sub rsp, 4096",
            "cmp rsp, rdi",
            "jb 3f",
            "mov byte ptr [rsp], 0",
            "jmp 2b",
            "3:",
            "mov rsp, rdi",
            "mov byte ptr [rsp], 0",
            "mov rsp, rdx",
            "mov rcx, rsp",
            "sub rcx, rdi",
            "xor eax, eax",
            "rep stosb",
            inout("rdi") from => _,
            out("rcx") _,
            out("rdx") _,
            out("rax") _,
        );
    }
}

/// The program's stack pointer when the current thread switched to its runtime stack
/// ([`switch_call`] keeps it in the stack's top word), or None when it does not run on it.
pub fn program_sp() -> Option<u64> {
    let (top, on_it) = where_now();
    if !on_it {
        return None;
    }
    // SAFETY: the top word of this thread's mapped runtime stack, written by the switch.
    Some(unsafe { *((top - 8) as *const u64) })
}

/// Read one byte at `addr` on the program's stack, before a slow path that reads it on the
/// runtime stack: a bad address faults in the callback, where a debugger's backtrace (gdb's,
/// glibc's) reaches the program's frames; from the runtime stack it stops at the switch.
#[inline(always)]
pub fn touch(addr: usize) {
    // SAFETY: the program accesses `addr` right after the callback (a valid address reads
    // harmlessly; an invalid one faults, as the program's own access would).
    unsafe { core::ptr::read_volatile(addr as *const u8) };
}

//! Raw system calls made by the runtime itself.
//!
//! The runtime never calls libc for its own system calls: the program may interpose the same
//! symbols (and we interpose some of them ourselves), and a later Syscall User Dispatch filter
//! must be able to tell the runtime's calls from the program's. So every call here is an inline
//! `syscall` instruction.
#![allow(unsafe_code)]

use core::arch::asm;

/// Perform system call `n` with up to six arguments; returns the raw kernel result
/// (negative errno on failure).
///
/// # Safety
/// The caller upholds the kernel's contract for call `n` (valid pointers, lengths).
#[inline]
pub unsafe fn syscall6(n: i64, a1: u64, a2: u64, a3: u64, a4: u64, a5: u64, a6: u64) -> i64 {
    let ret: i64;
    // SAFETY: the x86_64 Linux syscall ABI: number in rax, args in rdi, rsi, rdx, r10, r8, r9;
    // rcx and r11 are clobbered. Memory effects are the caller's contract.
    unsafe {
        asm!("syscall",
            inlateout("rax") n => ret,
            in("rdi") a1, in("rsi") a2, in("rdx") a3, in("r10") a4, in("r8") a5, in("r9") a6,
            lateout("rcx") _, lateout("r11") _,
            options(nostack));
    }
    ret
}

/// `futex(FUTEX_WAIT_PRIVATE)`: sleep while `*addr == val`.
pub fn futex_wait(addr: &core::sync::atomic::AtomicU32, val: u32) {
    futex_wait_until(addr, val, None)
}

/// [`futex_wait`] for at most `ns` nanoseconds.
pub fn futex_wait_for(addr: &core::sync::atomic::AtomicU32, val: u32, ns: u64) {
    let ts = libc::timespec {
        tv_sec: (ns / 1_000_000_000) as i64,
        tv_nsec: (ns % 1_000_000_000) as i64,
    };
    futex_wait_until(addr, val, Some(&ts))
}

fn futex_wait_until(addr: &core::sync::atomic::AtomicU32, val: u32, ts: Option<&libc::timespec>) {
    let ts = ts.map_or(0, |t| t as *const _ as u64);
    // SAFETY: addr is a valid, aligned u32 for the duration of the call; ts is null or a valid
    // relative timeout.
    unsafe {
        syscall6(
            libc::SYS_futex,
            addr.as_ptr() as u64,
            128,
            val as u64,
            ts,
            0,
            0,
        )
    };
}

/// `futex(FUTEX_WAKE_PRIVATE)`: wake up to `n` waiters.
pub fn futex_wake(addr: &core::sync::atomic::AtomicU32, n: i32) {
    // SAFETY: addr is a valid, aligned u32; wake reads nothing else.
    unsafe {
        syscall6(
            libc::SYS_futex,
            addr.as_ptr() as u64,
            129,
            n as u64,
            0,
            0,
            0,
        )
    };
}

/// Map anonymous memory at exactly `addr` (fails rather than replacing a mapping).
pub fn mmap_fixed(addr: u64, len: u64, prot: i32, fd: i32, shared: bool) -> Result<(), i64> {
    let mut flags = libc::MAP_FIXED_NOREPLACE | libc::MAP_NORESERVE;
    flags |= if shared {
        libc::MAP_SHARED
    } else {
        libc::MAP_PRIVATE
    };
    if fd < 0 {
        flags |= libc::MAP_ANONYMOUS;
    }
    // SAFETY: MAP_FIXED_NOREPLACE never replaces an existing mapping, so no memory the program
    // or runtime uses can be clobbered; the kernel validates the rest.
    let r = unsafe {
        syscall6(
            libc::SYS_mmap,
            addr,
            len,
            prot as u64,
            flags as u64,
            fd as i64 as u64,
            0,
        )
    };
    if r < 0 {
        Err(r)
    } else if r as u64 != addr {
        // Old kernels ignore NOREPLACE and may place it elsewhere: undo.
        // SAFETY: r is the mapping we just made.
        unsafe { syscall6(libc::SYS_munmap, r as u64, len, 0, 0, 0, 0) };
        Err(-(libc::EEXIST as i64))
    } else {
        Ok(())
    }
}

/// Map anonymous read-write memory at exactly `addr`, accounted as glibc's own mappings are
/// (no MAP_NORESERVE: the kernel's overcommit policy decides, as it would for glibc's malloc;
/// pages are still committed lazily, on first touch).
pub fn mmap_fixed_committed(addr: u64, len: u64) -> Result<(), i64> {
    let flags = libc::MAP_FIXED_NOREPLACE | libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
    let prot = libc::PROT_READ | libc::PROT_WRITE;
    // SAFETY: MAP_FIXED_NOREPLACE never replaces an existing mapping.
    let r = unsafe {
        syscall6(
            libc::SYS_mmap,
            addr,
            len,
            prot as u64,
            flags as u64,
            u64::MAX,
            0,
        )
    };
    if r < 0 {
        Err(r)
    } else if r as u64 != addr {
        // SAFETY: r is the mapping we just made (old kernels ignore NOREPLACE).
        unsafe { syscall6(libc::SYS_munmap, r as u64, len, 0, 0, 0, 0) };
        Err(-(libc::EEXIST as i64))
    } else {
        Ok(())
    }
}

/// `mprotect`.
pub fn mprotect(addr: u64, len: u64, prot: i32) -> i64 {
    // SAFETY: only changes protection of the runtime's own mapping named by the caller.
    unsafe { syscall6(libc::SYS_mprotect, addr, len, prot as u64, 0, 0, 0) }
}

/// Write all of `buf` to `fd`, retrying on EINTR and partial writes. Returns false on error.
pub fn write_all(fd: i32, mut buf: &[u8]) -> bool {
    while !buf.is_empty() {
        // SAFETY: buf is a valid slice for its length.
        let r = unsafe {
            syscall6(
                libc::SYS_write,
                fd as u64,
                buf.as_ptr() as u64,
                buf.len() as u64,
                0,
                0,
                0,
            )
        };
        if r == -(libc::EINTR as i64) {
            continue;
        }
        if r <= 0 {
            return false;
        }
        buf = &buf[r as usize..];
    }
    true
}

/// `fstat` size of `fd`, or None when fd is not open.
pub fn fd_size(fd: i32) -> Option<u64> {
    // SAFETY: st is a properly sized out-buffer for fstat.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    let r = unsafe {
        syscall6(
            libc::SYS_fstat,
            fd as u64,
            &mut st as *mut _ as u64,
            0,
            0,
            0,
            0,
        )
    };
    if r < 0 {
        None
    } else {
        Some(st.st_size as u64)
    }
}

/// `sched_yield`.
pub fn yield_now() {
    // SAFETY: no arguments.
    unsafe { syscall6(libc::SYS_sched_yield, 0, 0, 0, 0, 0, 0) };
}

/// Sleep for `ns` nanoseconds (runtime-internal; replay never asks the clock for the program).
pub fn sleep_ns(ns: u64) {
    let ts = libc::timespec {
        tv_sec: (ns / 1_000_000_000) as i64,
        tv_nsec: (ns % 1_000_000_000) as i64,
    };
    // SAFETY: ts is a valid timespec; no remainder pointer.
    unsafe { syscall6(libc::SYS_nanosleep, &ts as *const _ as u64, 0, 0, 0, 0, 0) };
}

/// Monotonic time in nanoseconds (a raw system call: the program's clock calls are recorded,
/// the runtime's own are not).
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec.
    unsafe {
        syscall6(
            libc::SYS_clock_gettime,
            libc::CLOCK_MONOTONIC as u64,
            &mut ts as *mut _ as u64,
            0,
            0,
            0,
            0,
        )
    };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Kernel thread id.
pub fn gettid() -> u32 {
    // SAFETY: no arguments.
    unsafe { syscall6(libc::SYS_gettid, 0, 0, 0, 0, 0, 0) as u32 }
}

/// Exit the whole process at once with `code`.
pub fn exit_group(code: i32) -> ! {
    loop {
        // SAFETY: exit_group does not return.
        unsafe { syscall6(libc::SYS_exit_group, code as u64, 0, 0, 0, 0, 0) };
    }
}

/// Saves `errno` on creation and restores it on drop, so the runtime's own calls never leak
/// into the program's `errno`.
pub struct ErrnoGuard(i32);

impl ErrnoGuard {
    /// Save the current errno.
    #[inline]
    pub fn new() -> Self {
        // SAFETY: __errno_location returns this thread's errno slot, always valid.
        ErrnoGuard(unsafe { *libc::__errno_location() })
    }
}

impl Default for ErrnoGuard {
    /// The same as [`ErrnoGuard::new`]: saves the current errno.
    #[inline]
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for ErrnoGuard {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: as above.
        unsafe { *libc::__errno_location() = self.0 };
    }
}

/// Write a message to stderr prefixed `reprise:` (no allocation: formats into a stack buffer).
pub fn say(args: core::fmt::Arguments<'_>) {
    struct Buf {
        b: [u8; 512],
        n: usize,
    }
    impl core::fmt::Write for Buf {
        fn write_str(&mut self, s: &str) -> core::fmt::Result {
            for &c in s.as_bytes() {
                if self.n < self.b.len() - 1 {
                    self.b[self.n] = c;
                    self.n += 1;
                }
            }
            Ok(())
        }
    }
    let mut b = Buf { b: [0; 512], n: 0 };
    let _ = core::fmt::Write::write_str(&mut b, "reprise: ");
    let _ = core::fmt::write(&mut b, args);
    b.b[b.n] = b'\n';
    write_all(reprise_proto::FD_LOG, &b.b[..b.n + 1]);
}

/// `say!` formats a runtime message to stderr without allocating.
#[macro_export]
macro_rules! say {
    ($($t:tt)*) => { $crate::sys::say(format_args!($($t)*)) };
}

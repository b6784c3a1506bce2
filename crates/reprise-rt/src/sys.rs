//! System calls made by the runtime itself.
//!
//! The runtime never calls libc for its own system calls: the program may interpose the same
//! symbols (and we interpose some of them ourselves), and libc's wrappers set `errno`, which
//! is the program's. Every call here is an inline `syscall` instruction: rustix's `linux_raw`
//! backend for the typed ones (no libc, no `errno`, no allocation: usable in signal handlers;
//! its functions inline to the same instruction sequence), and [`syscall6`] for what rustix does
//! not offer: a call by number (the program's calls that [`crate::capture`] performs for it),
//! `tgkill` (rustix leaves it out on purpose), `rt_sigaction` read back with its restorer field
//! and `rt_sigprocmask` (rustix has them only in its unstable `runtime` module), turning on
//! Syscall User Dispatch (reason in [`crate::sud::enable`]), and the calls whose reasons are
//! on [`now_ns`] and [`exit_group`]. Syscall User Dispatch
//! tells the runtime's calls from the program's by the thread's selector ("allow" while in the
//! runtime, [`crate::sud`]), not by the instruction's address, so both kinds pass.
#![allow(unsafe_code)]

use core::arch::asm;
use rustix::fd::BorrowedFd;
use rustix::mm::{MapFlags, MprotectFlags, ProtFlags};
use rustix::thread::futex;
use rustix::thread::Timespec;

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

/// A descriptor number as rustix's borrowed descriptor.
fn fd(n: i32) -> BorrowedFd<'static> {
    // SAFETY: rustix only passes the number to the kernel, which checks it: a closed or
    // foreign descriptor fails the call (EBADF) and borrows nothing.
    unsafe { BorrowedFd::borrow_raw(n) }
}

/// rustix's error as the raw kernel result (negative errno).
fn neg(e: rustix::io::Errno) -> i64 {
    -(e.raw_os_error() as i64)
}

/// `futex(FUTEX_WAIT_PRIVATE)`: sleep while `*addr == val`.
pub fn futex_wait(addr: &core::sync::atomic::AtomicU32, val: u32) {
    let _ = futex::wait(addr, futex::Flags::PRIVATE, val, None);
}

/// [`futex_wait`] for at most `ns` nanoseconds.
pub fn futex_wait_for(addr: &core::sync::atomic::AtomicU32, val: u32, ns: u64) {
    let _ = futex::wait(addr, futex::Flags::PRIVATE, val, Some(&timespec(ns)));
}

/// `futex(FUTEX_WAKE_PRIVATE)`: wake up to `n` waiters.
pub fn futex_wake(addr: &core::sync::atomic::AtomicU32, n: i32) {
    let _ = futex::wake(addr, futex::Flags::PRIVATE, n as u32);
}

fn timespec(ns: u64) -> Timespec {
    Timespec {
        tv_sec: (ns / 1_000_000_000) as i64,
        tv_nsec: (ns % 1_000_000_000) as i64,
    }
}

/// Map memory at exactly `addr` (fails rather than replacing a mapping): `fd` (< 0: anonymous),
/// shared or private; Err holds the negative errno.
pub fn mmap_fixed(addr: u64, len: u64, prot: i32, fd: i32, shared: bool) -> Result<(), i64> {
    let mut flags = MapFlags::FIXED_NOREPLACE | MapFlags::NORESERVE;
    flags |= if shared {
        MapFlags::SHARED
    } else {
        MapFlags::PRIVATE
    };
    let prot = ProtFlags::from_bits_retain(prot as u32);
    let at = addr as *mut core::ffi::c_void;
    // SAFETY: MAP_FIXED_NOREPLACE never replaces an existing mapping, so no memory the program
    // or runtime uses can be clobbered; the kernel validates the rest.
    let r = unsafe {
        if fd < 0 {
            rustix::mm::mmap_anonymous(at, len as usize, prot, flags)
        } else {
            rustix::mm::mmap(at, len as usize, prot, flags, self::fd(fd), 0)
        }
    };
    placed(r, addr, len)
}

/// Map anonymous read-write memory at exactly `addr`, accounted as glibc's own mappings are
/// (no MAP_NORESERVE: the kernel's overcommit policy decides, as it would for glibc's malloc;
/// pages are still committed lazily, on first touch).
pub fn mmap_fixed_committed(addr: u64, len: u64) -> Result<(), i64> {
    let flags = MapFlags::FIXED_NOREPLACE | MapFlags::PRIVATE;
    let prot = ProtFlags::READ | ProtFlags::WRITE;
    // SAFETY: MAP_FIXED_NOREPLACE never replaces an existing mapping.
    let r = unsafe {
        rustix::mm::mmap_anonymous(addr as *mut core::ffi::c_void, len as usize, prot, flags)
    };
    placed(r, addr, len)
}

/// Ok when the mapping `r` is at `addr`; old kernels ignore NOREPLACE and may place it
/// elsewhere: then it is undone.
fn placed(r: rustix::io::Result<*mut core::ffi::c_void>, addr: u64, len: u64) -> Result<(), i64> {
    match r {
        Err(e) => Err(neg(e)),
        Ok(p) if p as u64 == addr => Ok(()),
        Ok(p) => {
            // SAFETY: p is the mapping just made, which nothing uses yet.
            let _ = unsafe { rustix::mm::munmap(p, len as usize) };
            Err(-(libc::EEXIST as i64))
        }
    }
}

/// `munmap` of a mapping of the runtime's own.
///
/// # Safety
/// Nothing uses `[addr, addr + len)` any more.
pub unsafe fn munmap(addr: u64, len: u64) {
    // SAFETY: the caller's contract.
    let _ = unsafe { rustix::mm::munmap(addr as *mut core::ffi::c_void, len as usize) };
}

/// `madvise(MADV_DONTNEED)`: give the pages of `[addr, addr + len)` back to the kernel (they
/// read as zeros when touched again).
///
/// # Safety
/// Nothing uses `[addr, addr + len)`, a range of a private anonymous mapping of the runtime.
pub unsafe fn discard(addr: u64, len: u64) {
    // SAFETY: the caller's contract.
    let _ = unsafe {
        rustix::mm::madvise(
            addr as *mut core::ffi::c_void,
            len as usize,
            rustix::mm::Advice::LinuxDontNeed,
        )
    };
}

/// `mprotect` of the runtime's own mapping at `addr`; the raw result (negative errno).
pub fn mprotect(addr: u64, len: u64, prot: i32) -> i64 {
    let prot = MprotectFlags::from_bits_retain(prot as u32);
    // SAFETY: only changes protection of the runtime's own mapping named by the caller.
    match unsafe { rustix::mm::mprotect(addr as *mut core::ffi::c_void, len as usize, prot) } {
        Ok(()) => 0,
        Err(e) => neg(e),
    }
}

/// Write all of `buf` to `fd`, retrying on EINTR and partial writes. Returns false on error.
pub fn write_all(fd: i32, mut buf: &[u8]) -> bool {
    while !buf.is_empty() {
        match rustix::io::write(self::fd(fd), buf) {
            Err(rustix::io::Errno::INTR) => continue,
            Ok(n) if n > 0 => buf = &buf[n..],
            _ => return false,
        }
    }
    true
}

/// `fstat` size of `fd`, or None when fd is not open.
pub fn fd_size(fd: i32) -> Option<u64> {
    rustix::fs::fstat(self::fd(fd))
        .ok()
        .map(|st| st.st_size as u64)
}

/// `sched_yield`.
pub fn yield_now() {
    rustix::thread::sched_yield();
}

/// Sleep for `ns` nanoseconds (runtime-internal; replay never asks the clock for the program).
pub fn sleep_ns(ns: u64) {
    let _ = rustix::thread::nanosleep(&timespec(ns));
}

/// Monotonic time in nanoseconds (a raw system call: the program's clock calls are recorded,
/// the runtime's own are not).
///
/// Not `rustix::time::clock_gettime`: rustix reads the clock through the vDSO, whose `rdtsc`
/// faults in a process the runtime traps `rdtsc` in ([`crate::tsc`]: PR_SET_TSC), so every
/// reading would take the SIGSEGV emulation path; the system call never executes `rdtsc`.
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
    rustix::thread::gettid().as_raw_nonzero().get() as u32
}

/// This process's id.
pub fn getpid() -> u32 {
    rustix::process::getpid().as_raw_nonzero().get() as u32
}

/// Trap `rdtsc`/`rdtscp` (SIGSEGV) in the calling thread, or let them run.
pub fn tsc_trap(on: bool) {
    use rustix::process::TimeStampCounterReadability as R;
    let _ = rustix::process::set_time_stamp_counter_readability(if on {
        R::RaiseSIGSEGV
    } else {
        R::Readable
    });
}

/// Close the runtime's descriptor `fd` on exec (programs this one starts do not get it).
pub fn set_cloexec(fd: i32) {
    let _ = rustix::io::fcntl_setfd(self::fd(fd), rustix::io::FdFlags::CLOEXEC);
}

/// Exit the whole process at once with `code`.
///
/// A raw call: rustix has `exit_group` only in its `runtime` module, which it publishes as
/// unstable (for libc implementations, outside semver).
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

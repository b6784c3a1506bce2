//! System calls made inside stdio and the directory calls, recorded and replayed.
//!
//! glibc's stdio reads and opens files with its own internal system calls, which no symbol
//! interposition sees: `scanf`, `fgets`, `getchar`, `fread` on `stdin` or on a `fopen`ed file
//! call `read` inside libc. While a stdio call runs (the C interposers of `csrc/shim_stdio.c`
//! bracket it with [`reprise_capture_begin`] / [`reprise_capture_end`]), Syscall User Dispatch
//! traps every system call the thread makes, and the SIGSYS handler ([`handle`]) performs them
//! the way the runtime's own interposers would:
//! * reads (`read`, `pread64`, `readv`, `preadv`): the data is recorded and given back in
//!   replay without reading (or, with `--hash-reads`, re-executed and checked, as for `read`);
//!   a directory's entries (`getdents64`, inside `readdir`) likewise, always recorded;
//! * what stdio asks about the descriptor (`fstat`/`newfstatat`/`statx`, `ioctl(TCGETS)`,
//!   `fcntl(F_GETFL/F_GETFD)`, `lseek`): recorded results and data, so a stream behaves in
//!   replay as it did while recording whatever the descriptor is now (a file, a pipe, a tty or
//!   /dev/null);
//! * `open`/`openat` (fopen): performed while recording; in replay the recorded descriptor
//!   number is given the real file for reading, or /dev/null for a file opened for writing
//!   (stdio's writes then vanish, as every write to a file does in replay); `close`
//!   is performed in both modes with the recorded result;
//! * writes to descriptors other than stdout/stderr: performed while recording, not in replay.
//!
//! Every other call runs natively from the handler. The handler returns with the selector still
//! trapping, through glibc's signal trampoline, which is the allowed region of the dispatch
//! (`sud::enable`). Without Syscall User Dispatch stdio's internal reads are re-executed.
#![allow(unsafe_code)]

use crate::access;
use crate::cancel::{rt_off, rt_on};
use crate::state::{self, Thread, IN_RT};
use crate::sys;
use core::cell::Cell;
use core::ffi::{c_int, c_void};
use core::sync::atomic::Ordering;

thread_local! {
    /// Depth of stdio calls in progress on this thread whose system calls are captured.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Whether the current thread is inside a captured stdio call.
#[inline]
pub fn on() -> bool {
    DEPTH.with(|d| d.get()) != 0
}

/// A stdio call on `obj` (a FILE, or the descriptor-allocation object for fopen/fclose; null:
/// none) begins: safe point, turn on `obj`'s stripe, capture on. Returns what to pass to
/// [`reprise_capture_end`] (0 when the runtime is off for this call).
#[no_mangle]
pub extern "C" fn reprise_capture_begin(obj: *const c_void) -> c_int {
    let Some(mut e) = crate::entry::enter() else {
        return 0;
    };
    let t = e.t();
    access::safe_point(t);
    if !obj.is_null() {
        crate::sync::take_obj(t, obj, access::kind::STDIO);
    }
    // Uninstrumented libc work until the call returns, possibly blocking (a read of a pipe or
    // a terminal): ownership requests are granted meanwhile.
    crate::ownership::set_free(t.sh());
    if !t.sud_on {
        // No dispatch: the call runs untrapped, its turn held until it is complete.
        t.sud_hold = true;
        return 0;
    }
    DEPTH.with(|d| d.set(d.get() + 1));
    1
}

/// The stdio call of [`reprise_capture_begin`] returned.
#[no_mangle]
pub extern "C" fn reprise_capture_end(began: c_int) {
    if began != 0 {
        DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

extern "C" {
    /// `IO_EMULATE` (1), `IO_REEXEC` (2), `IO_PIPE` (3) or `IO_PIPE_SHARED` (4) for a read of
    /// `fd` (the shim's read classes).
    fn reprise_capture_read_class(fd: c_int) -> c_int;
    fn reprise_hash_bytes(seed: u64, p: *const u8, n: usize) -> u64;
    /// Note that the program writes the file of `fd` (its reads are then recorded).
    fn reprise_capture_mark_written(fd: c_int);
    /// Replay of a read of a child's pipe: read and drop what the child writes again, up to
    /// `want` bytes (to the end of file for 0), into the program's buffer (shim_child.c).
    fn reprise_capture_drain(fd: c_int, buf: *mut u8, cap: usize, want: i64, wait: c_int);
    /// Replay of an open: give descriptor `want` the file for reading, or /dev/null.
    fn reprise_capture_replay_open(dirfd: c_int, path: *const i8, flags: c_int, want: c_int);
    /// 1 or 2 when `fd` is standard output or error under another number, else 0.
    fn reprise_capture_out_stream(fd: c_int) -> c_int;
}

const IO_REEXEC: u64 = 2;
const IO_PIPE: u64 = 3;
const IO_PIPE_SHARED: u64 = 4;
/// `reprise_capture_out_stream`'s class of a write into a pipe that feeds a child.
const OUT_CHILD: i64 = 3;
const TCGETS: u64 = 0x5401;
/// The kernel's `struct termios` (what TCGETS writes).
const KTERMIOS: usize = 36;
const STATX_SIZE: usize = 256;

/// System calls that must run in the interrupted context itself, never from the handler.
fn context_bound(nr: i64) -> bool {
    matches!(
        nr,
        libc::SYS_rt_sigprocmask
            | libc::SYS_rt_sigreturn
            | libc::SYS_rt_sigsuspend
            | libc::SYS_sigaltstack
            | libc::SYS_clone
            | libc::SYS_clone3
            | libc::SYS_fork
            | libc::SYS_vfork
            | libc::SYS_execve
            | libc::SYS_execveat
            | libc::SYS_pause
            | libc::SYS_exit
            | libc::SYS_exit_group
    )
}

/// The SIGSYS handler, inside a captured stdio call: perform or replay the trapped system call
/// whose registers are `g` and leave its result in RAX (the instruction pointer is already past
/// the `syscall`). Returns false when the call must run natively in its own context instead.
pub fn handle(t: &mut Thread, g: &mut [i64; 23]) -> bool {
    let nr = g[libc::REG_RAX as usize];
    if context_bound(nr) {
        return false;
    }
    let a = [
        g[libc::REG_RDI as usize] as u64,
        g[libc::REG_RSI as usize] as u64,
        g[libc::REG_RDX as usize] as u64,
        g[libc::REG_R10 as usize] as u64,
        g[libc::REG_R8 as usize] as u64,
        g[libc::REG_R9 as usize] as u64,
    ];
    let r = if IN_RT.with(|c| c.get()) {
        // The runtime's own call (its allocator, a turn's futex) inside the stdio call.
        native(nr, &a)
    } else {
        rt_on();
        let _e = sys::ErrnoGuard::new();
        let r = captured(t, nr, &a).unwrap_or_else(|| native(nr, &a));
        rt_off();
        r
    };
    g[libc::REG_RAX as usize] = r;
    true
}

fn native(nr: i64, a: &[u64; 6]) -> i64 {
    // SAFETY: the program's own system call, with its own arguments, made on its behalf.
    unsafe { sys::syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5]) }
}

fn replaying() -> bool {
    state::REPLAY.load(Ordering::Relaxed)
}

/// A value that is the outcome of the world: recorded, or given back in replay.
fn outcome(t: &mut Thread, live: impl FnOnce() -> i64) -> i64 {
    if replaying() {
        access::result(t, None) as i64
    } else {
        access::result(t, Some(live() as u64)) as i64
    }
}

/// Bytes the kernel wrote for the program: recorded, or copied from the trace in replay.
fn data(t: &mut Thread, p: u64, n: usize) {
    if n == 0 {
        return;
    }
    // SAFETY: the kernel wrote (record) or would have written (replay) n bytes at p, a buffer
    // the program passed to the call.
    let b = unsafe { core::slice::from_raw_parts_mut(p as *mut u8, n) };
    if replaying() {
        access::take_data(t, b);
    }
    access::log_data(t, b);
}

/// Scatter `data` over an iovec array (`cnt` entries at `iov`), `total` bytes.
fn data_iov(t: &mut Thread, iov: u64, cnt: u64, mut total: usize) {
    for i in 0..cnt.min(1024) {
        if total == 0 {
            break;
        }
        // SAFETY: the program's iovec array of cnt entries.
        let v = unsafe { &*((iov as *const libc::iovec).add(i as usize)) };
        let n = v.iov_len.min(total);
        data(t, v.iov_base as u64, n);
        total -= n;
    }
}

fn hash(h: u64, p: u64, n: usize) -> u64 {
    // SAFETY: n bytes the kernel just wrote (or the program passed) at p; the shim's hash reads
    // exactly those, with plain loads.
    unsafe { reprise_hash_bytes(h, p as *const u8, n) }
}

fn hash_iov(iov: u64, cnt: u64, mut total: usize) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325;
    for i in 0..cnt.min(1024) {
        if total == 0 {
            break;
        }
        // SAFETY: the program's iovec array of cnt entries.
        let v = unsafe { &*((iov as *const libc::iovec).add(i as usize)) };
        let n = v.iov_len.min(total);
        h = hash(h, v.iov_base as u64, n);
        total -= n;
    }
    h
}

/// Replay: a re-executed call must give what it gave while recording.
fn check(t: &mut Thread, live: u64, what: &str) {
    if !replaying() {
        access::result(t, Some(live));
        return;
    }
    let want = access::result(t, None);
    if want != live {
        let e = t.sh().events.load(Ordering::Relaxed);
        access::diverge(
            t,
            e,
            format_args!(
                "thread {} diverged at event {e}: {what} gave {live:#x}, the recording {want:#x} \
                 (the file changed since the recording, or is missing: `record --portable` \
                 keeps the bytes read)",
                t.tid
            ),
        );
    }
}

/// The captured calls; None: not one of them (it runs natively).
// Over 80 lines: one match arm per captured system call, each short; it runs inside the
// SIGSYS handler, where the arms share the trapped call's arguments and the thread.
#[allow(clippy::too_many_lines)]
fn captured(t: &mut Thread, nr: i64, a: &[u64; 6]) -> Option<i64> {
    let fd = a[0] as c_int;
    Some(match nr {
        libc::SYS_read | libc::SYS_pread64 | libc::SYS_readv | libc::SYS_preadv => {
            let vec = nr == libc::SYS_readv || nr == libc::SYS_preadv;
            let cls = outcome(t, || {
                // SAFETY: plain C helper of the shim (fstat of the descriptor).
                (unsafe { reprise_capture_read_class(fd) }) as i64
            }) as u64;
            if cls == IO_REEXEC {
                let r = native(nr, a);
                check(t, r as u64, "the length of a re-executed file read");
                if r > 0 {
                    let h = if vec {
                        hash_iov(a[1], a[2], r as usize)
                    } else {
                        hash(0xcbf2_9ce4_8422_2325, a[1], r as usize)
                    };
                    check(t, h, "the data of a re-executed file read");
                }
                return Some(r);
            }
            // Recording: the read may wait for input (a terminal, a pipe) with the thread marked
            // blocked, so that a terminating signal ends the process there, as it does
            // natively (`signals::terminator`); inside the SIGSYS handler it was deferred until
            // the read returned (Ctrl-C did nothing to a program waiting in `fgets`).
            let live = if replaying() {
                0
            } else {
                crate::sync::blocking(t, reprise_proto::WAIT_NONE, 0, || native(nr, a))
            };
            let r = outcome(t, || live);
            if (cls == IO_PIPE || cls == IO_PIPE_SHARED) && replaying() && nr == libc::SYS_read {
                // SAFETY: the program's buffer of a[2] bytes, which the recorded data fills next.
                unsafe {
                    reprise_capture_drain(
                        fd,
                        a[1] as *mut u8,
                        a[2] as usize,
                        r,
                        c_int::from(cls == IO_PIPE),
                    )
                };
            }
            if r > 0 {
                if vec {
                    data_iov(t, a[1], a[2], r as usize);
                } else {
                    data(t, a[1], r as usize);
                }
            }
            r
        }
        libc::SYS_getdents64 => {
            // A directory's entries (readdir): recorded data.
            let r = outcome(t, || native(nr, a));
            if r > 0 {
                data(t, a[1], r as usize);
            }
            r
        }
        libc::SYS_fstat | libc::SYS_stat | libc::SYS_lstat | libc::SYS_newfstatat => {
            let buf = if nr == libc::SYS_newfstatat {
                a[2]
            } else {
                a[1]
            };
            let r = outcome(t, || native(nr, a));
            if r == 0 {
                data(t, buf, core::mem::size_of::<libc::stat>());
            }
            r
        }
        libc::SYS_statx => {
            let r = outcome(t, || native(nr, a));
            if r == 0 {
                data(t, a[4], STATX_SIZE);
            }
            r
        }
        libc::SYS_ioctl if a[1] == TCGETS => {
            let r = outcome(t, || native(nr, a));
            if r == 0 {
                data(t, a[2], KTERMIOS);
            }
            r
        }
        libc::SYS_fcntl if a[1] == libc::F_GETFL as u64 || a[1] == libc::F_GETFD as u64 => {
            outcome(t, || native(nr, a))
        }
        libc::SYS_lseek => {
            // Performed in both modes (a re-executed read needs the position), the recorded
            // result returned.
            let live = native(nr, a);
            outcome(t, || live)
        }
        libc::SYS_open | libc::SYS_openat => {
            let (dirfd, path, flags) = if nr == libc::SYS_openat {
                (a[0] as c_int, a[1], a[2] as c_int)
            } else {
                (libc::AT_FDCWD, a[0], a[1] as c_int)
            };
            if !replaying() {
                let r = native(nr, a);
                let writes = libc::O_WRONLY | libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC;
                if r >= 0 && flags & (writes | libc::O_APPEND) != 0 {
                    // SAFETY: plain C helper of the shim.
                    unsafe { reprise_capture_mark_written(r as c_int) };
                }
                return Some(access::result(t, Some(r as u64)) as i64);
            }
            let want = access::result(t, None) as i64;
            if want >= 0 {
                // SAFETY: the program's path string; the helper opens or substitutes.
                unsafe {
                    reprise_capture_replay_open(dirfd, path as *const i8, flags, want as c_int)
                };
            }
            want
        }
        libc::SYS_close => {
            if (reprise_proto::FD_CONFIG..=reprise_proto::FD_LOG).contains(&fd) {
                return Some(0);
            }
            let live = native(nr, a);
            outcome(t, || live)
        }
        libc::SYS_write | libc::SYS_pwrite64 | libc::SYS_writev if fd != 1 && fd != 2 => {
            let h = if nr == libc::SYS_writev {
                hash_iov(a[1], a[2], usize::MAX)
            } else {
                hash(0xcbf2_9ce4_8422_2325, a[1], a[2] as usize)
            };
            // Standard output or error under another number (`fopen("/dev/stdout")`): the
            // stream it is, recorded; replay writes there (its descriptor is a placeholder).
            // A pipe that feeds a child (`OUT_CHILD`, popen(cmd, "w")): replay writes the
            // recorded bytes into it again, for the child that runs again.
            let stream = if nr == libc::SYS_pwrite64 {
                0
            } else {
                // SAFETY: plain C over raw system calls, on the program's descriptor.
                outcome(t, || unsafe { reprise_capture_out_stream(fd as c_int) }
                    as i64)
            };
            let r = outcome(t, || {
                // Marked before the write (shim_child.c: a pipe the program writes into is not
                // a child's).
                // SAFETY: plain C helper of the shim (fstat of the descriptor).
                unsafe { reprise_capture_mark_written(fd) };
                native(nr, a)
            });
            if stream > 0 && replaying() && r > 0 {
                let mut b = *a;
                if stream != OUT_CHILD {
                    b[0] = stream as u64;
                }
                if nr == libc::SYS_write {
                    b[2] = r as u64;
                }
                native(nr, &b);
            }
            check(t, h, "the data of a write");
            r
        }
        _ => return None,
    })
}

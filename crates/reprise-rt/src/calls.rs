//! The runtime's side of the C interposers in `csrc/libc_shim.c` (ordered stdio and libc
//! random state, recorded clock and identity reads), and the sleep/yield family.
//!
//! Sleeps are safe points; while recording they sleep for real and their outcome is recorded;
//! replay does not sleep (no real time in replay) and returns the recorded outcome.
#![allow(unsafe_code)]
#![allow(missing_docs)]

use crate::access::{self, kind};
use crate::entry::enter;
use crate::real;
use crate::state;
use core::ffi::{c_int, c_uint, c_void};
use core::sync::atomic::Ordering;
use libc::timespec;

#[inline(always)]
fn replaying() -> bool {
    state::REPLAY.load(Ordering::Relaxed)
}

/// Safe point, then an ordered event on the stripe of `obj` (a FILE, the RNG state). Returns
/// 0 when the runtime is not active for this call.
#[no_mangle]
pub extern "C" fn reprise_ordered(obj: *const c_void) -> c_int {
    let Some(e) = enter() else { return 0 };
    let t = e.t();
    access::safe_point(t);
    crate::sync::take_obj(t, obj, kind::STDIO);
    t.sud_hold = true;
    1
}

/// A safe point (the previous access is complete; release its turn).
#[no_mangle]
pub extern "C" fn reprise_safe_point() {
    if let Some(e) = enter() {
        access::safe_point(e.t());
        // The caller (the C shim) performs uninstrumented libc work, possibly blocking, before
        // the program's next callback: ownership requests are granted meanwhile.
        crate::ownership::set_free(e.t());
    }
}

/// Whether the runtime records or replays this thread now.
#[no_mangle]
pub extern "C" fn reprise_active() -> c_int {
    let m = state::mode();
    let on = (m == state::M_RECORD || m == state::M_REPLAY)
        && !state::cur().is_null()
        && !state::IN_RT.with(|c| c.get());
    on as c_int
}

/// An input: recorded while recording, given back from the trace in replay.
#[no_mangle]
pub extern "C" fn reprise_input(live: u64) -> u64 {
    let Some(e) = enter() else { return live };
    let t = e.t();
    access::fold_pending(t);
    access::result(t, if replaying() { None } else { Some(live) })
}

/// Run a sleep: for real while recording (its return recorded), not at all in replay.
fn sleep_call(real_call: impl FnOnce() -> c_int, failed: impl Fn(c_int) -> bool) -> c_int {
    let Some(e) = enter() else { return real_call() };
    let t = e.t();
    access::safe_point(t);
    if replaying() {
        let r = access::result(t, None);
        let (ret, err) = ((r & 0xffff_ffff) as u32 as c_int, (r >> 32) as c_int);
        if failed(ret) {
            // SAFETY: this thread's errno.
            unsafe { *libc::__errno_location() = err };
        }
        ret
    } else {
        crate::ownership::set_free(t);
        let r = real_call();
        // SAFETY: this thread's errno, as the real call left it.
        let err = if failed(r) {
            unsafe { *libc::__errno_location() }
        } else {
            0
        };
        access::result(t, Some((r as u32 as u64) | ((err as u32 as u64) << 32)));
        // SAFETY: restore the real call's errno after the runtime's work.
        unsafe { *libc::__errno_location() = err };
        r
    }
}

#[no_mangle]
pub unsafe extern "C" fn nanosleep(req: *const timespec, rem: *mut timespec) -> c_int {
    // SAFETY (all below): arguments forwarded unchanged to the real function.
    sleep_call(|| unsafe { real::nanosleep(req, rem) }, |r| r != 0)
}
#[no_mangle]
pub unsafe extern "C" fn clock_nanosleep(
    c: libc::clockid_t,
    flags: c_int,
    req: *const timespec,
    rem: *mut timespec,
) -> c_int {
    // clock_nanosleep returns the error number itself.
    sleep_call(
        || unsafe { real::clock_nanosleep(c, flags, req, rem) },
        |_| false,
    )
}
#[no_mangle]
pub unsafe extern "C" fn usleep(us: c_uint) -> c_int {
    sleep_call(|| unsafe { real::usleep(us) }, |r| r != 0)
}
#[no_mangle]
pub unsafe extern "C" fn sleep(s: c_uint) -> c_uint {
    sleep_call(|| unsafe { real::sleep(s) as c_int }, |_| false) as c_uint
}
#[no_mangle]
pub unsafe extern "C" fn sched_yield() -> c_int {
    if let Some(e) = enter() {
        access::safe_point(e.t());
        access::jitter(e.t());
    }
    unsafe { real::sched_yield() }
}

/// Pseudo-objects whose stripes order I/O per file descriptor.
static FD_OBJS: [u64; 1024] = [0; 1024];

/// Safe point, then an ordered event on descriptor `fd`. Returns 0 when not active.
#[no_mangle]
pub extern "C" fn reprise_fd_event(fd: c_int) -> c_int {
    let i = (fd.max(0) as usize).min(FD_OBJS.len() - 1);
    reprise_ordered(core::ptr::addr_of!(FD_OBJS[i]).cast())
}

/// Whether this thread is replaying.
#[no_mangle]
pub extern "C" fn reprise_io_replaying() -> c_int {
    (reprise_active() != 0 && replaying()) as c_int
}

/// A value that must be the same in replay as recorded (a result re-executed in replay, the
/// hash of data written): recorded, and compared in replay.
#[no_mangle]
pub extern "C" fn reprise_io_check(live: u64, what: *const core::ffi::c_char) -> u64 {
    let Some(e) = enter() else { return live };
    let t = e.t();
    access::fold_pending(t);
    if replaying() {
        let want = access::result(t, None);
        if want != live {
            // SAFETY: `what` is a NUL-terminated literal from the C shim.
            let w = unsafe { core::ffi::CStr::from_ptr(what) }
                .to_str()
                .unwrap_or("?");
            let ev = t.events.load(Ordering::Relaxed);
            access::diverge(
                t,
                ev,
                format_args!(
                    "thread {} diverged at event {}: {} gave {:#x}, the recording {:#x}",
                    t.tid, ev, w, live, want
                ),
            );
        }
        live
    } else {
        access::result(t, Some(live))
    }
}

/// Input bytes: recorded while recording; copied from the trace into `buf` in replay.
#[no_mangle]
pub unsafe extern "C" fn reprise_io_data(buf: *mut u8, len: usize) {
    if len == 0 {
        return;
    }
    let Some(e) = enter() else { return };
    let t = e.t();
    // SAFETY: buf holds `len` bytes the real call wrote (record) or will receive (replay).
    let b = unsafe { core::slice::from_raw_parts_mut(buf, len) };
    if replaying() {
        access::take_data(t, b);
    }
    access::log_data(t, b);
}

/// Whether regular-file reads are re-executed and hash-checked (`--hash-reads`) rather than
/// recorded. Decided at record time; replay follows the recorded class of each read.
#[no_mangle]
pub extern "C" fn reprise_hash_reads() -> c_int {
    (reprise_active() != 0 && state::config().flags & reprise_proto::FLAG_HASH_READS != 0) as c_int
}

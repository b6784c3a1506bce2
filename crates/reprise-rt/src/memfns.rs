//! The memory functions the program's own objects call (`ld --wrap`, `cc::WRAPPED` in the
//! launcher) and their ThreadSanitizer names (`__tsan_memcpy` ...): each is a ranged access
//! under the strategy's order, then the real function.
#![allow(unsafe_code)]

use crate::access::{self, kind};
use crate::entry::enter;
use crate::leap;
use crate::ownership;
use crate::state::Strategy;
use core::ffi::c_void;

/// memcpy/memmove/memset: a ranged read of the source and a ranged write of the destination,
/// under one set of turns, then the real operation. Reached through `ld --wrap` for the
/// program's own objects (clang lowers struct copies to them) and as `__tsan_mem*`.
///
/// memcmp/bcmp (`cmp`): two ranged reads, `dst` and `src`, folding their kind, not their
/// bytes (the comparison may stop at the first difference: the program never reads the rest,
/// which another thread may be writing).
///
/// Runs on the thread's runtime stack (`rtstack::run`): `stack_src`, whether the source lies on
/// a stack, is asked by the caller, on the program's stack (`layout::on_a_stack` tells the main
/// thread's stack by where the caller runs).
fn ranged(dst: usize, src: usize, n: usize, cmp: bool, stack_src: bool) {
    if n == 0 {
        return;
    }
    let Some(mut e) = enter() else { return };
    let t = e.t();
    // A copy out of a stack folds its kind (see the ownership case).
    match crate::state::strategy() {
        Strategy::Ownership => {
            let ranges = [(dst, n, !cmp), (src, if src != 0 { n } else { 0 }, false)];
            let ev = ownership::access(t, &ranges);
            if cmp {
                ownership::finish_event(t, ev, dst, n, kind::READ, Some(kind::READ));
                return;
            }
            if stack_src {
                // A copy out of a stack folds its kind: a struct built there field by field
                // holds bytes no frame wrote (its padding, unset fields), which the runtime's
                // own frames left and a copy carries on (x264 copies a partly set 256-byte
                // `x264_me_t` local into the heap with memcpy; gcc's copies are calls since
                // `cc::GCC_STRING_CALLS`). The fields are checked where the program reads them.
                t.sh()
                    .digest
                    .set(ownership::fold(t.sh().digest.get(), kind::RANGE));
            } else if src != 0 {
                // Every byte the copy reads (this thread may read them now: it was granted
                // their granules, and it performs the copy right after the callback).
                // SAFETY: the program reads `[src, src + n)` right after the callback returns.
                t.sh()
                    .digest
                    .set(ownership::fold(t.sh().digest.get(), unsafe {
                        access::value_at(src, n)
                    }));
            }
            ownership::finish_event(t, ev, dst, n, kind::RANGE, None);
            return;
        }
        Strategy::Model => {
            access::fold_pending(t);
            access::jitter(t);
            let k = if cmp { kind::READ } else { kind::RANGE };
            crate::model::event(t, || crate::model::op_for(k, dst as u64 >> 3));
            access::count_event(t, 0, t.model_key, k);
            if cmp {
                return;
            }
        }
        Strategy::Leap => {
            access::fold_pending(t);
            access::jitter(t);
            let d = (dst, dst + n - 1);
            let h = if src != 0 {
                leap::take_ranges(t, &[d, (src, src + n - 1)])
            } else {
                leap::take_ranges(t, &[d])
            };
            access::count_event(t, reprise_proto::RANGE_STRIPE, h, kind::RANGE);
            if cmp {
                return;
            }
        }
    }
    if stack_src {
        // The destination is then the stack's bytes (see the ownership case): not folded.
        return;
    }
    t.sh().pending_addr.set(dst as u64);
    t.sh().pending_size.set(n as u64);
}

/// Copies, fills and compares of at most this many bytes go through the callbacks' own path
/// ([`small_copy`], [`small_compare`]), not [`ranged`].
const SMALL: usize = 64;

/// A copy of at most [`SMALL`] bytes: a ranged read of the source, then a ranged write of the
/// destination, each through the callbacks' path (the fast path when the thread owns the
/// granule: no runtime entry) and each access made right after its callback (the source is
/// read into a buffer before the destination's callback), as gcc's instrumentation does for
/// the small copies it inlines. Through [`ranged`] every such call entered the runtime:
/// 7-Zip's `7zr a` recorded 2 times slower once `reprise cc` kept gcc's copies calls. Both
/// ranged accesses fold their kind (a ranged read's bytes may be a struct's padding).
///
/// # Safety
/// `s` valid for reads and `d` for writes of `n <= SMALL` bytes (they may overlap).
unsafe fn small_copy(d: *mut c_void, s: *const c_void, n: usize) {
    // Uninitialised: zeroing it could be a call of the wrapped `memset`.
    let mut buf = core::mem::MaybeUninit::<[u8; SMALL]>::uninit();
    crate::tsan::__tsan_read_range(s as *mut c_void, n);
    // SAFETY: per the contract; `buf` holds `n` bytes, written before they are read. The real
    // functions: a copy here would be a call of the wrapped `memcpy`.
    unsafe { crate::real::__real_memcpy(buf.as_mut_ptr().cast(), s, n) };
    crate::tsan::__tsan_write_range(d, n);
    // SAFETY: as above.
    unsafe { crate::real::__real_memcpy(d, buf.as_ptr().cast(), n) };
}

/// A compare of at most [`SMALL`] bytes: each side read into a buffer right after its ranged
/// read's callback, then compared with `cmp` (memcmp or bcmp).
///
/// # Safety
/// `a` and `b` valid for reads of `n <= SMALL` bytes.
unsafe fn small_compare(
    a: *const c_void,
    b: *const c_void,
    n: usize,
    cmp: unsafe extern "C" fn(*const c_void, *const c_void, usize) -> i32,
) -> i32 {
    let mut x = core::mem::MaybeUninit::<[u8; SMALL]>::uninit();
    let mut y = core::mem::MaybeUninit::<[u8; SMALL]>::uninit();
    crate::tsan::__tsan_read_range(a as *mut c_void, n);
    // SAFETY: per the contract; the buffers hold `n` bytes, written before they are read.
    unsafe { crate::real::__real_memcpy(x.as_mut_ptr().cast(), a, n) };
    crate::tsan::__tsan_read_range(b as *mut c_void, n);
    // SAFETY: as above.
    unsafe {
        crate::real::__real_memcpy(y.as_mut_ptr().cast(), b, n);
        cmp(x.as_ptr().cast(), y.as_ptr().cast(), n)
    }
}

/// Whether a wrapped call is the program's, to be ordered: not the runtime's own (its copies,
/// its formatting), not sync mode (no access callbacks). Also `strfns`'.
#[inline(always)]
pub(crate) fn ordered() -> bool {
    !crate::state::IN_RT.with(|c| c.get()) && !crate::preload::sync()
}

/// memcpy or memmove (`real`): a small copy ([`small_copy`]), or a ranged event, then `real`.
///
/// # Safety
/// `s` valid for reads and `d` for writes of `n` bytes; they may overlap only for memmove.
unsafe fn copy(
    d: *mut c_void,
    s: *const c_void,
    n: usize,
    real: unsafe extern "C" fn(*mut c_void, *const c_void, usize) -> *mut c_void,
) -> *mut c_void {
    if ordered() {
        if n <= SMALL {
            // SAFETY: the caller's contract (the copy goes through a buffer).
            unsafe { small_copy(d, s, n) };
            return d;
        }
        let stack_src = crate::layout::on_a_stack(s as usize);
        // The ranged path reads the source it folds: a bad one faults here (see `rtstack::touch`).
        crate::rtstack::touch(s as usize);
        crate::rtstack::run(|| ranged(d as usize, s as usize, n, false, stack_src));
    }
    // SAFETY: the caller's contract.
    unsafe { real(d, s, n) }
}
/// # Safety
/// The contract of `memcpy`: `s` valid for reads and `d` for writes of `n` bytes.
#[no_mangle]
pub unsafe extern "C" fn __wrap_memcpy(d: *mut c_void, s: *const c_void, n: usize) -> *mut c_void {
    // SAFETY: forwarded contract.
    unsafe { copy(d, s, n, crate::real::__real_memcpy) }
}
/// # Safety
/// The contract of `memmove`: `s` valid for reads and `d` for writes of `n` bytes.
#[no_mangle]
pub unsafe extern "C" fn __wrap_memmove(d: *mut c_void, s: *const c_void, n: usize) -> *mut c_void {
    // SAFETY: forwarded contract.
    unsafe { copy(d, s, n, crate::real::__real_memmove) }
}
/// # Safety
/// The contract of `memset`: `d` valid for writes of `n` bytes.
#[no_mangle]
pub unsafe extern "C" fn __wrap_memset(d: *mut c_void, c: i32, n: usize) -> *mut c_void {
    if ordered() {
        if n <= SMALL {
            crate::tsan::__tsan_write_range(d, n);
        } else {
            crate::rtstack::run(|| ranged(d as usize, 0, n, false, false));
        }
    }
    // SAFETY: the caller's memset contract.
    unsafe { crate::real::__real_memset(d, c, n) }
}
/// memcmp or bcmp (`real`): two ranged reads, then the real comparison.
///
/// # Safety
/// `a` and `b` valid for reads of `n` bytes.
unsafe fn compare(
    a: *const c_void,
    b: *const c_void,
    n: usize,
    real: unsafe extern "C" fn(*const c_void, *const c_void, usize) -> i32,
) -> i32 {
    if ordered() {
        if n <= SMALL {
            // SAFETY: the caller's contract.
            return unsafe { small_compare(a, b, n, real) };
        }
        crate::rtstack::run(|| ranged(a as usize, b as usize, n, true, false));
    }
    // SAFETY: the caller's contract.
    unsafe { real(a, b, n) }
}
/// # Safety
/// The contract of `memcmp`: `a` and `b` valid for reads of `n` bytes.
#[no_mangle]
pub unsafe extern "C" fn __wrap_memcmp(a: *const c_void, b: *const c_void, n: usize) -> i32 {
    // SAFETY: forwarded contract.
    unsafe { compare(a, b, n, crate::real::__real_memcmp) }
}
/// # Safety
/// The contract of `bcmp`: `a` and `b` valid for reads of `n` bytes.
#[no_mangle]
pub unsafe extern "C" fn __wrap_bcmp(a: *const c_void, b: *const c_void, n: usize) -> i32 {
    // SAFETY: forwarded contract.
    unsafe { compare(a, b, n, crate::real::__real_bcmp) }
}
/// # Safety
/// The contract of `memcpy`: `s` valid for reads and `d` for writes of `n` bytes.
#[no_mangle]
pub unsafe extern "C" fn __tsan_memcpy(d: *mut c_void, s: *const c_void, n: usize) -> *mut c_void {
    // SAFETY: forwarded contract.
    unsafe { __wrap_memcpy(d, s, n) }
}
/// # Safety
/// The contract of `memmove`: `s` valid for reads and `d` for writes of `n` bytes.
#[no_mangle]
pub unsafe extern "C" fn __tsan_memmove(d: *mut c_void, s: *const c_void, n: usize) -> *mut c_void {
    // SAFETY: forwarded contract.
    unsafe { __wrap_memmove(d, s, n) }
}
/// # Safety
/// The contract of `memset`: `d` valid for writes of `n` bytes.
#[no_mangle]
pub unsafe extern "C" fn __tsan_memset(d: *mut c_void, c: i32, n: usize) -> *mut c_void {
    // SAFETY: forwarded contract.
    unsafe { __wrap_memset(d, c, n) }
}

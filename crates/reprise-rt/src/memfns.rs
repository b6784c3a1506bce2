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
fn ranged(dst: usize, src: usize, n: usize, cmp: bool) {
    if n == 0 {
        return;
    }
    let Some(mut e) = enter() else { return };
    let t = e.t();
    match crate::state::strategy() {
        Strategy::Ownership => {
            let ranges = [(dst, n, !cmp), (src, if src != 0 { n } else { 0 }, false)];
            let ev = ownership::access(t, &ranges);
            if cmp {
                ownership::finish_event(t, ev, dst, n, kind::READ, Some(kind::READ));
                return;
            }
            if src != 0 && crate::layout::on_a_stack(src) {
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
    if src != 0 && crate::layout::on_a_stack(src) {
        // The destination is then the stack's bytes (see the ownership case): not folded.
        return;
    }
    t.sh().pending_addr.set(dst as u64);
    t.sh().pending_size.set(n as u64);
}

#[inline(always)]
fn in_rt() -> bool {
    crate::state::IN_RT.with(|c| c.get())
}

/// # Safety
/// The contract of `memcpy`: `s` valid for reads and `d` for writes of `n` bytes.
#[no_mangle]
pub unsafe extern "C" fn __wrap_memcpy(d: *mut c_void, s: *const c_void, n: usize) -> *mut c_void {
    if !in_rt() && !crate::preload::sync() {
        ranged(d as usize, s as usize, n, false);
    }
    // SAFETY: the caller's memcpy contract.
    unsafe { crate::real::__real_memcpy(d, s, n) }
}
/// # Safety
/// The contract of `memmove`: `s` valid for reads and `d` for writes of `n` bytes.
#[no_mangle]
pub unsafe extern "C" fn __wrap_memmove(d: *mut c_void, s: *const c_void, n: usize) -> *mut c_void {
    if !in_rt() && !crate::preload::sync() {
        ranged(d as usize, s as usize, n, false);
    }
    // SAFETY: the caller's memmove contract.
    unsafe { crate::real::__real_memmove(d, s, n) }
}
/// # Safety
/// The contract of `memset`: `d` valid for writes of `n` bytes.
#[no_mangle]
pub unsafe extern "C" fn __wrap_memset(d: *mut c_void, c: i32, n: usize) -> *mut c_void {
    if !in_rt() && !crate::preload::sync() {
        ranged(d as usize, 0, n, false);
    }
    // SAFETY: the caller's memset contract.
    unsafe { crate::real::__real_memset(d, c, n) }
}
/// # Safety
/// The contract of `memcmp`: `a` and `b` valid for reads of `n` bytes.
#[no_mangle]
pub unsafe extern "C" fn __wrap_memcmp(a: *const c_void, b: *const c_void, n: usize) -> i32 {
    if !in_rt() && !crate::preload::sync() {
        ranged(a as usize, b as usize, n, true);
    }
    // SAFETY: the caller's memcmp contract.
    unsafe { crate::real::__real_memcmp(a, b, n) }
}
/// # Safety
/// The contract of `bcmp`: `a` and `b` valid for reads of `n` bytes.
#[no_mangle]
pub unsafe extern "C" fn __wrap_bcmp(a: *const c_void, b: *const c_void, n: usize) -> i32 {
    if !in_rt() && !crate::preload::sync() {
        ranged(a as usize, b as usize, n, true);
    }
    // SAFETY: the caller's bcmp contract.
    unsafe { crate::real::__real_bcmp(a, b, n) }
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

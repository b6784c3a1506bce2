//! The ThreadSanitizer ABI: every callback gcc 12 and clang 14 emit (the union of both).
//!
//! Plain accesses take a turn on their stripe and return; the access happens after the
//! callback, and completes by the thread's next entry (the safe point). Atomic callbacks
//! perform the operation themselves while holding the turn, with sequentially consistent
//! ordering (at least as strong as any order the program asked for).
#![allow(unsafe_code)]
#![allow(missing_docs)]

use crate::access::{self, kind};
use crate::entry::enter;
use crate::leap;
use crate::ownership::{self, held};
use crate::state::Strategy;
use core::ffi::c_void;
use core::sync::atomic::*;

/// One plain access of a fixed `size` (a constant) at `addr`: see [`access_at`].
#[inline(always)]
pub fn on_access(addr: usize, size: usize, k: u64) {
    access_at(addr, size, k, true)
}

/// One ranged access of `size` bytes at `addr`: see [`access_at`].
#[inline(always)]
fn on_range(addr: usize, size: usize, k: u64) {
    access_at(addr, size, k, false)
}

/// One plain (`fixed`: a callback of constant size) or ranged access of `size` bytes at
/// `addr`: the ownership fast path when it applies (one thread-local load, one shadow
/// compare), else the strategy's slow path.
#[inline(always)]
fn access_at(addr: usize, size: usize, k: u64, fixed: bool) {
    // SAFETY: this thread's own slot's shared part (set by the thread itself), or the idle
    // one, whose zero limit fails the gate: atomics only, never covered by a `&mut` (the fast
    // path makes no `&mut Thread`).
    let t = unsafe { &*crate::state::cur_or_idle() };
    let write = k != kind::READ;
    // A plain recording (the default): one byte tests for it, then the record gate alone.
    // SAFETY: `t`'s own `Mine` field (or the idle part's, zero), set before the thread runs.
    if !unsafe { t.own_general.get() } {
        if let Some(e) = ownership::record_gate(t, addr, size, write, fixed) {
            ownership::plain_done(t, e, addr, size, k, fixed);
            return;
        }
        return slow(addr, size, k, fixed);
    }
    // Held granules off here means a replay (`own_general`): its gate alone, never the table.
    if !held::on_in_callback() {
        if let Some(e) = ownership::replay_gate(t) {
            ownership::plain_done(t, e, addr, size, k, fixed);
            return;
        }
        return slow(addr, size, k, fixed);
    }
    if held::fits(addr, size, fixed) {
        match held::probe(t, addr, write) {
            held::Probe::Hit => {
                held::hit_done(t, addr, size, k);
                return;
            }
            held::Probe::Stopped => return slow(addr, size, k, fixed),
            held::Probe::Miss => {}
        }
    }
    if let Some(e) = ownership::fast_gate(t, addr, size, write, fixed) {
        ownership::fast_done(t, e, addr, size, k, fixed);
        if fixed {
            held::enter(t, addr, write);
        }
        return;
    }
    slow(addr, size, k, fixed)
}

/// The callbacks' way to [`slow_access`]: nothing when the runtime is off (a binary of
/// `reprise cc` run outside `reprise record`: every thread is idle and every access gets here;
/// through `slow_access`'s prologue and its checks, such a run took 2.5 times its recorded
/// time, radix `-t 2` 118 ms against 46).
#[inline(always)]
fn slow(addr: usize, size: usize, k: u64, fixed: bool) {
    if crate::state::mode() == crate::state::M_OFF {
        return;
    }
    if k == kind::READ && fixed {
        // The slow path reads the value it folds: a bad address faults here, on the program's
        // stack, where a debugger's backtrace reaches the program (from the runtime stack it
        // stops at the switch), as the program's own access would right after.
        crate::rtstack::touch(addr);
    }
    // On the thread's runtime stack: see `rtstack`.
    if !crate::rtstack::switch_call(slow_access_c, addr, size, k | u64::from(fixed) << 63) {
        slow_access(addr, size, k, fixed)
    }
}

/// [`slow_access`] with the C ABI [`crate::rtstack::call`] calls (`fixed` in `kf`'s top bit).
extern "C" fn slow_access_c(addr: usize, size: usize, kf: u64) {
    slow_access(addr, size, kf & !(1 << 63), kf >> 63 != 0)
}

/// The strategy seam: each strategy's per-access slow path, chosen by the strategy fixed at
/// start-up (the fast path above never consults it). A ranged access (`fixed` false) folds its
/// kind, never its bytes, under every strategy (see `ownership::digest_access`: a struct's
/// padding holds bytes the runtime's own frames left, which differ between record and replay).
#[inline(never)]
fn slow_access(addr: usize, size: usize, k: u64, fixed: bool) {
    if ownership::split_fast(addr, size, k, fixed) {
        return;
    }
    let Some(mut e) = enter() else { return };
    let t = e.t();
    let size = size.max(1);
    // The value folded once the access is complete (LEAP, the models, `--verify=full`).
    let after = if fixed { size } else { 0 };
    match crate::state::strategy() {
        Strategy::Ownership => {
            let ev = ownership::access(t, &[(addr, size, k != kind::READ)]);
            let instead = (!fixed).then_some(k);
            ownership::finish_event(t, ev, addr, size, k, instead);
            if fixed && (addr ^ (addr + size - 1)) >> ownership::GRANULE_SHIFT == 0 {
                // The slow path took the granule (a whole one: no splits with held granules).
                held::enter(t.sh(), addr, k != kind::READ);
            }
        }
        Strategy::Model => {
            access::fold_pending(t);
            access::jitter(t);
            crate::model::access(t, addr, size, k);
            t.sh().pending_addr.set(addr as u64);
            t.sh().pending_size.set(after as u64);
        }
        Strategy::Leap => {
            access::fold_pending(t);
            access::jitter(t);
            leap::access(t, addr, size, k);
            t.sh().pending_addr.set(addr as u64);
            t.sh().pending_size.set(after as u64);
        }
    }
}

/// Run atomic operation `op` on `addr` under the strategy's order; fold its result.
#[inline(always)]
fn atomic<R: Copy + Into<u128>>(addr: usize, size: usize, op: impl FnOnce() -> R) -> R {
    // SAFETY: as in `on_access`.
    let t = unsafe { &*crate::state::cur_or_idle() };
    if let Some(e) = ownership::fast_gate(t, addr, size, true, true) {
        ownership::count_fast_atomic(t, e);
        // `pend` keeps naming this granule until the next callback (see `handover`).
        let r = op();
        let v: u128 = r.into();
        t.digest
            .set(ownership::fold(t.digest.get(), v as u64 ^ (v >> 64) as u64));
        return r;
    }
    // On the thread's runtime stack (see `rtstack`), a bad address faulting here first.
    crate::rtstack::touch(addr);
    crate::rtstack::run(|| atomic_slow(addr, size, op))
}

/// [`atomic`]'s slow path.
fn atomic_slow<R: Copy + Into<u128>>(addr: usize, size: usize, op: impl FnOnce() -> R) -> R {
    let Some(mut e) = enter() else { return op() };
    let t = e.t();
    match crate::state::strategy() {
        Strategy::Ownership => {
            let ev = ownership::access(t, &[(addr, size, true)]);
            let r = op();
            let v: u128 = r.into();
            ownership::finish_event(
                t,
                ev,
                addr,
                size,
                kind::ATOMIC,
                Some(v as u64 ^ (v >> 64) as u64),
            );
            r
        }
        s => {
            access::fold_pending(t);
            access::jitter(t);
            if s == Strategy::Model {
                crate::model::access(t, addr, size, kind::ATOMIC);
            } else {
                leap::access(t, addr, size, kind::ATOMIC);
            }
            let r = op();
            let v: u128 = r.into();
            t.sh().digest.set(access::mix(
                t.sh().digest.get(),
                v as u64 ^ (v >> 64) as u64,
            ));
            r
        }
    }
}

#[no_mangle]
pub extern "C" fn __tsan_init() {
    if crate::state::mode() == crate::state::M_UNINIT {
        crate::state::init();
    }
    crate::rtstack::reprise_scrub_stack();
}
#[no_mangle]
pub extern "C" fn __tsan_func_entry(_pc: *mut c_void) {}
#[no_mangle]
pub extern "C" fn __tsan_func_exit() {}
#[no_mangle]
pub extern "C" fn __tsan_ignore_thread_begin() {}
#[no_mangle]
pub extern "C" fn __tsan_ignore_thread_end() {}

/// `Settled`: what the access callbacks return, though the compiler declares them `void`: 0 in
/// `%rax`. A callback may be the last call of a function the program declares `void` and calls
/// through a pointer to a function returning a value, whose "result" is then whatever the
/// callback left in `%rax`: a pointer into the runtime's own state, which differs between record
/// and replay (their paths differ). x264's thread pool stores `job->ret = job->func(job->arg)`
/// for a `void` `read_frame_thread_int` ending in `__tsan_write4`, and its main thread reads
/// `job->ret`: every ownership replay of x264 diverged there. One `xor` per callback.
type Settled = usize;

macro_rules! plain {
    ($($n:literal $f:ident: $r:ident $w:ident $ur:ident $uw:ident $vr:ident $vw:ident $rw:ident $urw:ident;)*) => {$(
        #[no_mangle] pub extern "C" fn $r(a: *mut c_void) -> Settled { $f(a as usize, $n, kind::READ); 0 }
        #[no_mangle] pub extern "C" fn $w(a: *mut c_void) -> Settled { $f(a as usize, $n, kind::WRITE); 0 }
        #[no_mangle] pub extern "C" fn $ur(a: *mut c_void) -> Settled { $f(a as usize, $n, kind::READ); 0 }
        #[no_mangle] pub extern "C" fn $uw(a: *mut c_void) -> Settled { $f(a as usize, $n, kind::WRITE); 0 }
        #[no_mangle] pub extern "C" fn $vr(a: *mut c_void) -> Settled { $f(a as usize, $n, kind::READ); 0 }
        #[no_mangle] pub extern "C" fn $vw(a: *mut c_void) -> Settled { $f(a as usize, $n, kind::WRITE); 0 }
        #[no_mangle] pub extern "C" fn $rw(a: *mut c_void) -> Settled { $f(a as usize, $n, kind::WRITE); 0 }
        #[no_mangle] pub extern "C" fn $urw(a: *mut c_void) -> Settled { $f(a as usize, $n, kind::WRITE); 0 }
    )*};
}
// A 16-byte access is a ranged one: it folds its kind, never its bytes. It is a struct copy
// (SQLite's `Token`, a pointer, a length and 4 bytes of padding, copied whole out of a parser
// stack built field by field: the padding is what the runtime's frames left there, which
// differs between record and replay, and every replay of SQLite's parser diverged), or a long
// double (6 bytes of padding), far more often than a 16-byte scalar.
plain! {
    1 on_access: __tsan_read1 __tsan_write1 __tsan_unaligned_read1 __tsan_unaligned_write1 __tsan_volatile_read1 __tsan_volatile_write1 __tsan_read_write1 __tsan_unaligned_read_write1;
    2 on_access: __tsan_read2 __tsan_write2 __tsan_unaligned_read2 __tsan_unaligned_write2 __tsan_volatile_read2 __tsan_volatile_write2 __tsan_read_write2 __tsan_unaligned_read_write2;
    4 on_access: __tsan_read4 __tsan_write4 __tsan_unaligned_read4 __tsan_unaligned_write4 __tsan_volatile_read4 __tsan_volatile_write4 __tsan_read_write4 __tsan_unaligned_read_write4;
    8 on_access: __tsan_read8 __tsan_write8 __tsan_unaligned_read8 __tsan_unaligned_write8 __tsan_volatile_read8 __tsan_volatile_write8 __tsan_read_write8 __tsan_unaligned_read_write8;
    16 on_range: __tsan_read16 __tsan_write16 __tsan_unaligned_read16 __tsan_unaligned_write16 __tsan_volatile_read16 __tsan_volatile_write16 __tsan_read_write16 __tsan_unaligned_read_write16;
}

#[no_mangle]
pub extern "C" fn __tsan_read_range(a: *mut c_void, n: usize) -> Settled {
    if n > 0 {
        on_range(a as usize, n, kind::READ)
    }
    0
}
#[no_mangle]
pub extern "C" fn __tsan_write_range(a: *mut c_void, n: usize) -> Settled {
    if n > 0 {
        on_range(a as usize, n, kind::WRITE)
    }
    0
}
#[no_mangle]
pub extern "C" fn __tsan_vptr_update(a: *mut *mut c_void, _new: *mut c_void) -> Settled {
    on_access(a as usize, 8, kind::WRITE);
    0
}
#[no_mangle]
pub extern "C" fn __tsan_vptr_read(a: *mut *mut c_void) -> Settled {
    on_access(a as usize, 8, kind::READ);
    0
}
#[no_mangle]
pub extern "C" fn __tsan_atomic_thread_fence(_mo: i32) {
    fence(Ordering::SeqCst)
}
#[no_mangle]
pub extern "C" fn __tsan_atomic_signal_fence(_mo: i32) {
    compiler_fence(Ordering::SeqCst)
}

macro_rules! atomics {
    ($($n:literal $t:ty, $at:ty;)*) => {$( paste::paste! {
        /// # Safety
        /// Called by the compiler's instrumentation (its contract): `a` points to an aligned atomic
        /// object of this width.
        #[no_mangle]
        pub unsafe extern "C" fn [<__tsan_atomic $n _load>](a: *mut $t, _mo: i32) -> $t {
            // SAFETY (all below): `a` points to an aligned atomic object of this width, the
            // compiler's contract for these callbacks; the turn on its stripe is held.
            atomic(a as usize, $n / 8, || unsafe { <$at>::from_ptr(a) }.load(Ordering::SeqCst))
        }
        /// # Safety
        /// Called by the compiler's instrumentation (its contract): `a` points to an aligned atomic
        /// object of this width.
        #[no_mangle]
        pub unsafe extern "C" fn [<__tsan_atomic $n _store>](a: *mut $t, v: $t, _mo: i32) {
            atomic(a as usize, $n / 8, || { unsafe { <$at>::from_ptr(a) }.store(v, Ordering::SeqCst); v });
        }
        /// # Safety
        /// Called by the compiler's instrumentation (its contract): `a` points to an aligned atomic
        /// object of this width.
        #[no_mangle]
        pub unsafe extern "C" fn [<__tsan_atomic $n _exchange>](a: *mut $t, v: $t, _mo: i32) -> $t {
            atomic(a as usize, $n / 8, || unsafe { <$at>::from_ptr(a) }.swap(v, Ordering::SeqCst))
        }
        /// # Safety
        /// Called by the compiler's instrumentation (its contract): `a` points to an aligned atomic
        /// object of this width.
        #[no_mangle]
        pub unsafe extern "C" fn [<__tsan_atomic $n _fetch_add>](a: *mut $t, v: $t, _mo: i32) -> $t {
            atomic(a as usize, $n / 8, || unsafe { <$at>::from_ptr(a) }.fetch_add(v, Ordering::SeqCst))
        }
        /// # Safety
        /// Called by the compiler's instrumentation (its contract): `a` points to an aligned atomic
        /// object of this width.
        #[no_mangle]
        pub unsafe extern "C" fn [<__tsan_atomic $n _fetch_sub>](a: *mut $t, v: $t, _mo: i32) -> $t {
            atomic(a as usize, $n / 8, || unsafe { <$at>::from_ptr(a) }.fetch_sub(v, Ordering::SeqCst))
        }
        /// # Safety
        /// Called by the compiler's instrumentation (its contract): `a` points to an aligned atomic
        /// object of this width.
        #[no_mangle]
        pub unsafe extern "C" fn [<__tsan_atomic $n _fetch_and>](a: *mut $t, v: $t, _mo: i32) -> $t {
            atomic(a as usize, $n / 8, || unsafe { <$at>::from_ptr(a) }.fetch_and(v, Ordering::SeqCst))
        }
        /// # Safety
        /// Called by the compiler's instrumentation (its contract): `a` points to an aligned atomic
        /// object of this width.
        #[no_mangle]
        pub unsafe extern "C" fn [<__tsan_atomic $n _fetch_or>](a: *mut $t, v: $t, _mo: i32) -> $t {
            atomic(a as usize, $n / 8, || unsafe { <$at>::from_ptr(a) }.fetch_or(v, Ordering::SeqCst))
        }
        /// # Safety
        /// Called by the compiler's instrumentation (its contract): `a` points to an aligned atomic
        /// object of this width.
        #[no_mangle]
        pub unsafe extern "C" fn [<__tsan_atomic $n _fetch_xor>](a: *mut $t, v: $t, _mo: i32) -> $t {
            atomic(a as usize, $n / 8, || unsafe { <$at>::from_ptr(a) }.fetch_xor(v, Ordering::SeqCst))
        }
        /// # Safety
        /// Called by the compiler's instrumentation (its contract): `a` points to an aligned atomic
        /// object of this width.
        #[no_mangle]
        pub unsafe extern "C" fn [<__tsan_atomic $n _fetch_nand>](a: *mut $t, v: $t, _mo: i32) -> $t {
            atomic(a as usize, $n / 8, || unsafe { <$at>::from_ptr(a) }.fetch_nand(v, Ordering::SeqCst))
        }
        /// # Safety
        /// Called by the compiler's instrumentation (its contract): `a` points to an aligned atomic
        /// object of this width, and `c` to the caller's expected value.
        #[no_mangle]
        pub unsafe extern "C" fn [<__tsan_atomic $n _compare_exchange_strong>](a: *mut $t, c: *mut $t, v: $t, _mo: i32, _fmo: i32) -> i32 {
            let old = atomic(a as usize, $n / 8, || {
                match unsafe { <$at>::from_ptr(a) }.compare_exchange(unsafe { *c }, v, Ordering::SeqCst, Ordering::SeqCst) { Ok(o) | Err(o) => o }
            });
            // SAFETY: `c` is the caller's expected-value slot (compiler contract).
            unsafe { if old == *c { 1 } else { *c = old; 0 } }
        }
        /// # Safety
        /// Called by the compiler's instrumentation (its contract): `a` points to an aligned atomic
        /// object of this width, and `c` to the caller's expected value.
        #[no_mangle]
        pub unsafe extern "C" fn [<__tsan_atomic $n _compare_exchange_weak>](a: *mut $t, c: *mut $t, v: $t, mo: i32, fmo: i32) -> i32 {
            unsafe { [<__tsan_atomic $n _compare_exchange_strong>](a, c, v, mo, fmo) }
        }
        /// # Safety
        /// Called by the compiler's instrumentation (its contract): `a` points to an aligned atomic
        /// object of this width.
        #[no_mangle]
        pub unsafe extern "C" fn [<__tsan_atomic $n _compare_exchange_val>](a: *mut $t, c: $t, v: $t, _mo: i32, _fmo: i32) -> $t {
            atomic(a as usize, $n / 8, || {
                match unsafe { <$at>::from_ptr(a) }.compare_exchange(c, v, Ordering::SeqCst, Ordering::SeqCst) { Ok(o) | Err(o) => o }
            })
        }
    } )*};
}
atomics! {
    8 u8, AtomicU8;
    16 u16, AtomicU16;
    32 u32, AtomicU32;
    64 u64, AtomicU64;
}

/// 128-bit atomics (gcc only): performed under a runtime-private spinlock, since the turn on
/// the stripe only excludes instrumented accesses and Rust has no stable 128-bit atomic.
static LOCK128: AtomicBool = AtomicBool::new(false);
fn with128<R>(f: impl FnOnce() -> R) -> R {
    while LOCK128.swap(true, Ordering::Acquire) {
        core::hint::spin_loop();
    }
    let r = f();
    LOCK128.store(false, Ordering::Release);
    r
}

macro_rules! atomic128_rmw {
    ($($name:ident: |$o:ident, $v:ident| $e:expr;)*) => {$(
        /// # Safety
        /// Called by the compiler's instrumentation (its contract): `a` points to an aligned atomic
        /// object of this width.
        #[no_mangle]
        pub unsafe extern "C" fn $name(a: *mut u128, $v: u128, _mo: i32) -> u128 {
            // SAFETY: `a` is an aligned 16-byte object (compiler contract); LOCK128 serialises.
            atomic(a as usize, 16, || with128(|| unsafe { let $o = a.read_volatile(); a.write_volatile($e); $o }))
        }
    )*};
}
atomic128_rmw! {
    __tsan_atomic128_exchange: |o, v| { let _ = o; v };
    __tsan_atomic128_fetch_add: |o, v| o.wrapping_add(v);
    __tsan_atomic128_fetch_sub: |o, v| o.wrapping_sub(v);
    __tsan_atomic128_fetch_and: |o, v| o & v;
    __tsan_atomic128_fetch_or: |o, v| o | v;
    __tsan_atomic128_fetch_xor: |o, v| o ^ v;
    __tsan_atomic128_fetch_nand: |o, v| !(o & v);
}
/// # Safety
/// Called by the compiler's instrumentation (its contract): `a` points to an aligned 16-byte
/// object.
#[no_mangle]
pub unsafe extern "C" fn __tsan_atomic128_load(a: *mut u128, _mo: i32) -> u128 {
    // SAFETY: as above.
    atomic(a as usize, 16, || with128(|| unsafe { a.read_volatile() }))
}
/// # Safety
/// Called by the compiler's instrumentation (its contract): `a` points to an aligned 16-byte
/// object.
#[no_mangle]
pub unsafe extern "C" fn __tsan_atomic128_store(a: *mut u128, v: u128, _mo: i32) {
    // SAFETY: as above.
    atomic(a as usize, 16, || {
        with128(|| unsafe {
            a.write_volatile(v);
            v
        })
    });
}
/// # Safety
/// Called by the compiler's instrumentation (its contract): `a` points to an aligned 16-byte
/// object.
#[no_mangle]
pub unsafe extern "C" fn __tsan_atomic128_compare_exchange_val(
    a: *mut u128,
    c: u128,
    v: u128,
    _mo: i32,
    _fmo: i32,
) -> u128 {
    // SAFETY: as above.
    atomic(a as usize, 16, || {
        with128(|| unsafe {
            let o = a.read_volatile();
            if o == c {
                a.write_volatile(v)
            };
            o
        })
    })
}
/// # Safety
/// Called by the compiler's instrumentation (its contract): `a` points to an aligned 16-byte
/// object and `c` to the expected value.
#[no_mangle]
pub unsafe extern "C" fn __tsan_atomic128_compare_exchange_strong(
    a: *mut u128,
    c: *mut u128,
    v: u128,
    mo: i32,
    fmo: i32,
) -> i32 {
    // SAFETY: `c` is the caller's expected-value slot.
    unsafe {
        let old = __tsan_atomic128_compare_exchange_val(a, *c, v, mo, fmo);
        if old == *c {
            1
        } else {
            *c = old;
            0
        }
    }
}
/// # Safety
/// Called by the compiler's instrumentation (its contract): `a` points to an aligned 16-byte
/// object and `c` to the expected value.
#[no_mangle]
pub unsafe extern "C" fn __tsan_atomic128_compare_exchange_weak(
    a: *mut u128,
    c: *mut u128,
    v: u128,
    mo: i32,
    fmo: i32,
) -> i32 {
    // SAFETY: as above.
    unsafe { __tsan_atomic128_compare_exchange_strong(a, c, v, mo, fmo) }
}

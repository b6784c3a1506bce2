//! Interposed pthread and semaphore calls: each is a safe point, and each acquisition is an
//! event on the stripe of the synchronisation object, so LEAP's vectors order locks exactly
//! as they order memory.
//!
//! The pattern, symmetric between the two sides:
//! * record: perform the real call, then take the turn (for blocking acquisitions: the real
//!   order of acquisition is the order of the turns, because the object is held meanwhile);
//!   or take the turn, then perform (posts, once, thread creation: holding the turn until the
//!   next safe point makes the turn order the real order).
//! * replay: take the turn first, then perform the real call, which can then only block
//!   briefly on a predecessor that already had its turn. Outcomes that depend on timing
//!   (trylock, timed waits, barrier serial thread, condition-variable wake-ups) are results:
//!   recorded, and returned from the trace in replay without asking the clock.
#![allow(unsafe_code)]
#![allow(missing_docs)]

use crate::access::{self, kind};
use crate::entry::enter;
use crate::leap;
use crate::real;
use crate::state::{self, Thread};
use core::ffi::{c_int, c_void};
use core::sync::atomic::Ordering;
use libc::{pthread_cond_t, pthread_mutex_t, pthread_rwlock_t, timespec};
use reprise_proto::*;

#[inline(always)]
pub(crate) fn replaying() -> bool {
    state::REPLAY.load(Ordering::Relaxed)
}

/// Take the turn on the stripe of synchronisation object `obj`.
pub fn take_obj(t: &mut Thread, obj: *const c_void, k: u64) {
    access::fold_pending(t);
    if crate::model::active() {
        let op = match k {
            kind::LOCK | kind::COND => reprise_core::Op::Acquire(obj as u64),
            kind::CREATE => {
                crate::model::event(t, || {
                    reprise_core::Op::Fork(state::NEXT_TID.load(Ordering::Relaxed))
                });
                access::count_event(t, 0, t.model_key, k);
                return;
            }
            _ => reprise_core::Op::Rmw(obj as u64 >> 3),
        };
        crate::model::event(t, || op);
        access::count_event(t, 0, t.model_key, k);
        return;
    }
    if k == kind::ONCE && state::strategy() == state::Strategy::Ownership {
        // Instrumented code reads a function-local static's guard inline (an atomic load)
        // while its acquire and release run uninstrumented in libstdc++: under ownership the
        // guard's granule must change owner with the calls too, or that load is unordered.
        // Same event number as the stripe's turn below (the edge gates this event in replay).
        ownership_take(t, obj as usize);
    }
    let s = object_stripe(obj as usize);
    let pos = leap::take(t, s);
    access::count_event(t, s as u64, pos, k);
}

/// The stripe of synchronisation object `obj`: by its address, but in sync mode by its heap
/// block's identity when it lies in one (`heap::stable_id`: its address may differ in replay).
fn object_stripe(obj: usize) -> u32 {
    match crate::preload::sync()
        .then(|| crate::heap::stable_id(obj))
        .flatten()
    {
        Some(id) => leap::stripe_of_granule(id as usize),
        None => leap::stripe_of_addr(obj),
    }
}

fn ownership_take(t: &mut Thread, addr: usize) {
    crate::ownership::access(t, &[(addr, 8 - (addr & 7), true)]);
}

/// Run a real call that may block, marked as blocked for the watchdogs: `on` (a `WAIT_*`) says
/// whether only another thread can end the wait, and on what `obj`.
pub(crate) fn blocking<R>(t: &Thread, on: u32, obj: usize, f: impl FnOnce() -> R) -> R {
    crate::ownership::set_free(t.sh());
    mark_blocked(t, on, obj);
    let r = f();
    let st = state::status(t.tid);
    st.state.store(ST_RUNNING, Ordering::SeqCst);
    st.waits_on.store(WAIT_NONE, Ordering::Relaxed);
    r
}

/// Publish, for the launcher, that `t` blocks in a wait `on` object `obj`.
fn mark_blocked(t: &Thread, on: u32, obj: usize) {
    let st = state::status(t.tid);
    st.events
        .store(t.sh().events.load(Ordering::Relaxed), Ordering::Relaxed);
    st.object.store(obj as u64, Ordering::Relaxed);
    st.waits_on.store(on, Ordering::Relaxed);
    st.state.store(ST_BLOCKED, Ordering::SeqCst);
}

/// A blocking acquisition (`lock`), with its try/timed variants as `attempt`.
pub(crate) unsafe fn acquire(obj: *const c_void, k: u64, lock: impl FnOnce() -> c_int) -> c_int {
    let Some(mut e) = enter() else { return lock() };
    let t = e.t();
    access::safe_point(t);
    if crate::model::active() {
        return model_acquire(t, obj, k, lock);
    }
    if replaying() {
        take_obj(t, obj, k);
        blocking(t, WAIT_LOCK, obj as usize, lock)
    } else {
        let r = blocking(t, WAIT_LOCK, obj as usize, lock);
        if r == 0 {
            take_obj(t, obj, k);
        }
        r
    }
}

/// A blocking acquisition under a model strategy: the model decides whose turn it is; the
/// real call blocks with the model's lock released.
pub(crate) fn model_acquire(
    t: &mut Thread,
    obj: *const c_void,
    k: u64,
    lock: impl FnOnce() -> c_int,
) -> c_int {
    access::fold_pending(t);
    let op = reprise_core::Op::Acquire(obj as u64);
    let tid = t.tid;
    let st = state::status(tid);
    let r = crate::model::blocking_event(t, op, || {
        st.state.store(ST_BLOCKED, Ordering::SeqCst);
        let r = lock();
        st.state.store(ST_RUNNING, Ordering::SeqCst);
        r
    });
    access::count_event(t, 0, t.model_key, k);
    r
}

/// An acquisition whose success depends on timing: `attempt` in record; in replay the
/// recorded result decides, and success is reproduced with the blocking `lock`.
pub(crate) unsafe fn attempt(
    obj: *const c_void,
    k: u64,
    attempt: impl FnOnce() -> c_int,
    lock: impl FnOnce() -> c_int,
) -> c_int {
    let Some(mut e) = enter() else {
        return attempt();
    };
    let t = e.t();
    access::safe_point(t);
    if replaying() {
        let r = access::result(t, None) as c_int;
        if r == 0 && crate::model::active() {
            model_acquire(t, obj, k, lock);
        } else if r == 0 {
            take_obj(t, obj, k);
            let r2 = blocking(t, WAIT_LOCK, obj as usize, lock);
            if r2 != 0 {
                access::diverge(t, t.sh().events.load(Ordering::Relaxed), format_args!("thread {} could not re-acquire a lock it acquired in the recording (error {r2})", t.tid));
            }
        }
        r
    } else {
        let r = blocking(t, WAIT_NONE, 0, attempt);
        access::result(t, Some(r as u32 as u64));
        if r == 0 {
            take_obj(t, obj, k);
        }
        r
    }
}

/// A release: just a safe point before the real call (whose wake-up `futex`, if any, then runs
/// untrapped: see [`crate::calls::untrap`]).
pub(crate) unsafe fn release(f: impl FnOnce() -> c_int) -> c_int {
    if let Some(mut e) = enter() {
        access::safe_point(e.t());
        crate::calls::untrap(e.t());
    }
    f()
}

/// A condition variable's signal or broadcast: in record a release (a safe point; its wake-up
/// then runs untrapped). In replay nothing: no thread waits on a real condition variable there
/// (a wait re-acquires its mutex at its recorded turn instead), so the call wakes nobody and
/// makes no system call; and the turn it would pass, usually the mutex's acquisition, stays
/// held to the unlock that follows, where the waiter due next then finds the mutex free. Still
/// a runtime entry, as in record: asynchronous signals are delivered at recorded entry counts.
unsafe fn signal(f: impl FnOnce() -> c_int) -> c_int {
    if replaying() && !crate::model::active() {
        let _entry = enter();
        return f();
    }
    unsafe { release(f) }
}

/// A lock release: a safe point; under a model strategy also the model's release event (whose
/// model stripe is held to the next safe point: the real call's system calls still trap).
///
/// Replay releases the real lock *before* passing the turn (the safe point): the thread whose
/// turn is next then finds the lock free, instead of sleeping on it a second time after its
/// turn wait (measured: a third of zstd's replay futex waits). The order of turns is the
/// recorded one either way; the real unlock never blocks.
unsafe fn release_obj(obj: *const c_void, f: impl FnOnce() -> c_int) -> c_int {
    if let Some(mut e) = enter() {
        let t = e.t();
        if replaying() && !crate::model::active() {
            // The last access is read before another thread may take the lock and write it.
            access::fold_pending(t);
            let r = f();
            access::safe_point(t);
            return r;
        }
        access::safe_point(t);
        if crate::model::active() {
            crate::model::event(t, || reprise_core::Op::Release(obj as u64));
            access::count_event(t, 0, t.model_key, kind::LOCK);
        } else {
            crate::calls::untrap(t);
        }
    }
    f()
}

// ---- mutexes ---------------------------------------------------------------------------------

/// # Safety
/// Called as libc's `pthread_mutex_lock` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
#[export_name = "reprise_pthread_mutex_lock"]
pub unsafe extern "C" fn pthread_mutex_lock(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY (all interposers): arguments are forwarded unchanged to the real function, whose
    // contract the caller upholds.
    unsafe { acquire(m.cast(), kind::LOCK, || real::pthread_mutex_lock(m)) }
}
/// # Safety
/// Called as libc's `pthread_mutex_trylock` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
#[export_name = "reprise_pthread_mutex_trylock"]
pub unsafe extern "C" fn pthread_mutex_trylock(m: *mut pthread_mutex_t) -> c_int {
    unsafe {
        attempt(
            m.cast(),
            kind::LOCK,
            || real::pthread_mutex_trylock(m),
            || real::pthread_mutex_lock(m),
        )
    }
}
/// # Safety
/// Called as libc's `pthread_mutex_timedlock` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
#[export_name = "reprise_pthread_mutex_timedlock"]
pub unsafe extern "C" fn pthread_mutex_timedlock(
    m: *mut pthread_mutex_t,
    ts: *const timespec,
) -> c_int {
    unsafe {
        attempt(
            m.cast(),
            kind::LOCK,
            || real::pthread_mutex_timedlock(m, ts),
            || real::pthread_mutex_lock(m),
        )
    }
}
/// # Safety
/// Called as libc's `pthread_mutex_unlock` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
#[export_name = "reprise_pthread_mutex_unlock"]
pub unsafe extern "C" fn pthread_mutex_unlock(m: *mut pthread_mutex_t) -> c_int {
    unsafe { release_obj(m.cast(), || real::pthread_mutex_unlock(m)) }
}

// ---- rwlocks and spinlocks ------------------------------------------------------------------

/// # Safety
/// Called as libc's `pthread_rwlock_rdlock` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
#[export_name = "reprise_pthread_rwlock_rdlock"]
pub unsafe extern "C" fn pthread_rwlock_rdlock(l: *mut pthread_rwlock_t) -> c_int {
    unsafe { acquire(l.cast(), kind::LOCK, || real::pthread_rwlock_rdlock(l)) }
}
/// # Safety
/// Called as libc's `pthread_rwlock_wrlock` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
#[export_name = "reprise_pthread_rwlock_wrlock"]
pub unsafe extern "C" fn pthread_rwlock_wrlock(l: *mut pthread_rwlock_t) -> c_int {
    unsafe { acquire(l.cast(), kind::LOCK, || real::pthread_rwlock_wrlock(l)) }
}
/// The rwlock acquisitions that may fail (try, timed; the clock forms are libstdc++'s
/// `shared_timed_mutex::try_lock_for`/`try_lock_shared_for` on the steady clock): each is an
/// [`attempt`] whose success is a recorded result, re-acquired for good in replay.
macro_rules! rwlock_attempts {
    ($($name:ident ( $($arg:ident : $t:ty),* ) => $lock:ident;)*) => {$(
        /// # Safety
        /// Called as libc's function of this name (through its weak stub), with its contract:
        /// every pointer argument valid as that function requires.
        #[export_name = concat!("reprise_", stringify!($name))]
        pub unsafe extern "C" fn $name(l: *mut pthread_rwlock_t $(, $arg: $t)*) -> c_int {
            unsafe { attempt(l.cast(), kind::LOCK, || real::$name(l $(, $arg)*), || real::$lock(l)) }
        }
    )*};
}
rwlock_attempts! {
    pthread_rwlock_tryrdlock() => pthread_rwlock_rdlock;
    pthread_rwlock_trywrlock() => pthread_rwlock_wrlock;
    pthread_rwlock_timedrdlock(ts: *const timespec) => pthread_rwlock_rdlock;
    pthread_rwlock_timedwrlock(ts: *const timespec) => pthread_rwlock_wrlock;
    pthread_rwlock_clockrdlock(clk: libc::clockid_t, ts: *const timespec) => pthread_rwlock_rdlock;
    pthread_rwlock_clockwrlock(clk: libc::clockid_t, ts: *const timespec) => pthread_rwlock_wrlock;
}
/// # Safety
/// Called as libc's `pthread_rwlock_unlock` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
#[export_name = "reprise_pthread_rwlock_unlock"]
pub unsafe extern "C" fn pthread_rwlock_unlock(l: *mut pthread_rwlock_t) -> c_int {
    unsafe { release_obj(l.cast(), || real::pthread_rwlock_unlock(l)) }
}
/// # Safety
/// Called as libc's `pthread_spin_lock` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
#[export_name = "reprise_pthread_spin_lock"]
pub unsafe extern "C" fn pthread_spin_lock(l: *mut c_int) -> c_int {
    unsafe { acquire(l.cast(), kind::LOCK, || real::pthread_spin_lock(l)) }
}
/// # Safety
/// Called as libc's `pthread_spin_trylock` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
#[export_name = "reprise_pthread_spin_trylock"]
pub unsafe extern "C" fn pthread_spin_trylock(l: *mut c_int) -> c_int {
    unsafe {
        attempt(
            l.cast(),
            kind::LOCK,
            || real::pthread_spin_trylock(l),
            || real::pthread_spin_lock(l),
        )
    }
}
/// # Safety
/// Called as libc's `pthread_spin_unlock` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
#[export_name = "reprise_pthread_spin_unlock"]
pub unsafe extern "C" fn pthread_spin_unlock(l: *mut c_int) -> c_int {
    unsafe { release_obj(l.cast(), || real::pthread_spin_unlock(l)) }
}

// ---- cancellation points: the real call is made by the C interposer ---------------------------
//
// A blocking call that is a cancellation point (condition and semaphore waits, joins, sleeps)
// may end the thread by glibc's forced unwind inside the real call, so the real call must be
// made from a C frame (`csrc/shim_threads.c`) with no Rust frame between it and the program. The
// C interposer calls a `_pre` step here, which answers what to do, then (PRE_CALL) makes the
// real call itself and hands its result to the `_post` step. The `_post` step continues the same
// runtime call (see [`resume`]): it is not a new runtime entry, since replay usually ends in
// `_pre` (PRE_DONE) and entries must count alike in both modes.

/// `_pre` answer: the runtime is off for this call; make the real call, nothing else.
pub const PRE_NATIVE: c_int = 0;
/// `_pre` answer: make the real call, then call the `_post` step with its result.
pub const PRE_CALL: c_int = 1;
/// `_pre` answer: the runtime did the call (replay); return the value it stored.
pub const PRE_DONE: c_int = 2;
/// `_pre` answer: the recorded thread was cancelled here; end the thread (replay).
pub const PRE_CANCEL: c_int = 3;

/// The thread is inside the runtime again, after the real call of a `_pre` step: like an
/// [`crate::entry::Entry`] (IN_RT set, system calls untrapped until it drops), without counting
/// a runtime entry or delivering signals.
pub struct Resumed {
    t: *mut Thread,
}

impl Resumed {
    /// The current thread's slot, borrowed from the guard: one `&mut` at a time.
    pub fn t(&mut self) -> &mut Thread {
        // SAFETY: the current thread's own slot; only this thread makes references to its
        // `Thread` (see `Entry::t`), and the `&mut self` borrow makes this the only one the
        // guard hands out while it lives.
        unsafe { &mut *self.t }
    }
}

impl Drop for Resumed {
    fn drop(&mut self) {
        state::IN_RT.with(|c| c.set(false));
        let t = self.t();
        crate::ownership::recompute(t);
        if t.sud_on && !t.sud_hold {
            t.sh().sud.store(crate::sud::BLOCK, Ordering::Relaxed);
        }
    }
}

/// Continue the runtime call whose `_pre` step returned PRE_CALL. Parks the thread if the
/// process started ending meanwhile (as [`enter`] does).
pub fn resume() -> Option<Resumed> {
    let m = state::mode();
    let t = state::cur();
    if t.is_null()
        || state::IN_RT.with(|c| c.get())
        || !(m == state::M_RECORD || m == state::M_REPLAY || m == state::M_DONE)
    {
        return None;
    }
    // SAFETY: the current thread's own slot.
    let th = unsafe { &mut *t };
    if th.passthrough {
        return None;
    }
    state::IN_RT.with(|c| c.set(true));
    if m == state::M_DONE {
        crate::threads::park_after_end(th);
        state::IN_RT.with(|c| c.set(false));
        return None;
    }
    th.sud_hold = false;
    if th.sud_on {
        th.sh().sud.store(crate::sud::ALLOW, Ordering::Relaxed);
    }
    Some(Resumed { t })
}

/// The thread is about to block in a real call made outside the runtime (for the watchdog);
/// system calls stay untrapped until then, as inside the runtime.
pub(crate) fn block_begin(t: &mut Thread, on: u32, obj: usize) {
    crate::ownership::set_free(t.sh());
    mark_blocked(t, on, obj);
    t.sud_hold = true;
}

/// The real call of [`block_begin`] returned.
pub(crate) fn block_end(t: &Thread) {
    let st = state::status(t.tid);
    st.state.store(ST_RUNNING, Ordering::SeqCst);
    st.waits_on.store(WAIT_NONE, Ordering::Relaxed);
}

// ---- condition variables ----------------------------------------------------------------------

/// Wait on a condition variable with mutex `m` (`timed`: with a timeout), before the real
/// wait. Record performs the real wait (in C) and records the mutex re-acquisition in `_post`
/// (and, for a timed wait, whether it timed out); replay never waits for real: it releases the
/// mutex and re-acquires it at its recorded turn, which already encodes the wake-up (signal,
/// broadcast, timeout or spurious, all alike), or the cancellation.
///
/// # Safety
/// `m` is the caller's mutex, locked by this thread; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn reprise_cond_wait_pre(
    m: *mut pthread_mutex_t,
    timed: c_int,
    out: *mut c_int,
) -> c_int {
    let Some(mut e) = enter() else {
        return PRE_NATIVE;
    };
    let t = e.t();
    access::safe_point(t);
    let model = crate::model::active();
    if model {
        // The wait releases the mutex and re-acquires it: a release event, then a blocking
        // acquisition (replay never waits on the real condition variable).
        crate::model::event(t, || reprise_core::Op::Release(m as u64));
        access::count_event(t, 0, t.model_key, kind::COND);
    }
    if replaying() {
        // SAFETY (this block): the caller's mutex, as the real wait would use it.
        unsafe { real::pthread_mutex_unlock(m) };
        let cancelled = crate::cancel::replayed_here(t);
        if model {
            model_acquire(t, m.cast(), kind::COND, || unsafe {
                real::pthread_mutex_lock(m)
            });
        } else {
            take_obj(t, m.cast(), kind::COND);
            blocking(t, WAIT_LOCK, m as usize, || unsafe {
                real::pthread_mutex_lock(m)
            });
        }
        if cancelled {
            return PRE_CANCEL;
        }
        let r = if timed == 0 {
            0
        } else {
            access::result(t, None) as c_int
        };
        unsafe { *out = r };
        return PRE_DONE;
    }
    if model {
        crate::leap::release_held(t);
    }
    block_begin(
        t,
        if timed == 0 { WAIT_COND } else { WAIT_NONE },
        m as usize,
    );
    PRE_CALL
}

/// The real wait of [`reprise_cond_wait_pre`] returned `r`: the re-acquisition's turn.
#[no_mangle]
pub extern "C" fn reprise_cond_wait_post(m: *mut pthread_mutex_t, timed: c_int, r: c_int) -> c_int {
    let Some(mut g) = resume() else { return r };
    let t = g.t();
    block_end(t);
    take_obj(t, m.cast(), kind::COND);
    if timed != 0 {
        access::result(t, Some(r as u32 as u64));
    }
    r
}

/// # Safety
/// Called as libc's `pthread_mutex_clocklock` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
#[export_name = "reprise_pthread_mutex_clocklock"]
pub unsafe extern "C" fn pthread_mutex_clocklock(
    m: *mut pthread_mutex_t,
    clk: libc::clockid_t,
    ts: *const timespec,
) -> c_int {
    unsafe {
        attempt(
            m.cast(),
            kind::LOCK,
            || real::pthread_mutex_clocklock(m, clk, ts),
            || real::pthread_mutex_lock(m),
        )
    }
}
/// # Safety
/// Called as libc's `pthread_cond_signal` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
#[export_name = "reprise_pthread_cond_signal"]
pub unsafe extern "C" fn pthread_cond_signal(c: *mut pthread_cond_t) -> c_int {
    unsafe { signal(|| real::pthread_cond_signal(c)) }
}
/// # Safety
/// Called as libc's `pthread_cond_broadcast` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
#[export_name = "reprise_pthread_cond_broadcast"]
pub unsafe extern "C" fn pthread_cond_broadcast(c: *mut pthread_cond_t) -> c_int {
    unsafe { signal(|| real::pthread_cond_broadcast(c)) }
}

/// # Safety
/// Called as libc's `munmap` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
#[export_name = "reprise_munmap"]
pub unsafe extern "C" fn munmap(a: *mut c_void, n: usize) -> c_int {
    if let Some(mut e) = enter() {
        // The pending access may lie in the range: fold it while it is still mapped.
        access::fold_pending(e.t());
    }
    unsafe { real::munmap(a, n) }
}

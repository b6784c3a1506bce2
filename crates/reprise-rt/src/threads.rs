//! Interposed thread calls: creation (ordered on one stripe, so thread ids are deterministic),
//! the start and end of each thread (the C trampoline calls in), joins (recorded outcomes for
//! the non-blocking and timed ones) and `pthread_kill`. The pattern is `sync`'s: see there.
#![allow(unsafe_code)]
#![allow(missing_docs)]

use crate::access::{self, kind};
use crate::entry::enter;
use crate::real;
use crate::state::{self, Thread};
use crate::sync::*;
use core::ffi::{c_int, c_void};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use libc::{pthread_attr_t, pthread_t};
use reprise_proto::*;

/// Address whose stripe orders thread creation (and so deterministic thread ids).
static CREATE_LOC: u64 = 0;

/// A new thread's first runtime step, called by the C trampoline (`reprise_trampoline` in
/// `csrc/shim_threads.c`) before the program's start routine: adopt the slot the parent prepared,
/// log the start, turn Syscall User Dispatch on. Returns the start routine; its argument goes
/// to `*arg`.
///
/// The trampoline is C, not Rust, because a thread may end by glibc's forced unwind
/// (`pthread_exit` at any depth, cancellation): the unwind must pass only through frames that
/// can be unwound, and a Rust frame (built with panic=abort) cannot. The thread's end
/// ([`reprise_thread_finish`]) runs from a cleanup in that C frame, on return and on unwind
/// alike, after the program's own cleanup handlers and destructors.
///
/// # Safety
/// Called by the C trampoline only, with the slot `pthread_create` prepared and a valid `arg`
/// out-pointer.
#[no_mangle]
pub unsafe extern "C" fn reprise_thread_begin(slot: *mut c_void, arg: *mut *mut c_void) -> usize {
    let t = slot as *mut Thread;
    state::set_cur(t);
    // SAFETY: the parent initialised this slot for us before creating the thread; arg is the
    // trampoline's out-slot.
    let th = unsafe { &mut *t };
    th.sh()
        .mb
        .ktid
        .store(crate::sys::gettid(), Ordering::Release);
    state::status(th.tid)
        .ktid
        .store(crate::sys::gettid(), Ordering::Relaxed);
    access::log_start(th);
    crate::rtstack::prepare(th);
    crate::sud::enable(th);
    unsafe { *arg = th.start_arg as *mut c_void };
    th.start_fn
}

/// The thread's start routine returned or its unwind (pthread_exit, cancellation) reached the
/// trampoline: the thread ends now.
#[no_mangle]
pub extern "C" fn reprise_thread_finish() {
    crate::lifecycle::thread_end();
}

/// `pthread_exit` (the C interposer in `csrc/shim_threads.c` calls this, then glibc's, which
/// unwinds): a safe point. A thread started through the trampoline ends when the unwind
/// reaches it; the main thread has none (see [`crate::lifecycle::main_unwinding`]).
#[no_mangle]
pub extern "C" fn reprise_pthread_exit_begin() {
    let Some(mut e) = enter() else { return };
    let t = e.t();
    access::safe_point(t);
    let main = t.tid == 0;
    drop(e);
    if main {
        crate::lifecycle::main_unwinding();
    }
}

extern "C" {
    /// The C trampoline every recorded thread starts in (`csrc/shim_threads.c`).
    fn reprise_trampoline(slot: *mut c_void) -> *mut c_void;
}

/// # Safety
/// Called as libc's `pthread_create` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
#[export_name = "reprise_pthread_create"]
pub unsafe extern "C" fn pthread_create(
    th: *mut pthread_t,
    attr: *const pthread_attr_t,
    f: extern "C" fn(*mut c_void) -> *mut c_void,
    arg: *mut c_void,
) -> c_int {
    let Some(mut e) = enter() else {
        return unsafe { real::pthread_create(th, attr, f, arg) };
    };
    let t = e.t();
    access::safe_point(t);
    take_obj(t, core::ptr::addr_of!(CREATE_LOC).cast(), kind::CREATE);
    // Under the creation turn, so ids follow the recorded creation order.
    let id = state::NEXT_TID.load(Ordering::Relaxed);
    if id as usize >= MAX_THREADS - 1 {
        crate::say!("more than {} threads: not supported", MAX_THREADS - 2);
        return libc::EAGAIN;
    }
    state::NEXT_TID.store(id + 1, Ordering::Relaxed);
    let child = state::slot(id);
    let nth = t.children;
    t.children += 1;
    // SAFETY: slot `id` is unused until this thread starts.
    unsafe {
        state::init_slot(child, id, t.tid, nth);
        (*child).start_fn = f as usize;
        (*child).start_arg = arg as usize;
    }
    // Stack from the thread's fixed window (glibc's stack cache reuse is racy).
    // SAFETY: pthread_attr_t is plain data; a bitwise copy is a valid attr that we never
    // destroy (so a shared cpuset extension is not freed twice).
    let mut a: pthread_attr_t = unsafe { core::mem::zeroed() };
    unsafe {
        if attr.is_null() {
            libc::pthread_attr_init(&mut a);
        } else {
            core::ptr::copy_nonoverlapping(attr, &mut a, 1);
        }
        let mut addr: *mut c_void = core::ptr::null_mut();
        let mut size: usize = 0;
        libc::pthread_attr_getstack(&a, &mut addr, &mut size);
        if addr.is_null() {
            let mut size = 0usize;
            libc::pthread_attr_getstacksize(&a, &mut size);
            if let Some(base) = crate::lifecycle::stack_window(id, size) {
                libc::pthread_attr_setstack(&mut a, base as *mut c_void, size);
            }
        }
    }
    let r = blocking(t, WAIT_NONE, 0, || unsafe {
        // SAFETY: the trampoline has the C start-routine ABI; it is a C function, so the
        // thread's forced unwind may pass through it.
        let tr: extern "C" fn(*mut c_void) -> *mut c_void = core::mem::transmute(
            reprise_trampoline as unsafe extern "C" fn(*mut c_void) -> *mut c_void,
        );
        real::pthread_create(th, &a, tr, child.cast())
    });
    if r == 0 {
        // SAFETY: th was filled by the successful real call. The child may run already: its
        // pthread_t goes to its shared part.
        state::shared(id)
            .pthread
            .store(unsafe { *th }, Ordering::Relaxed);
    }
    r
}

/// The model strategies' join operation of pthread `t`, if it is a recorded thread.
fn join_op(t: pthread_t) -> Option<reprise_core::Op> {
    if !crate::model::active() {
        return None;
    }
    let n = state::NEXT_TID.load(Ordering::Relaxed);
    (1..n)
        .find(|&i| state::shared(i).pthread.load(Ordering::Relaxed) == t)
        .map(reprise_core::Op::Join)
}

/// `pthread_join` (`timed` = 0) or `pthread_timedjoin_np` of `t`, before the real call (the C
/// interposer makes it). A timed join's outcome depends on timing: it is a result, and replay
/// reproduces a success with a blocking join.
///
/// # Safety
/// `ret` and `out` are the caller's out-slots (ret may be null).
#[no_mangle]
pub unsafe extern "C" fn reprise_join_pre(
    t: pthread_t,
    timed: c_int,
    ret: *mut *mut c_void,
    out: *mut c_int,
) -> c_int {
    if state::mode() == state::M_DONE && ending_thread_done() {
        // SAFETY: forwarded unchanged.
        if let Some(r) = unsafe { join_after_end(t, ret) } {
            // SAFETY: the caller's out-slot.
            unsafe { *out = r };
            return PRE_DONE;
        }
    }
    let Some(mut e) = enter() else {
        return PRE_NATIVE;
    };
    let th = e.t();
    access::safe_point(th);
    if crate::cancel::replayed_here(th) {
        return PRE_CANCEL;
    }
    if timed != 0 {
        if replaying() {
            let r = access::result(th, None) as u32 as c_int;
            if r == 0 {
                // SAFETY: forwarded unchanged.
                blocking(th, WAIT_NONE, 0, || unsafe { real::pthread_join(t, ret) });
            }
            // SAFETY: the caller's out-slot.
            unsafe { *out = r };
            return PRE_DONE;
        }
    } else if let Some(op) = join_op(t) {
        crate::model::blocking_begin(th, &op);
    }
    block_begin(
        th,
        if timed == 0 { WAIT_JOIN } else { WAIT_NONE },
        t as usize,
    );
    PRE_CALL
}

/// Set by the first join of a recorded thread made after the recorded end, or by a stopped
/// thread once the exit is stuck ([`RELEASE_AFTER_NS`]): from then on a thread stopped after
/// the end runs on natively (see [`park_after_end`]).
static RELEASED: AtomicU32 = AtomicU32::new(0);
/// Per thread id: parked by [`park_after_end`], so [`RELEASED`] wakes it.
static RELEASABLE: [AtomicBool; MAX_THREADS] = [const { AtomicBool::new(false) }; MAX_THREADS];

/// Nanoseconds after which threads stopped after the end run on by themselves: the process's
/// exit is stuck (its exit handlers wait for a lock a stopped thread holds, say), since it
/// normally ends them all well within this.
const RELEASE_AFTER_NS: u64 = 200_000_000;

/// When the ending thread sent the end (`lifecycle::finish`, monotonic ns; 0 before): the
/// stopped threads' time-out counts from here, never while the trace is still being sent.
static END_SENT_NS: AtomicU64 = AtomicU64::new(0);

/// Whether the ending thread has sent every record ([`end_sent`]).
pub fn end_was_sent() -> bool {
    END_SENT_NS.load(Ordering::SeqCst) != 0
}

/// The ending thread has sent every record: from now on the exit can only be stuck.
pub fn end_sent() {
    END_SENT_NS.store(crate::sys::now_ns().max(1), Ordering::SeqCst);
}

/// Let every thread stopped after the end run on ([`park_after_end`]).
fn release_all() {
    if RELEASED.swap(1, Ordering::SeqCst) == 0 {
        crate::sys::futex_wake(&RELEASED, i32::MAX);
    }
}

/// A thread's first runtime entry (or return from a blocking call) after the recorded end: it
/// stops there, because nothing it does now is recorded, until a join made after the end
/// releases the stopped threads ([`join_after_end`]); then it returns, passes through the
/// runtime from then on, and runs natively to its end. The caller has set `IN_RT` and clears
/// it after the return. If the process has not ended [`RELEASE_AFTER_NS`] after the end was
/// sent ([`end_sent`]), its exit is stuck on the stopped threads, and they are released.
pub fn park_after_end(th: &mut Thread) {
    crate::leap::release_held(th);
    crate::ownership::set_free(th.sh());
    let st = state::status(th.tid);
    let mine = &RELEASABLE[th.tid as usize];
    mine.store(true, Ordering::SeqCst);
    st.state.store(ST_AT_END, Ordering::SeqCst);
    while RELEASED.load(Ordering::SeqCst) == 0 {
        crate::sys::futex_wait_for(&RELEASED, 0, RELEASE_AFTER_NS);
        let sent = END_SENT_NS.load(Ordering::SeqCst);
        if sent != 0 && crate::sys::now_ns().saturating_sub(sent) >= RELEASE_AFTER_NS {
            release_all();
        }
    }
    // (`mine` stays set: a join that saw the thread parked waits for it to run on.)
    st.state.store(ST_RUNNING, Ordering::SeqCst);
    th.passthrough = true;
}

/// The current thread is the one that ended the recording, and it has sent the end: it runs
/// the process's exit handlers, passing through the runtime. Another thread (or the ending one
/// while it still sends the end, when a thread may hold a turn the end waits for) takes the
/// usual path: its runtime entry stops it.
fn ending_thread_done() -> bool {
    let t = state::cur();
    // SAFETY: the current thread's own slot, when it has one.
    !t.is_null() && unsafe { (*t).passthrough } && END_SENT_NS.load(Ordering::SeqCst) != 0
}

/// A join made after the recorded end (the process is exiting: its exit handlers run, and a
/// library's destructor may join its worker threads, as LLVM's OpenMP runtime does). Recorded
/// threads stop at their first runtime entry after the end ([`park_after_end`]), perhaps
/// holding a lock the joined thread needs, so a real join could never return. The first such
/// join releases every stopped thread to run natively to its end (what they do now is not
/// recorded, in record and replay alike). A thread stopped for good elsewhere (at its recorded
/// end in replay, or mid-transfer) cannot run on: a join of it succeeds at once, without the
/// real call (`*ret` null), and the process's exit ends it. Some(result) when the join is done
/// here, None to make the real join.
///
/// # Safety
/// `ret` is the caller's out-slot (may be null).
unsafe fn join_after_end(t: pthread_t, ret: *mut *mut c_void) -> Option<c_int> {
    let n = state::NEXT_TID.load(Ordering::Relaxed);
    let tid = (1..n).find(|&i| state::shared(i).pthread.load(Ordering::Relaxed) == t)?;
    release_all();
    loop {
        let s = state::status(tid).state.load(Ordering::SeqCst);
        // It reached park_after_end, which release_all lets run on (not a stop elsewhere).
        let parked = RELEASABLE[tid as usize].load(Ordering::SeqCst);
        if s == ST_EXITED || (parked && s != ST_AT_END) {
            // Ended before the end, or running natively now: the real join returns.
            return None;
        }
        if s == ST_AT_END && !parked {
            if !ret.is_null() {
                // SAFETY: the caller's out-slot.
                unsafe { *ret = core::ptr::null_mut() };
            }
            return Some(0);
        }
        // On its way to a stop (running to its next runtime entry, waiting for a turn,
        // blocked in a call), or released and not yet awake.
        crate::sys::sleep_ns(50_000);
    }
}

/// The real join of [`reprise_join_pre`] returned `r`.
#[no_mangle]
pub extern "C" fn reprise_join_post(t: pthread_t, timed: c_int, r: c_int) -> c_int {
    let Some(mut g) = resume() else { return r };
    let th = g.t();
    block_end(th);
    if timed != 0 {
        access::result(th, Some(r as u32 as u64));
    } else if let Some(op) = join_op(t) {
        crate::model::blocking_end(th, op);
        access::count_event(th, 0, th.model_key, kind::JOIN);
    }
    r
}

/// `pthread_tryjoin_np`: its outcome depends on timing: a result; replay reproduces a success
/// with a blocking join.
///
/// # Safety
/// Called as libc's `pthread_tryjoin_np` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
#[export_name = "reprise_pthread_tryjoin_np"]
pub unsafe extern "C" fn pthread_tryjoin_np(t: pthread_t, ret: *mut *mut c_void) -> c_int {
    let Some(mut e) = enter() else {
        return unsafe { real::pthread_tryjoin_np(t, ret) };
    };
    let th = e.t();
    access::safe_point(th);
    if replaying() {
        let r = access::result(th, None) as u32 as c_int;
        if r == 0 {
            // SAFETY: forwarded unchanged.
            blocking(th, WAIT_NONE, 0, || unsafe { real::pthread_join(t, ret) });
        }
        r
    } else {
        // SAFETY: forwarded unchanged.
        let r = blocking(th, WAIT_NONE, 0, || unsafe {
            real::pthread_tryjoin_np(t, ret)
        });
        access::result(th, Some(r as u32 as u64));
        r
    }
}
/// # Safety
/// Called as libc's `pthread_kill` (through its weak stub), with its contract: every pointer
/// argument valid as that function requires.
#[export_name = "reprise_pthread_kill"]
pub unsafe extern "C" fn pthread_kill(t: pthread_t, sig: c_int) -> c_int {
    if let Some(mut e) = enter() {
        access::safe_point(e.t());
    }
    unsafe { real::pthread_kill(t, sig) }
}

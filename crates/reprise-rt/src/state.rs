//! Global and per-thread runtime state: the mode, the replay schedule mapped from the config
//! memfd, the thread table (indexed by deterministic thread id) and the thread-local pointer
//! to the current thread's slot.
#![allow(unsafe_code)]

use crate::layout::*;
use crate::sys;
use core::cell::Cell;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use reprise_proto::*;

/// Runtime mode: not initialised, off (program run without reprise), record, replay.
pub const M_UNINIT: u32 = 0;
/// Program runs natively: callbacks do nothing.
pub const M_OFF: u32 = 1;
/// Recording.
pub const M_RECORD: u32 = 2;
/// Replaying.
pub const M_REPLAY: u32 = 3;
/// The process is ending: the finishing thread passes through, every other thread parks.
pub const M_DONE: u32 = 4;
static MODE: AtomicU32 = AtomicU32::new(M_UNINIT);
static INIT_STATE: AtomicU32 = AtomicU32::new(0);
/// Whether the runtime was active (record or replay) at start.
pub static REPLAY: AtomicBool = AtomicBool::new(false);
/// Digest checkpoint interval.
pub static CHECKPOINT: AtomicU64 = AtomicU64::new(4096);
/// Replay jitter seed (0 = off).
pub static JITTER: AtomicU64 = AtomicU64::new(0);
/// Next deterministic thread id (incremented under the thread-creation stripe's turn).
pub static NEXT_TID: AtomicU32 = AtomicU32::new(1);
/// Thread id of the thread that is ending the process.
pub static FINISHER: AtomicU32 = AtomicU32::new(u32::MAX);

/// Current mode.
#[inline(always)]
pub fn mode() -> u32 {
    MODE.load(Ordering::Relaxed)
}

/// Set the mode.
pub fn set_mode(m: u32) {
    MODE.store(m, Ordering::SeqCst)
}

/// Bytes of a thread's log buffer.
pub const LOG_BUF: usize = 16 * 1024;

/// The strategy, chosen once at start-up from the config flags.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u32)]
pub enum Strategy {
    /// LEAP (seed 001): per-stripe access vectors.
    Leap = 0,
    /// AggrePlay or TPLAY through the reprise-core models.
    Model = 1,
    /// Ownership: edges when a granule changes owner.
    Ownership = 2,
}
static STRATEGY: AtomicU32 = AtomicU32::new(0);

/// The strategy of this run.
#[inline(always)]
pub fn strategy() -> Strategy {
    match STRATEGY.load(Ordering::Relaxed) {
        1 => Strategy::Model,
        2 => Strategy::Ownership,
        _ => Strategy::Leap,
    }
}

/// The ownership protocol's per-thread mailbox: written by other threads (requests) and read
/// by them (acknowledgements, the free state), so it sits on its own cache line, away from
/// the fields the thread writes at every event.
#[repr(C, align(64))]
#[derive(Default)]
pub struct Mailbox {
    /// Another thread requests a granule this thread owns (answered at the next safe point).
    pub req: AtomicU32,
    /// The thread is at a safe point outside instrumented code (blocked in the runtime, in a
    /// system call, not started, exited, parked): requests are granted without an answer, with
    /// `done` as the edge source. Left only through a slow runtime entry.
    pub free: AtomicU32,
    /// Answers given so far (a requester waits for it to change).
    pub ack_seq: AtomicU64,
    /// Completed events at the last answer.
    pub ack_done: AtomicU64,
    /// Completed events at the last safe point (both modes; replay waits on it too).
    pub done: AtomicU64,
    /// Kernel thread id (0 until the thread runs): where handover signals go.
    pub ktid: AtomicU32,
    /// This thread's registered request (`handover::ask`): owner + 1, serial, shadow slot.
    pub want: AtomicU64,
    /// The owner's grant from its handover handler: serial and completed events + 1.
    pub grant: AtomicU64,
    /// Bumped (and futex-woken) when the owner this thread waits for answers, turns free or
    /// grants from its handler.
    pub wake: AtomicU32,
    /// The thread sleeps on `wake` (a request to it must wake it).
    pub sleeping: AtomicU32,
    /// Requesters registered (`want`) for this thread's granules: when none is, answering and
    /// turning free skip the scan of every thread's `want` (`handover::wake_requesters`).
    pub askers: AtomicU32,
}

/// Per-thread runtime state, one slot per deterministic thread id at a fixed address.
#[repr(C)]
pub struct Thread {
    /// Events performed (stripe turns taken, or accesses under ownership). Published with
    /// release ordering: a replaying thread waits for another's count to pass an edge source.
    pub events: AtomicU64,
    /// Ownership fast path: an access whose event number is below this takes the fast path;
    /// every rare condition (checkpoint due, next replay edge, request pending, signal, held
    /// stripe, jitter, other strategies: 0) lowers it. Written by other threads only to 0.
    pub fast_limit: AtomicU64,
    /// Ownership record: the access whose callback ran last and which may still be pending
    /// (`handover::pend`), for the handover signal's handler.
    pub pend: AtomicU64,
    /// Ownership: this thread's exclusive-owner code in the shadow (tid + 1).
    pub own_me: u32,
    /// Ownership: read-shared epochs this thread may read without synchronising.
    pub rdsh_seen: u32,
    /// Ownership: true in replay (the fast path then consults no shadow).
    pub own_replay: bool,
    /// Order-sensitive digest of (stripe, position, kind, value).
    pub digest: u64,
    /// Nonzero once the thread's final checkpoint was logged (by itself at its end, or by the
    /// thread that ends the process): claimed with a compare-exchange, so it is logged once.
    pub final_claim: AtomicU32,
    /// Model strategies: the order-bearing key of the thread's last model event
    /// (`model::order_key`), folded by its `count_event`.
    pub model_key: u64,
    /// Record: the launcher's flush epoch this thread last acted on (`leap::periodic_flush`).
    pub seen_epoch: u32,
    /// Runtime entries so far (the position of asynchronous signal deliveries) minus events
    /// (wrapping): a fast-path callback is both an entry and an event, so it changes neither
    /// this nor anything but the event counter. See [`Thread::entries`].
    pub entry_bias: u64,
    /// Events per kind (`access::kind`), reported at the thread's end for `reprise bench`.
    pub kinds: [u64; KINDS],
    /// Ownership replay: index of the next incoming edge.
    pub next_edge: usize,
    /// Ownership record: serial of this thread's last handover request.
    pub want_serial: u64,
    /// Ownership: requests and answers.
    pub mb: Mailbox,
    /// Deterministic id.
    pub tid: u32,
    /// Stripe held since the last access (or NO_STRIPE); see `held_multi`.
    pub held: u32,
    /// True when a ranged access holds every stripe set in `multi`.
    pub held_multi: bool,
    /// After the process started ending, the finishing thread runs without the runtime.
    pub passthrough: bool,
    /// Event number of the next digest checkpoint (0: not computed yet).
    pub next_ckpt: u64,
    /// Access whose value is folded into the digest at the next safe point.
    pub pending_addr: usize,
    /// Size of the pending access (0: none).
    pub pending_size: usize,
    /// Parent's id.
    pub parent: u32,
    /// Birth order among the parent's children.
    pub nth: u32,
    /// Children created so far.
    pub children: u32,
    /// Replay cursors into this thread's recorded results and digests (results atomic: the
    /// thread that takes a replayed end reads every thread's, see `replay_end_reached`).
    pub next_result: core::sync::atomic::AtomicUsize,
    /// See `next_result`.
    pub next_digest: usize,
    /// Replay cursor (bytes) into this thread's recorded input data.
    pub next_data: usize,
    /// Record: asynchronous signals caught and not yet delivered (bit per signal).
    pub sig_pending: AtomicU64,
    /// Replay: entry index of the next recorded delivery (u64::MAX: none).
    pub next_sig_at: u64,
    /// Replay cursor into this thread's recorded deliveries.
    pub next_sig: usize,
    /// Syscall User Dispatch selector: 0 allow, 1 trap (set when the thread leaves the runtime).
    pub sud: core::sync::atomic::AtomicU8,
    /// Whether Syscall User Dispatch is on for this thread.
    pub sud_on: bool,
    /// Leave system calls untrapped until the next runtime entry: the thread performs an
    /// ordered libc call (stdio) whose turn must last until the call is complete, even if it
    /// blocks on glibc's own lock inside.
    pub sud_hold: bool,
    /// Jitter PRNG state.
    pub rng: u64,
    /// The thread's pthread_t (for joins under a model strategy).
    pub pthread: u64,
    /// Start routine and argument of a created thread.
    pub start_fn: usize,
    /// See `start_fn`.
    pub start_arg: usize,
    /// Stripes held by a ranged access.
    pub multi: [u64; STRIPES / 64],
    /// Words of `multi` that may have bits set: `[multi_lo, multi_hi)`.
    pub multi_lo: usize,
    /// See `multi_lo`.
    pub multi_hi: usize,
}

impl Thread {
    /// Runtime entries so far: every callback and interposer the thread entered.
    #[inline(always)]
    pub fn entries(&self) -> u64 {
        self.events
            .load(core::sync::atomic::Ordering::Relaxed)
            .wrapping_add(self.entry_bias)
    }
}

/// Size of one slot in the thread table.
pub const THREAD_SLOT: u64 = (LOG_OFF + core::mem::size_of::<Log>() as u64 + 4095) & !4095;

/// Where a slot's [`Log`] starts: after its [`Thread`], outside it, so that the periodic
/// flush and the ending thread reach another thread's log without a reference to its
/// `Thread` (which its owner holds as `&mut` while inside the runtime).
const LOG_OFF: u64 = (core::mem::size_of::<Thread>() as u64 + 63) & !63;

/// A thread's record log: appended to by the thread, flushed by it or by another thread (the
/// periodic flush, the ending thread), always under `lock`.
pub struct Log {
    lock: AtomicU32,
    buf: core::cell::UnsafeCell<LogBuf>,
}

/// The frame under construction: header, tid, records.
pub struct LogBuf {
    /// Bytes used in `bytes` after the frame header and tid.
    pub len: usize,
    /// Header, tid, records.
    pub bytes: [u8; LOG_BUF],
}

// SAFETY: `buf` is reached only through `Log::with`, under `lock`.
unsafe impl Sync for Log {}

impl Log {
    /// Run `f` on the buffer with the lock held (a spin lock: holders never block).
    pub fn with<R>(&self, f: impl FnOnce(&mut LogBuf) -> R) -> R {
        while self
            .lock
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            core::hint::spin_loop();
        }
        // SAFETY: the lock is held: this is the only reference to the buffer until it is
        // released below (`f` cannot reach `with` of the same log again: the runtime never
        // nests log operations).
        let r = f(unsafe { &mut *self.buf.get() });
        self.lock.store(0, Ordering::Release);
        r
    }
}

/// The log of thread `tid` (its slot's, mapped at init for every id, zeroed: an empty log).
#[inline(always)]
pub fn log(tid: u32) -> &'static Log {
    // SAFETY: the thread table is mapped at init for MAX_THREADS slots and never unmapped; a
    // `Log` lies at LOG_OFF in each (inside THREAD_SLOT, outside the `Thread`), all-zero bytes
    // are a valid empty `Log`, and it is only shared (`Log` is Sync: its buffer is behind its
    // lock).
    unsafe { &*((THREADS_ADDR + tid as u64 * THREAD_SLOT + LOG_OFF) as *const Log) }
}

/// What `CUR` holds for a thread without a slot: an all-zero `Thread` (a valid one: slots are
/// zero-filled mappings too) whose `fast_limit` of 0 sends every access of such a thread down
/// the slow path, so the fast path needs no null check. Never written (only [`cur_or_idle`]'s
/// callers read it, and only its atomics, before the fast path's limit check fails).
struct Idle(core::cell::UnsafeCell<core::mem::MaybeUninit<Thread>>);
// SAFETY: nothing writes the idle thread; its readers load atomics only.
unsafe impl Sync for Idle {}
static IDLE: Idle = Idle(core::cell::UnsafeCell::new(core::mem::MaybeUninit::zeroed()));
const IDLE_PTR: *mut Thread = IDLE.0.get().cast();

thread_local! {
    static CUR: Cell<*mut Thread> = const { Cell::new(IDLE_PTR) };
    /// True while runtime code runs on this thread (memory wrappers then pass through).
    pub static IN_RT: Cell<bool> = const { Cell::new(false) };
}

/// The current thread's slot, or null.
#[inline(always)]
pub fn cur() -> *mut Thread {
    let t = cur_or_idle();
    if t == IDLE_PTR {
        core::ptr::null_mut()
    } else {
        t
    }
}

/// The current thread's slot, or the idle thread (all zero, never written) when it has none:
/// for the fast path, whose limit check then fails without a null check.
#[inline(always)]
pub fn cur_or_idle() -> *mut Thread {
    CUR.with(|c| c.get())
}

/// Set the current thread's slot (null: none).
pub fn set_cur(t: *mut Thread) {
    CUR.with(|c| c.set(if t.is_null() { IDLE_PTR } else { t }))
}

/// Slot of thread `tid`.
#[inline(always)]
pub fn slot(tid: u32) -> *mut Thread {
    (THREADS_ADDR + tid as u64 * THREAD_SLOT) as *mut Thread
}

/// Status slot of thread `tid` in the shared watchdog region.
#[inline(always)]
pub fn status(tid: u32) -> &'static ThreadStatus {
    // SAFETY: the status region is mapped at init for MAX_THREADS slots and never unmapped;
    // ThreadStatus is all atomics, so shared access is sound.
    unsafe { &*((STATUS_ADDR as usize + status_slot_off(tid as usize)) as *const ThreadStatus) }
}

/// Status header.
pub fn status_header() -> &'static StatusHeader {
    // SAFETY: as for `status`.
    unsafe { &*(STATUS_ADDR as *const StatusHeader) }
}

/// Replay schedule, read from the config mapping.
pub struct Schedule {
    /// Config header.
    pub hdr: *const ConfigHeader,
}

static CONFIG_LEN: AtomicUsize = AtomicUsize::new(0);

/// The config header (valid after init in record or replay mode).
#[inline(always)]
pub fn config() -> &'static ConfigHeader {
    // SAFETY: mapped read-only at init before the mode leaves M_UNINIT; never unmapped.
    unsafe { &*(CONFIG_ADDR as *const ConfigHeader) }
}

/// The recorded access vector of stripe `s` (replay).
#[inline(always)]
pub fn vector(s: u32) -> &'static [VecEntry] {
    let c = config();
    // SAFETY: the launcher wrote STRIPES indices and entries inside the mapping; bounds were
    // checked in `validate_config` at init.
    unsafe {
        let idx = &*((CONFIG_ADDR + c.stripe_index_off) as *const StripeIndex).add(s as usize);
        core::slice::from_raw_parts((CONFIG_ADDR + idx.off) as *const VecEntry, idx.len as usize)
    }
}

/// Recorded index of thread `tid` (replay), or None when the recording had no such thread.
pub fn thread_index(tid: u32) -> Option<&'static ThreadIndex> {
    let c = config();
    if tid >= c.nthreads {
        return None;
    }
    // SAFETY: bounds checked at init by validate_config.
    Some(unsafe { &*((CONFIG_ADDR + c.thread_index_off) as *const ThreadIndex).add(tid as usize) })
}

/// A recorded (event, value) list of the config.
pub fn pairs(off: u64, len: u64) -> &'static [Pair] {
    // SAFETY: bounds checked at init by validate_config.
    unsafe { core::slice::from_raw_parts((CONFIG_ADDR + off) as *const Pair, len as usize) }
}

fn validate_config(size: usize) -> Result<(), &'static str> {
    CONFIG_LEN.store(size, Ordering::Relaxed);
    // SAFETY: the config memfd is mapped read-only at CONFIG_ADDR for `size` bytes (init
    // mapped it before calling this) and never unmapped or written.
    let bytes = unsafe { core::slice::from_raw_parts(CONFIG_ADDR as *const u8, size) };
    reprise_proto::check_config(bytes)
}

/// Initialise the runtime once; safe to call from any entry point. Returns the mode.
#[cold]
pub fn init() -> u32 {
    match INIT_STATE.compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => {}
        Err(_) => return mode(), // running (re-entrant malloc from dlsym) or done
    }
    let _e = sys::ErrnoGuard::new();
    let m = init_inner();
    set_mode(m);
    INIT_STATE.store(2, Ordering::Release);
    if m == M_RECORD || m == M_REPLAY {
        crate::lifecycle::after_init();
    }
    m
}

/// Read, check and map the config (fd 1000) and set up the main thread; the mode to run in.
// Over 80 lines: the runtime's start-up, in order (the config's size and checks, its mapping,
// then the main thread's slot); each step uses what the one before mapped.
fn init_inner() -> u32 {
    let Some(size) = sys::fd_size(FD_CONFIG) else {
        return M_OFF;
    };
    let size = size as usize;
    if size == 0 || size as u64 > CONFIG_MAX {
        return M_OFF;
    }
    if sys::mmap_fixed(CONFIG_ADDR, size as u64, libc::PROT_READ, FD_CONFIG, false).is_err() {
        crate::say!("cannot map the config; running without recording");
        return M_OFF;
    }
    if let Err(why) = validate_config(size) {
        crate::say!("bad config ({why}); running without recording");
        return M_OFF;
    }
    let rw = libc::PROT_READ | libc::PROT_WRITE;
    if sys::mmap_fixed(STATUS_ADDR, STATUS_SIZE as u64, rw, FD_STATUS, true).is_err()
        || sys::mmap_fixed(
            THREADS_ADDR,
            THREAD_SLOT * MAX_THREADS as u64,
            rw,
            -1,
            false,
        )
        .is_err()
        || sys::mmap_fixed(STRIPES_ADDR, crate::leap::STRIPE_TABLE_SIZE, rw, -1, false).is_err()
    {
        crate::say!("cannot reserve the runtime's address region; running without recording");
        return M_OFF;
    }
    let c = config();
    if c.flags & FLAG_SYNC != 0 {
        crate::preload::SYNC.store(true, Ordering::Relaxed);
        crate::preload::hide_ld_preload();
    }
    let strategy = if c.flags & FLAG_OWNERSHIP != 0 {
        Strategy::Ownership
    } else if c.flags & FLAGS_MODEL != 0 {
        Strategy::Model
    } else {
        Strategy::Leap
    };
    STRATEGY.store(strategy as u32, Ordering::Relaxed);
    if strategy == Strategy::Ownership
        && sys::mmap_fixed(SHADOW_ADDR, crate::ownership::SHADOW_SIZE, rw, -1, false).is_err()
    {
        crate::say!("cannot reserve the ownership shadow; running without recording");
        return M_OFF;
    }
    let log: &[u8] = if c.model_len > 0
        && c.model_off
            .checked_add(c.model_len)
            .is_some_and(|e| e <= size as u64)
    {
        // SAFETY: bounds just checked against the mapping.
        unsafe {
            core::slice::from_raw_parts(
                (CONFIG_ADDR + c.model_off) as *const u8,
                c.model_len as usize,
            )
        }
    } else {
        &[]
    };
    if let Err(why) = crate::model::init(c.flags, log, c.mode == Mode::Replay as u32) {
        crate::say!("{why}");
        sys::exit_group(125);
    }
    CHECKPOINT.store(c.checkpoint_interval, Ordering::Relaxed);
    JITTER.store(c.jitter_seed, Ordering::Relaxed);
    let replay = c.mode == Mode::Replay as u32;
    REPLAY.store(replay, Ordering::Relaxed);
    // The main thread is thread 0.
    let t = slot(0);
    // SAFETY: the slot is freshly mapped zeroed memory owned by this (main) thread.
    unsafe { init_slot(t, 0, 0, 0) };
    set_cur(t);
    // SAFETY: the slot just initialised.
    unsafe { (*t).mb.ktid.store(sys::gettid(), Ordering::Release) };
    status(0).ktid.store(sys::gettid(), Ordering::Relaxed);
    if replay {
        M_REPLAY
    } else {
        M_RECORD
    }
}

/// Initialise slot `t` for thread `tid`.
///
/// # Safety
/// `t` is the mapped slot of `tid` and no other thread uses it yet.
pub unsafe fn init_slot(t: *mut Thread, tid: u32, parent: u32, nth: u32) {
    // SAFETY: per the function contract.
    let th = unsafe { &mut *t };
    th.tid = tid;
    th.held = NO_STRIPE;
    th.held_multi = false;
    th.parent = parent;
    th.nth = nth;
    th.digest = 0xcbf2_9ce4_8422_2325 ^ tid as u64;
    // Wrapping: a seed mixer, not a count (a debug build checks overflow).
    th.rng = JITTER.load(Ordering::Relaxed) ^ (tid as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    th.final_claim.store(0, Ordering::Relaxed);
    th.seen_epoch = 0;
    log(tid).with(|l| l.len = 0);
    th.entry_bias = 0;
    th.next_ckpt = 0;
    th.kinds = [0; KINDS];
    th.next_sig = 0;
    th.next_sig_at = u64::MAX;
    th.own_me = tid + 1;
    th.rdsh_seen = 0;
    th.own_replay = REPLAY.load(Ordering::Relaxed);
    th.next_edge = 0;
    // Not started yet: no access in flight, so requests are granted without an answer.
    th.mb.done.store(0, Ordering::Relaxed);
    th.mb.free.store(1, Ordering::SeqCst);
    th.fast_limit.store(0, Ordering::SeqCst);
    if REPLAY.load(Ordering::Relaxed) {
        if let Some(ti) = thread_index(tid) {
            if let Some(p) = pairs(ti.signals_off, ti.signals_len).first() {
                th.next_sig_at = p.event;
            }
        }
    }
    status(tid).state.store(ST_RUNNING, Ordering::Relaxed);
    status(tid).stripe.store(NO_STRIPE, Ordering::Relaxed);
    status_header()
        .nthreads
        .fetch_max(tid + 1, Ordering::Relaxed);
}

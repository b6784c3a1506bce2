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

use crate::slot::PRIV_OFF;
pub use crate::slot::{Mailbox, Mine, Shared, Thread, Word};

/// Size of one slot in the thread table.
pub const THREAD_SLOT: u64 = (LOG_OFF + core::mem::size_of::<Log>() as u64 + 4095) & !4095;

/// Where a slot's [`Log`] starts: after its [`Thread`], outside it, so that the periodic
/// flush and the ending thread reach another thread's log without a reference to its
/// `Thread` (which its owner holds as `&mut` while inside the runtime).
const LOG_OFF: u64 = ((PRIV_OFF + core::mem::size_of::<Thread>()) as u64 + 63) & !63;

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

/// What `reprise_cur` holds for a thread without a slot: an all-zero [`Shared`] part (a valid one:
/// slots are zero-filled mappings too) whose `fast_limit` of 0 sends every access of such a
/// thread down the slow path, so the fast path needs no null check. Written once at start-up
/// ([`init`]: `own_general`, so that callbacks take the gate that stores nothing; with held
/// granules on, a callback may still store its pending word there, read by nobody); it has
/// no private part ([`cur`] says null for it).
struct Idle(core::cell::UnsafeCell<core::mem::MaybeUninit<Shared>>);
// SAFETY: nothing writes the idle thread; its readers load atomics only.
unsafe impl Sync for Idle {}
static IDLE: Idle = Idle(core::cell::UnsafeCell::new(core::mem::MaybeUninit::zeroed()));
const IDLE_PTR: *const Shared = IDLE.0.get().cast();

// The current thread's slot (its `Shared` part, at the slot's start), or the idle one: a
// thread-local word of the initial-exec model (`reprise_cur`), read by the access callbacks
// with two instructions and no call. Rust's `thread_local!` in this position-independent
// archive takes the general-dynamic model: a call to `__tls_get_addr` (relaxed by the linker,
// but the callback still saves a register around it). Initial-exec links into the program and
// into the sync-mode `.so` alike (loaded at start-up, so its TLS is static).
core::arch::global_asm!(
    ".pushsection .tdata,\"awT\",@progbits",
    ".p2align 3",
    ".globl reprise_cur",
    ".hidden reprise_cur",
    ".type reprise_cur, @object",
    ".size reprise_cur, 8",
    "reprise_cur:",
    ".quad {idle}",
    ".popsection",
    idle = sym IDLE,
);

thread_local! {
    /// True while runtime code runs on this thread (memory wrappers then pass through).
    pub static IN_RT: Cell<bool> = const { Cell::new(false) };
}

/// Runtime work on a program's call made outside [`crate::entry::enter`] (no entry counted):
/// `IN_RT` set while the guard lives, so the copies the compiler makes there (`memcpy` and
/// `memset`, in a `reprise cc` link the `--wrap`ped ones, the program's ranged accesses) are
/// not taken for the program's accesses: they counted as its events and folded the bytes
/// copied, uninitialised ones included, into its digest. The fences keep the compiler from
/// moving or dropping the flag's stores around those copies, whose intrinsics it believes
/// cannot read the flag.
pub struct RtGuard(bool);
impl RtGuard {
    /// Set `IN_RT` until the guard drops (then restore what it was).
    #[inline(always)]
    pub fn new() -> Self {
        let was = IN_RT.with(|c| c.replace(true));
        core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
        RtGuard(was)
    }
}
impl Default for RtGuard {
    fn default() -> Self {
        Self::new()
    }
}
impl Drop for RtGuard {
    #[inline(always)]
    fn drop(&mut self) {
        core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
        let was = self.0;
        IN_RT.with(|c| c.set(was));
    }
}

/// The current thread's private part, or null.
#[inline(always)]
pub fn cur() -> *mut Thread {
    let t = cur_or_idle();
    if t == IDLE_PTR {
        core::ptr::null_mut()
    } else {
        (t as usize + PRIV_OFF) as *mut Thread
    }
}

/// The current thread's shared part, or the idle thread's (all zero, never written) when it
/// has no slot: for the fast path, whose limit check then fails without a null check.
#[inline(always)]
pub fn cur_or_idle() -> *const Shared {
    let p: *const Shared;
    // SAFETY: reads this thread's `reprise_cur` word (defined above: 8 bytes of static TLS,
    // initialised to the idle part, written only by `set_cur` on the same thread).
    unsafe {
        core::arch::asm!(
            "movq reprise_cur@gottpoff(%rip), {p}",
            "movq %fs:({p}), {p}",
            p = out(reg) p,
            options(att_syntax, nostack, preserves_flags, readonly, pure),
        );
    }
    p
}

/// Set the current thread's slot from its private part (null: none).
pub fn set_cur(t: *mut Thread) {
    let v = if t.is_null() {
        IDLE_PTR
    } else {
        (t as usize - PRIV_OFF) as *const Shared
    };
    // SAFETY: writes this thread's own `reprise_cur` word (see `cur_or_idle`).
    unsafe {
        core::arch::asm!(
            "movq reprise_cur@gottpoff(%rip), {o}",
            "movq {v}, %fs:({o})",
            o = out(reg) _,
            v = in(reg) v,
            options(att_syntax, nostack, preserves_flags),
        );
    }
}

/// Private part of thread `tid`'s slot (only the thread itself, or its creator before it
/// starts, may use it).
#[inline(always)]
pub fn slot(tid: u32) -> *mut Thread {
    (THREADS_ADDR + tid as u64 * THREAD_SLOT + PRIV_OFF as u64) as *mut Thread
}

/// Shared part of thread `tid`'s slot (any thread may use it).
#[inline(always)]
pub fn shared(tid: u32) -> &'static Shared {
    // SAFETY: the thread table is mapped at init for MAX_THREADS slots and never unmapped;
    // each starts with its `Shared` part, all atomics (all-zero bytes are a valid value), never
    // covered by a `&mut` (the owner's `&mut Thread` covers the private part after it).
    unsafe { &*((THREADS_ADDR + tid as u64 * THREAD_SLOT) as *const Shared) }
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
    // The idle part takes the callbacks' general path (replay's gate: loads only). The record
    // gate stores the pending word first, and every thread without a slot stored into the
    // one idle line: a binary of `reprise cc` run outside `reprise record` (every thread
    // idle) ran 2.8 times slower than recorded (radix `-t 2`: 137 ms against 49; minimap2
    // 2.1 s against 0.8), its line bouncing between the cores.
    // SAFETY: start-up, before the program creates a thread: no other thread reads the idle
    // part's `Mine` fields yet, and no reference to the value is live.
    unsafe { (*IDLE_PTR).own_general.set(true) };
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
#[allow(clippy::too_many_lines)]
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
        // 8 TiB of address space (committed on touch): only a limit on virtual memory
        // (`ulimit -v`, as on some batch clusters) refuses it, as it refuses ThreadSanitizer.
        crate::say!(
            "cannot reserve the ownership shadow (8 TiB of address space, committed on touch): is virtual memory limited (`ulimit -v`)? Lift the limit, or record with `--strategy leap`; running without recording"
        );
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
    crate::ownership::held::enable(
        strategy == Strategy::Ownership && c.checkpoint_interval != 1 && c.flags & FLAG_HELD != 0,
    );
    JITTER.store(c.jitter_seed, Ordering::Relaxed);
    let replay = c.mode == Mode::Replay as u32;
    REPLAY.store(replay, Ordering::Relaxed);
    // The main thread is thread 0.
    let t = slot(0);
    // SAFETY: the slot is freshly mapped zeroed memory owned by this (main) thread.
    unsafe { init_slot(t, 0, 0, 0) };
    set_cur(t);
    // SAFETY: the slot just initialised.
    unsafe { (*t).sh().mb.ktid.store(sys::gettid(), Ordering::Release) };
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
    let sh = th.sh();
    th.tid = tid;
    sh.tid.store(tid, Ordering::Relaxed);
    th.held = NO_STRIPE;
    th.held_multi = false;
    th.parent = parent;
    th.nth = nth;
    sh.digest.set(0xcbf2_9ce4_8422_2325 ^ tid as u64);
    // Wrapping: a seed mixer, not a count (a debug build checks overflow).
    th.rng = JITTER.load(Ordering::Relaxed) ^ (tid as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    sh.final_claim.store(0, Ordering::Relaxed);
    th.seen_epoch = 0;
    log(tid).with(|l| l.len = 0);
    th.entry_bias = 0;
    th.next_ckpt = 0;
    for k in &sh.kinds {
        k.set(0);
    }
    th.next_sig = 0;
    th.next_sig_at = u64::MAX;
    // SAFETY: the thread does not run yet: its creator is the only one to touch the slot.
    unsafe {
        sh.own_me.set(tid + 1);
        sh.rdsh_seen.set(0);
        sh.own_replay.set(REPLAY.load(Ordering::Relaxed));
        sh.own_general
            .set(REPLAY.load(Ordering::Relaxed) || crate::ownership::held::on());
        sh.held_dirty.set(false);
        sh.rel_after.set(0);
        sh.rel_in.set(0);
    }
    crate::ownership::held::clear(sh);
    sh.hits_left.store(0, Ordering::Relaxed);
    sh.held_stop.store(0, Ordering::Relaxed);
    th.next_edge = 0;
    th.held_cut = 0;
    th.held_clear_at = 0;
    // Not started yet: no access in flight, so requests are granted without an answer.
    sh.mb.done.store(0, Ordering::Relaxed);
    sh.mb.free.store(1, Ordering::SeqCst);
    sh.fast_limit.store(0, Ordering::SeqCst);
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

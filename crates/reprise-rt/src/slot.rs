//! A thread's slot in the thread table: its [`Shared`] part (atomics other threads read and
//! write, and what the `__tsan_*` fast path uses), then its owner-private [`Thread`] part, then
//! its log (`state::log`). The split is the aliasing invariant: the only `&mut` the runtime
//! makes is the owner's `&mut Thread` (one at a time, `entry::Entry::t`), and it covers no
//! byte another thread (or the owner's own signal handlers) reads or writes.
#![allow(unsafe_code)]

use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use reprise_proto::*;

/// The ownership protocol's per-thread mailbox: written by other threads (requests) and read
/// by them (acknowledgements, the free state), so it sits on its own cache lines, away from
/// the fields the thread writes at every event. The answers have a line of their own, which
/// a waiting requester polls and the owner writes once per answer: polling the line the owner
/// also writes on its way to the answer (`done`, `req`) took each of those writes a transfer
/// of the line back (fft `-t 2`: about 1 us from request to seen answer, against a 115 ns
/// round trip between two cores on this kind of machine).
#[repr(C, align(64))]
#[derive(Default)]
pub struct Mailbox {
    /// The owner's answers (see [`Acks`]).
    pub ack: Acks,
    /// Another thread requests a granule this thread owns (answered at the next safe point).
    pub req: AtomicU32,
    /// The thread is at a safe point outside instrumented code (blocked in the runtime, in a
    /// system call, not started, exited, parked): requests are granted without an answer, with
    /// `done` as the edge source. Left only through a slow runtime entry.
    pub free: AtomicU32,
    /// Completed events at the last safe point (both modes; replay waits on it too).
    pub done: AtomicU64,
    /// Kernel thread id (0 until the thread runs): where handover signals go.
    pub ktid: AtomicU32,
    /// Requesters registered (`want`) for this thread's granules: when none is, answering and
    /// turning free skip the scan of every thread's `want` (`handover::wake_requesters`).
    pub askers: AtomicU32,
    /// This thread's registered request (`handover::ask`): owner + 1, serial, shadow slot.
    pub want: AtomicU64,
    /// The owner's grant from its handover handler: serial and completed events + 1.
    pub grant: AtomicU64,
    /// Bumped (and futex-woken) when the owner this thread waits for answers, turns free or
    /// grants from its handler.
    pub wake: AtomicU32,
    /// The thread sleeps on `wake` (a request to it must wake it).
    pub sleeping: AtomicU32,
    /// Ownership replay: the smallest event at which a thread waiting for this one's count
    /// wants it to publish (0: none), so that the waiter polls `done` here instead of the
    /// count on the line this thread writes at every event (`ownership::ring`).
    pub replay_want: AtomicU64,
    /// Ownership replay: the entries of its edge list this thread has passed (a waiter for an
    /// edge refined by an `EDGE_AFTER` entry waits for it).
    pub edges_passed: AtomicU64,
}

/// A word of a thread's [`Shared`] part that only its owner writes, except that the thread
/// ending the process reads and writes it once the owner is stopped for good (digest, pending
/// access, kind counters): relaxed atomic loads and stores, which compile to the plain moves
/// (and memory-operand adds) of a non-atomic field, and make another thread's access sound.
#[repr(transparent)]
#[derive(Default)]
pub struct Word(AtomicU64);

impl Word {
    /// The value.
    #[inline(always)]
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
    /// Set the value.
    #[inline(always)]
    pub fn set(&self, v: u64) {
        self.0.store(v, Ordering::Relaxed)
    }
    /// Add one (wrapping: a counter).
    #[inline(always)]
    pub fn bump(&self) {
        self.set(self.get().wrapping_add(1))
    }
}

/// A field of a thread's [`Shared`] part that only the thread itself reads and writes (and its
/// creator, in [`init_slot`], before it starts): in `Shared` because the fast path, which works
/// on `&Shared` alone, reads it. An `UnsafeCell`, so that a write through a shared reference is
/// sound; read with a plain load, which the compiler folds into the fast path's compares (a
/// relaxed atomic load cost one instruction more each).
#[repr(transparent)]
pub struct Mine<T: Copy>(core::cell::UnsafeCell<T>);

// SAFETY: only the owning thread (or its creator before it starts, which happens-before) reads
// or writes a `Mine`, by the contract of `get` and `set`; other threads never touch it.
unsafe impl<T: Copy + Send> Sync for Mine<T> {}

impl<T: Copy> Mine<T> {
    /// The value.
    ///
    /// # Safety
    /// Called by the thread whose slot this is (or its creator before it starts).
    #[inline(always)]
    pub unsafe fn get(&self) -> T {
        // SAFETY: per the contract, no other thread accesses this cell: no data race.
        unsafe { *self.0.get() }
    }
    /// Set the value.
    ///
    /// # Safety
    /// As for [`Mine::get`]; no reference to the value is live (`get` returns copies).
    #[inline(always)]
    pub unsafe fn set(&self, v: T) {
        // SAFETY: per the contract.
        unsafe { *self.0.get() = v }
    }
}

/// The part of a thread's slot that other threads read or write (the ownership protocol's
/// requests and answers, the event count replay waits on, the fast-path limit lowered by
/// signals and requesters, what the ending thread reads and folds of a stopped thread) and
/// that the fast path uses: atomics (and the three [`Mine`] fields only the thread itself
/// touches), reached through `&Shared` by every thread
/// ([`shared`], [`Thread::sh`]) and never covered by a `&mut`.
///
/// Layout: the first cache line holds everything the `__tsan_*` fast path reads or writes but
/// the kind counters (events, limit, pend, digest, own code, read-shared epoch, replay flag);
/// the mailbox has its own line (requesters write it).
#[repr(C, align(64))]
pub struct Shared {
    /// Events performed (stripe turns taken, or accesses under ownership). Published with
    /// release ordering: a replaying thread waits for another's count to pass an edge source.
    pub events: AtomicU64,
    /// Ownership fast path: an access whose event number is below this takes the fast path;
    /// every rare condition (checkpoint due, next replay edge, request pending, signal, held
    /// stripe, jitter, other strategies: 0) lowers it. Written by other threads only to 0, or
    /// (replay) lowered to the event a waiter rang for (`ownership::ring`).
    pub fast_limit: AtomicU64,
    /// Ownership record: the access whose callback ran last and which may still be pending
    /// (`handover::pend`), for the handover signal's handler.
    pub pend: AtomicU64,
    /// Order-sensitive digest of (stripe, position, kind, value).
    pub digest: Word,
    /// Ownership: this thread's exclusive-owner code in the shadow (tid + 1; set at init).
    pub own_me: Mine<u32>,
    /// Ownership: read-shared epochs this thread may read without synchronising.
    pub rdsh_seen: Mine<u32>,
    /// Ownership: true in replay (the fast path then consults no shadow; set at init).
    pub own_replay: Mine<bool>,
    /// True when the access callbacks take their general path (replay, or held granules on);
    /// false for a plain recording, whose callbacks test this byte alone before the record
    /// gate (set at init; the idle thread's is false, and its limit of 0 fails that gate).
    pub own_general: Mine<bool>,
    /// Syscall User Dispatch selector: 0 allow, 1 trap (set when the thread leaves the
    /// runtime; read by the kernel at each system call of the thread).
    pub sud: core::sync::atomic::AtomicU8,
    /// Deterministic id (set at init).
    pub tid: AtomicU32,
    /// The thread's final checkpoint: 0 open, 1 claimed (with a compare-exchange, so it is
    /// logged once: by the thread itself at its end, or by the thread that ends the process),
    /// 2 in the thread's log (`lifecycle::FINAL_LOGGED`).
    pub final_claim: AtomicU32,
    /// Record: asynchronous signals caught and not yet delivered (bit per signal).
    pub sig_pending: AtomicU64,
    /// Ownership: requests and answers.
    pub mb: Mailbox,
    /// Events per kind (`access::kind`), reported at the process's end for `reprise bench`.
    pub kinds: [Word; KINDS],
    /// Access whose value is folded into the digest at the next safe point.
    pub pending_addr: Word,
    /// Size of the pending access (0: none).
    pub pending_size: Word,
    /// Replay cursor into this thread's recorded results (the thread that takes a replayed
    /// end reads every thread's, see `replay_end_reached`).
    pub next_result: AtomicUsize,
    /// The thread's pthread_t (for joins under a model strategy), stored by its creator.
    pub pthread: AtomicU64,
    /// Replay: the thread id `gettid` gave the program (the recording's; 0 until it asks), so
    /// that a signal the program sends to that id reaches this thread (`reprise_real_tid`).
    pub given_tid: AtomicU32,
    /// Ownership: hits the thread may still take before its next counted event
    /// (`ownership::held`). Read by the ending thread to see a run of hits in progress.
    pub hits_left: AtomicU32,
    /// Ownership record: nonzero when a requester waits for a granule this thread may hold: no
    /// access is a hit until the thread's next slow path (`ownership::held`).
    pub held_stop: AtomicU32,
    /// Ownership record: whether `held` has an entry since it was last cleared.
    pub held_dirty: Mine<bool>,
    /// Ownership record: inside an access's slow path (`ownership::access`), whose event is not
    /// counted yet and may have logged its edges.
    pub in_access: Mine<bool>,
    /// Ownership record: the entries logged so far in this thread's edge list (`R_EDGE`).
    pub edges_logged: Word,
    /// Ownership record: the event of the last entry logged in this thread's edge list.
    pub last_edge_event: Word,
    /// Ownership replay: the event after which the recording released its held granules with
    /// hits still to take (0: none): until they are taken, the count is not published
    /// (`held::holds_back`).
    pub rel_after: Mine<u64>,
    /// Ownership replay: the event whose slow path released the recording's held granules, the
    /// next one (0: none): until it is reached, the count before it is not published.
    pub rel_in: Mine<u64>,
    /// Ownership: the granules whose accesses this thread takes as uncounted hits.
    pub held: Held,
}

/// Entries of [`Shared::held`].
pub const HELD: usize = 64;

/// The granules a thread accesses without counting (`ownership::held`): per entry `granule << 1
/// | writable` (0: empty), written by the thread alone, read by requesters (`handover::steal`).
#[repr(C, align(64))]
pub struct Held(pub [AtomicU64; HELD]);

/// A thread's answers to requests for its granules: written by the thread alone (`done`, then
/// `seq`), read by requesters.
#[repr(C, align(64))]
#[derive(Default)]
pub struct Acks {
    /// Answers given so far (a requester waits for it to change).
    pub seq: AtomicU64,
    /// Completed events at the last answer.
    pub done: AtomicU64,
    /// At the last answer: 0, or, when the answer came inside an access's slow path after that
    /// access took granules from others, the count of edge-list entries the thread had logged
    /// (the requester logs it as an `EDGE_AFTER` entry: see `ownership::answer`).
    pub fwd: AtomicU64,
}

// The fast path's fields share one cache line (the slot, and the idle thread, are 64-aligned).
const _: () = assert!(core::mem::offset_of!(Shared, sig_pending) + 8 <= 64);
const _: () = assert!(core::mem::offset_of!(Shared, mb) == 64);
const _: () = assert!(core::mem::size_of::<Mailbox>() == 128);

/// The owner-private part of a thread's slot: touched only by the thread itself, through the
/// one `&mut Thread` its runtime entry hands out ([`crate::entry::Entry::t`]), except by its
/// creator before it starts ([`init_slot`], the start routine). It lies after the slot's
/// [`Shared`] part (reached with [`Thread::sh`]), so no `&mut Thread` covers memory another
/// thread reads.
#[repr(C)]
pub struct Thread {
    /// Deterministic id.
    pub tid: u32,
    /// Record: the launcher's flush epoch this thread last acted on (`leap::periodic_flush`).
    pub seen_epoch: u32,
    /// Model strategies: the order-bearing key of the thread's last model event
    /// (`model::order_key`), folded by its `count_event`.
    pub model_key: u64,
    /// Runtime entries so far (the position of asynchronous signal deliveries) minus events
    /// (wrapping): a fast-path callback is both an entry and an event, so it changes neither
    /// this nor anything but the event counter. See [`Thread::entries`].
    pub entry_bias: u64,
    /// Ownership replay: index of the next incoming edge.
    pub next_edge: usize,
    /// Ownership record: serial of this thread's last handover request.
    pub want_serial: u64,
    /// Stripe held since the last access (or NO_STRIPE); see `held_multi`.
    pub held: u32,
    /// True when a ranged access holds every stripe set in `multi`.
    pub held_multi: bool,
    /// After the process started ending, the finishing thread runs without the runtime.
    pub passthrough: bool,
    /// Event number of the next digest checkpoint (0: not computed yet).
    pub next_ckpt: u64,
    /// Parent's id.
    pub parent: u32,
    /// Birth order among the parent's children.
    pub nth: u32,
    /// Ownership replay: hits to take away once the current event is counted (a release the
    /// recording logged at it, `ownership::held`), plus one; 0: none.
    pub held_cut: u32,
    /// Ownership replay: the event at whose start the held table empties (a release came before
    /// it); 0: none.
    pub held_clear_at: u64,
    /// Children created so far.
    pub children: u32,
    /// Replay cursor into this thread's recorded digests.
    pub next_digest: usize,
    /// Replay cursor (bytes) into this thread's recorded input data.
    pub next_data: usize,
    /// Replay: entry index of the next recorded delivery (u64::MAX: none).
    pub next_sig_at: u64,
    /// Replay cursor into this thread's recorded deliveries.
    pub next_sig: usize,
    /// Whether Syscall User Dispatch is on for this thread.
    pub sud_on: bool,
    /// Leave system calls untrapped until the next runtime entry: the thread performs an
    /// ordered libc call (stdio) whose turn must last until the call is complete, even if it
    /// blocks on glibc's own lock inside.
    pub sud_hold: bool,
    /// Replay of a descriptor-allocating call: `sud_hold` lasts across runtime entries until
    /// `reprise_fd_hold_end` (calls.rs says why).
    pub fd_hold: bool,
    /// Jitter PRNG state.
    pub rng: u64,
    /// Start routine and argument of a created thread.
    pub start_fn: usize,
    /// See `start_fn`.
    pub start_arg: usize,
    /// The top of the thread's runtime stack (`rtstack`), 0 when it has none.
    pub rt_stack: u64,
    /// Stripes held by a ranged access.
    pub multi: [u64; STRIPES / 64],
    /// Words of `multi` that may have bits set: `[multi_lo, multi_hi)`.
    pub multi_lo: usize,
    /// See `multi_lo`.
    pub multi_hi: usize,
}

/// Where a slot's [`Thread`] starts: right after its [`Shared`] part.
pub(crate) const PRIV_OFF: usize = core::mem::size_of::<Shared>();

impl Thread {
    /// This thread's shared part (its slot's [`Shared`]).
    #[inline(always)]
    pub fn sh(&self) -> &'static Shared {
        // SAFETY: every `Thread` lies at PRIV_OFF in a slot of the thread table, which is
        // mapped at init and never unmapped (only `slot` makes pointers to one; none is ever
        // made by value), so its slot's `Shared` lies PRIV_OFF bytes before it: a pointer
        // made from that address, not derived from `self` (whose reference covers the
        // private part alone). `Shared` is all atomics, so shared references to it from any
        // thread are sound, and no `&mut` covers it.
        unsafe { &*((self as *const Self as usize - PRIV_OFF) as *const Shared) }
    }

    /// Ownership: this thread's exclusive-owner code in the shadow.
    #[inline(always)]
    pub fn own_me(&self) -> u32 {
        // SAFETY: a `&Thread` is held by the thread itself alone (see the type).
        unsafe { self.sh().own_me.get() }
    }

    /// Ownership: read-shared epochs this thread may read without synchronising.
    #[inline(always)]
    pub fn rdsh_seen(&self) -> u32 {
        // SAFETY: as in `own_me`.
        unsafe { self.sh().rdsh_seen.get() }
    }

    /// Set [`Thread::rdsh_seen`].
    #[inline(always)]
    pub fn set_rdsh_seen(&mut self, c: u32) {
        // SAFETY: as in `own_me`.
        unsafe { self.sh().rdsh_seen.set(c) }
    }

    /// Ownership: whether this thread replays (the fast path then consults no shadow).
    #[inline(always)]
    pub fn own_replay(&self) -> bool {
        // SAFETY: as in `own_me`.
        unsafe { self.sh().own_replay.get() }
    }

    /// Runtime entries so far: every callback and interposer the thread entered.
    #[inline(always)]
    pub fn entries(&self) -> u64 {
        self.sh()
            .events
            .load(core::sync::atomic::Ordering::Relaxed)
            .wrapping_add(self.entry_bias)
    }
}

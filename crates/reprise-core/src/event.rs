//! The event model at the bottom of every strategy: who did what to which shared object.
//!
//! Thread ids are the *recorded* ids (creation order of the recording, main = 0); the simulator
//! maps replay threads onto them with the thread abstraction of [`crate::threads`]. Event ids
//! follow the seeds' log format `<a,b>`: the thread and its thread-local event counter.

/// A thread id as recorded (creation order in the recording; the main thread is 0).
pub type ThreadId = u32;
/// A shared memory location (an address or a stripe of addresses).
pub type Loc = u64;
/// A lock (mutex) identity.
pub type LockId = u64;

/// One operation of a thread (table 1 of seeds 000 and 003, plus atomic read-modify-write).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// A read of a shared location.
    Read(Loc),
    /// A write of a shared location.
    Write(Loc),
    /// An atomic read-modify-write of a shared location (reads the previous value, writes a new one).
    Rmw(Loc),
    /// Lock acquisition.
    Acquire(LockId),
    /// Lock release.
    Release(LockId),
    /// Creation of a child thread (the recorded id of the child).
    Fork(ThreadId),
    /// Waiting for a thread to finish (the recorded id of that thread).
    Join(ThreadId),
}

impl Op {
    /// The memory location touched, for reads, writes and RMWs.
    pub fn loc(&self) -> Option<Loc> {
        match *self {
            Op::Read(x) | Op::Write(x) | Op::Rmw(x) => Some(x),
            _ => None,
        }
    }
    /// True for operations that write memory (writes and RMWs).
    pub fn is_write(&self) -> bool {
        matches!(self, Op::Write(_) | Op::Rmw(_))
    }
    /// True for plain reads.
    pub fn is_read(&self) -> bool {
        matches!(self, Op::Read(_))
    }
}

/// An event observed during recording: the operation and the value it read (reads, RMWs: the old
/// value) or wrote (writes); 0 for synchronisation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// Executing thread (recorded id).
    pub thread: ThreadId,
    /// What it did.
    pub op: Op,
    /// Value read or written.
    pub value: u64,
}

/// An event identity `<a,b>`: thread and 1-based thread-local event counter (all events count).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct EventId {
    /// The executing thread.
    pub thread: ThreadId,
    /// 1-based index of the event among that thread's events.
    pub index: u64,
}

impl EventId {
    /// Shorthand constructor.
    pub fn new(thread: ThreadId, index: u64) -> Self {
        EventId { thread, index }
    }
}

/// Encoded sizes shared by the log-size accounting of all strategies (seed 003, V-C: "a thread id
/// was typically a 32-bit integer whereas an event/transaction id was a 64-bit unsigned integer").
pub mod enc {
    /// Bytes of a thread id.
    pub const TID: usize = 4;
    /// Bytes of an event or transaction counter.
    pub const CNT: usize = 8;
    /// Bytes of a location or lock identity (an address).
    pub const OBJ: usize = 8;
    /// Bytes of a list length prefix.
    pub const LEN: usize = 4;
    /// Bytes of one read count inside an RC vector.
    pub const RC: usize = 4;

    /// Bytes of per-lock lists of acquiring threads (`L_m`): a lock id, a length, a thread id
    /// per acquisition.
    pub fn lock_lists(
        l: &std::collections::BTreeMap<crate::LockId, Vec<crate::ThreadId>>,
    ) -> usize {
        l.values().map(|v| OBJ + LEN + v.len() * TID).sum()
    }
}

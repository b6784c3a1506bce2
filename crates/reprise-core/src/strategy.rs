//! The `Strategy` trait: one record side that builds a log from events in execution order, and one
//! replay side that gates each thread's next event.
//!
//! The replay protocol mirrors the real substrate: a thread *enters* the callback for its next
//! event ([`Replayer::enter`]), waits until [`Replayer::may_proceed`] says yes, the callback
//! returns ([`Replayer::proceed`]: the strategy's bookkeeping for that event), and only then does
//! the access itself happen. Between `proceed` and the access other threads may run.

use crate::event::{Event, Op, ThreadId};

/// Size of a log in bytes under the encoding its paper describes (see each strategy's docs).
pub trait LogSize {
    /// Encoded size in bytes.
    fn size_bytes(&self) -> usize;
}

/// Record side of a strategy.
pub trait Recorder {
    /// The log it produces.
    type Log;
    /// Observe one event, in execution order (the recording's order is the real order).
    fn observe(&mut self, e: &Event);
    /// Thread `t` finished (after its last event).
    fn thread_exit(&mut self, _t: ThreadId) {}
    /// Finish and hand back the log.
    fn finish(self) -> Self::Log;
}

/// Replay side of a strategy.
pub trait Replayer {
    /// Thread `t` enters the callback for its next event `op` (called once per event, right after
    /// its previous access completed, or at thread start).
    fn enter(&mut self, _t: ThreadId, _op: &Op) {}
    /// May thread `t`'s callback for `op` return now? Must not change state.
    fn may_proceed(&self, t: ThreadId, op: &Op) -> bool;
    /// The callback for `op` returns (only after `may_proceed` said yes); the access follows later.
    fn proceed(&mut self, t: ThreadId, op: &Op);
    /// Thread `t` finished its last event.
    fn thread_exit(&mut self, _t: ThreadId) {}
    /// The access of thread `t`'s last event is complete. [`Replayer::enter`] and
    /// [`Replayer::thread_exit`] imply it; a substrate that knows it earlier (the runtime's safe
    /// point, where a thread may then block outside the strategy's events) says so at once.
    fn completed(&mut self, _t: ThreadId) {}
}

/// A record/replay strategy.
pub trait Strategy {
    /// The recorded log.
    type Log: LogSize + Clone + std::fmt::Debug;
    /// Record side.
    type Recorder: Recorder<Log = Self::Log>;
    /// Replay side.
    type Replayer: Replayer;
    /// Name as given to `--strategy`.
    fn name(&self) -> &'static str;
    /// A fresh recorder.
    fn recorder(&self) -> Self::Recorder;
    /// Whether the log carries the `<a,b>` thread table (AggrePlay, TPLAY); LEAP orders thread
    /// creation with its own vector instead.
    fn logs_thread_table(&self) -> bool {
        true
    }
    /// A replayer driven by `log`.
    fn replayer(&self, log: &Self::Log) -> Self::Replayer;
}

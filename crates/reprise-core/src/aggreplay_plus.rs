//! AggrePlay+ (`aggreplay+`): AggrePlay (seed 000) with its replay bookkeeping taken at the
//! *access* instead of at the callback. The log is AggrePlay's, byte for byte.
//!
//! Algorithm 2 pops `W_x` and `L_m`, sets the last replayed write of `x` and counts a read in the
//! callback (`proceed`). Under Pin (the atomic substrate) the instruction follows at once; on real
//! threads the callback returns before the load or store, so the next entry of `W_x`, a read
//! waiting in `WR_x` or a write waiting in `checkReads` can pass before the access it depends on
//! lands. The relations AggrePlay records but does not hold on real threads, each shown by a
//! counter-example in `tests/plus_variants.rs`:
//! - write→write (`W_x`): the next write may pass only once the previous store happened;
//! - write→read (`WR_x`): a read waits for the store of its last write, not its callback;
//! - read→write (`checkReads`): a read counts once its load happened;
//! - lock order (`L_m`): the next acquirer's callback waits until the acquisition happened.
//!
//! All four come from one change: the seed's `proceed` for an event runs when the thread enters
//! its next callback or exits (its access is complete then). Nothing else is added; on the atomic
//! substrate the replay is the seed's.

use crate::aggreplay::{AggrePlay, AggrePlayLog, AggrePlayRecorder, AggrePlayReplayer, Parts};
use crate::event::{EventId, Op, ThreadId};
use crate::strategy::{Replayer, Strategy};
use rustc_hash::FxHashMap as HashMap;

/// A relation AggrePlay+ holds at the access (for tests that drop one and watch replays fail).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Relation {
    /// `W_x` popped at the store.
    WriteWrite,
    /// The last replayed write of `x` set at the store.
    WriteRead,
    /// A read counted for `checkReads` at the load.
    ReadWrite,
    /// `L_m` popped at the acquisition.
    LockOrder,
}

/// The AggrePlay+ strategy: AggrePlay's log, bookkeeping at the access.
#[derive(Clone, Copy, Debug, Default)]
pub struct AggrePlayPlus {
    /// Ablation: keep this relation at the callback, as the seed does (`None`: the strategy).
    pub without: Option<Relation>,
}

/// AggrePlay+ replay side: the seed's replayer, told of an event once its access is complete.
#[derive(Clone, Debug, Default)]
pub struct AggrePlayPlusReplayer {
    inner: AggrePlayReplayer,
    /// The parts applied at the access; the rest at the callback.
    at_access: Option<Parts>,
    /// Per thread, the event whose callback returned and whose access may still be pending.
    pending: HashMap<ThreadId, (EventId, Op)>,
}

impl AggrePlayPlusReplayer {
    /// The parts applied once the access is complete.
    fn late_parts(&self) -> Parts {
        self.at_access.unwrap_or(Parts::ALL)
    }

    fn complete(&mut self, t: ThreadId) {
        if let Some((e, op)) = self.pending.remove(&t) {
            let parts = self.late_parts();
            self.inner.apply(t, e, &op, parts);
        }
    }
}

impl Replayer for AggrePlayPlusReplayer {
    fn enter(&mut self, t: ThreadId, op: &Op) {
        self.complete(t);
        self.inner.enter(t, op);
    }
    fn may_proceed(&self, t: ThreadId, op: &Op) -> bool {
        self.inner.may_proceed(t, op)
    }
    fn proceed(&mut self, t: ThreadId, op: &Op) {
        let e = self.inner.bump(t);
        let early = self.late_parts().rest();
        self.inner.apply(t, e, op, early);
        self.pending.insert(t, (e, *op));
    }
    fn completed(&mut self, t: ThreadId) {
        self.complete(t);
    }
    fn thread_exit(&mut self, t: ThreadId) {
        self.complete(t);
        self.inner.thread_exit(t);
    }
}

impl Strategy for AggrePlayPlus {
    type Log = AggrePlayLog;
    type Recorder = AggrePlayRecorder;
    type Replayer = AggrePlayPlusReplayer;
    fn name(&self) -> &'static str {
        "aggreplay+"
    }
    fn recorder(&self) -> AggrePlayRecorder {
        AggrePlay.recorder()
    }
    fn replayer(&self, log: &AggrePlayLog) -> AggrePlayPlusReplayer {
        self.replayer_owned(log.clone())
    }
}

impl AggrePlayPlus {
    /// [`Strategy::replayer`], taking the log's lists over ([`AggrePlay::replayer_owned`]).
    pub fn replayer_owned(&self, log: AggrePlayLog) -> AggrePlayPlusReplayer {
        let mut parts = Parts::ALL;
        match self.without {
            None => {}
            Some(Relation::WriteWrite) => parts.w = false,
            Some(Relation::WriteRead) => parts.last_write = false,
            Some(Relation::ReadWrite) => parts.read_count = false,
            Some(Relation::LockOrder) => parts.lock = false,
        }
        AggrePlayPlusReplayer {
            inner: AggrePlay.replayer_owned(log),
            at_access: Some(parts),
            pending: HashMap::default(),
        }
    }
}

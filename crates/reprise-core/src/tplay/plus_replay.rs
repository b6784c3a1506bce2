//! TPLAY+'s replay side: each thread's checks in event order, the lock order, progress published
//! when the access is complete.

use super::plus::{Added, Check, Progress, TplayPlusLog};
use crate::event::{LockId, Op, ThreadId};
use crate::strategy::Replayer;
use rustc_hash::FxHashMap as HashMap;
use std::collections::VecDeque;

/// TPLAY+ replay side.
#[derive(Clone, Debug, Default)]
pub struct TplayPlusReplayer {
    checks: HashMap<ThreadId, VecDeque<Check>>,
    l: HashMap<LockId, VecDeque<ThreadId>>,
    prog: Progress,
    /// Events whose callback returned, per thread.
    called: HashMap<ThreadId, u64>,
    /// The event whose access may be pending, per thread.
    pending: HashMap<ThreadId, Op>,
    /// Ablation: progress published at the callback.
    at_callback: bool,
}

impl TplayPlusReplayer {
    pub(super) fn from_log(log: &TplayPlusLog, without: Option<Added>) -> Self {
        let log = TplayPlusLog {
            checks: log.checks.clone(),
            l: log.l.clone(),
            ..Default::default()
        };
        Self::from_log_owned(log, without)
    }

    /// The replayer of `log`, taking its checks without copying them (the runtime's: a
    /// long recording's checks are most of its memory).
    pub fn from_log_owned(log: TplayPlusLog, without: Option<Added>) -> Self {
        let seed_place = without == Some(Added::DueEvent);
        let mut r = TplayPlusReplayer {
            at_callback: without == Some(Added::AtAccess),
            ..Default::default()
        };
        for (t, mut v) in log.checks {
            if seed_place {
                for c in &mut v {
                    c.at = c.seed_at;
                }
                v.sort_by_key(|c| c.at);
            }
            r.checks.insert(t, v.into());
        }
        for (&m, v) in &log.l {
            r.l.insert(m, v.iter().copied().collect());
        }
        r
    }
    fn complete(&mut self, t: ThreadId) {
        if let Some(op) = self.pending.remove(&t) {
            self.prog.step(t, &op);
            if let Op::Acquire(m) = op {
                if let Some(q) = self.l.get_mut(&m) {
                    q.pop_front();
                }
            }
        }
    }
}

impl Replayer for TplayPlusReplayer {
    fn enter(&mut self, t: ThreadId, _op: &Op) {
        self.complete(t);
    }
    fn may_proceed(&self, t: ThreadId, op: &Op) -> bool {
        let k = self.called.get(&t).copied().unwrap_or(0) + 1;
        if let Op::Acquire(m) = *op {
            if self
                .l
                .get(&m)
                .and_then(|q| q.front())
                .is_some_and(|&u| u != t)
            {
                return false;
            }
        }
        self.checks.get(&t).is_none_or(|q| {
            q.iter()
                .take_while(|c| c.at <= k)
                .all(|c| self.prog.holds(&c.cond))
        })
    }
    fn proceed(&mut self, t: ThreadId, op: &Op) {
        let c = self.called.entry(t).or_insert(0);
        *c += 1;
        let k = *c;
        if let Some(q) = self.checks.get_mut(&t) {
            while q.front().is_some_and(|c| c.at <= k) {
                q.pop_front();
            }
        }
        self.pending.insert(t, *op);
        if self.at_callback {
            self.complete(t);
        }
    }
    fn completed(&mut self, t: ThreadId) {
        self.complete(t);
    }
    fn thread_exit(&mut self, t: ThreadId) {
        self.complete(t);
        self.prog.exit(t);
    }
}

//! Thread abstraction and matching: recorded ids for replay threads whatever the OS creation order.
//!
//! AggrePlay (seed 000, 5.4) abstracts a thread as `<a,b>`: `a` the child count value given by its
//! parent, `b` the parent's index; TPLAY (seed 003, algorithms 3-4) logs `<Tid, parent Tid>` in
//! creation order and, at replay, gives the n-th child of a parent the n-th logged entry with that
//! parent. Both carry the same information, so one table serves both (`a` is implied by the order
//! of entries with the same parent in TPLAY's form). The main thread is 0 and is not logged.

use crate::event::{enc, ThreadId};
use std::collections::HashMap;

/// The recorded thread table: entry `i` describes recorded thread `i + 1`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadTable {
    /// `<a,b>` per non-main thread: (1-based child number under its parent, parent id).
    pub entries: Vec<(u32, ThreadId)>,
    children: HashMap<ThreadId, u32>,
}

impl ThreadTable {
    /// Empty table (only the main thread exists).
    pub fn new() -> Self {
        Self::default()
    }
    /// Record side: `parent` creates a thread; returns its recorded id (creation order).
    pub fn on_create(&mut self, parent: ThreadId) -> ThreadId {
        let c = self.children.entry(parent).or_insert(0);
        *c += 1;
        self.entries.push((*c, parent));
        self.entries.len() as ThreadId
    }
    /// Encoded size: two 32-bit integers per abstracted thread.
    pub fn size_bytes(&self) -> usize {
        enc::LEN + self.entries.len() * 2 * enc::TID
    }
}

/// Replay side (algorithm 4 of seed 003): maps each newly created thread to a recorded id.
#[derive(Clone, Debug)]
pub struct ThreadMatcher {
    log: Vec<(u32, ThreadId)>,
    gamma: HashMap<ThreadId, u32>,
}

impl ThreadMatcher {
    /// Matcher over a recorded table.
    pub fn new(table: &ThreadTable) -> Self {
        ThreadMatcher {
            log: table.entries.clone(),
            gamma: HashMap::new(),
        }
    }
    /// The thread whose recorded id is `parent` creates a thread: its recorded id, or `None` if the
    /// recording has no such child (divergence).
    pub fn on_create(&mut self, parent: ThreadId) -> Option<ThreadId> {
        let child_freq = {
            let g = self.gamma.entry(parent).or_insert(0);
            *g += 1;
            *g
        };
        // Lines 8-12: scan tLog, counting entries with this parent until the count matches.
        let mut freq = 1;
        for (i, &(_, b)) in self.log.iter().enumerate() {
            if b == parent {
                if freq == child_freq {
                    return Some(i as ThreadId + 1);
                }
                freq += 1;
            }
        }
        None
    }
}

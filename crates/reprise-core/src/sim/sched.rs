//! Schedulers: which allowed thread moves next.

use super::Rng;

/// Picks which thread moves next among the allowed ones (program thread indices).
pub trait Scheduler {
    /// Index into `choices` (non-empty).
    fn pick(&mut self, choices: &[usize]) -> usize;
}

/// Uniformly random choice.
#[derive(Clone, Debug)]
pub struct RandomScheduler(pub Rng);

impl Scheduler for RandomScheduler {
    fn pick(&mut self, choices: &[usize]) -> usize {
        self.0.below(choices.len() as u64) as usize
    }
}

/// Follows a script of program thread indices; when the scripted thread cannot move (or the script
/// is exhausted) it takes the first allowed thread.
#[derive(Clone, Debug)]
pub struct ScriptedScheduler {
    /// The script.
    pub script: Vec<usize>,
    pos: usize,
}

impl ScriptedScheduler {
    /// A scheduler following `script`.
    pub fn new(script: Vec<usize>) -> Self {
        ScriptedScheduler { script, pos: 0 }
    }
}

impl Scheduler for ScriptedScheduler {
    fn pick(&mut self, choices: &[usize]) -> usize {
        let want = self.script.get(self.pos).copied();
        self.pos += 1;
        want.and_then(|w| choices.iter().position(|&c| c == w))
            .unwrap_or(0)
    }
}

//! Typed values of command-line options (`clap::ValueEnum`), shared by the subcommands.

use clap::ValueEnum;

/// A recording strategy (`record --strategy`, `bench --strategies`). Names and runtime flags
/// come from [`reprise_proto::STRATEGIES`], the one table of strategies; the variants follow
/// it (tested).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Strategy {
    /// Records only when a variable changes owner (the default).
    Ownership,
    /// LEAP: every shared access in per-stripe access vectors.
    Leap,
    /// AggrePlay (seed 000), as a model on real threads.
    Aggreplay,
    /// TPLAY (seed 003), as a model on real threads.
    Tplay,
    /// AggrePlay+: AggrePlay's log, replay bookkeeping at the access.
    #[value(name = "aggreplay+")]
    AggreplayPlus,
    /// TPLAY+: TPLAY's records checked where due, plus the conflict edges it misses.
    #[value(name = "tplay+")]
    TplayPlus,
}

impl Strategy {
    /// This strategy's `(name, flag)` in [`reprise_proto::STRATEGIES`].
    fn entry(self) -> &'static (&'static str, u64) {
        let v = self.to_possible_value().expect("no strategy is hidden");
        reprise_proto::STRATEGIES
            .iter()
            .find(|(n, _)| *n == v.get_name())
            .expect("every strategy is in reprise_proto::STRATEGIES")
    }

    /// The name, as on the command line and in a trace's header.
    pub fn name(self) -> &'static str {
        self.entry().0
    }

    /// The config flag that selects this strategy in the runtime.
    pub fn flag(self) -> u64 {
        self.entry().1
    }
}

/// `record --verify`: how often the replay checks the recorded digests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Verify {
    /// A digest checkpoint at every event (same as `--checkpoint 1`).
    Full,
    /// Every `--checkpoint` events.
    Default,
}

/// `record --mode`: how the program is recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// The program was built with `reprise cc`: every memory access is ordered (exact replay).
    Full,
    /// An unmodified program: the runtime is injected with LD_PRELOAD and orders
    /// synchronisation and system calls only (a data race can make the replay diverge).
    Sync,
}

impl Mode {
    /// The name, as on the command line and in a trace's header (`extra["mode"]`).
    pub fn name(self) -> &'static str {
        match self {
            Mode::Full => "full",
            Mode::Sync => "sync",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_strategies_are_reprise_protos_table_in_order() {
        let names: Vec<&str> = Strategy::value_variants()
            .iter()
            .map(|s| s.name())
            .collect();
        let table: Vec<&str> = reprise_proto::STRATEGIES.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, table);
        assert_eq!(Strategy::Tplay.flag(), reprise_proto::FLAG_TPLAY);
        assert_eq!(Strategy::TplayPlus.name(), "tplay+");
    }
}

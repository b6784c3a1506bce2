//! LEAP (`--strategy leap`, the strategy of the first release) on real programs, now that
//! `ownership` is the default and the acceptance suite runs that: racy and synchronised test
//! programs recorded several times with gcc (two with clang too), every replay verified
//! (plainly, on one CPU and with jitter) with the recording's output and status, and racy
//! programs still showing more than one outcome while recorded.

mod common;
use common::*;

/// Five recordings per program (eight before the CI run outgrew its 15 minutes): LEAP is no
/// longer the default, and every recording is still replayed three ways.
const RECORDINGS: usize = 5;

fn leap(name: &str, compiler: &str) {
    record_replay_all_ways(name, compiler, RECORDINGS, &["--strategy", "leap"]);
}

macro_rules! leap_tests {
    ($($name:ident),* $(; clang too: $($both:ident),*)?) => {
        $(
            mod $name {
                #[test]
                fn gcc() {
                    super::leap(stringify!($name), "gcc");
                }
            }
        )*
        $($(
            mod $both {
                #[test]
                fn gcc() {
                    super::leap(stringify!($both), "gcc");
                }
                #[test]
                fn clang() {
                    super::leap(stringify!($both), "clang");
                }
            }
        )*)?
    };
}

// Every program with gcc; with clang too the two whose clang build calls what gcc's does not
// (ranged and unaligned accesses: struct copies; C++'s atomics and guards). The callbacks are
// the same code under every strategy, and the acceptance suite records every program with clang
// under `ownership`.
leap_tests!(
    counter_race,
    check_then_act,
    bank,
    prodcons,
    stencil,
    lockfree_stack,
    dcl,
    stdio_threads;
    clang too: cxx_threads, struct_copy_race
);

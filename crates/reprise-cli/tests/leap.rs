//! LEAP (`--strategy leap`, the strategy of the first release) on real programs, now that
//! `ownership` is the default and the acceptance suite runs that: racy and synchronised test
//! programs recorded several times with gcc and clang, every replay verified (plainly, on one
//! CPU and with jitter) with the recording's output and status, and racy programs still
//! showing more than one outcome while recorded.

mod common;
use common::*;

const RECORDINGS: usize = 8;

fn leap(name: &str, compiler: &str) {
    record_replay_all_ways(name, compiler, RECORDINGS, &["--strategy", "leap"]);
}

macro_rules! leap_tests {
    ($($name:ident),*) => {$(
        mod $name {
            #[test]
            fn gcc() {
                super::leap(stringify!($name), "gcc");
            }
            #[test]
            fn clang() {
                super::leap(stringify!($name), "clang");
            }
        }
    )*};
}

leap_tests!(
    counter_race,
    check_then_act,
    bank,
    prodcons,
    stencil,
    lockfree_stack,
    dcl,
    cxx_threads,
    struct_copy_race,
    stdio_threads
);

//! LEAP (`--strategy leap`, the strategy of the first release) on real programs, now that
//! `ownership` is the default and the acceptance suite runs that: racy and synchronised test
//! programs recorded several times with gcc and clang, every replay verified (plainly, on one
//! CPU and with jitter) with the recording's output and status, and racy programs still
//! showing more than one outcome while recorded.

mod common;
use common::*;
use std::collections::BTreeSet;

const RECORDINGS: usize = 8;

fn leap(name: &str, compiler: &str) {
    let p = program(name);
    let w = Work::new();
    let bin = w.build(&p, compiler);
    let mut outcomes = BTreeSet::new();
    for i in 0..RECORDINGS {
        let r = record(
            &w,
            &bin,
            &p.args,
            &format!("{name}-{i}.trace"),
            &["--strategy", "leap"],
        );
        outcomes.insert((r.stdout.clone(), r.status));
        replay_verified(&w, &r, How::Plain);
        replay_verified(&w, &r, How::OneCpu);
        replay_verified(&w, &r, How::Jitter(i as u64 + 1));
    }
    if p.racy {
        let mut extra = 0;
        while outcomes.len() < 2 && extra < 60 {
            let r = record(
                &w,
                &bin,
                &p.args,
                &format!("{name}-x{extra}.trace"),
                &["--strategy", "leap"],
            );
            outcomes.insert((r.stdout.clone(), r.status));
            replay_verified(&w, &r, How::Plain);
            extra += 1;
        }
        assert!(
            outcomes.len() >= 2,
            "{name}: every leap recording had the same outcome"
        );
    }
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

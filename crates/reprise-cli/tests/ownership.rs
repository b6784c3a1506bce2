//! The `ownership` strategy on real programs: racy and synchronised test programs recorded
//! several times with gcc and clang, every replay verified (plainly, on one CPU and with
//! jitter) with the recording's output and status, and racy programs still showing more than
//! one outcome while recorded (ownership must not serialise the race).
//!
//! Not yet covered here (fails under ownership, see ARCHITECTURE.md): `sigalrm` (asynchronous
//! signal positions), `local_static` under clang (1 replay in 20 diverged), and the
//! crash-or-clean pair of `crash_sometimes` (every ownership recording crashed).

mod common;
use common::*;
use std::collections::BTreeSet;

const RECORDINGS: usize = 8;

fn ownership(name: &str, compiler: &str) {
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
            &["--strategy", "ownership"],
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
                &["--strategy", "ownership"],
            );
            outcomes.insert((r.stdout.clone(), r.status));
            replay_verified(&w, &r, How::Plain);
            extra += 1;
        }
        assert!(
            outcomes.len() >= 2,
            "{name}: every ownership recording had the same outcome"
        );
    }
}

macro_rules! ownership_tests {
    ($($name:ident),*) => {$(
        mod $name {
            #[test]
            fn gcc() {
                super::ownership(stringify!($name), "gcc");
            }
            #[test]
            fn clang() {
                super::ownership(stringify!($name), "clang");
            }
        }
    )*};
}

ownership_tests!(
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

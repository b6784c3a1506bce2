//! The spine's acceptance: every test program of tests/programs, built with `reprise cc`
//! (gcc), recorded 20 times; every recording replays verified three ways: plainly, pinned to
//! one CPU, and with seeded random delays injected at callbacks. Racy programs must show at
//! least two different outcomes among their recordings (the recorder does not serialise).

mod common;
use common::*;

const RECORDINGS: usize = 20;

fn acceptance(name: &str, compiler: &str) {
    record_replay_all_ways(name, compiler, RECORDINGS, &[]);
}

macro_rules! acceptance_tests {
    ($($name:ident),*) => {$(
        mod $name {
            #[test]
            fn gcc() {
                super::acceptance(stringify!($name), "gcc");
            }
            #[test]
            fn clang() {
                super::acceptance(stringify!($name), "clang");
            }
        }
    )*};
}

acceptance_programs!(acceptance_tests);
// False sharing with a race in it (ownership's split granules), here alone: its million
// accesses would take the model strategies of plus_acceptance minutes.
acceptance_tests!(false_share);
// Races through libc's string functions (strcmp of a string another thread strcpy's), ordered
// by the runtime's own string functions: under ownership only, as the memory functions are
// tested (the model strategies reach them through the same range callbacks).
acceptance_tests!(string_race);

/// The addresses program prints heap, stack, TLS addresses and pthread_self: they must be the
/// same in every recording (not only between a recording and its replay).
#[test]
fn addresses_are_deterministic_across_recordings() {
    let p = program("addresses");
    let w = Work::new();
    let bin = w.build(&p, "gcc");
    let a = record(&w, &bin, &p.args, "a.trace", &[]);
    let b = record(&w, &bin, &p.args, "b.trace", &[]);
    assert!(!a.stdout.is_empty());
    assert_eq!(
        a.stdout, b.stdout,
        "addresses differ between two recordings"
    );
}

/// The crashing program: record (bounded tries) until one recording crashed and one did not;
/// each replays to its own end (same status, same fault at the same thread and event).
#[test]
fn crash_sometimes_gcc() {
    crash_sometimes("gcc")
}

#[test]
fn crash_sometimes_clang() {
    crash_sometimes("clang")
}

fn crash_sometimes(compiler: &str) {
    let p = program("crash_sometimes");
    let w = Work::new();
    let bin = w.build(&p, compiler);
    let (mut crashed, mut survived) = (None, None);
    for i in 0..150 {
        let r = record(&w, &bin, &p.args, &format!("c-{i}.trace"), &[]);
        if r.status > 128 {
            crashed.get_or_insert(r);
        } else {
            assert_eq!(r.status, 0);
            survived.get_or_insert(r);
        }
        if crashed.is_some() && survived.is_some() {
            break;
        }
    }
    let crashed = crashed.expect("no recording crashed in 150 tries");
    let survived = survived.expect("every recording crashed in 150 tries");
    for r in [&crashed, &survived] {
        replay_verified(&w, r, How::Plain);
        replay_verified(&w, r, How::Jitter(7));
    }
}

/// Ownership's held granules (`reprise record --held-granules`): the programs whose replays
/// diverged while they were built (racy counters, false sharing with a race, static guards,
/// cancellation in a busy loop, an end in the middle of the threads' work), recorded 10 times
/// each, every recording replayed plainly, on one CPU and jittered; racy ones still show
/// different outcomes.
mod held_granules {
    use super::*;

    fn held(name: &str) {
        record_replay_all_ways(name, "gcc", 10, &["--held-granules"]);
    }

    #[test]
    fn counter_race() {
        held("counter_race");
    }

    #[test]
    fn check_then_act() {
        held("check_then_act");
    }

    #[test]
    fn false_share() {
        held("false_share");
    }

    #[test]
    fn local_static() {
        held("local_static");
    }

    #[test]
    fn thread_exit() {
        held("thread_exit");
    }

    #[test]
    fn exit_after_create() {
        held("exit_after_create");
    }

    #[test]
    fn prodcons() {
        held("prodcons");
    }
}

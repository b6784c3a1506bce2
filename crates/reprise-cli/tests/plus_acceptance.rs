//! Issue 16's acceptance for the improved variants: every acceptance program of
//! `tests/programs` (the list of `acceptance.rs`, plus `crash_sometimes` and
//! `exit_after_create`, whose threads may be anywhere when main returns), built with
//! `reprise cc` (gcc), recorded [`RECORDINGS`] times under `aggreplay+` and under `tplay+`;
//! every recording replays verified with its output and exit status. A failing recording's
//! trace is kept under `target/tmp/failed-traces/`.
//!
//! `detached_exit` and `exit_after_create` end the process while other threads still run: a
//! model replay parks such a thread at its recorded final count (`model::park_past_end`), as
//! LEAP's exhausted vectors and ownership's gate do; before, a thread could run past it and
//! the replay diverged at the end under every model strategy.

mod common;
use common::*;
use std::path::Path;

/// Recordings per program and strategy (about 75 s alone for the 28 programs on two loaded
/// cores: most programs record and replay in 10-50 ms under either variant).
const RECORDINGS: usize = 20;

fn plus_variants(name: &str) {
    let p = program(name);
    let w = Work::new();
    let bin = w.build(&p, "gcc");
    for strategy in ["aggreplay+", "tplay+"] {
        for i in 0..RECORDINGS {
            let r = record(
                &w,
                &bin,
                &p.args,
                &format!("{name}-{strategy}-{i}.trace"),
                &["--strategy", strategy],
            );
            let verified = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                replay_verified(&w, &r, How::Plain)
            }));
            if let Err(e) = verified {
                let keep = Path::new(env!("CARGO_TARGET_TMPDIR")).join("failed-traces");
                let _ = std::fs::create_dir_all(&keep);
                let to = keep.join(format!("{name}-{strategy}-{i}.trace"));
                let _ = std::fs::copy(&r.trace, &to);
                eprintln!(
                    "{name} under {strategy}: recording {i} did not replay verified (trace kept at {})",
                    to.display()
                );
                std::panic::resume_unwind(e);
            }
        }
    }
}

macro_rules! plus_tests {
    ($($name:ident),*) => {$(
        #[test]
        fn $name() {
            plus_variants(stringify!($name));
        }
    )*};
}

plus_tests!(
    counter_race,
    check_then_act,
    order_violation,
    dcl,
    bank,
    prodcons,
    stencil,
    lockfree_stack,
    addresses,
    cxx_threads,
    spin_plain,
    spin_yield,
    trylock_loop,
    timedwait,
    detached_exit,
    errno_after,
    struct_copy_race,
    local_static,
    cv_wait_for,
    stdio_threads,
    tls_dtor,
    threads_rand,
    timestamps,
    echo_server,
    sigalrm,
    rdtsc,
    crash_sometimes,
    exit_after_create
);

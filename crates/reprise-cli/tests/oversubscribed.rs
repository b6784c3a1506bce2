//! Ownership recordings where owners are preempted: every thread of the recording pinned to one
//! CPU (so a thread that requests a granule always finds its owner not running), and a suite
//! program with four threads on the machine's two cores. A requester then takes the granule
//! without the owner's answer (`handover::steal`: a process-wide barrier, then the owner's
//! pending access decides); each such recording must replay verified, with the recording's
//! output and status, plainly and on one CPU, and racy programs must still show their races.

mod common;
use common::*;

const RECORDINGS: usize = 10;

fn pinned(name: &str) {
    let p = program(name);
    let w = Work::new();
    let bin = w.build(&p, "gcc");
    let mut outcomes = std::collections::BTreeSet::new();
    for i in 0..RECORDINGS {
        let r = record_on_one_cpu(&w, &bin, &p.args, &format!("{name}-{i}.trace"), &[]);
        outcomes.insert((r.stdout.clone(), r.status));
        replay_verified(&w, &r, How::Plain);
        replay_verified(&w, &r, How::OneCpu);
    }
    // Preempted owners must not serialise the race: unpinned recordings of the same binary
    // show at least two outcomes among pinned and unpinned ones together.
    let mut more = 0;
    while p.racy && outcomes.len() < 2 && more < 40 {
        let r = record(&w, &bin, &p.args, &format!("{name}-x{more}.trace"), &[]);
        outcomes.insert((r.stdout.clone(), r.status));
        replay_verified(&w, &r, How::Plain);
        more += 1;
    }
    assert!(
        !p.racy || outcomes.len() >= 2,
        "{name}: one outcome in {} recordings",
        RECORDINGS + more
    );
}

macro_rules! pinned_tests {
    ($($name:ident),*) => {$(
        #[test]
        fn $name() {
            pinned(stringify!($name));
        }
    )*};
}

pinned_tests!(
    counter_race,
    bank,
    struct_copy_race,
    lockfree_stack,
    stencil,
    prodcons,
    cxx_threads
);

/// A suite kernel whose data migrates between threads every phase (an FFT's butterflies and
/// bit-reversal), with four threads on two cores: every recording replays verified.
#[test]
fn fft_four_threads() {
    let w = Work::new();
    let src = root().join("bench/programs/fft.c");
    let o = w
        .cmd()
        .args(["cc", "-O2", "-o", "fft"])
        .arg(&src)
        .arg("-lm")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let args: Vec<String> = ["-t", "4", "-n", "16384"].map(String::from).to_vec();
    for i in 0..5 {
        let r = record(&w, "fft", &args, &format!("fft-{i}.trace"), &[]);
        assert_eq!(r.status, 0);
        replay_verified(&w, &r, How::Plain);
        let r = record_on_one_cpu(&w, "fft", &args, &format!("fft-p{i}.trace"), &[]);
        assert_eq!(r.status, 0);
        replay_verified(&w, &r, How::Plain);
    }
}

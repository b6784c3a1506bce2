//! OpenMP (gcc -fopenmp, libgomp), as scientific codes use it: `tests/programs/openmp.c`.
//! In full mode libgomp itself is not instrumented: its critical sections, atomic sections and
//! locks are ordered by the runtime's interposers (`csrc/shim_omp.c`), the reduction's
//! compare-exchange loop (which gcc does not instrument) stays with its instrumented atomic
//! load, and libgomp's thread count comes from the recorded CPU affinity; loop chunks (ordered
//! loops too), singles, sections and copyprivate are recorded results, ordered blocks are
//! ordered like critical sections and tasks run undeferred. In sync mode the same locks are
//! ordered and nothing else needs to be.

mod common;
use common::*;
use std::process::Command;

const RECORDINGS: usize = 20;

/// The output's first line (the parallel sum), which no interleaving may change.
fn sum_line(out: &[u8]) -> String {
    String::from_utf8_lossy(out)
        .lines()
        .next()
        .unwrap_or("")
        .to_string()
}

fn native(w: &Work) -> Vec<u8> {
    let src = root().join("tests/programs/openmp.c");
    let ok = Command::new("gcc")
        .args(["-O2", "-fopenmp", "-o"])
        .arg(w.path("openmp-native"))
        .arg(&src)
        .status()
        .unwrap();
    assert!(ok.success(), "gcc -fopenmp failed");
    let o = Command::new(w.path("openmp-native")).output().unwrap();
    assert!(o.status.success());
    o.stdout
}

#[test]
fn openmp_full_mode() {
    let w = Work::new();
    let want = sum_line(&native(&w));
    let mut c = w.cmd();
    c.args(["cc", "-O2", "-g", "-fopenmp", "-o", "openmp"])
        .arg(root().join("tests/programs/openmp.c"));
    let o = c.output().unwrap();
    assert!(
        o.status.success(),
        "reprise cc -fopenmp failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut outcomes = std::collections::BTreeSet::new();
    for i in 0..RECORDINGS {
        let r = record(&w, "openmp", &[], &format!("omp-{i}.trace"), &[]);
        assert_eq!(r.status, 0);
        assert_eq!(
            sum_line(&r.stdout),
            want,
            "the recorded sum differs from a native run's"
        );
        outcomes.insert(r.stdout.clone());
        replay_verified(&w, &r, How::Plain);
        replay_verified(&w, &r, How::OneCpu);
        replay_verified(&w, &r, How::Jitter(i as u64 + 1));
    }
    assert!(
        outcomes.len() >= 2,
        "every recording went through the critical sections in the same order"
    );
}

#[test]
fn openmp_sync_mode() {
    let w = Work::new();
    let want = sum_line(&native(&w));
    for i in 0..RECORDINGS / 2 {
        let trace = w.path(&format!("s-{i}.trace"));
        let c = w.record_cmd(&trace, &[], "openmp-native");
        let o = run_limited(c, std::time::Duration::from_secs(120));
        let r = recorded(trace, &o);
        assert_eq!(sum_line(&r.stdout), want);
        replay_verified(&w, &r, How::Plain);
        replay_verified(&w, &r, How::OneCpu);
    }
}

/// A replay that may run on fewer CPUs than the recording could warns for an OpenMP program:
/// the program sees the recorded CPUs, so libgomp's threads spin at every wait as if each had
/// a CPU of its own, and on one CPU each wait spins its full count while the thread it waits
/// for cannot run (clustalo: 0.15 s natively, 25-55 s in a pinned replay). A replay on as
/// many CPUs says nothing.
#[test]
fn a_replay_on_fewer_cpus_than_recorded_warns_for_openmp() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        eprintln!("one CPU: nothing to compare");
        return;
    }
    let w = Work::new();
    native(&w);
    let trace = w.path("few.trace");
    let o = run_limited(
        w.record_cmd(&trace, &[], "openmp-native"),
        std::time::Duration::from_secs(120),
    );
    let r = recorded(trace, &o);
    let warning = format!("reprise: warning: this replay may run on 1 CPU(s), the recording on {cpus}; the program uses OpenMP");
    let mut pinned = Command::new("taskset");
    pinned
        .current_dir(w.dir.path())
        .args(["-c", "0"])
        .arg(reprise())
        .arg("replay")
        .arg(&r.trace);
    let mut plain = w.cmd();
    plain.arg("replay").arg(&r.trace);
    for (c, warns) in [(pinned, true), (plain, false)] {
        let o = run_limited(c, std::time::Duration::from_secs(120));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("reprise: replay verified"), "{err}");
        assert_eq!(err.contains(&warning), warns, "{err}");
        assert_eq!(err.contains("this replay may run on"), warns, "{err}");
    }
}

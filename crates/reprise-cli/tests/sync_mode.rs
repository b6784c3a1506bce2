//! Sync mode (issue 14): unmodified programs built with plain gcc/g++, recorded with the
//! runtime injected by `LD_PRELOAD` (synchronisation and system calls ordered, no memory
//! accesses). Data-race-free programs replay verified with the recorded output and status every
//! time; a racy one either replays verified with the recorded output or exits 125 naming the
//! probable data race, never a wrong "verified", never a hang.
//!
//! The issue's acceptance counts: every data-race-free program of tests/programs and the four
//! Debian programs recorded 20 times, each recording replayed plainly and pinned to one core
//! (`taskset`, the CPUs taken in turn), both verified; every racy program recorded 20 times, each replay verified
//! with the recorded output and status or 125 with the data-race message.

mod common;
use common::*;
use std::process::Command;
use std::time::Duration;

const RECORDINGS: usize = 20;
const RACE_MESSAGE: &str =
    "the program probably has a data race here (or synchronises with atomic instructions, which sync mode does not see): record it with `reprise cc` for exact replay";

fn info(w: &Work, trace: &std::path::Path) -> String {
    let mut c = w.cmd();
    c.arg("info").arg(trace);
    let o = run_limited(c, Duration::from_secs(60));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Record a race-free program `RECORDINGS` times in sync mode (chosen automatically, said in
/// one line); every recording is replayed plainly and on one CPU, each verified with the
/// recording's output and status.
fn race_free(name: &str) {
    let p = program(name);
    let w = Work::new();
    let bin = w.build_plain(&p);
    for i in 0..RECORDINGS {
        let trace = w.path(&format!("{name}-{i}.trace"));
        let mut c = w.record_cmd(&trace, &[], &bin);
        c.args(&p.args);
        let o = run_limited(c, Duration::from_secs(120));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(
            err.lines()
                .filter(|l| l.contains("recording in sync mode"))
                .count(),
            1,
            "no one-line sync-mode notice:\n{err}"
        );
        let r = recorded(trace, &o);
        if i == 0 {
            assert!(info(&w, &r.trace).contains("mode: sync"));
        }
        replay_verified(&w, &r, How::Plain);
        replay_verified(&w, &r, How::OneCpu);
    }
}

macro_rules! race_free_tests {
    ($($name:ident),*) => {$(
        #[test]
        fn $name() {
            race_free(stringify!($name));
        }
    )*};
}

race_free_tests!(
    prodcons,
    bank,
    cxx_threads,
    stdio_threads,
    timedwait,
    threads_rand,
    trylock_loop,
    cv_wait_for,
    detached_exit,
    stencil,
    addresses,
    timestamps,
    huge_heap,
    fork_system,
    echo_server,
    quick_exit,
    cond_alarm,
    kill_self,
    // Which thread frees a job's memory is decided by an atomic reference count: a heap
    // object's address may differ in replay, its identity (`heap::stable_id`) does not.
    future_pool,
    // A signal the program sends itself is delivered after its sending (lbzip2 -d).
    self_signal,
    semaphores,
    // The program's own SIGSYS handlers beside the runtime's (every bash script with an EXIT
    // trap died of SIGSYS while recorded).
    sigsys_handler,
    // SIGCHLD among 400 lines of output, delivered after the recorded line (dash: a wait's
    // SIGCHLD came late, 7 replays of 10 diverged).
    signal_lines,
    // Which thread initialises a C++ local static varies (its output too); only that
    // thread's guard calls are events, so every replay takes the recorded one's.
    local_static
);

/// Racy programs built with plain gcc/g++ (data races, or inline atomics sync mode cannot
/// see): each replay is verified with the recorded output and status, or exits 125 with the
/// data-race message; never a mismatching "verified", no hang.
fn racy(name: &str) {
    let p = program(name);
    let w = Work::new();
    let bin = w.build_plain(&p);
    let (mut verified, mut diverged) = (0, 0);
    for i in 0..RECORDINGS {
        let r = record(&w, &bin, &p.args, &format!("{name}-{i}.trace"), &[]);
        let mut c = w.cmd();
        c.arg("replay").arg(&r.trace).args(["--timeout", "20"]);
        let o = run_limited(c, Duration::from_secs(120));
        let err = String::from_utf8_lossy(&o.stderr);
        if err.contains("reprise: replay verified") {
            assert_eq!(o.stdout, r.stdout, "verified with another output:\n{err}");
            assert_eq!(shell_status(&o), r.status, "verified with another status");
            verified += 1;
        } else {
            assert_eq!(shell_status(&o), 125, "not 125:\n{err}");
            assert!(err.contains(RACE_MESSAGE), "no data-race message:\n{err}");
            diverged += 1;
        }
    }
    eprintln!("{name}: {verified} verified, {diverged} diverged (data race named)");
}

macro_rules! racy_tests {
    ($($name:ident),*) => {$(
        #[test]
        fn $name() {
            racy(stringify!($name));
        }
    )*};
}

racy_tests!(
    check_then_act,
    order_violation,
    struct_copy_race,
    lockfree_stack,
    spin_plain,
    errno_after,
    tls_dtor,
    thread_exit,
    crash_sometimes,
    dcl,
    spin_yield,
    sigalrm,
    libc_names,
    libc_names_cxx,
    cxx20_sync
);

/// counter_race built with plain gcc: each replay verified with the recorded output and status,
/// or 125 with the data-race message; a diverged one replayed again with `--attempts 10`.
#[test]
fn counter_race_is_verified_or_named() {
    let p = program("counter_race");
    let w = Work::new();
    let bin = w.build_plain(&p);
    let (mut verified, mut diverged, mut retried) = (0, 0, 0);
    for i in 0..RECORDINGS {
        let r = record(&w, &bin, &p.args, &format!("race-{i}.trace"), &[]);
        let mut c = w.cmd();
        c.arg("replay").arg(&r.trace).args(["--timeout", "30"]);
        let o = run_limited(c, Duration::from_secs(120));
        let err = String::from_utf8_lossy(&o.stderr);
        if err.contains("reprise: replay verified") {
            assert_eq!(o.stdout, r.stdout, "verified with another output:\n{err}");
            assert_eq!(shell_status(&o), r.status, "verified with another status");
            verified += 1;
        } else {
            assert_eq!(shell_status(&o), 125, "not 125:\n{err}");
            assert!(
                err.lines().any(|l| l == format!("reprise: {RACE_MESSAGE}")),
                "no data-race message:\n{err}"
            );
            diverged += 1;
            // Seed 002's re-execution: replays with varied timing until one verifies.
            let mut c = w.cmd();
            c.arg("replay")
                .arg(&r.trace)
                .args(["--timeout", "30", "--attempts", "10"]);
            let o = run_limited(c, Duration::from_secs(600));
            let err = String::from_utf8_lossy(&o.stderr);
            if err.contains("reprise: replay verified") {
                assert_eq!(o.stdout, r.stdout, "verified with another output:\n{err}");
                assert_eq!(shell_status(&o), r.status);
                assert!(err.contains("verified on attempt"), "{err}");
                retried += 1;
            } else {
                assert_eq!(shell_status(&o), 125, "not 125:\n{err}");
                assert!(err.contains("(in each of 10 attempts)"), "{err}");
                assert!(err.contains(RACE_MESSAGE), "{err}");
            }
        }
    }
    eprintln!("counter_race: {verified} verified, {diverged} diverged (data race named), {retried} of those verified with --attempts 10");
}

/// `--mode full` on a plain binary and `--mode sync` on a `reprise cc` one are refused with one
/// `reprise:` line; the program never sees LD_PRELOAD (nor do its children, nor its
/// /proc/self/environ), and its stack
/// and heap addresses are the recorded ones in replay.
#[test]
fn modes_and_hidden_preload() {
    let w = Work::new();
    std::fs::write(
        w.path("envp.c"),
        r#"#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void) {
    const char *p = getenv("LD_PRELOAD");
    /* The kernel's copy of the environment. */
    static char b[65536];
    FILE *f = fopen("/proc/self/environ", "r");
    size_t n = f ? fread(b, 1, sizeof b, f) : 0;
    for (size_t i = 0; i + 10 <= n; i++)
        if (!memcmp(b + i, "LD_PRELOAD", 10)) return 4;
    if (n == 0) return 5;
    int x;
    void *m = malloc(100);
    printf("LD_PRELOAD=%s stack=%p heap=%p\n", p ? p : "(unset)", (void *)&x, m);
    fflush(stdout);
    return system("env | grep -c LD_PRELOAD >/dev/null") == 0 ? 3 : 0;
}
"#,
    )
    .unwrap();
    let o = Command::new("gcc")
        .current_dir(w.dir.path())
        .args(["-O2", "-o", "envp", "envp.c"])
        .output()
        .unwrap();
    assert!(o.status.success());
    let mut c = w.cmd();
    c.args(["record", "--mode", "full", "--", "./envp"]);
    let o = run_limited(c, Duration::from_secs(60));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(shell_status(&o), 1, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("reprise: ./envp was not built with `reprise cc`"));

    let r = record(&w, "envp", &[], "envp.trace", &["--mode", "sync"]);
    let out = String::from_utf8_lossy(&r.stdout);
    assert!(out.starts_with("LD_PRELOAD=(unset) "), "{out}");
    assert_eq!(
        r.status, 0,
        "a child (3) or /proc/self/environ (4) showed LD_PRELOAD"
    );
    replay_verified(&w, &r, How::Plain);

    let mut c = w.cmd();
    c.args(["cc", "-O2", "-o", "envp-full", "envp.c"]);
    assert!(run_limited(c, Duration::from_secs(60)).status.success());
    let mut c = w.cmd();
    c.args(["record", "--mode", "sync", "--", "./envp-full"]);
    let o = run_limited(c, Duration::from_secs(60));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(shell_status(&o), 1, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");

    // Stripped, a `reprise cc` program is still recorded in full mode (the runtime's marker).
    let st = Command::new("strip")
        .current_dir(w.dir.path())
        .arg("envp-full")
        .status()
        .unwrap();
    assert!(st.success());
    let r = record(&w, "envp-full", &[], "stripped.trace", &[]);
    assert!(info(&w, &r.trace).contains("mode: full"));
    replay_verified(&w, &r, How::Plain);
}

/// Input of the 20-recording loops of the Debian programs: 2 MiB (two 1 MiB xz blocks, so two
/// threads compress; above the 1 MiB size from which file reads are re-executed by default).
/// The 20 MB file the issue names takes 1-5 s per run of each program; twenty recordings of
/// it, each replayed twice, would take CI's whole time budget, so one recording per program
/// uses it (`*_20mb`).
const SMALL_INPUT: usize = 2 << 20;
/// The issue's input size, for one recording per program.
const LARGE_INPUT: usize = 20 << 20;

/// Run `argv` natively in `w`; its output.
fn native(w: &Work, argv: &[&str]) -> Vec<u8> {
    let o = Command::new(argv[0])
        .current_dir(w.dir.path())
        .args(&argv[1..])
        .output()
        .unwrap_or_else(|e| panic!("{} (installed by scripts/test): {e}", argv[0]));
    assert!(o.status.success());
    o.stdout
}

/// Record `argv` (compressing input.txt to stdout) in `w` as `trace`: status 0 and the bytes of
/// a native run; replayed plainly and on one CPU, both verified with them.
fn debian_once(w: &Work, argv: &[&str], want: &[u8], trace: &str) -> Recorded {
    let trace = w.path(trace);
    let mut c = w.cmd();
    c.arg("record").arg("-o").arg(&trace).arg("--").args(argv);
    let o = run_limited(c, Duration::from_secs(300));
    let r = recorded(trace, &o);
    assert_eq!(r.status, 0, "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        r.stdout == want,
        "recorded output differs from a native run"
    );
    replay_verified(w, &r, How::Plain);
    replay_verified(w, &r, How::OneCpu);
    r
}

/// A Debian compressor (installed by scripts/test) with two threads compressing a generated
/// 2 MiB file to stdout: 20 recordings in sync mode, each the bytes of a native run, each
/// replayed plainly and on one CPU, verified with them.
fn debian(to_stdout: &[&str]) {
    let w = Work::new();
    input_file(&w, SMALL_INPUT);
    let want = native(&w, to_stdout);
    for i in 0..RECORDINGS {
        debian_once(&w, to_stdout, &want, &format!("{}-{i}.trace", to_stdout[0]));
    }
}

/// The same on the issue's 20 MB file, once: to stdout (replayed plainly and on one CPU), and
/// to a file `out` (`to_file`): the recording writes the bytes of a native run to it, the
/// replay (the file removed) writes no file and is verified.
fn debian_20mb(to_stdout: &[&str], to_file: &[&str], out: &str) {
    let w = Work::new();
    input_file(&w, LARGE_INPUT);
    let want = native(&w, to_stdout);
    debian_once(&w, to_stdout, &want, "stdout.trace");
    let trace = w.path("to-file.trace");
    let mut c = w.cmd();
    c.arg("record")
        .arg("-o")
        .arg(&trace)
        .arg("--")
        .args(to_file);
    let o = run_limited(c, Duration::from_secs(300));
    let r = recorded(trace, &o);
    assert_eq!(r.status, 0, "{}", String::from_utf8_lossy(&o.stderr));
    let written = std::fs::read(w.path(out)).expect("the recording wrote its file");
    assert!(
        written == want,
        "the file differs from a native run's output"
    );
    // Replayed right after the recording, its output file still there: the replay leaves it
    // as it is (its writes go nowhere; zstd's, made by stdio on a descriptor the program
    // opened write-only, once failed on the file reopened read-only and the replay diverged).
    let before = std::fs::metadata(w.path(out)).unwrap();
    replay_verified(&w, &r, How::Plain);
    let after = std::fs::metadata(w.path(out)).unwrap();
    assert!(
        std::fs::read(w.path(out)).unwrap() == want,
        "the replay changed {out}"
    );
    assert_eq!(
        (before.modified().unwrap(), before.permissions()),
        (after.modified().unwrap(), after.permissions()),
        "the replay changed {out}'s time or mode"
    );
    // And without it: the replay does not create it.
    std::fs::remove_file(w.path(out)).unwrap();
    replay_verified(&w, &r, How::Plain);
    assert!(!w.path(out).exists(), "the replay wrote {out}");
}

const PIGZ: &[&str] = &["pigz", "-p", "2", "-c", "input.txt"];
// Blocks of 1 MiB, so two threads compress.
const XZ: &[&str] = &["xz", "-T2", "--block-size=1MiB", "-3", "-c", "input.txt"];
const ZSTD: &[&str] = &["zstd", "-T2", "-q", "-c", "input.txt"];
const PBZIP2: &[&str] = &["pbzip2", "-p2", "-c", "input.txt"];

#[test]
fn pigz() {
    debian(PIGZ);
}

/// Also: the 20 MB input's reads are re-executed in replay (hash-checked), so a replay with the
/// input changed or missing is refused naming it; with `--portable` every byte read is in the
/// trace and the replay needs no input.
#[test]
fn pigz_20mb() {
    debian_20mb(
        PIGZ,
        &["pigz", "-p", "2", "-k", "input.txt"],
        "input.txt.gz",
    );
    let w = Work::new();
    input_file(&w, LARGE_INPUT);
    let want = native(&w, PIGZ);
    let r = debian_once(&w, PIGZ, &want, "default.trace");
    let mut text = std::fs::read(w.path("input.txt")).unwrap();
    text[1000] ^= 1;
    std::fs::write(w.path("input.txt"), &text).unwrap();
    let err = replay_rejected(&w, &r.trace);
    assert!(
        err.contains("the recording re-reads ") && err.contains("input.txt"),
        "{err}"
    );
    assert!(err.contains("changed since the recording"), "{err}");
    text[1000] ^= 1;
    std::fs::write(w.path("input.txt"), &text).unwrap();
    // The gzip header holds the input's modification time, changed by the rewrite.
    let want = native(&w, PIGZ);
    let trace = w.path("portable.trace");
    let mut c = w.cmd();
    c.arg("record")
        .arg("-o")
        .arg(&trace)
        .arg("--portable")
        .arg("--")
        .args(PIGZ);
    let o = run_limited(c, Duration::from_secs(300));
    let p = recorded(trace, &o);
    assert!(
        p.stdout == want,
        "recorded output differs from a native run"
    );
    std::fs::remove_file(w.path("input.txt")).unwrap();
    let err = replay_rejected(&w, &r.trace);
    assert!(
        err.contains("input.txt") && err.contains("is missing"),
        "{err}"
    );
    replay_verified(&w, &p, How::Plain);
}

#[test]
fn xz() {
    debian(XZ);
}

#[test]
fn xz_20mb() {
    debian_20mb(
        XZ,
        &["xz", "-T2", "--block-size=1MiB", "-3", "-k", "input.txt"],
        "input.txt.xz",
    );
}

#[test]
fn zstd() {
    debian(ZSTD);
}

#[test]
fn zstd_20mb() {
    debian_20mb(
        ZSTD,
        &["zstd", "-T2", "-q", "input.txt", "-o", "out.zst"],
        "out.zst",
    );
}

#[test]
fn pbzip2() {
    debian(PBZIP2);
}

#[test]
fn pbzip2_20mb() {
    debian_20mb(
        PBZIP2,
        &["pbzip2", "-p2", "-k", "input.txt"],
        "input.txt.bz2",
    );
}

/// `reprise bench --mode sync --quick`: a suite program built with plain gcc and pigz, one run
/// each: the table names both with their replay verified.
#[test]
fn bench_sync_quick() {
    let w = Work::new();
    let mut c = w.cmd();
    c.current_dir(root())
        .args([
            "bench",
            "--mode",
            "sync",
            "--quick",
            "--programs",
            "histogram,pigz",
        ])
        .arg("--out")
        .arg(w.path("out"));
    let o = run_limited(c, Duration::from_secs(300));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(shell_status(&o), 0, "{err}");
    let md = std::fs::read_to_string(w.path("out/bench-sync.md")).unwrap();
    for row in ["| histogram | suite |", "| pigz | Debian |"] {
        let line = md.lines().find(|l| l.starts_with(row));
        // The verified column, then the attempts column ("-": not a racy program).
        assert!(
            line.is_some_and(|l| l.ends_with("| 1/1 | - |")),
            "{row}:\n{md}"
        );
    }
    assert!(md.contains("suite: record/native geomean"), "{md}");
}

/// Changes to the file system besides writes are revocable and path status is recorded: a
/// program that makes a directory, writes a file in it, gives it a mode and times, renames it,
/// checks it with `stat` and removes another file records them all; its replay, with the
/// recording's results undone, changes nothing and is verified (it sees the recorded `stat`).
#[test]
fn file_system_changes_are_revocable() {
    let w = Work::new();
    std::fs::write(
        w.path("fsops.c"),
        r#"#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utime.h>
int main(void) {
    if (mkdir("d", 0755) != 0) return 10;
    int fd = open("d/a", O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0 || write(fd, "hello\n", 6) != 6) return 11;
    close(fd);
    if (chmod("d/a", 0640) != 0) return 12;
    struct utimbuf t = {1000000000, 1000000000};
    if (utime("d/a", &t) != 0) return 13;
    if (rename("d/a", "d/b") != 0) return 14;
    struct stat st;
    if (stat("d/b", &st) != 0 || !S_ISREG(st.st_mode) || st.st_size != 6) return 15;
    printf("mode=%o mtime=%ld\n", (unsigned)(st.st_mode & 0777), (long)st.st_mtime);
    if (remove("victim") != 0) return 16;
    return 0;
}
"#,
    )
    .unwrap();
    let o = Command::new("gcc")
        .current_dir(w.dir.path())
        .args(["-O2", "-o", "fsops", "fsops.c"])
        .output()
        .unwrap();
    assert!(o.status.success());
    std::fs::write(w.path("victim"), "x").unwrap();
    let r = record(&w, "fsops", &[], "fsops.trace", &[]);
    assert_eq!(r.status, 0, "{}", String::from_utf8_lossy(&r.stderr));
    assert_eq!(
        String::from_utf8_lossy(&r.stdout),
        "mode=640 mtime=1000000000\n"
    );
    assert!(w.path("d/b").exists() && !w.path("victim").exists());
    std::fs::remove_dir_all(w.path("d")).unwrap();
    std::fs::write(w.path("victim"), "x").unwrap();
    replay_verified(&w, &r, How::Plain);
    assert!(!w.path("d").exists(), "the replay made the directory");
    assert!(w.path("victim").exists(), "the replay removed a file");
}

/// While the runtime is active a clock is read with the system call, not the vDSO, whose reads
/// of the time-stamp counter the runtime traps: each vDSO read cost a fault and two `prctl`
/// calls, which Syscall User Dispatch trapped in turn (sysbench memory, a clock read per
/// operation: 0.99 s recorded against 0.03 s native, 0.04 s now). No `prctl` is trapped.
#[test]
fn clock_reads_trap_no_system_call() {
    let p = program("timestamps");
    let w = Work::new();
    let bin = w.build_plain(&p);
    let trace = w.path("clock.trace");
    let mut c = w.record_cmd(&trace, &[], &bin);
    c.args(&p.args);
    let o = run_limited(c, Duration::from_secs(120));
    let r = recorded(trace, &o);
    let i = info(&w, &r.trace);
    let trapped = i
        .lines()
        .find(|l| l.contains("caught by Syscall User Dispatch"))
        .unwrap_or_default();
    assert!(!trapped.contains("prctl"), "{i}");
    replay_verified(&w, &r, How::Plain);
}

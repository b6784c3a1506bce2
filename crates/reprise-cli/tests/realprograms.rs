//! Real programs' ways that broke recording (issue 12): threads that end by `pthread_exit` from
//! any depth or by cancellation (cleanup handlers and C++ destructors run by glibc's forced
//! unwind), a main thread that ends by `pthread_exit`, a program that names its own globals and
//! functions `send`, `recv`, `poll`, `time`, `read`, heaps of many gigabytes mostly untouched,
//! and input read through stdio from a file or pipe on stdin and from `fopen`ed files
//! (processes the program makes: `children.rs`).
//!
//! Each program is built with gcc and with clang and recorded [`RECORDINGS`] times; every
//! recording must show what the program prints when it works (the cleanup handlers' and
//! destructors' notes, the allocations, the bytes read) and replay verified with the recording's
//! output and exit status, with no input attached (stdin is /dev/null in replay) and without the
//! files the program read. A failing recording's trace is kept under
//! `target/tmp/failed-traces/`.

mod common;
use common::kept::*;
use common::*;
use std::process::Command;

const RECORDINGS: usize = 20;

/// Build `name` with `compiler`, record it [`RECORDINGS`] times (stdin from `input(i)`, after
/// `before(i)`), check each recording's output with `check`, and replay each verified (after
/// `before_replay(i)`).
fn run(
    name: &str,
    compiler: &str,
    mut before: impl FnMut(&Work, usize) -> Option<Vec<u8>>,
    mut before_replay: impl FnMut(&Work, usize),
    check: impl Fn(&str, &str),
) {
    let p = program(name);
    let w = Work::new();
    let bin = w.build(&p, compiler);
    for i in 0..RECORDINGS {
        let input = before(&w, i);
        let file = w.path("stdin.input");
        let stdin = match &input {
            None => Input::Null,
            Some(data) if i % 2 == 0 => {
                std::fs::write(&file, data).unwrap();
                Input::File(&file)
            }
            Some(data) => Input::Pipe(data),
        };
        let (r, ours) = record_stdin(&w, &bin, &p.args, &format!("{name}-{i}.trace"), stdin);
        let out = String::from_utf8_lossy(&r.stdout).into_owned();
        check(&out, &ours);
        before_replay(&w, i);
        replay_kept(&w, &r, &format!("{name}-{compiler}-{i}"));
    }
}

/// Positions of `words` in `s`, asserting each is there.
fn positions(s: &str, words: &[&str]) -> Vec<usize> {
    words
        .iter()
        .map(|w| {
            s.find(w)
                .unwrap_or_else(|| panic!("`{w}` missing from:\n{s}"))
        })
        .collect()
}

fn in_order(s: &str, words: &[&str]) {
    let p = positions(s, words);
    assert!(
        p.windows(2).all(|w| w[0] < w[1]),
        "{words:?} not in this order in:\n{s}"
    );
}

fn no_unseen_cancellation(ours: &str) {
    assert!(
        !ours.contains("does not interpose"),
        "a cancellation was not seen by the runtime:\n{ours}"
    );
}

fn thread_exit(compiler: &str) {
    run(
        "thread_exit",
        compiler,
        |_, _| None,
        |_, _| {},
        |out, ours| {
            no_unseen_cancellation(ours);
            for l in [
                "T0 -> 100",
                "T1 -> 101",
                "T2 -> 102",
                "T3 -> -1",
                "T4 -> -1",
                "T5 -> -1",
                "T6 -> -1",
            ] {
                assert!(out.contains(l), "`{l}` missing from:\n{out}");
            }
            let log = out
                .lines()
                .find(|l| l.starts_with("log: "))
                .expect("no log line");
            in_order(log, &["b0", "a0"]);
            positions(log, &["p1", "e2", "w3", "s4", "t5", "r6"]);
            assert!(!out.contains("unreachable"), "{out}");
        },
    );
}

fn thread_exit_cxx(compiler: &str) {
    run(
        "thread_exit_cxx",
        compiler,
        |_, _| None,
        |_, _| {},
        |out, ours| {
            no_unseen_cancellation(ours);
            for l in ["T0 -> 100", "T1 -> -1", "T2 -> -1", "T3 -> 103"] {
                assert!(out.contains(l), "`{l}` missing from:\n{out}");
            }
            let log = out
                .lines()
                .find(|l| l.starts_with("log: "))
                .expect("no log line");
            in_order(log, &["~3", "~2", "~1", "f0"]);
            in_order(log, &["c2", "~s2"]);
            positions(log, &["~w1", "~r3", "~x4"]);
            assert!(!out.contains("unreachable"), "{out}");
        },
    );
}

fn main_pthread_exit(compiler: &str) {
    run(
        "main_pthread_exit",
        compiler,
        |_, _| None,
        |_, _| {},
        |out, _| {
            let l = out
                .lines()
                .find(|l| l.contains("order: "))
                .unwrap_or_else(|| panic!("{out}"));
            in_order(l, &["order: main", "w"]);
            positions(l, &["w1", "w2"]);
        },
    );
}

fn libc_names(compiler: &str) {
    run(
        "libc_names",
        compiler,
        |_, _| None,
        |_, _| {},
        |out, _| {
            // (poll[0] is raced on: "poll" or "Poll".)
            assert!(
                out.contains("send=157 recv=4005,4006,3699,3700 poll="),
                "{out}"
            );
            assert!(out.contains("oll time=1002 calls=3"), "{out}");
        },
    );
}

fn libc_names_cxx(compiler: &str) {
    run(
        "libc_names_cxx",
        compiler,
        |_, _| None,
        |_, _| {},
        |out, _| {
            assert!(out.contains("send=157 recv=391,392,363,364 poll="), "{out}");
            assert!(out.contains("time=1002 calls="), "{out}");
        },
    );
}

fn huge_heap(compiler: &str) {
    run(
        "huge_heap",
        compiler,
        |_, _| None,
        |_, _| {},
        |out, _| {
            for l in [
            "allocated 4+4 blocks of 2150000000 bytes; 2^46: NULL; SIZE_MAX: NULL; calloc overflow: NULL",
            "checksums fe7809d33d6d480a 1b814191df083e9a",
            "blocks disjoint: yes",
        ] {
            assert!(out.contains(l), "`{l}` missing from:\n{out}");
        }
        },
    );
}

fn fnv(mut h: u64, b: &[u8]) -> u64 {
    for &x in b {
        h = (h ^ x as u64).wrapping_mul(1099511628211);
    }
    h
}
const FNV0: u64 = 1469598103934665603;

/// stdin_scanf's input for recording `i` and the line it must print about it.
fn scanf_input(i: usize) -> (Vec<u8>, String) {
    let mut x: u64 = 0x9e37_79b9 + i as u64;
    let mut next = || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) as i64
    };
    let nums: Vec<i64> = (0..200).map(|_| next() % 2001 - 1000).collect();
    let line = format!("line {i} of the input, read by fgets\n");
    let rest: Vec<u8> = (0..30000).map(|_| b' ' + (next() % 95) as u8).collect();
    let mut input = format!(
        "{}\n{}\n",
        nums.len(),
        nums.iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    )
    .into_bytes();
    input.extend_from_slice(line.as_bytes());
    input.extend_from_slice(&rest);
    let h = fnv(fnv(FNV0, line.as_bytes()), &rest);
    let want = format!(
        "stdin: count=200 sum={} nl=10 line={} rest={} hash={h:016x} eof=1",
        nums.iter().sum::<i64>(),
        line.len(),
        rest.len()
    );
    (input, want)
}

const SCANF_FILE: &str = "123 456\nsecond line of the file\n";

fn stdin_scanf(compiler: &str) {
    let file_rest = format!("{}\n", "x".repeat(3000));
    let file_hash = fnv(
        fnv(FNV0, b"second line of the file\n"),
        file_rest.as_bytes(),
    );
    let file_want = format!(
        "file: scanned 2 (123 456) c=10 line=24 rest={} hash={file_hash:016x}",
        file_rest.len()
    );
    let wants = std::cell::RefCell::new(Vec::new());
    run(
        "stdin_scanf",
        compiler,
        |w, i| {
            std::fs::write(
                w.path("stdin_scanf.input"),
                format!("{SCANF_FILE}{file_rest}"),
            )
            .unwrap();
            let (input, want) = scanf_input(i);
            wants.borrow_mut().push(want);
            Some(input)
        },
        |w, _| {
            // Replay needs neither stdin (it is /dev/null) nor the file the program fopen'ed.
            std::fs::remove_file(w.path("stdin_scanf.input")).unwrap();
            std::fs::remove_file(w.path("stdin.input")).ok();
        },
        |out, _| {
            let want = wants.borrow().last().unwrap().clone();
            assert!(out.contains(&want), "`{want}` missing from:\n{out}");
            assert!(
                out.contains(&file_want),
                "`{file_want}` missing from:\n{out}"
            );
        },
    );
}

both_compilers!(
    thread_exit,
    thread_exit_cxx,
    main_pthread_exit,
    libc_names,
    libc_names_cxx,
    huge_heap,
    stdin_scanf
);

/// The file system's free space and files are recorded results (lrzip checks its output's file
/// system for room before it writes, and every replay diverged there): `timestamps` prints them
/// four ways (`statvfs`, `fstatvfs`, `statfs`, `fstatfs`); 4 MiB written and synced and a file
/// made between the recording and its replay move them, and the replay must print the
/// recording's values, in full mode and in sync mode.
#[test]
fn free_space_asked_of_the_file_system_replays_as_recorded() {
    use std::io::Write as _;
    let p = program("timestamps");
    let w = Work::new();
    for bin in [w.build(&p, "gcc"), w.build_plain(&p)] {
        let r = record(&w, &bin, &p.args, &format!("{bin}.trace"), &[]);
        assert_eq!(r.status, 0, "{}", String::from_utf8_lossy(&r.stderr));
        let mut f = std::fs::File::create(w.path(&format!("{bin}.filler"))).unwrap();
        f.write_all(&vec![1u8; 4 << 20]).unwrap();
        f.sync_all().unwrap();
        replay_verified(&w, &r, How::Plain);
    }
}

/// The runtime archive defines no name of libc or libstdc++ strongly: a program may
/// define any of them itself (its definition then wins), as with those libraries alone.
#[test]
fn runtime_takes_no_library_name_strongly() {
    let archive = reprise().parent().unwrap().join("libreprise_rt.a");
    let mut lib_names = std::collections::BTreeSet::new();
    for (cc, lib) in [("gcc", "libc.so.6"), ("g++", "libstdc++.so.6")] {
        let o = Command::new(cc)
            .arg(format!("-print-file-name={lib}"))
            .output()
            .unwrap();
        let path = String::from_utf8(o.stdout).unwrap().trim().to_string();
        let o = Command::new("nm")
            .args(["-D", "--defined-only", &path])
            .output()
            .unwrap();
        assert!(o.status.success(), "nm {path} failed");
        for l in String::from_utf8_lossy(&o.stdout).lines() {
            if let Some(name) = l.split_whitespace().nth(2) {
                lib_names.insert(name.split('@').next().unwrap().to_string());
            }
        }
    }
    assert!(lib_names.contains("send") && lib_names.contains("pthread_mutex_lock"));
    let o = Command::new("nm")
        .args(["-g", "--defined-only"])
        .arg(&archive)
        .output()
        .unwrap();
    assert!(o.status.success(), "nm {} failed", archive.display());
    let strong: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3 && matches!(f[1], "T" | "D" | "B" | "R") && lib_names.contains(f[2]))
                .then(|| f[2].to_string())
        })
        .collect();
    assert!(
        strong.is_empty(),
        "the runtime defines these library names strongly: {strong:?}"
    );
    let weak_send = String::from_utf8_lossy(&o.stdout)
        .lines()
        .any(|l| l.ends_with(" W send"));
    assert!(weak_send, "the runtime no longer interposes send (weakly)?");
}

const SEGV_IGNORED: &str = r#"
#include <signal.h>
#include <stdio.h>
int main(void) {
    signal(SIGSEGV, SIG_IGN);
    struct sigaction old;
    sigaction(SIGSEGV, NULL, &old);
    printf("ignored: %d\n", old.sa_handler == SIG_IGN);
    fflush(stdout);
    volatile int *p = NULL;
    return *p;
}
"#;

/// A program that ignores SIGSEGV and then faults dies of it, as the kernel forces the default
/// action for a fault, and sees its own (ignoring) action: the runtime keeps the program's
/// SIGSEGV action behind its handler (`kept.rs`) and must not return into the fault, which
/// faults again forever. Full mode and sync mode.
#[test]
fn an_ignored_sigsegv_still_ends_a_faulting_program() {
    let w = Work::new();
    for bin in w.build_source("segv_ignored", SEGV_IGNORED, "-O0") {
        let r = record(&w, &bin, &[], &format!("{bin}.trace"), &[]);
        assert_eq!(
            r.status,
            128 + libc::SIGSEGV,
            "{}",
            String::from_utf8_lossy(&r.stderr)
        );
        assert_eq!(r.stdout, b"ignored: 1\n");
        replay_verified(&w, &r, How::Plain);
    }
}

/// A program whose stderr ends without a newline: reprise's closing line still starts a line
/// of its own, recording and replaying (it was written right after the program's text).
#[test]
fn the_closing_line_starts_a_line_after_a_program_left_one_open() {
    let w = Work::new();
    let t = w.path("open.trace");
    let mut c = w.cmd();
    c.arg("record")
        .arg("-o")
        .arg(&t)
        .args(["--", "sh", "-c", "printf 'half a line' >&2"]);
    let o = run_limited(c, std::time::Duration::from_secs(60));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("half a line\nreprise: trace saved"), "{err}");
    let mut c = w.cmd();
    c.arg("replay").arg(&t);
    let o = run_limited(c, std::time::Duration::from_secs(60));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("half a line\nreprise: replay verified"),
        "{err}"
    );
}

/// The string functions full mode does itself give libc's answers: `string_fns` built with
/// `reprise cc` (gcc and clang) prints what the same program built with plain gcc prints, and
/// its recording replays verified.
#[test]
fn runtime_string_functions_answer_as_libc() {
    let p = program("string_fns");
    let w = Work::new();
    let plain = w.build_plain(&p);
    let native = Command::new(w.path(&plain)).output().unwrap();
    assert!(native.status.success());
    for cc in ["gcc", "clang"] {
        let bin = w.build(&p, cc);
        let r = record(&w, &bin, &[], &format!("{bin}.trace"), &[]);
        assert_eq!(
            String::from_utf8_lossy(&r.stdout),
            String::from_utf8_lossy(&native.stdout),
            "{cc}"
        );
        assert_eq!(r.status, 0);
        replay_kept(&w, &r, &bin);
    }
}

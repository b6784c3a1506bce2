//! Inputs and the outside world: stdin data is recorded and replayed without the input, a
//! program appending to a log file does not append again in replay, a Makefile project
//! builds with `make CC="reprise cc"` and replays verified, C++ iostream input replays without
//! it, and a program sees its arguments and environment while recorded as natively.

mod common;
use common::kept::{record_stdin, Input};
use common::*;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
fn stdin_is_recorded_and_replayed_without_it() {
    let p = program("stdin_pipe");
    let w = Work::new();
    let bin = w.build(&p, "gcc");
    let input: String = (0..20000).map(|i| format!("{i}\n")).collect();
    for i in 0..5 {
        let t = w.path(&format!("stdin-{i}.trace"));
        let mut c = w.record_cmd(&t, &[], &bin);
        c.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        let mut sin = child.stdin.take().unwrap();
        let data = input.clone();
        let feeder = std::thread::spawn(move || {
            // Several writes, so reads see the data in pieces.
            for piece in data.as_bytes().chunks(7000) {
                let _ = sin.write_all(piece);
                std::thread::sleep(Duration::from_millis(2));
            }
        });
        let o = child.wait_with_output().unwrap();
        feeder.join().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(String::from_utf8_lossy(&o.stdout).contains("bytes="));
        // Replay with no input at all: the data comes from the trace.
        let r = Recorded {
            trace: t,
            stdout: o.stdout,
            stderr: vec![],
            status: 0,
        };
        replay_verified(&w, &r, How::Plain);
        replay_verified(&w, &r, How::Jitter(3));
    }
}

#[test]
fn appending_program_does_not_append_in_replay() {
    let p = program("append_log");
    let w = Work::new();
    let bin = w.build(&p, "gcc");
    let log = w.path("reprise-test.log");
    for i in 0..10 {
        let r = record(&w, &bin, &p.args, &format!("a-{i}.trace"), &[]);
        let after_record = std::fs::read(&log).unwrap();
        replay_verified(&w, &r, How::Plain);
        replay_verified(&w, &r, How::OneCpu);
        assert_eq!(
            std::fs::read(&log).unwrap(),
            after_record,
            "the replay changed the log file"
        );
    }
}

#[test]
fn makefile_project_builds_records_and_replays() {
    let w = Work::new();
    let src = root().join("tests/makefile-project");
    let dst = w.path("proj");
    std::fs::create_dir_all(&dst).unwrap();
    for e in std::fs::read_dir(&src).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
    }
    let cc = format!("{} cc", reprise().display());
    let o = Command::new("make")
        .current_dir(&dst)
        .arg(format!("CC={cc}"))
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "make failed:\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    // Every run: the mutex-protected table's total is invariant, printed as the program ran;
    // the racy parts (who inserted each key first, the lost updates) show several outcomes.
    let mut outcomes = std::collections::BTreeSet::new();
    let mut i = 0;
    while i < 10 || (outcomes.len() < 2 && i < 40) {
        let r = record(&w, "proj/app", &[], &format!("m-{i}.trace"), &[]);
        assert_eq!(r.status, 0);
        let out = String::from_utf8_lossy(&r.stdout).into_owned();
        assert!(out.starts_with("table: "), "{out}");
        assert!(out.contains("\ntable total=900 (expected 900)\n"), "{out}");
        assert!(out.contains("racy counter="), "{out}");
        outcomes.insert(r.stdout.clone());
        replay_verified(&w, &r, How::Plain);
        if i < 10 {
            replay_verified(&w, &r, How::Jitter(i + 1));
        }
        i += 1;
    }
    assert!(
        outcomes.len() >= 2,
        "all {i} recordings of the racy project printed the same: the recorder serialised it"
    );
}

/// A full-mode program reading a 3 MiB file in blocks that worker threads checksum (the shape
/// of a parallel compressor): its reads are re-executed in replay and checked by hash. Each
/// recording prints what a native run prints and replays verified, plainly and jittered. (The
/// first such read sends the file's identity to the launcher while recording; that runtime
/// work once counted as two program events, through the `--wrap`ped memset and memcpy, and
/// every replay diverged at the read: pbzip2 built with `reprise c++` on a 4 MB file.)
#[test]
fn large_file_reads_replay_in_full_mode() {
    let p = program("block_reader");
    let w = Work::new();
    input_file(&w, 3 << 20);
    let bin = w.build(&p, "gcc");
    let native = w.build_plain(&p);
    let want = Command::new(w.path(&native))
        .current_dir(w.dir.path())
        .output()
        .unwrap();
    assert!(want.status.success());
    for i in 0..3 {
        let r = record(&w, &bin, &[], &format!("blocks-{i}.trace"), &[]);
        assert_eq!(r.status, 0);
        assert_eq!(
            String::from_utf8_lossy(&r.stdout),
            String::from_utf8_lossy(&want.stdout)
        );
        replay_verified(&w, &r, How::Plain);
        replay_verified(&w, &r, How::Jitter(i + 1));
    }
}

/// A C++ program that reads stdin only through `std::cin` (libstdc++ calls `getc`/`ungetc` from
/// its shared library) and a file through `std::ifstream`, recorded with stdin from a file:
/// the output equals a native g++ build's, and the replay, with no stdin and without the
/// file, verifies. The replay read nothing from std::cin (0 lines, diverged) while the stdio
/// interposers were linked only into programs calling stdio themselves.
#[test]
fn cxx_iostream_input_replays_without_it() {
    let p = program("stdin_cin");
    let w = Work::new();
    let text: String = (0..30000)
        .map(|i| format!("line {i} of {}\n", i * 7))
        .collect();
    std::fs::write(w.path("in.txt"), &text).unwrap();
    let native = w.build_plain(&p);
    let want = native_stdout(&w, &native, "in.txt", "in.txt");
    assert!(String::from_utf8_lossy(&want).starts_with("stdin lines 30000 "));
    for compiler in ["gcc", "clang"] {
        let bin = w.build(&p, compiler);
        for i in 0..2 {
            std::fs::write(w.path("in.txt"), &text).unwrap();
            let trace = format!("cin-{compiler}-{i}.trace");
            let r = record_from_file(&w, &bin, "in.txt", &trace, "in.txt");
            assert_eq!(
                String::from_utf8_lossy(&r.stdout),
                String::from_utf8_lossy(&want)
            );
            std::fs::remove_file(w.path("in.txt")).unwrap();
            replay_verified(&w, &r, How::Plain);
            replay_verified(&w, &r, How::Jitter(3));
        }
    }
}

/// What the plain build `bin` prints run natively as `./bin ARG` with stdin from the file
/// `input` (in `w`): what its recordings must print.
fn native_stdout(w: &Work, bin: &str, arg: &str, input: &str) -> Vec<u8> {
    let o = Command::new(w.path(bin))
        .arg(arg)
        .current_dir(w.dir.path())
        .stdin(std::fs::File::open(w.path(input)).unwrap())
        .output()
        .unwrap();
    o.stdout
}

/// Record `./bin ARG` with stdin from the file `input` (in `w`): the program must exit 0 and
/// write nothing to stderr (its replays are compared with that).
fn record_from_file(w: &Work, bin: &str, arg: &str, trace: &str, input: &str) -> Recorded {
    let input = w.path(input);
    let (r, ours) = record_stdin(w, bin, &[arg.to_string()], trace, Input::File(&input));
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status, 0, "{ours}{err}");
    assert!(err.is_empty(), "{err}");
    r
}

/// `std::random_device` (libstdc++'s reads the CPU's `rdrand`) and glibc's `arc4random`
/// family and `getentropy` (the `getrandom` system call inside libc): their values are
/// recorded and given back in replay, in full mode (gcc, clang) and in sync mode (a plain
/// build). The three recordings of each build print other numbers; every replay verifies.
/// Before, every replay diverged (the values were drawn again).
#[test]
fn random_values_are_replayed() {
    random_values("random_device");
    random_values("kernel_random");
}

fn random_values(name: &str) {
    let p = program(name);
    let w = Work::new();
    let bins = [w.build(&p, "gcc"), w.build(&p, "clang"), w.build_plain(&p)];
    for bin in &bins {
        let mut outs = std::collections::BTreeSet::new();
        for i in 0..3 {
            let r = record(&w, bin, &[], &format!("{name}-{bin}-{i}.trace"), &[]);
            assert_eq!(r.status, 0);
            assert!(String::from_utf8_lossy(&r.stdout).starts_with("thread 0: "));
            outs.insert(r.stdout.clone());
            replay_verified(&w, &r, How::Plain);
            replay_verified(&w, &r, How::Jitter(2));
        }
        assert_eq!(
            outs.len(),
            3,
            "{bin}: the recordings printed the same numbers"
        );
    }
}

/// Input read through `mmap` (gcc build, and a plain build in sync mode): standard input (a
/// regular file, which replay does not have) is mapped from the trace; a mapped file is mapped
/// again, and replay refuses it, naming it, once it changed. Before, the replay of a mapped
/// standard input was stuck (its mmap failed on /dev/null), and a changed mapped file was a
/// bare digest mismatch.
#[test]
fn mapped_input_replays_and_a_changed_mapped_file_is_named() {
    let p = program("mapped_input");
    let w = Work::new();
    let text: String = (0..40000)
        .map(|i| format!("{i} squared is {}\n", i * i))
        .collect();
    std::fs::write(w.path("stdin.txt"), &text).unwrap();
    std::fs::write(w.path("data.txt"), text.replace('1', "one")).unwrap();
    let plain = w.build_plain(&p);
    let want = native_stdout(&w, &plain, "data.txt", "stdin.txt");
    assert!(String::from_utf8_lossy(&want).starts_with("stdin "));
    for bin in [w.build(&p, "gcc"), plain] {
        let trace = format!("mapped-{bin}.trace");
        let r = record_from_file(&w, &bin, "data.txt", &trace, "stdin.txt");
        assert_eq!(
            String::from_utf8_lossy(&r.stdout),
            String::from_utf8_lossy(&want)
        );
        replay_verified(&w, &r, How::Plain);
        replay_verified(&w, &r, How::Jitter(2));
        let keep = std::fs::read(w.path("data.txt")).unwrap();
        std::fs::write(w.path("data.txt"), b"other bytes\n").unwrap();
        let why = replay_rejected(&w, &r.trace);
        assert!(why.contains("data.txt") && why.contains("changed"), "{why}");
        std::fs::write(w.path("data.txt"), keep).unwrap();
    }
}

/// A command's output read with `popen(cmd, "r")` (gcc build, and a plain build in sync
/// mode): the recording prints what a native run prints (SIGPIPE at its default: the
/// launcher's Rust runtime ignores it, and the program inherited that), and its replays verify
/// without running the command again (its log keeps one line per recording). Before, the
/// command ran again in replay, into a pipe nobody read, and pclose's status differed.
#[test]
fn popen_output_replays_without_running_the_command() {
    let p = program("popen_read");
    let w = Work::new();
    let plain = w.build_plain(&p);
    let want = Command::new(w.path(&plain))
        .arg("native.log")
        .current_dir(w.dir.path())
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&want.stdout),
        "1\n2\n3\ndone\nstatus 768\nSIGPIPE default\nsum 4999950000\n"
    );
    let mut recordings = 0;
    for bin in [w.build(&p, "gcc"), plain] {
        for i in 0..2 {
            let args = ["runs.log".to_string()];
            let r = record(&w, &bin, &args, &format!("popen-{bin}-{i}.trace"), &[]);
            recordings += 1;
            assert_eq!(r.stdout, want.stdout);
            assert_eq!(
                String::from_utf8_lossy(&r.stderr),
                "",
                "the command's stderr"
            );
            replay_verified(&w, &r, How::Plain);
            replay_verified(&w, &r, How::Jitter(2));
            let runs = std::fs::read_to_string(w.path("runs.log")).unwrap();
            assert_eq!(
                runs.lines().count(),
                recordings,
                "the command ran in replay"
            );
        }
    }
}

/// Scratch files made with `mkstemp`, written, read back and unlinked (gcc build, and a plain
/// build in sync mode): the replays verify and leave no file behind. Before, each replay
/// created the files (libc's own open, which no interposer sees) and never removed them (the
/// program's unlink is not performed in replay).
#[test]
fn mkstemp_scratch_files_leave_nothing_in_replay() {
    let p = program("temp_files");
    let w = Work::new();
    std::fs::create_dir(w.path("scratch")).unwrap();
    for bin in [w.build(&p, "gcc"), w.build_plain(&p)] {
        let args = ["scratch".to_string()];
        let r = record(&w, &bin, &args, &format!("temp-{bin}.trace"), &[]);
        assert_eq!(
            String::from_utf8_lossy(&r.stdout),
            "read back 39731200 and 40140800\n"
        );
        replay_verified(&w, &r, How::Plain);
        replay_verified(&w, &r, How::Jitter(2));
        let left: Vec<_> = std::fs::read_dir(w.path("scratch")).unwrap().collect();
        assert!(left.is_empty(), "{bin}: files left: {left:?}");
    }
}

/// With --hash-reads, file reads are re-executed in replay; a file that changed since the
/// recording (here: the recording itself appended to it) is a clear error, not a wrong replay.
#[test]
fn hash_reads_detects_a_changed_file() {
    let p = program("append_log");
    let w = Work::new();
    let bin = w.build(&p, "gcc");
    std::fs::write(w.path("reprise-test.log"), "T9 seed line\n").unwrap();
    let r = record(&w, &bin, &p.args, "h.trace", &["--hash-reads"]);
    assert_eq!(r.status, 0);
    let why = replay_rejected(&w, &r.trace);
    assert!(why.contains("changed since the recording"), "{why}");
}

/// A recorded process that forks and calls system(): the children run unrecorded, unharmed
/// (no inherited rdtsc trap, no runtime descriptors), and the parent replays verified.
#[test]
fn fork_and_system_children_run_unrecorded() {
    let p = program("fork_system");
    let w = Work::new();
    let bin = w.build(&p, "gcc");
    for i in 0..3 {
        let r = record(&w, &bin, &p.args, &format!("f-{i}.trace"), &[]);
        let out = String::from_utf8_lossy(&r.stdout);
        assert!(
            out.contains("from-system") && out.contains("child=3") && out.contains("system=0"),
            "{out}"
        );
        replay_verified(&w, &r, How::Plain);
    }
}

/// A `reprise cc` program (gcc and clang) prints the same arguments and environment natively
/// and recorded; its replay, from an environment without the variable, prints the recorded
/// values (the program's environment is the recording's).
#[test]
fn program_sees_its_arguments_and_environment() {
    let p = program("env_args");
    let w = Work::new();
    for compiler in ["gcc", "clang"] {
        let bin = w.build(&p, compiler);
        let args = ["one".to_string(), "two words".to_string()];
        let native = Command::new(w.path(&bin))
            .args(&args)
            .env("REPRISE_PROBE", "probe-value")
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&native.stdout).into_owned();
        assert!(
            out.contains("main: REPRISE_PROBE=probe-value PATH set")
                && out.contains("thread: REPRISE_PROBE=probe-value"),
            "native run:\n{out}"
        );
        let t = w.path(&format!("env-{compiler}.trace"));
        let mut c = w.record_cmd(&t, &[], &bin);
        c.args(&args).env("REPRISE_PROBE", "probe-value");
        let o = run_limited(c, Duration::from_secs(60));
        assert_eq!(
            String::from_utf8_lossy(&o.stdout),
            out,
            "recorded with {compiler}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let r = recorded(t, &o);
        replay_verified(&w, &r, How::Plain);
    }
}

/// A directory listed with `opendir`/`readdir`/`rewinddir` and `scandir`, and a tree walked
/// with `nftw` and `glob` (gcc build, and a plain build in sync mode): the entries are recorded, so a replay after the directory changed, and after it
/// was removed, lists what the recording listed and verifies. Before, the replay read the
/// directory as it is now and diverged without naming it.
#[test]
fn directory_listings_replay_after_the_directory_changed() {
    let p = program("list_dir");
    let w = Work::new();
    for bin in [w.build(&p, "gcc"), w.build_plain(&p)] {
        let dir = w.path(&format!("listed-{bin}"));
        std::fs::create_dir(&dir).unwrap();
        for f in ["alpha", "beta", "gamma"] {
            std::fs::write(dir.join(f), f).unwrap();
        }
        let args = [dir.display().to_string()];
        let r = record(&w, &bin, &args, &format!("list-{bin}.trace"), &[]);
        assert_eq!(
            String::from_utf8_lossy(&r.stdout),
            "thread 0: 3 entries: alpha beta gamma\nthread 1: 3 entries: alpha beta gamma\n\
             scandir: 3 entries: alpha beta gamma\n",
            "{bin}"
        );
        replay_verified(&w, &r, How::Plain);
        std::fs::remove_file(dir.join("beta")).unwrap();
        std::fs::write(dir.join("delta"), "delta").unwrap();
        replay_verified(&w, &r, How::Plain);
        replay_verified(&w, &r, How::Jitter(2));
        std::fs::remove_dir_all(&dir).unwrap();
        replay_verified(&w, &r, How::Plain);
    }
    // A tree walked with nftw (the callback, program code, waits on a reader thread that
    // opens each file) and globbed.
    let p = program("walk_tree");
    for bin in [w.build(&p, "gcc"), w.build_plain(&p)] {
        let tree = w.path(&format!("tree-{bin}"));
        std::fs::create_dir_all(tree.join("sub/deeper")).unwrap();
        for i in 0..5 {
            std::fs::write(tree.join(format!("f{i}")), format!("file {i}\n")).unwrap();
            std::fs::write(tree.join(format!("sub/deeper/d{i}")), "deep\n").unwrap();
        }
        let args = [tree.display().to_string()];
        let r = record(&w, &bin, &args, &format!("walk-{bin}.trace"), &[]);
        assert_eq!(
            String::from_utf8_lossy(&r.stdout),
            "walk 0: 10 files, total 4720; glob 6\n",
            "{bin}"
        );
        std::fs::remove_file(tree.join("f0")).unwrap();
        std::fs::write(tree.join("sub/new"), "new").unwrap();
        replay_verified(&w, &r, How::Plain);
        replay_verified(&w, &r, How::Jitter(2));
        std::fs::remove_dir_all(&tree).unwrap();
        replay_verified(&w, &r, How::Plain);
    }
}

/// A small database's file handling (`file_store`: leveldb's calls; gcc build, and a plain
/// build in sync mode): a LOCK file opened O_RDWR and locked with fcntl/lockf/flock, `access`
/// asking whether CURRENT exists, a table written, synced, sized, mapped and removed, a log
/// mapped shared and writable. A replay with the recording's files left behind (CURRENT now
/// exists), and one after the directory is gone, verify and create nothing. Before, replay
/// opened LOCK read-only and fcntl(F_SETLK) failed on it, fsync failed on the placeholder,
/// `access` saw today's files, and the removed table's mapping failed; leveldb's db_bench
/// replayed none of its recordings.
#[test]
fn a_store_locked_synced_mapped_and_removed_replays_without_its_files() {
    let p = program("file_store");
    let w = Work::new();
    let sums = "table of 300000 bytes, sums 76373558 76264164, log sum 8355840\n";
    for bin in [w.build(&p, "gcc"), w.build_plain(&p)] {
        let dir = w.path(&format!("store-{bin}"));
        std::fs::create_dir(&dir).unwrap();
        let args = [dir.display().to_string()];
        let new = record(&w, &bin, &args, &format!("new-{bin}.trace"), &[]);
        let out = String::from_utf8_lossy(&new.stdout);
        assert_eq!(out, format!("new store table-000001: {sums}"), "{bin}");
        replay_verified(&w, &new, How::Plain);
        replay_verified(&w, &new, How::Jitter(2));
        let existing = record(&w, &bin, &args, &format!("existing-{bin}.trace"), &[]);
        let out = String::from_utf8_lossy(&existing.stdout);
        assert_eq!(out, format!("existing store table-000001: {sums}"), "{bin}");
        std::fs::remove_dir_all(&dir).unwrap();
        replay_verified(&w, &new, How::Plain);
        replay_verified(&w, &existing, How::Plain);
        assert!(!dir.exists(), "{bin}: a replay created {}", dir.display());
    }
}

/// Descriptors drawn by two threads at once (`fd_race`: pipes, dups and eventfds against opens
/// of a 2 MB file whose reads replay re-executes; gcc build, and a plain build in sync mode):
/// every replay gets the recording's numbers. Before, pipe, dup and eventfd took no turn and a
/// replayed open made its descriptor after its turn was released, so the two threads' numbers
/// crossed: 7 full-mode replays in 10 diverged ("the length of a re-executed file read ...
/// gave 0": the pipe thread had closed the file's descriptor).
#[test]
fn descriptors_drawn_by_two_threads_replay_with_their_numbers() {
    let p = program("fd_race");
    let w = Work::new();
    let data: Vec<u8> = (0..2_000_000u32)
        .map(|i| ((i * 2654435761) >> 13) as u8)
        .collect();
    std::fs::write(w.path("big.bin"), &data).unwrap();
    let want: u64 = (0..300u64)
        .map(|i| {
            let o = (i * 4096 % 1_900_000) as usize;
            data[o..o + 4096].iter().map(|&b| b as u64).sum::<u64>()
        })
        .sum();
    for bin in [w.build(&p, "gcc"), w.build_plain(&p)] {
        for i in 0..10 {
            let r = record(&w, &bin, &[], &format!("fd-{bin}-{i}.trace"), &[]);
            assert_eq!(String::from_utf8_lossy(&r.stdout), format!("sum {want}\n"));
            replay_verified(&w, &r, How::Plain);
        }
    }
}

/// Standard output written under other descriptors, and the offset of a file the program wrote
/// and removed (`out_aliases`; gcc build, and a plain build in sync mode): every replay prints
/// what the recording printed. Before, writes through `dup(1)` or `/dev/stdout` were taken
/// for file writes and dropped in replay ("stdout differs at byte 0": samtools index -o
/// /dev/stdout), and `lseek` ran on replay's placeholder for the removed file (0, not 100:
/// samtools sort's check of its temporary files' end).
#[test]
fn output_through_other_descriptors_and_offsets_of_removed_files_replay() {
    let p = program("out_aliases");
    let w = Work::new();
    let want = "through dup(1)\nthrough /dev/stdout\nthrough fopen(/dev/stdout)\n\
                temporary file size 100\n";
    for bin in [w.build(&p, "gcc"), w.build_plain(&p)] {
        for i in 0..3 {
            let r = record(&w, &bin, &[], &format!("alias-{bin}-{i}.trace"), &[]);
            assert_eq!(String::from_utf8_lossy(&r.stdout), want, "{bin}");
            replay_verified(&w, &r, How::Plain);
        }
    }
}

/// `shm_segment.c`: a System V segment's identifier is the kernel's choice, another in the
/// replay (fio diverged in every replay). The replay's shmget is performed, the program gets
/// the recorded identifier, and shmat/shmctl act on the replay's segment: full mode and sync
/// mode replay verified, and IPC_STAT still names the segment.
#[test]
fn a_shared_memory_segment_replays_with_its_recorded_identifier() {
    let w = Work::new();
    let p = program("shm_segment");
    let full = w.build(&p, "gcc");
    let plain = w.build_plain(&p);
    for (i, bin) in [&full, &full, &plain].into_iter().enumerate() {
        let r = record(&w, bin, &[], &format!("shm-{i}.trace"), &[]);
        assert_eq!(r.stdout, b"sum 24995000, id names the segment\n");
        replay_verified(&w, &r, How::Plain);
    }
}

/// `pin_threads.c`: a thread pinned by the id gettid gave it, the recording's (fio's clock
/// test): ESRCH in the replay before, whose fio took its error path and got stuck. The call is
/// performed on the thread the id names in this run and returns the recorded result, also in
/// a replay pinned to one CPU, where pinning to another fails. Full and sync mode.
#[test]
fn threads_pinned_by_their_given_ids_replay_also_on_one_cpu() {
    let w = Work::new();
    let p = program("pin_threads");
    for (i, bin) in [w.build(&p, "gcc"), w.build_plain(&p)].iter().enumerate() {
        let r = record(&w, bin, &[], &format!("pin-{i}.trace"), &[]);
        assert!(
            String::from_utf8_lossy(&r.stdout).contains("worker 1: by tid 0, by pthread 0"),
            "{}",
            String::from_utf8_lossy(&r.stdout)
        );
        replay_verified(&w, &r, How::Plain);
        replay_verified(&w, &r, How::OneCpu);
    }
}

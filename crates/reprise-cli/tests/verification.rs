//! Verification covers everything up to the end (issue 13): every thread still alive when the
//! process ends has a final checkpoint at its final event count, in the recording and in the
//! replay, and a replay whose final digest of such a thread differs is rejected by name.

mod common;
use common::*;
use reprise_proto::{decode_frames, encode_frame, Frame, Record};
use reprise_trace::{ChunkKind, TraceReader, TraceWriter};
use std::collections::BTreeMap;
use std::path::Path;

fn frames_of(trace: &Path) -> Vec<Frame> {
    let (_, chunks, _) = TraceReader::open(trace).unwrap().read_all().unwrap();
    let ev: Vec<u8> = chunks
        .iter()
        .filter(|c| c.kind == ChunkKind::Events)
        .flat_map(|c| c.data.clone())
        .collect();
    let (frames, used) = decode_frames(&ev).unwrap();
    assert_eq!(used, ev.len());
    frames
}

fn rewrite(src: &Path, dst: &Path, frames: &[Frame]) {
    let (header, chunks, footer) = TraceReader::open(src).unwrap().read_all().unwrap();
    let raw: Vec<u8> = frames.iter().flat_map(encode_frame).collect();
    let mut w = TraceWriter::new(std::fs::File::create(dst).unwrap(), &header).unwrap();
    w.write_chunk(ChunkKind::Events, &raw).unwrap();
    for c in chunks.iter().filter(|c| c.kind != ChunkKind::Events) {
        w.write_chunk(c.kind, &c.data).unwrap();
    }
    w.finish(&footer).unwrap();
}

/// Final event count of every thread, and each thread's digest checkpoints (event -> digest).
/// Per thread: final event counts, and (event, digest) checkpoints.
type FinalsAndDigests = (BTreeMap<u32, u64>, BTreeMap<u32, Vec<(u64, u64)>>);

fn finals_and_digests(frames: &[Frame]) -> FinalsAndDigests {
    let mut finals = BTreeMap::new();
    let mut digests: BTreeMap<u32, Vec<(u64, u64)>> = BTreeMap::new();
    for f in frames {
        match f {
            Frame::End { finals: fs, .. } => finals.extend(fs.iter().copied()),
            Frame::Thread { tid, records } => {
                for r in records {
                    if let Record::Digest(p) = r {
                        digests.entry(*tid).or_default().push((p.event, p.value));
                    }
                }
            }
            _ => {}
        }
    }
    (finals, digests)
}

/// detached_exit: main calls exit(0) while a detached thread runs a lock loop. The detached
/// thread's last events (fewer than a checkpoint interval) are checked by its final checkpoint.
fn alive_thread_final_checkpoint(strategy: &str) {
    let p = program("detached_exit");
    let w = Work::new();
    let bin = w.build(&p, "gcc");
    for k in 0..3 {
        let r = record(
            &w,
            &bin,
            &p.args,
            &format!("t{k}.trace"),
            &["--strategy", strategy],
        );
        replay_verified(&w, &r, How::Plain);
        let frames = frames_of(&r.trace);
        let (finals, digests) = finals_and_digests(&frames);
        assert!(
            finals.len() >= 2,
            "{strategy}: two threads expected: {finals:?}"
        );
        for (tid, e) in &finals {
            if *e == 0 || e % 4096 == 0 {
                continue;
            }
            let last = digests.get(tid).and_then(|d| d.last()).copied();
            assert_eq!(
                last.map(|(ev, _)| ev),
                Some(*e),
                "{strategy}: thread {tid} ended at event {e} without a final checkpoint there"
            );
        }
        // The detached thread (1) was alive at the end: change its final digest.
        let e1 = finals[&1];
        if e1 % 4096 == 0 {
            continue;
        }
        let changed = with_final_digest_changed(&frames, 1, e1);
        let dst = w.path(&format!("changed{k}.trace"));
        rewrite(&r.trace, &dst, &changed);
        let why = replay_rejected(&w, &dst);
        assert!(
            why.contains("thread 1 diverged") && why.contains(&format!("event {e1}")),
            "{strategy}: the reason does not name thread 1's final checkpoint: {why}"
        );
    }
}

#[test]
fn alive_thread_final_checkpoint_ownership() {
    alive_thread_final_checkpoint("ownership");
}

#[test]
fn alive_thread_final_checkpoint_leap() {
    alive_thread_final_checkpoint("leap");
}

/// copy_input reads 4096 bytes of stdin and memcpys them, printing only the count: a recorded
/// input changed past its first 64 bytes changes nothing the program prints, only what the
/// copy reads, which the ranged access's digest (all its bytes) names.
#[test]
fn ranged_access_digests_all_its_bytes() {
    let p = Program {
        name: "copy_input".into(),
        source: root().join("tests/programs/copy_input.c"),
        cplusplus: false,
        racy: false,
        crashes: false,
        clock: false,
        args: vec![],
    };
    let w = Work::new();
    let bin = w.build(&p, "gcc");
    let input: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(w.path("input.bin"), &input).unwrap();
    for strategy in ["ownership", "leap"] {
        let t = w.path(&format!("copy-{strategy}.trace"));
        let mut c = w.record_cmd(&t, &["--strategy", strategy], &bin);
        c.stdin(std::fs::File::open(w.path("input.bin")).unwrap());
        // (run_limited would give the program no stdin; this one reads a file and ends.)
        let o = c.output().unwrap();
        let r = recorded(t, &o);
        assert_eq!(r.stdout, b"read 4096 bytes\n");
        replay_verified(&w, &r, How::Plain);
        let mut frames = frames_of(&r.trace);
        let mut changed = false;
        for f in frames.iter_mut() {
            if let Frame::Thread { records, .. } = f {
                for rec in records.iter_mut() {
                    if let Record::Data(_, b) = rec {
                        if b.len() > 1000 {
                            b[1000] ^= 0x40;
                            changed = true;
                        }
                    }
                }
            }
        }
        assert!(changed, "{strategy}: no input record of 1000 bytes or more");
        let dst = w.path(&format!("copy-{strategy}-changed.trace"));
        rewrite(&r.trace, &dst, &frames);
        let why = replay_rejected(&w, &dst);
        assert!(
            why.contains("reprise: replay diverged: thread 0 diverged"),
            "{strategy}: {why}"
        );
    }
}

/// killed.c run without arguments until SIGTERM from outside, sent to the program (not the
/// recorder) after 400 ms: its three threads are alive when the signal ends the process. Every
/// one of them but the one the signal interrupted with an access pending (named in the end's
/// `addr` as its id + 1) has a final checkpoint at its final count; the replay is verified
/// (exit 143) and rejects a changed final digest of a thread the signal did not land on.
fn outside_signal_final_checkpoints(strategy: &str) {
    use std::time::Duration;
    let p = Program {
        name: "killed".into(),
        source: root().join("tests/programs/killed.c"),
        cplusplus: false,
        racy: true,
        crashes: false,
        clock: false,
        args: vec![],
    };
    let w = Work::new();
    let bin = w.build(&p, "gcc");
    let mut checked = 0;
    let mut outside = 0;
    for k in 0..3 {
        let t = w.path(&format!("term{k}.trace"));
        let (child, prog) = w.start_recording(&t, &["--strategy", strategy], &bin);
        std::thread::sleep(Duration::from_millis(400));
        // SAFETY: signalling the program this test started (through the recorder).
        unsafe { libc::kill(prog, libc::SIGTERM) };
        let o = wait_after_sigterm(child, prog, strategy);
        let r = recorded(t, &o);
        assert_eq!(r.status, 143, "{}", String::from_utf8_lossy(&o.stderr));
        let frames = frames_of(&r.trace);
        let end = frames
            .iter()
            .find_map(|f| match f {
                Frame::End { end, .. } => Some(*end),
                _ => None,
            })
            .expect("no end");
        assert_eq!(end.kind, reprise_proto::END_SIGNAL);
        // The signal landed on a thread busy inside the runtime: deferred to its next entry,
        // a recorded delivery, the end is that thread's (its finals are taken as for any
        // thread's end). Otherwise the end is from outside, belonging to no thread.
        let skip = if end.tid == reprise_proto::END_TID_NONE {
            outside += 1;
            end.addr.checked_sub(1).map(|s| s as u32)
        } else {
            None
        };
        let (finals, digests) = finals_and_digests(&frames);
        assert_eq!(finals.len(), 3, "{strategy}: {finals:?}");
        for (tid, e) in &finals {
            if *e == 0 || e % 4096 == 0 || Some(*tid) == skip {
                continue;
            }
            let last = digests.get(tid).and_then(|d| d.last()).copied();
            assert_eq!(
                last.map(|(ev, _)| ev),
                Some(*e),
                "{strategy}: thread {tid} was alive at event {e} without a final checkpoint there"
            );
            checked += 1;
        }
        replay_verified(&w, &r, How::Plain);
        // A changed final digest of a thread the signal did not land on is named.
        let Some((&tid, &e)) = finals
            .iter()
            .find(|(t, e)| Some(**t) != skip && **e % 4096 != 0)
        else {
            continue;
        };
        let changed = with_final_digest_changed(&frames, tid, e);
        let dst = w.path(&format!("term-changed{k}.trace"));
        rewrite(&r.trace, &dst, &changed);
        let why = replay_rejected(&w, &dst);
        assert!(
            why.contains(&format!("thread {tid} diverged")) && why.contains(&format!("event {e}")),
            "{strategy}: the reason does not name thread {tid}'s final checkpoint: {why}"
        );
    }
    assert!(
        checked >= 3,
        "{strategy}: only {checked} final checkpoints checked"
    );
    assert!(
        outside >= 1,
        "{strategy}: the signal never ended the process from outside"
    );
}

/// The recording's output once the SIGTERM sent to `prog` ended it. The program dies of it at
/// once (killed.c runs up to 60 s): bounded by a 30 s watchdog, not by the program; past it, the
/// program is killed and its threads' states are the panic message.
fn wait_after_sigterm(
    child: std::process::Child,
    prog: i32,
    strategy: &str,
) -> std::process::Output {
    use std::time::{Duration, Instant};
    let waiter = std::thread::spawn(move || child.wait_with_output().unwrap());
    let start = Instant::now();
    while !waiter.is_finished() {
        if start.elapsed() > Duration::from_secs(30) {
            let mut threads = String::new();
            for t in std::fs::read_dir(format!("/proc/{prog}/task"))
                .into_iter()
                .flatten()
                .flatten()
            {
                let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
                let wchan = std::fs::read_to_string(t.path().join("wchan")).unwrap_or_default();
                threads.push_str(&format!("{stat} {wchan}\n"));
            }
            // SAFETY: ending the program this test started.
            unsafe { libc::kill(prog, libc::SIGKILL) };
            panic!("{strategy}: the recording did not end after SIGTERM:\n{threads}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    waiter.join().unwrap()
}

/// `frames` with thread `tid`'s (last) digest at event `e` changed.
fn with_final_digest_changed(frames: &[Frame], tid: u32, e: u64) -> Vec<Frame> {
    let mut changed = frames.to_vec();
    let mut done = false;
    for f in changed.iter_mut().rev() {
        if let Frame::Thread { tid: ft, records } = f {
            if *ft != tid {
                continue;
            }
            if let Some(Record::Digest(d)) = records
                .iter_mut()
                .rev()
                .find(|r| matches!(r, Record::Digest(d) if d.event == e))
            {
                d.value ^= 1;
                done = true;
                break;
            }
        }
    }
    assert!(done);
    changed
}

#[test]
fn outside_signal_final_checkpoints_ownership() {
    outside_signal_final_checkpoints("ownership");
}

#[test]
fn outside_signal_final_checkpoints_leap() {
    outside_signal_final_checkpoints("leap");
}

/// padded_copy built at -O0 (as pbzip2's Makefile builds pbzip2) copies a stack temporary whose
/// padding the program never wrote, one 40-byte ranged read: those bytes are what the runtime's
/// own frames left there, which differ between record and replay, so a ranged read folds its
/// kind, not its bytes. Before, every replay diverged (thread 0's final
/// digest); now 5 recordings replay verified plainly and jittered.
#[test]
fn stack_padding_does_not_diverge() {
    let w = Work::new();
    let src = root().join("tests/programs/padded_copy.cpp");
    let o = w
        .cmd()
        .args(["c++", "-O0", "-g", "-std=c++20", "-o", "padded_copy-o0"])
        .arg(&src)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let args = ["0".to_string(), "1".to_string()];
    for i in 0..5 {
        let r = record(
            &w,
            "padded_copy-o0",
            &args,
            &format!("padded-{i}.trace"),
            &[],
        );
        assert_eq!(r.status, 0);
        assert_eq!(r.stdout, b"s=16\n");
        replay_verified(&w, &r, How::Plain);
        replay_verified(&w, &r, How::Jitter(i + 1));
    }
}

/// padded_heap_copy builds a 48-byte record by value in a helper (a stack temporary whose
/// padding the program never wrote), stores it into a heap block and copies that block into
/// another (one ranged read, `__tsan_read_range`): the padding carries into the heap what the
/// runtime's frames of the worker's synchronisation and access callbacks left on the stack,
/// which differs between record and replay, and the heap-to-heap copy reads it. A ranged
/// access folds its kind, not its bytes, wherever it reads. Before, every replay at these
/// depths (the helper that many frames below the worker) diverged under ownership (plainly
/// and jittered), and under LEAP at depth 5, as lbzip2 2.5's decompression with two workers
/// did in most replays.
#[test]
fn heap_padding_does_not_diverge() {
    let w = Work::new();
    let src = root().join("tests/programs/padded_heap_copy.c");
    let o = w
        .cmd()
        .args(["cc", "-O2", "-g", "-o", "padded_heap_copy"])
        .arg(&src)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for strategy in ["ownership", "leap"] {
        for depth in [1u64, 2, 3, 5, 6] {
            let r = record(
                &w,
                "padded_heap_copy",
                &[depth.to_string()],
                &format!("heap-{strategy}-{depth}.trace"),
                &["--strategy", strategy],
            );
            assert_eq!(r.status, 0);
            assert_eq!(r.stdout, b"sum=887208\n");
            replay_verified(&w, &r, How::Plain);
            replay_verified(&w, &r, How::Jitter(depth));
        }
    }
}

/// dead_local stores a struct sigaction into a frame that then returns, at stack depths 0 to
/// 512 bytes deeper in steps of 8; the next runtime entry is sysconf's interposer, whose first
/// call resolves libc's sysconf with dlsym, and dlsym's __sigsetjmp writes pointer-mangled
/// (random per process) words over dead stack. LEAP and `--verify=full` fold a plain access's
/// value at the next entry: before, at the depths where the two met (240 and 248 here) every
/// replay diverged (xz 5.4.1's `--version` under LEAP: the struct sigaction of its
/// message_init). The pending value is now folded before the first dlsym.
#[test]
fn a_dead_local_overwritten_by_dlsym_does_not_diverge() {
    let w = Work::new();
    let bin = w.build(&program("dead_local"), "gcc");
    for depth in (0..=512u32).step_by(8) {
        let extra: &[&str] = if depth % 16 == 0 {
            &["--strategy", "leap"]
        } else {
            &["--verify=full"]
        };
        let r = record(
            &w,
            &bin,
            &[depth.to_string()],
            &format!("dead-{depth}.trace"),
            extra,
        );
        assert_eq!(r.status, 0);
        assert_eq!(r.stdout, b"memory found: 1\n");
        replay_verified(&w, &r, How::Plain);
    }
}

/// padded_token copies a 16-byte record (a pointer, a length, 4 bytes of padding) whole out
/// of a stack array it filled field by field, as SQLite's parser copies its `Token`s: the
/// padding is what the runtime's frames left on the stack, which differs between record and
/// replay. A 16-byte access folds its kind, not its bytes: before, every replay diverged
/// under ownership (and the sqlite3 shell's, 0 of 24).
#[test]
fn a_padded_16_byte_copy_does_not_diverge() {
    let w = Work::new();
    let bin = w.build(&program("padded_token"), "gcc");
    for (i, strategy) in ["ownership", "ownership", "ownership", "leap"]
        .into_iter()
        .enumerate()
    {
        let r = record(
            &w,
            &bin,
            &[],
            &format!("token-{i}.trace"),
            &["--strategy", strategy],
        );
        assert_eq!(r.stdout, b"total 11900\n");
        replay_verified(&w, &r, How::Plain);
        replay_verified(&w, &r, How::Jitter(i as u64 + 1));
    }
}

/// `inline_copy.c`: 48-byte headers copied with `memcpy`, cleared with `memset` and compared
/// with `memcmp`, racily (SQLite's WAL index header). gcc expands such constant-size calls
/// inline after its ThreadSanitizer pass, so no callback saw them: every replay of a build
/// made that way diverged (0 of 10). `reprise cc` keeps them calls for gcc
/// (`cc::GCC_STRING_CALLS`), which the runtime wraps, memcmp and bcmp included, also under
/// `-D_FORTIFY_SOURCE=2`; clang makes them calls itself. Each recording replays verified with
/// the recording's output.
#[test]
fn racy_fixed_size_copies_and_compares_replay_verified() {
    let w = Work::new();
    let p = program("inline_copy");
    // glibc's _FORTIFY_SOURCE wrappers are builtins gcc expands inline whatever
    // -fno-builtin-memcpy says: `reprise cc` undefines it after the program's flags.
    let fortified = "inline_copy-fortify";
    let st = w
        .cmd()
        .args(["cc", "-O2", "-D_FORTIFY_SOURCE=2", "-o", fortified])
        .arg(&p.source)
        .status()
        .unwrap();
    assert!(st.success());
    for cc in ["gcc", "clang", "gcc -D_FORTIFY_SOURCE=2"] {
        let bin = match cc {
            "gcc" | "clang" => w.build(&p, cc),
            _ => fortified.to_string(),
        };
        for i in 0..6 {
            let strategy = if i % 3 == 2 { "leap" } else { "ownership" };
            let r = record(
                &w,
                &bin,
                &[],
                &format!("copy-{}-{i}.trace", cc.len()),
                &["--strategy", strategy],
            );
            assert!(
                String::from_utf8_lossy(&r.stdout).contains("reader 1: same"),
                "{}",
                String::from_utf8_lossy(&r.stdout)
            );
            replay_verified(&w, &r, How::Plain);
        }
    }
}

/// `stack_struct_copy.c`: a partly set local struct copied whole into the heap with `memcpy`
/// (x264's `x264_me_t`). Its unset bytes are what earlier frames, the runtime's included, left
/// on the stack, which differ between record and replay: a copy out of a stack folds its kind,
/// not its bytes (`layout::on_a_stack`); before, the copy through a function pointer diverged
/// in every replay, and gcc's direct copy too once it became a call.
#[test]
fn a_partly_set_stack_struct_copied_with_memcpy_does_not_diverge() {
    let w = Work::new();
    let p = program("stack_struct_copy");
    for cc in ["gcc", "clang"] {
        let bin = w.build(&p, cc);
        for strategy in ["ownership", "leap"] {
            let r = record(
                &w,
                &bin,
                &[],
                &format!("ssc-{cc}-{strategy}.trace"),
                &["--strategy", strategy],
            );
            assert_eq!(r.stdout, b"thread 0: 32006000\nthread 1: 32006000\n");
            replay_verified(&w, &r, How::Plain);
        }
    }
}

/// `void_result.c`: a `void` function called through a pointer to a function returning a
/// pointer, its "result" kept and read by another thread (x264's thread pool). That value is
/// what the function's last callback left in `%rax`, which the access callbacks set to 0 on
/// every path (`tsan::Settled`); before, record and replay left different runtime pointers
/// there and every ownership replay of x264 diverged where its main thread read `job->ret`.
#[test]
fn a_void_functions_kept_result_replays_verified() {
    let w = Work::new();
    let p = program("void_result");
    for cc in ["gcc", "clang"] {
        let bin = w.build(&p, cc);
        // Which path the last callback took (and so what it left) is timing: many recordings.
        for i in 0..21 {
            let strategy = if i == 20 { "leap" } else { "ownership" };
            let r = record(
                &w,
                &bin,
                &[],
                &format!("void-{cc}-{i}.trace"),
                &["--strategy", strategy],
            );
            assert_eq!(r.stdout, b"jobs done\n");
            replay_verified(&w, &r, How::Plain);
        }
    }
}

/// `stack_leftovers.c`: threads read a local buffer they never wrote, right after accesses whose
/// callbacks took their slow path (a shared counter changing owner): its bytes are what those
/// frames left. The slow path runs on the thread's runtime stack (`rtstack`), so the program's
/// stack holds the same bytes in both modes; before, 7-Zip's `7zr a` diverged in every replay.
#[test]
fn unwritten_stack_bytes_read_after_slow_paths_replay_verified() {
    let w = Work::new();
    let p = program("stack_leftovers");
    for cc in ["gcc", "clang"] {
        let bin = w.build(&p, cc);
        for i in 0..8 {
            let strategy = if i == 7 { "leap" } else { "ownership" };
            let r = record(
                &w,
                &bin,
                &[],
                &format!("left-{cc}-{i}.trace"),
                &["--strategy", strategy],
            );
            assert_eq!(r.stdout, b"done\n");
            replay_verified(&w, &r, How::Plain);
        }
    }
}

/// `--verify=full` folds each access's value once it is complete, at the thread's next runtime
/// entry, when the next callback already names another access as its pending one: a requester
/// could take the granule before the fold, which then read the requester's bytes. counter_race's
/// racy counter, recorded under ownership with a checkpoint at every event, diverged in 4 to 7
/// of 10 replays; the granule now stays with its owner until the fold.
#[test]
fn full_verification_of_a_racy_counter_replays_verified() {
    let p = program("counter_race");
    let w = Work::new();
    let bin = w.build(&p, "gcc");
    for i in 0..8 {
        let r = record(
            &w,
            &bin,
            &p.args,
            &format!("full-{i}.trace"),
            &["--verify=full"],
        );
        replay_verified(&w, &r, How::Plain);
    }
}

//! Processes a recorded program makes, which run unrecorded and again in replay: fork children
//! writing into pipes the program reads (bash's command substitutions), children reading pipes
//! the program writes, a pool of workers fed through a pipe main keeps, a SIGCHLD that
//! interrupts a read of a child's pipe, waits with a signal mask ended by one, children's pids
//! kept in memory, and shells (bash, dash) running commands. Each program is built with
//! `reprise cc` (full mode) and plain gcc (sync mode); every recording prints what the program
//! prints natively and replays verified. A failing recording's trace is kept under
//! `target/tmp/failed-traces/`.

mod common;
use common::kept::*;
use common::*;
use std::process::Command;

/// What each child of `fork_pipe` gives main, as printed natively.
const FORK_PIPE_OUT: &str = "late: 5 bytes, late\nlate: status 0\n\
    bulk: 262144 bytes, sum 28360704, status 0, its pid\n\
    lines: 3000, sum 4501500, status 0, its pid\n";

/// Fork children writing into pipes the program reads, closes and waits for (a shell's
/// `x=$(cmd)`), full mode and sync mode, 8 recordings each: the children run again in replay,
/// whose reads of their pipes read what they write again, as the recording did, and whose waits
/// reap the same children; the program gets the recorded bytes and statuses. Before, replay
/// read nothing: main closed the pipe before the late child wrote, which died of SIGPIPE, and
/// `waitpid` gave status 13 (every replay of `fork_pipe` diverged).
#[test]
fn fork_children_writing_into_pipes_replay_verified() {
    eight_recordings_per_mode_replay_verified("fork_pipe", FORK_PIPE_OUT);
}

/// Program `name` built with `reprise cc` (full mode) and with plain gcc (sync mode), recorded
/// 8 times each, printing `out` and exiting 0, every replay verified.
fn eight_recordings_per_mode_replay_verified(name: &str, out: &str) {
    let p = program(name);
    let w = Work::new();
    for bin in [w.build(&p, "gcc"), w.build_plain(&p)] {
        for i in 0..8 {
            let r = record(&w, &bin, &[], &format!("{bin}-{i}.trace"), &[]);
            assert_eq!(String::from_utf8_lossy(&r.stdout), out);
            assert_eq!(r.status, 0);
            replay_kept(&w, &r, &format!("{bin}-{i}"));
        }
    }
}

/// A child's SIGCHLD that interrupts main's read of the child's pipe, its handler reaping the
/// child (`sigchld_read`): 8 recordings per mode, each replay verified. Before, replay drained
/// the pipe by the next recorded result, which was the handler's (the child's pid), not the
/// read's 64 KiB: the child could not write its last bytes, and the handler's wait for it
/// (replay reaps the child the recording reaped) never returned. bash's `x=$(seq 1 100000)`
/// hung so in about one replay in 30 on CI's machine, whose pids are small.
#[test]
fn a_sigchld_during_a_read_of_the_childs_pipe_replays_verified() {
    eight_recordings_per_mode_replay_verified(
        "sigchld_read",
        "read 131072 bytes (sum 14352324); child exited 0\n",
    );
}

/// Waits that swap in a signal mask (`pselect_wait`): 8 recordings per mode, each replay
/// verified. Before, they were not interposed: a recording hung in the loop that waits for a
/// child's SIGCHLD (the handler, deferred to the thread's next runtime entry, had not run when
/// `pselect` returned EINTR), and a replay made them for real, so `make -j2`'s wait for its own
/// jobserver token (written into a pipe replay revokes) slept until a SIGCHLD and make took
/// another path ("its next recorded result belongs to event 44").
#[test]
fn waits_with_a_signal_mask_replay_verified() {
    eight_recordings_per_mode_replay_verified(
        "pselect_wait",
        "pselect: 1 ready, token's end set\nppoll: 1 ready, revents POLLIN\n\
         epoll_pwait: 1 ready, data 7\npselect on an empty pipe: 0 ready\n\
         pselect ended by SIGCHLD: EINTR, handler ran 1, child exited 3\n\
         token read back: 1 byte, +\n",
    );
}

/// A process pool fed through a pipe whose read end main keeps (`pool_pipes`, as Python's
/// `multiprocessing.Pool`): 8 recordings per mode, each replay verified. Before, main's task
/// writes were revocable (a pipe to itself, by its read end): not performed in replay, so the
/// workers that run again got no task, and the replay waited for their results until its
/// timeout (a `multiprocessing.Pool(2).map` likewise).
#[test]
fn a_pool_of_forked_workers_fed_through_a_shared_pipe_replays_verified() {
    eight_recordings_per_mode_replay_verified(
        "pool_pipes",
        "results 2000, tasks summed 1999000, squares summed 2664667000, workers exited 0 0\n",
    );
}

/// What `child_pids` prints natively.
const CHILD_PIDS_OUT: &str =
    "group: its own, probe: 0\nkilled: its pid, signal 15\nwaitpid: its pid, exit 11\n\
    waitid peek: its pid, exit 12\nwaitid: its pid, exit 12, code exited\nno more: -1\n";

/// Children's pids kept in memory (killed, waited for by `waitpid` and `waitid` through them),
/// full mode and sync mode, 8 recordings each, every replay verified. Full mode reads a pid in
/// memory through its callbacks: a replay gave the replay's pids, every such read went into the
/// value digest as another value, and every replay diverged (a `pid = fork()` kept on the stack
/// at `-O0` did the same); `waitid` was not interposed; a child killed just after its fork
/// could ignore the signal in replay, before its at-fork handler turned its runtime off, and
/// the replay waited for it until its timeout.
#[test]
fn children_pids_kept_in_memory_replay_verified() {
    eight_recordings_per_mode_replay_verified("child_pids", CHILD_PIDS_OUT);
}

/// What `fork_feed`'s children print and main prints of them, natively (`wc`'s count of
/// bytes and of lines, and the summing child's exit status).
const FORK_FEED_OUT: &str = "409600\nwc: status 0, its pid\n\
    summer: exit 160, its pid\n3000\npopen: status 0\n";

/// Children reading pipes the program writes into (a child execing `wc -c`, waited for by
/// polling `WNOHANG`; a forked child summing its input; `popen(cmd, "w")`), full mode and
/// sync mode, 8 recordings each: replay writes the recorded bytes into each pipe again, for the
/// child that runs again, and the replay's output (the children's included) is the
/// recording's. Before, those writes were revocable (not performed in replay): `wc` printed 0,
/// the summer exited 0, and every replay diverged on stdout, blamed on a data race.
#[test]
fn children_reading_pipes_the_program_writes_replay_verified() {
    eight_recordings_per_mode_replay_verified("fork_feed", FORK_FEED_OUT);
}

/// bash (sync mode) reading its children through pipes: command substitutions (one whose
/// subshell writes late, one of 588 KB, one of a pipeline) and a pipeline of three commands;
/// each recorded 8 times, printing what bash prints natively, and replayed verified. The
/// first two diverged in every replay before (the substitution's status, `$?`, was SIGPIPE's
/// 141), and `y=$(ls / | wc -l)` in some.
#[test]
fn bash_command_substitutions_and_pipelines_replay_verified() {
    shell_scripts_replay_verified(
        "/bin/bash",
        &[
            r#"x=$(sleep 0.02; echo late); echo "$x $?""#,
            // 588 KB, nine pipe capacities: the child exits while bash reads its last ones.
            r#"x=$(seq 1 100000); echo ${#x} $?"#,
            r#"x=$(echo hi); echo $x; y=$(ls / | wc -l); echo $y"#,
            r#"echo a b c | tr a-z A-Z | wc -c"#,
        ],
    );
}

/// dash (sync mode) running commands, which it starts with `vfork` and waits for while its
/// SIGCHLD arrives before or after the wait: 8 recordings of each script, replayed verified.
/// Before, 7 replays in 10 of the first diverged: each replayed line of output made one runtime
/// entry more than the recording's, so the recorded SIGCHLD came after the wait it had
/// preceded.
#[test]
fn dash_commands_replay_verified() {
    shell_scripts_replay_verified(
        "/bin/dash",
        &[
            "echo hi; /bin/true; echo $?; /bin/true; echo $?",
            "for i in 1 2 3; do /bin/echo $i; done; x=$(ls / | wc -l); echo $x",
        ],
    );
}

/// Each script run by `shell -c`, recorded 8 times, printing what the shell prints natively and
/// exiting 0, every replay verified.
fn shell_scripts_replay_verified(shell: &str, scripts: &[&str]) {
    let w = Work::new();
    for (k, script) in scripts.iter().enumerate() {
        let native = Command::new(shell)
            .args(["-c", script])
            .current_dir(w.dir.path())
            .output()
            .unwrap();
        assert!(native.status.success(), "{script}");
        for i in 0..8 {
            let t = w.path(&format!("shell-{k}-{i}.trace"));
            let mut c = w.cmd();
            c.arg("record").arg("-o").arg(&t);
            c.args(["--", shell, "-c", script]);
            let r = recorded(t, &run_limited(c, std::time::Duration::from_secs(120)));
            assert_eq!(
                String::from_utf8_lossy(&r.stdout),
                String::from_utf8_lossy(&native.stdout),
                "{script}"
            );
            assert_eq!(r.status, 0, "{script}");
            replay_kept(&w, &r, &format!("shell-{k}-{i}"));
        }
    }
}

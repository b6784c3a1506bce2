//! Helpers of the tests that record real programs many times and keep a failing recording's
//! trace (under `target/tmp/failed-traces/`): recording with stdin from a file, a pipe or
//! nothing, replaying with the trace kept on failure, and a test per compiler.

use super::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Where a failing recording's trace is kept.
pub fn failed_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("failed-traces")
}

/// Where the recording's stdin comes from.
pub enum Input<'a> {
    Null,
    File(&'a Path),
    Pipe(&'a [u8]),
}

/// Record `bin` with `stdin`; returns the recording and reprise's own stderr lines.
pub fn record_stdin(
    w: &Work,
    bin: &str,
    args: &[String],
    trace: &str,
    stdin: Input,
) -> (Recorded, String) {
    let t = w.path(trace);
    let mut c = w.cmd();
    c.arg("record")
        .arg("-o")
        .arg(&t)
        .arg("--")
        .arg(format!("./{bin}"))
        .args(args);
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    match stdin {
        Input::Null => c.stdin(Stdio::null()),
        Input::File(p) => c.stdin(std::fs::File::open(p).unwrap()),
        Input::Pipe(_) => c.stdin(Stdio::piped()),
    };
    let mut child = c.spawn().unwrap();
    let feeder = if let Input::Pipe(data) = stdin {
        let mut sin = child.stdin.take().unwrap();
        let data = data.to_vec();
        Some(std::thread::spawn(move || {
            for piece in data.chunks(5000) {
                let _ = sin.write_all(piece);
                std::thread::sleep(Duration::from_millis(1));
            }
        }))
    } else {
        None
    };
    let start = Instant::now();
    let pid = child.id();
    let watchdog = std::thread::spawn(move || {
        while start.elapsed() < Duration::from_secs(120) {
            std::thread::sleep(Duration::from_millis(50));
            // SAFETY: kill(2) with signal 0 only checks whether the process exists.
            if unsafe { libc::kill(pid as i32, 0) } != 0 {
                return;
            }
        }
        // SAFETY: the recorder we started, still running after the limit.
        unsafe { libc::kill(pid as i32, 9) };
    });
    let o = child.wait_with_output().unwrap();
    watchdog.join().unwrap();
    if let Some(f) = feeder {
        f.join().unwrap();
    }
    let ours: String = String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter(|l| l.starts_with("reprise:"))
        .map(|l| format!("{l}\n"))
        .collect();
    let r = recorded(t, &o);
    (r, ours)
}

/// Replay `r` verified; on failure keep its trace (as `name`) before failing.
pub fn replay_kept(w: &Work, r: &Recorded, name: &str) {
    replay_kept_how(w, r, name, How::Plain);
}

/// Replay `r` verified `how`; on failure keep its trace (as `name`) before failing.
pub fn replay_kept_how(w: &Work, r: &Recorded, name: &str, how: How) {
    let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| replay_verified(w, r, how)));
    if let Err(e) = res {
        let dir = failed_dir();
        std::fs::create_dir_all(&dir).ok();
        let keep = dir.join(format!("{name}.trace"));
        std::fs::copy(&r.trace, &keep).ok();
        eprintln!("kept the failing trace as {}", keep.display());
        std::panic::resume_unwind(e);
    }
}

/// `$name::gcc` and `$name::clang`: tests calling `$name("gcc")` and `$name("clang")`.
#[allow(unused_macros)]
macro_rules! both_compilers {
    ($($name:ident),*) => {$(
        mod $name {
            #[test]
            fn gcc() {
                super::$name("gcc");
            }
            #[test]
            fn clang() {
                super::$name("clang");
            }
        }
    )*};
}

#[allow(unused_imports)]
pub(crate) use both_compilers;

//! reprise's exit statuses: the errors whose kind decides the status ([`Failure`], each variant
//! with its status) and the statuses of runs that completed in a way the program's own status
//! does not say.

use std::path::PathBuf;

/// Exit status of `reprise record` (and of its replay) when the program deadlocked: the
/// recorder ended it (as `timeout` does a command that overran).
pub const DEADLOCK_STATUS: i32 = 124;

/// Exit status of `reprise record` when the program was not built with `reprise cc` (it ran,
/// but reported nothing to record): as a command that cannot do what was asked.
pub const NOT_INSTRUMENTED_STATUS: i32 = 2;

/// An error that ends reprise with a status of its own ([`Failure::status`]); any other error
/// ends it with 1.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// The program given with a `/` does not exist: 127, as a shell says.
    #[error("{}: no such file", .0.display())]
    NoSuchFile(PathBuf),
    /// The program is on no directory of `PATH`: 127.
    #[error("{}: command not found", .0.display())]
    NotFound(PathBuf),
    /// The program is not an executable file: 126.
    #[error("{}: not an executable file", .0.display())]
    NotExecutable(PathBuf),
    /// A replay refused to start, could not run or diverged: 125, whatever the reason (a
    /// verified replay exits with the recorded status instead).
    #[error("{0}")]
    Replay(String),
    /// A replay stopped by this signal (SIGINT, SIGTERM, SIGHUP) sent to reprise: no verdict;
    /// 128 + the signal, as a shell reports a command the signal ended.
    #[error("replay stopped by {} before its end: no verdict (the program was killed)", crate::loaded::signal_name(*.0))]
    Stopped(i32),
}

impl Failure {
    /// The exit status this failure ends reprise with.
    pub fn status(&self) -> i32 {
        match self {
            Failure::NoSuchFile(_) | Failure::NotFound(_) => 127,
            Failure::NotExecutable(_) => 126,
            Failure::Replay(_) => 125,
            Failure::Stopped(sig) => 128 + sig,
        }
    }

    /// Any error of a replay, as the replay failure it is (its message, with its causes).
    pub fn replay(e: anyhow::Error) -> anyhow::Error {
        match e.downcast::<Failure>() {
            Ok(f @ (Failure::Replay(_) | Failure::Stopped(_))) => f.into(),
            Ok(f) => Failure::Replay(f.to_string()).into(),
            Err(e) => Failure::Replay(format!("{e:#}")).into(),
        }
    }
}

/// The status for an error that ended a command: its [`Failure`]'s, else 1.
pub fn status_of(e: &anyhow::Error) -> i32 {
    e.downcast_ref::<Failure>().map_or(1, Failure::status)
}

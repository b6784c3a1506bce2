//! The program's output on its way through the launcher: to the sink, and echoed to
//! reprise's own stdout and stderr as it comes.

use super::{Msg, Sink};
use anyhow::Result;
use std::io::Write;

/// The last byte of the program's output echoed on each stream, and of both together
/// (`'\n'` before any), so that the launcher's closing line starts a line of its own.
#[derive(Clone, Copy)]
pub(super) struct Echoed {
    err: u8,
    any: u8,
}

impl Default for Echoed {
    fn default() -> Echoed {
        Echoed {
            err: b'\n',
            any: b'\n',
        }
    }
}

impl Echoed {
    /// End the program's last line if it left one open where reprise writes next: on stderr,
    /// or on stdout when both are one file (a terminal). `reprise: trace saved` followed
    /// `no newline` on the same line.
    pub(super) fn end_line(self) {
        use std::os::unix::fs::MetadataExt as _;
        let id = |fd: u8| {
            std::fs::metadata(format!("/proc/self/fd/{fd}"))
                .map(|m| (m.dev(), m.ino()))
                .ok()
        };
        let same = id(1).is_some() && id(1) == id(2);
        if (if same { self.any } else { self.err }) != b'\n' {
            eprintln!();
        }
    }
}

/// Hand `m` to `sink`, the program's output copied to reprise's own as well when `echo`
/// (unbuffered: it appears as the program writes it, and `echoed` notes its last byte);
/// whether `m` was the end of one of the pipes.
pub(super) fn deliver(
    m: Msg,
    echo: bool,
    echoed: &mut Echoed,
    sink: &mut dyn Sink,
) -> Result<bool> {
    if let (true, Msg::Stdout(b) | Msg::Stderr(b)) = (echo, &m) {
        if let Some(&last) = b.last() {
            echoed.any = last;
            if matches!(m, Msg::Stderr(_)) {
                echoed.err = last;
            }
        }
    }
    match m {
        Msg::Events(b) => sink.events(&b)?,
        Msg::Stdout(b) => {
            if echo {
                // Straight to descriptor 1: the program's output is written as it came, not
                // scanned for newlines and copied by a line buffer (nothing else of the
                // launcher's is buffered for stdout while a program runs).
                let _ = std::io::stdout().flush();
                // SAFETY: descriptor 1 stays open for the launcher's life; the File is never
                // dropped (ManuallyDrop), so it is not closed.
                let mut out = std::mem::ManuallyDrop::new(unsafe {
                    <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(1)
                });
                let _ = out.write_all(&b);
            }
            sink.stdout(&b)?
        }
        Msg::Stderr(b) => {
            if echo {
                let _ = std::io::stderr().write_all(&b);
            }
            sink.stderr(&b)?
        }
        Msg::Eof => return Ok(true),
    }
    Ok(false)
}

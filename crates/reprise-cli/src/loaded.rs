//! A trace read for replay, `info` and `view`: the header, the recording decoded chunk by chunk,
//! the outputs left compressed, the footer (or what a trace without one implies).

use crate::exit::Failure;
use crate::outcheck::RecordedOutput;
use crate::recording::Recording;
use anyhow::Result;
use reprise_trace::{ChunkKind, TraceReader};

/// A trace read whole ([`load`]).
pub struct Loaded {
    /// The header: program, arguments, environment, strategy.
    pub header: reprise_trace::Header,
    /// The decoded events.
    pub rec: Recording,
    /// The program's recorded stdout, compressed as stored (decompressed as a replay
    /// compares it).
    pub stdout: RecordedOutput,
    /// The program's recorded stderr, likewise.
    pub stderr: RecordedOutput,
    /// The footer: how the recording ended. For a trace without one (the recorder was
    /// killed), what the trace implies: the program's recorded end if the runtime saw it,
    /// otherwise SIGKILL, which the program got when its recorder died (PR_SET_PDEATHSIG).
    pub footer: reprise_trace::Footer,
    /// The trace has no footer: the recorder was killed while recording (its last frame,
    /// if torn, was ignored). It replays as cut short.
    pub interrupted: bool,
}

impl Loaded {
    /// Why the recording is cut short, for `info` and the replay's verdict.
    pub fn cut_reason(&self) -> String {
        if !self.interrupted {
            return cut_reason(&self.footer.exit);
        }
        match self.rec.end {
            None => "the recorder was killed, and the program with it by SIGKILL; the trace has no footer".into(),
            Some(_) => format!(
                "the recorder was killed after the program {}; the trace has no footer",
                self.footer.exit
            ),
        }
    }
}

/// Load a trace: header, decoded recording, outputs (checked, left compressed), footer. A
/// trace whose recorder was killed (no footer, the last frame perhaps torn) loads as far as
/// its intact frames go.
pub fn load(path: &std::path::Path) -> Result<Loaded> {
    let damaged =
        |e: reprise_trace::TraceError| Failure::Replay(format!("{}: {e}", path.display()));
    // The recorded output stays in the file until the replay compares with it.
    let reader = TraceReader::open(path)
        .map_err(damaged)?
        .outputs_left_in_file();
    let (header, chunks, footer) = reader.read_salvaged_raw().map_err(damaged)?;
    let interrupted = footer.is_none();
    let (mut out, mut err) = (RecordedOutput::default(), RecordedOutput::default());
    let corrupt =
        |e: anyhow::Error| Failure::Replay(format!("{}: events are corrupt: {e}", path.display()));
    // The events decoded chunk by chunk as they are read: a runtime frame may span chunks, so
    // what a chunk leaves of one waits in `ev` for the next (the whole raw stream, and all its
    // frames decoded at once, cost a long `--verify=full` replay 4 times the stream's size).
    let mut rec = Recording::default();
    let (mut ev, mut fed) = (Vec::new(), 0u64);
    let mut dec = zstd::bulk::Decompressor::new()?;
    let mut buf = Vec::new();
    for c in chunks {
        match c.kind {
            ChunkKind::Events => {
                c.decompress_into(&mut dec, &mut buf).map_err(damaged)?;
                fed += rec.feed_piece(&mut ev, &buf).map_err(corrupt)? as u64;
            }
            ChunkKind::Stdout => out.push(c),
            ChunkKind::Stderr => err.push(c),
        }
    }
    // A recorder killed while writing may have left the stream inside a runtime frame, whose
    // beginning is all there is; a complete trace never does.
    if !interrupted && !ev.is_empty() {
        return Err(corrupt(anyhow::anyhow!(
            "the event stream ends inside a frame (byte {fed} of {})",
            fed + ev.len() as u64
        ))
        .into());
    }
    let footer = footer.unwrap_or(reprise_trace::Footer {
        exit: match rec.end {
            Some((e, _)) if e.kind == reprise_proto::END_EXIT => {
                reprise_trace::Exit::Exited(e.code)
            }
            Some((e, _))
                if e.kind == reprise_proto::END_SIGNAL || e.kind == reprise_proto::END_FAULT =>
            {
                reprise_trace::Exit::Signaled(e.code)
            }
            _ => reprise_trace::Exit::Signaled(libc::SIGKILL),
        },
        wall_ns: 0,
        chunks: 0,
        raw_bytes: 0,
        deadlock: None,
        dlopened: Vec::new(),
    });
    Ok(Loaded {
        header,
        rec,
        stdout: out,
        stderr: err,
        footer,
        interrupted,
    })
}

/// Why a recording was cut short, from how the program ended.
pub fn cut_reason(exit: &reprise_trace::Exit) -> String {
    match *exit {
        reprise_trace::Exit::Signaled(s) => format!("the program was killed by {}", signal_name(s)),
        reprise_trace::Exit::Exited(c) => format!(
            "the program ended with status {c} where the runtime did not see it: it exec'd another program, or made the exit system call by itself with Syscall User Dispatch off"
        ),
    }
}

/// `SIGKILL` for 9, and so on.
pub fn signal_name(s: i32) -> String {
    let n = match s {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGSYS => "SIGSYS",
        _ => return format!("signal {s}"),
    };
    n.to_string()
}

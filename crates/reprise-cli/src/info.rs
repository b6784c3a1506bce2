//! `reprise info`: what a trace holds and how much of it is intact.

use anyhow::Result;
use std::path::PathBuf;

/// Print a summary of the trace.
pub fn info(trace: Option<PathBuf>, records: bool) -> Result<i32> {
    let path = crate::tracedir::resolve(trace)?;
    let s = reprise_trace::summarize(&path)?;
    println!("trace: {}", path.display());
    println!("{s}");
    let h = &s.header;
    print_header(h);
    if s.is_complete() || s.is_interrupted() {
        if let Ok(loaded) = crate::loaded::load(&path) {
            print_recording(h, loaded, records);
        }
        Ok(0)
    } else {
        Ok(1)
    }
}

/// What was recorded and how: program, arguments, mode, strategy.
fn print_header(h: &reprise_trace::Header) {
    println!("program: {}", String::from_utf8_lossy(&h.exe_path));
    println!(
        "argv: {}",
        h.argv
            .iter()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let mode = match h.extra.get("mode").map(String::as_str) {
        Some("sync") => "sync (unmodified program, LD_PRELOAD: synchronisation and system calls)",
        _ => "full (built with `reprise cc`: every access ordered)",
    };
    println!("mode: {mode}");
    println!(
        "strategy: {}   checkpoint every {} events",
        h.strategy, h.checkpoint_interval
    );
}

/// What the loaded trace holds: whether it was cut short, threads and events, output sizes and
/// exit, how the process ended, the trapped system calls and (`--records`) every record.
fn print_recording(h: &reprise_trace::Header, loaded: crate::loaded::Loaded, records: bool) {
    let why_cut = loaded.cut_reason();
    let crate::loaded::Loaded {
        rec,
        stdout: out,
        stderr: err,
        footer,
        interrupted,
        ..
    } = loaded;
    let events = if rec.end.is_some() && !interrupted {
        rec.total_events().to_string()
    } else {
        let saw = if rec.end.is_some() {
            "the runtime saw the process end, but the recorder did not finish the trace"
        } else {
            "the runtime did not see the process end"
        };
        println!(
            "recording: cut short ({why_cut}): {saw}; the trace holds what was sent before the cut, and a replay checks it up to there"
        );
        format!(
            "at least {} (as far as the trace goes)",
            rec.known_progress().values().sum::<u64>()
        )
    };
    if h.strategy == "ownership" {
        let (edges, after, marks) = edge_counts(&rec);
        println!(
            "threads: {}   events: {}   ownership edges: {edges} ({after} forwarded)   held-granule marks: {marks}",
            rec.nthreads(),
            events,
        );
    } else {
        println!(
            "threads: {}   events: {}   stripes used: {}   vector runs: {}",
            rec.nthreads(),
            events,
            rec.vectors.len(),
            rec.vector_runs()
        );
    }
    if interrupted {
        println!(
            "stdout: {} bytes   stderr: {} bytes (as far as the trace goes)   exit: {} (inferred: the trace has no footer)   wall: unknown",
            out.len(),
            err.len(),
            footer.exit,
        );
    } else {
        println!(
            "stdout: {} bytes   stderr: {} bytes   exit: {}   wall: {:.3}s",
            out.len(),
            err.len(),
            footer.exit,
            footer.wall_ns as f64 / 1e9
        );
    }
    if !rec.model_log.is_empty() {
        // FNV-1a, so two recordings' model logs can be compared by eye.
        let hash = rec
            .model_log
            .iter()
            .fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
                (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
            });
        println!(
            "model log: {} bytes (FNV-1a {hash:016x})",
            rec.model_log.len()
        );
    }
    print_end(h, &rec);
    print_trapped(&rec);
    if records {
        print_records(&rec);
    }
}

/// How the process ended, as the runtime saw it (a fault with its source line when the
/// program has `-g`).
fn print_end(h: &reprise_trace::Header, rec: &crate::recording::Recording) {
    if let Some((end, _)) = &rec.end {
        let mut fault = String::new();
        if end.kind == reprise_proto::END_FAULT {
            fault = format!(": signal {} at address {:#x}", end.code, end.addr);
            let exe = &crate::sym::recorded_exe(h);
            if let Some(at) = rec
                .fault_stack()
                .as_ref()
                .and_then(|pcs| crate::sym::stack_place(exe, pcs, true))
            {
                fault.push_str(&format!(", in code at {at}"));
            }
        }
        println!(
            "end: {} in thread {} at event {}{fault}",
            crate::verify::end_kind(end.kind),
            end.tid,
            end.event
        );
    }
}

/// The system calls Syscall User Dispatch caught, by name.
fn print_trapped(rec: &crate::recording::Recording) {
    if !rec.trapped.is_empty() {
        let list: Vec<String> = rec
            .trapped
            .iter()
            .map(|(n, c)| format!("{}x{c}", syscall_name(*n)))
            .collect();
        println!(
            "system calls caught by Syscall User Dispatch: {}",
            list.join(" ")
        );
    }
}

/// Every thread's records (`--records`).
fn print_records(rec: &crate::recording::Recording) {
    for (tid, t) in &rec.threads {
        println!("thread {tid}: start {:?}", t.start);
        for p in &t.results {
            println!("  result at event {}: {:#x}", p.event, p.value);
        }
        for p in &t.signals {
            println!("  signal {} at entry {}", p.value, p.event);
        }
        for p in &t.edges {
            match reprise_proto::held_mark(p.value) {
                Some((reprise_proto::RELEASE_IN_ACCESS, _)) => {
                    println!("  held granules released before event {}", p.event)
                }
                Some((left, released)) => println!(
                    "  hits stopped after event {} with {left} left{}",
                    p.event,
                    if released {
                        ", held granules released"
                    } else {
                        ""
                    }
                ),
                None if reprise_proto::edge_after(p.value).is_some() => println!(
                    "    (and after that thread passed {} entries of its edge list)",
                    reprise_proto::edge_after(p.value).unwrap_or(0)
                ),
                None => {
                    let (src, sev) = reprise_proto::edge_source_parts(p.value);
                    println!(
                        "  edge into event {} after thread {src} event {sev}",
                        p.event
                    );
                }
            }
        }
        for (ev, b) in &t.data {
            println!("  data at event {ev}: {} bytes", b.len());
        }
        for p in &t.digests {
            println!("  digest at event {}: {:#018x}", p.event, p.value);
        }
    }
}

/// An ownership recording's edge lists: (edges, `EDGE_AFTER` refinements of an edge by an
/// answer forwarded from inside an access, held-granule marks).
fn edge_counts(rec: &crate::recording::Recording) -> (usize, usize, usize) {
    let entries = rec.threads.values().flat_map(|t| &t.edges);
    let marks = entries
        .clone()
        .filter(|p| reprise_proto::held_mark(p.value).is_some())
        .count();
    let after = entries
        .clone()
        .filter(|p| reprise_proto::edge_after(p.value).is_some())
        .count();
    (entries.count() - marks - after, after, marks)
}

/// Name of an x86_64 system call number (the common ones).
pub fn syscall_name(n: u32) -> String {
    let name = match n {
        0 => "read",
        1 => "write",
        3 => "close",
        5 => "fstat",
        7 => "poll",
        8 => "lseek",
        9 => "mmap",
        10 => "mprotect",
        11 => "munmap",
        12 => "brk",
        13 => "rt_sigaction",
        14 => "rt_sigprocmask",
        16 => "ioctl",
        17 => "pread64",
        20 => "writev",
        24 => "sched_yield",
        28 => "madvise",
        35 => "nanosleep",
        39 => "getpid",
        41 => "socket",
        42 => "connect",
        43 => "accept",
        44 => "sendto",
        45 => "recvfrom",
        56 => "clone",
        60 => "exit",
        72 => "fcntl",
        157 => "prctl",
        186 => "gettid",
        202 => "futex",
        228 => "clock_gettime",
        230 => "clock_nanosleep",
        231 => "exit_group",
        234 => "tgkill",
        257 => "openat",
        262 => "newfstatat",
        273 => "set_robust_list",
        318 => "getrandom",
        334 => "rseq",
        435 => "clone3",
        _ => return format!("syscall{n}"),
    };
    name.to_string()
}

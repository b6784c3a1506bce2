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
    println!("program: {}", String::from_utf8_lossy(&h.exe_path));
    println!("argv: {}", h.argv.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect::<Vec<_>>().join(" "));
    println!("strategy: {}   checkpoint every {} events", h.strategy, h.checkpoint_interval);
    if s.is_complete() {
        if let Ok((_, rec, out, err, footer)) = crate::replay::load(&path) {
            println!("threads: {}   events: {}   stripes used: {}   vector runs: {}", rec.nthreads(), rec.total_events(), rec.vectors.len(), rec.vector_runs());
            println!("stdout: {} bytes   stderr: {} bytes   exit: {}   wall: {:.3}s", out.len(), err.len(), footer.exit, footer.wall_ns as f64 / 1e9);
            if let Some((end, _)) = &rec.end {
                println!("end: {} in thread {} at event {}", crate::verify::end_kind(end.kind), end.tid, end.event);
            }
            if records {
                for (tid, t) in &rec.threads {
                    println!("thread {tid}: start {:?}", t.start);
                    for p in &t.results {
                        println!("  result at event {}: {:#x}", p.event, p.value);
                    }
                    for p in &t.signals {
                        println!("  signal {} at entry {}", p.value, p.event);
                    }
                    for (ev, b) in &t.data {
                        println!("  data at event {ev}: {} bytes", b.len());
                    }
                    for p in &t.digests {
                        println!("  digest at event {}: {:#018x}", p.event, p.value);
                    }
                }
            }
        }
        Ok(0)
    } else {
        Ok(1)
    }
}

//! `reprise view`: a trace as a Chrome trace-event / Perfetto JSON timeline.
//!
//! The trace holds event counts, not times, so each thread's event index is its timestamp
//! (one event = 1 µs on the time axis). Process 1 has one track per thread: a span over the
//! thread's events, 1-event spans for its recorded results (trylock and timed-wait outcomes,
//! clocks, ids) and inputs (system-call data), instants for signals and the end, and flow
//! arrows for the ownership edges (source thread's completed events -> the new owner's event).
//! Process 2 shows LEAP/ownership stripe vectors (synchronisation objects under ownership):
//! one track per stripe, one span per run, arrows at each hand-over from one thread to another;
//! its time axis is the position in the stripe's vector. Arrows are sampled beyond
//! [`MAX_FLOWS`], and the metadata says so.

use crate::sym::Symbolizer;
use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::path::PathBuf;

/// Most flow arrows written per kind (edges, vector hand-overs); more are sampled evenly.
pub const MAX_FLOWS: usize = 20_000;
/// Most stripe tracks shown (the busiest).
const MAX_STRIPES: usize = 64;

const PID_THREADS: u32 = 1;
const PID_STRIPES: u32 = 2;

/// Write the timeline of `trace` (default: the latest) to `out`.
pub fn view(trace: Option<PathBuf>, out: PathBuf) -> Result<i32> {
    let path = crate::tracedir::resolve(trace)?;
    let crate::loaded::Loaded {
        header,
        rec,
        footer,
        ..
    } = crate::loaded::load(&path)?;
    let exe = crate::sym::recorded_exe(&header);
    let sym = Symbolizer::new(&exe);
    let doc = timeline(&header, &rec, &footer, sym.as_ref());
    let text = serde_json::to_vec(&doc)?;
    std::fs::write(&out, text).with_context(|| format!("cannot write {}", out.display()))?;
    let n = doc["traceEvents"].as_array().map(|a| a.len()).unwrap_or(0);
    eprintln!(
        "reprise: {} events on {} thread tracks written to {} (open in ui.perfetto.dev or chrome://tracing)",
        n,
        rec.nthreads(),
        out.display()
    );
    Ok(0)
}

/// Indices of `n` items kept when at most `max` may be: all, or an even sample.
fn sample(n: usize, max: usize) -> impl Iterator<Item = usize> {
    let step = n.div_ceil(max.max(1)).max(1);
    (0..n).step_by(step)
}

/// (thread, event, what) of a deadlock report's line "  thread N at event E waits ...".
fn deadlock_wait(line: &str) -> Option<(u32, u64, &str)> {
    let rest = line.trim_start().strip_prefix("thread ")?;
    let (t, rest) = rest.split_once(" at event ")?;
    let (e, what) = rest.split_once(' ')?;
    Some((t.parse().ok()?, e.parse().ok()?, what))
}

/// A metadata event (process or track name, sort index).
fn meta(pid: u32, tid: u32, name: &str, args: Value) -> Value {
    json!({"ph": "M", "pid": pid, "tid": tid, "ts": 0, "name": name, "args": args})
}

/// The thread tracks: each thread's life as a span, its recorded results and inputs as
/// 1-event spans, its signal deliveries as instants.
fn thread_tracks(
    ev: &mut Vec<Value>,
    header: &reprise_trace::Header,
    rec: &crate::recording::Recording,
    finals: &std::collections::BTreeMap<u32, u64>,
) {
    ev.push(meta(
        PID_THREADS,
        0,
        "process_name",
        json!({"name": format!("{} (threads; time = event index)", String::from_utf8_lossy(&header.exe_path))}),
    ));
    ev.push(meta(
        PID_THREADS,
        0,
        "process_sort_index",
        json!({"sort_index": 0}),
    ));
    let nthreads = rec.nthreads();
    let len_of = |t: u32| -> u64 {
        let t_rec = rec.threads.get(&t);
        let last = t_rec
            .map(|r| {
                let a = r.results.iter().map(|p| p.event).max().unwrap_or(0);
                let b = r.data.iter().map(|d| d.0).max().unwrap_or(0);
                let c = r.edges.iter().map(|p| p.event).max().unwrap_or(0);
                let d = r.signals.iter().map(|p| p.event).max().unwrap_or(0);
                a.max(b).max(c).max(d)
            })
            .unwrap_or(0);
        finals.get(&t).copied().unwrap_or(0).max(last) + 2
    };
    for t in 0..nthreads {
        let r = rec.threads.get(&t);
        let name = match r.and_then(|r| r.start) {
            _ if t == 0 => "thread 0 (main)".to_string(),
            Some((parent, nth)) => format!("thread {t} (child {nth} of thread {parent})"),
            None => format!("thread {t}"),
        };
        ev.push(meta(PID_THREADS, t, "thread_name", json!({ "name": name })));
        ev.push(meta(
            PID_THREADS,
            t,
            "thread_sort_index",
            json!({"sort_index": t}),
        ));
        // The thread's whole life: every instant and flow on the track falls inside it, so
        // Perfetto binds the arrows to this slice.
        ev.push(json!({
            "ph": "X", "pid": PID_THREADS, "tid": t, "ts": 0, "dur": len_of(t),
            "name": format!("thread {t}"), "cat": "thread",
            "args": {"final_events": finals.get(&t).copied(), "start": r.and_then(|r| r.start).map(|(p, n)| format!("child {n} of thread {p}"))},
        }));
        let Some(r) = r else { continue };
        for p in &r.results {
            ev.push(json!({
                "ph": "X", "pid": PID_THREADS, "tid": t, "ts": p.event, "dur": 1,
                "name": "recorded result", "cat": "sync,syscall",
                "args": {"event": p.event, "value": format!("{:#x}", p.value)},
            }));
        }
        for (e, b) in &r.data {
            ev.push(json!({
                "ph": "X", "pid": PID_THREADS, "tid": t, "ts": e, "dur": 1,
                "name": format!("input {} bytes", b.len()), "cat": "syscall",
                "args": {"event": e, "bytes": b.len()},
            }));
        }
        for p in &r.signals {
            ev.push(json!({
                "ph": "i", "s": "t", "pid": PID_THREADS, "tid": t, "ts": p.event,
                "name": format!("signal {}", p.value), "cat": "signal",
                "args": {"runtime_entry": p.event, "signal": p.value},
            }));
        }
    }
}

/// The ownership edges as flow arrows between thread tracks (sampled beyond [`MAX_FLOWS`]),
/// numbered from 1: how many edges there are, and how many arrows were drawn.
fn edge_arrows(ev: &mut Vec<Value>, rec: &crate::recording::Recording) -> (usize, u64) {
    let nthreads = rec.nthreads();
    // Ownership edges: source (thread, completed count) -> (thread, event); the entries that
    // are marks (held granules, `EDGE_AFTER`) name no thread and are left out.
    let edges: Vec<(u32, u64, u32, u64)> = rec
        .threads
        .iter()
        .flat_map(|(&t, r)| {
            r.edges.iter().map(move |p| {
                let (src, sev) = reprise_proto::edge_source_parts(p.value);
                (src, sev, t, p.event)
            })
        })
        .filter(|e| e.0 < nthreads)
        .collect();
    let mut id: u64 = 0;
    for i in sample(edges.len(), MAX_FLOWS) {
        let (src, sev, t, e) = edges[i];
        id += 1;
        let args = json!({"from": format!("thread {src} after {sev} events"), "to": format!("thread {t} event {e}")});
        ev.push(json!({"ph": "s", "id": id, "pid": PID_THREADS, "tid": src, "ts": sev, "name": "ownership edge", "cat": "edge", "args": args}));
        ev.push(json!({"ph": "f", "bp": "e", "id": id, "pid": PID_THREADS, "tid": t, "ts": e, "name": "ownership edge", "cat": "edge", "args": args}));
    }
    (edges.len(), id)
}

/// What [`stripe_tracks`] drew, for the metadata.
struct StripesShown {
    shown: usize,
    total_handovers: usize,
    keep_every: usize,
    arrows: u64,
    runs_sampled: bool,
}

/// The stripe process's name and sort index.
fn stripe_process_meta() -> [Value; 2] {
    [
        meta(
            PID_STRIPES,
            0,
            "process_name",
            json!({"name": "stripe vectors (time = position in the stripe's vector)"}),
        ),
        meta(
            PID_STRIPES,
            0,
            "process_sort_index",
            json!({"sort_index": 1}),
        ),
    ]
}

/// The stripe tracks: each stripe vector's runs as spans and hand-overs as arrows (numbered
/// after `id`), sampled beyond [`MAX_STRIPES`] stripes and [`MAX_FLOWS`] arrows.
fn stripe_tracks(
    ev: &mut Vec<Value>,
    rec: &crate::recording::Recording,
    mut id: u64,
) -> StripesShown {
    let first = id;
    // Stripe vectors (LEAP's memory order; synchronisation objects under every strategy).
    let mut stripes: Vec<(&u32, &Vec<reprise_proto::VecEntry>)> = rec.vectors.iter().collect();
    stripes.sort_by_key(|(s, v)| (std::cmp::Reverse(v.len()), **s));
    stripes.truncate(MAX_STRIPES);
    let total_handovers: usize = stripes.iter().map(|(_, v)| v.len().saturating_sub(1)).sum();
    let keep_every = total_handovers.div_ceil(MAX_FLOWS).max(1);
    // Runs shown per stripe (besides those of the hand-overs kept).
    let run_budget = (MAX_FLOWS / stripes.len().max(1)).max(100);
    let mut handover_seen = 0usize;
    if !stripes.is_empty() {
        ev.extend(stripe_process_meta());
    }
    for (s, v) in &stripes {
        let s = **s;
        ev.push(meta(
            PID_STRIPES,
            s,
            "thread_name",
            json!({"name": format!("stripe {s}")}),
        ));
        // The hand-overs kept (every `keep_every`-th over all stripes), and the runs shown:
        // an even sample, plus both runs of each kept hand-over.
        let mut kept = std::collections::BTreeSet::new();
        for i in 1..v.len() {
            if v[i].tid != v[i - 1].tid {
                handover_seen += 1;
                if handover_seen.is_multiple_of(keep_every) {
                    kept.insert(i);
                }
            }
        }
        let mut shown: std::collections::BTreeSet<usize> = sample(v.len(), run_budget).collect();
        shown.extend(kept.iter().flat_map(|&i| [i - 1, i]));
        let mut pos: u64 = 0;
        let mut prev_end: u64 = 0;
        for (i, e) in v.iter().enumerate() {
            let start = pos;
            pos += e.count as u64;
            if shown.contains(&i) {
                ev.push(json!({
                    "ph": "X", "pid": PID_STRIPES, "tid": s, "ts": start, "dur": e.count.max(1),
                    "name": format!("thread {}", e.tid), "cat": "vector",
                    "args": {"thread": e.tid, "events": e.count, "position": start},
                }));
            }
            if kept.contains(&i) {
                id += 1;
                let from = v[i - 1].tid;
                let args =
                    json!({"from": format!("thread {from}"), "to": format!("thread {}", e.tid)});
                ev.push(json!({"ph": "s", "id": id, "pid": PID_STRIPES, "tid": s, "ts": prev_end.saturating_sub(1), "name": "hand-over", "cat": "vector", "args": args}));
                ev.push(json!({"ph": "f", "bp": "e", "id": id, "pid": PID_STRIPES, "tid": s, "ts": start, "name": "hand-over", "cat": "vector", "args": args}));
            }
            prev_end = pos;
        }
    }
    StripesShown {
        shown: stripes.len(),
        total_handovers,
        keep_every,
        arrows: id - first,
        runs_sampled: stripes.iter().any(|(_, v)| v.len() > run_budget),
    }
}

/// The end of the process as an instant (a fault with its source line), and a deadlock's
/// waits as spans to the end.
fn end_marks(
    ev: &mut Vec<Value>,
    rec: &crate::recording::Recording,
    footer: &reprise_trace::Footer,
    sym: Option<&Symbolizer>,
    finals: &std::collections::BTreeMap<u32, u64>,
) {
    // The end.
    if let Some((end, _)) = &rec.end {
        let mut args = json!({
            "kind": crate::verify::end_kind(end.kind), "code": end.code,
            "status": footer.exit.shell_status(),
        });
        if end.kind == reprise_proto::END_FAULT {
            args["fault_address"] = json!(format!("{:#x}", end.addr));
            if let Some((pc, place)) = rec
                .fault_stack()
                .as_ref()
                .and_then(|pcs| sym?.program_frame(pcs, true))
            {
                args["pc"] = json!(format!("{pc:#x}"));
                args["source"] = json!(place.to_string());
            }
        }
        let name = format!("end: {} {}", crate::verify::end_kind(end.kind), end.code);
        if end.tid == reprise_proto::END_TID_NONE {
            let ts = finals.values().copied().max().unwrap_or(0);
            ev.push(json!({"ph": "i", "s": "g", "pid": PID_THREADS, "tid": 0, "ts": ts, "name": name, "cat": "end", "args": args}));
        } else {
            ev.push(json!({"ph": "i", "s": "t", "pid": PID_THREADS, "tid": end.tid, "ts": end.event, "name": name, "cat": "end", "args": args}));
        }
    }
    if let Some(report) = &footer.deadlock {
        let ts = finals.values().copied().max().unwrap_or(0);
        ev.push(json!({"ph": "i", "s": "g", "pid": PID_THREADS, "tid": 0, "ts": ts, "name": "deadlock", "cat": "end", "args": {"report": report}}));
        // Each thread's wait for good, from the report's "  thread N at event E waits ...,
        // called at 0xPC (f at file:line)": a span from its last event to the end.
        for line in report.lines() {
            let Some((t, e, what)) = deadlock_wait(line) else {
                continue;
            };
            let (what, source) = match what.split_once(", called at ") {
                Some((w, at)) => (w, Some(at)),
                None => (what, None),
            };
            ev.push(json!({
                "ph": "X", "pid": PID_THREADS, "tid": t, "ts": e, "dur": (ts.max(e) - e) + 1,
                "name": format!("blocked: {what}"), "cat": "sync",
                "args": {"event": e, "waits": what, "source": source},
            }));
        }
    }
}

/// The trace-event document.
pub fn timeline(
    header: &reprise_trace::Header,
    rec: &crate::recording::Recording,
    footer: &reprise_trace::Footer,
    sym: Option<&Symbolizer>,
) -> Value {
    let mut ev: Vec<Value> = Vec::new();
    let finals = rec.end.as_ref().map(|e| e.1.clone()).unwrap_or_default();
    let nthreads = rec.nthreads();
    thread_tracks(&mut ev, header, rec, &finals);
    let (edges, edge_flows) = edge_arrows(&mut ev, rec);
    let st = stripe_tracks(&mut ev, rec, edge_flows);
    end_marks(&mut ev, rec, footer, sym, &finals);
    // Track ids start at 1: Perfetto takes thread id 0 for the idle (swapper) thread.
    for e in ev.iter_mut() {
        if let Some(t) = e["tid"].as_u64() {
            e["tid"] = json!(t + 1);
        }
    }
    let metadata = json!({
        "reprise_trace_strategy": header.strategy,
        "time_axis": "event counts, not times: on a thread track ts is the thread's event index (1 event = 1 us); on a stripe track, the position in the stripe's access vector",
        "spans": "the trace has no start and end times of blocking waits or system calls: recorded results (trylock and timed-wait outcomes, clocks, ids) and inputs are 1-event spans at their event",
        "threads": nthreads,
        "track_ids": "tid = reprise's thread id + 1 (stripe + 1 on stripe tracks)",
        "ownership_edges": edges,
        "ownership_edge_arrows": edge_flows,
        "edges_sampled": edges > MAX_FLOWS,
        "stripes": rec.vectors.len(),
        "stripes_shown": st.shown,
        "vector_handovers": st.total_handovers,
        "vector_handover_arrows": st.arrows,
        "handovers_sampled": st.keep_every > 1,
        "vector_runs_sampled": st.runs_sampled,
    });
    json!({"traceEvents": ev, "otherData": metadata, "metadata": metadata})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recording::{Recording, ThreadRec};
    use reprise_proto::{Pair, VecEntry};

    #[test]
    fn millions_of_orderings_are_sampled_and_said_so() {
        let mut rec = Recording::default();
        let n = 300_000u64;
        let edges = (0..n)
            .map(|i| Pair {
                event: i + 1,
                value: reprise_proto::edge_source(0, i),
            })
            .collect();
        rec.threads.insert(0, ThreadRec::default());
        rec.threads.insert(
            1,
            ThreadRec {
                edges,
                ..Default::default()
            },
        );
        let runs = (0..n as u32)
            .map(|i| VecEntry {
                tid: i % 2,
                count: 1,
            })
            .collect();
        rec.vectors.insert(7, runs);
        let footer = reprise_trace::Footer {
            exit: reprise_trace::Exit::Exited(0),
            wall_ns: 0,
            chunks: 0,
            raw_bytes: 0,
            deadlock: None,
            dlopened: Vec::new(),
        };
        let doc = timeline(&reprise_trace::Header::default(), &rec, &footer, None);
        let m = &doc["metadata"];
        assert_eq!(m["ownership_edges"], n);
        assert_eq!(m["edges_sampled"], true);
        assert_eq!(m["handovers_sampled"], true);
        let arrows = m["ownership_edge_arrows"].as_u64().unwrap();
        assert!(arrows > 0 && arrows <= MAX_FLOWS as u64, "{arrows}");
        let h = m["vector_handover_arrows"].as_u64().unwrap();
        assert!(h > 0 && h <= MAX_FLOWS as u64, "{h}");
        let evs = doc["traceEvents"].as_array().unwrap();
        let starts = evs.iter().filter(|e| e["ph"] == "s").count() as u64;
        let ends = evs.iter().filter(|e| e["ph"] == "f").count() as u64;
        assert_eq!((starts, ends), (arrows + h, arrows + h));
        assert!(evs.len() < 200_000, "{} events", evs.len());
    }
}

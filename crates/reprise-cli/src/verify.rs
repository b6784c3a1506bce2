//! Verification: a replay is `verified` only when every leg agrees with the recording: the
//! re-recorded access vectors, every thread's digest checkpoints and results, every thread's
//! final event count, the output bytes, and the way the process ended.

use crate::recording::Recording;
use reprise_proto::*;
use reprise_trace::Exit;

/// Events and end of one run.
pub struct RunOutput<'a> {
    /// Decoded runtime frames.
    pub rec: &'a Recording,
    /// Exit.
    pub exit: &'a Exit,
}

/// How a replay's output stream (stdout or stderr) compared with the recorded one, byte for
/// byte as it came (`outcheck::OutputCheck`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamMatch {
    /// Bytes in the recorded stream.
    pub recorded: u64,
    /// Bytes the replay produced.
    pub replayed: u64,
    /// The first position where the two differ, as far as both go (None: they agree there).
    pub first_diff: Option<u64>,
    /// They differ, but hold the same lines in another order (as when processes the program
    /// made, which are not recorded, write to the stream at the same time).
    pub reordered: bool,
}

impl StreamMatch {
    /// The two streams are equal.
    pub fn equal(&self) -> bool {
        self.first_diff.is_none() && self.recorded == self.replayed
    }

    /// The replay's stream is a prefix of the recorded one.
    pub fn replay_is_prefix(&self) -> bool {
        self.first_diff.is_none() && self.replayed <= self.recorded
    }

    /// The streams agree as far as both go (one is a prefix of the other).
    pub fn agrees_so_far(&self) -> bool {
        self.first_diff.is_none()
    }

    /// The first position where they differ, or where the shorter one ends.
    pub fn diff_at(&self) -> u64 {
        self.first_diff.unwrap_or(self.recorded.min(self.replayed))
    }
}

/// How the replay's stdout and stderr compared with the recording's.
#[derive(Debug, Clone, Copy)]
pub struct Outputs {
    /// stdout.
    pub stdout: StreamMatch,
    /// stderr.
    pub stderr: StreamMatch,
}

impl Outputs {
    fn named(&self) -> [(&'static str, StreamMatch); 2] {
        [("stdout", self.stdout), ("stderr", self.stderr)]
    }
}

/// Whether a replay under the strategy of `strategy_flag` (a config flag, 0 for LEAP)
/// re-records the strategy's log byte for byte. AggrePlay's
/// does (its log is canonical: writes and lock acquisitions in order, each read's write);
/// TPLAY's does not: it orders transactions, not reads, so the read counts of its `rwSet`
/// and the interleavings of its `dSet` legitimately differ between two runs that read the
/// same values. TPLAY replays are verified by the value digests of every access instead.
pub fn model_log_is_exact(strategy_flag: u64) -> bool {
    strategy_flag & FLAG_TPLAY == 0
}

/// Compare a replay with its recording (`out`: how its output compared); Err names the first
/// difference. `exact_log`: whether the strategy's re-recorded log must equal the recorded one
/// ([`model_log_is_exact`]).
pub fn compare(
    rec: &RunOutput<'_>,
    rep: &RunOutput<'_>,
    out: &Outputs,
    exact_log: bool,
) -> Result<(), String> {
    // The end first: a different end explains most other differences.
    compare_end(rec, rep)?;
    compare_threads(rec, rep)?;
    compare_order(rec, rep, exact_log)?;
    compare_output(out)
}

/// The end leg of [`compare`]: the exit status, the process end and every thread's final
/// event count.
fn compare_end(rec: &RunOutput<'_>, rep: &RunOutput<'_>) -> Result<(), String> {
    if rec.exit != rep.exit {
        return Err(format!(
            "the recording ended with {}, the replay with {}",
            rec.exit, rep.exit
        ));
    }
    match (&rec.rec.end, &rep.rec.end) {
        (Some((a, fa)), Some((b, fb))) => {
            if a.kind != b.kind
                || a.tid != b.tid
                || a.event != b.event
                || a.code != b.code
                || a.addr != b.addr
            {
                return Err(format!(
                    "the process ended differently: recorded {} in thread {} at event {} (code {}, address {:#x}), replayed {} in thread {} at event {} (code {}, address {:#x})",
                    end_kind(a.kind), a.tid, a.event, a.code, a.addr, end_kind(b.kind), b.tid, b.event, b.code, b.addr
                ));
            }
            for (tid, n) in fa {
                let m = fb.get(tid).copied().unwrap_or(0);
                if *n != m {
                    return Err(format!(
                        "thread {tid} performed {m} events in the replay, {n} in the recording"
                    ));
                }
            }
            if let Some((tid, m)) = fb.iter().find(|(t, m)| **m > 0 && !fa.contains_key(t)) {
                return Err(format!(
                    "thread {tid} exists in the replay ({m} events) but not in the recording"
                ));
            }
        }
        (Some(_), None) => {
            return Err("the replay ended without the runtime seeing the end of the process".into())
        }
        (None, Some(_)) => {
            return Err("the recording has no process end, the replay has one".into())
        }
        (None, None) => {
            // (A recording without its end is replayed as cut short: `compare_cut`.)
            return Err("neither the recording nor the replay has the process end".into());
        }
    }
    Ok(())
}

/// The per-thread legs of [`compare`]: each thread's start, checkpoints, signal deliveries,
/// input records and results.
fn compare_threads(rec: &RunOutput<'_>, rep: &RunOutput<'_>) -> Result<(), String> {
    for (tid, a) in &rec.rec.threads {
        let empty = Default::default();
        let b = rep.rec.threads.get(tid).unwrap_or(&empty);
        // A thread that started but performed no event before the process ended (main
        // returned right after creating it) did nothing the program could observe; whether
        // it got as far as logging its start before the end is up to the scheduler, in both
        // runs.
        let idle = |r: &RunOutput<'_>| {
            r.rec
                .end
                .as_ref()
                .is_some_and(|(_, f)| f.get(tid).copied().unwrap_or(0) == 0)
        };
        let idle_both = idle(rec) && idle(rep) && a.digests.is_empty() && b.digests.is_empty();
        if a.start != b.start && !idle_both {
            return Err(format!(
                "thread {tid} was created as {:?} in the recording, {:?} in the replay",
                a.start, b.start
            ));
        }
        if let Some(i) = (0..a.digests.len().max(b.digests.len()))
            .find(|&i| a.digests.get(i) != b.digests.get(i))
        {
            let (x, y) = (a.digests.get(i), b.digests.get(i));
            return Err(format!(
                "thread {tid} diverged: checkpoint {i} recorded {} , replayed {}",
                x.map(|p| format!("digest {:#018x} at event {}", p.value, p.event))
                    .unwrap_or("nothing".into()),
                y.map(|p| format!("digest {:#018x} at event {}", p.value, p.event))
                    .unwrap_or("nothing".into())
            ));
        }
        if let Some(i) = (0..a.signals.len().max(b.signals.len()))
            .find(|&i| a.signals.get(i) != b.signals.get(i))
        {
            let at = |p: Option<&Pair>| {
                p.map(|p| format!("signal {} at runtime entry {}", p.value, p.event))
                    .unwrap_or("none".into())
            };
            return Err(format!(
                "thread {tid}: signal delivery {i} differs: recorded {}, replayed {} ({} recorded, {} replayed in all)",
                at(a.signals.get(i)),
                at(b.signals.get(i)),
                a.signals.len(),
                b.signals.len()
            ));
        }
        if let Some(i) =
            (0..a.data.len().max(b.data.len())).find(|&i| a.data.get(i) != b.data.get(i))
        {
            return Err(format!(
                "thread {tid}: input record {i} differs between the recording and the replay"
            ));
        }
        if let Some(i) = (0..a.results.len().max(b.results.len()))
            .find(|&i| a.results.get(i) != b.results.get(i))
        {
            return Err(format!(
                "thread {tid}: result {i} differs: recorded {:?}, replayed {:?}",
                a.results.get(i),
                b.results.get(i)
            ));
        }
    }
    Ok(())
}

/// The order legs of [`compare`]: the strategy's log (when `exact_log`) and the access
/// vectors of every stripe.
fn compare_order(rec: &RunOutput<'_>, rep: &RunOutput<'_>, exact_log: bool) -> Result<(), String> {
    if exact_log && rec.rec.model_log != rep.rec.model_log {
        return Err(format!(
            "the strategy's log re-recorded in the replay ({} bytes) differs from the trace's ({} bytes): the replay followed a different order",
            rep.rec.model_log.len(),
            rec.rec.model_log.len()
        ));
    }
    for (s, a) in &rec.rec.vectors {
        let empty = Vec::new();
        let b = rep.rec.vectors.get(s).unwrap_or(&empty);
        if a != b {
            let i = a
                .iter()
                .zip(b)
                .position(|(x, y)| x != y)
                .unwrap_or(a.len().min(b.len()));
            return Err(format!(
                "access vector of stripe {s} differs at run {i}: recorded {:?}, replayed {:?}",
                a.get(i).map(|e| (e.tid, e.count)),
                b.get(i).map(|e| (e.tid, e.count))
            ));
        }
    }
    if let Some(s) = rep
        .rec
        .vectors
        .keys()
        .find(|s| !rec.rec.vectors.contains_key(s))
    {
        return Err(format!(
            "the replay accessed stripe {s}, which the recording never did"
        ));
    }
    Ok(())
}

/// The output leg of [`compare`]: stdout and stderr, byte for byte.
fn compare_output(out: &Outputs) -> Result<(), String> {
    for (name, m) in out.named() {
        if !m.equal() {
            return Err(output_differs(name, &m));
        }
    }
    Ok(())
}

/// What a stream differing only in its lines' order is said to be (no data race is blamed).
pub const REORDERED: &str = ": the same lines in another order, as when processes the program started (which are not recorded: they run again in replay) write to it at the same time";

/// "stdout differs at byte N (recorded A bytes, replayed B bytes)".
fn output_differs(name: &str, m: &StreamMatch) -> String {
    format!(
        "{name} differs at byte {} (recorded {} bytes, replayed {} bytes){}",
        m.diff_at(),
        m.recorded,
        m.replayed,
        if m.reordered { REORDERED } else { "" }
    )
}

/// What a cut-short recording's replay verified.
pub struct CutVerified {
    /// Events the replay performed, summed over threads.
    pub events: u64,
    /// Output bytes (stdout + stderr) the replay reproduced, of the recording's.
    pub out: (u64, u64),
}

fn prefix_of<T: PartialEq + std::fmt::Debug>(what: &str, a: &[T], b: &[T]) -> Result<(), String> {
    if let Some(i) = a.iter().zip(b).position(|(x, y)| x != y) {
        return Err(format!(
            "{what} {i} differs: recorded {:?}, replayed {:?}",
            a[i], b[i]
        ));
    }
    Ok(())
}

/// Compare the replay of a recording cut short (no process end) with it: everything the
/// trace holds up to where each thread's replay stopped must agree: every access vector of
/// the replay is a prefix of the recorded one, each thread's checkpoints, results, input data,
/// signal deliveries and edges agree as far as both go, and every recorded checkpoint at or
/// before the replay's last event of that thread was reproduced; the output of the replay is
/// a prefix of the recorded output (the recording's output pipes are not cut with its trace).
///
/// `output_cut`: the recording's output is cut too (its recorder was killed: what it had not
/// yet written to the trace is lost, possibly more than the events), so the two outputs need
/// only agree as far as both go; `out` then counts the bytes compared.
pub fn compare_cut(
    rec: &RunOutput<'_>,
    rep: &RunOutput<'_>,
    outputs: &Outputs,
    output_cut: bool,
) -> Result<CutVerified, String> {
    let finals = match &rep.rec.end {
        Some((_, f)) => f.clone(),
        // The replay went all the way to the cut and was ended there as the recording was
        // (the program killed itself): what it sent until then is checked.
        None if rep.exit == rec.exit => rep.rec.known_progress(),
        None => {
            return Err(format!(
                "the replay ended with {} before it reached the end of the recording, which ended with {}",
                rep.exit, rec.exit
            ))
        }
    };
    let finals = &finals;
    cut_vectors(rec, rep)?;
    for (tid, b) in &rep.rec.threads {
        let empty = Default::default();
        let a = rec.rec.threads.get(tid).unwrap_or(&empty);
        let thread = format!("thread {tid}");
        if a.start.is_some() && a.start != b.start {
            return Err(format!(
                "{thread} was created as {:?} in the recording, {:?} in the replay",
                a.start, b.start
            ));
        }
        prefix_of(&format!("{thread}: checkpoint"), &a.digests, &b.digests)?;
        prefix_of(&format!("{thread}: result"), &a.results, &b.results)?;
        prefix_of(&format!("{thread}: input record"), &a.data, &b.data)?;
        prefix_of(
            &format!("{thread}: signal delivery"),
            &a.signals,
            &b.signals,
        )?;
        let reached = finals.get(tid).copied().unwrap_or(0);
        if let Some(p) = a
            .digests
            .iter()
            .skip(b.digests.len())
            .find(|p| p.event <= reached)
        {
            return Err(format!(
                "{thread} passed event {} in the replay without its recorded checkpoint there",
                p.event
            ));
        }
    }
    let mut out = (0, 0);
    for (name, m) in outputs.named() {
        let agree = if output_cut {
            m.agrees_so_far()
        } else {
            m.replay_is_prefix()
        };
        if !agree {
            return Err(output_differs(name, &m));
        }
        out.0 += m.replayed.min(m.recorded);
        out.1 += m.recorded;
    }
    Ok(CutVerified {
        events: finals.values().sum(),
        out,
    })
}

/// The vector leg of [`compare_cut`]: every access vector of the replay is a prefix of the
/// recorded one.
fn cut_vectors(rec: &RunOutput<'_>, rep: &RunOutput<'_>) -> Result<(), String> {
    for (s, b) in &rep.rec.vectors {
        let empty = Vec::new();
        let a = rec.rec.vectors.get(s).unwrap_or(&empty);
        // The replay's last run of a stripe may be shorter than the recorded run (cut inside).
        let n = b.len();
        let ok = n <= a.len()
            && a[..n.saturating_sub(1)] == b[..n.saturating_sub(1)]
            && (n == 0 || (a[n - 1].tid == b[n - 1].tid && b[n - 1].count <= a[n - 1].count));
        if !ok {
            return Err(format!(
                "access vector of stripe {s}: the replay's ({n} runs) is not a prefix of the recording's ({} runs)",
                a.len()
            ));
        }
    }
    Ok(())
}

/// Name of a `ProcessEnd::kind`.
pub fn end_kind(k: u32) -> &'static str {
    match k {
        END_EXIT => "exit",
        END_FAULT => "fault",
        END_SIGNAL => "termination by a signal",
        END_CUT => "a cut (the recording was cut short)",
        _ => "unknown end",
    }
}

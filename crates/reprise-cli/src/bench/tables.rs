//! Aggregation (medians, ratios) and the Markdown report.

use super::{Program, Run, Size};
use std::collections::BTreeMap;
use std::fmt::Write as _;

// Aggregation and output.

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Median seconds of a program's configuration (record/replay rows of `strategy` only when the
/// run produced a time: unavailable strategies have none).
pub(super) fn median_secs(
    runs: &[Run],
    program: &str,
    config: &str,
    strategy: &str,
) -> Option<f64> {
    median(
        runs.iter()
            .filter(|r| {
                r.program == program
                    && r.config == config
                    && r.strategy == strategy
                    && r.exit.is_some()
            })
            .map(|r| r.seconds)
            .collect(),
    )
}

/// Median of a record-row measurement.
fn median_of(
    runs: &[Run],
    program: &str,
    strategy: &str,
    f: impl Fn(&Run) -> Option<u64>,
) -> Option<f64> {
    median(
        runs.iter()
            .filter(|r| r.program == program && r.config == "record" && r.strategy == strategy)
            .filter_map(|r| f(r).map(|v| v as f64))
            .collect(),
    )
}

pub(super) fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

fn fmt_x(v: Option<f64>) -> String {
    match v {
        Some(v) if v >= 100.0 => format!("{v:.0}×"),
        Some(v) if v >= 10.0 => format!("{v:.1}×"),
        Some(v) => format!("{v:.2}×"),
        None => "–".into(),
    }
}

/// A median count, or a dash when there is none.
fn fmt_count(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.0}")).unwrap_or("–".into())
}

fn fmt_kib(v: Option<f64>) -> String {
    match v {
        Some(v) => format!("{:.1}", v / 1024.0),
        None => "–".into(),
    }
}

/// A slowdown cell: the ratio of medians, or, when a run of this configuration was killed
/// at the time limit, a lower bound (the medians of the runs that finished would flatter it).
fn slowdown_cell(
    runs: &[Run],
    program: &str,
    config: &str,
    strategy: &str,
    native: Option<f64>,
) -> String {
    let timeouts: Vec<&Run> = runs
        .iter()
        .filter(|r| {
            r.program == program && r.config == config && r.strategy == strategy && r.timed_out
        })
        .collect();
    if let Some(t) = timeouts.first() {
        return format!("> {} (timeout)", fmt_x(ratio(Some(t.seconds), native)));
    }
    fmt_x(ratio(median_secs(runs, program, config, strategy), native))
}

/// Everything the report is made of.
pub(super) struct Bench<'a> {
    pub(super) programs: &'a [Program],
    pub(super) strategies: &'a [String],
    /// Strategies `reprise record` rejected, with its reason.
    pub(super) unavailable: &'a BTreeMap<String, String>,
    pub(super) runs: &'a [Run],
    /// Runs per configuration.
    pub(super) nruns: usize,
    pub(super) threads: u32,
    pub(super) size: Size,
    /// Seconds the whole bench took.
    pub(super) elapsed: f64,
}

impl Bench<'_> {
    /// A strategy's cell, or "unavailable".
    fn cell(&self, strategy: &str, v: String) -> String {
        if self.unavailable.contains_key(strategy) {
            "unavailable".to_string()
        } else {
            v
        }
    }

    /// A table header: the `first` columns then one per strategy (the first two left-aligned).
    fn header(&self, s: &mut String, first: &[&str]) {
        let cols: Vec<String> = first
            .iter()
            .map(|c| c.to_string())
            .chain(self.strategies.iter().cloned())
            .collect();
        let _ = writeln!(s, "| {} |", cols.join(" | "));
        let _ = writeln!(
            s,
            "|{}",
            cols.iter()
                .enumerate()
                .map(|(i, _)| if i < first.len().min(2) {
                    "---|"
                } else {
                    "---:|"
                })
                .collect::<String>()
        );
    }

    /// A table with one row per program and one cell per strategy.
    fn per_strategy(&self, s: &mut String, cell: impl Fn(&Program, &str) -> String) {
        self.header(s, &["program"]);
        for p in self.programs {
            let mut row = vec![p.name.clone()];
            for st in self.strategies {
                row.push(self.cell(st, cell(p, st)));
            }
            let _ = writeln!(s, "| {} |", row.join(" | "));
        }
    }
}

/// The Markdown report: the title and one section per table.
pub(super) fn markdown(b: &Bench) -> String {
    let mut s = String::new();
    intro(&mut s, b);
    record_slowdown(&mut s, b);
    let _ = writeln!(s, "\n## Replay slowdown (replay / native)\n");
    b.per_strategy(&mut s, |p, st| {
        let native = median_secs(b.runs, &p.name, "native", "");
        slowdown_cell(b.runs, &p.name, "replay", st, native)
    });
    against_floor(&mut s, b);
    let _ = writeln!(s, "\n## Log size (KiB: trace file as stored, zstd / gzip -9 of the raw events / raw events)\n");
    b.per_strategy(&mut s, |p, st| {
        format!(
            "{} / {} / {}",
            fmt_kib(median_of(b.runs, &p.name, st, |r| r.trace_bytes)),
            fmt_kib(median_of(b.runs, &p.name, st, |r| r.gzip9_bytes)),
            fmt_kib(median_of(b.runs, &p.name, st, |r| r.event_bytes)),
        )
    });
    let _ = writeln!(s, "\n## Events (events / vector runs / threads)\n");
    b.per_strategy(&mut s, |p, st| {
        let f = fmt_count;
        format!(
            "{} / {} / {}",
            f(median_of(b.runs, &p.name, st, |r| r.events)),
            f(median_of(b.runs, &p.name, st, |r| r.vector_runs)),
            f(median_of(b.runs, &p.name, st, |r| r.threads.map(u64::from))),
        )
    });
    events_by_kind(&mut s, b);
    if b.strategies.iter().any(|s| s == "tplay") && !b.unavailable.contains_key("tplay") {
        tplay(&mut s, b);
    }
    let _ = writeln!(s, "\n## Replay success (verified / runs)\n");
    b.per_strategy(&mut s, |p, st| replay_success(b.runs, &p.name, st));
    success_summary(&mut s, b);
    super::failures::table(&mut s, b.runs, b.strategies);
    log_summary(&mut s, b);
    s
}

/// The replay probability each seed reports for its own strategy (its evaluation's headline).
fn paper_rate(strategy: &str) -> &'static str {
    match strategy {
        "aggreplay" => "86.8% (seed 000)",
        "tplay" => "96.6% (seed 003)",
        "leap" => "100% (seed 001: deterministic)",
        "aggreplay+" | "tplay+" | "ownership" => "– (must replay every run)",
        _ => "–",
    }
}

/// Replay success per strategy over every program, next to the seeds' reported rates.
fn success_summary(s: &mut String, b: &Bench) {
    let _ = writeln!(
        s,
        "\n## Replay success per strategy (all programs) against the papers\n"
    );
    let _ = writeln!(
        s,
        "A run whose record or replay was killed at `--timeout` counts as timed out, not as replayed.\n"
    );
    let _ = writeln!(
        s,
        "| strategy | verified / replayed | rate | timed out | paper |\n|---|---:|---:|---:|---|"
    );
    for st in b.strategies {
        if b.unavailable.contains_key(st) {
            let _ = writeln!(s, "| {st} | unavailable | – | – | {} |", paper_rate(st));
            continue;
        }
        let record_timed_out = |r: &Run| super::failures::record_timed_out(b.runs, r);
        let (mut ok, mut replayed, mut timeouts) = (0, 0, 0);
        for r in b
            .runs
            .iter()
            .filter(|r| r.config == "replay" && r.strategy == *st && !r.note.starts_with("skipped"))
        {
            if r.timed_out || record_timed_out(r) {
                timeouts += 1;
            } else {
                replayed += 1;
                ok += (r.verified == Some(true)) as usize;
            }
        }
        let rate = if replayed == 0 {
            "–".to_string()
        } else {
            format!("{:.1}%", 100.0 * ok as f64 / replayed as f64)
        };
        let _ = writeln!(
            s,
            "| {st} | {ok}/{replayed} | {rate} | {timeouts} | {} |",
            paper_rate(st)
        );
    }
}

/// The strategy whose log a variant extends (`aggreplay+` -> `aggreplay`).
fn seed_of(strategy: &str) -> Option<&str> {
    strategy.strip_suffix('+')
}

/// Log sizes per strategy summed over the programs every listed strategy recorded, and the
/// geometric mean of the per-program ratios against LEAP and (for a variant) its seed.
fn log_summary(s: &mut String, b: &Bench) {
    let _ = writeln!(
        s,
        "\n## Log size per strategy (KiB summed over the programs every strategy recorded; ratios: geometric means of per-program ratios)\n"
    );
    let size = |p: &str, st: &str, f: fn(&Run) -> Option<u64>| median_of(b.runs, p, st, f);
    let zstd: fn(&Run) -> Option<u64> = |r| r.trace_bytes;
    let gzip: fn(&Run) -> Option<u64> = |r| r.gzip9_bytes;
    let listed: Vec<&String> = b
        .strategies
        .iter()
        .filter(|st| !b.unavailable.contains_key(*st))
        .collect();
    let common: Vec<&Program> = b
        .programs
        .iter()
        .filter(|p| {
            listed
                .iter()
                .all(|st| size(&p.name, st, zstd).is_some() && size(&p.name, st, gzip).is_some())
        })
        .collect();
    let _ = writeln!(
        s,
        "{} of {} program(s) recorded by every strategy.\n",
        common.len(),
        b.programs.len()
    );
    let _ = writeln!(
        s,
        "| strategy | zstd (KiB) | gzip -9 (KiB) | zstd / leap | gzip -9 / leap | zstd / seed | gzip -9 / seed |\n|---|---:|---:|---:|---:|---:|---:|"
    );
    let geo = |st: &str, base: Option<&str>, f: fn(&Run) -> Option<u64>| -> String {
        let Some(base) = base.filter(|x| listed.iter().any(|l| l.as_str() == *x)) else {
            return "–".into();
        };
        let logs: Vec<f64> = common
            .iter()
            .filter_map(|p| ratio(size(&p.name, st, f), size(&p.name, base, f)))
            .filter(|v| *v > 0.0)
            .map(f64::ln)
            .collect();
        if logs.is_empty() {
            return "–".into();
        }
        fmt_x(Some((logs.iter().sum::<f64>() / logs.len() as f64).exp()))
    };
    for st in &listed {
        let sum = |f: fn(&Run) -> Option<u64>| -> f64 {
            common.iter().filter_map(|p| size(&p.name, st, f)).sum()
        };
        let _ = writeln!(
            s,
            "| {st} | {} | {} | {} | {} | {} | {} |",
            fmt_kib(Some(sum(zstd))),
            fmt_kib(Some(sum(gzip))),
            geo(st, Some("leap"), zstd),
            geo(st, Some("leap"), gzip),
            geo(st, seed_of(st), zstd),
            geo(st, seed_of(st), gzip),
        );
    }
}

/// The title, what was run, and the unavailable strategies.
fn intro(s: &mut String, b: &Bench) {
    let _ = writeln!(s, "# reprise bench\n");
    let _ = writeln!(
        s,
        "{} program(s), median of {} run(s) per configuration, suite programs with `-t {}`{}; {} CPU(s); {:.0}s in all. \
         Ratios divide medians measured in this invocation.\n",
        b.programs.len(),
        b.nruns,
        b.threads,
        match b.size {
            Size::Tiny => " and tiny `-n`",
            Size::Small => " and small `-n` (about 1/32 of the default work)",
            Size::Default => " at their default sizes",
        },
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        b.elapsed,
    );
    for (st, why) in b.unavailable {
        let _ = writeln!(
            s,
            "`{st}`: unavailable (`reprise record --strategy {st}` says: {why})\n"
        );
    }
}

/// Record / native, with the floor and tsan for reference.
fn record_slowdown(s: &mut String, b: &Bench) {
    let _ = writeln!(s, "## Record slowdown (record / native)\n");
    let _ = writeln!(s, "floor: empty ThreadSanitizer callbacks (the instrumentation alone); tsan: gcc's ThreadSanitizer (a peer).\n");
    b.header(s, &["program", "args", "native (s)", "floor", "tsan"]);
    let runs = b.runs;
    for p in b.programs {
        let native = median_secs(runs, &p.name, "native", "");
        let mut row = vec![
            p.name.clone(),
            if p.args.is_empty() {
                "–".into()
            } else {
                format!("`{}`", p.args.join(" "))
            },
            native.map(|v| format!("{v:.3}")).unwrap_or("–".into()),
            fmt_x(ratio(median_secs(runs, &p.name, "floor", ""), native)),
            fmt_x(ratio(median_secs(runs, &p.name, "tsan", ""), native)),
        ];
        for st in b.strategies {
            row.push(b.cell(st, slowdown_cell(runs, &p.name, "record", st, native)));
        }
        let _ = writeln!(s, "| {} |", row.join(" | "));
    }
}

/// Record / floor and replay / record per strategy, with their geometric means.
fn against_floor(s: &mut String, b: &Bench) {
    let _ = writeln!(
        s,
        "\n## Against the floor (record / floor) and replay / record\n"
    );
    let _ = writeln!(s, "The floor is the same instrumentation with empty callbacks: every nanosecond above it is the strategy's. Last row: geometric means.\n");
    let mut cols = vec!["program".to_string()];
    for st in b.strategies {
        cols.push(format!("{st} record/floor"));
        cols.push(format!("{st} replay/record"));
    }
    let _ = writeln!(s, "| {} |", cols.join(" | "));
    let _ = writeln!(s, "|{}", "---|".repeat(cols.len()));
    // Per strategy: sums of the logs of record/floor and replay/record, and their counts.
    let mut logs: Vec<(f64, f64, usize, usize)> = vec![(0.0, 0.0, 0, 0); b.strategies.len()];
    for p in b.programs {
        let floor = median_secs(b.runs, &p.name, "floor", "");
        let mut row = vec![p.name.clone()];
        for (i, st) in b.strategies.iter().enumerate() {
            let rec = median_secs(b.runs, &p.name, "record", st);
            let rf = ratio(rec, floor);
            let rr = ratio(median_secs(b.runs, &p.name, "replay", st), rec);
            if let Some(v) = rf {
                logs[i].0 += v.ln();
                logs[i].2 += 1;
            }
            if let Some(v) = rr {
                logs[i].1 += v.ln();
                logs[i].3 += 1;
            }
            row.push(fmt_x(rf));
            row.push(fmt_x(rr));
        }
        let _ = writeln!(s, "| {} |", row.join(" | "));
    }
    let mut row = vec!["geomean".to_string()];
    for l in &logs {
        let g = |sum: f64, n: usize| (n > 0).then(|| (sum / n as f64).exp());
        row.push(fmt_x(g(l.0, l.2)));
        row.push(fmt_x(g(l.1, l.3)));
    }
    let _ = writeln!(s, "| {} |", row.join(" | "));
}

/// Events per kind of the first strategy that counted them.
fn events_by_kind(s: &mut String, b: &Bench) {
    let _ = writeln!(
        s,
        "\n## Events by kind (the first strategy's recording; sync: locks, condvars, semaphores, barriers, once, create, join; ranged: memcpy/memset/memmove and struct copies)\n"
    );
    let _ = writeln!(
        s,
        "| program | reads | writes | atomics | sync | ranged | stdio |\n|---|---:|---:|---:|---:|---:|---:|"
    );
    for p in b.programs {
        let st = b
            .strategies
            .iter()
            .find(|st| median_of(b.runs, &p.name, st, |r| r.reads).is_some());
        let f = |g: fn(&Run) -> Option<u64>| {
            fmt_count(st.and_then(|st| median_of(b.runs, &p.name, st, g)))
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} |",
            p.name,
            f(|r| r.reads),
            f(|r| r.writes),
            f(|r| r.atomics),
            f(|r| r.syncs),
            f(|r| r.ranges),
            f(|r| r.stdio)
        );
    }
}

/// TPLAY's table IV: transactions, interleavings, atomicity violations.
fn tplay(s: &mut String, b: &Bench) {
    let _ = writeln!(
        s,
        "\n## TPLAY (seed 003 table IV): transactions / transactional interleavings / atomicity violations\n"
    );
    let _ = writeln!(
        s,
        "| program | transactions | interleavings | violations |\n|---|---:|---:|---:|"
    );
    for p in b.programs {
        let f = |g: fn(&Run) -> Option<u64>| fmt_count(median_of(b.runs, &p.name, "tplay", g));
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} |",
            p.name,
            f(|r| r.transactions),
            f(|r| r.interleavings),
            f(|r| r.violations)
        );
    }
}

/// A replay success cell: verified / tried, and the timeouts.
fn replay_success(runs: &[Run], program: &str, st: &str) -> String {
    let reps: Vec<&Run> = runs
        .iter()
        .filter(|r| r.program == program && r.config == "replay" && r.strategy == st)
        .collect();
    let ok = reps.iter().filter(|r| r.verified == Some(true)).count();
    let tried = reps
        .iter()
        .filter(|r| !r.note.starts_with("skipped"))
        .count();
    let timeouts = runs
        .iter()
        .filter(|r| r.program == program && r.strategy == st && r.timed_out)
        .count();
    if timeouts > 0 {
        format!("{ok}/{tried} ({timeouts} timeout)")
    } else {
        format!("{ok}/{tried}")
    }
}

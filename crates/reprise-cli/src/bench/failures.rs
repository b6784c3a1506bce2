//! The failure classification table: the cause of every replay that did not verify, per
//! strategy, read from the replay's own diagnosis (its note).
//!
//! The symptom says which kind of relation broke; the strategy says whose fault it is. The
//! seeds (`aggreplay`, `tplay`) fail where they do not record a relation the execution needs;
//! the simulator shows each class on small programs (`cargo run -p reprise-core --release
//! --example classify` prints a shortest counter-example per class, and
//! `crates/reprise-core/tests/plus_variants.rs` asserts them). A strategy that must replay
//! every run (leap, ownership, `aggreplay+`, `tplay+`) failing is a bug of ours.

use super::Run;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The symptom of a replay that did not verify, from its note.
pub(super) fn symptom(r: &Run) -> &'static str {
    let n = r.note.as_str();
    if r.timed_out {
        "timed out"
    } else if n.contains("reached the end of its recorded events") && n.contains("stuck") {
        // Its count reached the recording's final one before the thread ended there: it
        // read other values and took another path (dcl under tplay: a reader saw the
        // singleton in another state and made fewer calls).
        "ran past its recorded events: read other values, took another path"
    } else if n.contains("waits for the strategy's log") {
        "stuck: a record checked before it holds"
    } else if n.contains("blocked in a lock, barrier or join") {
        "stuck in the program's synchronisation (lock order, or a wait on a value it never sees)"
    } else if n.contains("re-recorded in the replay") || n.contains("access vector") {
        "the same values by another order"
    } else if n.contains("diverged") || n.contains("differ") || n.contains("ended differently") {
        "values diverged: a relation held at the callback, not at the access"
    } else {
        "other"
    }
}

/// Whose fault a failure of `strategy` is.
fn cause(strategy: &str) -> &'static str {
    match strategy {
        "aggreplay" | "tplay" => "a relation the seed does not record (simulator: `classify`)",
        _ => "a bug of ours (this strategy must replay every run)",
    }
}

/// Whether replay row `r`'s run had its record killed at the timeout (it has no replay: it
/// counts as timed out, and is not a failure to classify).
pub(super) fn record_timed_out(runs: &[Run], r: &Run) -> bool {
    runs.iter().any(|x| {
        x.config == "record"
            && x.timed_out
            && x.program == r.program
            && x.strategy == r.strategy
            && x.run == r.run
    })
}

/// Write the table (nothing when every replay verified).
pub(super) fn table(s: &mut String, runs: &[Run], strategies: &[String]) {
    let mut rows: BTreeMap<(usize, &str), (u32, String)> = BTreeMap::new();
    for r in runs.iter().filter(|r| {
        r.config == "replay"
            && r.verified != Some(true)
            && !r.note.starts_with("skipped")
            && !record_timed_out(runs, r)
    }) {
        let Some(i) = strategies.iter().position(|s| *s == r.strategy) else {
            continue;
        };
        let e = rows
            .entry((i, symptom(r)))
            .or_insert_with(|| (0, format!("{} run {}: {}", r.program, r.run, r.note)));
        e.0 += 1;
    }
    let _ = writeln!(
        s,
        "\n## Failure classification (replays that did not verify)\n"
    );
    if rows.is_empty() {
        let _ = writeln!(s, "Every replay verified.");
        return;
    }
    let _ = writeln!(
        s,
        "| strategy | symptom | replays | cause | first example |\n|---|---|---:|---|---|"
    );
    for ((i, sym), (n, example)) in rows {
        let st = &strategies[i];
        let example = example.replace('|', "\\|");
        let _ = writeln!(s, "| {st} | {sym} | {n} | {} | {example} |", cause(st));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(config: &str, timed_out: bool, note: &str) -> Run {
        Run {
            program: "radix".into(),
            config: config.into(),
            strategy: "tplay+".into(),
            timed_out,
            note: note.into(),
            ..Default::default()
        }
    }

    #[test]
    fn a_run_whose_record_timed_out_is_not_a_failure_of_its_replay() {
        let strategies = ["tplay+".to_string()];
        let mut runs = vec![
            run("record", true, "timeout: record killed after 30s"),
            run("replay", false, "no trace to replay"),
        ];
        let mut s = String::new();
        table(&mut s, &runs, &strategies);
        assert!(s.contains("Every replay verified."), "{s}");
        // A replay that ran and did not verify is classified.
        runs[0].timed_out = false;
        runs[1].note = "reprise: replay diverged: thread 1 diverged in events 1..9".into();
        let mut s = String::new();
        table(&mut s, &runs, &strategies);
        assert!(s.contains("values diverged"), "{s}");
    }
}

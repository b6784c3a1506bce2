//! `reprise bench --quick` end to end: builds three programs four ways, records and replays
//! them, and writes the report. Checks the outputs' shape and that every replay verified;
//! never a timing.

use std::process::Command;

// Over 80 lines: one run of `bench --quick` (minutes), every output of it checked in turn.
#[allow(clippy::too_many_lines)]
#[test]
fn bench_quick_writes_tables_and_every_replay_verifies() {
    let out = tempfile::tempdir().expect("temporary directory");
    let r = Command::new(env!("CARGO_BIN_EXE_reprise"))
        .args(["bench", "--quick", "--out"])
        .arg(out.path())
        .output()
        .expect("run reprise bench");
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(
        r.status.success(),
        "reprise bench --quick failed ({}):\n{stderr}",
        r.status
    );

    let md = std::fs::read_to_string(out.path().join("bench.md")).expect("bench.md");
    assert_eq!(
        String::from_utf8_lossy(&r.stdout),
        md,
        "the tables printed to stdout are the Markdown file"
    );
    for table in [
        "## Record slowdown",
        "## Replay slowdown",
        "## Log size",
        "## Replay success",
        "## Events by kind",
    ] {
        assert!(md.contains(table), "bench.md lacks `{table}`:\n{md}");
    }
    let programs = ["histogram", "counter_race", "prodcons"];
    for p in programs {
        let rows = md
            .lines()
            .filter(|l| l.starts_with(&format!("| {p} |")))
            .count();
        assert!(
            rows >= 4,
            "bench.md has {rows} rows for {p}, want one per table:\n{md}"
        );
    }

    let csv = std::fs::read_to_string(out.path().join("runs.csv")).expect("runs.csv");
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().expect("runs.csv header").split(',').collect();
    assert_eq!(header[..3], ["program", "config", "strategy"]);
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("runs.csv lacks column {name}"))
    };
    let (program, config, verified) = (col("program"), col("config"), col("verified"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    for p in programs {
        for c in ["native", "floor", "tsan", "record", "replay"] {
            assert!(
                rows.iter().any(|r| r[program] == p && r[config] == c),
                "runs.csv has no {c} row for {p}:\n{csv}"
            );
        }
    }
    // Events by kind come from the runtime's counters: every counted event has a kind, and
    // counter_race's threads both read and write the shared counter.
    let num = |r: &Vec<&str>, c: &str| -> u64 { r[col(c)].parse().unwrap_or(0) };
    let rec = rows
        .iter()
        .find(|r| r[program] == "counter_race" && r[config] == "record")
        .expect("a counter_race record row");
    let kinds: u64 = ["reads", "writes", "atomics", "syncs", "ranges", "stdio"]
        .iter()
        .map(|c| num(rec, c))
        .sum();
    assert!(
        num(rec, "reads") > 0 && num(rec, "writes") > 0,
        "no reads/writes counted: {csv}"
    );
    assert!(
        kinds <= num(rec, "events") && kinds + 16 >= num(rec, "events"),
        "events by kind ({kinds}) do not add up to the events ({}):\n{csv}",
        num(rec, "events")
    );

    let replays: Vec<&Vec<&str>> = rows
        .iter()
        .filter(|r| r[config] == "replay" && !r[verified].is_empty())
        .collect();
    assert!(
        replays.len() >= programs.len(),
        "too few replays in runs.csv:\n{csv}"
    );
    for r in replays {
        assert_eq!(
            r[verified],
            "true",
            "a replay did not verify: {}",
            r.join(",")
        );
    }

    assert!(out.path().join("runs.json").is_file(), "runs.json missing");
    let svg = std::fs::read_to_string(out.path().join("record-slowdown.svg"))
        .expect("record-slowdown.svg");
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
}

//! The raw results: runs.csv (the csv crate, one row per [`Run`], its fields as columns),
//! runs.json, and the files of the report.

use super::{BenchOpts, Kind, Program, Run, Size};
use anyhow::{Context, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// Everything written to runs.json.
#[derive(Serialize)]
struct Report<'a> {
    threads: u32,
    runs_per_config: usize,
    quick: bool,
    size: String,
    strategies: &'a [String],
    programs: Vec<ProgramInfo>,
    runs: &'a [Run],
}

#[derive(Serialize)]
struct ProgramInfo {
    name: String,
    kind: Kind,
    args: Vec<String>,
}

/// Write bench.md, runs.csv, runs.json and record-slowdown.svg into `o.out`.
pub(super) fn write_all(
    o: &BenchOpts,
    md: &str,
    programs: &[Program],
    unavailable: &BTreeMap<String, String>,
    runs: &[Run],
    nruns: usize,
    size: Size,
) -> Result<()> {
    write_file(&o.out.join("bench.md"), md.as_bytes())?;
    write_file(&o.out.join("runs.csv"), &csv(runs)?)?;
    let report = Report {
        threads: o.threads,
        runs_per_config: nruns,
        quick: o.quick,
        size: format!("{size:?}").to_lowercase(),
        strategies: &o.strategies,
        programs: programs
            .iter()
            .map(|p| ProgramInfo {
                name: p.name.clone(),
                kind: p.kind,
                args: p.args.clone(),
            })
            .collect(),
        runs,
    };
    let json = serde_json::to_string_pretty(&report).context("cannot serialise the runs")?;
    write_file(&o.out.join("runs.json"), json.as_bytes())?;
    let svg = super::chart::svg(programs, &o.strategies, unavailable, runs)?;
    write_file(&o.out.join("record-slowdown.svg"), svg.as_bytes())
}

/// runs.csv: a header of [`Run`]'s field names, then one row per run (empty cells for
/// missing values).
fn csv(runs: &[Run]) -> Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in runs {
        w.serialize(r).context("cannot write runs.csv")?;
    }
    w.into_inner().context("cannot write runs.csv")
}

fn write_file(path: &Path, data: &[u8]) -> Result<()> {
    std::fs::write(path, data).with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_csv_has_the_columns_in_order_and_quotes_what_needs_it() {
        let runs = [Run {
            program: "p".into(),
            config: "record".into(),
            strategy: "ownership".into(),
            seconds: 1.5,
            exit: Some(0),
            events: Some(42),
            verified: Some(true),
            note: "a, \"b\"".into(),
            ..Default::default()
        }];
        let text = String::from_utf8(csv(&runs).unwrap()).unwrap();
        let mut lines = text.lines();
        assert_eq!(
            lines.next().unwrap(),
            "program,config,strategy,run,seconds,exit,timed_out,trace_bytes,event_bytes,\
             gzip9_bytes,events,vector_runs,threads,reads,writes,atomics,syncs,ranges,stdio,\
             transactions,interleavings,violations,verified,note"
        );
        assert_eq!(
            lines.next().unwrap(),
            "p,record,ownership,0,1.5,0,false,,,,42,,,,,,,,,,,,true,\"a, \"\"b\"\"\""
        );
        assert!(!text.contains('\r'));
    }
}

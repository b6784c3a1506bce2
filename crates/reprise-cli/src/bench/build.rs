//! The bench's programs and builds: the manifests, problem sizes, and the four builds of each
//! program (native, floor, tsan, reprise).

use super::{Binaries, Kind, Program, Size};
use anyhow::{bail, Context, Result};
use indicatif::ProgressBar;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// `-n` for a suite program at `size` (none: the program's default).
pub(super) fn size_arg(name: &str, size: Size) -> Option<&'static str> {
    match size {
        Size::Tiny => Some(tiny_size(name)),
        Size::Small => Some(small_size(name)),
        Size::Default => None,
    }
}

/// About 1/32 of each program's default work (the exponent follows the kernel's complexity).
fn small_size(name: &str) -> &'static str {
    match name {
        "fft" => "32768",
        "lu" => "480",
        "radix" => "524288",
        "ocean" => "192",
        "nbody" => "768",
        "water" => "512",
        "matmul" => "384",
        "histogram" => "1048576",
        "blackscholes" => "16384",
        "kmeans" => "10000",
        _ => "10000",
    }
}

/// A few milliseconds natively.
fn tiny_size(name: &str) -> &'static str {
    match name {
        "fft" => "4096",
        "lu" => "128",
        "radix" => "65536",
        "ocean" => "64",
        "nbody" => "256",
        "water" => "192",
        "matmul" => "128",
        "histogram" => "65536",
        "blackscholes" => "4096",
        "kmeans" => "5000",
        _ => "1000",
    }
}

/// The source tree: the first ancestor of the working directory, then of the binary, holding
/// `bench/programs/manifest.txt`.
pub(super) fn find_root() -> Result<PathBuf> {
    let mut starts = vec![std::env::current_dir().context("cannot read the working directory")?];
    if let Ok(exe) = std::env::current_exe() {
        starts.push(exe);
    }
    for s in starts {
        for d in s.ancestors() {
            if d.join("bench/programs/manifest.txt").is_file() {
                return Ok(d.to_path_buf());
            }
        }
    }
    bail!("cannot find bench/programs/manifest.txt above the working directory or the reprise binary: run the bench inside the reprise source tree")
}

/// The full bench's programs: the suite, then the bug programs `bench/programs/bugs.txt`
/// names (one per line, `#` comments).
pub(super) fn default_programs(root: &Path, programs: &[Program]) -> Result<Vec<String>> {
    let path = root.join("bench/programs/bugs.txt");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let bugs: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    if let Some(b) = bugs.iter().find(|b| {
        !programs
            .iter()
            .any(|p| p.kind == Kind::Bug && p.name == **b)
    }) {
        bail!(
            "{}: `{b}` is not in tests/programs/manifest.txt",
            path.display()
        );
    }
    Ok(programs
        .iter()
        .filter(|p| p.kind == Kind::Suite || bugs.contains(&p.name.as_str()))
        .map(|p| p.name.clone())
        .collect())
}

/// Both manifests: the suite (`name source args`) then the bug programs
/// (`name source lang racy crashes args`).
pub(super) fn load_programs(root: &Path) -> Result<Vec<Program>> {
    let mut out = Vec::new();
    for (dir, kind) in [
        ("bench/programs", Kind::Suite),
        ("tests/programs", Kind::Bug),
    ] {
        let dir = root.join(dir);
        let path = dir.join("manifest.txt");
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        for (i, line) in text.lines().enumerate() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.is_empty() || f[0].starts_with('#') {
                continue;
            }
            let (args_from, cxx) = match kind {
                Kind::Suite if f.len() >= 3 => (2, false),
                Kind::Bug if f.len() >= 6 => (5, f[2] == "c++"),
                _ => bail!("{}:{}: malformed line `{line}`", path.display(), i + 1),
            };
            let args = f[args_from..]
                .iter()
                .filter(|a| **a != "-")
                .map(|a| a.to_string())
                .collect();
            out.push(Program {
                name: f[0].into(),
                kind,
                source: dir.join(f[1]),
                cxx,
                args,
            });
        }
    }
    Ok(out)
}

/// Compile `bench/floor/floor.c` into `<work>/floor/libtsan.a`; returns that directory.
pub(super) fn build_floor(root: &Path, work: &Path) -> Result<PathBuf> {
    let dir = work.join("floor");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let src = root.join("bench/floor/floor.c");
    let obj = dir.join("floor.o");
    let mut cc = Command::new("gcc");
    cc.args(["-O2", "-c"]).arg(&src).arg("-o").arg(&obj);
    check(&mut cc, "compile the floor")?;
    let mut ar = Command::new("ar");
    ar.arg("rcs").arg(dir.join("libtsan.a")).arg(&obj);
    check(&mut ar, "archive the floor")?;
    Ok(dir)
}

/// Build one program native, floor, tsan and with `reprise cc`.
pub(super) fn build_program(
    p: &Program,
    reprise: &Path,
    floor_dir: &Path,
    work: &Path,
    pb: &ProgressBar,
) -> Result<Binaries> {
    let compiler = if p.cxx { "g++" } else { "gcc" };
    let std_flag = if p.cxx { "-std=c++17" } else { "-std=gnu11" };
    let dir = work.join("bin");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let b = Binaries {
        native: dir.join(format!("{}.native", p.name)),
        floor: dir.join(format!("{}.floor", p.name)),
        tsan: dir.join(format!("{}.tsan", p.name)),
        reprise: dir.join(format!("{}.reprise", p.name)),
    };
    let base = |cmd: &mut Command, out: &Path| {
        cmd.args(["-O2", "-pthread", std_flag])
            .arg(&p.source)
            .arg("-o")
            .arg(out);
    };

    pb.set_message(format!("{}: build native", p.name));
    let mut c = Command::new(compiler);
    base(&mut c, &b.native);
    c.arg("-lm");
    check(&mut c, &format!("build {} natively", p.name))?;
    pb.inc(1);

    pb.set_message(format!("{}: build floor", p.name));
    let mut c = Command::new(compiler);
    c.args([
        "-fsanitize=thread",
        "--param=tsan-instrument-func-entry-exit=0",
    ]);
    // The same calls as `reprise cc` makes (its memory functions stay calls).
    c.args(crate::cc::GCC_STRING_CALLS);
    base(&mut c, &b.floor);
    // gcc adds -ltsan for -fsanitize=thread: the floor archive, named libtsan.a, is found first.
    c.arg(format!("-L{}", floor_dir.display()))
        .args(["-Wl,-u,__tsan_init", "-lm"]);
    check(&mut c, &format!("build {} against the floor", p.name))?;
    pb.inc(1);

    pb.set_message(format!("{}: build tsan", p.name));
    let mut c = Command::new(compiler);
    c.arg("-fsanitize=thread");
    base(&mut c, &b.tsan);
    c.arg("-lm");
    check(&mut c, &format!("build {} with ThreadSanitizer", p.name))?;
    pb.inc(1);

    pb.set_message(format!("{}: build reprise", p.name));
    let mut c = Command::new(reprise);
    c.arg(if p.cxx { "c++" } else { "cc" });
    base(&mut c, &b.reprise);
    check(&mut c, &format!("build {} with reprise cc", p.name))?;
    pb.inc(1);
    Ok(b)
}

/// Run a command to completion, failing with its stderr when it fails.
fn check(cmd: &mut Command, what: &str) -> Result<()> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot {what}: {cmd:?}"))?;
    if !out.status.success() {
        bail!(
            "cannot {what}: {cmd:?} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

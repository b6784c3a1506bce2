//! Third-party C code nobody here wrote, built with `reprise cc` and recorded in full mode: the
//! zstd library in its multithreaded mode (its own worker pool, mutexes and condition
//! variables), from the C sources the zstd-sys crate bundles (a dependency of reprise, so its
//! sources are in the cargo registry), driven by `tests/third_party/zstd_mt.c`.

mod common;
use common::*;
use std::path::PathBuf;
use std::process::Command;

/// The `zstd/lib` directory of the zstd-sys crate this workspace builds with.
fn zstd_lib() -> PathBuf {
    let o = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        // This platform's packages only: the others (Windows crates) are never downloaded.
        .args([
            "metadata",
            "--format-version",
            "1",
            "--offline",
            "--filter-platform",
        ])
        // (reprise runs on x86-64 Linux only.)
        .arg("x86_64-unknown-linux-gnu")
        .current_dir(root())
        .output()
        .unwrap();
    assert!(o.status.success(), "cargo metadata failed");
    let m: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let manifest = m["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "zstd-sys")
        .and_then(|p| p["manifest_path"].as_str())
        .expect("zstd-sys in the workspace's dependencies");
    let lib = PathBuf::from(manifest).parent().unwrap().join("zstd/lib");
    assert!(
        lib.join("zstd.h").exists(),
        "{} has no zstd.h",
        lib.display()
    );
    lib
}

#[test]
fn zstd_multithreaded_library() {
    let lib = zstd_lib();
    let w = Work::new();
    let mut sources: Vec<PathBuf> = ["common", "compress", "decompress"]
        .iter()
        .flat_map(|d| std::fs::read_dir(lib.join(d)).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .collect();
    sources.sort();
    sources.push(root().join("tests/third_party/zstd_mt.c"));
    let flags = ["-O2", "-DZSTD_MULTITHREAD", "-DZSTD_DISABLE_ASM"];
    let inc = format!("-I{}", lib.display());
    // The native build runs beside the instrumented one (each is one compiler process working
    // through the sources in turn; the test runs alone in its binary).
    let mut native = Command::new("gcc")
        .args(flags)
        .arg(&inc)
        .args(&sources)
        .args(["-pthread", "-o"])
        .arg(w.path("zstd_mt-native"))
        .spawn()
        .unwrap();
    let mut c = w.cmd();
    c.arg("cc")
        .args(flags)
        .arg(&inc)
        .args(&sources)
        .args(["-o", "zstd_mt"]);
    let o = run_limited(c, std::time::Duration::from_secs(600));
    assert!(
        native.wait().unwrap().success(),
        "gcc could not build the zstd library"
    );
    assert!(
        o.status.success(),
        "reprise cc could not build the zstd library:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let want = Command::new(w.path("zstd_mt-native")).output().unwrap();
    assert!(
        want.status.success() && String::from_utf8_lossy(&want.stdout).contains("round trip ok"),
        "{}",
        String::from_utf8_lossy(&want.stdout)
    );
    for i in 0..5 {
        let r = record(&w, "zstd_mt", &[], &format!("z{i}.trace"), &[]);
        assert_eq!(r.status, 0);
        assert!(
            r.stdout == want.stdout,
            "the recorded run printed something else than a native run"
        );
        replay_verified(&w, &r, How::Plain);
        replay_verified(&w, &r, How::OneCpu);
    }
}

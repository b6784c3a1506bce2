//! `reprise cc` / `reprise c++`: the compiler wrapper.
//!
//! It runs gcc/g++ (default) or clang/clang++ (`--clang`, or `REPRISE_COMPILER=clang`) with
//! ThreadSanitizer instrumentation and links the reprise runtime statically instead of
//! libtsan. gcc links `-ltsan` whenever `-fsanitize=thread` is on its command line, so the
//! runtime is also offered as `libtsan.a` in a private directory searched first; clang is told
//! not to link its runtime (`-fno-sanitize-link-runtime`) and gets the archive by path.
//! Every other argument passes through unchanged, so it works as `CC`/`CXX` in a Makefile.

use anyhow::{bail, Context, Result};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The runtime archive: `$REPRISE_RUNTIME`, or `libreprise_rt.a` beside the reprise binary.
pub fn runtime_archive() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("REPRISE_RUNTIME") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().context("cannot locate the reprise binary")?;
    let p = exe.parent().unwrap().join("libreprise_rt.a");
    if !p.exists() {
        bail!(
            "the runtime library {} is missing: build the workspace with `cargo build --release`",
            p.display()
        );
    }
    Ok(p)
}

/// A directory holding `libtsan.a` -> the runtime, for gcc's implicit `-ltsan`.
fn shim_dir(archive: &Path) -> Result<PathBuf> {
    let dir = archive.parent().unwrap().join("reprise-shim");
    let link = dir.join("libtsan.a");
    if !link.exists() {
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        // Concurrent `make -j` invocations race here; losing the race is fine.
        let tmp = dir.join(format!("libtsan.a.{}", std::process::id()));
        std::os::unix::fs::symlink(archive, &tmp).ok();
        std::fs::rename(&tmp, &link).ok();
    }
    Ok(dir)
}

fn is_source(a: &str) -> bool {
    let exts = [
        ".c", ".cc", ".cpp", ".cxx", ".c++", ".C", ".i", ".ii", ".s", ".S",
    ];
    !a.starts_with('-') && exts.iter().any(|e| a.ends_with(e))
}

/// Run the wrapped compiler; returns its exit status.
pub fn run(cplusplus: bool, args: Vec<OsString>) -> Result<i32> {
    let mut args: Vec<OsString> = args;
    let mut clang = std::env::var("REPRISE_COMPILER")
        .map(|v| v.contains("clang"))
        .unwrap_or(false);
    if args.first().map(|a| a == "--clang").unwrap_or(false) {
        clang = true;
        args.remove(0);
    }
    if args.first().map(|a| a == "--gcc").unwrap_or(false) {
        clang = false;
        args.remove(0);
    }
    let compiler = match (clang, cplusplus) {
        (false, false) => std::env::var("REPRISE_GCC").unwrap_or_else(|_| "gcc".into()),
        (false, true) => std::env::var("REPRISE_GXX").unwrap_or_else(|_| "g++".into()),
        (true, false) => std::env::var("REPRISE_CLANG").unwrap_or_else(|_| "clang".into()),
        (true, true) => std::env::var("REPRISE_CLANGXX").unwrap_or_else(|_| "clang++".into()),
    };
    let strs: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let info_only = strs
        .iter()
        .any(|a| a == "--version" || a == "-v" || a == "-dumpversion" || a == "-dumpmachine");
    let link = !strs
        .iter()
        .any(|a| matches!(a.as_str(), "-c" | "-S" | "-E" | "-M" | "-MM"));
    let has_inputs = strs
        .iter()
        .any(|a| is_source(a) || a.ends_with(".o") || a.ends_with(".a"));
    let mut cmd = Command::new(&compiler);
    if !info_only {
        cmd.arg("-fsanitize=thread");
        if clang {
            cmd.args([
                "-fno-sanitize-thread-func-entry-exit",
                "-mllvm",
                "-tsan-instrument-read-before-write=1",
                "-mcx16",
            ]);
        } else {
            cmd.arg("--param=tsan-instrument-func-entry-exit=0");
        }
    }
    cmd.args(&args);
    if link && has_inputs && !info_only {
        let archive = runtime_archive()?;
        if clang {
            cmd.arg("-fno-sanitize-link-runtime").arg(&archive);
        } else {
            let shim = shim_dir(&archive)?;
            cmd.arg(format!("-L{}", shim.display()));
            cmd.arg(&archive);
        }
        cmd.args([
            "-Wl,--wrap=memcpy",
            "-Wl,--wrap=memmove",
            "-Wl,--wrap=memset",
            "-Wl,-u,__tsan_init",
            "-lpthread",
            "-ldl",
            "-lm",
        ]);
    }
    let status = match cmd.status() {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!("compiler `{compiler}` not found (install it, or set REPRISE_COMPILER / REPRISE_GCC / REPRISE_CLANG)")
        }
        Err(e) => return Err(e).with_context(|| format!("cannot run {compiler}")),
    };
    Ok(status.code().unwrap_or(1))
}

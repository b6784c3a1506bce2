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

/// The libc functions whose calls from the program's own objects the runtime sees, as
/// ranged accesses (`ld --wrap`; the runtime calls the real ones as `__real_*`): the memory
/// functions, and the string functions, which read and write a chunk at a time in order.
pub const WRAPPED: &[&str] = &[
    "-Wl,--wrap=memcpy",
    "-Wl,--wrap=memmove",
    "-Wl,--wrap=memset",
    "-Wl,--wrap=memcmp",
    "-Wl,--wrap=bcmp",
    "-Wl,--wrap=strlen",
    "-Wl,--wrap=strnlen",
    "-Wl,--wrap=strcmp",
    "-Wl,--wrap=strncmp",
    "-Wl,--wrap=strcpy",
    "-Wl,--wrap=stpcpy",
    "-Wl,--wrap=strncpy",
    "-Wl,--wrap=strcat",
    "-Wl,--wrap=strncat",
    "-Wl,--wrap=strchr",
    "-Wl,--wrap=strrchr",
    "-Wl,--wrap=strdup",
    "-Wl,--wrap=strcasecmp",
    "-Wl,--wrap=strncasecmp",
    "-Wl,--wrap=memchr",
    "-Wl,--wrap=memrchr",
    "-Wl,--wrap=strspn",
    "-Wl,--wrap=strcspn",
    "-Wl,--wrap=strpbrk",
    "-Wl,--wrap=strstr",
];

/// gcc: keep calls to the memory functions calls. gcc's ThreadSanitizer pass leaves a call of
/// a builtin uninstrumented and expands a constant-size `memcpy`, `memset` or `memcmp` of more
/// than 16 bytes inline *after* that pass, into loads and stores no callback sees (a 48-byte
/// `memcpy` of a struct, `memset(&s, 0, sizeof s)`, `memcmp(&a, &b, 48) == 0`); as calls they
/// reach the wrapped functions ([`WRAPPED`]). clang's pass turns them into calls itself.
/// Copies of 16 bytes or less were folded into plain loads and stores before the pass (and
/// instrumented); they become calls too (SQLite recorded 2% slower). A program's own
/// `__builtin_memcpy` stays a builtin. `_FORTIFY_SOURCE`, whose wrappers are such builtins,
/// is undefined after the program's flags.
pub const GCC_STRING_CALLS: &[&str] = &[
    "-fno-builtin-memcpy",
    "-fno-builtin-memmove",
    "-fno-builtin-memset",
    "-fno-builtin-memcmp",
    // Compares with a constant are expanded inline, and copies of a constant become `memcpy`
    // builtins (stores no callback sees): as calls they reach the ordered string functions.
    "-fno-builtin-strcmp",
    "-fno-builtin-strncmp",
    "-fno-builtin-strcpy",
    "-fno-builtin-stpcpy",
    "-fno-builtin-strncpy",
    "-fno-builtin-strcat",
    "-fno-builtin-strncat",
    "-fno-builtin-strdup",
];

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

/// The runtime archive to link: a copy without the runtime's own debug information (made once
/// per build of the runtime, beside it), else the archive itself. The program's debug
/// information is untouched; the runtime's (three quarters of a linked program's bytes) only
/// slowed every record and replay, which hash the binary: `hello.c` links to 2.5 MB instead of
/// 11.4 MB, and `reprise record` of it takes 5.9 ms instead of 7.2 ms.
fn link_archive(archive: &Path) -> PathBuf {
    let dir = archive.parent().unwrap().join("reprise-shim");
    let out = dir.join("libreprise_rt.a");
    let mtime = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    if let (Some(a), Some(o)) = (mtime(archive), mtime(&out)) {
        if o >= a {
            return out;
        }
    }
    let tmp = dir.join(format!("libreprise_rt.a.{}", std::process::id()));
    let made = std::fs::create_dir_all(&dir).is_ok()
        && Command::new("objcopy")
            .arg("--strip-debug")
            .arg(archive)
            .arg(&tmp)
            .status()
            .is_ok_and(|s| s.success())
        // Concurrent `make -j` invocations race here; the last rename wins, any copy is good.
        && std::fs::rename(&tmp, &out).is_ok();
    if made {
        out
    } else {
        let _ = std::fs::remove_file(&tmp);
        archive.to_path_buf()
    }
}

/// A directory holding `libtsan.a` -> `archive` (the runtime to link), for gcc's implicit
/// `-ltsan`: beside the runtime `original`.
fn shim_dir(original: &Path, archive: &Path) -> Result<PathBuf> {
    let dir = original.parent().unwrap().join("reprise-shim");
    let link = dir.join("libtsan.a");
    if std::fs::read_link(&link).ok().as_deref() != Some(archive) {
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
            cmd.args(GCC_STRING_CALLS);
        }
    }
    cmd.args(&args);
    if !clang && !info_only {
        // After the program's own flags: glibc's `_FORTIFY_SOURCE` wrappers call
        // `__builtin___memcpy_chk`, which `-fno-builtin-memcpy` does not reach and gcc
        // expands inline again (see [`GCC_STRING_CALLS`]); Debian's package builds set it.
        cmd.arg("-U_FORTIFY_SOURCE");
    }
    if link && has_inputs && !info_only {
        // The program's `-x LANG` (configure scripts pass `-x c`) must not make the compiler
        // read the runtime archive as source: it compiled the archive's bytes and never ended.
        cmd.args(["-x", "none"]);
        let original = runtime_archive()?;
        let archive = link_archive(&original);
        if clang {
            cmd.arg("-fno-sanitize-link-runtime").arg(&archive);
        } else {
            let shim = shim_dir(&original, &archive)?;
            cmd.arg(format!("-L{}", shim.display()));
            cmd.arg(&archive);
        }
        cmd.args(WRAPPED);
        cmd.args([
            "-Wl,-u,__tsan_init",
            // The stdio interposers, also when only a shared library calls stdio (std::cin).
            "-Wl,-u,reprise_stdio_linked",
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

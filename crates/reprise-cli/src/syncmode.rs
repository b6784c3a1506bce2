//! Sync mode's launcher side (issue 14): whether a program holds the runtime (else it is
//! recorded in sync mode), the runtime linked as a shared object for `LD_PRELOAD`, and the
//! environment that preloads it. The runtime's side is `reprise-rt/src/preload.rs`.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The runtime as a shared object for sync mode (`LD_PRELOAD`): the same archive (one source
/// of the interposers), linked whole into `reprise-shim/libreprise_rt.so` beside it, once per
/// build of the runtime. Its memcpy family is wrapped as in a full-mode program (the runtime's
/// `__real_memcpy` ...), and `-init` starts the runtime before the program's constructors.
/// (A `cdylib` crate type would export only the Rust symbols, not the C shim's.)
pub fn runtime_shared() -> Result<PathBuf> {
    let archive = crate::cc::runtime_archive()?;
    let dir = archive.parent().unwrap().join("reprise-shim");
    let out = dir.join("libreprise_rt.so");
    let mtime = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    if let (Some(a), Some(o)) = (mtime(&archive), mtime(&out)) {
        if o >= a {
            return Ok(out);
        }
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let tmp = dir.join(format!("libreprise_rt.so.{}", std::process::id()));
    let cc = std::env::var("REPRISE_GCC").unwrap_or_else(|_| "gcc".into());
    let st = Command::new(&cc)
        .args(["-shared", "-o"])
        .arg(&tmp)
        .arg("-Wl,--whole-archive")
        .arg(&archive)
        .arg("-Wl,--no-whole-archive")
        .args(crate::cc::WRAPPED)
        .args([
            "-Wl,-init,reprise_preload_init",
            "-Wl,--strip-debug",
            "-lpthread",
            "-ldl",
            "-lm",
        ])
        .status();
    match st {
        Ok(s) if s.success() => {}
        _ => {
            let _ = std::fs::remove_file(&tmp);
            bail!("cannot link the sync-mode runtime {} with `{cc}` (sync mode needs gcc at record and replay)", out.display());
        }
    }
    // Concurrent recorders race here; any complete copy is good.
    std::fs::rename(&tmp, &out).with_context(|| format!("cannot create {}", out.display()))?;
    Ok(out)
}

/// Whether the executable `p` holds the reprise runtime (built with `reprise cc`): it defines
/// `__tsan_init`, or, stripped, holds the runtime's marker. Anything that is not such an ELF file (another program, a script) does not.
pub fn has_runtime(p: &Path) -> bool {
    use object::{Object, ObjectSymbol};
    let Ok(f) = std::fs::File::open(p) else {
        return false;
    };
    // Mapped, not read: only the headers and symbol tables are touched (reading a large
    // program whole cost a page fault per 4 KiB before every recording; object's lazy reader
    // makes a system call per symbol name).
    // SAFETY: the mapping is private and read-only, and nothing here writes the file. Were the
    // program truncated while reprise starts it, a read past its new end would fault (SIGBUS),
    // as running it would.
    let Ok(data) = (unsafe { memmap2::Mmap::map(&f) }) else {
        return false;
    };
    let Ok(file) = object::File::parse(&*data) else {
        return false;
    };
    let defines =
        |s: object::Symbol| !s.is_undefined() && s.name_bytes().ok() == Some(&b"__tsan_init"[..]);
    if file.symbols().any(defines) || file.dynamic_symbols().any(defines) {
        return true;
    }
    // Stripped: the runtime's marker (`REPRISE_RUNTIME_MARKER`), built here from two parts so
    // that reprise itself does not hold it.
    let marker = [&b"\0reprise-runtime-"[..], b"marker-v1\0"].concat();
    file.symbols().next().is_none() && memchr::memmem::find(&data, &marker).is_some()
}

/// Bytes of the `LD_PRELOAD=...` entry in sync mode: the runtime's path is padded with
/// leading spaces (empty entries of the list, which the dynamic loader skips) to this length,
/// so the environment (on the initial stack) has the same size in record and replay even when
/// reprise moved between them. Leading slashes did the same for the loader, but the path they
/// made was the runtime's name in the loader's list of libraries, and gdb reads no more than
/// 512 bytes of a library's name: it found no runtime ("not in executable format") and
/// stopped every backtrace at the runtime's thread start.
const PRELOAD_ENTRY: usize = 1024;

/// The environment the program is started with: the recorded one, plus in sync mode the
/// runtime first in `LD_PRELOAD` (before the program's own preloads, which stay).
pub fn program_env(env0: &[Vec<u8>], preload: Option<&Path>) -> Vec<Vec<u8>> {
    use std::os::unix::ffi::OsStrExt;
    let Some(so) = preload else {
        return env0.to_vec();
    };
    let path = so.as_os_str().as_bytes();
    let mut env: Vec<Vec<u8>> = Vec::with_capacity(env0.len() + 1);
    let mut theirs: Option<Vec<u8>> = None;
    for e in env0 {
        match e.strip_prefix(b"LD_PRELOAD=") {
            Some(v) if !v.is_empty() => theirs = Some(v.to_vec()),
            Some(_) => {}
            None => env.push(e.clone()),
        }
    }
    let mut entry = b"LD_PRELOAD=".to_vec();
    let tail = theirs.as_ref().map_or(0, |t| t.len() + 1);
    let pad = PRELOAD_ENTRY.saturating_sub(entry.len() + path.len() + tail + 1);
    entry.extend(std::iter::repeat_n(b' ', pad));
    entry.extend_from_slice(path);
    if let Some(t) = theirs {
        entry.push(b':');
        entry.extend(t);
    }
    env.push(entry);
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The entries the dynamic loader reads from an `LD_PRELOAD` value: split at spaces and
    /// colons, empty ones skipped.
    fn loader_list(v: &[u8]) -> Vec<&[u8]> {
        v.split(|&b| b == b' ' || b == b':')
            .filter(|e| !e.is_empty())
            .collect()
    }

    #[test]
    fn the_runtime_is_first_in_ld_preload_under_its_own_name_at_a_fixed_size() {
        let so = Path::new("/opt/reprise/reprise-shim/libreprise_rt.so");
        let env0 = vec![b"HOME=/root".to_vec(), b"LD_PRELOAD=/x/a.so b.so".to_vec()];
        let env = program_env(&env0, Some(so));
        assert_eq!(env[0], b"HOME=/root");
        let entry = &env[1];
        assert_eq!(entry.len() + 1, PRELOAD_ENTRY, "with its NUL");
        let v = entry.strip_prefix(b"LD_PRELOAD=").unwrap();
        assert_eq!(
            loader_list(v),
            [so.as_os_str().as_encoded_bytes(), b"/x/a.so", b"b.so"]
        );
        // Alone, and from another place: the same size.
        let alone = program_env(&env0[..1], Some(Path::new("/r/l.so")));
        assert_eq!(alone[1].len() + 1, PRELOAD_ENTRY);
        assert_eq!(loader_list(&alone[1][11..]), [b"/r/l.so"]);
        assert_eq!(program_env(&env0, None), env0);
    }
}

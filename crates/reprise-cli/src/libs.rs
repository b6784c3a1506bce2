//! The recorded program's shared libraries: found as its dynamic loader finds them, hashed
//! into the trace's header, checked before a replay.
//!
//! Found by the program's own loader (its `PT_INTERP`) run with `--list`, in the recorded
//! working directory and environment (so `LD_LIBRARY_PATH`, `RPATH`/`RUNPATH` and
//! `LD_PRELOAD` resolve as they do for the program), before the program runs: the list is in
//! the header, so even a trace whose recorder was killed has it. The loader with `--list`
//! maps the libraries and prints them; it runs no code of the program. Libraries the program
//! `dlopen`s itself are not on the list. A program without `PT_INTERP` (static, or not ELF)
//! has no libraries.

use anyhow::{bail, Context, Result};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The loader's `--list` gets this long (it maps files and prints; it never waits on input).
const LIST_LIMIT: Duration = Duration::from_secs(10);

/// The dynamic loader named by `exe`'s `PT_INTERP`; None for a program without one.
fn interpreter(exe: &Path) -> Result<Option<PathBuf>> {
    use object::read::elf::{ElfFile64, ProgramHeader};
    let data = std::fs::read(exe).with_context(|| format!("cannot read {}", exe.display()))?;
    let Ok(elf) = ElfFile64::<object::Endianness>::parse(&*data) else {
        return Ok(None);
    };
    let endian = elf.endian();
    for ph in elf.elf_program_headers() {
        if let Ok(Some(interp)) = ph.interpreter(endian, &*data) {
            return Ok(Some(PathBuf::from(OsStr::from_bytes(interp))));
        }
    }
    Ok(None)
}

/// A path the loader printed, made absolute against the program's working directory.
fn absolute(cwd: &Path, p: &[u8]) -> PathBuf {
    cwd.join(Path::new(OsStr::from_bytes(p)))
        .components()
        .filter(|c| *c != std::path::Component::CurDir)
        .collect()
}

/// The libraries in the loader's `--list` output: "name => path (0x...)" and "path (0x...)"
/// lines (the vDSO has no file; "not found" is no library).
fn parse_list(out: &[u8]) -> Vec<Vec<u8>> {
    let mut libs = Vec::new();
    for line in out.split(|&b| b == b'\n') {
        let line = line.trim_ascii();
        let path = match line.windows(4).position(|w| w == b" => ") {
            Some(i) => &line[i + 4..],
            None => line,
        };
        let path = match path.windows(4).rposition(|w| w == b" (0x") {
            Some(i) => &path[..i],
            None => continue,
        };
        if path.is_empty() || !path.contains(&b'/') {
            continue;
        }
        if !libs.iter().any(|l: &Vec<u8>| l == path) {
            libs.push(path.to_vec());
        }
    }
    libs
}

/// The shared libraries `exe` loads when started in `cwd` with `env`, each with its content
/// hash: (path as the loader found it, hash). Empty for a program without a loader.
pub fn resolve(exe: &Path, cwd: &Path, env: &[Vec<u8>]) -> Result<Vec<(Vec<u8>, String)>> {
    let Some(interp) = interpreter(exe)? else {
        return Ok(Vec::new());
    };
    let mut c = std::process::Command::new(&interp);
    c.arg("--list")
        .arg(exe)
        .current_dir(cwd)
        .env_clear()
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    for kv in env {
        if let Some(i) = kv.iter().position(|&b| b == b'=') {
            c.env(OsStr::from_bytes(&kv[..i]), OsStr::from_bytes(&kv[i + 1..]));
        }
    }
    let mut child = c
        .spawn()
        .with_context(|| format!("cannot run the dynamic loader {}", interp.display()))?;
    let mut so = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        use std::io::Read;
        let mut v = Vec::new();
        so.read_to_end(&mut v).map(|_| v)
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break s;
        }
        if start.elapsed() > LIST_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            bail!(
                "the dynamic loader {} did not list the libraries within {LIST_LIMIT:?}",
                interp.display()
            );
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let out = reader
        .join()
        .map_err(|_| anyhow::anyhow!("the loader's output reader failed"))??;
    if !status.success() {
        bail!(
            "the dynamic loader {} could not list the libraries ({status})",
            interp.display()
        );
    }
    let mut libs = Vec::new();
    for l in parse_list(&out) {
        let hash = crate::record::exe_hash(&absolute(cwd, &l))?;
        libs.push((l, hash));
    }
    Ok(libs)
}

/// Check the recorded libraries before a replay: Err(the `reprise:` line) for one that
/// changed; a warning on stderr for each one that cannot be read, or when the trace has no
/// list.
pub fn check(header: &reprise_trace::Header) -> std::result::Result<(), String> {
    let Some(libs) = &header.libs else {
        eprintln!("reprise: warning: the trace does not list the program's shared libraries (its recorder could not): a change in them cannot be checked");
        return Ok(());
    };
    let cwd = Path::new(OsStr::from_bytes(&header.cwd));
    for (l, recorded) in libs {
        let p = absolute(cwd, l);
        match crate::record::exe_hash(&p) {
            Ok(h) if &h == recorded => {}
            Ok(h) => {
                return Err(format!(
                    "the shared library {} changed since the recording (content hash {h} now, {recorded} recorded): restore it or record again",
                    p.display()
                ))
            }
            Err(e) => eprintln!(
                "reprise: warning: cannot check the shared library {} ({e:#}): a change in it would go unnoticed",
                p.display()
            ),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_list;

    #[test]
    fn parses_the_loader_list() {
        let out = b"\tlinux-vdso.so.1 (0x00007ffff7fc1000)\n\tlibm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x00007ffff7e00000)\n\tlibx.so => not found\n\t./libshim.so (0x00007ffff7a00000)\n\t/lib64/ld-linux-x86-64.so.2 (0x00007ffff7fc3000)\n\tlibm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x00007ffff7e00000)\n";
        let l: Vec<String> = parse_list(out)
            .into_iter()
            .map(|v| String::from_utf8(v).unwrap())
            .collect();
        assert_eq!(
            l,
            [
                "/lib/x86_64-linux-gnu/libm.so.6",
                "./libshim.so",
                "/lib64/ld-linux-x86-64.so.2"
            ]
        );
    }
}

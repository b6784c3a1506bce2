//! The recorded program's shared libraries: found as its dynamic loader finds them, hashed
//! into the trace's header, checked before a replay.
//!
//! Found by the program's own loader (its `PT_INTERP`) run with `--list`, in the recorded
//! working directory and environment (so `LD_LIBRARY_PATH`, `RPATH`/`RUNPATH` and
//! `LD_PRELOAD` resolve as they do for the program), before the program runs: the list is in
//! the header, so even a trace whose recorder was killed has it. The loader with `--list`
//! maps the libraries and prints them; it runs no code of the program. Libraries the program
//! `dlopen`s itself are not on the list: the runtime reports each one it loads after start
//! (`F_LIB`), the recorder hashes it when it arrives and keeps it in the trace's footer, and
//! [`check_dlopened`] checks them before a replay. A program without `PT_INTERP` (static, or
//! not ELF) has no libraries.

use anyhow::{bail, Context, Result};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The loader's `--list` gets this long (it maps files and prints; it never waits on input).
const LIST_LIMIT: Duration = Duration::from_secs(10);

/// The dynamic loader named by `exe`'s `PT_INTERP`; None for a program without one.
fn interpreter(exe: &Path) -> Result<Option<PathBuf>> {
    use object::read::elf::{ElfFile64, ProgramHeader};
    let f = std::fs::File::open(exe).with_context(|| format!("cannot read {}", exe.display()))?;
    // SAFETY: a private read-only mapping of the program, as in `syncmode::has_runtime`.
    let data = unsafe { memmap2::Mmap::map(&f) }
        .with_context(|| format!("cannot read {}", exe.display()))?;
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
    let key = list_key(exe, cwd, env);
    let listed = match key.as_ref().and_then(|k| cached_list(k, cwd)) {
        Some(l) => l,
        None => {
            let l = list(exe, cwd, env)?;
            if let Some(k) = &key {
                remember_list(k, cwd, &l);
            }
            l
        }
    };
    let mut libs = Vec::new();
    for l in listed {
        let hash = crate::hashcache::file_hash(&absolute(cwd, &l))?;
        libs.push((l, hash));
    }
    Ok(libs)
}

/// The identity of a file or directory as text (`hashcache::identity`), or "-" when missing.
fn ident(p: &Path) -> String {
    match std::fs::metadata(p) {
        Ok(m) => {
            let (d, i, n, mt, ct) = crate::hashcache::identity(&m);
            format!("{d}.{i}.{n}.{mt}.{ct}")
        }
        Err(_) => "-".into(),
    }
}

/// What the loader's answer depends on, hashed: the program (its identity), the working
/// directory, every `LD_` variable, the loader's cache and preload list, and the directories of
/// `LD_LIBRARY_PATH`. None when the program cannot be looked at.
fn list_key(exe: &Path, cwd: &Path, env: &[Vec<u8>]) -> Option<String> {
    use std::os::unix::ffi::OsStrExt;
    let exe = std::fs::canonicalize(cwd.join(exe)).ok()?;
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for part in [
        exe.as_os_str().as_bytes(),
        ident(&exe).as_bytes(),
        cwd.as_os_str().as_bytes(),
    ] {
        h.update(part);
        h.update(b"\0");
    }
    for kv in env.iter().filter(|kv| kv.starts_with(b"LD_")) {
        h.update(kv);
        h.update(b"\0");
        if let Some(dirs) = kv.strip_prefix(b"LD_LIBRARY_PATH=") {
            for d in dirs.split(|&b| b == b':' || b == b';') {
                h.update(ident(&cwd.join(Path::new(OsStr::from_bytes(d)))).as_bytes());
            }
        }
    }
    for f in ["/etc/ld.so.cache", "/etc/ld.so.preload"] {
        h.update(ident(Path::new(f)).as_bytes());
    }
    Some(format!("{:016x}", h.digest()))
}

/// The cache of loader answers, beside the hash cache: for each key, `DIRS-IDENTITY PATH\0PATH...`.
fn list_cache() -> Option<PathBuf> {
    crate::kvcache::dir("libs.d", "libs")
}

/// The identity of the directories the libraries were found in (a library added to one of them
/// may change what the loader finds).
fn dirs_ident(cwd: &Path, libs: &[Vec<u8>]) -> String {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for l in libs {
        let p = absolute(cwd, l);
        h.update(ident(p.parent().unwrap_or(Path::new("/"))).as_bytes());
        h.update(ident(&p).as_bytes());
    }
    format!("{:016x}", h.digest())
}

/// A remembered loader answer for `key`, if its libraries and their directories are unchanged.
fn cached_list(key: &str, cwd: &Path) -> Option<Vec<Vec<u8>>> {
    let entry = crate::kvcache::get(&list_cache()?, key.as_bytes())?;
    let (dirs, paths) = entry.split_at(entry.iter().position(|&b| b == b' ')?);
    let libs: Vec<Vec<u8>> = paths[1..]
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    (dirs == dirs_ident(cwd, &libs).as_bytes()).then_some(libs)
}

/// Remember the loader's answer for `key`. A cache that cannot be written only costs the
/// loader's run next time.
fn remember_list(key: &str, cwd: &Path, libs: &[Vec<u8>]) {
    let Some(dir) = list_cache() else { return };
    if libs.iter().any(|l| l.contains(&0)) {
        return;
    }
    let mut entry = format!("{} ", dirs_ident(cwd, libs)).into_bytes();
    entry.extend_from_slice(&libs.join(&0u8));
    crate::kvcache::put(&dir, key.as_bytes(), &entry);
}

/// The libraries the program's loader lists (paths as it printed them).
fn list(exe: &Path, cwd: &Path, env: &[Vec<u8>]) -> Result<Vec<Vec<u8>>> {
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
    // The loader's output ends when it exits: read it on a thread and wait for that (no
    // polling), killing a loader that takes too long.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::Read;
        let mut v = Vec::new();
        let _ = tx.send(so.read_to_end(&mut v).map(|_| v));
    });
    let out = match rx.recv_timeout(LIST_LIMIT) {
        Ok(out) => out?,
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            bail!(
                "the dynamic loader {} did not list the libraries within {LIST_LIMIT:?}",
                interp.display()
            );
        }
    };
    let status = child.wait()?;
    if !status.success() {
        bail!(
            "the dynamic loader {} could not list the libraries ({status})",
            interp.display()
        );
    }
    Ok(parse_list(&out))
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
        match crate::hashcache::file_hash(&p) {
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

/// Check the libraries the program loaded itself (`footer.dlopened`) before a replay, as
/// [`check`] does the linked ones: Err(the `reprise:` line) for one that changed, a warning for
/// one that cannot be read now or could not be then. `reported`: the paths the trace's frames
/// name (a trace without its footer has them, but no hashes: each is warned about).
pub fn check_dlopened(
    footer: &reprise_trace::Footer,
    reported: &[Vec<u8>],
) -> std::result::Result<(), String> {
    for p in reported {
        if !footer.dlopened.iter().any(|(l, _)| l == p) {
            eprintln!(
                "reprise: warning: the trace has no hash of {} (loaded by the program with dlopen; the recorder was killed): a change in it cannot be checked",
                Path::new(OsStr::from_bytes(p)).display()
            );
        }
    }
    for (l, recorded) in &footer.dlopened {
        let p = Path::new(OsStr::from_bytes(l));
        if recorded.is_empty() {
            eprintln!(
                "reprise: warning: the recorder could not read {} (loaded by the program with dlopen): a change in it cannot be checked",
                p.display()
            );
            continue;
        }
        match crate::hashcache::file_hash(p) {
            Ok(h) if &h == recorded => {}
            Ok(h) => {
                return Err(format!(
                    "the shared library {} (loaded by the program with dlopen) changed since the recording (content hash {h} now, {recorded} recorded): restore it or record again",
                    p.display()
                ))
            }
            Err(e) => eprintln!(
                "reprise: warning: cannot check the shared library {} (loaded by the program with dlopen: {e:#}): a change in it would go unnoticed",
                p.display()
            ),
        }
    }
    Ok(())
}

/// The path of a library among `libs` that schedules the program's threads on atomics and
/// futexes of its own, uninstrumented (LLVM's OpenMP runtime, which also spins on the clock;
/// oneTBB): neither mode sees them unless the library itself was built with `reprise cc`, so
/// such a program records but its replays may diverge. (GNU OpenMP is recorded: its `GOMP_*`
/// entry points are interposed.)
pub fn self_synchronising(libs: &[(Vec<u8>, String)]) -> Option<&[u8]> {
    const POOLS: [&[u8]; 3] = [b"libomp.so", b"libiomp5.so", b"libtbb.so"];
    libs.iter()
        .map(|(p, _)| p.as_slice())
        .find(|p| POOLS.iter().any(|pool| base_name(p).starts_with(pool)))
}

/// The last component of `path`.
fn base_name(path: &[u8]) -> &[u8] {
    path.rsplit(|&b| b == b'/').next().unwrap_or(path)
}

/// The file name of `path`, as text.
pub fn file_name(path: &[u8]) -> String {
    String::from_utf8_lossy(base_name(path)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::{file_name, parse_list, self_synchronising};

    #[test]
    fn names_a_library_with_its_own_thread_pool() {
        let lib = |p: &str| (p.as_bytes().to_vec(), String::new());
        let mut libs = vec![
            lib("/lib/x86_64-linux-gnu/libc.so.6"),
            lib("/lib/libgomp.so.1"),
        ];
        assert_eq!(self_synchronising(&libs), None);
        libs.push(lib("/usr/lib/x86_64-linux-gnu/libtbb.so.12"));
        let found = self_synchronising(&libs).unwrap();
        assert_eq!(file_name(found), "libtbb.so.12");
        let omp = [
            lib("/lib/x86_64-linux-gnu/libc.so.6"),
            lib("/usr/lib/llvm-14/lib/libomp.so.5"),
        ];
        assert_eq!(
            self_synchronising(&omp),
            Some(&b"/usr/lib/llvm-14/lib/libomp.so.5"[..])
        );
        let gomp = [
            lib("/lib/x86_64-linux-gnu/libgomp.so.1"),
            lib("/opt/libomp_helper.so"),
        ];
        assert_eq!(self_synchronising(&gomp), None);
    }

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

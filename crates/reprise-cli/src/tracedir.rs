//! Where traces live by default: `$REPRISE_TRACE_DIR`, else `$XDG_DATA_HOME/reprise`, else
//! `~/.local/share/reprise` (like rr). Each recording gets `NAME-N.trace`; `latest-trace`
//! points at the newest, which `reprise replay` and `reprise info` take without an argument.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// The trace directory (created if missing).
pub fn dir() -> Result<PathBuf> {
    let d = if let Some(d) = std::env::var_os("REPRISE_TRACE_DIR") {
        PathBuf::from(d)
    } else if let Some(d) = std::env::var_os("XDG_DATA_HOME") {
        PathBuf::from(d).join("reprise")
    } else if let Some(h) = std::env::var_os("HOME") {
        PathBuf::from(h).join(".local/share/reprise")
    } else {
        bail!("no trace directory: set REPRISE_TRACE_DIR or HOME")
    };
    std::fs::create_dir_all(&d)
        .with_context(|| format!("cannot create the trace directory {}", d.display()))?;
    Ok(d)
}

/// The directory of reprise's caches (`hashcache`, the loader's library lists):
/// `$XDG_CACHE_HOME/reprise`, else `~/.cache/reprise`; None when neither can be made (then
/// nothing is cached).
pub fn cache_dir() -> Option<PathBuf> {
    let d = if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        PathBuf::from(d).join("reprise")
    } else {
        PathBuf::from(std::env::var_os("HOME")?).join(".cache/reprise")
    };
    std::fs::create_dir_all(&d).ok()?;
    Some(d)
}

/// A fresh trace path for a program named `name`.
pub fn new_trace(name: &str) -> Result<PathBuf> {
    let d = dir()?;
    // Start past the highest number in use: one directory listing instead of one failed
    // create per earlier recording (a `--until-fail` loop makes hundreds).
    let prefix = format!("{name}-");
    let first = std::fs::read_dir(&d)
        .map(|rd| {
            rd.filter_map(|e| {
                let f = e.ok()?.file_name();
                let f = f.to_str()?;
                f.strip_prefix(&prefix)?
                    .strip_suffix(".trace")?
                    .parse::<u64>()
                    .ok()
            })
            .max()
            .map_or(0, |m| m + 1)
        })
        .unwrap_or(0);
    for n in first.. {
        let p = d.join(format!("{name}-{n}.trace"));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&p)
        {
            Ok(_) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(e).with_context(|| format!("cannot create a trace in {}", d.display()))
            }
        }
    }
    unreachable!()
}

/// Point `latest-trace` at `p`.
pub fn set_latest(p: &Path) {
    if let Ok(d) = dir() {
        let link = d.join("latest-trace");
        let tmp = d.join(format!(".latest-{}", std::process::id()));
        let target = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        if std::os::unix::fs::symlink(&target, &tmp).is_ok() {
            let _ = std::fs::rename(&tmp, &link);
        }
    }
}

/// The trace named by the user, or the latest.
pub fn resolve(arg: Option<PathBuf>) -> Result<PathBuf> {
    if let Some(p) = arg {
        if p.is_dir() {
            bail!("{} is a directory, not a trace", p.display());
        }
        return Ok(p);
    }
    let link = dir()?.join("latest-trace");
    std::fs::canonicalize(&link).with_context(|| {
        format!(
            "no trace given and no latest trace in {}",
            dir().map(|d| d.display().to_string()).unwrap_or_default()
        )
    })
}

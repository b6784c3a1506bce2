//! Content hashes of files that every recording and replay checks (the program, its shared
//! libraries and the sync-mode runtime), remembered by the file's identity so that a file is
//! read and hashed once, not before every run (libc alone is 2 MB: about a millisecond a
//! recording, which is a tenth of a
//! small program's run).
//!
//! The identity is what `git` trusts for its index: device, inode, size, and the modification
//! and change times in nanoseconds. Any write to a file moves its change time, which no call can
//! set back. A file changed twice within one tick of the kernel's coarse clock could keep its
//! times, so a hash is remembered only for a file whose change time is older than
//! [`SETTLED`] when it is hashed ("racily clean" files are hashed every time).
//!
//! The cache is one text file in the cache directory (`tracedir::cache_dir`, `hashes`), a line
//! per file; lines are appended (each in one `write`, so concurrent recorders do not interleave
//! them) and the file starts over past [`MAX_LINES`]. A damaged line is ignored: the file is then hashed again.

use anyhow::Result;
use std::collections::HashMap;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A file's change time must be at least this old for its hash to be remembered.
const SETTLED: Duration = Duration::from_secs(2);
/// The cache starts over once it holds this many lines.
const MAX_LINES: usize = 4096;

/// A file's identity: (device, inode, size, mtime ns, ctime ns).
pub type Identity = (u64, u64, u64, i128, i128);

struct Cache {
    path: Option<PathBuf>,
    /// The cache file as read: searched for one line at a look-up (parsing its thousands of
    /// lines into a map before every run cost about a millisecond).
    text: Vec<u8>,
    /// Hashes remembered by this process since it read the file.
    known: HashMap<(Vec<u8>, Identity), String>,
    lines: usize,
}

static CACHE: Mutex<Option<Cache>> = Mutex::new(None);

/// A file's identity (see the module docs).
pub fn identity(m: &std::fs::Metadata) -> Identity {
    let ns = |s: i64, n: i64| s as i128 * 1_000_000_000 + n as i128;
    (
        m.dev(),
        m.ino(),
        m.size(),
        ns(m.mtime(), m.mtime_nsec()),
        ns(m.ctime(), m.ctime_nsec()),
    )
}

fn load() -> Cache {
    let path = crate::tracedir::cache_dir().map(|d| d.join("hashes"));
    let text = path
        .as_ref()
        .and_then(|p| std::fs::read(p).ok())
        .unwrap_or_default();
    let lines = memchr::memchr_iter(b'\n', &text).count();
    Cache {
        path,
        text,
        known: HashMap::new(),
        lines,
    }
}

impl Cache {
    /// The remembered hash of `path` with identity `id`: the latest intact line for them.
    fn get(&self, path: &[u8], id: &Identity) -> Option<String> {
        if let Some(h) = self.known.get(&(path.to_vec(), *id)) {
            return Some(h.clone());
        }
        let head = format!("{} {} {} {} {} ", id.0, id.1, id.2, id.3, id.4);
        let at_line_start = |i: usize| i == 0 || self.text[i - 1] == b'\n';
        // Forward (the vectorised direction); the last intact match wins.
        memchr::memmem::find_iter(&self.text, head.as_bytes())
            .filter(|&i| at_line_start(i))
            .filter_map(|i| {
                let line = self.text[i..].split(|&b| b == b'\n').next()?;
                let ((p, lid), h) = parse(line)?;
                (p == path && lid == *id).then_some(h)
            })
            .last()
    }
}

/// `dev ino size mtime ctime hash path` (the path last: it may hold spaces).
fn parse(line: &[u8]) -> Option<((Vec<u8>, Identity), String)> {
    let mut f = line.splitn(7, |&b| b == b' ');
    let mut num = || std::str::from_utf8(f.next()?).ok()?.parse::<i128>().ok();
    let id = (num()? as u64, num()? as u64, num()? as u64, num()?, num()?);
    let hash = std::str::from_utf8(f.next()?).ok()?;
    if hash.len() != 16 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let path = f.next()?;
    (!path.is_empty()).then(|| ((path.to_vec(), id), hash.to_string()))
}

/// The content hash of `p` (as [`crate::record::exe_hash`] computes it), from the cache when
/// the file's identity is the remembered one.
pub fn file_hash(p: &Path) -> Result<String> {
    use std::os::unix::ffi::OsStrExt;
    let before = std::fs::metadata(p).ok().map(|m| identity(&m));
    let key = before.map(|id| (p.as_os_str().as_bytes().to_vec(), id));
    let mut guard = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let cache = guard.get_or_insert_with(load);
    if let Some(h) = key.as_ref().and_then(|(p, id)| cache.get(p, id)) {
        return Ok(h);
    }
    let hash = crate::record::exe_hash(p)?;
    let (Some((path, id)), Some(cpath)) = (key, cache.path.clone()) else {
        return Ok(hash);
    };
    // Remember it only if the file did not change while it was hashed and has settled.
    let after = std::fs::metadata(p).ok().map(|m| identity(&m));
    let settled = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .is_ok_and(|now| id.4 + (SETTLED.as_nanos() as i128) < now.as_nanos() as i128);
    if after == Some(id) && settled && !path.contains(&b'\n') {
        let mut line = format!("{} {} {} {} {} {hash} ", id.0, id.1, id.2, id.3, id.4).into_bytes();
        line.extend_from_slice(&path);
        line.push(b'\n');
        let fresh = cache.lines >= MAX_LINES;
        if append_line(&cpath, &line, fresh) {
            cache.lines = if fresh { 1 } else { cache.lines + 1 };
        }
        cache.known.insert((path, id), hash.clone());
    }
    Ok(hash)
}

/// Append `line` (one complete line) to the cache file `path` in one `write`, so concurrent
/// writers do not interleave; `start_over`: truncate the file first. False when it could not be
/// written: a cache that cannot be written only costs the work next time.
pub fn append_line(path: &Path, line: &[u8], start_over: bool) -> bool {
    std::fs::OpenOptions::new()
        .create(true)
        .append(!start_over)
        .write(true)
        .truncate(start_over)
        .open(path)
        .and_then(|mut f| f.write_all(line))
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::{parse, Cache};
    use std::collections::HashMap;

    #[test]
    fn finds_the_latest_intact_line_for_a_path_and_identity() {
        let text = b"1 2 3 4 5 00000000000000aa /lib/a.so\n\
9 1 2 3 4 5 00000000000000bb /lib/a.so\n\
1 2 3 4 5 00000000000000cc /lib/b.so\n\
1 2 3 4 5 0000000000000zzz /lib/a.so\n\
1 2 3 4 5 00000000000000dd /lib/a.so\n\
1 2 3 4 6 00000000000000ee /lib/a.so\n";
        let c = Cache {
            path: None,
            text: text.to_vec(),
            known: HashMap::new(),
            lines: 6,
        };
        // The later intact line wins; a damaged one, a match inside another line, another path
        // with the same identity and another identity are not taken.
        assert_eq!(
            c.get(b"/lib/a.so", &(1, 2, 3, 4, 5)).as_deref(),
            Some("00000000000000dd")
        );
        assert_eq!(
            c.get(b"/lib/b.so", &(1, 2, 3, 4, 5)).as_deref(),
            Some("00000000000000cc")
        );
        assert_eq!(
            c.get(b"/lib/a.so", &(1, 2, 3, 4, 6)).as_deref(),
            Some("00000000000000ee")
        );
        assert_eq!(c.get(b"/lib/a.so", &(2, 3, 4, 5, 0)), None);
        assert_eq!(c.get(b"/lib/c.so", &(1, 2, 3, 4, 5)), None);
    }

    #[test]
    fn parses_lines_and_refuses_damaged_ones() {
        let (k, h) = parse(
            b"2049 1234 99 1700000000000000000 1700000000000000001 0123456789abcdef /lib/a b.so",
        )
        .unwrap();
        assert_eq!(k.0, b"/lib/a b.so");
        assert_eq!(
            k.1,
            (
                2049,
                1234,
                99,
                1_700_000_000_000_000_000,
                1_700_000_000_000_000_001
            )
        );
        assert_eq!(h, "0123456789abcdef");
        assert!(parse(b"2049 1234 99 17 17 0123456789abcdeg /lib/a.so").is_none());
        assert!(parse(b"2049 1234 99 17 17 0123456789abcdef").is_none());
        assert!(parse(b"2049 x 99 17 17 0123456789abcdef /lib/a.so").is_none());
        assert!(parse(b"").is_none());
    }
}

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
//! The hashes are kept in the `hashes.d` cache directory (`kvcache`), keyed by the file's path
//! and identity.

use anyhow::Result;
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A file's change time must be at least this old for its hash to be remembered.
const SETTLED: Duration = Duration::from_secs(2);

/// A file's identity: (device, inode, size, mtime ns, ctime ns).
pub type Identity = (u64, u64, u64, i128, i128);

struct Cache {
    /// The cache directory; None when there is none (nothing is remembered across runs).
    dir: Option<PathBuf>,
    /// Hashes known to this process.
    known: HashMap<(Vec<u8>, Identity), String>,
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

/// The cache key of `path` with identity `id`: `dev ino size mtime ctime path`.
fn key(path: &[u8], id: &Identity) -> Vec<u8> {
    let mut k = format!("{} {} {} {} {} ", id.0, id.1, id.2, id.3, id.4).into_bytes();
    k.extend_from_slice(path);
    k
}

/// A remembered hash: 16 hex digits.
fn valid(h: &[u8]) -> Option<String> {
    (h.len() == 16 && h.iter().all(u8::is_ascii_hexdigit))
        .then(|| String::from_utf8_lossy(h).into_owned())
}

/// The content hash of `p` (as [`crate::record::exe_hash`] computes it), from the cache when
/// the file's identity is the remembered one.
pub fn file_hash(p: &Path) -> Result<String> {
    use std::os::unix::ffi::OsStrExt;
    let before = std::fs::metadata(p).ok().map(|m| identity(&m));
    let key = before.map(|id| (p.as_os_str().as_bytes().to_vec(), id));
    let mut guard = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let cache = guard.get_or_insert_with(|| Cache {
        dir: crate::kvcache::dir("hashes.d", "hashes"),
        known: HashMap::new(),
    });
    if let Some(k) = &key {
        if let Some(h) = cache.known.get(k) {
            return Ok(h.clone());
        }
        let remembered = cache.dir.as_ref().and_then(|d| {
            let v = crate::kvcache::get(d, &self::key(&k.0, &k.1))?;
            valid(&v)
        });
        if let Some(h) = remembered {
            cache.known.insert(k.clone(), h.clone());
            return Ok(h);
        }
    }
    let hash = crate::record::exe_hash(p)?;
    let (Some((path, id)), Some(dir)) = (key, cache.dir.as_ref()) else {
        return Ok(hash);
    };
    // Remember it only if the file did not change while it was hashed and has settled.
    let after = std::fs::metadata(p).ok().map(|m| identity(&m));
    let settled = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .is_ok_and(|now| id.4 + (SETTLED.as_nanos() as i128) < now.as_nanos() as i128);
    if after == Some(id) && settled {
        crate::kvcache::put(dir, &self::key(&path, &id), hash.as_bytes());
        cache.known.insert((path, id), hash.clone());
    }
    Ok(hash)
}

#[cfg(test)]
mod tests {
    use super::{key, valid};

    #[test]
    fn keys_tell_paths_and_identities_apart_and_hashes_are_checked() {
        assert_ne!(
            key(b"/lib/a.so", &(1, 2, 3, 4, 5)),
            key(b"/lib/b.so", &(1, 2, 3, 4, 5))
        );
        assert_ne!(
            key(b"/lib/a.so", &(1, 2, 3, 4, 5)),
            key(b"/lib/a.so", &(1, 2, 3, 4, 6))
        );
        assert_eq!(
            valid(b"0123456789abcdef").as_deref(),
            Some("0123456789abcdef")
        );
        assert_eq!(valid(b"0123456789abcdeg"), None);
        assert_eq!(valid(b"0123456789abcde"), None);
    }
}

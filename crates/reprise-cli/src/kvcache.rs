//! Small remembered answers on disk (file hashes, the loader's library lists): one file per key
//! in a directory of the cache directory, so that a look-up reads one small file whatever the
//! number of entries. The earlier form, one text file per cache searched whole, had grown to
//! 1.3 MB on a machine that runs the tests: reading and searching it cost every recording and
//! every replay about 1.5 ms (`reprise record` of a hello-world program: 6.9 -> 5.3 ms).
//!
//! An entry's file is named by a 128-bit hash of its key and holds `KEYLEN VALLEN\n`, the key
//! and the value: a look-up takes it only when the key is the one asked for and both lengths
//! match (a damaged or foreign entry is a miss, and the answer is then worked out again). An
//! entry is written to a temporary name and renamed into place, so a concurrent reader sees a
//! whole entry or none. A directory that grows past [`MAX_ENTRIES`] starts over.

use std::path::{Path, PathBuf};

/// Entries a cache directory holds before it starts over (checked at one write in 16).
const MAX_ENTRIES: usize = 1024;

/// The cache directory `name` (created if needed); None when there is no cache directory (then
/// nothing is remembered). `legacy`: the single-file cache this one replaces, removed when the
/// directory is first made.
pub fn dir(name: &str, legacy: &str) -> Option<PathBuf> {
    let base = crate::tracedir::cache_dir()?;
    let d = base.join(name);
    if std::fs::create_dir(&d).is_ok() {
        let _ = std::fs::remove_file(base.join(legacy));
    }
    d.is_dir().then_some(d)
}

fn file_name(key: &[u8]) -> String {
    format!("{:032x}", xxhash_rust::xxh3::xxh3_128(key))
}

/// The value remembered for `key` in `dir`, if an intact entry holds it.
pub fn get(dir: &Path, key: &[u8]) -> Option<Vec<u8>> {
    let data = std::fs::read(dir.join(file_name(key))).ok()?;
    let (k, v) = split(&data)?;
    (k == key).then(|| v.to_vec())
}

/// An entry's key and value, if it is intact.
fn split(data: &[u8]) -> Option<(&[u8], &[u8])> {
    let nl = data.iter().position(|&b| b == b'\n')?;
    let head = std::str::from_utf8(&data[..nl]).ok()?;
    let (k, v) = head.split_once(' ')?;
    let (k, v): (usize, usize) = (k.parse().ok()?, v.parse().ok()?);
    let rest = &data[nl + 1..];
    (k.checked_add(v)? == rest.len()).then(|| rest.split_at(k))
}

/// The bytes of an entry holding `value` for `key`.
fn entry(key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut data = format!("{} {}\n", key.len(), value.len()).into_bytes();
    data.extend_from_slice(key);
    data.extend_from_slice(value);
    data
}

/// Remember `value` for `key` in `dir`. A cache that cannot be written only costs the work
/// next time.
pub fn put(dir: &Path, key: &[u8], value: &[u8]) {
    let name = file_name(key);
    let tmp = dir.join(format!(".{name}.{}", std::process::id()));
    if std::fs::write(&tmp, entry(key, value)).is_err()
        || std::fs::rename(&tmp, dir.join(&name)).is_err()
    {
        let _ = std::fs::remove_file(&tmp);
        return;
    }
    if name.ends_with('0') {
        trim(dir);
    }
}

/// Start `dir` over when it holds more than [`MAX_ENTRIES`]: moved aside, then removed (a
/// concurrent writer's entry is lost with it, which only costs its work next time).
fn trim(dir: &Path) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    if rd.count() <= MAX_ENTRIES {
        return;
    }
    let aside = dir.with_extension(format!("old{}", std::process::id()));
    if std::fs::rename(dir, &aside).is_ok() {
        let _ = std::fs::remove_dir_all(&aside);
        let _ = std::fs::create_dir(dir);
    }
}

#[cfg(test)]
mod tests {
    use super::{entry, get, put, split, trim, MAX_ENTRIES};

    #[test]
    fn an_entry_is_found_by_its_key_and_only_whole() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(get(d.path(), b"k1"), None);
        put(d.path(), b"k1", b"value one");
        put(d.path(), b"k2 with spaces\n", b"");
        assert_eq!(get(d.path(), b"k1").as_deref(), Some(&b"value one"[..]));
        assert_eq!(
            get(d.path(), b"k2 with spaces\n").as_deref(),
            Some(&b""[..])
        );
        put(d.path(), b"k1", b"value two");
        assert_eq!(get(d.path(), b"k1").as_deref(), Some(&b"value two"[..]));
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 2);
    }

    #[test]
    fn damaged_or_foreign_entries_are_misses() {
        let e = entry(b"key", b"value");
        assert_eq!(split(&e), Some((&b"key"[..], &b"value"[..])));
        // Cut short, one byte too many, a bad head, or no head at all.
        assert_eq!(split(&e[..e.len() - 1]), None);
        assert_eq!(split(&[&e[..], b"x"].concat()), None);
        assert_eq!(split(b"3 x\nkeyvalue"), None);
        assert_eq!(split(b"keyvalue"), None);
        // A file holding another key under this key's name (a hash collision, or a file put
        // there by hand) is not taken.
        let d = tempfile::tempdir().unwrap();
        put(d.path(), b"key", b"value");
        let f = std::fs::read_dir(d.path())
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        std::fs::write(f.path(), entry(b"other", b"value")).unwrap();
        assert_eq!(get(d.path(), b"key"), None);
    }

    #[test]
    fn a_full_directory_starts_over() {
        let base = tempfile::tempdir().unwrap();
        let d = base.path().join("c");
        std::fs::create_dir(&d).unwrap();
        for i in 0..MAX_ENTRIES {
            std::fs::write(d.join(format!("{i}")), b"").unwrap();
        }
        trim(&d);
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), MAX_ENTRIES);
        std::fs::write(d.join("one more"), b"").unwrap();
        trim(&d);
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0);
        assert_eq!(std::fs::read_dir(base.path()).unwrap().count(), 1);
    }
}

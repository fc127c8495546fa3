//! When each version of a session file was imported: `<store>/times/<key>` (the key of the
//! file's import state), one line per version, `<version id hex> <milliseconds since the epoch>`,
//! appended after the batch that recorded the version commits.
//!
//! A hint, not data (like `written/`): version objects are content-addressed and carry no time,
//! so a lost or torn line only makes `shake log` say the time is unknown.

use std::collections::HashMap;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::durable::{private_dir, FileError};
use crate::id::ObjectId;

/// The times file of the session file whose import state is `state_file`.
pub fn times_path(store: &Path, state_file: &Path) -> PathBuf {
    store.join("times").join(state_file.file_name().unwrap_or_default())
}

/// The line recording that `version` was imported at `ms`.
pub fn line(version: &ObjectId, ms: u64) -> Vec<u8> {
    format!("{version} {ms}\n").into_bytes()
}

/// Appends `line` to `path` (0600, its folder 0700). Writers hold the store's lock, so lines
/// never interleave; no fsync: a line lost in a crash only loses a time.
pub fn append(path: &Path, line: &[u8]) -> Result<(), FileError> {
    if let Some(dir) = path.parent() {
        private_dir(dir)?;
    }
    let at = |doing| move |source| FileError { path: path.to_path_buf(), doing, source };
    let mut file = std::fs::OpenOptions::new().append(true).create(true).mode(0o600).open(path).map_err(at("open"))?;
    file.write_all(line).map_err(at("append to"))
}

/// Reads a times file: version → import time in milliseconds (a missing file, or a torn or
/// foreign line, gives nothing for those versions; the first time of a version is kept).
pub fn read(path: &Path) -> HashMap<ObjectId, u64> {
    let text = std::fs::read(path).unwrap_or_default();
    let mut times = HashMap::new();
    for line in String::from_utf8_lossy(&text).lines() {
        let Some((id, ms)) = line.split_once(' ') else { continue };
        if let (Ok(id), Ok(ms)) = (id.parse::<ObjectId>(), ms.parse::<u64>()) {
            times.entry(id).or_insert(ms);
        }
    }
    times
}

/// Milliseconds since the epoch now.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::Kind;

    #[test]
    fn appended_times_read_back_and_torn_lines_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = times_path(dir.path(), Path::new("import/abcd"));
        let (a, b) = (ObjectId::hash(Kind::Version, b"a"), ObjectId::hash(Kind::Version, b"b"));
        append(&path, &line(&a, 5)).unwrap();
        append(&path, &line(&b, 7)).unwrap();
        append(&path, &line(&a, 9)).unwrap();
        append(&path, b"deadbeef 1\n0123").unwrap();
        let times = read(&path);
        assert_eq!((times.len(), times[&a], times[&b]), (2, 5, 7));
        assert!(read(&dir.path().join("none")).is_empty());
    }
}

//! When each version of a session file was imported: the record `times/<key>` (the key of the
//! file's import state) in the store's packed files, one line per version, `<version id hex>
//! <milliseconds since the epoch>`, added by the batch that records the version (the lines of
//! every packed file add up; stores from before them have a loose `times/<key>` file too).
//!
//! A hint, not data (like `written/`): version objects are content-addressed and carry no time,
//! so a lost or torn line only makes `shake log` say the time is unknown.

use crate::id::ObjectId;
use std::collections::HashMap;

/// The record name of the times of the session file at `path` (an absolute path).
pub fn name(path: &str) -> String {
    format!("times/{}", super::state::key(path))
}

/// The line recording that `version` was imported at `ms`.
pub fn line(version: &ObjectId, ms: u64) -> Vec<u8> {
    format!("{version} {ms}\n").into_bytes()
}

/// Reads times lines: version → import time in milliseconds (a torn or foreign line gives
/// nothing for its version; the first time of a version is kept).
pub fn parse(text: &[u8]) -> HashMap<ObjectId, u64> {
    let mut times = HashMap::new();
    for line in String::from_utf8_lossy(text).lines() {
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
    fn times_read_back_and_torn_lines_are_skipped() {
        let (a, b) = (ObjectId::hash(Kind::Version, b"a"), ObjectId::hash(Kind::Version, b"b"));
        let text = [line(&a, 5), line(&b, 7), line(&a, 9), b"deadbeef 1\n0123".to_vec()].concat();
        let times = parse(&text);
        assert_eq!((times.len(), times[&a], times[&b]), (2, 5, 7));
        assert!(parse(b"").is_empty());
        assert_eq!(name("/a"), format!("times/{}", crate::store::state::key("/a")));
    }
}

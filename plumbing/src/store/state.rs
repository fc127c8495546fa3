//! Import state: what was imported of each session file, so re-import parses only new bytes.
//!
//! One record per session file, named `import/<blake3(path)[..16] hex>` in the store's packed
//! files (a loose file of that path in stores from before them), private to this store:
//! magic `SHAKSTAT`, a u32 format version, then two bincode 2 (serde, standard config,
//! size-limited) values: the small [`FileState`] read on every import, and the larger
//! [`Resume`] read only when the file grew; last, the blake3 of everything before it, so a
//! damaged state is never believed (a flipped byte inside bincode often still decodes). A state
//! that cannot be read is treated as absent: the file is then imported again from its first
//! byte, which adds no object that exists.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::id::ObjectId;
use crate::{Error, Result};

const MAGIC: &[u8; 8] = b"SHAKSTAT";
/// 2: with the checksum trailer (1 had none; such a state reads as absent and is rewritten).
const VERSION: u32 = 2;
const CHECKSUM: usize = 32;
/// Refuse to allocate more than this while decoding (a corrupt length must not exhaust memory).
const LIMIT: usize = 1 << 30;

fn config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<LIMIT>()
}

/// What the last import of a file saw; enough to tell "unchanged" from one `stat`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct FileState {
    /// The file's absolute path (UTF-8).
    pub path: String,
    /// Its size in bytes when imported.
    pub size: u64,
    /// Its modification time in nanoseconds since the epoch when imported.
    pub mtime_ns: u64,
    /// Bytes up to the end of the last complete line (a partial last line is not committed).
    pub committed: u64,
    /// blake3 of `bytes[..committed]`: if a grown file still starts with it, only the rest is read.
    pub prefix_hash: [u8; 32],
    /// blake3 of all the bytes: a touched but unchanged file gets no new version.
    pub file_hash: [u8; 32],
    /// The latest version object.
    pub version: [u8; 32],
    /// The session id from the header, once one was seen.
    pub session_id: Option<String>,
    /// How many versions the chain holds.
    pub versions: u32,
    /// How many tree entries (lines that got a node) the committed part holds.
    pub entries: u64,
}

/// The tree context at `committed`, to continue computing node ids on appended lines.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Resume {
    /// The header's pi format version; `None` before a header was seen.
    pub pi_version: Option<u64>,
    /// Physical lines in the committed part (to number the next line).
    pub lines: u64,
    /// Tree entries (lines that got a node) in the committed part.
    pub entries: u64,
    /// The node of the last tree entry (a v1 entry's parent is the entry before it).
    pub last_node: Option<[u8; 32]>,
    /// pi entry id → node id, for every entry so far (parents are looked up here).
    pub nodes: Vec<(String, [u8; 32])>,
}

impl Resume {
    /// Returns the entry-id → node map.
    pub fn node_map(&self) -> HashMap<String, ObjectId> {
        self.nodes.iter().map(|(k, v)| (k.clone(), ObjectId(*v))).collect()
    }
}

/// Returns the key of the session file at `path` (an absolute path): 32 hex digits of its hash.
pub fn key(path: &str) -> String {
    blake3::hash(path.as_bytes()).to_hex()[..32].to_string()
}

/// Returns the name of the import state of `path` (an absolute path): `import/<key>`, its
/// packed record's name and, in stores from before the packed form, its loose file's path.
pub fn name(path: &str) -> String {
    format!("import/{}", key(path))
}

/// Returns the loose state file of `path` (an absolute path) in `store` (stores from before the
/// packed form; its file name is the key other per-file hints use).
pub fn state_path(store: &Path, path: &str) -> PathBuf {
    store.join(name(path))
}

/// Encodes a state file.
pub fn encode(head: &FileState, resume: &Resume) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(256 + resume.nodes.len() * 48);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    let err = |e: bincode::error::EncodeError| Error::user(format!("cannot encode import state: {e}"));
    out.extend(bincode::serde::encode_to_vec(head, config()).map_err(err)?);
    out.extend(bincode::serde::encode_to_vec(resume, config()).map_err(err)?);
    let sum = blake3::hash(&out);
    out.extend_from_slice(sum.as_bytes());
    Ok(out)
}

/// Checks a state file's checksum and decodes its head; the resume part's bytes are returned
/// too. `None` for a damaged or foreign file.
pub fn decode_head(bytes: &[u8]) -> Option<(FileState, &[u8])> {
    let (content, sum) = bytes.split_at_checked(bytes.len().checked_sub(CHECKSUM)?)?;
    if blake3::hash(content).as_bytes() != sum {
        return None;
    }
    let body = content.strip_prefix(MAGIC)?;
    let (version, body) = body.split_first_chunk::<4>()?;
    if u32::from_le_bytes(*version) != VERSION {
        return None;
    }
    let (head, used) = bincode::serde::decode_from_slice::<FileState, _>(body, config()).ok()?;
    Some((head, &body[used..]))
}

/// Decodes the resume part returned by [`decode_head`].
pub fn decode_resume(rest: &[u8]) -> Option<Resume> {
    let (resume, used) = bincode::serde::decode_from_slice::<Resume, _>(rest, config()).ok()?;
    (used == rest.len()).then_some(resume)
}

/// Reads and decodes the head of a state file; `Ok(None)` when absent, `Err` with the file
/// named when unreadable (callers decide whether that matters).
pub fn read(path: &Path) -> std::result::Result<Option<(FileState, Vec<u8>)>, String> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: cannot read import state: {e}", path.display())),
    };
    decode(path, &bytes).map(Some)
}

/// Decodes a state's head, keeping the resume part's bytes; `Err` naming `path` when it is
/// damaged.
pub fn decode(path: &Path, bytes: &[u8]) -> std::result::Result<(FileState, Vec<u8>), String> {
    match decode_head(bytes) {
        Some((head, rest)) => Ok((head, rest.to_vec())),
        None => Err(format!("{}: unreadable import state (wrong magic, version, checksum or layout)", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_garbage() {
        let head = FileState {
            path: "/a/b.jsonl".into(),
            size: 10,
            mtime_ns: 5,
            committed: 9,
            prefix_hash: [1; 32],
            file_hash: [2; 32],
            version: [3; 32],
            session_id: Some("s".into()),
            versions: 1,
            entries: 2,
        };
        let resume =
            Resume { pi_version: Some(3), lines: 2, entries: 1, last_node: None, nodes: vec![("a".into(), [4; 32])] };
        let bytes = encode(&head, &resume).unwrap();
        let (h, rest) = decode_head(&bytes).unwrap();
        assert_eq!(h, head);
        assert_eq!(decode_resume(rest).unwrap(), resume);
        assert!(decode_head(b"SHAKSTAT\x02\0\0\0\xff\xff").is_none());
        assert!(decode_head(&bytes[..20]).is_none());
        assert!(decode_resume(&rest[..rest.len() - 1]).is_none());
        // Every flipped byte is seen, though many would still decode.
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            assert!(decode_head(&bad).is_none(), "flip at {i} believed");
        }
    }
}

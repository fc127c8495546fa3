//! Import state: what was imported of each session file, so re-import parses only new bytes.
//!
//! One record per session file, named `import/<blake3(path)[..16] hex>` in the store's packed
//! files (a loose file of that path in stores from before them), private to this store:
//! magic `SHAKSTAT`, a u32 format version, then the small [`FileState`] read on every import
//! (bincode 2: serde, standard config, size-limited), the larger [`Resume`] read only when the
//! file grew (its fixed fields in bincode, then its [`NodeTable`] as one raw buffer, so a state
//! of 100,000 entries decodes with one copy, not 100,000 strings); last, the blake3 of
//! everything before it, so a damaged state is never believed (a flipped byte inside bincode
//! often still decodes). A state that cannot be read is treated as absent: the file is then
//! imported again from its first byte, which adds no object that exists.
//!
//! Format 3 keeps [`Proof`]s (a chain over 1 MiB blocks) where format 2 kept blake3 digests of
//! the prefix and of the file: a proof resumes, so an import after an append extends it by the
//! new bytes instead of hashing the file whole again. A format 2 state still reads (its digests
//! as [`Hashed::Plain`], its node pairs into a table); its file's next import checks them by
//! reading the file whole once, then writes format 3.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::id::ObjectId;
use crate::proof::Proof;
use crate::{Error, Result};

const MAGIC: &[u8; 8] = b"SHAKSTAT";
/// 3: proofs instead of digests, the node table raw. 2 (still read): digests, node pairs in
/// bincode. 1 had no checksum; such a state reads as absent and is rewritten.
pub const VERSION: u32 = 3;
const V2: u32 = 2;
const CHECKSUM: usize = 32;
/// Refuse to allocate more than this while decoding (a corrupt length must not exhaust memory).
const LIMIT: usize = 1 << 30;

fn config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<LIMIT>()
}

/// What a hash in a state proves bytes by.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum Hashed {
    /// A format 2 state's blake3 of the bytes: checked by hashing them whole.
    Plain([u8; 32]),
    /// A proof that resumes ([`crate::proof`]).
    Proof(Proof),
}

impl Hashed {
    /// The proof, for a state of format 3.
    pub fn proof(&self) -> Option<&Proof> {
        match self {
            Hashed::Proof(p) => Some(p),
            Hashed::Plain(_) => None,
        }
    }

    /// Tells whether `bytes` are the bytes hashed (hashing them whole).
    pub fn holds(&self, bytes: &[u8]) -> bool {
        match self {
            Hashed::Proof(p) => *p == Proof::of(bytes),
            Hashed::Plain(h) => blake3::hash(bytes).as_bytes() == h,
        }
    }
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
    /// Of `bytes[..committed]`: if a grown file still starts with them, only the rest is read.
    pub prefix: Hashed,
    /// Of all the bytes: a touched but unchanged file gets no new version.
    pub file: Hashed,
    /// The latest version object.
    pub version: [u8; 32],
    /// The session id from the header, once one was seen.
    pub session_id: Option<String>,
    /// How many versions the chain holds.
    pub versions: u32,
    /// How many tree entries (lines that got a node) the committed part holds.
    pub entries: u64,
    /// The format the resume part was read in (not stored: the record's own version says it).
    #[serde(skip)]
    pub format: u32,
}

/// A format 2 `FileState`, as it was stored.
#[derive(Deserialize)]
struct FileStateV2 {
    path: String,
    size: u64,
    mtime_ns: u64,
    committed: u64,
    prefix_hash: [u8; 32],
    file_hash: [u8; 32],
    version: [u8; 32],
    session_id: Option<String>,
    versions: u32,
    entries: u64,
}

/// The tree context at `committed`, to continue computing node ids on appended lines.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resume {
    /// The header's pi format version; `None` before a header was seen.
    pub pi_version: Option<u64>,
    /// Physical lines in the committed part (to number the next line).
    pub lines: u64,
    /// Tree entries (lines that got a node) in the committed part.
    pub entries: u64,
    /// The node of the last tree entry (a v1 entry's parent is the entry before it).
    pub last_node: Option<[u8; 32]>,
    /// Entry id → node id, for every entry so far (parents are looked up here).
    pub nodes: NodeTable,
}

/// [`Resume`]'s fixed fields, as stored before the node table.
#[derive(Serialize, Deserialize)]
struct ResumeHead {
    pi_version: Option<u64>,
    lines: u64,
    entries: u64,
    last_node: Option<[u8; 32]>,
}

/// A format 2 `Resume`, as it was stored.
#[derive(Deserialize)]
struct ResumeV2 {
    pi_version: Option<u64>,
    lines: u64,
    entries: u64,
    last_node: Option<[u8; 32]>,
    nodes: Vec<(String, [u8; 32])>,
}

/// Every entry's id with its node id, in file order, as one buffer stored as is: per entry the
/// id's UTF-8 bytes, their length (u32, little-endian), then the node's 32 bytes, so it is read
/// from the end (appended entries' parents are nearly always the last ones) without an index.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeTable {
    bytes: Vec<u8>,
}

/// How many of a table's last entries [`NodeTable::find_recent`] looks at.
const RECENT: usize = 64;

impl NodeTable {
    /// Adds an entry after the others.
    pub fn push(&mut self, id: &str, node: &ObjectId) {
        self.bytes.extend_from_slice(id.as_bytes());
        self.bytes.extend_from_slice(&(id.len() as u32).to_le_bytes());
        self.bytes.extend_from_slice(&node.0);
    }

    /// Adds another table's entries after these.
    pub fn append(&mut self, mut other: NodeTable) {
        self.bytes.append(&mut other.bytes);
    }

    /// The entries, last first.
    pub fn iter_back(&self) -> impl Iterator<Item = (&str, ObjectId)> + '_ {
        let mut end = self.bytes.len();
        std::iter::from_fn(move || {
            let (id, node, start) = entry_before(&self.bytes, end)?;
            end = start;
            Some((id, node))
        })
    }

    /// The node of the latest entry `id` among the table's last [`RECENT`] entries; `None` when
    /// it is not among them ([`NodeTable::map`] then finds it anywhere).
    pub fn find_recent(&self, id: &str) -> Option<ObjectId> {
        self.iter_back().take(RECENT).find(|(i, _)| *i == id).map(|(_, n)| n)
    }

    /// Every id with the node of its latest entry.
    pub fn map(&self) -> HashMap<&str, ObjectId> {
        let mut map = HashMap::new();
        for (id, node) in self.iter_back() {
            map.entry(id).or_insert(node);
        }
        map
    }

    /// The table of stored bytes, `None` when they are not a whole table of UTF-8 ids.
    fn from_bytes(bytes: Vec<u8>) -> Option<NodeTable> {
        let mut end = bytes.len();
        while end > 0 {
            (_, _, end) = entry_before(&bytes, end)?;
        }
        Some(NodeTable { bytes })
    }
}

/// The entry of a table's `bytes` that ends at `end`: its id, node and start.
fn entry_before(bytes: &[u8], end: usize) -> Option<(&str, ObjectId, usize)> {
    let node_at = end.checked_sub(32)?;
    let len_at = node_at.checked_sub(4)?;
    let len = u32::from_le_bytes(bytes[len_at..node_at].try_into().ok()?) as usize;
    let start = len_at.checked_sub(len)?;
    let id = std::str::from_utf8(&bytes[start..len_at]).ok()?;
    Some((id, ObjectId(bytes[node_at..end].try_into().ok()?), start))
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

/// Encodes a state file (in the current format, whatever `head.format` says).
pub fn encode(head: &FileState, resume: &Resume) -> Result<Vec<u8>> {
    let err = |e: bincode::error::EncodeError| Error::user(format!("cannot encode import state: {e}"));
    let head = bincode::serde::encode_to_vec(head, config()).map_err(err)?;
    let fixed = ResumeHead {
        pi_version: resume.pi_version,
        lines: resume.lines,
        entries: resume.entries,
        last_node: resume.last_node,
    };
    let fixed = bincode::serde::encode_to_vec(&fixed, config()).map_err(err)?;
    // Made at its final size: a state of 100,000 entries is megabytes, and a buffer grown past
    // its capacity (by the checksum, say) would hold twice that.
    let len = MAGIC.len() + 4 + head.len() + fixed.len() + resume.nodes.bytes.len() + CHECKSUM;
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&head);
    out.extend_from_slice(&fixed);
    out.extend_from_slice(&resume.nodes.bytes);
    let sum = blake3::hash(&out);
    out.extend_from_slice(sum.as_bytes());
    Ok(out)
}

/// Checks a state file's checksum and decodes its head (of format 3 or 2); the resume part's
/// bytes are returned too. `None` for a damaged or foreign file.
pub fn decode_head(bytes: &[u8]) -> Option<(FileState, &[u8])> {
    let (content, sum) = bytes.split_at_checked(bytes.len().checked_sub(CHECKSUM)?)?;
    if blake3::hash(content).as_bytes() != sum {
        return None;
    }
    let body = content.strip_prefix(MAGIC)?;
    let (version, body) = body.split_first_chunk::<4>()?;
    match u32::from_le_bytes(*version) {
        VERSION => {
            let (head, used) = bincode::serde::decode_from_slice::<FileState, _>(body, config()).ok()?;
            Some((FileState { format: VERSION, ..head }, &body[used..]))
        }
        V2 => {
            let (v2, used) = bincode::serde::decode_from_slice::<FileStateV2, _>(body, config()).ok()?;
            let head = FileState {
                path: v2.path,
                size: v2.size,
                mtime_ns: v2.mtime_ns,
                committed: v2.committed,
                prefix: Hashed::Plain(v2.prefix_hash),
                file: Hashed::Plain(v2.file_hash),
                version: v2.version,
                session_id: v2.session_id,
                versions: v2.versions,
                entries: v2.entries,
                format: V2,
            };
            Some((head, &body[used..]))
        }
        _ => None,
    }
}

/// Decodes the resume part returned by [`decode_head`] with `head`.
pub fn decode_resume(head: &FileState, rest: &[u8]) -> Option<Resume> {
    if head.format == V2 {
        let (v2, used) = bincode::serde::decode_from_slice::<ResumeV2, _>(rest, config()).ok()?;
        let mut nodes = NodeTable::default();
        v2.nodes.iter().for_each(|(id, node)| nodes.push(id, &ObjectId(*node)));
        let resume =
            Resume { pi_version: v2.pi_version, lines: v2.lines, entries: v2.entries, last_node: v2.last_node, nodes };
        return (used == rest.len()).then_some(resume);
    }
    let (fixed, used) = bincode::serde::decode_from_slice::<ResumeHead, _>(rest, config()).ok()?;
    Some(Resume {
        pi_version: fixed.pi_version,
        lines: fixed.lines,
        entries: fixed.entries,
        last_node: fixed.last_node,
        nodes: NodeTable::from_bytes(rest[used..].to_vec())?,
    })
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

    fn head() -> FileState {
        FileState {
            path: "/a/b.jsonl".into(),
            size: 10,
            mtime_ns: 5,
            committed: 9,
            prefix: Hashed::Proof(Proof::of(b"123456789")),
            file: Hashed::Proof(Proof::of(b"123456789x")),
            version: [3; 32],
            session_id: Some("s".into()),
            versions: 1,
            entries: 2,
            format: VERSION,
        }
    }

    #[test]
    fn round_trip_and_garbage() {
        let head = head();
        let mut nodes = NodeTable::default();
        nodes.push("a", &ObjectId([4; 32]));
        nodes.push("bé", &ObjectId([5; 32]));
        nodes.push("a", &ObjectId([6; 32]));
        let resume = Resume { pi_version: Some(3), lines: 2, entries: 1, last_node: None, nodes };
        let bytes = encode(&head, &resume).unwrap();
        let (h, rest) = decode_head(&bytes).unwrap();
        assert_eq!(h, head);
        let back = decode_resume(&h, rest).unwrap();
        assert_eq!(back, resume);
        // The latest entry of an id wins, near the end and anywhere.
        assert_eq!(back.nodes.find_recent("a"), Some(ObjectId([6; 32])));
        assert_eq!(back.nodes.map()["a"], ObjectId([6; 32]));
        assert_eq!(back.nodes.map()["bé"], ObjectId([5; 32]));
        assert_eq!(back.nodes.find_recent("c"), None);
        assert!(decode_head(b"SHAKSTAT\x03\0\0\0\xff\xff").is_none());
        assert!(decode_head(&bytes[..20]).is_none());
        assert!(decode_resume(&h, &rest[..rest.len() - 1]).is_none());
        // Every flipped byte is seen, though many would still decode.
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            assert!(decode_head(&bad).is_none(), "flip at {i} believed");
        }
    }

    /// A state of format 2 (as the previous shake wrote it, here spelled by hand) still reads:
    /// its digests as plain hashes, its node pairs as a table.
    #[test]
    fn a_format_2_state_still_reads() {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&V2.to_le_bytes());
        let v2 = ("/a/b.jsonl", 10u64, 5u64, 9u64, [1u8; 32], [2u8; 32], [3u8; 32], Some("s"), 1u32, 2u64);
        out.extend(bincode::serde::encode_to_vec(v2, config()).unwrap());
        let nodes = vec![("a".to_string(), [4u8; 32])];
        out.extend(bincode::serde::encode_to_vec((Some(3u64), 2u64, 1u64, None::<[u8; 32]>, nodes), config()).unwrap());
        let sum = blake3::hash(&out);
        out.extend_from_slice(sum.as_bytes());
        let (h, rest) = decode_head(&out).unwrap();
        assert_eq!((&h.prefix, &h.file, h.format), (&Hashed::Plain([1; 32]), &Hashed::Plain([2; 32]), V2));
        assert_eq!((h.size, h.committed, h.session_id.as_deref(), h.entries), (10, 9, Some("s"), 2));
        let resume = decode_resume(&h, rest).unwrap();
        assert_eq!((resume.pi_version, resume.lines, resume.entries), (Some(3), 2, 1));
        assert_eq!(resume.nodes.find_recent("a"), Some(ObjectId([4; 32])));
    }
}

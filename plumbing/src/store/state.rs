//! Import state: what was imported of each session file, so re-import parses only new bytes.
//!
//! One record per session file, named `import/<blake3(path)[..16] hex>` in the store's packed
//! files (a loose file of that path in stores from before them), private to this store:
//! magic `SHAKSTAT`, a u32 format version, then the small [`FileState`] read on every import
//! (bincode 2: serde, standard config, size-limited), then [`Resume`]'s fixed fields and the
//! list of its node table's chunks; last, the blake3 of everything before it, so a damaged
//! state is never believed (a flipped byte inside bincode often still decodes). A state that
//! cannot be read is treated as absent: the file is then imported again from its first byte,
//! which adds no object that exists.
//!
//! Format 4 keeps the node table (every entry id with its node id) in table objects
//! ([`Kind::Table`]) of the store's packs, which the state names: an import that writes adds a
//! chunk of its own new entries, so a state of 100,000 entries is a few hundred bytes to read,
//! check and write, not megabytes decoded, re-encoded and hashed by every import. Chunks are
//! merged as a log-structured merge does ([`seal`]), so there are never many. Format 3 kept the
//! table raw inside the state, format 2 as bincode pairs; both still read, the table in memory
//! ([`Resume::inline`]), and the next import that writes stores it as a chunk. Format 3 keeps
//! [`Proof`]s (a chain over 1 MiB blocks) where format 2 kept blake3 digests of the prefix and
//! of the file: a proof resumes, so an import after an append extends it by the new bytes
//! instead of hashing the file whole again. A format 2 state's digests read as
//! [`Hashed::Plain`]; its file's next import checks them by reading the file whole once.

use std::cell::{Cell, OnceCell};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Result, StoreError};
use crate::id::{Kind, ObjectId};
use crate::proof::Proof;

use super::Store;

const MAGIC: &[u8; 8] = b"SHAKSTAT";
/// 4: the node table in table objects the state names. 3 (still read): proofs instead of
/// digests, the node table raw in the state. 2 (still read): digests, node pairs in bincode. 1
/// had no checksum; such a state reads as absent and is rewritten.
pub const VERSION: u32 = 4;
const V3: u32 = 3;
const V2: u32 = 2;
/// More chunks than this are merged into one by the next import that writes ([`seal`]).
pub const MAX_CHUNKS: usize = 16;
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
    /// The format version of the file's header, as its host read it ([`crate::host::TreeLine`]'s
    /// `Header`: pi's and OMP's `version`); `None` before a header was seen, and in formats
    /// without one. Stored by position, as every field here (bincode writes no names): the
    /// bytes are the same as when this was called `pi_version`.
    pub header_version: Option<u64>,
    /// Physical lines in the committed part (to number the next line).
    pub lines: u64,
    /// Tree entries (lines that got a node) in the committed part.
    pub entries: u64,
    /// The node of the last tree entry (a v1 entry's parent is the entry before it).
    pub last_node: Option<[u8; 32]>,
    /// The stored chunks of the node table (entry id → node id, for every entry so far, where
    /// parents are looked up: [`Table`]), oldest first.
    pub chunks: Vec<Chunk>,
    /// The table's entries after the chunks, not stored as a chunk (yet): a format 2 or 3
    /// state's whole table, an import's new entries until the state is encoded.
    pub inline: NodeTable,
    /// The last entry of the chunks, kept in the state so that the commonest lookup (an
    /// append's parent that is the file's last entry) reads no chunk.
    pub last: Option<(String, ObjectId)>,
}

/// One stored piece of a node table: the table object and how many entries it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// The table object ([`Kind::Table`]).
    pub id: ObjectId,
    /// Its entries (what [`seal`] merges by).
    pub entries: u64,
}

/// A format 3 [`Resume`]'s fixed fields, as stored before its node table.
#[derive(Serialize, Deserialize)]
struct ResumeHead {
    header_version: Option<u64>,
    lines: u64,
    entries: u64,
    last_node: Option<[u8; 32]>,
}

/// A format 4 [`Resume`], as stored: the fixed fields and the chunks (id, entries).
#[derive(Serialize, Deserialize)]
struct ResumeHead4 {
    header_version: Option<u64>,
    lines: u64,
    entries: u64,
    last_node: Option<[u8; 32]>,
    chunks: Vec<([u8; 32], u64)>,
    last: Option<(String, [u8; 32])>,
}

/// A format 2 `Resume`, as it was stored.
#[derive(Deserialize)]
struct ResumeV2 {
    header_version: Option<u64>,
    lines: u64,
    entries: u64,
    last_node: Option<[u8; 32]>,
    nodes: Vec<(String, [u8; 32])>,
}

/// Entry ids with their node ids, in file order, as one buffer (a table object's bytes, a
/// format 3 state's table): per entry the id's UTF-8 bytes, their length (u32, little-endian),
/// then the node's 32 bytes, so it is read from the end (appended entries' parents are nearly
/// always the last ones) without an index.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeTable {
    bytes: Vec<u8>,
    entries: u64,
}

/// How many of a table's last entries [`Table::find_recent`] looks at.
const RECENT: usize = 64;

impl NodeTable {
    /// Adds an entry after the others.
    pub fn push(&mut self, id: &str, node: &ObjectId) {
        self.bytes.extend_from_slice(id.as_bytes());
        self.bytes.extend_from_slice(&(id.len() as u32).to_le_bytes());
        self.bytes.extend_from_slice(&node.0);
        self.entries += 1;
    }

    /// Adds another table's entries after these.
    pub fn append(&mut self, mut other: NodeTable) {
        self.bytes.append(&mut other.bytes);
        self.entries += other.entries;
    }

    /// Tells whether it holds no entry.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Its last entry.
    fn last(&self) -> Option<(&str, ObjectId)> {
        entries_back(&self.bytes).next()
    }

    /// The table of stored bytes, `None` when they are not a whole table of UTF-8 ids.
    fn from_bytes(bytes: Vec<u8>) -> Option<NodeTable> {
        let entries = chunk_entries(&bytes)?;
        Some(NodeTable { bytes, entries })
    }
}

/// How many entries a table's bytes hold; `None` when they are not a whole table of UTF-8 ids.
pub fn chunk_entries(bytes: &[u8]) -> Option<u64> {
    let (mut end, mut n) = (bytes.len(), 0);
    while end > 0 {
        (_, _, end) = entry_before(bytes, end)?;
        n += 1;
    }
    Some(n)
}

/// The entries of a table's bytes, last first (a whole table: [`chunk_entries`] checked it).
fn entries_back(bytes: &[u8]) -> impl Iterator<Item = (&str, ObjectId)> + '_ {
    let mut end = bytes.len();
    std::iter::from_fn(move || {
        let (id, node, start) = entry_before(bytes, end)?;
        end = start;
        Some((id, node))
    })
}

/// What is wrong with a stored chunk of a node table ([`chunk_bytes`]), naming it.
#[derive(Debug, thiserror::Error)]
pub enum ChunkError {
    /// The store holds no object of its id.
    #[error("node table chunk {id} is missing")]
    Missing {
        /// The chunk's id.
        id: ObjectId,
    },
    /// The object is of another kind.
    #[error("node table chunk {id} is a {kind}")]
    NotATable {
        /// The chunk's id.
        id: ObjectId,
        /// The object's kind.
        kind: Kind,
    },
    /// The bytes are not a whole table.
    #[error("node table chunk {id} is not a whole table")]
    Torn {
        /// The chunk's id.
        id: ObjectId,
    },
    /// The table holds another number of entries than the state says.
    #[error("node table chunk {id} holds {holds} entries, the state says {says}")]
    Entries {
        /// The chunk's id.
        id: ObjectId,
        /// The entries it holds.
        holds: u64,
        /// The entries the state says it holds.
        says: u64,
    },
    /// The object did not read (its bytes do not hash to its id, a pack that does not read).
    #[error("node table chunk {id}: {source}")]
    Unread {
        /// The chunk's id.
        id: ObjectId,
        /// The store's error.
        source: Box<StoreError>,
    },
}

/// The bytes of a stored chunk, checked: its object re-hashed to its id, of kind table, a whole
/// table of as many entries as the state says. `Err` says what is wrong with it.
pub fn chunk_bytes<'s>(store: &'s Store, chunk: &Chunk) -> std::result::Result<&'s [u8], ChunkError> {
    let id = chunk.id;
    match store.get(&id) {
        Ok(Some(obj)) if obj.kind != Kind::Table => Err(ChunkError::NotATable { id, kind: obj.kind }),
        Ok(Some(obj)) => match chunk_entries(obj.bytes) {
            Some(n) if n == chunk.entries => Ok(obj.bytes),
            Some(holds) => Err(ChunkError::Entries { id, holds, says: chunk.entries }),
            None => Err(ChunkError::Torn { id }),
        },
        Ok(None) => Err(ChunkError::Missing { id }),
        Err(source) => Err(ChunkError::Unread { id, source: Box::new(source) }),
    }
}

/// A node table to look entries up in: a state's chunks, read from the store only when a
/// lookup reaches them (an import after an append nearly always needs only the last), then
/// the entries not stored yet. A chunk that does not read ends every walk back at it, and is
/// remembered ([`Table::failed`]): the caller then must not trust what was not found.
pub struct Table<'a> {
    store: &'a Store,
    chunks: &'a [Chunk],
    inline: &'a NodeTable,
    /// The chunks' last entry ([`Resume::last`]).
    last: Option<(&'a str, ObjectId)>,
    loaded: Vec<OnceCell<Option<&'a [u8]>>>,
    failed: Cell<Option<ObjectId>>,
}

impl<'a> Table<'a> {
    /// The table of `chunks` (in `store`, `last` their last entry) followed by `inline`.
    pub fn new(
        store: &'a Store,
        (chunks, last): (&'a [Chunk], Option<&'a (String, ObjectId)>),
        inline: &'a NodeTable,
    ) -> Table<'a> {
        let loaded = chunks.iter().map(|_| OnceCell::new()).collect();
        let last = last.map(|(id, node)| (id.as_str(), *node));
        Table { store, chunks, inline, last, loaded, failed: Cell::new(None) }
    }

    /// The table of a state's resume part.
    pub fn of(store: &'a Store, resume: &'a Resume) -> Table<'a> {
        Table::new(store, (&resume.chunks, resume.last.as_ref()), &resume.inline)
    }

    /// The bytes of part `i` (the chunks, then the inline entries), `None` when its chunk does
    /// not read.
    fn part(&self, i: usize) -> Option<&'a [u8]> {
        let Some(chunk) = self.chunks.get(i) else { return Some(&self.inline.bytes) };
        let bytes = *self.loaded[i].get_or_init(|| chunk_bytes(self.store, chunk).ok());
        if bytes.is_none() {
            self.failed.set(Some(chunk.id));
        }
        bytes
    }

    /// The entries, last first, up to the first chunk that does not read.
    pub fn iter_back(&self) -> impl Iterator<Item = (&'a str, ObjectId)> + '_ {
        (0..=self.chunks.len()).rev().map_while(|i| self.part(i)).flat_map(entries_back)
    }

    /// The node of the latest entry `id` among the table's last [`RECENT`] entries; `None` when
    /// it is not among them ([`Table::map`] then finds it anywhere).
    pub fn find_recent(&self, id: &str) -> Option<ObjectId> {
        let found = |(i, n): (&str, ObjectId)| (i == id).then_some(n);
        if let Some(node) = entries_back(&self.inline.bytes).take(RECENT).find_map(found) {
            return Some(node);
        }
        let inline = self.inline.entries.min(RECENT as u64) as usize;
        if inline == RECENT {
            return None;
        }
        // The chunks' last entry is known without reading them.
        if let Some(node) = self.last.and_then(found) {
            return Some(node);
        }
        self.iter_back().skip(inline).take(RECENT - inline).find_map(found)
    }

    /// Every id with the node of its latest entry.
    pub fn map(&self) -> HashMap<&'a str, ObjectId> {
        let mut map = HashMap::new();
        for (id, node) in self.iter_back() {
            map.entry(id).or_insert(node);
        }
        map
    }

    /// The first chunk a lookup found unreadable, if any.
    pub fn failed(&self) -> Option<ObjectId> {
        self.failed.get()
    }
}

/// The chunks a state of `resume` names once its inline entries are stored, with the table
/// objects to add for that (none when there are no inline entries). The new chunk takes in the
/// chunks before it while the last of them holds no more entries than it, so sizes fall from
/// the oldest chunk to the newest and an entry is copied into a new chunk about log₂ of the
/// table's size times; past [`MAX_CHUNKS`], every chunk is merged into one. A chunk that does
/// not read is left as it is (a lookup that reaches it imports the file whole again).
pub fn seal(store: &Store, resume: &Resume) -> (Vec<Chunk>, Vec<(ObjectId, Vec<u8>)>) {
    let mut chunks = resume.chunks.clone();
    if resume.inline.is_empty() {
        return (chunks, Vec::new());
    }
    let all = chunks.len() >= MAX_CHUNKS;
    let mut parts = vec![&resume.inline.bytes[..]];
    let mut entries = resume.inline.entries;
    while let Some(last) = chunks.last().filter(|c| all || c.entries <= entries) {
        let Ok(bytes) = chunk_bytes(store, last) else { break };
        parts.push(bytes);
        entries += last.entries;
        chunks.pop();
    }
    parts.reverse();
    let bytes = parts.concat();
    let id = ObjectId::hash(Kind::Table, &bytes);
    chunks.push(Chunk { id, entries });
    (chunks, vec![(id, bytes)])
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

/// An encoded state and the table objects it names that the store may lack: the objects go
/// in the batch's pack, which is durable before the state's packed record is written.
pub struct Encoded {
    /// The state's bytes.
    pub state: Vec<u8>,
    /// New table objects ([`seal`]), to add before the state.
    pub tables: Vec<(ObjectId, Vec<u8>)>,
}

/// Encodes a state (in the current format, whatever `head.format` says), its inline entries
/// stored as a chunk ([`seal`]).
pub fn encode(store: &Store, head: &FileState, resume: &Resume) -> Result<Encoded> {
    let err = StoreError::Encode;
    let (chunks, tables) = seal(store, resume);
    let head = bincode::serde::encode_to_vec(head, config()).map_err(err)?;
    let fixed = ResumeHead4 {
        header_version: resume.header_version,
        lines: resume.lines,
        entries: resume.entries,
        last_node: resume.last_node,
        chunks: chunks.iter().map(|c| (c.id.0, c.entries)).collect(),
        last: match resume.inline.last() {
            Some((id, node)) => Some((id.to_string(), node.0)),
            None => resume.last.as_ref().map(|(id, node)| (id.clone(), node.0)),
        },
    };
    let fixed = bincode::serde::encode_to_vec(&fixed, config()).map_err(err)?;
    let mut out = Vec::with_capacity(MAGIC.len() + 4 + head.len() + fixed.len() + CHECKSUM);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&head);
    out.extend_from_slice(&fixed);
    let sum = blake3::hash(&out);
    out.extend_from_slice(sum.as_bytes());
    Ok(Encoded { state: out, tables })
}

/// The state `bytes` describes, moved to `path` and made racy (mtime 0: the next import reads
/// the file and proves it unchanged, or records what changed as a new version of the same
/// chain): a fetched session's state, for the copy of its file a fetch writes
/// (`remote::fetch`). Its resume part is kept as it is, so its format must be one whose head
/// this shake encodes (3 or the current one); `None` otherwise, or when `bytes` do not read.
pub fn moved(bytes: &[u8], path: &str) -> Option<Vec<u8>> {
    let (head, rest) = decode_head(bytes)?;
    if !matches!(head.format, VERSION | V3) {
        return None;
    }
    let head = FileState { path: path.to_string(), mtime_ns: 0, ..head };
    let encoded = bincode::serde::encode_to_vec(&head, config()).ok()?;
    let mut out = Vec::with_capacity(bytes.len() + path.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&head.format.to_le_bytes());
    out.extend_from_slice(&encoded);
    out.extend_from_slice(rest);
    let sum = blake3::hash(&out);
    out.extend_from_slice(sum.as_bytes());
    Some(out)
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
        format @ (VERSION | V3) => {
            let (head, used) = bincode::serde::decode_from_slice::<FileState, _>(body, config()).ok()?;
            Some((FileState { format, ..head }, &body[used..]))
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

/// Decodes the resume part returned by [`decode_head`] with `head` (a format 2 or 3 state's
/// node table into [`Resume::inline`]).
pub fn decode_resume(head: &FileState, rest: &[u8]) -> Option<Resume> {
    match head.format {
        V2 => {
            let (v2, used) = bincode::serde::decode_from_slice::<ResumeV2, _>(rest, config()).ok()?;
            let mut inline = NodeTable::default();
            v2.nodes.iter().for_each(|(id, node)| inline.push(id, &ObjectId(*node)));
            let ResumeV2 { header_version, lines, entries, last_node, .. } = v2;
            let resume = Resume { header_version, lines, entries, last_node, chunks: Vec::new(), inline, last: None };
            (used == rest.len()).then_some(resume)
        }
        V3 => {
            let (fixed, used) = bincode::serde::decode_from_slice::<ResumeHead, _>(rest, config()).ok()?;
            let ResumeHead { header_version, lines, entries, last_node } = fixed;
            let inline = NodeTable::from_bytes(rest[used..].to_vec())?;
            Some(Resume { header_version, lines, entries, last_node, chunks: Vec::new(), inline, last: None })
        }
        _ => {
            let (fixed, used) = bincode::serde::decode_from_slice::<ResumeHead4, _>(rest, config()).ok()?;
            let ResumeHead4 { header_version, lines, entries, last_node, chunks, last } = fixed;
            let chunks: Vec<Chunk> =
                chunks.into_iter().map(|(id, entries)| Chunk { id: ObjectId(id), entries }).collect();
            // Chunks have a last entry; no chunks, none.
            if chunks.is_empty() != last.is_none() {
                return None;
            }
            let last = last.map(|(id, node)| (id, ObjectId(node)));
            let resume =
                Resume { header_version, lines, entries, last_node, chunks, inline: NodeTable::default(), last };
            (used == rest.len()).then_some(resume)
        }
    }
}

/// Why an import state does not read, naming where it was read from. An import reads such a
/// state as absent (the file whole again); a listing calls the store corrupt.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// The system refused to read a loose state file.
    #[error("{}: cannot read import state: {source}", path.display())]
    Read {
        /// The state file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The bytes are not a state this shake reads: wrong magic, version, checksum or layout.
    #[error("{}: unreadable import state (wrong magic, version, checksum or layout)", path.display())]
    Damaged {
        /// Where the state was read from (a packed file's record, or a loose file).
        path: PathBuf,
    },
}

/// A state as read: `Ok(None)` when absent, `Err` naming it when it does not decode.
pub type Read = std::result::Result<Option<(FileState, Vec<u8>)>, StateError>;

/// Reads and decodes the head of a state file; `Ok(None)` when absent, `Err` with the file
/// named when unreadable (callers decide whether that matters).
pub fn read(path: &Path) -> Read {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(StateError::Read { path: path.to_path_buf(), source }),
    };
    decode(path, &bytes).map(Some)
}

/// Decodes a state's head, keeping the resume part's bytes; `Err` naming `path` when it is
/// damaged.
pub fn decode(path: &Path, bytes: &[u8]) -> std::result::Result<(FileState, Vec<u8>), StateError> {
    match decode_head(bytes) {
        Some((head, rest)) => Ok((head, rest.to_vec())),
        None => Err(StateError::Damaged { path: path.to_path_buf() }),
    }
}

/// A state of format 3, as shakes before chunks wrote it (for the tests that old stores read).
#[cfg(test)]
pub fn encode_format_3(head: &FileState, resume: &Resume, table: &NodeTable) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&V3.to_le_bytes());
    out.extend(bincode::serde::encode_to_vec(head, config()).unwrap_or_default());
    let fixed = (resume.header_version, resume.lines, resume.entries, resume.last_node);
    out.extend(bincode::serde::encode_to_vec(fixed, config()).unwrap_or_default());
    out.extend_from_slice(&table.bytes);
    let sum = blake3::hash(&out);
    out.extend_from_slice(sum.as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(feature = "cli")]
    use crate::Error;

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

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_dir(&dir.path().join("store")).unwrap();
        (dir, store)
    }

    /// Adds the table objects an encode made to the store, as an import's batch does.
    fn add(store: &mut Store, tables: &[(ObjectId, Vec<u8>)]) {
        let mut batch = store.batch().unwrap();
        for (id, bytes) in tables {
            assert_eq!(batch.put(Kind::Table, bytes).unwrap(), *id);
        }
        batch.commit().unwrap();
    }

    fn table(entries: &[(&str, u8)]) -> NodeTable {
        let mut t = NodeTable::default();
        entries.iter().for_each(|(id, n)| t.push(id, &ObjectId([*n; 32])));
        t
    }

    /// A fetched state moved to the copy's path keeps everything but its path and mtime (0:
    /// racy, so the next import proves the file), and its resume part reads as before.
    #[test]
    fn a_moved_state_names_the_new_path_and_is_racy() {
        let (_dir, store) = store();
        let resume = Resume { header_version: Some(3), lines: 2, entries: 1, ..Resume::default() };
        let bytes = encode(&store, &head(), &resume).unwrap().state;
        let there = moved(&bytes, "/store/remote/alpha/x/b.jsonl").unwrap();
        let (h, rest) = decode_head(&there).unwrap();
        assert_eq!(h, FileState { path: "/store/remote/alpha/x/b.jsonl".into(), mtime_ns: 0, ..head() });
        assert_eq!(decode_resume(&h, rest), decode_resume(&head(), decode_head(&bytes).unwrap().1));
        let mut flipped = bytes.clone();
        flipped[20] ^= 1;
        assert_eq!(moved(&flipped, "/x"), None, "a damaged state is not moved");
    }

    #[test]
    fn round_trip_and_garbage() {
        let (_dir, mut store) = store();
        let head = head();
        let inline = table(&[("a", 4), ("bé", 5), ("a", 6)]);
        let resume =
            Resume { header_version: Some(3), lines: 2, entries: 1, last_node: None, inline, ..Resume::default() };
        let encoded = encode(&store, &head, &resume).unwrap();
        // The inline entries became one chunk, named by the state, not held in it.
        assert_eq!(encoded.tables.len(), 1);
        let bytes = encoded.state;
        assert!(bytes.len() < 400, "{}", bytes.len());
        add(&mut store, &encoded.tables);
        let (h, rest) = decode_head(&bytes).unwrap();
        assert_eq!(h, head);
        let back = decode_resume(&h, rest).unwrap();
        assert_eq!(back.chunks, [Chunk { id: encoded.tables[0].0, entries: 3 }]);
        assert_eq!((back.header_version, back.lines, back.entries, back.last_node), (Some(3), 2, 1, None));
        // The latest entry of an id wins, near the end and anywhere.
        let t = Table::of(&store, &back);
        assert_eq!(t.find_recent("a"), Some(ObjectId([6; 32])));
        assert_eq!(t.map()["a"], ObjectId([6; 32]));
        assert_eq!(t.map()["bé"], ObjectId([5; 32]));
        assert_eq!(t.find_recent("c"), None);
        assert_eq!(t.failed(), None);
        assert!(decode_head(b"SHAKSTAT\x04\0\0\0\xff\xff").is_none());
        assert!(decode_head(&bytes[..20]).is_none());
        assert!(decode_resume(&h, &rest[..rest.len() - 1]).is_none());
        // Every flipped byte is seen, though many would still decode.
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            assert!(decode_head(&bad).is_none(), "flip at {i} believed");
        }
    }

    /// A chunk the store lacks (or holds damaged, or of another kind) is not read: a lookup
    /// that reaches it stops there and says which, and one that does not is answered.
    #[test]
    fn a_chunk_that_does_not_read_is_named_and_not_believed() {
        let (_dir, mut store) = store();
        let old = table(&[("a", 1), ("b", 2)]);
        let (bytes_a, id_a) = (old.bytes.clone(), ObjectId::hash(Kind::Table, &old.bytes));
        let new = table(&[("c", 3)]);
        let id_c = ObjectId::hash(Kind::Table, &new.bytes);
        add(&mut store, &[(id_c, new.bytes.clone())]);
        let chunks = [Chunk { id: id_a, entries: 2 }, Chunk { id: id_c, entries: 1 }];
        let empty = NodeTable::default();
        let last = ("c".to_string(), ObjectId([3; 32]));
        let t = Table::new(&store, (&chunks, Some(&last)), &empty);
        assert_eq!(t.find_recent("c"), Some(ObjectId([3; 32])));
        assert_eq!(t.failed(), None, "the last chunk answered");
        assert_eq!(t.find_recent("a"), None);
        assert_eq!(t.failed(), Some(id_a));
        assert!(chunk_bytes(&store, &chunks[0]).unwrap_err().to_string().contains("missing"));
        assert!(matches!(chunk_bytes(&store, &chunks[0]), Err(ChunkError::Missing { id }) if id == chunks[0].id));
        // Present, but the state says another count; or an object of another kind.
        add(&mut store, &[(id_a, bytes_a)]);
        assert!(chunk_bytes(&store, &Chunk { id: id_a, entries: 3 })
            .unwrap_err()
            .to_string()
            .contains("the state says 3"));
        let mut batch = store.batch().unwrap();
        let entry = batch.put(Kind::Entry, b"{}").unwrap();
        batch.commit().unwrap();
        store.refresh().unwrap();
        assert!(chunk_bytes(&store, &Chunk { id: entry, entries: 0 }).unwrap_err().to_string().contains("is a entry"));
        assert_eq!(Table::new(&store, (&chunks, Some(&last)), &empty).map().len(), 3);
        // The chunks' last entry answers without reading them, though they do not read.
        let gone = [Chunk { id: ObjectId([8; 32]), entries: 1 }];
        let t = Table::new(&store, (&gone, Some(&last)), &empty);
        assert_eq!((t.find_recent("c"), t.failed()), (Some(ObjectId([3; 32])), None));
        assert_eq!((t.find_recent("a"), t.failed()), (None, Some(gone[0].id)));
    }

    /// Sealing keeps every entry in order and few chunks: sizes fall from the oldest chunk to the
    /// newest, never more than `MAX_CHUNKS`, whatever the sizes of the imports.
    #[test]
    fn sealed_chunks_stay_few_and_hold_every_entry_in_order() {
        let (_dir, mut store) = store();
        let mut resume = Resume::default();
        let mut all = Vec::new();
        let mut n = 0;
        // Appends of 1 to 7 entries, then bigger ones, then small again.
        let sizes: Vec<usize> = (0..200).map(|i| [1, 2, 3, 5, 7, 1, 1][i % 7]).chain([500, 40, 40, 1, 600]).collect();
        for size in sizes {
            for _ in 0..size {
                let id = format!("e{n}");
                resume.inline.push(&id, &ObjectId([(n % 251) as u8; 32]));
                all.push((id, (n % 251) as u8));
                n += 1;
            }
            let (chunks, tables) = seal(&store, &resume);
            add(&mut store, &tables);
            store.refresh().unwrap();
            assert!(chunks.len() <= MAX_CHUNKS, "{}", chunks.len());
            assert!(chunks.windows(2).all(|w| w[0].entries > w[1].entries), "{chunks:?}");
            resume.chunks = chunks;
            resume.inline = NodeTable::default();
            let t = Table::of(&store, &resume);
            let back: Vec<(String, u8)> = t.iter_back().map(|(i, node)| (i.to_string(), node.0[0])).collect();
            assert_eq!(back.len(), all.len());
            assert!(back.iter().rev().eq(all.iter()));
        }
        assert!(resume.chunks.len() <= 12, "{:?}", resume.chunks);
        // Nothing inline: nothing to add, the chunks as they are.
        let (chunks, tables) = seal(&store, &resume);
        assert_eq!((chunks, tables.len()), (resume.chunks.clone(), 0));
    }

    /// A state of format 3 (as main before chunks wrote it, here spelled by hand) still reads,
    /// its table inline; encoded again it is of format 4 with the table as one chunk.
    #[test]
    fn a_format_3_state_still_reads_and_is_written_with_a_chunk() {
        let (_dir, mut store) = store();
        let old = table(&[("a", 4), ("b", 5)]);
        let fixed =
            Resume { header_version: Some(3), lines: 2, entries: 1, last_node: Some([7; 32]), ..Resume::default() };
        let out = encode_format_3(&head(), &fixed, &old);
        // The layout spelled out: magic, version 3, the head, the fixed fields, the raw table.
        assert_eq!((&out[..8], &out[8..12]), (&b"SHAKSTAT"[..], &3u32.to_le_bytes()[..]));
        assert_eq!(&out[out.len() - 32 - old.bytes.len()..out.len() - 32], &old.bytes[..]);
        let (h, rest) = decode_head(&out).unwrap();
        assert_eq!((h.format, h.size, h.session_id.as_deref()), (V3, 10, Some("s")));
        let resume = decode_resume(&h, rest).unwrap();
        assert_eq!((resume.chunks.len(), resume.inline.entries, resume.last_node), (0, 2, Some([7; 32])));
        assert_eq!(Table::of(&store, &resume).find_recent("a"), Some(ObjectId([4; 32])));
        let encoded = encode(&store, &h, &resume).unwrap();
        add(&mut store, &encoded.tables);
        let (h4, rest4) = decode_head(&encoded.state).unwrap();
        assert_eq!(h4.format, VERSION);
        let resume4 = decode_resume(&h4, rest4).unwrap();
        assert_eq!(resume4.chunks, [Chunk { id: ObjectId::hash(Kind::Table, &old.bytes), entries: 2 }]);
        assert_eq!(Table::of(&store, &resume4).find_recent("b"), Some(ObjectId([5; 32])));
    }

    /// A state of format 2 (as an older shake wrote it, here spelled by hand) still reads:
    /// its digests as plain hashes, its node pairs as inline entries.
    #[test]
    fn a_format_2_state_still_reads() {
        let (_dir, store) = store();
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
        assert_eq!((resume.header_version, resume.lines, resume.entries), (Some(3), 2, 1));
        assert_eq!(Table::of(&store, &resume).find_recent("a"), Some(ObjectId([4; 32])));
    }

    /// A format 4 state as shakes before the header version's rename wrote it (the field was
    /// `pi_version`; here spelled by hand, field by field in their order) reads with its header
    /// version, and encoding it again gives the same bytes: the rename changed no byte.
    #[test]
    fn a_format_4_state_written_as_pi_version_reads_its_header_version() {
        let (_dir, store) = store();
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&4u32.to_le_bytes());
        out.extend(bincode::serde::encode_to_vec(head(), config()).unwrap());
        let chunks: Vec<([u8; 32], u64)> = vec![([8; 32], 2)];
        let last = Some(("b".to_string(), [5u8; 32]));
        let resume = (Some(2u64), 7u64, 2u64, Some([6u8; 32]), chunks, last);
        out.extend(bincode::serde::encode_to_vec(resume, config()).unwrap());
        let sum = blake3::hash(&out);
        out.extend_from_slice(sum.as_bytes());
        let (h, rest) = decode_head(&out).unwrap();
        let back = decode_resume(&h, rest).unwrap();
        assert_eq!((back.header_version, back.lines, back.entries, back.last_node), (Some(2), 7, 2, Some([6; 32])));
        assert_eq!(back.chunks, [Chunk { id: ObjectId([8; 32]), entries: 2 }]);
        assert_eq!(back.last, Some(("b".to_string(), ObjectId([5; 32]))));
        assert_eq!(encode(&store, &h, &back).unwrap().state, out);
    }

    /// A state that does not read is a typed error naming where it was read from, kept as the
    /// source of the corrupt-store error (exit 3) a listing gives, not flattened to a string.
    #[cfg(feature = "cli")]
    #[test]
    fn a_state_that_does_not_read_is_a_typed_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("import").join("x");
        let e = decode(&path, b"SHAKSTAT garbage").unwrap_err();
        assert!(matches!(&e, StateError::Damaged { path: p } if *p == path), "{e:?}");
        assert_eq!(
            e.to_string(),
            format!("{}: unreadable import state (wrong magic, version, checksum or layout)", path.display())
        );
        let e = Error::from(e);
        assert_eq!(e.kind.exit_code(), 3);
        assert!(std::error::Error::source(&e).is_some_and(|s| s.is::<StateError>()));
        // A folder where the loose file should be: the system's refusal, kept.
        std::fs::create_dir_all(&path).unwrap();
        let StateError::Read { source, .. } = read(&path).unwrap_err() else { panic!("a folder reads") };
        assert_eq!(source.kind(), std::io::ErrorKind::IsADirectory);
    }
}

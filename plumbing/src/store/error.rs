//! What a store operation can fail with ([`StoreError`]), naming the file, object or record
//! involved and keeping the system's error as its `source`. The CLI's exit code and hints for
//! each are the command boundary's (`crate::error`), not the store's.

use std::path::PathBuf;

use crate::durable::FileError;
use crate::host::Cycle;
use crate::id::{Kind, ObjectId};

use super::pack::PackError;
use super::refs::RefError;
use super::state::StateError;

/// What a store operation returns.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// A store operation's failure: damage (the store is corrupt), a request the store cannot
/// answer (an id it does not hold, a ref name), or a step the system refused.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A pack or its index does not read.
    #[error(transparent)]
    Pack(#[from] PackError),
    /// A ref's name, file or compare.
    #[error(transparent)]
    Ref(#[from] RefError),
    /// A loose import state does not read.
    #[error(transparent)]
    State(#[from] StateError),
    /// The system refused a step on a file of the store.
    #[error(transparent)]
    File(#[from] FileError),

    /// Damage in the packed files, as [`super::packed`] words it.
    #[error("corrupt store: {what}")]
    Damaged {
        /// Which file and record, and what is wrong.
        what: String,
    },
    /// A file in `packed/` whose name is not a packed file's.
    #[error("{}: not a packed file name", path.display())]
    NotPackedName {
        /// The file.
        path: PathBuf,
    },
    /// A packed file whose layout does not read.
    #[error("{}: bad packed file: {why}", path.display())]
    BadPacked {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: &'static str,
    },
    /// A merge of the packed files (a write that merges them, `gc`) met damage it would drop.
    #[error("{}; not merging the packed files while one is damaged", problems.join("; "))]
    NotMerging {
        /// Each damage, as `fsck` says it.
        problems: Vec<String>,
    },
    /// `gc` met damage: what it hides cannot be told reachable.
    #[error("{}; not collecting garbage while the store is damaged", problems.join("; "))]
    NotCollecting {
        /// Each damage, as `fsck` says it.
        problems: Vec<String>,
    },
    /// An object's bytes, copied by a merge or a repack, do not hash to its id.
    #[error("{}: object {id} does not match its id; run shake fsck", pack.display())]
    Mismatch {
        /// The pack that holds it.
        pack: PathBuf,
        /// The id its index row gives.
        id: ObjectId,
    },
    /// An object's bytes, about to be read, do not hash to its id.
    #[error("{}: object {id}: content hashes to {actual} (corrupt {kind} bytes); nothing was read from it", pack.display())]
    Rehash {
        /// The pack that holds it.
        pack: PathBuf,
        /// The id asked for.
        id: ObjectId,
        /// What its bytes hash to.
        actual: ObjectId,
        /// The kind its record gives.
        kind: Kind,
    },
    /// Something names an object the store does not hold.
    #[error("{}: object {id} is missing", store.display())]
    Missing {
        /// The store's folder.
        store: PathBuf,
        /// The object.
        id: ObjectId,
    },
    /// A version's chain of parents comes back to itself.
    #[error("version {id}: its chain loops at {parent}")]
    ChainLoops {
        /// The version the walk started from.
        id: ObjectId,
        /// The parent seen twice.
        parent: ObjectId,
    },
    /// A version object's bytes are not a version's canonical spelling.
    #[error("{what}: not a valid version object")]
    BadVersion {
        /// The object (`version <id>`).
        what: String,
    },
    /// A version's `path` item claims more lines than the store has objects.
    #[error("{what}: path {node} claims {count} lines")]
    PathTooLong {
        /// The version.
        what: String,
        /// The path's last node.
        node: ObjectId,
        /// The lines it claims.
        count: u64,
    },
    /// A version's `path` item ends before its count.
    #[error("{what}: path {node} is shorter than {count}")]
    PathTooShort {
        /// The version.
        what: String,
        /// The path's last node.
        node: ObjectId,
        /// The lines it claims.
        count: u64,
    },
    /// A node object that is neither 32 nor 64 bytes, found where `what` named it.
    #[error("{what}: node {id} is not 32 or 64 bytes")]
    BadNodeIn {
        /// What named it (a version, a pack).
        what: String,
        /// The node.
        id: ObjectId,
    },
    /// A node object that is neither 32 nor 64 bytes, reached from a ref or a state.
    #[error("node {id} is not 32 or 64 bytes")]
    BadNode {
        /// The node.
        id: ObjectId,
    },
    /// A version keeps more bytes of its parent than the parent has.
    #[error("version {id}: keeps {keep} bytes of a parent that has {has}")]
    KeepsTooMuch {
        /// The version.
        id: ObjectId,
        /// The bytes it keeps.
        keep: usize,
        /// The bytes its parent has.
        has: usize,
    },
    /// A version lists a row object (an entry without its session id) but names no session.
    #[error("version {id}: lists row {row} but names no session")]
    RowWithoutSession {
        /// The version.
        id: ObjectId,
        /// The row object.
        row: ObjectId,
    },
    /// An import state that does not decode where every state must (`gc`'s reach).
    #[error("{}: unreadable import state", path.display())]
    StateUnreadable {
        /// The session file the state is of.
        path: PathBuf,
    },
    /// An import state whose resume part does not decode.
    #[error("import state of {}: unreadable (resume part)", path.display())]
    ResumeUnreadable {
        /// The session file the state is of.
        path: PathBuf,
    },
    /// A chunk of an import state's node table that does not read.
    #[error("import state of {}: node table chunk {chunk} does not read", path.display())]
    ChunkUnread {
        /// The session file the state is of.
        path: PathBuf,
        /// The chunk.
        chunk: ObjectId,
    },
    /// A node of a session's tree that is not a node object.
    #[error("{}: {node} is not a node object; run shake fsck", path.display())]
    NotANode {
        /// The session file.
        path: PathBuf,
        /// The object named as a node.
        node: ObjectId,
    },

    /// The packs kept changing while the store listed them.
    #[error("{}: packs keep changing under this process; try again", dir.display())]
    Unsettled {
        /// The `packs` folder.
        dir: PathBuf,
    },
    /// An object asked for as one kind is another.
    #[error("object {id} is a {is}, not a {want}")]
    WrongKind {
        /// The object.
        id: ObjectId,
        /// Its kind.
        is: Kind,
        /// The kind asked for.
        want: Kind,
    },
    /// A version lists an object that is neither an entry nor a row.
    #[error("object {id} is a {kind}, not an entry or a row")]
    NotALine {
        /// The object.
        id: ObjectId,
        /// Its kind.
        kind: Kind,
    },
    /// Text given as an object id that is no id nor prefix.
    #[error("not an object id or prefix: {text:?} (want 4 to 64 hex digits)")]
    NotAnId {
        /// The text.
        text: String,
    },
    /// An id or prefix the store holds no object of.
    #[error("no object {text} in {}", store.display())]
    NoObject {
        /// The id or prefix, as given.
        text: String,
        /// The store's folder.
        store: PathBuf,
    },
    /// A prefix several objects share.
    #[error("object prefix {text} is ambiguous ({count} objects)")]
    Ambiguous {
        /// The prefix, as given.
        text: String,
        /// How many objects it matches.
        count: usize,
    },
    /// A ref update to an object the store does not hold.
    #[error("cannot point {name} at {new}: no such object")]
    NoTarget {
        /// The ref.
        name: String,
        /// The object.
        new: ObjectId,
    },
    /// A session file's absolute path that is not UTF-8 (import states are keyed by it).
    #[error("{}: shake needs UTF-8 paths", crate::output::path(path))]
    NotUtf8 {
        /// The absolute path.
        path: PathBuf,
    },
    /// A session whose parent links loop, so that a path has no node ids.
    #[error("{}: {cycle}", crate::output::path(path))]
    Cycle {
        /// The session file.
        path: PathBuf,
        /// Where the links loop.
        #[source]
        cycle: Cycle,
    },
    /// An import state that does not encode.
    #[error("cannot encode import state: {0}")]
    Encode(#[source] bincode::error::EncodeError),
    /// A session id prefix no imported file has.
    #[error("no session file or imported session id {prefix:?}")]
    NoSession {
        /// The prefix, as given.
        prefix: String,
    },
    /// A session id prefix several imported files share.
    #[error("session id {prefix:?} matches {} imported files", paths.len())]
    AmbiguousSession {
        /// The prefix, as given.
        prefix: String,
        /// The files.
        paths: Vec<PathBuf>,
    },
}

impl StoreError {
    /// Whether the error is damage in the store (the store is corrupt, `fsck` finds it), not a
    /// request it cannot answer nor a step the system refused. A reader that takes a failure for
    /// "not there" asks this first: a damaged store is said to be damaged, never read as empty.
    pub fn is_damage(&self) -> bool {
        use StoreError as S;
        match self {
            S::Pack(e) => e.is_damage(),
            S::Ref(e) => e.is_damage(),
            S::State(_) => true,
            S::File(_) => false,
            S::Damaged { .. }
            | S::NotPackedName { .. }
            | S::BadPacked { .. }
            | S::NotMerging { .. }
            | S::NotCollecting { .. }
            | S::Mismatch { .. }
            | S::Rehash { .. }
            | S::Missing { .. }
            | S::ChainLoops { .. }
            | S::BadVersion { .. }
            | S::PathTooLong { .. }
            | S::PathTooShort { .. }
            | S::BadNodeIn { .. }
            | S::BadNode { .. }
            | S::KeepsTooMuch { .. }
            | S::RowWithoutSession { .. }
            | S::StateUnreadable { .. }
            | S::ResumeUnreadable { .. }
            | S::ChunkUnread { .. }
            | S::NotANode { .. } => true,
            S::Unsettled { .. }
            | S::WrongKind { .. }
            | S::NotALine { .. }
            | S::NotAnId { .. }
            | S::NoObject { .. }
            | S::Ambiguous { .. }
            | S::NoTarget { .. }
            | S::NotUtf8 { .. }
            | S::Cycle { .. }
            | S::Encode(_)
            | S::NoSession { .. }
            | S::AmbiguousSession { .. } => false,
        }
    }
}

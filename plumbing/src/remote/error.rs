//! The remotes' own error (issue 34.4): the remotes file, the machine file, a remote's URL and
//! its service, a remote's damage (a manifest, an index or a pack that does not read), this
//! store's own, each naming the file or the remote. The CLI's exit code and hints are the
//! command boundary's (`command_error.rs`); [`RemoteError::is_damage`] tells a fetch which
//! packs to leave out and go on.

use std::path::PathBuf;

use crate::durable::FileError;
use crate::id::ObjectId;
use crate::store::pack::PackError;
use crate::store::StoreError;

/// Why a remote operation failed.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// The remotes file does not read.
    #[error("{}: not a remotes file: {source}", path.display())]
    BadRemotes {
        /// The remotes file.
        path: PathBuf,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// The remotes file is of another version.
    #[error("{}: not a remotes file of version 1", path.display())]
    RemotesVersion {
        /// The remotes file.
        path: PathBuf,
    },
    /// The machine file does not read.
    #[error("{}: not a machine file (id and name)", path.display())]
    BadMachine {
        /// The machine file.
        path: PathBuf,
    },
    /// A remote name that would not be a plain folder name.
    #[error("remote name {name:?}: use letters, digits, '.', '_' and '-' (64 at most)")]
    BadName {
        /// The name given.
        name: String,
    },
    /// `remote add NAME ""`.
    #[error("remote URL is empty")]
    EmptyUrl,
    /// A remote of that name exists.
    #[error("a remote is already named {name}")]
    Exists {
        /// The name given.
        name: String,
    },
    /// A command needs a remote and there is none.
    #[error("no remote yet")]
    NoRemote,
    /// A command named no remote and there are several.
    #[error("several remotes ({}): name one", names.join(", "))]
    Several {
        /// Their names.
        names: Vec<String>,
    },
    /// No remote has that name.
    #[error("no remote named {name:?}")]
    Unknown {
        /// The name given.
        name: String,
    },
    /// Every folder name for a fetched machine is taken.
    #[error("{}: no folder left for machine {id} ({name})", dir.display())]
    NoMirror {
        /// The mirrors' folder.
        dir: PathBuf,
        /// The machine's id.
        id: String,
        /// Its name.
        name: String,
    },
    /// What shake writes does not encode (`the remotes`, `the machine`, `a manifest`).
    #[error("cannot encode {what}: {source}")]
    Encode {
        /// What.
        what: &'static str,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// A URL that does not parse.
    #[error("remote URL {url:?}: {source}")]
    Url {
        /// The URL given.
        url: String,
        /// Why.
        #[source]
        source: url::ParseError,
    },
    /// A URL no service of object_store's takes.
    #[error("remote URL {url:?}: {source}")]
    Scheme {
        /// The URL given.
        url: String,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A service object_store takes but shake does not write to (`http://`, memory).
    #[error("remote URL {url:?}: {scheme} is not a remote shake writes to")]
    NotWritable {
        /// The URL given.
        url: String,
        /// object_store's name of its scheme.
        scheme: String,
    },
    /// The service failed: a refused login, a missing bucket, a dropped connection.
    #[error("cannot {doing} remote {url}: {source}")]
    Service {
        /// What shake was doing (`list packs/ in`).
        doing: String,
        /// The remote's URL.
        url: String,
        /// What the service said (boxed: object_store's error is large).
        #[source]
        source: Box<object_store::Error>,
    },
    /// The I/O runtime of a transport could not start.
    #[error("cannot start the remote's I/O runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// No temporary folder for `fsck --remote`'s downloads.
    #[error("cannot make a temp folder: {0}")]
    TempDir(#[source] std::io::Error),
    /// A manifest of a version this shake does not read.
    #[error("remote {url}: {key} is a manifest of version {version}; this shake reads {reads}")]
    ManifestVersion {
        /// The remote's URL.
        url: String,
        /// The manifest's name.
        key: String,
        /// Its version.
        version: u32,
        /// The version this shake reads.
        reads: u32,
    },
    /// A manifest that does not read (the remote's damage).
    #[error("remote {url}: {key}: {why}")]
    ManifestDamaged {
        /// The remote's URL.
        url: String,
        /// The manifest's name.
        key: String,
        /// What is wrong.
        why: String,
    },
    /// A pack's index the remote lists is not there (the remote's damage).
    #[error("remote {url}: {name} is missing")]
    IndexMissing {
        /// The remote's URL.
        url: String,
        /// The index's name.
        name: String,
    },
    /// A pack's index that does not read or indexes another pack (the remote's damage).
    #[error("remote {url}: {name} is damaged (not a sound index of that pack); nothing was read from it")]
    IndexDamaged {
        /// The remote's URL.
        url: String,
        /// The index's name.
        name: String,
    },
    /// A pack or index a manifest names is not there (the remote's damage).
    #[error("remote {url}: {name} is missing (a manifest names it)")]
    PackMissing {
        /// The remote's URL.
        url: String,
        /// The file's name.
        name: String,
    },
    /// A pack that does not check whole (the remote's damage).
    #[error(
        "remote {url}: pack-{sum} is damaged ({count} problem{}, first: {first}); it was not fetched",
        if *count == 1 { "" } else { "s" }
    )]
    PackDamaged {
        /// The remote's URL.
        url: String,
        /// The pack's checksum.
        sum: String,
        /// How many problems.
        count: usize,
        /// The first.
        first: String,
    },
    /// A fetched machine's session version is not in the store after its packs came.
    #[error("machine {name} ({machine}): session {path}: {source}")]
    SessionUnread {
        /// The machine's name.
        name: String,
        /// Its id.
        machine: String,
        /// The session's path on that machine.
        path: String,
        /// The store's error (boxed: it is large).
        #[source]
        source: Box<StoreError>,
    },
    /// An object of this store does not hash to its id (this store's damage).
    #[error("{}: object {id} does not match its id; nothing was pushed", path.display())]
    ObjectMismatch {
        /// The pack.
        path: PathBuf,
        /// The object.
        id: ObjectId,
    },
    /// The store.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A pack of the store, or the one being written.
    #[error(transparent)]
    Pack(#[from] PackError),
    /// A step on a file.
    #[error(transparent)]
    File(#[from] FileError),
}

impl RemoteError {
    /// Tells whether this is the remote's damage (a manifest, index or pack that does not
    /// read): a fetch leaves that out, says so and goes on.
    pub fn is_damage(&self) -> bool {
        use RemoteError as R;
        matches!(
            self,
            R::ManifestDamaged { .. }
                | R::IndexMissing { .. }
                | R::IndexDamaged { .. }
                | R::PackMissing { .. }
                | R::PackDamaged { .. }
        )
    }
}

/// What a remote operation returns.
pub type Result<T, E = RemoteError> = std::result::Result<T, E>;

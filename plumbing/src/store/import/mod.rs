//! Incremental import of session files (every host's) into the store.
//!
//! Every physical line becomes an entry object (blank and malformed ones too, so the file can be
//! rebuilt byte for byte); every tree entry also gets a node object, `node = H(parent node ‖
//! entry id)` along the host's parent links (pi's `parentId`); each import that changed
//! something records a version.
//! Per file, the import state remembers size, mtime and a hash of the committed prefix: an
//! unchanged file costs one `stat`, a grown one is read from where the last import stopped (the
//! prefix streamed through its hash to prove it unchanged, never held in memory), a
//! rewritten one gets a fresh version whose parent is the old one (whose objects all stay).
//!
//! A last line without `\n` is stored (the version must rebuild the file) but not committed: the
//! next import reads it again, finished or not. Each line is read by the file's host
//! ([`Host::tree_line`]: its own id and parent fields, its header); the store keys entries and
//! chains by them (an unknown parent ends the path, so the entry is a root). A file no host
//! accepts is refused before anything of it is stored.
//!
//! The import's rooms: [`read`] reads a file's bytes (whole, after the committed prefix, or
//! after this process's own append), [`lines`] turns lines into entry and node objects,
//! [`prepare`] works out one import against the store (the version, the state), and
//! [`sessions`] answers what the store recorded of imported files.

mod lines;
mod prepare;
mod read;
mod sessions;

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use crate::append::Appended;
use crate::durable::FileError;
use crate::host::error::HostError;
use crate::host::file::Bytes;
use crate::host::{self, HostKind, SessionFile, Warning};
use crate::id::ObjectId;

use super::pack::PackError;
use super::{Batch, Store, StoreError};
use prepare::prepare_known;
use read::Known;

pub(super) use prepare::{prepare, Prepared};
pub use sessions::{session_by_id, SessionInfo};

/// What importing one session file can fail with, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The path names something other than a regular file (a folder, a device).
    #[error("{}: not a file", crate::output::path(path))]
    NotAFile {
        /// The path given.
        path: PathBuf,
    },
    /// The system refused a step on the file or the store's folders (stat, read, list).
    #[error(transparent)]
    File(#[from] FileError),
    /// A chunk of the import state's node table did not read where a parent was looked up (an
    /// import then reads the file whole again; this is its error only when that fails too).
    #[error("{}: the import state's node table does not read (chunk {chunk})", crate::output::path(path))]
    TableUnread {
        /// The session file.
        path: PathBuf,
        /// The chunk (table object) that did not read.
        chunk: ObjectId,
    },
    /// Writing the pack failed.
    #[error(transparent)]
    Pack(#[from] PackError),
    /// The store's part: its write lock, a state, a ref, the file's key.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// No host reads the file (the registry's refusal).
    #[error(transparent)]
    Host(#[from] HostError),
}

/// What importing one file did.
#[derive(Clone, Debug)]
pub struct ImportReport {
    /// The file, as given.
    pub path: PathBuf,
    /// The session id from its header, if it has one.
    pub session_id: Option<String>,
    /// Tree entries in the file's committed part (all of them, not just the new ones).
    pub entries: u64,
    /// Objects this import added to the store.
    pub new_objects: u64,
    /// Bytes read and parsed by this import (0 when unchanged).
    pub bytes: u64,
    /// Lines pi would skip or read with a loss, by 1-based line number (0: the whole file).
    pub warnings: Vec<Warning>,
    /// The file's latest version object.
    pub version: ObjectId,
    /// True when nothing changed since the last import (no new version).
    pub unchanged: bool,
    /// True when the file no longer starts with what was imported before (a new chain start).
    pub rewritten: bool,
    /// The last tree entry this import read, when it read one: its id (none in formats without
    /// ids) and its node id (what names its overlay), so a writer need not walk the path again.
    pub last_entry: Option<(Option<String>, ObjectId)>,
}

impl Store {
    /// Imports one session file (a no-op costing one `stat` when it did not change), read by
    /// the host `forced` names, else by the host that accepts it.
    pub fn import_file(&mut self, path: &Path, forced: Option<HostKind>) -> Result<ImportReport, ImportError> {
        self.import_known(path, forced, Known::Nothing)
    }

    /// [`Store::import_file`] of a file the caller has read already: when the file at its path
    /// is still the one read (`SessionFile::stamp`), a whole read uses those bytes instead of
    /// reading (and holding) the file a second time.
    pub fn import_read(&mut self, file: &SessionFile, forced: Option<HostKind>) -> Result<ImportReport, ImportError> {
        self.import_known(&file.path, forced, Known::Read(file))
    }

    fn import_known(
        &mut self,
        path: &Path,
        forced: Option<HostKind>,
        known: Known<'_>,
    ) -> Result<ImportReport, ImportError> {
        if let Some(report) = self.unchanged(path)? {
            return Ok(report);
        }
        let mut batch = self.batch()?;
        let report = batch.import_known(path, forced, known)?;
        batch.commit()?;
        Ok(report)
    }
}

impl Batch<'_> {
    /// Imports one session file into this batch (see the module doc).
    pub fn import(&mut self, path: &Path, forced: Option<HostKind>) -> Result<ImportReport, ImportError> {
        self.import_known(path, forced, Known::Nothing)
    }

    /// [`Batch::import`] of a file this process has just appended to (`own`): when the import
    /// state describes the file exactly as the append found it under its lock, and the file is
    /// still as the append left it, only the last 1 MiB block of the old bytes and the appended
    /// bytes are read and hashed (see [`read_own`] for why that is safe); otherwise the old
    /// bytes are proven as [`Batch::import`] proves them. Either way, when the bytes after
    /// the old ones are exactly the bytes written, those lines are not parsed again: their ids
    /// and parents are the writer's.
    pub fn import_appended(
        &mut self,
        path: &Path,
        forced: Option<HostKind>,
        own: &OwnAppend<'_>,
    ) -> Result<ImportReport, ImportError> {
        self.import_known(path, forced, Known::Appended(own))
    }

    /// [`Batch::import`], with what the caller knows of the file: bytes it read (used for a
    /// whole read when the file is still the one they were read from) or an append it made.
    fn import_known(
        &mut self,
        path: &Path,
        forced: Option<HostKind>,
        known: Known<'_>,
    ) -> Result<ImportReport, ImportError> {
        let (store, pending) = self.parts();
        prepare_known(store, path, forced, known)?.apply(store, pending)
    }
}

/// An append this process made, as [`Batch::import_appended`] takes it.
#[derive(Clone, Copy, Debug)]
pub struct OwnAppend<'a> {
    /// What the safe writer saw of the file around the write ([`crate::append::append`]).
    pub append: &'a Appended,
    /// The bytes appended: whole lines, each a tree entry (shared: the import reads them as
    /// the file's new lines, not a copy read back).
    pub bytes: &'a Bytes,
    /// Each appended line's entry id and parent id (`None` at a root), in order, as the
    /// writer made them.
    pub entries: &'a [(&'a str, Option<&'a str>)],
}

/// The absolute, symlink-free path that keys a file's import state.
fn canonical(path: &Path) -> Result<String, StoreError> {
    let full = std::fs::canonicalize(path).map_err(FileError::at(path, "read"))?;
    full.into_os_string().into_string().map_err(|p| StoreError::NotUtf8 { path: PathBuf::from(p) })
}

/// Returns a file's size and mtime (nanoseconds since the epoch).
fn stat(path: &Path) -> Result<(u64, u64), ImportError> {
    let meta = std::fs::metadata(path).map_err(FileError::at(path, "read"))?;
    if !meta.is_file() {
        return Err(ImportError::NotAFile { path: path.to_path_buf() });
    }
    let mtime = meta.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos() as u64);
    Ok((meta.len(), mtime))
}

/// A file modified less than this before it was read may change again within the same mtime
/// tick (ext4 timestamps move in kernel ticks), unseen by a size-and-mtime check.
const RACY_NS: u64 = 1_000_000_000;

/// The mtime to remember: 0 (never equal to a real one, so the next import compares content)
/// when the file was modified moments ago, as git does with racily clean index entries.
fn remembered_mtime(mtime_ns: u64) -> u64 {
    let now = std::time::SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    if now.saturating_sub(mtime_ns) < RACY_NS {
        0
    } else {
        mtime_ns
    }
}

/// Returns the node id of every entry on the root→leaf path of `leaf` (root first), as import
/// computes them: the last one names the leaf (e.g. in `refs/overlays/<node-id>`).
pub fn path_nodes(session: &host::Session<'_>, leaf: usize) -> Result<Vec<ObjectId>, StoreError> {
    crate::nodes::path_nodes(session, leaf)
        .map_err(|cycle| StoreError::Cycle { path: session.file.path.clone(), cycle })
}

#[cfg(test)]
mod tests;

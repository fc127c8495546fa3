//! What tells a meter (any host's) that a session file is still the bytes it measured: the
//! file's stamp ([`FileState`], also what `--watch` polls) and the bytes' proof ([`Seen`]).

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use shake_plumbing::durable::FileError;
use shake_plumbing::rev::RevArgs;
use shake_plumbing::{Context, Result};

use crate::fingerprint::Proof;

/// What `--watch` and the memo compare: which file the revision names now, and its size,
/// modification time and inode (as git's index does for a work-tree file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FileState {
    pub(crate) path: PathBuf,
    pub(crate) len: u64,
    pub(crate) mtime_ns: u128,
    pub(crate) inode: u64,
}

impl FileState {
    pub(crate) fn of(ctx: &Context, rev: &RevArgs) -> Result<FileState> {
        let path = rev.rev().session_path(ctx)?;
        let meta = std::fs::metadata(&path).map_err(FileError::at(&path, "read"))?;
        let mtime_ns = meta.modified().ok().and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok());
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(&meta);
        #[cfg(not(unix))]
        let inode = 0;
        Ok(FileState { path, len: meta.len(), mtime_ns: mtime_ns.map_or(0, |d| d.as_nanos()), inode })
    }

    /// Tells whether the file was modified long enough ago that a write in the same clock tick
    /// cannot hide behind an unchanged stamp (git's "racily clean" rule).
    pub(crate) fn settled(&self) -> bool {
        let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        self.mtime_ns > 0 && now.saturating_sub(self.mtime_ns) >= SETTLED.as_nanos()
    }
}

/// A file modified less than this long ago is never recalled by its stamp alone.
const SETTLED: Duration = Duration::from_secs(2);

/// The bytes a reading was measured on, and the file's stamp when they were read: what tells
/// a meter (any host's) that the file is still those bytes.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Seen {
    pub(super) len: u64,
    mtime_ns: u128,
    pub(super) inode: u64,
    /// The file was settled when measured, so its stamp alone may recall the reading.
    exact: bool,
    /// The measured bytes, for a touched file.
    pub(super) proof: Proof,
}

impl Seen {
    /// The bytes `proof` proves, read after the stat that gave `state`.
    pub(crate) fn new(state: &FileState, proof: Proof) -> Seen {
        // Bytes read after the stat may be newer than its stamp.
        let exact = state.settled() && proof.len == state.len;
        Seen { len: proof.len, mtime_ns: state.mtime_ns, inode: state.inode, exact, proof }
    }

    /// `Some` if the file is still exactly these bytes: the same stamp (measured settled), or
    /// the same size and inode and the same bytes; `Some(true)` when proven by the bytes.
    pub(crate) fn unchanged(&self, state: &FileState) -> Option<bool> {
        if (state.len, state.inode) != (self.len, self.inode) {
            return None;
        }
        let stamped = self.exact && state.mtime_ns == self.mtime_ns;
        (stamped || self.proof.verify(&state.path)).then_some(!stamped)
    }

    /// The same bytes under the file's new stamp (after a proven recall: the next is a stat).
    pub(crate) fn restamped(&self, state: &FileState) -> Seen {
        Seen { exact: state.settled(), mtime_ns: state.mtime_ns, ..self.clone() }
    }
}

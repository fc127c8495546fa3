//! The store's write lock: `flock` on `<store>/lock`, held by every writer (a [`super::Batch`],
//! `update-ref`) for as long as it writes. The kernel drops it when its process dies, so a
//! killed writer never blocks the next one; and because every ref update happens under it, a
//! `<ref>.lock` file found by a lock holder was left by a writer that died (see `refs`).
//!
//! The file is created 0600 and never followed through a symlink (a link planted there would
//! otherwise make shake create or lock whatever file it points to).

use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::durable::{private_dir, FileError};

/// Proof that this process holds the store's write lock; dropped, it releases it.
#[derive(Debug)]
pub struct WriteLock {
    _file: File,
}

impl WriteLock {
    /// Takes the lock of the store in `dir` (creating the folder), waiting for another writer.
    pub fn take(dir: &Path) -> Result<WriteLock, FileError> {
        let (path, file) = open(dir)?;
        file.lock().map_err(|source| FileError { path, doing: "lock", source })?;
        Ok(WriteLock { _file: file })
    }

    /// Takes the lock if no one holds it; `None` when a writer is at work.
    pub fn try_take(dir: &Path) -> Result<Option<WriteLock>, FileError> {
        let (path, file) = open(dir)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(WriteLock { _file: file })),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(source)) => Err(FileError { path, doing: "lock", source }),
        }
    }
}

fn open(dir: &Path) -> Result<(PathBuf, File), FileError> {
    private_dir(dir)?;
    let path = dir.join("lock");
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .map_err(|source| FileError {
            path: path.clone(),
            doing: "open the lock (it must not be a symbolic link)",
            source,
        })?;
    Ok((path, file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symlinked_lock_is_refused_and_its_target_not_created() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        std::os::unix::fs::symlink(&target, dir.path().join("lock")).unwrap();
        let err = WriteLock::take(dir.path()).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert!(!target.exists());
    }

    #[test]
    fn the_lock_is_exclusive_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let held = WriteLock::take(dir.path()).unwrap();
        assert!(WriteLock::try_take(dir.path()).unwrap().is_none());
        drop(held);
        assert!(WriteLock::try_take(dir.path()).unwrap().is_some());
    }
}

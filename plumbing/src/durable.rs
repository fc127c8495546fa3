//! Files shake writes whole (pack indexes, refs, import states, restored sessions, exports,
//! caches, memos): through a private temp file beside the target, fsync-ed, renamed into place,
//! then the folder fsync-ed, so a crash leaves the old file or the new one, never a mix. Files
//! are created 0600 and folders 0700 whatever the umask: conversations are private.

use std::io::Write;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use crate::Error;

/// The prefix of every temp file; `gc` removes those of writers that died.
pub const TMP_PREFIX: &str = "tmp-";

/// A file operation the system refused.
#[derive(Debug, thiserror::Error)]
#[error("cannot {doing} {}", path.display())]
pub struct FileError {
    /// The file or folder involved.
    pub path: PathBuf,
    /// What was being done ("write", "create the folder", "sync", …).
    pub doing: &'static str,
    /// The system's error.
    #[source]
    pub source: std::io::Error,
}

impl FileError {
    fn at<'p>(path: &'p Path, doing: &'static str) -> impl FnOnce(std::io::Error) -> FileError + 'p {
        move |source| FileError { path: path.to_path_buf(), doing, source }
    }
}

impl From<FileError> for Error {
    fn from(e: FileError) -> Error {
        Error::os(e.source.kind(), &e).caused_by(e)
    }
}

impl From<FileError> for std::io::Error {
    fn from(e: FileError) -> std::io::Error {
        std::io::Error::new(e.source.kind(), e)
    }
}

/// Creates `dir` and its missing parents, each 0700.
pub fn private_dir(dir: &Path) -> Result<(), FileError> {
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(FileError::at(dir, "create the folder"))
}

/// Replaces `path` with `bytes` durably (its folder is created if missing).
pub fn write(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    write_with(path, bytes, false)
}

/// Writes `bytes` to `path` durably, failing if `path` exists (it is never overwritten).
pub fn write_new(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    write_with(path, bytes, true)
}

fn write_with(path: &Path, bytes: &[u8], no_clobber: bool) -> Result<(), FileError> {
    let dir = match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(dir) => dir,
        None => Path::new("."),
    };
    private_dir(dir)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(TMP_PREFIX)
        .tempfile_in(dir)
        .map_err(FileError::at(dir, "create a temp file in"))?;
    tmp.write_all(bytes).map_err(FileError::at(path, "write"))?;
    tmp.as_file().sync_all().map_err(FileError::at(path, "fsync"))?;
    if no_clobber {
        tmp.persist_noclobber(path).map_err(|e| FileError::at(path, "create")(e.error))?;
    } else {
        tmp.persist(path).map_err(|e| FileError::at(path, "replace")(e.error))?;
    }
    sync_dir(dir)
}

/// Makes renames in `dir` durable.
pub fn sync_dir(dir: &Path) -> Result<(), FileError> {
    std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(FileError::at(dir, "sync"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn files_and_folders_are_private_whatever_the_umask() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/c.bin");
        // SAFETY: umask(2) cannot fail; it is process-wide, and this test restores it.
        let old = unsafe { libc::umask(0) };
        write(&path, b"one").unwrap();
        unsafe { libc::umask(old) };
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!((mode(&dir.path().join("a")), mode(&dir.path().join("a/b"))), (0o700, 0o700));
        write(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let err = write_new(&path, b"three").unwrap_err();
        assert_eq!(err.source.kind(), std::io::ErrorKind::AlreadyExists);
        assert!(err.to_string().contains("c.bin"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(dir.path().join("a/b")).unwrap().count(), 1, "no temp file left");
    }
}

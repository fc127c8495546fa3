//! Files shake writes whole (pack indexes, import states, restored sessions, exports, the pi
//! extension, calibrations; caches and memos): through a private temp file beside the target,
//! fsync-ed, renamed into place, then the folder fsync-ed, so a crash leaves the old file or the
//! new one, never a mix. This is the one place that replaces a file (refs have their own lock
//! file, `store::refs`). Files are created 0600 and folders 0700 whatever the umask:
//! conversations are private.
//!
//! A cache ([`write_cache`]: the token cache, the meter's memo, shake's own-write stamp) skips
//! the two fsyncs: after a power cut it may be the old file or empty, which its reader takes as
//! absent, and a meter reading per turn should not wait for the disk (an fsync and a folder
//! fsync cost ~8 ms here, the whole reading 1.6 ms).

use std::io::Write;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// The prefix of every temp file; `gc` removes those of writers that died.
pub const TMP_PREFIX: &str = "tmp-";

/// The prefix of the temp files shake writes into a host's folders (a Claude Code project
/// folder: forks, undone sessions, in-place rewrites, saved originals), followed by the
/// writer's pid and a `-`: hidden and never `.jsonl`, so no host lists one as a session, and
/// [`remove_dead_temps`] can tell those a killed run left.
pub const HIDDEN_TMP_PREFIX: &str = ".shake-tmp-";

/// A file operation the system refused.
#[derive(Debug, thiserror::Error)]
#[error("cannot {doing} {}", crate::output::path(path))]
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
    /// The `map_err` for a step on `path`: `.map_err(FileError::at(path, "read"))`.
    pub fn at<'p>(path: &'p Path, doing: &'static str) -> impl Fn(std::io::Error) -> FileError + Copy + 'p {
        move |source| FileError { path: path.to_path_buf(), doing, source }
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
    write_with(path, |out| out.write_all(bytes), Mode::Replace, || Ok(()))
}

/// Writes `bytes` to `path` durably, failing if `path` exists (it is never overwritten).
pub fn write_new(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    write_new_with(path, |out| out.write_all(bytes))
}

/// [`write_new`] of the bytes `write` streams (through a buffer, never held whole).
pub fn write_new_with(path: &Path, write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<(), FileError> {
    write_with(path, write, Mode::New, || Ok(()))
}

/// [`write_new_with`] into a host's folder: the temp file is a hidden one
/// ([`HIDDEN_TMP_PREFIX`]), so a run killed midway leaves no half file a host would list, only
/// a temp file a later run removes.
pub fn write_new_hidden(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), FileError> {
    write_with(path, write, Mode::NewHidden, || Ok(()))
}

/// A new hidden temp file in `dir` ([`HIDDEN_TMP_PREFIX`]), created 0600 (removed when dropped
/// unless persisted).
pub fn hidden_temp(dir: &Path) -> Result<tempfile::NamedTempFile, FileError> {
    tempfile::Builder::new()
        .prefix(&format!("{HIDDEN_TMP_PREFIX}{}-", std::process::id()))
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(FileError::at(dir, "create a temp file in"))
}

/// Removes the hidden temp files ([`HIDDEN_TMP_PREFIX`]) in `dir` whose writer is no longer
/// running (killed midway), and such temp folders (a push's, [`temp_dir_of_this_process`]).
/// Best effort: a file that cannot be removed stays.
pub fn remove_dead_temps(dir: &Path) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(HIDDEN_TMP_PREFIX)) else { continue };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else { continue };
        if !alive(pid) {
            let _ = match entry.file_type().is_ok_and(|t| t.is_dir()) {
                true => std::fs::remove_dir_all(entry.path()),
                false => std::fs::remove_file(entry.path()),
            };
        }
    }
}

/// A hidden temp folder of this process in `dir` (`.shake-tmp-<pid>-<what>`), made empty and
/// private: another process's is never touched, and [`remove_dead_temps`] removes one its
/// process left when killed.
pub fn temp_dir_of_this_process(dir: &Path, what: &str) -> Result<PathBuf, FileError> {
    remove_dead_temps(dir);
    let path = dir.join(format!("{HIDDEN_TMP_PREFIX}{}-{what}", std::process::id()));
    match std::fs::remove_dir_all(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(FileError::at(&path, "remove")(e)),
        _ => {}
    }
    private_dir(&path)?;
    Ok(path)
}

/// Whether process `pid` runs (in this pid namespace; a process shake may not signal runs).
fn alive(pid: u32) -> bool {
    let Ok(raw) = libc::pid_t::try_from(pid) else { return false };
    if pid == std::process::id() {
        return true;
    }
    // SAFETY: signal 0 sends nothing; it only asks whether the process exists.
    let sent = unsafe { libc::kill(raw, 0) };
    sent == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Replaces the cache file `path` with `bytes` atomically but without the fsyncs (see the
/// module doc): only for a file whose reader treats an empty or unreadable one as absent.
pub fn write_cache(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    write_cache_with(path, |out| out.write_all(bytes))
}

/// [`write_cache`] of the bytes `write` streams (through a buffer, never held whole).
pub fn write_cache_with(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), FileError> {
    write_with(path, write, Mode::Cache, || Ok(()))
}

/// [`write()`], asking `still` just before the rename whether `path` may still be replaced (the
/// temp file is removed when it says no): the window in which another writer's change can be
/// lost shrinks to the rename itself.
pub fn replace_if<E: From<FileError>>(
    path: &Path,
    bytes: &[u8],
    still: impl FnOnce() -> Result<(), E>,
) -> Result<(), E> {
    write_with(path, |out| out.write_all(bytes), Mode::Replace, still)
}

/// How a file is put in place.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Replace it, durably.
    Replace,
    /// Create it, durably; an existing file is an error.
    New,
    /// [`Mode::New`] through a hidden temp file ([`HIDDEN_TMP_PREFIX`]).
    NewHidden,
    /// Replace it, without waiting for the disk.
    Cache,
}

fn write_with<E: From<FileError>>(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    mode: Mode,
    still: impl FnOnce() -> Result<(), E>,
) -> Result<(), E> {
    let dir = match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(dir) => dir,
        None => Path::new("."),
    };
    private_dir(dir)?;
    let mut tmp = match mode {
        Mode::NewHidden => hidden_temp(dir)?,
        _ => tempfile::Builder::new()
            .prefix(TMP_PREFIX)
            .tempfile_in(dir)
            .map_err(FileError::at(dir, "create a temp file in"))?,
    };
    let mut out = std::io::BufWriter::with_capacity(1 << 20, tmp.as_file_mut());
    write(&mut out).and_then(|_| out.flush()).map_err(FileError::at(path, "write"))?;
    drop(out);
    if mode != Mode::Cache {
        tmp.as_file().sync_all().map_err(FileError::at(path, "fsync"))?;
    }
    still()?;
    match mode {
        Mode::New | Mode::NewHidden => {
            tmp.persist_noclobber(path).map_err(|e| FileError::at(path, "create")(e.error))?
        }
        Mode::Replace | Mode::Cache => tmp.persist(path).map_err(|e| FileError::at(path, "replace")(e.error))?,
    };
    match mode {
        Mode::Cache => Ok(()),
        Mode::Replace | Mode::New | Mode::NewHidden => Ok(sync_dir(dir)?),
    }
}

/// New files made durable together: each is handed over once written ([`Batch::add`] starts its
/// writeback and waits for nothing), then [`Batch::sync`] waits for all of them and then for
/// their folders, each folder once. An fsync per file and its folder as each is written costs
/// a disk wait each (2,623 saved originals: 13-24 s of a fold's wall time); started together,
/// the writes overlap and one journal commit takes the files' creations, so the later fsyncs
/// find their file already on disk. Nothing may point at a file of the batch before `sync`
/// returns.
#[derive(Default)]
pub struct Batch {
    files: Vec<PathBuf>,
    /// Temp files to rename into place once on disk: (temp, target, whether it may replace a
    /// file at the target).
    renames: Vec<(tempfile::TempPath, PathBuf, bool)>,
    dirs: Vec<PathBuf>,
}

impl Batch {
    /// Hands over the file just written at `path` (`file` is open on it).
    pub fn add(&mut self, path: &Path, file: &std::fs::File) {
        start_writeback(file);
        self.files.push(path.to_path_buf());
    }

    /// Hands over the temp file `temp` just written, to be renamed to `to` once it is on disk
    /// ([`Batch::sync`], which also syncs `to`'s folder), so `to` never holds a partial file:
    /// never over another file unless `replace`; a file already at `to` with the same bytes is
    /// kept (the temp file dropped).
    pub fn add_new(&mut self, temp: tempfile::NamedTempFile, to: &Path, replace: bool) {
        start_writeback(temp.as_file());
        self.renames.push((temp.into_temp_path(), to.to_path_buf(), replace));
        if let Some(dir) = to.parent() {
            self.add_dir(dir);
        }
    }

    /// Also makes `dir`'s entries (files created or renamed in it) durable at [`Batch::sync`].
    pub fn add_dir(&mut self, dir: &Path) {
        if !self.dirs.iter().any(|d| d == dir) {
            self.dirs.push(dir.to_path_buf());
        }
    }

    /// Waits until every file handed over, then every folder, is on disk.
    pub fn sync(self) -> Result<(), FileError> {
        let temps = self.renames.iter().map(|(temp, ..)| &**temp);
        for path in self.files.iter().map(PathBuf::as_path).chain(temps) {
            std::fs::File::open(path).and_then(|f| f.sync_all()).map_err(FileError::at(path, "fsync"))?;
        }
        for (temp, to, replace) in self.renames {
            let kept = match replace {
                true => temp.persist(&to).map_err(|e| e.error),
                false => temp.persist_noclobber(&to).or_else(|e| match std::fs::read(&to) {
                    Ok(there) if std::fs::read(&e.path).is_ok_and(|new| new == there) => Ok(()),
                    _ => Err(e.error),
                }),
            };
            kept.map_err(FileError::at(&to, "create"))?;
        }
        self.dirs.iter().try_for_each(|dir| sync_dir(dir))
    }
}

/// Starts writing `file`'s dirty pages to disk without waiting (Linux; elsewhere the fsync of
/// [`Batch::sync`] does it all).
fn start_writeback(file: &std::fs::File) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: a valid open descriptor; the call only schedules writeback. Its failure is
        // not an error: `Batch::sync`'s fsync writes and waits for whatever is left.
        unsafe { libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
}

/// Makes renames in `dir` durable.
pub fn sync_dir(dir: &Path) -> Result<(), FileError> {
    std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(FileError::at(dir, "sync"))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(feature = "cli")]
    use crate::Error;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_batch_syncs_its_files_and_folders_and_names_what_it_cannot() {
        let dir = tempfile::tempdir().unwrap();
        let mut batch = Batch::default();
        for name in ["a.txt", "b.txt"] {
            let path = dir.path().join(name);
            let mut f = std::fs::File::create(&path).unwrap();
            f.write_all(name.as_bytes()).unwrap();
            batch.add(&path, &f);
        }
        batch.add_dir(dir.path());
        batch.add_dir(dir.path());
        assert_eq!(batch.dirs.len(), 1, "each folder once");
        batch.sync().unwrap();
        let mut gone = Batch::default();
        let path = dir.path().join("c.txt");
        gone.add(&path, &std::fs::File::create(&path).unwrap());
        std::fs::remove_file(&path).unwrap();
        let err = gone.sync().unwrap_err();
        assert!(err.to_string().contains("c.txt"), "{err}");
    }

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
        write_cache(&path, b"four").unwrap();
        assert_eq!((std::fs::read(&path).unwrap(), mode(&path)), (b"four".to_vec(), 0o600));
        assert_eq!(std::fs::read_dir(dir.path().join("a/b")).unwrap().count(), 1, "no temp file left");
    }

    #[cfg(feature = "cli")]
    #[test]
    fn a_refused_replace_leaves_the_file_and_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"old").unwrap();
        let e = replace_if(&path, b"new", || Err(Error::user("changed"))).unwrap_err();
        assert_eq!(e.message, "changed");
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        replace_if::<Error>(&path, b"new", || Ok(())).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
    }
}

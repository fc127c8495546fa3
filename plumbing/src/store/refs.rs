//! Refs: named pointers to objects, one small file each under `<store>/refs/`.
//!
//! An update, made under the store's write lock ([`WriteLock`]), takes `<ref>.lock` (created
//! exclusively, 0600), compares the current value when asked (compare-and-swap, like
//! `git update-ref <ref> <new> <old>`), writes the lock file, and renames it over the ref. The
//! rename is what makes the update atomic. A `<ref>.lock` that exists when a writer holds the
//! store's lock was left by a writer that died between the two steps: it is removed.
//!
//! Names come from the store, never from input as they are: a session id is encoded
//! ([`session_ref`]) so no id can shape the folder tree (`x` and `x/y` are two refs, not a file
//! and a folder of the same name).

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::lock::WriteLock;
use crate::durable::{private_dir, FileError};
use crate::id::ObjectId;
use crate::{Error, Result};

/// Why a ref could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum RefError {
    /// The name is not a ref name.
    #[error("bad ref name {name:?}: {why}")]
    BadName {
        /// The name given.
        name: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The file does not hold one id.
    #[error("{}: bad ref file (want 64 hex digits and a newline)", path.display())]
    BadFile {
        /// The ref file.
        path: PathBuf,
    },
    /// The compare of a compare-and-swap failed.
    #[error("{name} is {is}, not {want}; not updated")]
    Moved {
        /// The ref.
        name: String,
        /// Its value now ("absent" or an id).
        is: String,
        /// The value expected.
        want: String,
    },
    /// The system refused a step.
    #[error(transparent)]
    Io(#[from] FileError),
}

impl From<RefError> for Error {
    fn from(e: RefError) -> Error {
        let err = match &e {
            RefError::BadName { .. } => Error::user(e.to_string()).hint("ref names look like refs/sessions/<id>"),
            RefError::BadFile { .. } => Error::corrupt(e.to_string()),
            RefError::Moved { .. } => Error::user(e.to_string()).hint("another process moved it; re-read it and retry"),
            RefError::Io(f) => Error::os(f.source.kind(), &e),
        };
        err.caused_by(e)
    }
}

/// The ref naming a session's latest imported version. An id of ASCII letters, digits, `-` and
/// `_` (pi's UUIDs) is the name as it is; any other id is spelled `hex.<its UTF-8 bytes in hex>`,
/// which no plain id can collide with (plain ids have no `.`).
pub fn session_ref(session_id: &str) -> String {
    let plain = !session_id.is_empty() && session_id.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b));
    if plain {
        format!("refs/sessions/{session_id}")
    } else {
        let hex: String = session_id.bytes().map(|b| format!("{b:02x}")).collect();
        format!("refs/sessions/hex.{hex}")
    }
}

/// The ref naming a leaf's overlay object.
pub fn overlay_ref(node: &ObjectId) -> String {
    format!("refs/overlays/{node}")
}

/// What the current value must be for an update to go ahead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Whatever it is (no check).
    Any,
    /// The ref must not exist yet.
    Absent,
    /// The ref must hold this id.
    Id(ObjectId),
}

/// Checks a ref name: `refs/` then `/`-separated parts of ASCII letters, digits, `-`, `_`, `.`,
/// none empty, none starting with `.`, none ending with `.lock`.
pub fn check_name(name: &str) -> std::result::Result<(), RefError> {
    let bad = |why: &'static str| Err(RefError::BadName { name: name.to_string(), why });
    let Some(rest) = name.strip_prefix("refs/") else { return bad("it must start with refs/") };
    for part in rest.split('/') {
        if part.is_empty() || part.starts_with('.') || part.ends_with(".lock") {
            return bad("empty part, leading '.' or '.lock' suffix");
        }
        if !part.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)) {
            return bad("only ASCII letters, digits, '-', '_' and '.' are allowed");
        }
    }
    Ok(())
}

/// Reads a ref: `None` when it does not exist; a corrupt-store error naming the file when it
/// does not hold one id.
pub fn read(store: &Path, name: &str) -> std::result::Result<Option<ObjectId>, RefError> {
    let path = store.join(name);
    match std::fs::read(&path) {
        Ok(bytes) => parse(&path, &bytes).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(RefError::Io(FileError { path, doing: "read", source })),
    }
}

fn parse(path: &Path, bytes: &[u8]) -> std::result::Result<ObjectId, RefError> {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|s| s.strip_suffix('\n'))
        .and_then(|s| s.parse::<ObjectId>().ok())
        .ok_or_else(|| RefError::BadFile { path: path.to_path_buf() })
}

/// Sets `name` to `new` if its current value is what `expect` says, under the store's write
/// lock. `durable` fsyncs the new file and the folder (a command the user runs for this);
/// imports skip it because their refs can be rebuilt from the session files.
pub fn update(
    store: &Path,
    _held: &WriteLock,
    name: &str,
    new: &ObjectId,
    expect: Expect,
    durable: bool,
) -> std::result::Result<(), RefError> {
    check_name(name)?;
    let path = store.join(name);
    private_dir(path.parent().unwrap_or(store))?;
    let lock = Lock::take(&path)?;
    let current = read(store, name)?;
    let ok = match expect {
        Expect::Any => true,
        Expect::Absent => current.is_none(),
        Expect::Id(old) => current == Some(old),
    };
    if !ok {
        let is = current.map_or("absent".to_string(), |id| id.to_string());
        let want = match expect {
            Expect::Id(old) => old.to_string(),
            _ => "absent".to_string(),
        };
        return Err(RefError::Moved { name: name.to_string(), is, want });
    }
    lock.commit(format!("{new}\n").as_bytes(), durable)
}

/// Lists every ref, sorted by name; the first unreadable ref is an error.
pub fn list(store: &Path) -> Result<Vec<(String, ObjectId)>> {
    list_all(store)?.into_iter().map(|(name, id)| id.map(|id| (name, id))).collect()
}

/// Lists every ref file, sorted by name, each with its id or why it cannot be read.
pub fn list_all(store: &Path) -> Result<Vec<(String, Result<ObjectId>)>> {
    let root = store.join("refs");
    let mut refs = Vec::new();
    for entry in walkdir::WalkDir::new(&root).sort_by_file_name() {
        let entry = match entry {
            Ok(e) => e,
            Err(e) if e.io_error().is_some_and(|io| io.kind() == std::io::ErrorKind::NotFound) => continue,
            Err(e) => {
                let path = e.path().unwrap_or(&root).to_path_buf();
                let source = e.into_io_error().unwrap_or_else(|| std::io::Error::other("a loop in the folder tree"));
                return Err(RefError::Io(FileError { path, doing: "list", source }).into());
            }
        };
        let name = entry.path().strip_prefix(store).unwrap_or(entry.path()).to_string_lossy().replace('\\', "/");
        if !entry.file_type().is_file()
            || name.ends_with(".lock")
            || entry.file_name().to_string_lossy().starts_with("tmp-")
        {
            continue;
        }
        let id = std::fs::read(entry.path())
            .map_err(|source| RefError::Io(FileError { path: entry.path().to_path_buf(), doing: "read", source }))
            .and_then(|bytes| parse(entry.path(), &bytes))
            .map_err(Error::from);
        refs.push((name, id));
    }
    Ok(refs)
}

/// Lists the `<ref>.lock` files under `refs/`: each is either an update in progress or, when no
/// writer holds the store's lock, one left by a writer that died.
pub fn lock_files(store: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(store.join("refs"))
        .sort_by_file_name()
        .into_iter()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_file() && e.file_name().to_string_lossy().ends_with(".lock"))
        .map(|e| e.into_path())
        .collect()
}

/// An exclusively created `<ref>.lock`, removed on drop unless renamed over the ref.
struct Lock {
    path: PathBuf,
    target: PathBuf,
    file: std::fs::File,
    renamed: bool,
}

impl Lock {
    /// Creates `<target>.lock`; one that exists was left by a writer that died (the caller
    /// holds the store's write lock, which every ref writer takes), so it is replaced.
    fn take(target: &Path) -> std::result::Result<Lock, RefError> {
        let mut name = target.as_os_str().to_owned();
        name.push(".lock");
        let path = PathBuf::from(name);
        let create = || std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path);
        let file = match create() {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                std::fs::remove_file(&path).map_err(|source| FileError {
                    path: path.clone(),
                    doing: "remove the stale lock",
                    source,
                })?;
                create()
            }
            other => other,
        };
        match file {
            Ok(file) => Ok(Lock { path, target: target.to_path_buf(), file, renamed: false }),
            Err(source) => Err(RefError::Io(FileError { path, doing: "create", source })),
        }
    }

    fn commit(mut self, bytes: &[u8], durable: bool) -> std::result::Result<(), RefError> {
        let io = |doing| {
            let path = self.path.clone();
            move |source| RefError::Io(FileError { path, doing, source })
        };
        self.file.write_all(bytes).map_err(io("write"))?;
        if durable {
            self.file.sync_all().map_err(io("fsync"))?;
        }
        std::fs::rename(&self.path, &self.target).map_err(io("rename into place"))?;
        self.renamed = true;
        if durable {
            if let Some(dir) = self.target.parent() {
                crate::durable::sync_dir(dir)?;
            }
        }
        Ok(())
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        if !self.renamed {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::Kind;

    #[test]
    fn compare_and_swap() {
        let dir = tempfile::tempdir().unwrap();
        let held = WriteLock::take(dir.path()).unwrap();
        let (a, b) = (ObjectId::hash(Kind::Entry, b"a"), ObjectId::hash(Kind::Entry, b"b"));
        let name = "refs/sessions/s1";
        update(dir.path(), &held, name, &a, Expect::Absent, true).unwrap();
        assert!(update(dir.path(), &held, name, &b, Expect::Absent, true).is_err());
        assert!(matches!(update(dir.path(), &held, name, &b, Expect::Id(b), true), Err(RefError::Moved { .. })));
        update(dir.path(), &held, name, &b, Expect::Id(a), false).unwrap();
        assert_eq!(read(dir.path(), name).unwrap(), Some(b));
        assert_eq!(list(dir.path()).unwrap(), [(name.to_string(), b)]);
        assert!(!dir.path().join("refs/sessions/s1.lock").exists());
    }

    #[test]
    fn names_are_checked_and_bad_files_named() {
        for bad in ["sessions/x", "refs/", "refs/a//b", "refs/../x", "refs/a.lock", "refs/a b"] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("refs/sessions")).unwrap();
        std::fs::write(dir.path().join("refs/sessions/x"), "nope\n").unwrap();
        let err = Error::from(read(dir.path(), "refs/sessions/x").unwrap_err());
        assert!(err.message.contains("refs/sessions/x: bad ref file"));
        assert_eq!(err.kind, crate::ErrorKind::Corrupt);
    }

    #[test]
    fn a_lock_left_by_a_dead_writer_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let held = WriteLock::take(dir.path()).unwrap();
        std::fs::create_dir_all(dir.path().join("refs/sessions")).unwrap();
        // What a SIGKILL between the lock and the rename leaves: the lock, holding the new value.
        std::fs::write(dir.path().join("refs/sessions/s1.lock"), "0".repeat(64) + "\n").unwrap();
        let a = ObjectId::hash(Kind::Entry, b"a");
        update(dir.path(), &held, "refs/sessions/s1", &a, Expect::Absent, false).unwrap();
        assert_eq!(read(dir.path(), "refs/sessions/s1").unwrap(), Some(a));
        assert!(!dir.path().join("refs/sessions/s1.lock").exists());
    }

    #[test]
    fn session_ids_never_shape_the_folder_tree() {
        assert_eq!(
            session_ref("0aa11bb2-0000-7000-8000-000000000001"),
            "refs/sessions/0aa11bb2-0000-7000-8000-000000000001"
        );
        let (x, xy, dots) = (session_ref("x"), session_ref("x/y"), session_ref("../../etc"));
        assert_eq!((x.as_str(), xy.as_str()), ("refs/sessions/x", "refs/sessions/hex.782f79"));
        for name in [&x, &xy, &dots, &session_ref(""), &session_ref("a.lock"), &session_ref("é\u{0}")] {
            check_name(name).unwrap();
            assert_eq!(name.matches('/').count(), 2, "{name}");
        }
    }
}

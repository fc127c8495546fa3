//! Refs: named pointers to objects, one small file each under `<store>/refs/`.
//!
//! An update takes `<ref>.lock` (created exclusively), compares the current value when asked
//! (compare-and-swap, like `git update-ref <ref> <new> <old>`), writes the lock file, and renames
//! it over the ref. The rename is what makes the update atomic.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::id::ObjectId;
use crate::{Error, Result};

/// The ref naming a session's latest imported version.
pub fn session_ref(session_id: &str) -> String {
    format!("refs/sessions/{session_id}")
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
pub fn check_name(name: &str) -> Result<()> {
    let bad = |why: &str| {
        Err(Error::user(format!("bad ref name {name:?}: {why}")).hint("ref names look like refs/sessions/<id>"))
    };
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
pub fn read(store: &Path, name: &str) -> Result<Option<ObjectId>> {
    let path = store.join(name);
    match std::fs::read(&path) {
        Ok(bytes) => parse(&path, &bytes).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(format!("cannot read {}", path.display()), e)),
    }
}

fn parse(path: &Path, bytes: &[u8]) -> Result<ObjectId> {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|s| s.strip_suffix('\n'))
        .and_then(|s| s.parse::<ObjectId>().ok())
        .ok_or_else(|| Error::corrupt(format!("{}: bad ref file (want 64 hex digits and a newline)", path.display())))
}

/// Sets `name` to `new` if its current value is what `expect` says. `durable` fsyncs the new
/// file and the folder (a command the user runs for this); imports skip it because their refs can
/// be rebuilt from the session files.
pub fn update(store: &Path, name: &str, new: &ObjectId, expect: Expect, durable: bool) -> Result<()> {
    check_name(name)?;
    let path = store.join(name);
    let dir = path.parent().unwrap_or(store);
    std::fs::create_dir_all(dir).map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
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
        return Err(Error::user(format!("{name} is {is}, not {want}; not updated"))
            .hint("another process moved it; re-read it and retry"));
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
            Err(e) => return Err(Error::user(format!("cannot list {}: {e}", root.display()))),
        };
        let name = entry.path().strip_prefix(store).unwrap_or(entry.path()).to_string_lossy().replace('\\', "/");
        if !entry.file_type().is_file()
            || name.ends_with(".lock")
            || entry.file_name().to_string_lossy().starts_with("tmp-")
        {
            continue;
        }
        let id = std::fs::read(entry.path())
            .map_err(|e| Error::io(format!("cannot read {}", entry.path().display()), e))
            .and_then(|bytes| parse(entry.path(), &bytes));
        refs.push((name, id));
    }
    Ok(refs)
}

/// An exclusively created `<ref>.lock`, removed on drop unless committed.
struct Lock {
    path: PathBuf,
    target: PathBuf,
    file: Option<std::fs::File>,
}

impl Lock {
    fn take(target: &Path) -> Result<Lock> {
        let mut name = target.as_os_str().to_owned();
        name.push(".lock");
        let path = PathBuf::from(name);
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(file) => Ok(Lock { path, target: target.to_path_buf(), file: Some(file) }),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                Err(Error::user(format!("{} exists: another shake is updating this ref", path.display()))
                    .hint("if no shake is running, remove that file"))
            }
            Err(e) => Err(Error::io(format!("cannot create {}", path.display()), e)),
        }
    }

    fn commit(mut self, bytes: &[u8], durable: bool) -> Result<()> {
        let io = |e| Error::io(format!("cannot write {}", self.path.display()), e);
        let mut file = self.file.take().ok_or_else(|| Error::user("ref lock already used"))?;
        file.write_all(bytes).map_err(io)?;
        if durable {
            file.sync_all().map_err(io)?;
        }
        drop(file);
        std::fs::rename(&self.path, &self.target).map_err(io)?;
        if durable {
            if let Some(dir) = self.target.parent() {
                super::pack::sync_dir(dir)?;
            }
        }
        Ok(())
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        if self.file.is_some() {
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
        let (a, b) = (ObjectId::hash(Kind::Entry, b"a"), ObjectId::hash(Kind::Entry, b"b"));
        let name = "refs/sessions/s1";
        update(dir.path(), name, &a, Expect::Absent, true).unwrap();
        assert!(update(dir.path(), name, &b, Expect::Absent, true).is_err());
        assert!(update(dir.path(), name, &b, Expect::Id(b), true).is_err());
        update(dir.path(), name, &b, Expect::Id(a), false).unwrap();
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
        let err = read(dir.path(), "refs/sessions/x").unwrap_err();
        assert!(err.message.contains("refs/sessions/x: bad ref file"));
    }
}

//! Refs: named pointers to objects. They live in the store's packed files ([`super::packed`]),
//! written under the store's write lock; an update compares the current value first when asked
//! (compare-and-swap, like `git update-ref <ref> <new> <old>`). Stores written before the packed
//! form hold them as one small file each under `<store>/refs/`, read when no packed record
//! shadows them ([`read`], [`list_all`]).
//!
//! Names come from the store, never from input as they are: a session id is encoded
//! ([`session_ref`]) so no id can shape the folder tree (`x` and `x/y` are two refs, not a file
//! and a folder of the same name).

use std::path::{Path, PathBuf};

use crate::durable::FileError;
use crate::id::ObjectId;

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

impl RefError {
    /// Tells whether the error is damage in the store (a ref file that does not read), not a
    /// request refused nor a step the system refused.
    pub fn is_damage(&self) -> bool {
        matches!(self, RefError::BadFile { .. })
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
pub fn check_name(name: &str) -> Result<(), RefError> {
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
pub fn read(store: &Path, name: &str) -> Result<Option<ObjectId>, RefError> {
    let path = store.join(name);
    match std::fs::read(&path) {
        Ok(bytes) => parse(&path, &bytes).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(RefError::Io(FileError { path, doing: "read", source })),
    }
}

/// Returns a ref's bytes pointing at `id` (what [`parse`] reads).
pub fn value(id: &ObjectId) -> Vec<u8> {
    format!("{id}\n").into_bytes()
}

/// Parses a ref's bytes (64 hex digits and `\n`); `path` names it in the error.
pub fn parse(path: &Path, bytes: &[u8]) -> Result<ObjectId, RefError> {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|s| s.strip_suffix('\n'))
        .and_then(|s| s.parse::<ObjectId>().ok())
        .ok_or_else(|| RefError::BadFile { path: path.to_path_buf() })
}

/// Checks a compare-and-swap: `current` must be what `expect` says.
pub fn compare(name: &str, current: Option<ObjectId>, expect: Expect) -> Result<(), RefError> {
    let ok = match expect {
        Expect::Any => true,
        Expect::Absent => current.is_none(),
        Expect::Id(old) => current == Some(old),
    };
    if ok {
        return Ok(());
    }
    let is = current.map_or("absent".to_string(), |id| id.to_string());
    let want = match expect {
        Expect::Id(old) => old.to_string(),
        _ => "absent".to_string(),
    };
    Err(RefError::Moved { name: name.to_string(), is, want })
}

/// Refs by name, each with its id or why it cannot be read.
pub type Listed = Vec<(String, Result<ObjectId, RefError>)>;

/// Lists every ref file, sorted by name, each with its id or why it cannot be read.
pub fn list_all(store: &Path) -> Result<Listed, RefError> {
    let root = store.join("refs");
    let mut refs = Vec::new();
    for entry in walkdir::WalkDir::new(&root).sort_by_file_name() {
        let entry = match entry {
            Ok(e) => e,
            Err(e) if e.io_error().is_some_and(|io| io.kind() == std::io::ErrorKind::NotFound) => continue,
            Err(e) => {
                let path = e.path().unwrap_or(&root).to_path_buf();
                let source = e.into_io_error().unwrap_or_else(|| std::io::Error::other("a loop in the folder tree"));
                return Err(RefError::Io(FileError { path, doing: "list", source }));
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
            .and_then(|bytes| parse(entry.path(), &bytes));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::Kind;
    #[cfg(feature = "cli")]
    use crate::Error;

    #[test]
    fn compare_and_swap() {
        let (a, b) = (ObjectId::hash(Kind::Entry, b"a"), ObjectId::hash(Kind::Entry, b"b"));
        compare("refs/x", None, Expect::Absent).unwrap();
        compare("refs/x", Some(a), Expect::Any).unwrap();
        compare("refs/x", Some(a), Expect::Id(a)).unwrap();
        assert!(matches!(compare("refs/x", Some(a), Expect::Absent), Err(RefError::Moved { .. })));
        let err = compare("refs/x", Some(a), Expect::Id(b)).unwrap_err();
        assert_eq!(err.to_string(), format!("refs/x is {a}, not {b}; not updated"));
        assert!(compare("refs/x", None, Expect::Id(b)).unwrap_err().to_string().contains("is absent"));
    }

    #[cfg(feature = "cli")]
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

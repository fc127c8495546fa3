//! What the store recorded of imported session files: the list, one file's record, the
//! session a `SESSION` argument names, the node an import state gives an entry.

use std::path::{Path, PathBuf};

use crate::durable::FileError;
use crate::host::file::Stamp;
use crate::host::SessionFile;
use crate::id::ObjectId;
use crate::store::{Result, StoreError};
use crate::Context;

use super::canonical;
use crate::store::state::{self, FileState, Table};
use crate::store::Store;

/// One imported session file, as the import state records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionInfo {
    /// The session id from the header, if one was seen.
    pub session_id: Option<String>,
    /// The file's absolute path.
    pub path: PathBuf,
    /// The latest version object.
    pub version: ObjectId,
    /// How many versions its chain holds.
    pub versions: u32,
    /// The file size when last imported.
    pub size: u64,
    /// Tree entries in the committed part.
    pub entries: u64,
}

impl SessionInfo {
    fn from_state(head: &FileState) -> SessionInfo {
        SessionInfo {
            session_id: head.session_id.clone(),
            path: PathBuf::from(&head.path),
            version: ObjectId(head.version),
            versions: head.versions,
            size: head.size,
            entries: head.entries,
        }
    }
}

impl Store {
    /// Lists every imported session file, sorted by path. An import state that does not read
    /// is a corrupt-store error naming it (`fsck`'s lenient view: left out, `fsck` names it).
    pub fn sessions(&self) -> Result<Vec<SessionInfo>> {
        let mut sessions = Vec::new();
        for (path, bytes) in self.states()? {
            match state::decode(&path, &bytes) {
                Ok((head, _)) => sessions.push(SessionInfo::from_state(&head)),
                Err(why) => self.packed.refuse(why)?,
            }
        }
        sessions.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(sessions)
    }

    /// Every import state's bytes with where it was read from: the packed records, and the
    /// loose files (stores from before the packed form) no packed record shadows; sorted by name.
    /// Damage that may hide a state or its bytes is a corrupt-store error naming it (`fsck`'s
    /// lenient view: those states left out).
    pub fn states(&self) -> Result<Vec<(PathBuf, Vec<u8>)>> {
        let mut all: std::collections::BTreeMap<String, (PathBuf, Vec<u8>)> = std::collections::BTreeMap::new();
        let dir = self.dir.join("import");
        match std::fs::read_dir(&dir) {
            Ok(read) => {
                for e in read.filter_map(|e| e.ok()) {
                    let file = e.file_name().to_string_lossy().into_owned();
                    if file.starts_with(crate::durable::TMP_PREFIX) {
                        continue;
                    }
                    let Ok(bytes) = std::fs::read(e.path()) else { continue };
                    all.insert(format!("import/{file}"), (e.path(), bytes));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(FileError::at(&dir, "list")(e).into()),
        }
        for name in self.packed.names("import/").map_err(crate::store::damaged)? {
            all.insert(name.to_string(), (PathBuf::new(), Vec::new()));
        }
        let mut states = Vec::with_capacity(all.len());
        for (name, loose) in all {
            match self.packed.resolve(&name) {
                crate::store::packed::Resolved::Found(f, value) => states.push((f.path.join(&name), value.to_vec())),
                crate::store::packed::Resolved::Damaged(what) => {
                    self.packed.refuse(what).map_err(crate::store::damaged)?
                }
                crate::store::packed::Resolved::Missing => states.push(loose),
            }
        }
        Ok(states)
    }

    /// Returns what the store recorded for this session file, if it was imported; a state that
    /// does not read is a corrupt-store error naming it.
    pub fn session(&self, path: &Path) -> Result<Option<SessionInfo>> {
        let key = canonical(path)?;
        Ok(self.read_state(&key)??.map(|(head, _)| SessionInfo::from_state(&head)))
    }

    /// The node id the import gave the latest entry `id` of the file `file` holds the bytes
    /// of, from the file's import state: only when that state describes exactly those bytes by
    /// the identity an unchanged file is trusted by (the file at its path still as `file` read
    /// it, and its size and a real mtime, not a racy one, as the state has them; every line
    /// committed). `None` otherwise: the caller then computes it from the path.
    pub fn imported_node(&self, file: &SessionFile, id: &str) -> Option<ObjectId> {
        let stamp = file.stamp()?;
        if Stamp::of(&file.path).ok()? != stamp || stamp.len != file.raw().len() as u64 {
            return None;
        }
        let (head, rest) = self.read_state(&canonical(&file.path).ok()?).ok()?.ok()??;
        // A racy state remembers mtime 0, never a real one.
        let exact = (head.size, head.mtime_ns) == (stamp.len, stamp.mtime_ns());
        if !exact || head.committed != head.size {
            return None;
        }
        let resume = state::decode_resume(&head, &rest)?;
        let table = Table::of(self, &resume);
        table.find_recent(id).or_else(|| table.map().get(id).copied())
    }

    /// Finds the imported session a `SESSION` argument names: an existing file's import, a file path
    /// the store recorded (the file may be gone), or a session id or unique prefix.
    pub fn find_session(&self, ctx: &Context, arg: &str) -> Result<SessionInfo> {
        let path = Path::new(arg);
        if path.is_file() {
            if let Some(info) = self.session(path)? {
                return Ok(info);
            }
        }
        let sessions = self.sessions()?;
        let full = ctx.cwd.join(path);
        if let Some(info) = sessions.iter().find(|s| s.path == full || s.path == path) {
            return Ok(info.clone());
        }
        session_by_id(&sessions, arg).cloned()
    }
}

/// Finds the one imported session whose id starts with `prefix`.
pub fn session_by_id<'a>(sessions: &'a [SessionInfo], prefix: &str) -> Result<&'a SessionInfo> {
    let hits: Vec<&SessionInfo> =
        sessions.iter().filter(|s| s.session_id.as_deref().is_some_and(|id| id.starts_with(prefix))).collect();
    match hits.as_slice() {
        [one] => Ok(one),
        [] => Err(StoreError::NoSession { prefix: prefix.to_string() }),
        many => Err(StoreError::AmbiguousSession {
            prefix: prefix.to_string(),
            paths: many.iter().map(|s| s.path.clone()).collect(),
        }),
    }
}

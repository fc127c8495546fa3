//! Incremental import of pi session files into the store.
//!
//! Every physical line becomes an entry object (blank and malformed ones too, so the file can be
//! rebuilt byte for byte); every tree entry also gets a node object, `node = H(parent node ‖
//! entry id)` along pi's `parentId` links; each import that changed something records a version.
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

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use crate::append::Appended;
use crate::durable::FileError;
use crate::host::file::{Bytes, Stamp};
use crate::host::{self, Host, HostKind, SessionFile, TreeLine, Warning};
use crate::id::{node_bytes, Kind, ObjectId};
use crate::proof::{Proof, Prover};
use crate::{Context, Error, Result};

use super::pack::PackError;
use super::state::{self, FileState, Hashed, NodeTable, Resume, Table};
use super::version::{self, LineRef, Version};
use super::{refs, times, Batch, Pending, Store};

/// What importing one session file can fail with, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The path names something other than a regular file (a folder, a device).
    #[error("{}: not a file", crate::output::path(path))]
    NotAFile {
        /// The path given.
        path: PathBuf,
    },
    /// The file's absolute path is not UTF-8 (import states are keyed by it).
    #[error("{}: shake needs UTF-8 paths", crate::output::path(path))]
    NotUtf8 {
        /// The absolute path.
        path: PathBuf,
    },
    /// The system refused a step on the file or the store's folders (stat, read, list).
    #[error(transparent)]
    File(#[from] FileError),
    /// Writing the pack failed.
    #[error(transparent)]
    Pack(#[from] PackError),
    /// A step decided in the CLI's terms already: no host reads the file, the store's write
    /// lock, a ref.
    #[error(transparent)]
    Store(#[from] Error),
}

impl From<ImportError> for Error {
    fn from(e: ImportError) -> Error {
        let err = match e {
            ImportError::Pack(p) => return p.into(),
            ImportError::Store(e) => return e,
            ImportError::NotAFile { .. } | ImportError::NotUtf8 { .. } => Error::user(e.to_string()),
            ImportError::File(ref f) => Error::os(f.source.kind(), &e),
        };
        err.caused_by(e)
    }
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

    /// Lists every imported session file, sorted by path. An import state that does not read
    /// is a corrupt-store error naming it (`fsck`'s lenient view: left out, `fsck` names it).
    pub fn sessions(&self) -> Result<Vec<SessionInfo>> {
        let mut sessions = Vec::new();
        for (path, bytes) in self.states()? {
            match state::decode(&path, &bytes) {
                Ok((head, _)) => sessions.push(SessionInfo::from_state(&head)),
                Err(why) => self.packed.refuse(why).map_err(Error::corrupt)?,
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
        for name in self.packed.names("import/").map_err(super::damaged)? {
            all.insert(name.to_string(), (PathBuf::new(), Vec::new()));
        }
        let mut states = Vec::with_capacity(all.len());
        for (name, loose) in all {
            match self.packed.resolve(&name) {
                super::packed::Resolved::Found(f, value) => states.push((f.path.join(&name), value.to_vec())),
                super::packed::Resolved::Damaged(what) => self.packed.refuse(what).map_err(super::damaged)?,
                super::packed::Resolved::Missing => states.push(loose),
            }
        }
        Ok(states)
    }

    /// Returns what the store recorded for this session file, if it was imported; a state that
    /// does not read is a corrupt-store error naming it.
    pub fn session(&self, path: &Path) -> Result<Option<SessionInfo>> {
        let key = canonical(path)?;
        Ok(self.read_state(&key)?.map_err(Error::corrupt)?.map(|(head, _)| SessionInfo::from_state(&head)))
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

    /// The report for a file whose size and mtime match its import state, else `None`.
    fn unchanged(&self, path: &Path) -> Result<Option<ImportReport>, ImportError> {
        let key = canonical(path)?;
        let (size, mtime_ns) = stat(path)?;
        let Ok(Ok(Some((head, _)))) = self.read_state(&key) else { return Ok(None) };
        Ok((head.size == size && head.mtime_ns == mtime_ns).then(|| unchanged_report(path, &head)))
    }
}

/// Finds the one imported session whose id starts with `prefix`.
pub fn session_by_id<'a>(sessions: &'a [SessionInfo], prefix: &str) -> Result<&'a SessionInfo> {
    let hits: Vec<&SessionInfo> =
        sessions.iter().filter(|s| s.session_id.as_deref().is_some_and(|id| id.starts_with(prefix))).collect();
    match hits.as_slice() {
        [one] => Ok(one),
        [] => Err(Error::user(format!("no session file or imported session id {prefix:?}"))
            .hint("name the session file, or run shake import first")),
        many => {
            let paths: Vec<String> = many.iter().map(|s| crate::output::path(&s.path).into_owned()).collect();
            Err(Error::user(format!("session id {prefix:?} matches {} imported files", many.len()))
                .hint(format!("name one of the files: {}", paths.join(", "))))
        }
    }
}

fn unchanged_report(path: &Path, head: &FileState) -> ImportReport {
    ImportReport {
        path: path.to_path_buf(),
        session_id: head.session_id.clone(),
        entries: head.entries,
        new_objects: 0,
        bytes: 0,
        warnings: Vec::new(),
        version: ObjectId(head.version),
        unchanged: true,
        rewritten: false,
        last_entry: None,
    }
}

/// Where an import starts reading and what it continues from.
struct Base {
    start: usize,
    resume: Resume,
    parent: Option<ObjectId>,
    session_id: Option<String>,
    versions: u32,
    rewritten: bool,
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

/// One file's import worked out against the store as its batch found it, nothing written yet:
/// the objects to add, in order, and the records to set. Working it out only reads (the file,
/// the store), so `import_files` prepares files on other threads; [`Prepared::apply`] writes.
pub(super) struct Prepared {
    /// The report, but for `new_objects` (counted as the objects are added).
    report: ImportReport,
    objects: Objects,
    /// Packed records to set: the import state, the session's ref.
    records: Vec<(String, Vec<u8>)>,
    /// The times record (its name) to add an import time of the new version to.
    time: Option<(String, ObjectId)>,
}

impl Prepared {
    /// An import that adds nothing.
    fn report(report: ImportReport) -> Prepared {
        Prepared { report, objects: Objects::default(), records: Vec::new(), time: None }
    }

    /// How many bytes it holds (of the file, and made for it) until it is applied.
    pub(super) fn held(&self) -> usize {
        self.objects.file.as_ref().map_or(0, |f| f.len()) + self.objects.made.len()
    }

    /// Adds the objects (those `pending` does not hold yet) and records to `pending`, in their
    /// order, and returns the report.
    pub(super) fn apply(self, store: &Store, pending: &mut Pending) -> Result<ImportReport, ImportError> {
        let Prepared { mut report, objects, records, time } = self;
        for (id, kind, bytes) in objects.iter() {
            report.new_objects += u64::from(pending.add_new(store, *id, *kind, bytes)?);
        }
        for (name, bytes) in records {
            pending.set(name, bytes);
        }
        if let Some((name, version)) = time {
            pending.add_time(name, &version);
        }
        Ok(report)
    }
}

/// The objects an import adds, in order, but for those the store holds already: the file's lines
/// (spans of its bytes) and what is made for it (rows, nodes, the version).
#[derive(Default)]
struct Objects {
    /// The bytes the lines' spans are in.
    file: Option<Bytes>,
    made: Vec<u8>,
    list: Vec<(ObjectId, Kind, Span)>,
}

/// Where an object's bytes are in [`Objects`].
enum Span {
    File(std::ops::Range<usize>),
    Made(std::ops::Range<usize>),
}

impl Objects {
    fn of(file: &Bytes) -> Objects {
        Objects { file: Some(file.clone()), ..Objects::default() }
    }

    /// Adds the object of the file's bytes `range` unless `store` holds it; returns its id.
    fn line(&mut self, store: &Store, kind: Kind, range: std::ops::Range<usize>) -> ObjectId {
        let bytes = self.file.as_ref().map_or(&[][..], |f| &f[range.clone()]);
        let id = ObjectId::hash(kind, bytes);
        if !store.contains(&id) {
            self.list.push((id, kind, Span::File(range)));
        }
        id
    }

    /// Adds an object of `bytes` made for the import unless `store` holds it; returns its id.
    fn made(&mut self, store: &Store, kind: Kind, bytes: &[u8]) -> ObjectId {
        let id = ObjectId::hash(kind, bytes);
        self.made_as(store, id, kind, bytes);
        id
    }

    /// [`Objects::made`] of an object whose id (of `kind` and `bytes`) is known.
    fn made_as(&mut self, store: &Store, id: ObjectId, kind: Kind, bytes: &[u8]) {
        if !store.contains(&id) {
            let at = self.made.len();
            self.made.extend_from_slice(bytes);
            self.list.push((id, kind, Span::Made(at..self.made.len())));
        }
    }

    fn iter(&self) -> impl Iterator<Item = (&ObjectId, &Kind, &[u8])> {
        self.list.iter().map(|(id, kind, span)| {
            let bytes = match span {
                Span::File(r) => self.file.as_ref().map_or(&[][..], |f| &f[r.clone()]),
                Span::Made(r) => &self.made[r.clone()],
            };
            (id, kind, bytes)
        })
    }
}

/// Works out the import of one session file (see the module doc) against `store`, with the bytes
/// of `known` (read from `path`) used for a whole read when the file is still the one they were
/// read from.
pub(super) fn prepare(
    store: &Store,
    path: &Path,
    forced: Option<HostKind>,
    known: Option<&SessionFile>,
) -> Result<Prepared, ImportError> {
    prepare_known(store, path, forced, known.map_or(Known::Nothing, Known::Read))
}

/// [`prepare`], with what the caller knows of the file ([`Known`]).
fn prepare_known(
    store: &Store,
    path: &Path,
    forced: Option<HostKind>,
    known: Known<'_>,
) -> Result<Prepared, ImportError> {
    match prepare_from(store, path, forced, known, true)? {
        Ok(prepared) => Ok(prepared),
        // The state's node table did not read where a parent was looked up: the whole file
        // again, as for a damaged state (the state's version stays the parent).
        Err(chunk) => {
            let mut prepared = prepare_from(store, path, forced, known, false)?.map_err(|_| {
                Error::corrupt(format!("{}: the import state's node table does not read", path.display()))
            })?;
            let message = format!("import state: {chunk}; importing the whole file again");
            prepared.report.warnings.insert(0, Warning { line: 0, message });
            Ok(prepared)
        }
    }
}

/// [`prepare_known`], continuing from the state's committed prefix only when `from_state`;
/// `Err` with why, when a chunk of the state's node table did not read.
fn prepare_from(
    store: &Store,
    path: &Path,
    forced: Option<HostKind>,
    known: Known<'_>,
    from_state: bool,
) -> Result<std::result::Result<Prepared, String>, ImportError> {
    let key = canonical(path)?;
    let mut warnings = Vec::new();
    // A damaged packed record refuses (the versions it named would lose their chain); a state
    // that does not decode is read as absent.
    let previous = store.read_state(&key)?.unwrap_or_else(|why| {
        warnings.push(Warning { line: 0, message: format!("{why}; importing the whole file again") });
        None
    });
    let (size, mtime_ns) = stat(path)?;
    let mut made = None;
    if let Some((head, _)) = &previous {
        if head.size == size && head.mtime_ns == mtime_ns {
            return Ok(Ok(Prepared::report(unchanged_report(path, head))));
        }
    }
    // A file that grew is read from where the last import stopped, its prefix checked by
    // its proof as it streams by (or, after this process's own append, trusted: `read_own`);
    // anything else (no state, a changed prefix) is read whole.
    let tail = match previous.as_ref().filter(|_| from_state) {
        Some((head, rest)) => match state::decode_resume(head, rest) {
            Some(resume) => {
                let own = match known {
                    Known::Appended(own) => Some(own),
                    _ => None,
                };
                let trusted = match own {
                    Some(own) => read_own(path, (&key, head), own, forced)?,
                    None => None,
                };
                let read = match (trusted, known.file().filter(|f| f.stamp().is_some_and(|s| still(path, s)))) {
                    (Some(read), _) => Some(read),
                    // The caller's bytes are the file's: proven in memory, never read again.
                    (None, Some(file)) => read_known(&key, head, file, forced)?,
                    (None, None) => read_tail(path, head, (size, mtime_ns), forced)?,
                };
                // The lines read are the writer's, byte for byte (the old bytes trusted or
                // proven): their tree is known.
                made =
                    own.filter(|own| read.as_ref().is_some_and(|r| r.file.raw() == &own.bytes[..])).map(|o| o.entries);
                read.map(|read| (read, resume))
            }
            None => None,
        },
        None => None,
    };
    let (read, resume) = match tail {
        Some((read, resume)) => (read, Some(resume)),
        None => (read_whole(path, forced, known.file())?, None),
    };
    if let Some((head, rest)) = &previous {
        let same = match head.file.proof() {
            Some(proof) => *proof == read.proof,
            None => read.origin == 0 && head.file.holds(read.file.raw()),
        };
        if same {
            // Touched, not changed: remember the new mtime so the next check is a stat again
            // (a state of format 2 gets proofs: the file was read whole to check it).
            let prefix = match (&head.prefix, usize::try_from(head.committed)) {
                (Hashed::Plain(_), Ok(committed)) if committed <= read.file.raw().len() => {
                    Hashed::Proof(Proof::of(&read.file.raw()[..committed]))
                }
                (prefix, _) => prefix.clone(),
            };
            let file = Hashed::Proof(read.proof.clone());
            let touched = FileState { size, mtime_ns: remembered_mtime(mtime_ns), prefix, file, ..head.clone() };
            let mut prepared = Prepared::report(unchanged_report(path, &touched));
            // Proven again moments after a write, the state is the one stored (its mtime still
            // 0): nothing to write.
            if touched != *head {
                let resume = resume.or_else(|| state::decode_resume(head, rest)).unwrap_or_default();
                let encoded = state::encode(store, &touched, &resume)?;
                for (id, bytes) in &encoded.tables {
                    prepared.objects.made_as(store, *id, Kind::Table, bytes);
                }
                prepared.records.push((state::name(&key), encoded.state));
            }
            return Ok(Ok(prepared));
        }
    }
    let base = match (resume, previous) {
        (Some(resume), Some((head, _))) => Base {
            // Where the new lines start (the read may hold the bytes before it too: `read_known`).
            start: head.committed as usize,
            resume,
            parent: Some(ObjectId(head.version)),
            session_id: head.session_id,
            versions: head.versions,
            rewritten: false,
        },
        (_, previous) => base(previous, read.file.raw(), from_state),
    };
    let Read { host, file, origin, mut prover, proof } = read;
    // `file` holds the file from byte `origin`; `base.start` is a file offset.
    let bytes = file.raw();
    let start = base.start - origin;
    let mut resume = base.resume;
    let appended_to = base.parent.as_ref().filter(|_| base.start > 0).map(|p| (p, base.session_id.is_some()));
    let rows = row_session(store, host, appended_to, &bytes[start..])?;
    let mut objects = Objects::of(file.bytes());
    let read =
        read_lines(store, host, (&file, start, made), (&mut resume, rows.as_deref()), &mut warnings, &mut objects);
    if let Some(why) = read.failed {
        return Ok(Err(why));
    }
    let session_id = read.session_id.or(base.session_id);
    let version = Version {
        parent: base.parent,
        offset: base.start as u64,
        newline: bytes.is_empty() || bytes.ends_with(b"\n"),
        session: rows,
        items: version::items(&read.lines),
    };
    let version_id = objects.made(store, Kind::Version, &version.encode());
    let mut records = Vec::new();
    if let Some(sid) = &session_id {
        let name = refs::session_ref(sid);
        match refs::check_name(&name) {
            Ok(()) => records.push((name, refs::value(&version_id))),
            Err(_) => warnings.push(Warning {
                line: 0,
                message: format!("session id {sid:?} cannot name a ref; the session is listed by path only"),
            }),
        }
    }
    let committed = read.committed;
    let head = FileState {
        path: key,
        size,
        mtime_ns: remembered_mtime(mtime_ns),
        committed: (origin + committed) as u64,
        prefix: Hashed::Proof(match committed == bytes.len() {
            true => proof.clone(),
            false => {
                prover.update(&bytes[..committed]);
                prover.proof()
            }
        }),
        file: Hashed::Proof(proof),
        version: version_id.0,
        session_id: session_id.clone(),
        versions: base.versions + 1,
        entries: resume.entries,
        format: state::VERSION,
    };
    let encoded = state::encode(store, &head, &resume)?;
    for (id, bytes) in &encoded.tables {
        objects.made_as(store, *id, Kind::Table, bytes);
    }
    records.push((state::name(&head.path), encoded.state));
    let report = ImportReport {
        path: path.to_path_buf(),
        session_id,
        entries: head.entries,
        new_objects: 0,
        bytes: (bytes.len() - start) as u64,
        warnings,
        version: version_id,
        unchanged: false,
        rewritten: base.rewritten,
        last_entry: read.last_entry,
    };
    Ok(Ok(Prepared { report, objects, records, time: Some((times::name(&head.path), version_id)) }))
}

/// The session id to take out of rows ([`super::row`]) for a host that keys rows without it:
/// for lines appended to version `parent`, its id; else the first line of `lines` that
/// names one as its own. The same id as [`crate::nodes`] takes out of a loaded session (its
/// header's). `parent` comes with whether its file named a session already: a version
/// stored before rows were keyed so lists entries, and lines appended to it stay entries,
/// so that the file's nodes keep one rule (until a rewrite imports it whole).
fn row_session(
    store: &Store,
    host: &dyn Host,
    parent: Option<(&ObjectId, bool)>,
    lines: &[u8],
) -> Result<Option<String>, ImportError> {
    // Only a host whose folds are forks (copies of the rows under a new id) keys rows so.
    let host::Writer::Fork(forks) = host.writer() else { return Ok(None) };
    if let Some((parent, named)) = parent {
        match store.version(parent)?.session {
            Some(id) => return Ok(Some(id)),
            None if named => return Ok(None),
            None => {}
        }
    }
    let mut ids = lines.split(|&b| b == b'\n').filter_map(|l| forks.row_session_id(&String::from_utf8_lossy(l)));
    Ok(ids.next().filter(|id| super::row::safe(id)))
}

/// One line's id and parent, as this process wrote it.
type Written<'a> = (&'a str, Option<&'a str>);

/// Adds every line of `file` from byte `start` on to `objects`, and a node for each tree entry,
/// advancing `resume`; with `rows` (a session id), lines naming it become row objects without
/// it. The file's line table and decoded text are used as they are: each line is hashed and
/// parsed, never split or checked for UTF-8 again. With `made` (the lines' ids and parents, as
/// this process wrote them: one per line from `start`), the lines are not parsed.
fn read_lines(
    store: &Store,
    host: &dyn Host,
    (file, start, made): (&SessionFile, usize, Option<&[Written<'_>]>),
    (resume, rows): (&mut Resume, Option<&str>),
    warnings: &mut Vec<Warning>,
    objects: &mut Objects,
) -> ReadLines {
    // Parents are looked up among this import's entries, then the state's (`Parents`); the new
    // ones join the state's inline entries at the end, in file order.
    let (chunks, inline) = (std::mem::take(&mut resume.chunks), std::mem::take(&mut resume.inline));
    let last = resume.last.clone();
    let old = Table::new(store, (&chunks, last.as_ref()), &inline);
    let mut parents = Parents { fresh: HashMap::default(), old: &old, all: None };
    let mut added = NodeTable::default();
    let first = file.lines.partition_point(|l| l.raw.start < start);
    // Written by this process after a header of pi's tree rules (ids, from version 2 on).
    let made = made.filter(|m| m.len() == file.lines.len() - first && resume.pi_version.is_some_and(|v| v >= 2));
    let mut out = ReadLines {
        lines: Vec::with_capacity(file.lines.len() - first),
        committed: start,
        session_id: None,
        last_entry: None,
        failed: None,
    };
    let len = file.raw().len();
    for (n, line) in file.lines[first..].iter().enumerate() {
        let entry_id = match rows.and_then(|id| super::row::take_out(file.line_raw(line), id)) {
            Some(row) => objects.made(store, Kind::Row, &row),
            None => objects.line(store, Kind::Entry, line.raw.clone()),
        };
        out.lines.push(LineRef { entry: entry_id, node: None, parent: None });
        if line.raw.end == len {
            warnings.push(Warning {
                line: resume.lines as usize + 1,
                message: "partial last line (no trailing newline); stored as is, read as an entry once it is finished"
                    .into(),
            });
            break;
        }
        resume.lines += 1;
        let number = resume.lines as usize;
        let tree = match made {
            Some(made) => {
                let (id, parent) = made[n];
                let parent = parent.filter(|p| !p.is_empty()).and_then(|p| parents.get(p));
                Line::Entry { id: Some(id.to_string()), parent }
            }
            None => tree_line(host, file.line_text(line), resume, &mut parents),
        };
        match tree {
            Line::Skip => {}
            Line::Warn(message) => warnings.push(Warning { line: number, message }),
            Line::Header { id, version } => {
                resume.pi_version = Some(version);
                out.session_id = Some(id);
            }
            Line::Entry { id, parent } => {
                let node = objects.made(store, Kind::Node, &node_bytes(parent.as_ref(), &entry_id));
                if let Some(last) = out.lines.last_mut() {
                    (last.node, last.parent) = (Some(node), parent);
                }
                if let Some(id) = &id {
                    added.push(id, &node);
                    parents.fresh.insert(id.clone(), node);
                }
                out.last_entry = Some((id, node));
                resume.last_node = Some(node.0);
                resume.entries += 1;
            }
        }
        out.committed = line.raw.end + 1;
    }
    out.failed = old.failed().map(|id| format!("node table chunk {id} does not read"));
    drop(parents);
    (resume.chunks, resume.inline) = (chunks, inline);
    resume.inline.append(added);
    out
}

/// What reading lines produced.
struct ReadLines {
    /// Every physical line read (a partial last one included).
    lines: Vec<LineRef>,
    /// Offset just past the last complete line.
    committed: usize,
    /// The header's session id, when the header was among the lines read.
    session_id: Option<String>,
    /// The last tree entry read: its id and node.
    last_entry: Option<(Option<String>, ObjectId)>,
    /// Why a chunk of the state's node table did not read, when a parent lookup reached one
    /// (what was read is then not to be trusted).
    failed: Option<String>,
}

/// What one complete line is to the tree, with the parent resolved to its node.
enum Line {
    /// Blank: nothing to say.
    Skip,
    /// Not part of the tree, for this reason.
    Warn(String),
    /// The session header.
    Header { id: String, version: u64 },
    /// A tree entry: its host id (none in formats without ids) and its parent's node (none at a
    /// root).
    Entry { id: Option<String>, parent: Option<ObjectId> },
}

/// Finds a parent's node by its entry id: among the entries this import read (`fresh`), then the
/// state's last few, then (the map built once, on the first id not among those) all of the
/// state's. An id that repeats names its latest entry, as in pi's own lookup.
struct Parents<'t, 'a> {
    fresh: HashMap<String, ObjectId, foldhash::fast::RandomState>,
    old: &'t Table<'a>,
    all: Option<HashMap<&'a str, ObjectId>>,
}

impl Parents<'_, '_> {
    fn get(&mut self, id: &str) -> Option<ObjectId> {
        if let Some(node) = self.fresh.get(id) {
            return Some(*node);
        }
        if let Some(node) = self.old.find_recent(id) {
            return Some(node);
        }
        let old = self.old;
        self.all.get_or_insert_with(|| old.map()).get(id).copied()
    }
}

/// Reads one complete line's text (as the host decodes the file: invalid UTF-8 as U+FFFD).
fn tree_line(host: &dyn Host, text: &str, resume: &Resume, parents: &mut Parents<'_, '_>) -> Line {
    match host.tree_line(text, resume.pi_version) {
        TreeLine::Skip => Line::Skip,
        TreeLine::Warn(message) => Line::Warn(message),
        TreeLine::Header { id, version } => Line::Header { id, version },
        // No ids: the entry before is the parent.
        TreeLine::Entry { id: None, .. } => Line::Entry { id: None, parent: resume.last_node.map(ObjectId) },
        TreeLine::Entry { id: Some(id), parent } => {
            let parent = parent.and_then(|p| parents.get(&p));
            Line::Entry { id: Some(id), parent }
        }
    }
}

/// What the caller of an import knows of the file already.
#[derive(Clone, Copy)]
enum Known<'a> {
    Nothing,
    /// Its bytes, read by the caller.
    Read(&'a SessionFile),
    /// An append the caller made to it.
    Appended(&'a OwnAppend<'a>),
}

impl<'a> Known<'a> {
    fn file(self) -> Option<&'a SessionFile> {
        match self {
            Known::Read(file) => Some(file),
            _ => None,
        }
    }
}

/// A file's bytes as an import reads them: from byte `origin` on (0: the whole file), with the
/// proof of the bytes before `origin` still open and the whole file's proof.
struct Read<'a> {
    host: &'static dyn Host,
    file: ReadFile<'a>,
    origin: usize,
    prover: Prover,
    proof: Proof,
}

/// The bytes read with their lines: the caller's read of the whole file, or this import's.
enum ReadFile<'a> {
    Known(&'a SessionFile),
    Read(SessionFile),
}

impl std::ops::Deref for ReadFile<'_> {
    type Target = SessionFile;
    fn deref(&self) -> &SessionFile {
        match self {
            ReadFile::Known(file) => file,
            ReadFile::Read(file) => file,
        }
    }
}

/// Reads the whole file (until the path shows the same file before and after: a version is
/// never a mix of two writes, an OMP rewrite mid-read) and finds its host. The bytes of `known`
/// stand for the read when the path still shows the file they were read from (the command
/// that imports has read it: it is then held once, not twice).
fn read_whole<'a>(
    path: &Path,
    forced: Option<HostKind>,
    known: Option<&'a SessionFile>,
) -> Result<Read<'a>, ImportError> {
    let now = known.and_then(SessionFile::stamp).and_then(|_| Stamp::of(path).ok());
    let file = match known.filter(|k| now.is_some() && k.stamp() == now) {
        Some(known) => ReadFile::Known(known),
        None => ReadFile::Read(crate::hosts::read(path).map_err(FileError::at(path, "read"))?),
    };
    let host = crate::hosts::detect(&file, forced)?;
    let proof = Proof::of(file.raw());
    Ok(Read { host, file, origin: 0, prover: Prover::default(), proof })
}

/// How much of the committed prefix is kept to find the file's host (its header, its first
/// conversation row).
const HEAD_BYTES: usize = 1 << 20;

/// Reads only what follows the committed prefix of `head`, streaming the prefix through its
/// proof without holding it. `None` (read the whole file instead) when the prefix changed, the
/// file changed while read (its size and mtime are not `stat`'s any more), its first MiB does
/// not decide its host, or the state is of format 2 (its digest is checked on a whole read).
fn read_tail(
    path: &Path,
    head: &FileState,
    stat_before: (u64, u64),
    forced: Option<HostKind>,
) -> Result<Option<Read<'static>>, ImportError> {
    use std::io::Read as _;
    let (Ok(committed), Some(proof)) = (usize::try_from(head.committed), head.prefix.proof()) else {
        return Ok(None);
    };
    if committed == 0 || head.committed > stat_before.0 || proof.len != head.committed {
        return Ok(None);
    }
    let io = FileError::at(path, "read");
    let mut file = std::fs::File::open(path).map_err(&io)?;
    let mut prover = Prover::default();
    let mut first = Vec::new();
    let mut buf = vec![0; HEAD_BYTES.min(committed)];
    let mut left = committed;
    while left > 0 {
        let n = file.read(&mut buf[..left.min(HEAD_BYTES)]).map_err(&io)?;
        if n == 0 {
            return Ok(None); // shorter than `stat` said: it changed
        }
        prover.update(&buf[..n]);
        if first.len() < HEAD_BYTES {
            first.extend_from_slice(&buf[..n.min(HEAD_BYTES - first.len())]);
        }
        left -= n;
    }
    if prover.proof() != *proof {
        return Ok(None);
    }
    let mut data = Vec::new();
    file.read_to_end(&mut data).map_err(&io)?;
    if stat(path)? != stat_before || (committed + data.len()) as u64 != stat_before.0 {
        return Ok(None);
    }
    let Some(host) = head_host(path, first, forced) else { return Ok(None) };
    Ok(Some(tail_read(path, host, data.into(), committed, prover)))
}

/// Tells whether the path still shows the file of `stamp` (same inode, size and mtime).
fn still(path: &Path, stamp: Stamp) -> bool {
    Stamp::of(path).ok() == Some(stamp)
}

/// [`read_tail`] of a file the caller has read whole (`file`, still the one at its path): the
/// committed prefix is proven from those bytes instead of read again, and the proof is
/// remembered with the file's stamp ([`Proven`]). `None` (read the whole file instead) when the
/// prefix changed or the state is of format 2.
fn read_known<'a>(
    key: &str,
    head: &FileState,
    file: &'a SessionFile,
    forced: Option<HostKind>,
) -> Result<Option<Read<'a>>, ImportError> {
    let (Ok(committed), Some(proof), Some(stamp)) =
        (usize::try_from(head.committed), head.prefix.proof(), file.stamp())
    else {
        return Ok(None);
    };
    let bytes = file.raw();
    if committed == 0 || committed > bytes.len() || proof.len != head.committed {
        return Ok(None);
    }
    let mut prover = Prover::default();
    prover.update(&bytes[..committed]);
    if prover.proof() != *proof {
        return Ok(None);
    }
    prover.update(&bytes[committed..]);
    let whole = prover.proof();
    Proven::remember(key, stamp, &whole);
    let host = crate::hosts::detect(file, forced)?;
    Ok(Some(Read { host, file: ReadFile::Known(file), origin: 0, prover: Prover::default(), proof: whole }))
}

/// What this process proved of a file's bytes by their content: the file's key, its stamp
/// then, and the proof. The import after the process's own append to that file trusts the old
/// bytes by it when the append found the file at that stamp ([`read_own`]), though the state,
/// written within a second of an earlier write, has no mtime to compare (as an undo right after
/// a fold finds it): the bytes were hashed moments ago in this process, not a second time.
#[derive(Clone, PartialEq, Eq)]
struct Proven {
    key: String,
    stamp: Stamp,
    proof: Proof,
}

/// What this process proved, by file key (a command proves one or two files; a test process
/// many, on several threads).
static PROVEN: std::sync::Mutex<Vec<Proven>> = std::sync::Mutex::new(Vec::new());

impl Proven {
    fn remember(key: &str, stamp: Stamp, proof: &Proof) {
        let mut all = PROVEN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        all.retain(|p| p.key != key);
        all.push(Proven { key: key.to_string(), stamp, proof: proof.clone() });
    }

    /// Tells whether this process proved the file of `key`, at `stamp`, to hold the bytes of
    /// `proof`.
    fn holds(key: &str, stamp: Stamp, proof: &Proof) -> bool {
        let all = PROVEN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        all.iter().any(|p| p.key == key && p.stamp == stamp && p.proof == *proof)
    }
}

/// The read of the bytes after `origin`, `prover` holding the proof of those before.
fn tail_read(path: &Path, host: &'static dyn Host, data: Bytes, origin: usize, prover: Prover) -> Read<'static> {
    let mut whole = prover.clone();
    whole.update(&data);
    let file = ReadFile::Read(SessionFile::from_shared(path.to_path_buf(), data));
    Read { host, file, origin, prover, proof: whole.proof() }
}

/// The host of a file from its first bytes' complete lines (pi's header, OMP's first line, Claude
/// Code's first conversation row); `None` when they decide none (a head of blank lines).
fn head_host(path: &Path, mut first: Vec<u8>, forced: Option<HostKind>) -> Option<&'static dyn Host> {
    first.truncate(memchr::memrchr(b'\n', &first).map_or(0, |i| i + 1));
    if first.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    crate::hosts::detect(&SessionFile::from_bytes(path.to_path_buf(), first), forced).ok()
}

/// The read after this process's own append (`appended`), trusting the old bytes without
/// hashing them whole; `None` (then [`read_tail`]) unless all of this holds:
///
/// - the import state describes the file exactly as the append found it, under its lock, on
///   the descriptor it wrote (same size, same mtime, the state's mtime a real one: an import
///   within a second of a write remembers 0) and its committed prefix is the whole of it: the
///   same identity (size and mtime) the store trusts to call a file unchanged with one `stat`;
///   or, when the state's mtime is racy (0), this process proved the file's bytes to be the
///   state's by their content at the very stamp the append found ([`Proven`]);
/// - the path shows the file the append left (same inode, size and mtime) before and after
///   the bytes are read, so no writer came in between (pi does not rewrite in place, and a
///   rename over the file changes the inode);
/// - the last 1 MiB block of the old bytes, re-read, still gives the state's proof (a writer
///   that changed bytes just before the end is seen);
/// - the bytes after the old ones, read back, are the bytes the append wrote.
///
/// The new state's mtime is our write's, less than a second old, so it is remembered as 0: the
/// next import proves the whole file by its content again. What this skips is the second pass
/// over the old bytes within one command, which read and checked them already.
fn read_own(
    path: &Path,
    (key, head): (&str, &FileState),
    own: &OwnAppend<'_>,
    forced: Option<HostKind>,
) -> Result<Option<Read<'static>>, ImportError> {
    let appended = own.append;
    use std::os::unix::fs::FileExt;
    let Some(proof) = head.prefix.proof() else { return Ok(None) };
    let described = match head.mtime_ns {
        // Racy: the state has no mtime, but this process may have proven the bytes at the stamp.
        0 => head.size == appended.before.len && Proven::holds(key, appended.before, proof),
        mtime => (head.size, mtime) == (appended.before.len, appended.before.mtime_ns()),
    };
    let trusted = appended.foreign.is_none()
        && described
        && head.committed == head.size
        && proof.len == head.committed
        && appended.after.len > head.size;
    let (Ok(committed), Ok(len)) = (usize::try_from(head.committed), usize::try_from(appended.after.len)) else {
        return Ok(None);
    };
    if !trusted || Stamp::of(path).ok() != Some(appended.after) {
        return Ok(None);
    }
    if len - committed != own.bytes.len() {
        return Ok(None);
    }
    let io = FileError::at(path, "read");
    let file = std::fs::File::open(path).map_err(&io)?;
    let mut first = vec![0; HEAD_BYTES.min(committed)];
    let resume_at = proof.resume_at() as usize;
    let mut block = vec![0; committed - resume_at];
    if file.read_exact_at(&mut first, 0).is_err()
        || file.read_exact_at(&mut block, resume_at as u64).is_err()
        || !crate::append::reads_back(&file, committed as u64, own.bytes)
    {
        return Ok(None);
    }
    if Stamp::of(path).ok() != Some(appended.after) {
        return Ok(None);
    }
    let mut prover = proof.prover();
    prover.update(&block);
    if prover.proof() != *proof {
        return Ok(None);
    }
    let Some(host) = head_host(path, first, forced) else { return Ok(None) };
    Ok(Some(tail_read(path, host, own.bytes.clone(), committed, prover)))
}

/// Decides where to start: after the committed prefix when the file still starts with it, else
/// from the first byte with the old version as parent.
/// With `from_state` false the state's committed prefix is not continued from (its node table
/// did not read).
fn base(previous: Option<(FileState, Vec<u8>)>, bytes: &[u8], from_state: bool) -> Base {
    let Some((head, rest)) = previous else {
        return Base {
            start: 0,
            resume: Resume::default(),
            parent: None,
            session_id: None,
            versions: 0,
            rewritten: false,
        };
    };
    let committed = usize::try_from(head.committed).unwrap_or(usize::MAX);
    let kept = from_state && committed <= bytes.len() && head.prefix.holds(&bytes[..committed]);
    let resume = state::decode_resume(&head, &rest).filter(|_| kept);
    match resume {
        Some(resume) => Base {
            start: committed,
            resume,
            parent: Some(ObjectId(head.version)),
            session_id: head.session_id,
            versions: head.versions,
            rewritten: false,
        },
        None => Base {
            start: 0,
            resume: Resume::default(),
            parent: Some(ObjectId(head.version)),
            session_id: None,
            versions: head.versions,
            rewritten: true,
        },
    }
}

/// The absolute, symlink-free path that keys a file's import state.
fn canonical(path: &Path) -> Result<String, ImportError> {
    let full = std::fs::canonicalize(path).map_err(FileError::at(path, "read"))?;
    full.into_os_string().into_string().map_err(|p| ImportError::NotUtf8 { path: PathBuf::from(p) })
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
pub fn path_nodes(session: &host::Session<'_>, leaf: usize) -> Result<Vec<ObjectId>> {
    crate::nodes::path_nodes(session, leaf).map_err(|c| Error::user(format!("{}: {c}", session.file.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_nodes_match_what_import_stored() {
        let dir = tempfile::tempdir().unwrap();
        let text = concat!(
            "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n",
            "{\"type\":\"message\",\"id\":\"a\",\"parentId\":null}\n",
            "{\"type\":\"message\",\"id\":\"b\",\"parentId\":\"a\"}\n",
            "{\"type\":\"message\",\"id\":\"c\",\"parentId\":\"a\"}\n",
        );
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, text).unwrap();
        let mut store = Store::open_dir(&dir.path().join("store")).unwrap();
        let report = store.import_file(&path, None).unwrap();
        // 4 entries, 3 nodes, the version and the node table's chunk.
        assert_eq!((report.entries, report.new_objects), (3, 9));
        let file = crate::hosts::read(&path).unwrap();
        let session = crate::hosts::load(&file, None).unwrap();
        let nodes = path_nodes(&session, 2).unwrap();
        assert_eq!(nodes.len(), 2);
        assert!(nodes.iter().all(|n| store.read_kind(n, Kind::Node).is_ok()));
        let version = store.version(&report.version).unwrap();
        assert!(version.items.contains(&version::Item::Path { node: path_nodes(&session, 1).unwrap()[1], count: 2 }));
        assert_eq!(store.version_bytes(&report.version).unwrap(), text.as_bytes());
        assert!(store.import_file(&path, None).unwrap().unchanged);
    }

    /// A file proven unchanged within a second of its last write (its state's mtime 0, and
    /// still 0) leaves the store as it was: no state is written again.
    #[test]
    fn a_racy_file_proven_unchanged_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n")
            .unwrap();
        let store_dir = dir.path().join("store");
        let mut store = Store::open_dir(&store_dir).unwrap();
        store.import_file(&path, None).unwrap();
        let packed = || std::fs::read_dir(store_dir.join("packed")).unwrap().count();
        let before = packed();
        assert!(store.import_file(&path, None).unwrap().unchanged);
        assert_eq!(packed(), before);
        // A minute later the mtime is trusted: the state is written once with it.
        let minute_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        std::fs::File::options().write(true).open(&path).unwrap().set_modified(minute_ago).unwrap();
        assert!(store.import_file(&path, None).unwrap().unchanged);
        assert_eq!(packed(), before + 1);
    }

    /// The import state's node of an entry is the one the path gives, and is told only while
    /// the state describes the bytes read by the identity the store trusts (size and a real
    /// mtime): not for a state imported moments after a write, nor once the file changed.
    #[test]
    fn the_node_an_import_state_tells_is_the_paths_and_only_for_the_bytes_it_describes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let text = concat!(
            "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n",
            "{\"type\":\"message\",\"id\":\"a\",\"parentId\":null}\n",
            "{\"type\":\"message\",\"id\":\"b\",\"parentId\":\"a\"}\n",
            "{\"type\":\"message\",\"id\":\"c\",\"parentId\":\"a\"}\n",
        );
        let age = |when| std::fs::File::options().write(true).open(&path).unwrap().set_modified(when).unwrap();
        let minute_ago = || std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        std::fs::write(&path, text).unwrap();
        let mut store = Store::open_dir(&dir.path().join("store")).unwrap();
        store.import_file(&path, None).unwrap();
        let file = crate::hosts::read(&path).unwrap();
        // Imported within a second of its write: the state's mtime is not trusted.
        assert_eq!(store.imported_node(&file, "b"), None);
        age(minute_ago());
        store.import_file(&path, None).unwrap();
        let file = crate::hosts::read(&path).unwrap();
        let session = crate::hosts::load(&file, None).unwrap();
        for (id, leaf) in [("b", 1), ("c", 2)] {
            assert_eq!(store.imported_node(&file, id), path_nodes(&session, leaf).unwrap().last().copied(), "{id}");
        }
        assert_eq!(store.imported_node(&file, "x"), None);
        // The file changed after it was read and imported: nothing is told.
        std::fs::write(&path, format!("{text}{{\"type\":\"message\",\"id\":\"d\",\"parentId\":\"c\"}}\n")).unwrap();
        age(minute_ago());
        assert_eq!(store.imported_node(&file, "b"), None);
    }

    /// The import after this process's own append reads only the last MiB of the old bytes and
    /// the new ones, and gives the state a whole import would; a change of old bytes that keeps
    /// the file's size and mtime is caught in that last MiB, and, like the one-`stat` check of
    /// an unchanged file, not before it.
    #[test]
    fn the_import_after_an_own_append_trusts_what_the_append_saw() {
        use crate::append::{append, Snapshot};
        use crate::proof::BLOCK;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let header = "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n";
        let pad = "x".repeat(1000);
        let mut text = header.to_string();
        let mut parent = "null".to_string();
        // A bit over 2 MiB, so that the prefix has whole blocks before its last one.
        for i in 0..2200 {
            text.push_str(&format!("{{\"type\":\"message\",\"id\":\"e{i}\",\"parentId\":{parent},\"p\":\"{pad}\"}}\n"));
            parent = format!("\"e{i}\"");
        }
        let minute_ago = || std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        let age =
            |path: &Path, when| std::fs::File::options().write(true).open(path).unwrap().set_modified(when).unwrap();
        let state = |store: &Store| store.read_state(&canonical(&path).unwrap()).unwrap().unwrap().unwrap().0;
        let line = |id: &str| format!("{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":\"e2199\"}}\n");
        let own_import = |store: &mut Store, landed: &Appended, id: &str| {
            let mut batch = store.batch().unwrap();
            let bytes = Bytes::from(line(id).into_bytes());
            let own = OwnAppend { append: landed, bytes: &bytes, entries: &[(id, Some("e2199"))] };
            let report = batch.import_appended(&path, None, &own).unwrap();
            batch.commit().unwrap();
            report
        };

        // Appended after an unchanged file: the state a whole import gives, the node chained.
        std::fs::write(&path, &text).unwrap();
        age(&path, minute_ago());
        let mut store = Store::open_dir(&dir.path().join("store")).unwrap();
        store.import_file(&path, None).unwrap();
        let landed = append(&path, &Snapshot::of(text.as_bytes()), line("n1").as_bytes()).unwrap();
        let report = own_import(&mut store, &landed, "n1");
        let whole = std::fs::read(&path).unwrap();
        assert_eq!((report.rewritten, report.bytes), (false, line("n1").len() as u64));
        assert_eq!(store.version_bytes(&report.version).unwrap(), whole);
        let mut fresh = Store::open_dir(&dir.path().join("fresh")).unwrap();
        let from_scratch = fresh.import_file(&path, None).unwrap();
        assert_eq!(report.last_entry, from_scratch.last_entry);
        let (got, want) = (state(&store), state(&fresh));
        assert_eq!((&got.prefix, &got.file, got.committed), (&want.prefix, &want.file, want.committed));
        assert_eq!(got.prefix, Hashed::Proof(Proof::of(&whole)));

        // Old bytes changed in place, size and mtime as the state has them: caught in the last
        // MiB (a new version from the first byte), trusted before it (the prefix kept).
        for (at, caught) in [(whole.len() - 100, true), (BLOCK as usize / 2, false)] {
            let text = std::fs::read(&path).unwrap();
            age(&path, minute_ago());
            store.import_file(&path, None).unwrap();
            let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
            let mut changed = text.clone();
            changed[at] = b'y';
            std::fs::write(&path, &changed).unwrap();
            age(&path, mtime);
            let landed = append(&path, &Snapshot::of(&changed), line(&format!("n{at}")).as_bytes()).unwrap();
            assert_eq!(own_import(&mut store, &landed, &format!("n{at}")).rewritten, caught, "a change at byte {at}");
        }
    }

    /// An own append to a file whose state is racy (mtime 0) trusts the old bytes when this
    /// process proved them by their content (the command's whole read) at the very stamp the
    /// append found: a change before the last MiB that keeps the stamp is then not seen, as
    /// after a state with a real mtime; without that proof the old bytes are proven again.
    #[test]
    fn the_import_after_an_own_append_trusts_a_racy_state_this_process_proved() {
        use crate::append::{append, Snapshot};
        use crate::proof::BLOCK;
        let dir = tempfile::tempdir().unwrap();
        let header = "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n";
        let mut text = header.to_string();
        let mut parent = "null".to_string();
        for i in 0..2200 {
            let pad = "x".repeat(1000);
            text.push_str(&format!("{{\"type\":\"message\",\"id\":\"e{i}\",\"parentId\":{parent},\"p\":\"{pad}\"}}\n"));
            parent = format!("\"e{i}\"");
        }
        let line = "{\"type\":\"message\",\"id\":\"n\",\"parentId\":\"e2199\"}\n";
        // A minute ahead: every import sees a write moments ago, so the state stays racy.
        let ahead = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
        for proved in [true, false] {
            let path = dir.path().join(format!("s-{proved}.jsonl"));
            let set = |bytes: &[u8]| {
                std::fs::write(&path, bytes).unwrap();
                std::fs::File::options().write(true).open(&path).unwrap().set_modified(ahead).unwrap();
            };
            set(text.as_bytes());
            let mut store = Store::open_dir(&dir.path().join(format!("store-{proved}"))).unwrap();
            store.import_file(&path, None).unwrap();
            let key = canonical(&path).unwrap();
            assert_eq!(store.read_state(&key).unwrap().unwrap().unwrap().0.mtime_ns, 0);
            if proved {
                // The command's read, imported: proven in memory, the state unchanged.
                let file = crate::hosts::read(&path).unwrap();
                assert!(store.import_read(&file, None).unwrap().unchanged);
            }
            let mut changed = text.clone().into_bytes();
            changed[BLOCK as usize / 2] = b'y';
            set(&changed);
            let landed = append(&path, &Snapshot::of(&changed), line.as_bytes()).unwrap();
            let bytes = Bytes::from(line.as_bytes().to_vec());
            let own = OwnAppend { append: &landed, bytes: &bytes, entries: &[("n", Some("e2199"))] };
            let mut batch = store.batch().unwrap();
            let report = batch.import_appended(&path, None, &own).unwrap();
            batch.commit().unwrap();
            assert_eq!(report.rewritten, !proved, "proved by this process: {proved}");
        }
    }

    /// After an own append to a file whose state could not trust its mtime (imported within a
    /// second of a write), the old bytes are proven whole, and the appended lines, when they
    /// are exactly the bytes written, still take the writer's tree (a parent the writer names
    /// is believed, not parsed again); any other bytes after the old ones are parsed.
    #[test]
    fn the_import_after_an_own_append_to_a_racy_state_takes_the_writers_tree_of_its_own_bytes() {
        use crate::append::{append, Snapshot};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let text = concat!(
            "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n",
            "{\"type\":\"message\",\"id\":\"a\",\"parentId\":null}\n",
            "{\"type\":\"message\",\"id\":\"b\",\"parentId\":\"a\"}\n",
        );
        let line = |id: &str| format!("{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":\"b\"}}\n");
        let node_of = |store: &Store, id: &str| {
            let state = store.read_state(&canonical(&path).unwrap()).unwrap().unwrap().unwrap();
            let resume = state::decode_resume(&state.0, &state.1).unwrap();
            let node = Table::of(store, &resume).iter_back().find(|(i, _)| *i == id).map(|(_, n)| n);
            node
        };
        std::fs::write(&path, text).unwrap();
        let mut store = Store::open_dir(&dir.path().join("store")).unwrap();
        store.import_file(&path, None).unwrap();
        // The parent of "b" as the writer says it (a lie, to tell whose tree the import took).
        let lie = |store: &mut Store, written: &[u8], said: &str| {
            let landed = append(&path, &Snapshot::of(&std::fs::read(&path).unwrap()), written).unwrap();
            assert_eq!(store.read_state(&canonical(&path).unwrap()).unwrap().unwrap().unwrap().0.mtime_ns, 0);
            let bytes = Bytes::from(line(said).into_bytes());
            let own = OwnAppend { append: &landed, bytes: &bytes, entries: &[(said, Some("a"))] };
            let mut batch = store.batch().unwrap();
            let report = batch.import_appended(&path, None, &own).unwrap();
            batch.commit().unwrap();
            assert!(!report.rewritten);
        };
        let (a, b) = (node_of(&store, "a").unwrap(), node_of(&store, "b").unwrap());
        let node = |parent: &ObjectId, written: &str| {
            ObjectId::node(Some(parent), &ObjectId::hash(Kind::Entry, written.trim_end().as_bytes()))
        };
        // Exactly the bytes written: the writer's parent ("a"), though the line names "b".
        lie(&mut store, line("c").as_bytes(), "c");
        assert_eq!(node_of(&store, "c"), Some(node(&a, &line("c"))));
        // Other bytes than the batch's: parsed, the line's own parent.
        lie(&mut store, line("d").as_bytes(), "x");
        assert_eq!(node_of(&store, "d"), Some(node(&b, &line("d"))));
    }

    /// A chain of `n` entries `e0`… after a header, each the child of the one before.
    fn chain(n: usize) -> String {
        let mut text =
            "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n".to_string();
        for i in 0..n {
            let parent = if i == 0 { "null".to_string() } else { format!("\"e{}\"", i - 1) };
            text.push_str(&format!("{{\"type\":\"message\",\"id\":\"e{i}\",\"parentId\":{parent}}}\n"));
        }
        text
    }

    /// A line `id` whose parent is `parent`.
    fn child(id: &str, parent: &str) -> String {
        format!("{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":\"{parent}\"}}\n")
    }

    /// The node the import state of `path` gives entry `id` (through its node table's chunks).
    fn state_node(store: &Store, path: &Path, id: &str) -> Option<ObjectId> {
        let (head, rest) = store.read_state(&canonical(path).unwrap()).unwrap().unwrap()?;
        let resume = state::decode_resume(&head, &rest)?;
        let table = Table::of(store, &resume);
        let node = table.iter_back().find(|(i, _)| *i == id).map(|(_, n)| n);
        node
    }

    /// The node a fresh store's import of `path` gives entry `id`.
    fn fresh_node(path: &Path, id: &str) -> Option<ObjectId> {
        let dir = tempfile::tempdir().unwrap();
        let mut fresh = Store::open_dir(dir.path()).unwrap();
        fresh.import_file(path, None).unwrap();
        state_node(&fresh, path, id)
    }

    /// A store (in the folder returned) that imported `chain(n)` from `s.jsonl` there.
    fn imported_chain(n: usize) -> (tempfile::TempDir, PathBuf, Store) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, chain(n)).unwrap();
        let mut store = Store::open_dir(&dir.path().join("store")).unwrap();
        store.import_file(&path, None).unwrap();
        (dir, path, store)
    }

    /// The import state of `path`, decoded.
    fn state_of(store: &Store, path: &Path) -> (FileState, Resume) {
        let (head, rest) = store.read_state(&canonical(path).unwrap()).unwrap().unwrap().unwrap();
        let resume = state::decode_resume(&head, &rest).unwrap();
        (head, resume)
    }

    /// Sets the import state record of `path` to `bytes`, as a command's batch does.
    fn set_state(store: &mut Store, path: &Path, bytes: Vec<u8>) {
        let mut batch = store.batch().unwrap();
        batch.pending.set(state::name(&canonical(path).unwrap()), bytes);
        batch.commit().unwrap();
    }

    fn fsck_problems(store: &Store) -> Vec<String> {
        super::super::fsck::check(store.dir(), &|_, _| Ok(None)).unwrap().problems
    }

    fn append(path: &Path, line: &str) {
        let mut text = std::fs::read_to_string(path).unwrap();
        text.push_str(line);
        std::fs::write(path, text).unwrap();
    }

    /// A store whose import state is of format 3 (the table inside the state, as main before
    /// chunks wrote it) imports an append from that table, a parent deep in it found, and
    /// writes format 4 with the table as chunks.
    #[test]
    fn a_format_3_state_imports_an_append_and_is_written_in_format_4() {
        let (_dir, path, mut store) = imported_chain(300);
        let (head, resume) = state_of(&store, &path);
        let mut table = NodeTable::default();
        let mut entries: Vec<(String, ObjectId)> =
            Table::of(&store, &resume).iter_back().map(|(i, n)| (i.to_string(), n)).collect();
        entries.reverse();
        entries.iter().for_each(|(i, n)| table.push(i, n));
        set_state(&mut store, &path, state::encode_format_3(&head, &resume, &table));
        store.refresh().unwrap();
        assert_eq!(store.read_state(&canonical(&path).unwrap()).unwrap().unwrap().unwrap().0.format, 3);
        let line = child("n", "e5");
        append(&path, &line);
        let report = store.import_file(&path, None).unwrap();
        assert_eq!((report.rewritten, report.bytes), (false, line.len() as u64), "{report:?}");
        assert_eq!(store.read_state(&canonical(&path).unwrap()).unwrap().unwrap().unwrap().0.format, state::VERSION);
        assert_eq!(state_node(&store, &path, "n"), fresh_node(&path, "n"));
        assert_eq!(state_node(&store, &path, "e5"), fresh_node(&path, "e5"));
        assert_eq!(fsck_problems(&store), Vec::<String>::new());
    }

    /// A state naming a chunk the store lacks, or holds damaged, is named by fsck; an import
    /// whose parent lookup reaches it reads the file whole again (with a warning) and writes a
    /// sound state, never a node from a table it could not read.
    #[test]
    fn a_missing_or_damaged_chunk_is_named_by_fsck_and_the_file_read_whole_again() {
        let (dir, path, mut store) = imported_chain(100);
        let (head, resume) = state_of(&store, &path);
        assert_eq!(resume.chunks.len(), 1);
        let real = resume.chunks[0];

        // Missing: the state names a chunk no pack holds.
        let missing = state::Chunk { id: ObjectId([9; 32]), entries: real.entries };
        let lacking = Resume { chunks: vec![missing], ..resume.clone() };
        let encoded = state::encode(&store, &head, &lacking).unwrap();
        set_state(&mut store, &path, encoded.state);
        store.refresh().unwrap();
        let problems = fsck_problems(&store);
        assert!(
            problems.iter().any(|p| p.contains(&format!("node table chunk {} is missing", missing.id))),
            "{problems:?}"
        );
        append(&path, &child("n", "e5"));
        let report = store.import_file(&path, None).unwrap();
        assert!(report.rewritten, "read whole again: {report:?}");
        assert!(report.warnings[0].message.contains("does not read"), "{:?}", report.warnings);
        assert_eq!(state_node(&store, &path, "n"), fresh_node(&path, "n"));
        assert_eq!(fsck_problems(&store), Vec::<String>::new());

        // Damaged: a byte of the chunk flipped in its pack.
        let chunk = state_of(&store, &path).1.chunks[0];
        let bytes = state::chunk_bytes(&store, &chunk).unwrap().to_vec();
        let pack = store.packs().iter().find(|p| p.find(&chunk.id).is_some()).unwrap().path.clone();
        let mut packed = std::fs::read(&pack).unwrap();
        let at = packed.windows(bytes.len()).position(|w| w == bytes).unwrap() + bytes.len() / 2;
        packed[at] ^= 0x01;
        std::fs::write(&pack, &packed).unwrap();
        let store = Store::open_dir(&dir.path().join("store")).unwrap();
        let problems = fsck_problems(&store);
        let named = format!("node table chunk {}", chunk.id);
        assert!(problems.iter().any(|p| p.contains(&named) && p.contains("content hashes to")), "{problems:?}");
    }

    /// An import interrupted after its pack (the new chunk in it) and before its state leaves the
    /// old state valid: the store checks clean, and the next import continues from the old state.
    #[test]
    fn a_crash_between_the_chunks_and_the_state_leaves_the_old_state_valid() {
        let (_dir, path, mut store) = imported_chain(100);
        let before = store.read_state(&canonical(&path).unwrap()).unwrap().unwrap().unwrap();
        let line = child("n", "e99");
        append(&path, &line);
        // The import's objects written and durable, its records (state, ref, times) never.
        let prepared = prepare(&store, &path, None, None).unwrap();
        assert!(prepared.objects.list.iter().any(|(_, kind, _)| *kind == Kind::Table));
        let mut batch = store.batch().unwrap();
        for (id, kind, bytes) in prepared.objects.iter() {
            batch.pending.add_new(batch.store, *id, *kind, bytes).unwrap();
        }
        batch.commit().unwrap();
        store.refresh().unwrap();
        assert_eq!(store.read_state(&canonical(&path).unwrap()).unwrap().unwrap().unwrap(), before);
        assert_eq!(fsck_problems(&store), Vec::<String>::new());
        let report = store.import_file(&path, None).unwrap();
        assert_eq!((report.rewritten, report.bytes), (false, line.len() as u64));
        assert_eq!(store.version_bytes(&report.version).unwrap(), std::fs::read(&path).unwrap());
        assert_eq!(state_node(&store, &path, "n"), fresh_node(&path, "n"));
    }

    /// gc keeps the chunks import states name and drops those no state names any more (merged
    /// into a bigger one); the state still reads after it.
    #[test]
    fn gc_keeps_the_chunks_in_use_and_drops_the_merged_ones() {
        let (_dir, path, mut store) = imported_chain(10);
        // 20 entries after 10: the new chunk takes the old one in.
        let mut more = String::new();
        for i in 10..30 {
            more.push_str(&child(&format!("e{i}"), &format!("e{}", i - 1)));
        }
        append(&path, &more);
        store.import_file(&path, None).unwrap();
        let report = store.gc(false).unwrap();
        assert_eq!(report.dropped[Kind::Table.code() as usize - 1], 1, "{report:?}");
        assert_eq!(report.dropped.iter().sum::<u64>(), 1, "{report:?}");
        assert_eq!(fsck_problems(&store), Vec::<String>::new());
        append(&path, &child("n", "e0"));
        let report = store.import_file(&path, None).unwrap();
        assert!(!report.rewritten);
        assert_eq!(state_node(&store, &path, "n"), fresh_node(&path, "n"));
    }

    /// Each failure names its file and says what was being done; the system's refusal keeps its
    /// `io::Error` as the source and becomes an I/O error (exit 4), a wrong kind of path is the
    /// user's (exit 1).
    #[test]
    fn import_errors_name_the_file_and_keep_their_kind() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open_dir(&dir.path().join("store")).unwrap();
        // Reading /proc/self/mem from offset 0 fails with EIO, even for root.
        let mem = Path::new("/proc/self/mem");
        let e = store.import_file(mem, None).unwrap_err();
        let ImportError::File(f) = &e else { panic!("{e:?}") };
        assert_eq!((f.path.as_path(), f.doing, f.source.raw_os_error()), (mem, "read", Some(libc::EIO)));
        let e = Error::from(e);
        assert!(e.message.starts_with("cannot read /proc/self/mem: "), "{}", e.message);
        assert_eq!(e.kind.exit_code(), 4);
        assert!(std::error::Error::source(&e).is_some_and(|s| s.is::<ImportError>()));

        let e = Error::from(store.import_file(dir.path(), None).unwrap_err());
        assert_eq!((e.message, e.kind.exit_code()), (format!("{}: not a file", dir.path().display()), 1));
    }
}

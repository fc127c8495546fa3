//! One file's import worked out against the store, nothing written yet: where it starts (the
//! state's committed prefix or the first byte), the objects it adds and the records it sets.

use std::path::Path;

use crate::host::{self, Host, HostKind, SessionFile, Warning};
use crate::id::{Kind, ObjectId};
use crate::proof::Proof;

use super::lines::{read_lines, Objects};
use super::read::{read_known, read_own, read_tail, read_whole, still, Known, Read};
use super::{canonical, remembered_mtime, stat, ImportError, ImportReport};
use crate::store::state::{self, FileState, Hashed, Resume};
use crate::store::version::{self, Version};
use crate::store::{refs, times, Pending, Store};

impl Store {
    /// The report for a file whose size and mtime match its import state, else `None`.
    pub(super) fn unchanged(&self, path: &Path) -> Result<Option<ImportReport>, ImportError> {
        let key = canonical(path)?;
        let (size, mtime_ns) = stat(path)?;
        let Ok(Ok(Some((head, _)))) = self.read_state(&key) else { return Ok(None) };
        Ok((head.size == size && head.mtime_ns == mtime_ns).then(|| unchanged_report(path, &head)))
    }
}

pub(super) fn unchanged_report(path: &Path, head: &FileState) -> ImportReport {
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

/// One file's import worked out against the store as its batch found it, nothing written yet:
/// the objects to add, in order, and the records to set. Working it out only reads (the file,
/// the store), so `import_files` prepares files on other threads; [`Prepared::apply`] writes.
pub(in crate::store) struct Prepared {
    /// The report, but for `new_objects` (counted as the objects are added).
    report: ImportReport,
    pub(super) objects: Objects,
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
    pub(in crate::store) fn held(&self) -> usize {
        self.objects.held()
    }

    /// Adds the objects (those `pending` does not hold yet) and records to `pending`, in their
    /// order, and returns the report.
    pub(in crate::store) fn apply(self, store: &Store, pending: &mut Pending) -> Result<ImportReport, ImportError> {
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

/// Works out the import of one session file (see the module doc) against `store`, with the bytes
/// of `known` (read from `path`) used for a whole read when the file is still the one they were
/// read from.
pub(in crate::store) fn prepare(
    store: &Store,
    path: &Path,
    forced: Option<HostKind>,
    known: Option<&SessionFile>,
) -> Result<Prepared, ImportError> {
    prepare_known(store, path, forced, known.map_or(Known::Nothing, Known::Read))
}

/// [`prepare`], with what the caller knows of the file ([`Known`]).
pub(super) fn prepare_known(
    store: &Store,
    path: &Path,
    forced: Option<HostKind>,
    known: Known<'_>,
) -> Result<Prepared, ImportError> {
    match prepare_from(store, path, forced, known, true) {
        // The state's node table did not read where a parent was looked up: the whole file
        // again, as for a damaged state (the state's version stays the parent).
        Err(ImportError::TableUnread { chunk, .. }) => {
            let mut prepared = prepare_from(store, path, forced, known, false)?;
            let message =
                format!("import state: node table chunk {chunk} does not read; importing the whole file again");
            prepared.report.warnings.insert(0, Warning { line: 0, message });
            Ok(prepared)
        }
        done => done,
    }
}

/// [`prepare_known`], continuing from the state's committed prefix only when `from_state`;
/// [`ImportError::TableUnread`] when a chunk of the state's node table did not read.
fn prepare_from(
    store: &Store,
    path: &Path,
    forced: Option<HostKind>,
    known: Known<'_>,
    from_state: bool,
) -> Result<Prepared, ImportError> {
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
            return Ok(Prepared::report(unchanged_report(path, head)));
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
                    Some(own) => read_own(path, head, own, forced)?,
                    None => None,
                };
                let read = match (trusted, known.file().filter(|f| f.stamp().is_some_and(|s| still(path, s)))) {
                    (Some(read), _) => Some(read),
                    // The caller's bytes are the file's: proven in memory, never read again.
                    (None, Some(file)) => read_known(head, file, forced)?,
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
            return Ok(prepared);
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
    if let Some(chunk) = read.failed {
        return Err(ImportError::TableUnread { path: path.to_path_buf(), chunk });
    }
    // A file with no header naming it (a Claude Code transcript whose first rows are summaries
    // or conversation rows) is known by the id its rows carry, else by its host's file name for
    // it: a session listed as `-` leaves the user nothing to type.
    let session_id = read.session_id.or(base.session_id).or_else(|| rows.clone()).or_else(|| {
        let name = path.file_name()?.to_string_lossy();
        host.session_id_of_file(&name).filter(|id| crate::store::row::safe(id))
    });
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
    Ok(Prepared { report, objects, records, time: Some((times::name(&head.path), version_id)) })
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
    Ok(ids.next().filter(|id| crate::store::row::safe(id)))
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

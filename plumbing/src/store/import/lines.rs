//! A file's lines into the store's objects: an entry object per physical line, a node per tree
//! entry chained by its host's parent link, gathered in [`Objects`] until the import is applied.

use std::collections::HashMap;

use crate::host::file::Bytes;
use crate::host::{Host, SessionFile, TreeLine, Warning};
use crate::id::{node_bytes, Kind, ObjectId};

use crate::store::state::{NodeTable, Resume, Table};
use crate::store::version::LineRef;
use crate::store::Store;

/// One line's id and parent, as this process wrote it.
type Written<'a> = (&'a str, Option<&'a str>);

/// Adds every line of `file` from byte `start` on to `objects`, and a node for each tree entry,
/// advancing `resume`; with `rows` (a session id), lines naming it become row objects without
/// it. The file's line table and decoded text are used as they are: each line is hashed and
/// parsed, never split or checked for UTF-8 again. With `made` (the lines' ids and parents, as
/// this process wrote them: one per line from `start`), the lines are not parsed.
pub(super) fn read_lines(
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
    // Written by this process, one per line, and read by the host as entries keyed by the ids
    // the writer gave them (pi's from its header's version 2 on; not a v1 file's).
    let made = made.filter(|m| m.len() == file.lines.len() - first && keyed_as_written(host, file, first, m, resume));
    let mut out = ReadLines {
        lines: Vec::with_capacity(file.lines.len() - first),
        committed: start,
        session_id: None,
        last_entry: None,
        failed: None,
    };
    let len = file.raw().len();
    for (n, line) in file.lines[first..].iter().enumerate() {
        let entry_id = match rows.and_then(|id| crate::store::row::take_out(file.line_raw(line), id)) {
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
                resume.header_version = Some(version);
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
    out.failed = old.failed();
    drop(parents);
    (resume.chunks, resume.inline) = (chunks, inline);
    resume.inline.append(added);
    out
}

/// Tells whether the host reads the first of the lines from `first` on (after the header the
/// state saw) as the entry the writer says it wrote: keyed by that id. The store takes no
/// host's word for how its lines are keyed; one line read tells.
fn keyed_as_written(host: &dyn Host, file: &SessionFile, first: usize, made: &[Written<'_>], resume: &Resume) -> bool {
    let (Some(line), Some((id, _))) = (file.lines.get(first), made.first()) else { return false };
    matches!(host.tree_line(file.line_text(line), resume.header_version), TreeLine::Entry { id: Some(read), .. } if read == *id)
}

/// What reading lines produced.
pub(super) struct ReadLines {
    /// Every physical line read (a partial last one included).
    pub(super) lines: Vec<LineRef>,
    /// Offset just past the last complete line.
    pub(super) committed: usize,
    /// The header's session id, when the header was among the lines read.
    pub(super) session_id: Option<String>,
    /// The last tree entry read: its id and node.
    pub(super) last_entry: Option<(Option<String>, ObjectId)>,
    /// Why a chunk of the state's node table did not read, when a parent lookup reached one
    /// (what was read is then not to be trusted).
    pub(super) failed: Option<ObjectId>,
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
    match host.tree_line(text, resume.header_version) {
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

/// The objects an import adds, in order, but for those the store holds already: the file's lines
/// (spans of its bytes) and what is made for it (rows, nodes, the version).
#[derive(Default)]
pub(super) struct Objects {
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
    pub(super) fn of(file: &Bytes) -> Objects {
        Objects { file: Some(file.clone()), ..Objects::default() }
    }

    /// How many bytes it holds (of the file, and made for it).
    pub(super) fn held(&self) -> usize {
        self.file.as_ref().map_or(0, |f| f.len()) + self.made.len()
    }

    /// Adds the object of the file's bytes `range` unless `store` holds it; returns its id.
    pub(super) fn line(&mut self, store: &Store, kind: Kind, range: std::ops::Range<usize>) -> ObjectId {
        let bytes = self.file.as_ref().map_or(&[][..], |f| &f[range.clone()]);
        let id = ObjectId::hash(kind, bytes);
        if !store.contains(&id) {
            self.list.push((id, kind, Span::File(range)));
        }
        id
    }

    /// Adds an object of `bytes` made for the import unless `store` holds it; returns its id.
    pub(super) fn made(&mut self, store: &Store, kind: Kind, bytes: &[u8]) -> ObjectId {
        let id = ObjectId::hash(kind, bytes);
        self.made_as(store, id, kind, bytes);
        id
    }

    /// [`Objects::made`] of an object whose id (of `kind` and `bytes`) is known.
    pub(super) fn made_as(&mut self, store: &Store, id: ObjectId, kind: Kind, bytes: &[u8]) {
        if !store.contains(&id) {
            let at = self.made.len();
            self.made.extend_from_slice(bytes);
            self.list.push((id, kind, Span::Made(at..self.made.len())));
        }
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (&ObjectId, &Kind, &[u8])> {
        self.list.iter().map(|(id, kind, span)| {
            let bytes = match span {
                Span::File(r) => self.file.as_ref().map_or(&[][..], |f| &f[r.clone()]),
                Span::Made(r) => &self.made[r.clone()],
            };
            (id, kind, bytes)
        })
    }
}

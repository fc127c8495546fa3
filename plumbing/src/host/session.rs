//! A loaded session, format-neutral: the file's bytes, the header, the tree of entries (id,
//! parent, line, exact bytes) and the host's warnings. The host's own reading of each entry stays
//! behind the host (`Session::data`); the engine walks the tree through this type only.

use std::borrow::Cow;
use std::fmt;
use std::hash::BuildHasher;

use super::file::SessionFile;
use serde_json::value::RawValue;

use super::{Appender, Host, HostKind, HostSession, Reply};

/// Something the host reads differently from what the file says, or skips silently.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// 1-based line (0 when it concerns the whole file).
    pub line: usize,
    /// What is wrong, in words.
    pub message: String,
}

/// One of shake's log records kept outside the file ([`Session::stored`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Stored {
    /// The entry it was made at.
    pub index: usize,
    /// The record's data, as read.
    pub data: serde_json::Value,
    /// When it was made (ISO 8601), when the record says (older ones do not).
    pub at: Option<String>,
}

/// The session's header line (or record), when the format has one.
#[derive(Debug)]
pub struct Header<'a> {
    /// 1-based line number of the header.
    pub line: usize,
    /// The header's exact bytes.
    pub raw: &'a [u8],
    /// The session id.
    pub id: Cow<'a, str>,
    /// The working directory the session belongs to.
    pub cwd: Option<Cow<'a, str>>,
    /// The file this session was forked from, if any.
    pub parent_session: Option<Cow<'a, str>>,
}

/// One entry of the tree, in file order: its line, its bytes, and the host's type name, id and
/// parent id for it. The three names are kept as spans of the line's bytes where the line holds
/// them as they read (nearly always: no JSON escape), else owned beside ([`Node::new`]), and the
/// bytes as a slice: 56 bytes a node, where a `usize` line, a slice and three `Cow`s of their
/// own made 96 (9.6 MB on 100,000 tiny entries).
pub struct Node<'a> {
    /// The line's exact bytes (what the store hashes).
    raw: &'a [u8],
    /// The names the line does not hold as they read (`None`: it holds them all).
    owned: Option<Box<Owned>>,
    /// 1-based physical line in the file (a host refuses a file of more than
    /// [`super::file::MAX_LINES`] lines).
    line: u32,
    kind: Span,
    id: Span,
    /// [`Span::NONE`] at a root.
    parent_id: Span,
}

// One per entry of every load (100,000 tiny entries: 5.6 MB); not to grow unnoticed.
const _: () = assert!(std::mem::size_of::<Node>() <= 56);

/// Where one of a node's names is: a range of its line's bytes, or [`Span::OWNED`], or
/// [`Span::NONE`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Span {
    start: u32,
    len: u32,
}

impl Span {
    /// The name is in the node's [`Owned`]. No span of a line starts at `u32::MAX`: an empty
    /// name is at 0, any other ends at `start + len`, which fits 32 bits.
    const OWNED: Span = Span { start: u32::MAX, len: 1 };
    /// There is no name (a root's parent).
    const NONE: Span = Span { start: u32::MAX, len: 0 };
}

/// A node's names that its line does not hold as they read: decoded from JSON escapes, made up
/// (a v1 file's synthetic ids), or told by a host that keeps its own copy. Only the names whose
/// span is [`Span::OWNED`] are set; the others are empty.
#[derive(Default)]
struct Owned {
    kind: Box<str>,
    id: Box<str>,
    parent_id: Box<str>,
}

impl<'a> Node<'a> {
    /// A node of line `line` (1-based) whose bytes are `raw`; `None` when `raw` is longer than
    /// `u32::MAX` bytes (no JavaScript string holds such a line: no host reads it). A name
    /// borrowed from `raw`, or one whose exact bytes `raw` holds somewhere (the same text
    /// wherever it is), is kept as a span of `raw`; any other is copied beside.
    pub fn new(line: u32, raw: &'a [u8], kind: &str, id: &str, parent_id: Option<&str>) -> Option<Node<'a>> {
        u32::try_from(raw.len()).ok()?;
        let mut node = Node { raw, owned: None, line, kind: Span::NONE, id: Span::NONE, parent_id: Span::NONE };
        node.kind = node.place(kind, |o| &mut o.kind);
        node.set_ids(id, parent_id);
        Some(node)
    }

    /// Gives the node another id and parent (a v1 file's synthetic ones).
    pub(crate) fn set_ids(&mut self, id: &str, parent_id: Option<&str>) {
        self.id = self.place(id, |o| &mut o.id);
        self.parent_id = parent_id.map_or(Span::NONE, |p| self.place(p, |o| &mut o.parent_id));
    }

    /// Where `name` is kept: its span in the line when the line holds its bytes (any span fits
    /// 32 bits, as the line does), else copied into the slot of [`Owned`] that `slot` picks.
    fn place(&mut self, name: &str, slot: impl FnOnce(&mut Owned) -> &mut Box<str>) -> Span {
        if name.is_empty() {
            return Span { start: 0, len: 0 };
        }
        let raw = self.raw();
        let at = (name.as_ptr() as usize).checked_sub(raw.as_ptr() as usize);
        match at.filter(|&s| s + name.len() <= raw.len()).or_else(|| memchr::memmem::find(raw, name.as_bytes())) {
            Some(start) => Span { start: start as u32, len: name.len() as u32 },
            None => {
                *slot(self.owned.get_or_insert_with(Box::default)) = name.into();
                Span::OWNED
            }
        }
    }

    /// The text of a name kept at `span`, or in the [`Owned`] slot `slot` picks.
    #[inline]
    fn name(&self, span: Span, slot: impl FnOnce(&Owned) -> &str) -> &str {
        if span == Span::OWNED {
            return self.owned.as_deref().map_or("", slot);
        }
        let bytes = &self.raw()[span.start as usize..(span.start + span.len) as usize];
        // SAFETY: a span is only made (`place`) where these bytes are those of a `str`: the name
        // borrowed from them, or bytes found equal to the name's. The bytes are a shared borrow
        // and the span private, so neither changes after.
        unsafe { std::str::from_utf8_unchecked(bytes) }
    }

    /// 1-based physical line in the file.
    #[inline]
    pub fn line(&self) -> usize {
        self.line as usize
    }

    /// The line's exact bytes (what the store hashes).
    #[inline]
    pub fn raw(&self) -> &'a [u8] {
        self.raw
    }

    /// The host's type name for the entry (as listed by `ls-entries`); empty when it has none.
    #[inline]
    pub fn kind(&self) -> &str {
        self.name(self.kind, |o| &o.kind)
    }

    /// The host's id for the entry.
    #[inline]
    pub fn id(&self) -> &str {
        self.name(self.id, |o| &o.id)
    }

    /// The parent's id; `None` at a root.
    #[inline]
    pub fn parent_id(&self) -> Option<&str> {
        (self.parent_id != Span::NONE).then(|| self.name(self.parent_id, |o| &o.parent_id))
    }
}

impl fmt::Debug for Node<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Node")
            .field("line", &self.line)
            .field("kind", &self.kind())
            .field("id", &self.id())
            .field("parent_id", &self.parent_id())
            .finish()
    }
}

/// A parent chain that loops (the host would hang on it).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("parentId cycle through entry {id} (line {line}); pi would hang on this branch")]
pub struct Cycle {
    /// An entry on the cycle.
    pub id: String,
    /// Its line.
    pub line: usize,
}

/// The entries' indexes by id: a table of 32-bit indexes alone (a file has at most `u32::MAX`
/// lines), each entry's id read from its node (a map keyed by the ids held a 24-byte key beside
/// each index: 3 of its 4 MB on 100,000 entries; `usize` indexes were half of the 1.2 MB left).
struct IdIndex {
    table: hashbrown::HashTable<u32>,
    hasher: foldhash::fast::RandomState,
    /// Some id is on more than one entry.
    repeats: bool,
}

impl IdIndex {
    /// Indexes `entries` (the later one when ids repeat).
    fn new(entries: &[Node<'_>]) -> IdIndex {
        let hasher = foldhash::fast::RandomState::default();
        let mut table = hashbrown::HashTable::with_capacity(entries.len());
        let hash = |i: &u32| hasher.hash_one(entries[*i as usize].id());
        let mut repeats = false;
        for (i, e) in (0u32..).zip(entries) {
            let id = e.id();
            match table.entry(hasher.hash_one(id), |&j| entries[j as usize].id() == id, hash) {
                hashbrown::hash_table::Entry::Occupied(mut o) => {
                    *o.get_mut() = i;
                    repeats = true;
                }
                hashbrown::hash_table::Entry::Vacant(v) => {
                    v.insert(i);
                }
            }
        }
        IdIndex { table, hasher, repeats }
    }

    /// The index of the entry of `entries` (those indexed) with this id.
    fn get(&self, entries: &[Node<'_>], id: &str) -> Option<usize> {
        self.table.find(self.hasher.hash_one(id), |&i| entries[i as usize].id() == id).map(|&i| i as usize)
    }
}

/// A session as its host loads it.
pub struct Session<'a> {
    /// Which host's format this is.
    pub kind: HostKind,
    /// The file read.
    pub file: &'a SessionFile,
    /// The header; `None` for an empty file or a format without one.
    pub header: Option<Header<'a>>,
    /// The tree's entries in file order.
    pub entries: Vec<Node<'a>>,
    /// Lines the host skips or reads with a loss, and other things worth telling.
    pub warnings: Vec<Warning>,
    /// Shake's log records kept outside the file (a forking host's, in the store:
    /// `fork_record::attach`), oldest first.
    pub stored: Vec<Stored>,
    /// Entry id → index (the later one when ids repeat).
    by_id: IdIndex,
    host: &'static dyn Host,
    /// The host's own reading of the entries (the engine never looks inside). A trait object,
    /// so this module names no host. It makes `Session` invariant in `'a`: two files' sessions
    /// compared side by side take one pair of lifetimes, which the borrows of two files meet in
    /// (`hosts::tests::two_files_side_by_side`).
    pub(crate) data: Box<dyn HostSession<'a> + 'a>,
}

impl fmt::Debug for Session<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("host", &self.kind)
            .field("path", &self.file.path)
            .field("entries", &self.entries.len())
            .finish()
    }
}

impl<'a> Session<'a> {
    /// Assembles a loaded session (called by the host modules).
    pub(crate) fn new(
        host: &'static dyn Host,
        file: &'a SessionFile,
        header: Option<Header<'a>>,
        entries: Vec<Node<'a>>,
        data: Box<dyn HostSession<'a> + 'a>,
    ) -> Session<'a> {
        let by_id = IdIndex::new(&entries);
        Session {
            kind: host.kind(),
            file,
            header,
            entries,
            warnings: Vec::new(),
            stored: Vec::new(),
            by_id,
            host,
            data,
        }
    }

    /// Prints the warnings its parse gave on stderr ([`crate::Context::warn`]), each naming the
    /// file and line.
    pub fn warn(&self, ctx: &crate::Context) {
        for w in &self.warnings {
            match w.line {
                0 => ctx.warn(format_args!("{}: {}", self.file.display(), w.message)),
                n => ctx.warn(format_args!("{}:{}: {}", self.file.display(), n, w.message)),
            }
        }
    }

    /// The host whose format this is.
    pub fn host(&self) -> &'static dyn Host {
        self.host
    }

    /// Projects every later view for `model` (`--model`, [`crate::Context::model`]), when one is
    /// given and the host's projection depends on it; `None` leaves each session's own.
    pub fn choose_model(&mut self, model: Option<&str>) {
        if let Some(model) = model {
            self.data.choose_model(model);
        }
    }

    /// Writes the context at `leaf` as the host itself would write it, byte for byte (`shake
    /// project --json`): [`super::View::write_json_text`], without a view where the host needs none.
    pub fn write_context_json(&self, leaf: Option<usize>, out: &mut dyn std::io::Write) -> super::error::Result<()> {
        self.data.write_context_json(self, leaf, out)
    }

    /// The entries of the root→leaf `path` the host sends the model (compaction-aware).
    pub fn context(&self, path: &[usize]) -> Vec<usize> {
        self.data.context(path)
    }

    /// The format version, when the format has one.
    pub fn version(&self) -> Option<u64> {
        self.data.version()
    }

    /// Tells whether the host would migrate (rewrite) this file when it opens it.
    pub fn needs_migration(&self) -> bool {
        self.data.needs_migration()
    }

    /// The `data` of entry `index` when it is a log record of type `record_type`.
    pub fn record(&self, index: usize, record_type: &str) -> Option<&'a RawValue> {
        self.data.record(index, record_type)
    }

    /// The entry's timestamp as written.
    pub fn timestamp(&self, index: usize) -> Option<Cow<'a, str>> {
        self.data.timestamp(index)
    }

    /// A foldable entry's own content, as written.
    pub fn own_content(&self, index: usize) -> Option<&'a RawValue> {
        self.data.own_content(index)
    }

    /// Tells whether entry `index` is an edit (pi: a `context_edit`).
    pub fn is_edit(&self, index: usize) -> bool {
        self.data.is_edit(index)
    }

    /// The raw payload of an edit entry, as written (pi: its `replacement`).
    pub fn edit_raw(&self, index: usize) -> Option<&'a RawValue> {
        self.data.edit_raw(index)
    }

    /// The provider-counted reply entry `index` is, if it is one.
    pub fn reply(&self, index: usize) -> Option<Reply<'a>> {
        self.data.reply(index)
    }

    /// The role name `show` prints for entry `index`.
    pub fn role_label(&self, index: usize) -> String {
        self.data.role_label(index)
    }

    /// The neutral role of entry `index`, from the entry alone ([`HostSession::speaker`]).
    pub fn speaker(&self, index: usize) -> Option<super::Role> {
        self.data.speaker(index)
    }

    /// The message role of entry `index` in the host's words, else the entry's type.
    pub fn entry_label(&self, index: usize) -> String {
        self.data.entry_label(index)
    }

    /// Tells whether entry `index` may follow a measured leaf in the meter's append shortcut.
    pub fn is_plain(&self, index: usize) -> bool {
        self.data.is_plain(index)
    }

    /// The bytes to put before appended lines so they load alone.
    pub fn append_prefix(&self) -> Option<&'a [u8]> {
        self.data.append_prefix()
    }

    /// A writer for one appended batch.
    pub fn appender(&self) -> super::error::Result<Box<dyn Appender>> {
        self.data.appender(self)
    }

    /// Writes a fold as a new session beside this one (hosts that write back as forks).
    pub fn write_fork(
        &self,
        edits: &[(String, &RawValue)],
        how: super::ForkWrite,
    ) -> super::error::Result<super::Forked> {
        self.data.write_fork(self, edits, how)
    }

    /// The root→`leaf` path as a session file of its own.
    pub fn export(&self, ctx: &crate::Context, leaf: usize) -> super::error::Result<super::Export<'a>> {
        self.data.export(ctx, self, leaf)
    }

    /// Returns the index of the entry with this id (the later one when ids repeat).
    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.by_id.get(&self.entries, id)
    }

    /// Tells whether some id is on more than one entry (then [`Session::index_of`] finds the
    /// later for it, and an earlier one is not found by its id).
    pub fn ids_repeat(&self) -> bool {
        self.by_id.repeats
    }

    /// Returns the entry with this id.
    pub fn get(&self, id: &str) -> Option<&Node<'a>> {
        self.index_of(id).map(|i| &self.entries[i])
    }

    /// Returns the host's leaf on load (pi: the last entry in file order).
    pub fn default_leaf(&self) -> Option<usize> {
        self.data.default_leaf(self)
    }

    /// Returns the parent's index, or `None` at a root or when the parent is unknown (the path
    /// then ends there).
    pub fn parent_of(&self, index: usize) -> Option<usize> {
        self.entries[index].parent_id().and_then(|p| self.index_of(p))
    }

    /// Returns the root→leaf path as entry indexes, or the cycle that makes it endless.
    pub fn path(&self, leaf: usize) -> Result<Vec<usize>, Cycle> {
        let mut path = vec![leaf];
        let mut current = leaf;
        while let Some(parent) = self.parent_of(current) {
            if path.len() > self.entries.len() {
                return Err(Cycle { id: self.entries[parent].id().to_string(), line: self.entries[parent].line() });
            }
            path.push(parent);
            current = parent;
        }
        path.reverse();
        Ok(path)
    }

    /// Returns the branch tips in file order, plus the host's leaf on load: normally a tip, but
    /// listed even when a later-written entry hangs off it.
    pub fn tips(&self) -> Vec<usize> {
        let mut tips = self.leaves();
        if let Some(d) = self.default_leaf().filter(|d| !tips.contains(d)) {
            tips.push(d);
            tips.sort_unstable();
        }
        tips
    }

    /// Returns every branch tip: entries no other entry names as its parent, in file order (an
    /// entry that is its own parent is a tip).
    pub fn leaves(&self) -> Vec<usize> {
        let mut has_child = vec![false; self.entries.len()];
        for i in 0..self.entries.len() {
            if let Some(p) = self.parent_of(i).filter(|&p| p != i) {
                has_child[p] = true;
            }
        }
        (0..self.entries.len()).filter(|&i| !has_child[i]).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: &str) -> Node<'_> {
        Node::new(1, b"", "x", id, None).unwrap()
    }

    /// A name borrowed from the line, or found in it as is, is a span of the line (nothing
    /// owned); a name the line does not hold as is (decoded from an escape) is owned; each reads
    /// back as given, an empty one and an absent parent too.
    #[test]
    fn names_are_spans_of_the_line_or_owned() {
        let raw: &[u8] = br#"{"type":"message","id":"a\u0062","parentId":"p","x":"ab"}"#;
        let line = std::str::from_utf8(raw).unwrap();
        let borrowed = |s: &str| &line[line.find(s).unwrap()..][..s.len()];
        let n = Node::new(7, raw, borrowed("message"), "ab", Some(borrowed("p"))).unwrap();
        assert_eq!((n.line(), n.kind(), n.id(), n.parent_id(), n.raw()), (7, "message", "ab", Some("p"), raw));
        assert!(n.owned.is_none(), "\"ab\" is in the line as is: a span");
        let n = Node::new(7, raw, "message", "a\"b", None).unwrap();
        assert_eq!((n.kind(), n.id(), n.parent_id()), ("message", "a\"b", None));
        assert_eq!(n.owned.as_ref().map(|o| (&*o.kind, &*o.id, &*o.parent_id)), Some(("", "a\"b", "")));
        let mut n = Node::new(1, b"", "", "", Some("")).unwrap();
        assert_eq!((n.kind(), n.id(), n.parent_id()), ("", "", Some("")));
        n.set_ids("00000002", Some("00000001"));
        assert_eq!((n.id(), n.parent_id()), ("00000002", Some("00000001")));
        assert!(n.owned.is_some());
    }

    /// The table finds each id by the node's own bytes, the later entry when ids repeat, and
    /// nothing for an id no entry has.
    #[test]
    fn ids_index_the_later_entry() {
        let names: Vec<String> = (0..100).map(|i| format!("e{i}")).collect();
        let mut nodes: Vec<Node<'_>> = names.iter().map(|n| node(n)).collect();
        nodes.push(node("e7"));
        nodes.push(node(""));
        let index = IdIndex::new(&nodes);
        assert_eq!(index.get(&nodes, "e7"), Some(100));
        assert_eq!(index.get(&nodes, "e8"), Some(8));
        assert_eq!(index.get(&nodes, ""), Some(101));
        assert_eq!(index.get(&nodes, "e100"), None);
        assert!((0..100).filter(|&i| i != 7).all(|i| index.get(&nodes, &names[i]) == Some(i)));
    }
}

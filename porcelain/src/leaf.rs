//! A leaf loaded for comparison (`diff`, `audit`): its path with node ids, its projection and
//! wall, and what the model sees of each entry, in words scripts can compare ([`Seen`]).

use std::collections::HashSet;
use std::io::Write;

use serde_json::{json, Value};
use shake_plumbing::fork_record::RecordError;
use shake_plumbing::host::error::HostError;
use shake_plumbing::host::{Projected, Session, View, Writer};
use shake_plumbing::id::ObjectId;
use shake_plumbing::nodes::NodeIds;
use shake_plumbing::output::write_record;
use shake_plumbing::rev::leaf_path;
use shake_plumbing::rev::{Rev, RevArgs, RevError};
use shake_plumbing::tokens::{entry_tokens, Tokenizer};
use shake_plumbing::Context;

use crate::wall::{Item, Wall};

/// What the model sees of one entry at a leaf.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    /// Not in the context list (another branch, or summarised away by a compaction).
    Absent,
    /// The entry's own content: no edit applies.
    Raw,
    /// Content with regions folded by shake (the entry is on the wall).
    Folded,
    /// Another tool's edit wins (a shake fold under it, if any, is superseded).
    Edited,
    /// An edit with `replacement: null` removes it.
    Omitted,
    /// shake's undo edit wins: the content from before the first fold.
    Restored,
}

impl Seen {
    /// The word used in output.
    pub fn as_str(self) -> &'static str {
        match self {
            Seen::Absent => "absent",
            Seen::Raw => "raw",
            Seen::Folded => "folded",
            Seen::Edited => "edited",
            Seen::Omitted => "omitted",
            Seen::Restored => "restored",
        }
    }
}

/// Why a leaf does not load: the revision, the host's reading, or the store's records of a fork
/// (each passed through as its own; the commands give the exit code and hints).
#[derive(Debug, thiserror::Error)]
pub enum LeafError {
    /// The revision names no session or no leaf.
    #[error(transparent)]
    Rev(#[from] RevError),
    /// The host does not read the session or project the leaf.
    #[error(transparent)]
    Host(#[from] HostError),
    /// The store's records of a fork do not read.
    #[error(transparent)]
    Record(#[from] RecordError),
}

type Result<T, E = LeafError> = std::result::Result<T, E>;

/// One leaf of a session, projected, with its wall and the node id of every path entry.
pub struct LeafView<'s, 'a> {
    /// The projection at the leaf.
    pub projection: View<'s, 'a>,
    /// The folds in force at the leaf.
    pub wall: Wall<'s>,
    /// The node id of each entry of `projection.path`.
    pub nodes: Vec<ObjectId>,
}

/// Loads many leaves of one session, sharing what is read of each entry and each entry's node
/// id, so loading every leaf reads and hashes each entry once, not once per leaf.
pub struct Leaves<'s, 'a> {
    session: &'s Session<'a>,
    nodes: NodeIds<'s, 'a>,
}

impl<'s, 'a> Leaves<'s, 'a> {
    /// Starts with nothing read.
    pub fn new(session: &'s Session<'a>) -> Leaves<'s, 'a> {
        Leaves { session, nodes: NodeIds::new(session) }
    }

    /// Loads leaf `leaf`, as [`LeafView::at`] does.
    pub fn at(&mut self, leaf: Option<usize>) -> Result<LeafView<'s, 'a>> {
        Ok(LeafView::of_view(View::shared(self.session, leaf)?, &mut self.nodes))
    }

    /// The session the leaves are in.
    pub fn session(&self) -> &'s Session<'a> {
        self.session
    }
}

/// Loads the leaves two revisions name (`SESSION[:ENTRY]`, in one session file or two) and
/// hands them to `f`; warnings about a file are printed once.
pub fn with_two_leaves<T, E: From<LeafError>>(
    ctx: &Context,
    a: &str,
    b: &str,
    f: impl for<'s, 'a> FnOnce(&LeafView<'s, 'a>, &LeafView<'s, 'a>) -> Result<T, E>,
) -> Result<T, E> {
    // Each step's error as the caller's (`E`), through the loading's own.
    fn up<E: From<LeafError>>(e: impl Into<LeafError>) -> E {
        E::from(e.into())
    }
    let load = |rev: &str| RevArgs { rev: Some(rev.to_string()), leaf: None }.load(ctx).map_err(up::<E>);
    let ((file_a, rev_a), (file_b, rev_b)) = (load(a)?, load(b)?);
    let mut session_a = shake_plumbing::hosts::load(&file_a, ctx.host).map_err(up::<E>)?;
    session_a.warn(ctx);
    let mut session_b = shake_plumbing::hosts::load(&file_b, ctx.host).map_err(up::<E>)?;
    // A Claude Code fork's folds are recorded in the store, not in the file.
    shake_plumbing::fork_record::attach(ctx, &mut session_a).map_err(up::<E>)?;
    shake_plumbing::fork_record::attach(ctx, &mut session_b).map_err(up::<E>)?;
    if file_b.path != file_a.path {
        session_b.warn(ctx);
    }
    // Bound, not temporaries: a view's host data may be read when it drops, so it must drop
    // before the sessions it borrows.
    let leaf_a = LeafView::of_rev(&session_a, &rev_a).map_err(up::<E>)?;
    let leaf_b = LeafView::of_rev(&session_b, &rev_b).map_err(up::<E>)?;
    f(&leaf_a, &leaf_b)
}

impl<'s, 'a> LeafView<'s, 'a> {
    /// Loads the leaf a revision names (an error for an empty session or a looping path).
    pub fn of_rev(session: &'s Session<'a>, rev: &Rev) -> Result<LeafView<'s, 'a>> {
        let (leaf, _) = leaf_path(session, rev)?;
        LeafView::at(session, Some(leaf))
    }

    /// Loads leaf `leaf` (an entry index; `None` is the empty leaf before the first entry).
    pub fn at(session: &'s Session<'a>, leaf: Option<usize>) -> Result<LeafView<'s, 'a>> {
        Ok(LeafView::of_view(View::at(session, leaf)?, &mut NodeIds::new(session)))
    }

    fn of_view(projection: View<'s, 'a>, nodes: &mut NodeIds<'s, 'a>) -> LeafView<'s, 'a> {
        let wall = Wall::at(&projection);
        let nodes = nodes.path(&projection.path);
        LeafView { projection, wall, nodes }
    }

    /// The session the leaf is in.
    pub fn session(&self) -> &'s Session<'a> {
        self.projection.session
    }

    /// The root→leaf path, as entry indexes.
    pub fn path(&self) -> &[usize] {
        &self.projection.path
    }

    /// The ids of the path's entries.
    pub fn path_ids(&self) -> HashSet<&'s str> {
        let session = self.session();
        self.path().iter().map(|&i| id_of(session, i)).collect()
    }

    /// Returns what the model sees of entry `index`.
    pub fn seen(&self, index: usize) -> Seen {
        if !self.in_context(index) {
            return Seen::Absent;
        }
        match self.projection.projected(index) {
            // A fork's placeholder is in the file itself: the fold record puts it on the wall.
            Projected::Raw if self.items_at(index).next().is_some() => Seen::Folded,
            Projected::Raw => Seen::Raw,
            Projected::Omitted => Seen::Omitted,
            Projected::Replaced(_) => {
                let id = self.projection.edit_of(index).map_or("", |e| id_of(self.session(), e));
                let target = id_of(self.session(), index);
                match (self.wall.is_shake_edit(id), !self.wall.items_of(target).is_empty()) {
                    (false, _) => Seen::Edited,
                    (true, true) => Seen::Folded,
                    (true, false) => Seen::Restored,
                }
            }
        }
    }

    /// Returns the messages entry `index` gives the model (empty when it is not in the context),
    /// exactly as in `shake project`.
    pub fn messages(&self, index: usize) -> Vec<Value> {
        match self.projection.position(index) {
            Some(pos) => self.projection.messages_json(pos),
            None => Vec::new(),
        }
    }

    /// Returns the tokens the model sees of entry `index` (0 when it is not in the context).
    pub fn tokens(&self, index: usize, tok: &Tokenizer) -> u64 {
        self.projection.position(index).map_or(0, |pos| entry_tokens(&self.projection, pos, tok))
    }

    /// Tells whether entry `index` is in the context list.
    pub fn in_context(&self, index: usize) -> bool {
        self.projection.position(index).is_some()
    }

    /// The folded regions of entry `index`, as JSON:
    /// `[{"target","kind","label","tokens","placeholder","log"}]` (for a Claude Code fork the
    /// targets are `tool_use_id`s, not entry ids).
    pub fn regions_at(&self, index: usize) -> Vec<Value> {
        self.items_at(index).map(item_json).collect()
    }

    fn items_at(&self, index: usize) -> impl Iterator<Item = &Item<'_>> {
        self.wall.items.iter().filter(move |it| it.index == index)
    }

    /// The whole wall, as [`LeafView::regions_at`] prints each region.
    pub fn wall_json(&self) -> Vec<Value> {
        self.wall.items.iter().map(item_json).collect()
    }

    /// The leaf's identity: `{"file","leafId","node","pathLength"}`.
    pub fn describe(&self) -> Value {
        let session = self.session();
        json!({
            "file": session.file.path.to_string_lossy(),
            "leafId": self.projection.leaf.map(|l| id_of(session, l)),
            "node": self.nodes.last().map(|n| n.to_hex()),
            "pathLength": self.nodes.len(),
        })
    }
}

fn item_json(it: &Item) -> Value {
    json!({"target": it.target, "kind": it.kind.as_str(), "label": it.label, "tokens": it.tokens,
           "placeholder": it.placeholder(), "log": it.log})
}

/// The entry id of entry `index`.
pub fn id_of<'s>(session: &'s Session<'_>, index: usize) -> &'s str {
    session.entries[index].id()
}

/// The prefix two leaves share: equal node ids, so byte-identical paths (`docs/revisions.md`);
/// for two Claude Code transcripts (a fork and its source), equal uuids.
pub struct Shared {
    /// Entries in the shared prefix.
    pub length: usize,
    /// The last common node id, if any.
    pub node: Option<ObjectId>,
    /// The entry id of the last common node.
    pub id: Option<String>,
}

impl Shared {
    /// Compares the node ids of two paths.
    pub fn of(a: &LeafView<'_, '_>, b: &LeafView<'_, '_>) -> Shared {
        // A fork's rows are its source's with another `sessionId` and folded results: the same
        // entries (uuids), some seen differently.
        let forks = [a.session().host(), b.session().host()].iter().all(|h| matches!(h.writer(), Writer::Fork(_)));
        let same = |p: usize| {
            a.nodes[p] == b.nodes[p]
                || (forks && a.session().entries[a.path()[p]].id() == b.session().entries[b.path()[p]].id())
        };
        let length = (0..a.nodes.len().min(b.nodes.len())).take_while(|&p| same(p)).count();
        let last = length.checked_sub(1);
        Shared {
            length,
            node: last.map(|p| a.nodes[p]),
            id: last.map(|p| a.session().entries[a.path()[p]].id().to_string()),
        }
    }

    /// `{"length","node","id"}` (the node is A's).
    pub fn json(&self) -> Value {
        json!({"length": self.length, "node": self.node.map(|n| n.to_hex()), "id": self.id})
    }

    /// Writes the line-output record: `=`, length, entry id, node id (empty fields when nothing
    /// is shared).
    pub fn write_record(&self, out: &mut dyn Write, nul: bool) -> std::io::Result<()> {
        let node = self.node.map(|n| n.to_hex()).unwrap_or_default();
        write_record(out, &["=", &self.length.to_string(), self.id.as_deref().unwrap_or_default(), &node], nul)
    }
}

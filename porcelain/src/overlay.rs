//! Per-leaf overlays in the store: the wall at a leaf as a canonical-JSON `overlay` object under
//! `refs/overlays/<leaf node id>` (`docs/format.md`, "Overlay objects"), written after fold and
//! undo and whenever `status` or `meter` derives a wall, and recomputed by `shake fsck` to
//! check. Overlays are a cache of what the session file says: a store failure
//! only warns (once per process).

use std::path::{Path, PathBuf};

use shake_plumbing::durable::FileError;
use shake_plumbing::host::file::Bytes;
use shake_plumbing::host::{HostKind, Session, SessionFile, View, Writer};
use shake_plumbing::id::{Kind, ObjectId};
use shake_plumbing::js::write_string;
use shake_plumbing::store::import::OwnAppend;
use shake_plumbing::store::{path_nodes, refs, touch, Store, StoreError};
use shake_plumbing::{Context, Result};

use crate::wall::{Appended, Wall};

/// The overlay format this shake writes; a later shake whose wall differs bumps it (a stored
/// overlay of another version is then replaced as any other that is not the derived one).
pub const VERSION: u64 = 1;

/// The overlay object's canonical bytes for the wall at `leaf`: `{"v","session","leaf","wall"}`.
pub fn bytes(session: &Session<'_>, leaf: usize, wall: &Wall) -> Vec<u8> {
    bytes_at(session, session.entries[leaf].id(), &wall.overlay())
}

/// [`bytes`] of the overlay `wall` for the entry `leaf_id` (one the session may not hold yet:
/// a batch just appended): `{"v","session","leaf","wall"}` in this order, one spelling
/// (written directly, as serde_json would, without a `Value` tree).
fn bytes_at(session: &Session<'_>, leaf_id: &str, wall: &crate::wall::Overlay<'_>) -> Vec<u8> {
    let mut out = format!("{{\"v\":{VERSION},\"session\":").into_bytes();
    match session.header.as_ref() {
        Some(h) => write_string(&mut out, h.id.as_bytes()),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"leaf\":");
    write_string(&mut out, leaf_id.as_bytes());
    out.extend_from_slice(b",\"wall\":");
    wall.write_json(&mut out);
    out.push(b'}');
    out
}

/// Why a leaf's node (what its overlay ref is named by) cannot be had. The commands give the
/// exit code (`cmd/command_error.rs`).
#[derive(Debug, thiserror::Error)]
pub enum OverlayError {
    /// The store's failure hashing the path (a cycle, a damaged store).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The path to the leaf has no entry.
    #[error("an empty path has no leaf node")]
    EmptyPath,
}

/// The node id of `leaf` (what its overlay ref is named by).
fn leaf_node(session: &Session<'_>, leaf: usize) -> Result<ObjectId, OverlayError> {
    path_nodes(session, leaf)?.last().copied().ok_or(OverlayError::EmptyPath)
}

/// [`leaf_node`], taken from the import state of the file when it describes the bytes the
/// session was read from (the command imported them as it started): a lookup, not the hash of
/// every line on the path. Only for the latest entry of its id, the one the state names.
fn known_leaf_node(ctx: &Context, session: &Session<'_>, leaf: usize) -> Result<ObjectId, OverlayError> {
    let id = session.entries[leaf].id();
    let latest = session.index_of(id) == Some(leaf);
    let known = Store::open(ctx).ok().filter(|_| latest).and_then(|store| store.imported_node(session.file, id));
    known.map_or_else(|| leaf_node(session, leaf), Ok)
}

/// Stores the overlay of `leaf` under its ref unless the ref already names it.
fn save_at(ctx: &Context, session: &Session<'_>, leaf: usize, node: &ObjectId, wall: &Wall) -> Result<()> {
    let bytes = bytes(session, leaf, wall);
    let name = refs::overlay_ref(node);
    let mut store = Store::open(ctx)?;
    if store.read_ref(&name)? == Some(ObjectId::hash(Kind::Overlay, &bytes)) {
        return Ok(());
    }
    let mut batch = store.batch()?;
    let id = batch.put(Kind::Overlay, &bytes)?;
    batch.set_ref(&name, id)?;
    Ok(batch.commit()?)
}

/// Returns the wall at the projection's leaf, derived from the path, and stores it as the
/// leaf's overlay unless the ref names it already. The stored overlay is not read back: when
/// measured, rebuilding a wall from it (then also parsing every shake log on the path, for data
/// the wall no longer keeps) with a JSON tree of every folded item took 576 M instructions on
/// 100,000 tiny entries, where deriving and checking the ref took 290 M.
pub fn wall_at<'s>(ctx: &Context, session: &Session<'_>, projection: &View<'s, '_>) -> Wall<'s> {
    match session.host().writer() {
        // A fork host's wall comes from the store's fold records, not the file: nothing to cache.
        Writer::Fork(_) => return Wall::at(projection),
        Writer::Append | Writer::ReadOnly { .. } => {}
    }
    // The leaf's node before the wall: when the import state cannot name it (the file changed
    // within the second it was imported), every path entry is hashed, 7.75 MiB on 100,000 tiny
    // entries that were the peak of a status on top of the wall's 4.6.
    let leaf = projection.leaf.and_then(|l| Some((l, known_leaf_node(ctx, session, l).ok()?)));
    let wall = Wall::at(projection);
    if let Some((leaf, node)) = leaf {
        if let Err(e) = save_at(ctx, session, leaf, &node, &wall) {
            touch::warn_once(ctx, &e);
        }
    }
    wall
}

/// A batch that landed right after the bytes the command read (no other writer in between).
#[derive(Debug)]
pub struct Landed {
    /// The bytes appended (shared with the import, which reads them as the file's new lines
    /// instead of a copy of its own).
    pub lines: Bytes,
    /// The entry id the batch's first line chains from (the rest chain each from the one
    /// before).
    pub parent: String,
    /// What the safe writer saw of the file around the write (the import trusts the old bytes
    /// from it: [`shake_plumbing::store::Batch::import_appended`]).
    pub append: shake_plumbing::append::Appended,
}

/// What the store still has to learn after a batch was appended: the import of the appended
/// bytes and the overlay at the batch's last entry, in one store write ([`AfterWrite::store`]).
/// It holds no part of the session read before the append (the overlay's bytes are made
/// already), so a command lets go of its session, view and plan first, and the import's own
/// memory never adds to theirs.
#[derive(Debug)]
pub struct AfterWrite {
    path: PathBuf,
    /// The batch's entry ids, in order.
    ids: Vec<String>,
    /// The batch, when it landed right after the bytes read, with the bytes of the overlay at
    /// its end derived from the wall before it ([`Wall::after_batch`]).
    landed: Option<(Landed, Vec<u8>)>,
}

/// The bytes of the overlay at the last entry of a batch (`ids`, its log entry `log` first)
/// about to be appended after the leaf of `projection`, whose wall is `wall`: derived from the
/// wall and the batch ([`Wall::after_batch`]), so the file is neither parsed nor projected again.
/// `None` for a host that does not take a fold as appended lines.
pub fn after_batch(projection: &View<'_, '_>, wall: &Wall, log: &Appended<'_>, ids: &[String]) -> Option<Vec<u8>> {
    let session = projection.session;
    let leaf_id = ids.last()?;
    matches!(session.host().writer(), Writer::Append)
        .then(|| wall.after_batch(projection, log, |overlay| bytes_at(session, leaf_id, overlay)))
}

impl AfterWrite {
    /// What is left to store after an append of a batch (`ids`: its entry ids, in order) to the
    /// file at `path`: with `landed`, the batch when it landed right after the bytes read and the
    /// overlay at its end ([`after_batch`]); without it (another writer came in between)
    /// [`AfterWrite::store`] reads and parses the file again.
    pub fn new(path: PathBuf, landed: Option<(Landed, Vec<u8>)>, ids: Vec<String>) -> AfterWrite {
        AfterWrite { path, ids, landed }
    }

    /// Imports the appended bytes and stores the overlay at the batch's last entry, in one
    /// store write. The leaf's node id is the one the import gave the batch's last line; when
    /// the import did not chain it (or the batch did not land right after the bytes read),
    /// the file is read and parsed again. A failure only warns; `shake fsck` recomputes every
    /// overlay from the file.
    pub fn store(self, ctx: &Context) {
        if let Err(e) = self.import_with_overlay(ctx) {
            touch::warn_once(ctx, &e);
        }
    }

    fn import_with_overlay(self, ctx: &Context) -> Result<()> {
        let AfterWrite { path, ids, landed } = self;
        let Some(leaf_id) = ids.last() else { return Ok(()) };
        let mut store = Store::open(ctx)?;
        let mut store_batch = store.batch()?;
        let report = match &landed {
            Some((landed, _)) => {
                // The batch is a chain: each line after the first chains from the one before.
                let parents = std::iter::once(landed.parent.as_str()).chain(ids.iter().map(String::as_str));
                let entries: Vec<(&str, Option<&str>)> =
                    ids.iter().map(String::as_str).zip(parents.map(Some)).collect();
                let own = OwnAppend { append: &landed.append, bytes: &landed.lines, entries: &entries };
                store_batch.import_appended(&path, ctx.host, &own)?
            }
            None => store_batch.import(&path, ctx.host)?,
        };
        // The import chained the batch's lines already: its last entry's node names the overlay.
        let imported = report.last_entry.filter(|(id, _)| id.as_deref() == Some(leaf_id)).map(|(_, node)| node);
        let overlay = match (landed, imported) {
            (Some((_, bytes)), Some(node)) => Some((node, bytes)),
            _ => reparsed(&path, ctx.host, leaf_id)?,
        };
        if let Some((node, bytes)) = overlay {
            let id = store_batch.put(Kind::Overlay, &bytes)?;
            store_batch.set_ref(&refs::overlay_ref(&node), id)?;
        }
        Ok(store_batch.commit()?)
    }
}

/// The overlay at entry `leaf_id` of the file at `path`, read and parsed again.
fn reparsed(path: &Path, host: Option<HostKind>, leaf_id: &str) -> Result<Option<(ObjectId, Vec<u8>)>> {
    let file = shake_plumbing::hosts::read(path).map_err(FileError::at(path, "read"))?;
    recompute_as(&file, host, leaf_id)
}

/// Recomputes the overlay at entry `leaf_id` of a session file (as the store rebuilt it) for
/// `shake fsck`: the leaf's node id and the overlay's canonical bytes; `None` when the file has
/// no such entry.
pub fn recompute(file: &SessionFile, leaf_id: &str) -> Result<Option<(ObjectId, Vec<u8>)>> {
    recompute_as(file, None, leaf_id)
}

/// [`recompute`] with the file read by the host `host` names (else the one that accepts it).
fn recompute_as(file: &SessionFile, host: Option<HostKind>, leaf_id: &str) -> Result<Option<(ObjectId, Vec<u8>)>> {
    let session = shake_plumbing::hosts::load(file, host)?;
    let Some(leaf) = session.index_of(leaf_id) else { return Ok(None) };
    let projection = View::at(&session, Some(leaf))?;
    Ok(Some((leaf_node(&session, leaf)?, bytes(&session, leaf, &Wall::at(&projection)))))
}

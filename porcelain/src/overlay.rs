//! Per-leaf overlays in the store: the wall at a leaf as a canonical-JSON `overlay` object under
//! `refs/overlays/<leaf node id>` (`docs/format.md`, "Overlay objects"), written after fold and
//! undo and whenever `status` or `meter` derives a wall, read back by them, and recomputed by
//! `shake fsck` to check. Overlays are a cache of what the session file says: a store failure
//! only warns (once per process).

use std::path::Path;

use serde_json::json;
use shake_plumbing::durable::FileError;
use shake_plumbing::host::{Session, SessionFile, View};
use shake_plumbing::id::{Kind, ObjectId};
use shake_plumbing::store::{path_nodes, refs, touch, Store};
use shake_plumbing::{Context, Error, Result};

use crate::wall::Wall;

/// The overlay format this shake writes and reads; a later shake whose wall differs bumps it, and
/// treats stored overlays of another version as absent (they are a cache of the session file).
pub const VERSION: u64 = 1;

/// The overlay object's canonical bytes for the wall at `leaf`: `{"v","session","leaf","wall"}`.
pub fn bytes(session: &Session<'_>, leaf: usize, wall: &Wall) -> Vec<u8> {
    let sid = session.header.as_ref().map(|h| h.id.as_ref());
    let value =
        json!({"v": VERSION, "session": sid, "leaf": session.entries[leaf].id.as_ref(), "wall": wall.overlay()});
    // `preserve_order` keeps the keys as written here and in `Wall::overlay`: one spelling.
    serde_json::to_vec(&value).unwrap_or_default()
}

/// The node id of `leaf` (what its overlay ref is named by).
fn leaf_node(session: &Session<'_>, leaf: usize) -> Result<ObjectId> {
    path_nodes(session, leaf)?.last().copied().ok_or_else(|| Error::user("an empty path has no leaf node"))
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
    batch.commit()
}

/// Returns the wall at the projection's leaf: rebuilt from the leaf's stored overlay when there
/// is one that fits this session, else derived from the path (and then stored).
pub fn wall_at(ctx: &Context, session: &Session<'_>, projection: &View<'_, '_>) -> Wall {
    let Some((leaf, node)) = projection.leaf.and_then(|l| Some((l, leaf_node(session, l).ok()?))) else {
        return Wall::at(projection);
    };
    if let Some(wall) =
        stored(ctx, &node, &session.entries[leaf].id).and_then(|v| Wall::from_overlay(projection, &v["wall"]))
    {
        return wall;
    }
    let wall = Wall::at(projection);
    if let Err(e) = save_at(ctx, session, leaf, &node, &wall) {
        touch::warn_once(ctx, &e);
    }
    wall
}

/// The stored overlay at `node`, when there is one for the entry `leaf_id` (any failure: `None`).
fn stored(ctx: &Context, node: &ObjectId, leaf_id: &str) -> Option<serde_json::Value> {
    let store = Store::open(ctx).ok()?;
    let id = store.read_ref(&refs::overlay_ref(node)).ok()??;
    let value: serde_json::Value = serde_json::from_slice(store.read_kind(&id, Kind::Overlay).ok()?).ok()?;
    (value["v"] == VERSION && value["leaf"] == leaf_id).then_some(value)
}

/// After an append: imports the session file again and stores the overlay at the entry
/// `leaf_id` (the batch's last entry), in one store write. A failure only warns.
pub fn after_write(ctx: &Context, path: &Path, leaf_id: &str) {
    if let Err(e) = import_with_overlay(ctx, path, leaf_id) {
        touch::warn_once(ctx, &e);
    }
}

fn import_with_overlay(ctx: &Context, path: &Path, leaf_id: &str) -> Result<()> {
    let mut store = Store::open(ctx)?;
    let mut batch = store.batch()?;
    batch.import(path, ctx.host)?;
    let file = SessionFile::read(path).map_err(FileError::at(path, "read"))?;
    let session = shake_plumbing::host::load(&file, ctx.host)?;
    if let Some(leaf) = session.index_of(leaf_id) {
        let wall = Wall::at(&View::at(&session, Some(leaf))?);
        let id = batch.put(Kind::Overlay, &bytes(&session, leaf, &wall))?;
        batch.set_ref(&refs::overlay_ref(&leaf_node(&session, leaf)?), id)?;
    }
    batch.commit()
}

/// Recomputes the overlay at entry `leaf_id` of a session file (as the store rebuilt it) for
/// `shake fsck`: the leaf's node id and the overlay's canonical bytes; `None` when the file has
/// no such entry.
pub fn recompute(file: &SessionFile, leaf_id: &str) -> Result<Option<(ObjectId, Vec<u8>)>> {
    let session = shake_plumbing::host::load(file, None)?;
    let Some(leaf) = session.index_of(leaf_id) else { return Ok(None) };
    let projection = View::at(&session, Some(leaf))?;
    Ok(Some((leaf_node(&session, leaf)?, bytes(&session, leaf, &Wall::at(&projection)))))
}

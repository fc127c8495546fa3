//! Per-leaf overlays in the store: the wall at a leaf as a canonical-JSON `overlay` object under
//! `refs/overlays/<leaf node id>` (`docs/format.md`, "Overlay objects"), written after fold and
//! undo and whenever `status` computes a wall, and recomputed by `shake fsck` to check.

use std::path::Path;

use serde_json::json;
use shake_plumbing::id::{Kind, ObjectId};
use shake_plumbing::pi::{Projection, Session, SessionFile};
use shake_plumbing::store::{path_nodes, refs, touch, Store};
use shake_plumbing::{Context, Error, Result};

use crate::wall::Wall;

/// The overlay object's canonical bytes for the wall at `leaf`: `{"session","leaf","wall"}`.
pub fn bytes(session: &Session<'_>, leaf: usize, wall: &Wall) -> Vec<u8> {
    let sid = session.header.as_ref().map(|h| h.id.as_ref());
    let value = json!({"session": sid, "leaf": session.entries[leaf].id.as_ref(), "wall": wall.overlay()});
    // `preserve_order` keeps the keys as written here and in `Wall::overlay`: one spelling.
    serde_json::to_vec(&value).unwrap_or_default()
}

/// Stores the overlay of `leaf` under its ref unless the ref already names it. A store failure
/// only warns (once per process): overlays are a cache of what the session file says.
pub fn save(ctx: &Context, session: &Session<'_>, leaf: usize, wall: &Wall) {
    if let Err(e) = try_save(ctx, session, leaf, wall) {
        touch::warn_once(ctx, &e);
    }
}

fn try_save(ctx: &Context, session: &Session<'_>, leaf: usize, wall: &Wall) -> Result<()> {
    let Some(&node) = path_nodes(session, leaf)?.last() else { return Ok(()) };
    let bytes = bytes(session, leaf, wall);
    let name = refs::overlay_ref(&node);
    let mut store = Store::open(ctx)?;
    if store.read_ref(&name)? == Some(ObjectId::hash(Kind::Overlay, &bytes)) {
        return Ok(());
    }
    let mut batch = store.batch()?;
    let id = batch.put(Kind::Overlay, &bytes)?;
    batch.set_ref(&name, id)?;
    batch.commit()
}

/// Reads the session file again after an append, imports it, and stores the overlay at the entry
/// `leaf_id` (the batch's last entry).
pub fn after_write(ctx: &Context, path: &Path, leaf_id: &str) {
    touch::import(ctx, path);
    let Ok(file) = SessionFile::read(path) else { return };
    let Ok(session) = Session::parse(&file) else { return };
    let Some(leaf) = session.index_of(leaf_id) else { return };
    if let Ok(projection) = Projection::at(&session, Some(leaf)) {
        save(ctx, &session, leaf, &Wall::at(&projection));
    }
}

/// Recomputes the overlay at entry `leaf_id` of a session file (as the store rebuilt it) for
/// `shake fsck`: the leaf's node id and the overlay's canonical bytes; `None` when the file has
/// no such entry.
pub fn recompute(file: &SessionFile, leaf_id: &str) -> Result<Option<(ObjectId, Vec<u8>)>> {
    let session = Session::parse(file)?;
    let Some(leaf) = session.index_of(leaf_id) else { return Ok(None) };
    let projection = Projection::at(&session, Some(leaf))?;
    let node = *path_nodes(&session, leaf)?.last().ok_or_else(|| Error::user("empty path"))?;
    Ok(Some((node, bytes(&session, leaf, &Wall::at(&projection)))))
}

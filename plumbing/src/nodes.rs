//! Node ids: where an entry sits in a session tree, as a chain hash over its root→entry path
//! (`node(e) = H(node(parent) ‖ entry object id)`), so equal paths have equal ids in every file.

use crate::host::{Cycle, Node, Session};
use crate::id::{Kind, ObjectId};

/// Returns the object id the store keys an entry's line by: the hash of its exact bytes, or,
/// when `rows` names the file's session id and the line carries it, of the row with that id
/// taken out (`store::row`, as the import stores it).
pub fn entry_object(entry: &Node<'_>, rows: Option<&str>) -> ObjectId {
    match rows.and_then(|id| crate::store::row::take_out(entry.raw(), id)) {
        Some(row) => ObjectId::hash(Kind::Row, &row),
        None => ObjectId::hash(Kind::Entry, entry.raw()),
    }
}

/// The session id the store takes out of a session's rows: its header's, for a host that
/// writes the id into every row (Claude Code), when it is one rows may be keyed without.
pub fn row_session(session: &Session<'_>) -> Option<String> {
    let header = session.header.as_ref()?;
    let crate::host::Writer::Fork(forks) = session.host().writer() else { return None };
    let id = forks.row_session_id(&String::from_utf8_lossy(header.raw))?;
    Some(id).filter(|id| crate::store::row::safe(id))
}

/// Chain node ids, computed once per entry: `node(e) = ObjectId::node(node(parent), object(e))`
/// along the host's parent links, so equal paths have equal ids.
pub struct NodeIds<'s, 'a> {
    session: &'s Session<'a>,
    rows: Option<String>,
    memo: Vec<Option<ObjectId>>,
}

impl<'s, 'a> NodeIds<'s, 'a> {
    /// Starts with nothing computed.
    pub fn new(session: &'s Session<'a>) -> NodeIds<'s, 'a> {
        NodeIds { session, rows: row_session(session), memo: vec![None; session.entries.len()] }
    }

    /// Returns the node id of every entry of `path` (a root→leaf path from [`path_of`](crate::rev::path_of)).
    pub fn path(&mut self, path: &[usize]) -> Vec<ObjectId> {
        let mut parent: Option<ObjectId> = None;
        path.iter()
            .map(|&i| {
                let object = || entry_object(&self.session.entries[i], self.rows.as_deref());
                let node = *self.memo[i].get_or_insert_with(|| ObjectId::node(parent.as_ref(), &object()));
                parent = Some(node);
                node
            })
            .collect()
    }
}

/// Returns the node ids of the root→`leaf` path, or the cycle that makes the path endless.
pub fn path_nodes(session: &Session<'_>, leaf: usize) -> Result<Vec<ObjectId>, Cycle> {
    Ok(NodeIds::new(session).path(&session.path(leaf)?))
}

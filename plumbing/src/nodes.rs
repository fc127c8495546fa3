//! Node ids: where an entry sits in a session tree, as a chain hash over its root→entry path
//! (`node(e) = H(node(parent) ‖ entry object id)`), so equal paths have equal ids in every file.

use crate::host::{Cycle, Node, Session};
use crate::id::{Kind, ObjectId};

/// Returns the entry object id: the hash of the line's exact bytes.
pub fn entry_object(entry: &Node<'_>) -> ObjectId {
    ObjectId::hash(Kind::Entry, entry.raw)
}

/// Chain node ids, computed once per entry: `node(e) = ObjectId::node(node(parent), object(e))`
/// along the host's parent links, so equal paths have equal ids.
pub struct NodeIds<'s, 'a> {
    session: &'s Session<'a>,
    memo: Vec<Option<ObjectId>>,
}

impl<'s, 'a> NodeIds<'s, 'a> {
    /// Starts with nothing computed.
    pub fn new(session: &'s Session<'a>) -> NodeIds<'s, 'a> {
        NodeIds { session, memo: vec![None; session.entries.len()] }
    }

    /// Returns the node id of every entry of `path` (a root→leaf path from [`path_of`]).
    pub fn path(&mut self, path: &[usize]) -> Vec<ObjectId> {
        let mut parent: Option<ObjectId> = None;
        path.iter()
            .map(|&i| {
                let node = *self.memo[i]
                    .get_or_insert_with(|| ObjectId::node(parent.as_ref(), &entry_object(&self.session.entries[i])));
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

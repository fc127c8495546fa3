//! Session trees and families, from what import recorded: the node ids of an imported file, its
//! leaves, and which imported files share a path prefix (forks share their early node ids).

use std::collections::{HashMap, HashSet};

use super::{Result, StoreError};
use crate::id::{Kind, ObjectId};

use super::version::split_node;
use super::{state, SessionInfo, Store};

/// The tree of one imported session file, as node ids.
#[derive(Clone, Debug, Default)]
pub struct Tree {
    /// Every node of the file's tree entries.
    pub nodes: HashSet<ObjectId>,
    /// Nodes that are no other node's parent.
    pub leaves: usize,
}

impl Store {
    /// Returns the node ids of an imported file's committed tree entries and its leaf count. An
    /// import state or a chunk of its node table that does not read is a corrupt-store error
    /// naming it (an empty tree would be a wrong count); a state gone since it was listed
    /// gives an empty tree.
    pub fn session_tree(&self, info: &SessionInfo) -> Result<Tree> {
        let key = info.path.to_string_lossy();
        let Some((head, rest)) = self.read_state(&key)?? else { return Ok(Tree::default()) };
        let Some(resume) = state::decode_resume(&head, &rest) else {
            return Err(StoreError::ResumeUnreadable { path: info.path.clone() });
        };
        // v2/v3 files list every node; a v1 file only its last one (its entries form one chain),
        // so walk up through the node objects until a node already seen.
        let table = state::Table::of(self, &resume);
        let mut todo: Vec<ObjectId> = table.iter_back().map(|(_, n)| n).chain(resume.last_node.map(ObjectId)).collect();
        if let Some(chunk) = table.failed() {
            return Err(StoreError::ChunkUnread { path: info.path.clone(), chunk });
        }
        let mut nodes = HashSet::new();
        let mut parents = HashSet::new();
        while let Some(node) = todo.pop() {
            if !nodes.insert(node) {
                continue;
            }
            // A node the state or another node names must be there: one that is missing or of
            // another kind is corruption, not a shorter tree (which would print wrong figures).
            let obj = self.read(&node)?;
            let split = (obj.kind == Kind::Node).then(|| split_node(obj.bytes)).flatten();
            let (parent, _) = split.ok_or_else(|| StoreError::NotANode { path: info.path.clone(), node })?;
            if let Some(parent) = parent {
                parents.insert(parent);
                todo.push(parent);
            }
        }
        let leaves = nodes.iter().filter(|n| !parents.contains(n)).count();
        Ok(Tree { nodes, leaves })
    }
}

/// Groups sessions into families: two sessions are related when their trees share a node (then
/// they share the whole path from a root to it). Returns, per session, the indexes of its
/// relatives and how many nodes each shares with it, in input order.
pub fn families(trees: &[Tree]) -> Vec<Vec<(usize, usize)>> {
    let mut owners: HashMap<&ObjectId, Vec<usize>> = HashMap::new();
    for (i, tree) in trees.iter().enumerate() {
        for node in &tree.nodes {
            owners.entry(node).or_default().push(i);
        }
    }
    let mut shared: Vec<HashMap<usize, usize>> = vec![HashMap::new(); trees.len()];
    for list in owners.values().filter(|l| l.len() > 1) {
        for &a in list {
            for &b in list.iter().filter(|&&b| b != a) {
                *shared[a].entry(b).or_default() += 1;
            }
        }
    }
    shared
        .into_iter()
        .map(|m| {
            let mut v: Vec<(usize, usize)> = m.into_iter().collect();
            v.sort_unstable();
            v
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(ids: &[&str]) -> Tree {
        Tree { nodes: ids.iter().map(|s| ObjectId::hash(Kind::Node, s.as_bytes())).collect(), leaves: 1 }
    }

    #[test]
    fn shared_nodes_make_relatives() {
        let trees = [tree(&["r", "a", "b"]), tree(&["x"]), tree(&["r", "a", "c"])];
        assert_eq!(families(&trees), [vec![(2, 2)], vec![], vec![(0, 2)]]);
    }
}

//! Version objects: one per import that changed a session file, saying how to rebuild the file.
//!
//! Canonical bytes (`docs/format.md`, "version"), ASCII text, every line ending in `\n`:
//!
//! ```text
//! shake-version 1
//! parent <64 hex>          (absent on a file's first version)
//! offset <decimal>         (bytes of the parent's file kept; 0 after a rewrite)
//! newline yes|no           (whether the file ends with "\n"; yes for an empty file)
//! session <id>             (absent unless the host keys rows without their session id:
//!                           the id its row objects put back, `store::row`)
//! <64 hex>                 (one physical line: its entry or row id)
//! path <64 hex> <count>    (count ≥ 2 lines: the last `count` entries of the path ending at
//!                           this node, root first; used for every maximal run of lines whose
//!                           pi parent is the line before)
//! ```
//!
//! The file is `parent_bytes[..offset]` followed by the lines joined with `\n` (plus a final
//! `\n` when `newline` is yes and there is at least one line). Runs make a version of an append
//! or of a fork (a copied path) a few hundred bytes, whatever the number of lines.

use std::collections::HashSet;

use super::{Result, StoreError};
use crate::id::{Kind, ObjectId};

use super::Store;

const MAGIC_LINE: &str = "shake-version 1";

/// One item of a version's line list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item {
    /// One line, by entry id.
    Line(ObjectId),
    /// `count` lines: the entries of the last `count` nodes of the path ending at `node`.
    Path { node: ObjectId, count: u64 },
}

/// A physical line as the importer saw it: its entry, and its node and parent node when it is a
/// tree entry.
#[derive(Clone, Copy, Debug)]
pub struct LineRef {
    /// The line's entry object.
    pub entry: ObjectId,
    /// Its node, for a tree entry.
    pub node: Option<ObjectId>,
    /// Its parent's node, for a tree entry that is not a root.
    pub parent: Option<ObjectId>,
}

/// A decoded version object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Version {
    /// The version this one follows (the previous import of the same file).
    pub parent: Option<ObjectId>,
    /// How many bytes of the parent's file this version keeps before its own lines.
    pub offset: u64,
    /// Whether the file ends with a newline.
    pub newline: bool,
    /// The session id taken out of this version's row objects ([`super::row`]), for hosts that
    /// key rows without it.
    pub session: Option<String>,
    /// The physical lines after `offset`.
    pub items: Vec<Item>,
}

/// Groups lines into items: maximal runs (2 or more) of lines each the pi child of the line
/// before become one `Path` item.
pub fn items(lines: &[LineRef]) -> Vec<Item> {
    let mut items = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let mut j = i + 1;
        while j < lines.len() && lines[j].parent.is_some() && lines[j].parent == lines[j - 1].node {
            j += 1;
        }
        match (j - i, lines[j - 1].node) {
            (n, Some(node)) if n >= 2 => {
                items.push(Item::Path { node, count: n as u64 });
                i = j;
            }
            _ => {
                items.push(Item::Line(lines[i].entry));
                i += 1;
            }
        }
    }
    items
}

impl Version {
    /// How this version came from its parent: `first`, `appended` (lines after the parent's
    /// bytes) or `rewritten` (the file replaced).
    pub fn how(&self) -> &'static str {
        match (self.parent, self.offset) {
            (None, _) => "first",
            (Some(_), 0) => "rewritten",
            (Some(_), _) => "appended",
        }
    }

    /// Returns the canonical bytes (what the version's id hashes).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = String::with_capacity(64 + self.items.len() * 65);
        out.push_str(MAGIC_LINE);
        out.push('\n');
        if let Some(parent) = &self.parent {
            out.push_str(&format!("parent {parent}\n"));
        }
        out.push_str(&format!("offset {}\nnewline {}\n", self.offset, if self.newline { "yes" } else { "no" }));
        if let Some(session) = &self.session {
            out.push_str(&format!("session {session}\n"));
        }
        for item in &self.items {
            match item {
                Item::Line(id) => out.push_str(&format!("{id}\n")),
                Item::Path { node, count } => out.push_str(&format!("path {node} {count}\n")),
            }
        }
        out.into_bytes()
    }

    /// Parses canonical bytes; `what` names the object in the error.
    pub fn decode(bytes: &[u8], what: &dyn std::fmt::Display) -> Result<Version> {
        let bad = || StoreError::BadVersion { what: what.to_string() };
        let text = std::str::from_utf8(bytes).map_err(|_| bad())?;
        let body = text.strip_suffix('\n').ok_or_else(bad)?;
        let mut lines = body.split('\n').peekable();
        if lines.next() != Some(MAGIC_LINE) {
            return Err(bad());
        }
        let parent = match lines.peek().and_then(|l| l.strip_prefix("parent ")) {
            Some(hex) => {
                let id = hex.parse().map_err(|_| bad())?;
                lines.next();
                Some(id)
            }
            None => None,
        };
        let offset =
            lines.next().and_then(|l| l.strip_prefix("offset ")).and_then(|n| n.parse().ok()).ok_or_else(bad)?;
        let newline = match lines.next() {
            Some("newline yes") => true,
            Some("newline no") => false,
            _ => return Err(bad()),
        };
        let session = match lines.peek().and_then(|l| l.strip_prefix("session ")) {
            Some(id) if super::row::safe(id) => {
                let id = id.to_string();
                lines.next();
                Some(id)
            }
            Some(_) => return Err(bad()),
            None => None,
        };
        let items = lines.map(|l| parse_item(l).ok_or_else(bad)).collect::<Result<Vec<_>>>()?;
        let version = Version { parent, offset, newline, session, items };
        // Only the canonical spelling is a version: anything else would give one file two ids.
        if version.encode() != bytes {
            return Err(bad());
        }
        Ok(version)
    }

    /// Returns the entry id of every line, expanding `path` items through the node objects.
    pub fn lines(&self, store: &Store, what: &dyn std::fmt::Display) -> Result<Vec<ObjectId>> {
        let mut out = Vec::new();
        for item in &self.items {
            match *item {
                Item::Line(id) => out.push(id),
                Item::Path { node, count } => {
                    // A path cannot be longer than the store has objects (a corrupt count must
                    // not loop for ages).
                    if count > store.counts().objects {
                        return Err(StoreError::PathTooLong { what: what.to_string(), node, count });
                    }
                    let start = out.len();
                    let mut at = Some(node);
                    for _ in 0..count {
                        let id = at.ok_or_else(|| StoreError::PathTooShort { what: what.to_string(), node, count })?;
                        let bytes = store.read_kind(&id, Kind::Node)?;
                        let (parent, entry) =
                            split_node(bytes).ok_or_else(|| StoreError::BadNodeIn { what: what.to_string(), id })?;
                        out.push(entry);
                        at = parent;
                    }
                    out[start..].reverse();
                }
            }
        }
        Ok(out)
    }
}

/// Splits a node object's bytes into its parent node (if any) and its entry.
pub fn split_node(bytes: &[u8]) -> Option<(Option<ObjectId>, ObjectId)> {
    let id = |b: &[u8]| {
        let mut a = [0u8; 32];
        a.copy_from_slice(b);
        ObjectId(a)
    };
    match bytes.len() {
        32 => Some((None, id(bytes))),
        64 => Some((Some(id(&bytes[..32])), id(&bytes[32..]))),
        _ => None,
    }
}

fn parse_item(line: &str) -> Option<Item> {
    match line.strip_prefix("path ") {
        None => line.parse().ok().map(Item::Line),
        Some(rest) => {
            let (node, count) = rest.split_once(' ')?;
            Some(Item::Path { node: node.parse().ok()?, count: count.parse().ok().filter(|&n| n >= 2)? })
        }
    }
}

impl Store {
    /// Rebuilds the bytes of the session file a version object describes. The chain is walked
    /// back to a version that keeps nothing of its parent, then replayed forward (iteratively:
    /// chains grow by one per import).
    pub fn version_bytes(&self, id: &ObjectId) -> Result<Vec<u8>> {
        let mut chain = vec![(*id, self.version(id)?)];
        let mut seen = HashSet::from([*id]);
        while let (offset, Some(parent)) = (chain[chain.len() - 1].1.offset, chain[chain.len() - 1].1.parent) {
            if offset == 0 {
                break;
            }
            if !seen.insert(parent) {
                return Err(StoreError::ChainLoops { id: *id, parent });
            }
            chain.push((parent, self.version(&parent)?));
        }
        let mut out = Vec::new();
        for (vid, version) in chain.iter().rev() {
            let keep = usize::try_from(version.offset).unwrap_or(usize::MAX);
            if keep > out.len() {
                return Err(StoreError::KeepsTooMuch { id: *vid, keep, has: out.len() });
            }
            out.truncate(keep);
            let lines = version.lines(self, &format_args!("version {vid}"))?;
            for (i, line) in lines.iter().enumerate() {
                if i > 0 {
                    out.push(b'\n');
                }
                let obj = self.read(line)?;
                match (obj.kind, &version.session) {
                    (Kind::Entry, _) => out.extend_from_slice(obj.bytes),
                    (Kind::Row, Some(session)) => out.extend_from_slice(&super::row::put_back(obj.bytes, session)),
                    (Kind::Row, None) => return Err(StoreError::RowWithoutSession { id: *vid, row: *line }),
                    (kind, _) => return Err(StoreError::NotALine { id: *line, kind }),
                }
            }
            if version.newline && !lines.is_empty() {
                out.push(b'\n');
            }
        }
        Ok(out)
    }

    /// Reads and decodes a version object.
    pub fn version(&self, id: &ObjectId) -> Result<Version> {
        Version::decode(self.read_kind(id, Kind::Version)?, &format_args!("version {id}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> ObjectId {
        ObjectId::hash(Kind::Entry, s.as_bytes())
    }

    #[test]
    fn encode_decode_round_trip_and_strictness() {
        let a = id("a");
        let v = Version {
            parent: Some(a),
            offset: 12,
            newline: false,
            session: None,
            items: vec![Item::Line(a), Item::Path { node: a, count: 3 }],
        };
        let bytes = v.encode();
        assert!(bytes.starts_with(b"shake-version 1\nparent "));
        assert!(bytes.ends_with(format!("path {a} 3\n").as_bytes()));
        assert_eq!(Version::decode(&bytes, &"x").unwrap(), v);
        let first = Version { parent: None, offset: 0, newline: true, session: None, items: vec![] };
        assert_eq!(first.encode(), b"shake-version 1\noffset 0\nnewline yes\n");
        let claude = Version { session: Some("3f2a-9".into()), ..first.clone() };
        assert_eq!(claude.encode(), b"shake-version 1\noffset 0\nnewline yes\nsession 3f2a-9\n");
        assert_eq!(Version::decode(&claude.encode(), &"x").unwrap(), claude);
        assert!(Version::decode(b"shake-version 1\noffset 0\nnewline yes\nsession a b\n", &"x").is_err());
        assert!(Version::decode(b"shake-version 1\noffset 00\nnewline yes\n", &"x").is_err());
        assert!(
            Version::decode(format!("shake-version 1\noffset 0\nnewline yes\npath {a} 1\n").as_bytes(), &"x").is_err()
        );
        assert!(Version::decode(b"garbage", &"x").is_err());
    }

    #[test]
    fn runs_of_children_become_paths() {
        let n = |s: &str| Some(ObjectId::hash(Kind::Node, s.as_bytes()));
        let lines = [
            LineRef { entry: id("header"), node: None, parent: None },
            LineRef { entry: id("r"), node: n("r"), parent: None },
            LineRef { entry: id("a"), node: n("a"), parent: n("r") },
            LineRef { entry: id("b"), node: n("b"), parent: n("a") },
            LineRef { entry: id("side"), node: n("side"), parent: n("r") },
            LineRef { entry: id("bad"), node: None, parent: None },
        ];
        let items = items(&lines);
        assert_eq!(
            items,
            [
                Item::Line(id("header")),
                Item::Path { node: n("b").unwrap(), count: 3 },
                Item::Line(id("side")),
                Item::Line(id("bad"))
            ]
        );
    }
}

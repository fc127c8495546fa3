//! Version objects: one per import that changed a session file, saying how to rebuild the file.
//!
//! Canonical bytes (`docs/format.md`, "version"), ASCII text, every line ending in `\n`:
//!
//! ```text
//! shake-version 1
//! parent <64 hex>          (absent on a file's first version)
//! offset <decimal>         (bytes of the parent's file kept; 0 after a rewrite)
//! newline yes|no           (whether the file ends with "\n"; yes for an empty file)
//! <64 hex>                 (one entry id per physical line from `offset` on)
//! ```
//!
//! The file is `parent_bytes[..offset]` followed by the lines joined with `\n` (plus a final
//! `\n` when `newline` is yes and there is at least one line).

use crate::id::ObjectId;
use crate::{Error, Result};

const MAGIC_LINE: &str = "shake-version 1";

/// A decoded version object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Version {
    /// The version this one follows (the previous import of the same file).
    pub parent: Option<ObjectId>,
    /// How many bytes of the parent's file this version keeps before its own lines.
    pub offset: u64,
    /// Whether the file ends with a newline.
    pub newline: bool,
    /// The entry object of each physical line after `offset`.
    pub lines: Vec<ObjectId>,
}

impl Version {
    /// Returns the canonical bytes (what the version's id hashes).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = String::with_capacity(64 + self.lines.len() * 65);
        out.push_str(MAGIC_LINE);
        out.push('\n');
        if let Some(parent) = &self.parent {
            out.push_str(&format!("parent {parent}\n"));
        }
        out.push_str(&format!("offset {}\nnewline {}\n", self.offset, if self.newline { "yes" } else { "no" }));
        for line in &self.lines {
            out.push_str(&line.to_hex());
            out.push('\n');
        }
        out.into_bytes()
    }

    /// Parses canonical bytes; `what` names the object in the error.
    pub fn decode(bytes: &[u8], what: &dyn std::fmt::Display) -> Result<Version> {
        let bad = || Error::corrupt(format!("{what}: not a valid version object"));
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
        let offset = lines.next().and_then(|l| l.strip_prefix("offset ")).and_then(|n| n.parse().ok()).ok_or_else(bad)?;
        let newline = match lines.next() {
            Some("newline yes") => true,
            Some("newline no") => false,
            _ => return Err(bad()),
        };
        let lines = lines.map(|l| l.parse::<ObjectId>().map_err(|_| bad())).collect::<Result<Vec<_>>>()?;
        let version = Version { parent, offset, newline, lines };
        // Only the canonical spelling is a version: anything else would give one file two ids.
        if version.encode() != bytes {
            return Err(bad());
        }
        Ok(version)
    }
}

/// Rebuilds a file from its version chain. `load` returns a version by id and `entry` an entry
/// object's bytes; the chain is walked back to a version that keeps nothing of its parent, then
/// replayed forward (iteratively: chains grow by one per import).
pub fn rebuild(
    id: &ObjectId,
    load: &dyn Fn(&ObjectId) -> Result<Version>,
    entry: &dyn Fn(&ObjectId, &mut Vec<u8>) -> Result<()>,
) -> Result<Vec<u8>> {
    let mut chain = vec![load(id)?];
    loop {
        let last = &chain[chain.len() - 1];
        match (last.offset, last.parent) {
            (0, _) | (_, None) => break,
            (_, Some(parent)) => chain.push(load(&parent)?),
        }
    }
    let mut out = Vec::new();
    for version in chain.iter().rev() {
        let keep = usize::try_from(version.offset).unwrap_or(usize::MAX);
        if keep > out.len() {
            return Err(Error::corrupt(format!(
                "version {id}: an ancestor keeps {keep} bytes of a parent that has {}",
                out.len()
            )));
        }
        out.truncate(keep);
        for (i, line) in version.lines.iter().enumerate() {
            if i > 0 {
                out.push(b'\n');
            }
            entry(line, &mut out)?;
        }
        if version.newline && !version.lines.is_empty() {
            out.push(b'\n');
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::Kind;
    use std::collections::HashMap;

    #[test]
    fn encode_decode_round_trip_and_strictness() {
        let a = ObjectId::hash(Kind::Entry, b"a");
        let v = Version { parent: Some(a), offset: 12, newline: false, lines: vec![a, a] };
        let bytes = v.encode();
        assert!(bytes.starts_with(b"shake-version 1\nparent "));
        assert_eq!(Version::decode(&bytes, &"x").unwrap(), v);
        let first = Version { parent: None, offset: 0, newline: true, lines: vec![] };
        assert_eq!(first.encode(), b"shake-version 1\noffset 0\nnewline yes\n");
        assert!(Version::decode(b"shake-version 1\noffset 00\nnewline yes\n", &"x").is_err());
        assert!(Version::decode(b"garbage", &"x").is_err());
    }

    #[test]
    fn rebuilds_through_appends_and_partial_lines() {
        let objs: HashMap<ObjectId, Vec<u8>> =
            ["h", "a", "b-part", "b-full"].iter().map(|s| (ObjectId::hash(Kind::Entry, s.as_bytes()), s.as_bytes().to_vec())).collect();
        let id = |s: &str| ObjectId::hash(Kind::Entry, s.as_bytes());
        let v1 = Version { parent: None, offset: 0, newline: false, lines: vec![id("h"), id("a"), id("b-part")] };
        let v2 = Version { parent: Some(ObjectId::hash(Kind::Version, &v1.encode())), offset: 4, newline: true, lines: vec![id("b-full")] };
        let versions: HashMap<ObjectId, Version> =
            [&v1, &v2].into_iter().map(|v| (ObjectId::hash(Kind::Version, &v.encode()), v.clone())).collect();
        let load = |i: &ObjectId| Ok(versions[i].clone());
        let entry = |i: &ObjectId, out: &mut Vec<u8>| {
            out.extend_from_slice(&objs[i]);
            Ok(())
        };
        let v1_id = ObjectId::hash(Kind::Version, &v1.encode());
        assert_eq!(rebuild(&v1_id, &load, &entry).unwrap(), b"h\na\nb-part");
        let v2_id = ObjectId::hash(Kind::Version, &v2.encode());
        assert_eq!(rebuild(&v2_id, &load, &entry).unwrap(), b"h\na\nb-full\n");
    }
}

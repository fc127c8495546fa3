//! The shake log entry: one `custom` entry with `customType: "shake"` per fold or undo, the single
//! source of truth for the wall (`docs/log-entry.md`).

use std::borrow::Cow;

use crate::scope::placeholder;
use serde::{Deserialize, Serialize};
use shake_plumbing::host::Session;
use shake_plumbing::regions::RegionKind;

/// The `customType` of shake's log entries.
pub const CUSTOM_TYPE: &str = "shake";
/// The version of the `data` layout.
pub const VERSION: u32 = 1;

/// The `data` of a shake log entry, in the key order written. Its targets' strings are borrowed
/// from the line read (or from the plan a batch is written from) where they can be: a fold log
/// has a target per folded region.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LogData<'a> {
    /// Layout version (1).
    pub v: u32,
    /// `fold` or `undo`.
    pub op: String,
    /// The fold's scope (`elide`, `thinking`, `images`); absent for undo.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The fold's profile name; absent for undo.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The tokenizer every token figure in this entry was counted with.
    pub tokenizer: String,
    /// Tokens the model no longer sees after this fold (for undo: tokens it sees again).
    pub tokens: u64,
    /// One item per folded region (fold) or restored entry (undo), in context order.
    #[serde(borrow)]
    pub targets: Vec<LogTarget<'a>>,
    /// Ids of earlier half-written log entries this entry completes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repairs: Vec<String>,
    /// Undo only: the fold log entry whose regions this undo restores (`undo --last`); absent
    /// when it restores every region of its targets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undoes: Option<String>,
}

/// One folded region or restored entry.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LogTarget<'a> {
    /// The target entry's id.
    #[serde(borrow)]
    pub id: Cow<'a, str>,
    /// `toolResult`, `block`, `thinking`, `image`, or `restore` (undo).
    #[serde(borrow)]
    pub kind: Cow<'a, str>,
    /// Tool name, fence info string, XML tag, image type, or the entry's role.
    #[serde(borrow)]
    pub label: Cow<'a, str>,
    /// The region's own size (fold) or the tokens restored (undo).
    pub tokens: u64,
    /// The id of the `context_edit` this batch writes for the target.
    #[serde(borrow)]
    pub edit: Cow<'a, str>,
    /// Index of the content block holding the region; absent when the content is a string or
    /// the region is a whole tool result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<usize>,
    /// A block region's UTF-8 byte range `[start, end)` in that text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<[usize; 2]>,
}

/// What a log entry records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Folded regions.
    Fold,
    /// Restored every folded entry.
    Undo,
}

impl LogTarget<'_> {
    /// The text this fold put in place of the region; `None` for a dropped thinking block, an
    /// undo's `restore` item, or a kind this shake does not know.
    pub fn placeholder(&self) -> Option<String> {
        let kind = RegionKind::parse(&self.kind).filter(|k| *k != RegionKind::Thinking)?;
        Some(placeholder(kind, &self.label, self.tokens))
    }
}

impl LogData<'_> {
    /// Returns the operation, `None` for an unknown one (a newer shake wrote it).
    pub fn op(&self) -> Option<Op> {
        match self.op.as_str() {
            "fold" => Some(Op::Fold),
            "undo" => Some(Op::Undo),
            _ => None,
        }
    }

    /// Returns the distinct edit ids the entry announces, in order.
    pub fn edit_ids(&self) -> Vec<&str> {
        let mut seen = std::collections::HashSet::new();
        self.targets.iter().map(|t| &*t.edit).filter(|id| seen.insert(*id)).collect()
    }

    /// Counts the targets of one kind.
    pub fn count(&self, kind: RegionKind) -> usize {
        self.targets.iter().filter(|t| t.kind == kind.as_str()).count()
    }
}

/// Reads an entry as a shake log entry; `None` for any other entry or unreadable data.
pub fn parse<'a>(session: &Session<'a>, index: usize) -> Option<LogData<'a>> {
    serde_json::from_str(session.record(index, CUSTOM_TYPE)?.get()).ok()
}

/// The log data a host keeps outside the file (Claude Code's fork records, attached from the
/// store), oldest first, with the entry each was written at.
pub fn stored<'s>(session: &'s Session<'_>) -> Vec<(usize, LogData<'s>)> {
    session.stored.iter().filter_map(|(i, data)| Some((*i, LogData::deserialize(data).ok()?))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialises_in_documented_key_order() {
        let data = LogData {
            v: VERSION,
            op: "fold".into(),
            scope: Some("elide".into()),
            profile: Some("default".into()),
            tokenizer: "pi".into(),
            tokens: 10,
            targets: vec![LogTarget {
                id: "a".into(),
                kind: "block".into(),
                label: "python".into(),
                tokens: 12,
                edit: "e".into(),
                block: Some(0),
                at: Some([1, 5]),
            }],
            repairs: vec![],
            undoes: None,
        };
        assert_eq!(
            serde_json::to_string(&data).unwrap(),
            r#"{"v":1,"op":"fold","scope":"elide","profile":"default","tokenizer":"pi","tokens":10,"targets":[{"id":"a","kind":"block","label":"python","tokens":12,"edit":"e","block":0,"at":[1,5]}]}"#
        );
    }
}

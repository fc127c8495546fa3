//! The shake log entry: one `custom` entry with `customType: "shake"` per fold or undo, the single
//! source of truth for the wall (`docs/log-entry.md`).

use std::borrow::Cow;

use crate::scope::placeholder;
use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use shake_plumbing::host::Session;
use shake_plumbing::regions::RegionKind;

/// The `customType` of shake's log entries.
pub const CUSTOM_TYPE: &str = "shake";
/// The version of the `data` layout.
pub const VERSION: u32 = 1;

/// The `data` of a shake log entry, in the key order written, its targets held as `T`: a list
/// ([`LogData`]), or their JSON text read one at a time as they are used ([`LogHead`]).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Data<T> {
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
    pub targets: T,
    /// Ids of earlier half-written log entries this entry completes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repairs: Vec<String>,
    /// Undo only: the fold log entry whose regions this undo restores (`undo --last`); absent
    /// when it restores every region of its targets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undoes: Option<String>,
}

/// A log entry's data with its targets listed. Their strings are borrowed from the line read
/// (or from the plan a batch is written from) where they can be: a fold log has a target per
/// folded region.
pub type LogData<'a> = Data<Vec<LogTarget<'a>>>;

/// A log entry's data as the wall reads it from its line ([`read`]): the targets left as their
/// JSON text and read one at a time as they are applied ([`Targets::each`]). A list of a fold's
/// targets was the largest part of `status`'s heap on 100,000 tiny entries (4.5 MiB).
pub type LogHead<'a> = Data<&'a RawValue>;

/// A log's targets, given one at a time: a list, or the JSON text of one.
pub trait Targets<'a> {
    /// Gives each target to `f`, in order.
    fn each(&self, f: &mut dyn FnMut(&LogTarget<'a>));
}

impl<'d: 'a, 'a> Targets<'a> for Vec<LogTarget<'d>> {
    fn each(&self, f: &mut dyn FnMut(&LogTarget<'a>)) {
        for t in self {
            f(t);
        }
    }
}

/// Read as they are given; [`read`] checked that every one reads, so none fails here.
impl<'r: 'a, 'a> Targets<'a> for &'r RawValue {
    fn each(&self, f: &mut dyn FnMut(&LogTarget<'a>)) {
        let _ = each_target(self, |t| f(&t));
    }
}

/// Reads the JSON array `raw` a [`LogTarget`] at a time, giving each to `f` as it is read (no
/// list of them is made); an error for anything but an array of targets.
fn each_target<'r>(raw: &'r RawValue, f: impl FnMut(LogTarget<'r>)) -> serde_json::Result<()> {
    struct Each<F>(F);
    impl<'de, F: FnMut(LogTarget<'de>)> Visitor<'de> for Each<F> {
        type Value = ();
        fn expecting(&self, out: &mut std::fmt::Formatter) -> std::fmt::Result {
            out.write_str("a list of targets")
        }
        fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
            while let Some(t) = seq.next_element()? {
                (self.0)(t);
            }
            Ok(())
        }
    }
    let mut reader = serde_json::Deserializer::from_str(raw.get());
    (&mut reader).deserialize_seq(Each(f))?;
    reader.end()
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
        match RegionKind::parse(&self.kind)? {
            RegionKind::Thinking => None,
            RegionKind::ToolInput => Some(crate::scope::input_placeholder(&self.label, self.tokens, &self.id, None)),
            kind => Some(placeholder(kind, &self.label, self.tokens)),
        }
    }
}

impl<T> Data<T> {
    /// Returns the operation, `None` for an unknown one (a newer shake wrote it).
    pub fn op(&self) -> Option<Op> {
        match self.op.as_str() {
            "fold" => Some(Op::Fold),
            "undo" => Some(Op::Undo),
            _ => None,
        }
    }
}

impl LogData<'_> {
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

/// [`parse`] with the targets left unread ([`LogHead`]), for a reader that uses each once in
/// turn, and their number; `None` exactly where [`parse`] gives `None` (every target is read once
/// here to check it, so a log is applied whole or not at all).
pub fn read<'a>(session: &Session<'a>, index: usize) -> Option<(LogHead<'a>, usize)> {
    let head: LogHead<'a> = serde_json::from_str(session.record(index, CUSTOM_TYPE)?.get()).ok()?;
    let mut targets = 0;
    each_target(head.targets, |_| targets += 1).ok()?;
    Some((head, targets))
}

/// The log data a host keeps outside the file (Claude Code's fork records, attached from the
/// store), oldest first, with the entry each was written at.
pub fn stored<'s>(session: &'s Session<'_>) -> Vec<(usize, LogData<'s>)> {
    stored_at(session).into_iter().map(|(i, data, _)| (i, data)).collect()
}

/// [`stored`] with when each record was made, when it says (an older shake's do not).
pub fn stored_at<'s>(session: &'s Session<'_>) -> Vec<(usize, LogData<'s>, Option<&'s str>)> {
    let read =
        |s: &'s shake_plumbing::host::Stored| Some((s.index, LogData::deserialize(&s.data).ok()?, s.at.as_deref()));
    session.stored.iter().filter_map(read).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Targets read one at a time from a log's line are the targets of the whole data parsed at
    /// once, with `undoes` after `targets`, escaped strings and a kind this shake does not know;
    /// and a log with one unreadable target is no log at all, as for [`parse`].
    #[test]
    fn targets_read_one_at_a_time_are_the_listed_ones() {
        let data = r#"{"v":1,"op":"undo","tokenizer":"pi","tokens":3,"targets":[{"id":"a\"b","kind":"restore","label":"\u00e9t\u00e9","tokens":1,"edit":"e1"},{"id":"c","kind":"someday","label":"x","tokens":2,"edit":"e2","block":1,"at":[0,4]}],"repairs":["r"],"undoes":"l1"}"#;
        let whole: LogData = serde_json::from_str(data).unwrap();
        let head: LogHead = serde_json::from_str(data).unwrap();
        let mut read = Vec::new();
        head.targets.each(&mut |t| read.push(t.clone()));
        assert_eq!(read, whole.targets);
        assert_eq!(
            (head.op(), head.undoes.as_deref(), &head.repairs[..]),
            (Some(Op::Undo), Some("l1"), &["r".to_string()][..])
        );
        assert_eq!(whole.targets[0].id, "a\"b");
        let bad = data.replace(r#""tokens":2"#, r#""tokens":"2""#);
        let head: LogHead = serde_json::from_str(&bad).unwrap();
        assert!(each_target(head.targets, drop).is_err());
        assert!(serde_json::from_str::<LogData>(&bad).is_err());
    }

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

//! A Claude Code transcript (`<session-uuid>.jsonl`) read into rows, raw bytes kept exactly.
//!
//! Every line is kept: conversation rows (`user`, `assistant`, `attachment`, `system`) and every
//! other `type` (metadata such as `last-prompt`, `api-request`, `cost-state`; unknown types too),
//! so a rewrite can reproduce the file byte for byte. Lines that are not JSON objects are
//! recorded, not fatal: Claude Code's own loader skips them, and a torn last line (its writer
//! flushes every 100 ms) is normal while it runs.
//!
//! A row holds only the few fields the loader walks by (a field scan of the line, no `Value`
//! tree: [`crate::js::json::members`]); everything else, `message.content` first, is read from the
//! line where it is used, so a transcript costs little more than its bytes.

use std::ops::Range;
use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::Value;

use crate::host::file::{Line, SessionFile};
use crate::js::json::members;

/// The row types that carry `uuid`/`parentUuid` and form the conversation.
const CONVERSATION: [&str; 4] = ["user", "assistant", "attachment", "system"];

/// A transcript: its bytes, its rows, and the lines that are not rows.
pub struct Transcript {
    /// The bytes and the line table.
    pub file: SessionFile,
    /// One row per line that is a JSON object, in file order.
    pub rows: Vec<Row>,
    /// Lines that are not JSON objects (1-based numbers), the torn last line excluded.
    pub bad_lines: Vec<usize>,
    /// The last line when it has no `\n` and is not a JSON object (a write in progress).
    pub torn: Option<usize>,
    /// The `cwd` of the first row that names one.
    cwd: Option<Box<str>>,
    /// The model chosen for the projection (`--model`), over the transcript's own.
    pub(crate) model: Option<String>,
}

/// One JSON row of a transcript: the fields the loader reads, decoded; the rest stays in the
/// line ([`Transcript::text`]).
pub struct Row {
    /// 1-based line number.
    pub line: usize,
    /// The byte range of the line in the file (without its `\n`).
    pub raw: Range<usize>,
    kind: Box<str>,
    uuid: Option<Box<str>>,
    parent_uuid: Option<Box<str>>,
    /// Shared between the rows that carry the same id (nearly all of them).
    session_id: Option<Arc<str>>,
    timestamp: Option<Box<str>>,
    subtype: Option<Box<str>>,
    message_id: Option<Box<str>>,
    /// Where `message` is in the line's text, when it is an object.
    message: Option<Range<usize>>,
    /// `compactMetadata`, kept for compaction boundaries only (small, and read by the relink).
    compact: Option<Box<Value>>,
    flags: u8,
}

const SIDECHAIN: u8 = 1;
const META: u8 = 2;
const COMPACT_SUMMARY: u8 = 4;
const TOOL_USE: u8 = 8;
const TOOL_RESULT: u8 = 16;

impl Row {
    /// The row's `type`.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The row's `uuid`, for conversation rows.
    pub fn uuid(&self) -> Option<&str> {
        self.uuid.as_deref()
    }

    /// The row's `parentUuid` (`None` for `null`, absent, or not a string).
    pub fn parent_uuid(&self) -> Option<&str> {
        self.parent_uuid.as_deref()
    }

    /// The row's `sessionId`, when it is a string.
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// The row's `timestamp` as written, when it is a string.
    pub fn timestamp(&self) -> Option<&str> {
        self.timestamp.as_deref()
    }

    /// The row's `subtype`, when it is a string.
    pub fn subtype(&self) -> Option<&str> {
        self.subtype.as_deref()
    }

    /// Whether the row belongs to a sub-agent's side chain.
    pub fn is_sidechain(&self) -> bool {
        self.flags & SIDECHAIN != 0
    }

    /// Whether `isMeta` is `true`.
    pub fn is_meta(&self) -> bool {
        self.flags & META != 0
    }

    /// Whether `isCompactSummary` is `true`.
    pub fn is_compact_summary(&self) -> bool {
        self.flags & COMPACT_SUMMARY != 0
    }

    /// Whether this is a conversation row: one of the four types, with a string `uuid`.
    pub fn is_conversation(&self) -> bool {
        CONVERSATION.contains(&self.kind()) && self.uuid.is_some()
    }

    /// The API message id of an assistant row (one API message may span several rows).
    pub fn message_id(&self) -> Option<&str> {
        self.message_id.as_deref()
    }

    /// The row's timestamp in milliseconds since the epoch, as `Date.parse` reads it (`None`
    /// when absent or unparseable).
    pub fn time_ms(&self) -> Option<i64> {
        crate::time::parse_iso_millis(self.timestamp()?)
    }

    /// Whether this is a `system` row with subtype `compact_boundary`.
    pub fn is_compact_boundary(&self) -> bool {
        self.kind() == "system" && self.subtype() == Some("compact_boundary")
    }

    /// A compaction boundary's `compactMetadata` (`None` for every other row).
    pub fn compact_metadata(&self) -> Option<&Value> {
        self.compact.as_deref()
    }

    /// The row's `message` in `text`, the row's line (`None` when it is not an object).
    pub fn message_in<'t>(&self, text: &'t str) -> Option<&'t str> {
        text.get(self.message.clone()?)
    }

    /// Whether an assistant row carries a `tool_use` block.
    pub fn has_tool_use(&self) -> bool {
        self.flags & TOOL_USE != 0
    }

    /// Whether a user row carries at least one `tool_result` block.
    pub fn has_tool_result(&self) -> bool {
        self.flags & TOOL_RESULT != 0
    }
}

/// Whether `content` is an array holding a block of type `kind`.
pub(crate) fn has_block(content: Option<&Value>, kind: &str) -> bool {
    content
        .and_then(Value::as_array)
        .is_some_and(|blocks| blocks.iter().any(|b| b.get("type").and_then(Value::as_str) == Some(kind)))
}

/// A raw JSON value decoded as a string; `None` when absent or not a string (a lone surrogate
/// escape reads as U+FFFD, [`crate::js`]).
pub(crate) fn as_str(raw: Option<&RawValue>) -> Option<std::borrow::Cow<'_, str>> {
    crate::js::string_text(raw?.get())
}

/// The `type` of each block of a raw `content` array (none when it is not an array).
fn block_types(content: Option<&RawValue>) -> impl Iterator<Item = Option<std::borrow::Cow<'_, str>>> {
    let blocks = content.and_then(|c| serde_json::from_str::<Vec<&RawValue>>(c.get()).ok()).unwrap_or_default();
    blocks.into_iter().map(|b| as_str(members(b.get(), &["type"])?[0]))
}

impl Transcript {
    /// Reads and parses a transcript file.
    #[cfg(any(test, feature = "fixture-host"))]
    pub fn read(path: &std::path::Path) -> std::io::Result<Transcript> {
        Ok(Transcript::parse(SessionFile::read(path, &[&super::host::Claude])?))
    }

    /// Parses a file already read.
    pub fn parse(file: SessionFile) -> Transcript {
        let mut rows = Vec::new();
        let mut bad_lines = Vec::new();
        let mut torn = None;
        let mut cwd = None;
        let mut session: Option<Arc<str>> = None;
        let last = file.lines.len();
        for (number, line) in (1..).zip(&file.lines) {
            match parse_line(&file, number, line, &mut session, &mut cwd) {
                Some(row) => rows.push(row),
                None if number == last && !file.ends_with_newline() => torn = Some(number),
                None if file.line_text(line).trim().is_empty() => {}
                None => bad_lines.push(number),
            }
        }
        Transcript { file, rows, bad_lines, torn, cwd, model: None }
    }

    /// The exact bytes of a row's line.
    pub fn raw(&self, row: &Row) -> &[u8] {
        &self.file.raw()[row.raw.clone()]
    }

    /// A row's line, as text.
    pub fn text(&self, row: &Row) -> &str {
        self.file.line_text(&self.file.lines[row.line - 1])
    }

    /// A top-level member of a row, raw (read from the line again).
    pub fn member(&self, row: &Row, key: &str) -> Option<&RawValue> {
        members(self.text(row), &[key])?[0]
    }

    /// A row's `message`, raw, when it is an object.
    pub fn message(&self, row: &Row) -> Option<&str> {
        row.message_in(self.text(row))
    }

    /// `message.content` of a user or assistant row, raw.
    pub fn content_raw(&self, row: &Row) -> Option<&RawValue> {
        members(self.message(row)?, &["content"])?[0]
    }

    /// `message.content` of a user or assistant row, parsed (for a projection or a test: the
    /// loader never needs it).
    pub fn content(&self, row: &Row) -> Option<Value> {
        crate::js::value(self.content_raw(row)?.get())
    }

    /// The session id the rows carry (the first row's `sessionId`).
    pub fn session_id(&self) -> Option<&str> {
        self.rows.iter().find_map(Row::session_id)
    }

    /// The working directory of the first row that names one (Claude Code files a session under
    /// the project folder of the directory it started in).
    pub fn cwd(&self) -> Option<&str> {
        self.cwd.as_deref()
    }
}

/// The top-level fields a row keeps, in the order of [`parse_line`]'s slots.
const ROW_KEYS: [&str; 11] = [
    "type",
    "uuid",
    "parentUuid",
    "sessionId",
    "timestamp",
    "subtype",
    "isSidechain",
    "isMeta",
    "isCompactSummary",
    "message",
    "cwd",
];

fn parse_line(
    file: &SessionFile,
    number: usize,
    line: &Line,
    session: &mut Option<Arc<str>>,
    cwd: &mut Option<Box<str>>,
) -> Option<Row> {
    // A lone surrogate escape (JSON.stringify writes one for half a character) is taken, as
    // JSON.parse takes it: its text reads as U+FFFD, as the request Claude Code sends carries it.
    let text = file.line_text(line);
    let [kind, uuid, parent, sid, timestamp, subtype, sidechain, meta, summary, message, row_cwd] =
        members(text, &ROW_KEYS)?;
    let owned = |raw: Option<&RawValue>| as_str(raw).map(|s| Box::<str>::from(s.as_ref()));
    let is_true = |raw: Option<&RawValue>| raw.is_some_and(|r| r.get() == "true");
    let kind = owned(kind).unwrap_or_default();
    let session_id = as_str(sid).map(|s| match session {
        Some(known) if **known == *s => known.clone(),
        _ => session.insert(Arc::from(s.as_ref())).clone(),
    });
    if cwd.is_none() {
        *cwd = owned(row_cwd);
    }
    let message = message.filter(|m| m.get().starts_with('{'));
    let parts = message.and_then(|m| members(m.get(), &["id", "content"]));
    let [message_id, content] = parts.unwrap_or_default();
    let flag = |raw, bit| if is_true(raw) { bit } else { 0 };
    let mut flags = flag(sidechain, SIDECHAIN) | flag(meta, META) | flag(summary, COMPACT_SUMMARY);
    for t in block_types(content) {
        match t.as_deref() {
            Some("tool_use") => flags |= TOOL_USE,
            Some("tool_result") => flags |= TOOL_RESULT,
            _ => {}
        }
    }
    let subtype = owned(subtype);
    let compact = match (&*kind, subtype.as_deref()) {
        ("system", Some("compact_boundary")) => {
            members(text, &["compactMetadata"])?[0].and_then(|m| crate::js::value(m.get())).map(Box::new)
        }
        _ => None,
    };
    let offset = |raw: &RawValue| raw.get().as_ptr() as usize - text.as_ptr() as usize;
    Some(Row {
        line: number,
        raw: line.raw.clone(),
        kind,
        uuid: owned(uuid),
        parent_uuid: owned(parent),
        session_id,
        timestamp: owned(timestamp),
        subtype,
        message_id: owned(message_id),
        message: message.map(|m| offset(m)..offset(m) + m.get().len()),
        compact,
        flags,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_unknown_rows_and_tells_torn_from_bad_lines() {
        let bytes =
            b"{\"type\":\"mystery\",\"x\":1}\nnot json\n{\"type\":\"user\",\"uuid\":\"u\"}\n{\"type\":\"us".to_vec();
        let t = Transcript::parse(SessionFile::from_bytes("t.jsonl".into(), bytes));
        assert_eq!(t.rows.len(), 2);
        assert_eq!(t.rows[0].kind(), "mystery");
        assert!(!t.rows[0].is_conversation() && t.rows[1].is_conversation());
        assert_eq!((t.bad_lines.as_slice(), t.torn), ([2].as_slice(), Some(4)));
        assert_eq!(t.raw(&t.rows[1]), b"{\"type\":\"user\",\"uuid\":\"u\"}");
    }

    #[test]
    fn reads_the_fields_the_loader_walks_by_without_a_value_tree() {
        let text = concat!(
            "{\"type\":\"user\",\"uuid\":\"u1\",\"parentUuid\":null,\"sessionId\":\"s\",\"cwd\":\"/w\",\"isMeta\":true,",
            "\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t\",\"content\":\"a\\nb\"}]}}\n",
            "{\"type\":\"assistant\",\"uuid\":\"a\",\"parentUuid\":\"u1\",\"sessionId\":\"s\",\"isSidechain\":1,",
            "\"message\":{\"id\":\"m\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t\"}]},\"timestamp\":\"2026-01-01T00:00:00.000Z\"}\n",
            "{\"type\":\"system\",\"subtype\":\"compact_boundary\",\"uuid\":\"b\",\"compactMetadata\":{\"preservedSegment\":null}}\n",
            "{\"type\":\"user\",\"uuid\":\"x\",\"message\":\"\\ud800\"}\n",
        );
        let t = Transcript::parse(SessionFile::from_bytes("t.jsonl".into(), text.as_bytes().to_vec()));
        let [u, a, b] = [&t.rows[0], &t.rows[1], &t.rows[2]];
        assert_eq!(
            (u.parent_uuid(), a.parent_uuid(), u.session_id(), t.cwd()),
            (None, Some("u1"), Some("s"), Some("/w"))
        );
        assert!(u.is_meta() && u.has_tool_result() && !u.has_tool_use() && !u.is_sidechain());
        assert!(a.has_tool_use() && !a.is_sidechain() && a.message_id() == Some("m") && a.time_ms().is_some());
        assert_eq!(t.content(u).unwrap()[0]["content"], "a\nb");
        assert!(b.is_compact_boundary() && b.compact_metadata().unwrap().get("preservedSegment").is_some());
        // A lone surrogate escape is taken, as JSON.parse takes it (its text is U+FFFD).
        assert!(t.bad_lines.is_empty(), "{:?}", t.bad_lines);
        assert_eq!(t.rows[3].uuid(), Some("x"));
    }
}

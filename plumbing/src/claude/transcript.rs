//! A Claude Code transcript (`<session-uuid>.jsonl`) read into rows, raw bytes kept exactly.
//!
//! Every line is kept: conversation rows (`user`, `assistant`, `attachment`, `system`) and every
//! other `type` (metadata such as `last-prompt`, `api-request`, `cost-state`; unknown types too),
//! so a rewrite can reproduce the file byte for byte. Lines that are not JSON objects are
//! recorded, not fatal: Claude Code's own loader skips them, and a torn last line (its writer
//! flushes every 100 ms) is normal while it runs.

use std::path::Path;

use serde_json::Value;

use crate::host::file::{Line, SessionFile};

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
}

/// One JSON row of a transcript.
pub struct Row {
    /// 1-based line number.
    pub line: usize,
    /// The byte range of the line in the file (without its `\n`).
    pub raw: std::ops::Range<usize>,
    /// The parsed row.
    pub value: Value,
}

impl Row {
    /// The row's `type`.
    pub fn kind(&self) -> &str {
        self.str("type").unwrap_or("")
    }

    /// A string field at the top level.
    pub fn str(&self, key: &str) -> Option<&str> {
        self.value.get(key).and_then(Value::as_str)
    }

    /// The row's `uuid`, for conversation rows.
    pub fn uuid(&self) -> Option<&str> {
        self.str("uuid")
    }

    /// The row's `parentUuid` (`None` for `null`, absent, or not a string).
    pub fn parent_uuid(&self) -> Option<&str> {
        self.str("parentUuid")
    }

    /// Whether the row belongs to a sub-agent's side chain.
    pub fn is_sidechain(&self) -> bool {
        self.value.get("isSidechain").and_then(Value::as_bool).unwrap_or(false)
    }

    /// Whether this is a conversation row: one of the four types, with a string `uuid`.
    pub fn is_conversation(&self) -> bool {
        CONVERSATION.contains(&self.kind()) && self.uuid().is_some()
    }

    /// The API message id of an assistant row (one API message may span several rows).
    pub fn message_id(&self) -> Option<&str> {
        self.value.get("message")?.get("id")?.as_str()
    }

    /// `message.content` of a user or assistant row.
    pub fn content(&self) -> Option<&Value> {
        self.value.get("message")?.get("content")
    }

    /// The row's timestamp in milliseconds since the epoch, as `Date.parse` reads it (`None`
    /// when absent or unparseable).
    pub fn time_ms(&self) -> Option<i64> {
        crate::time::parse_iso_millis(self.str("timestamp")?)
    }

    /// Whether this is a `system` row with subtype `compact_boundary`.
    pub fn is_compact_boundary(&self) -> bool {
        self.kind() == "system" && self.str("subtype") == Some("compact_boundary")
    }

    /// Whether an assistant row carries a `tool_use` block.
    pub fn has_tool_use(&self) -> bool {
        has_block(self.content(), "tool_use")
    }

    /// Whether a user row carries at least one `tool_result` block.
    pub fn has_tool_result(&self) -> bool {
        has_block(self.content(), "tool_result")
    }
}

/// Whether `content` is an array holding a block of type `kind`.
pub(crate) fn has_block(content: Option<&Value>, kind: &str) -> bool {
    content
        .and_then(Value::as_array)
        .is_some_and(|blocks| blocks.iter().any(|b| b.get("type").and_then(Value::as_str) == Some(kind)))
}

impl Transcript {
    /// Reads and parses a transcript file.
    pub fn read(path: &Path) -> std::io::Result<Transcript> {
        Ok(Transcript::parse(SessionFile::read(path)?))
    }

    /// Parses a file already read.
    pub fn parse(file: SessionFile) -> Transcript {
        let mut rows = Vec::new();
        let mut bad_lines = Vec::new();
        let mut torn = None;
        let last = file.lines.len();
        for line in &file.lines {
            match parse_line(&file, line) {
                Some(value) => rows.push(Row { line: line.number, raw: line.raw.clone(), value }),
                None if line.number == last && !file.ends_with_newline() => torn = Some(line.number),
                None if file.line_text(line).trim().is_empty() => {}
                None => bad_lines.push(line.number),
            }
        }
        Transcript { file, rows, bad_lines, torn }
    }

    /// The exact bytes of a row's line.
    pub fn raw(&self, row: &Row) -> &[u8] {
        &self.file.raw()[row.raw.clone()]
    }

    /// The session id the rows carry (the first row's `sessionId`).
    pub fn session_id(&self) -> Option<&str> {
        self.rows.iter().find_map(|r| r.str("sessionId"))
    }

    /// The working directory of the first row that names one (Claude Code files a session under
    /// the project folder of the directory it started in).
    pub fn cwd(&self) -> Option<&str> {
        self.rows.iter().find_map(|r| r.str("cwd"))
    }
}

fn parse_line(file: &SessionFile, line: &Line) -> Option<Value> {
    let value: Value = serde_json::from_str(file.line_text(line)).ok()?;
    value.is_object().then_some(value)
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
}

//! Claude Code transcripts that Claude Code itself does not resume, told as such (issue 29,
//! rule 11) instead of being read as empty conversations:
//!
//! - a file of `summary` rows only (Claude Code before 2.1.x wrote such files beside the
//!   sessions they summarised): `claude --resume <id>` says "No conversation found with session
//!   ID: <id>";
//! - a sub-agent's transcript (`<session>/subagents/agent-<id>.jsonl`), every row of which is on
//!   the side chain of its parent session: Claude Code resumes the parent session only (for
//!   `claude --resume agent-<id>` the id "is not a UUID and does not match any session title").

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::transcript::Transcript;
use crate::host::error::HostError;
use crate::host::SessionFile;

/// The number of rows of a file whose every JSON line is a `summary` row with a `leafUuid`
/// (`None` when another line, or no line, is there).
pub(crate) fn summary_only(file: &SessionFile) -> Option<usize> {
    #[derive(Deserialize)]
    struct Summary<'a> {
        #[serde(rename = "type", borrow)]
        kind: &'a str,
        #[serde(rename = "leafUuid", borrow)]
        leaf: Option<&'a str>,
    }
    let mut rows = 0;
    for line in &file.lines {
        let text = file.line_text(line);
        if text.trim().is_empty() {
            continue;
        }
        let row: Summary<'_> = serde_json::from_str(text).ok()?;
        (row.kind == "summary" && row.leaf.is_some()).then_some(())?;
        rows += 1;
    }
    (rows > 0).then_some(rows)
}

/// The error for a transcript Claude Code does not resume, when it is one.
pub(crate) fn refusal(file: &SessionFile, t: &Transcript) -> Option<HostError> {
    let at = file.display();
    if let Some(rows) = summary_only(file) {
        let id = file.path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        return Some(HostError::refused(format!(
            "{at}: a Claude Code file of {rows} `summary` rows and no conversation; Claude Code does not \
             resume it (\"No conversation found with session ID: {id}\")"
        )));
    }
    let conversation: Vec<_> = t.rows.iter().filter(|r| r.is_conversation()).collect();
    if conversation.is_empty() || !conversation.iter().all(|r| r.is_sidechain()) {
        return None;
    }
    let parent = match t.session_id() {
        Some(id) => match parent_file(&file.path, id) {
            Some(path) => format!("session {id} ({})", path.display()),
            None => format!("session {id}"),
        },
        None => "session".to_string(),
    };
    Some(HostError::refused(format!(
        "{at}: a Claude Code sub-agent transcript (all {} of its rows are on a side chain); Claude Code \
         does not resume it on its own, only its parent {parent}",
        conversation.len()
    )))
}

/// The parent session's transcript of a sub-agent file at `path`, when it is where Claude Code
/// keeps it: `<project>/<id>.jsonl` for `<project>/<id>/subagents/agent-….jsonl`.
fn parent_file(path: &Path, id: &str) -> Option<PathBuf> {
    let subagents = path.parent().filter(|d| d.file_name().is_some_and(|n| n == "subagents"))?;
    let session = subagents.parent().filter(|d| d.file_name().is_some_and(|n| n == id))?;
    let file = session.parent()?.join(format!("{id}.jsonl"));
    file.is_file().then_some(file)
}

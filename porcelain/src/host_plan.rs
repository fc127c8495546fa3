//! `shake fold --plan` / `shake undo --plan`: a batch for a host to append with its own writer.
//!
//! pi keeps its leaf in memory and never re-reads the file, so inside a running pi the extension
//! (`integrations/pi/shake.ts`) appends through pi itself. The CLI computes exactly what `fold` /
//! `undo` would append and prints it; the host writes the edits, fills in the ids it gave them, and
//! appends the log entry (contract: `docs/pi.md`).

use std::io::Write;

use serde::Serialize;
use serde_json::value::RawValue;
use shake_plumbing::Result;

use crate::log_entry::LogData;
use crate::plan::TargetEdit;
use crate::wall::Wall;

/// One edit as pi's `appendContextEdit(targetId, replacement)` takes it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct HostEdit<'a> {
    target_id: &'a str,
    replacement: Replacement<'a>,
}

#[derive(Serialize)]
struct Replacement<'a> {
    content: &'a RawValue,
}

/// The printed plan: `{"edits","log","tokensFreed"|"tokensRestored","message"}`.
#[derive(Serialize)]
struct HostPlan<'a> {
    edits: Vec<HostEdit<'a>>,
    /// The log entry's data, `edit` ids empty; `None` when a real run would write nothing.
    log: Option<LogData<'a>>,
    #[serde(rename = "tokensFreed", skip_serializing_if = "Option::is_none")]
    tokens_freed: Option<u64>,
    #[serde(rename = "tokensRestored", skip_serializing_if = "Option::is_none")]
    tokens_restored: Option<u64>,
    message: &'a str,
}

/// What the plan's token figure counts.
#[derive(Clone, Copy, Debug)]
pub enum Tokens {
    /// Tokens a fold takes out of the context.
    Freed(u64),
    /// Tokens an undo puts back.
    Restored(u64),
}

/// Prints the plan as one JSON line: `edits`, and the log entry `data` builds from the ids of the
/// half-written batches in `wall` it would repair (`null` when a real run would append nothing);
/// `message` is the line the real run prints.
pub fn print<'a>(
    out: &mut dyn Write,
    wall: &Wall,
    edits: &[TargetEdit],
    data: impl FnOnce(Vec<String>) -> LogData<'a>,
    tokens: Tokens,
    message: &str,
) -> Result {
    let repairs: Vec<String> = wall.torn.iter().map(|t| t.log.clone()).collect();
    let log = (!edits.is_empty() || !repairs.is_empty()).then(|| data(repairs));
    let edits = edits
        .iter()
        .map(|e| HostEdit { target_id: &e.target, replacement: Replacement { content: &e.content } })
        .collect();
    let (tokens_freed, tokens_restored) = match tokens {
        Tokens::Freed(n) => (Some(n), None),
        Tokens::Restored(n) => (None, Some(n)),
    };
    let plan = HostPlan { edits, log, tokens_freed, tokens_restored, message };
    shake_plumbing::output::write_json(out, &plan)?;
    Ok(0)
}

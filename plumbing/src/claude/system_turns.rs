//! Mid-conversation system messages. For the models that take them (claude-opus-4-8,
//! claude-opus-5 and every later family: all but the models of before, `GS` in the binary),
//! Claude Code 2.1.328 sends an attachment's reminder not as user text but as a `role: "system"`
//! message inside `messages`: the reminder's text without its tags (claude-sonnet-5 keeps them),
//! the reminders met since the last assistant message joined by a blank line, placed right
//! before the next assistant message (or at the end): after the user message there, joined to a
//! system message there, or, after an assistant message, as a user message holding the tagged
//! text (the normalizer's `Lo` and its flush `Ca`).

use serde_json::Value;

use super::model;
use super::transcript::{Row, Transcript};

/// Whether Claude Code sends reminders to `target` as system messages.
pub fn takes_system(target: Option<&str>) -> bool {
    target.is_some_and(|m| !model::is_legacy(m))
}

/// Whether the system message keeps the reminder's tags (claude-sonnet-5 alone, `Qpr`).
pub fn keeps_tags(target: &str) -> bool {
    model::canonical(target) == "claude-sonnet-5"
}

/// The types Claude Code sends as user text even to a model that takes system messages (the
/// ones of `I3o` that shake renders).
const USER_ROLE: [&str; 1] = ["fork_briefing"];

/// The text an attachment row adds to the next system message, or `None` when it goes as user
/// text: its recorded role when it has one (`renderedRole`), else a type Claude Code knows and
/// sends as system text; the parts' texts without their reminder tags, joined by a line break.
pub fn promoted(t: &Transcript, row: &Row, parts: &[Value], target: &str) -> Option<String> {
    let role = t.member(row, "renderedRole").and_then(|r| serde_json::from_str::<String>(r.get()).ok());
    let kind = t
        .member(row, "attachment")
        .and_then(|a| crate::js::json::members(a.get(), &["type"]))
        .and_then(|[k]| k)
        .and_then(|k| serde_json::from_str::<String>(k.get()).ok());
    let system = match role.as_deref() {
        Some(role) => role == "system",
        None => kind.is_some_and(|k| !USER_ROLE.contains(&k.as_str())),
    };
    if !system {
        return None;
    }
    let mut texts = Vec::new();
    for part in parts {
        match part {
            Value::String(s) => texts.push(unwrap(s)),
            Value::Array(blocks) => {
                for b in blocks {
                    texts.push(unwrap(b.get("text").and_then(Value::as_str)?));
                }
            }
            _ => return None,
        }
    }
    let text = texts.join("\n");
    (!text.trim().is_empty()).then(|| if keeps_tags(target) { super::attachment::reminder(&text) } else { text })
}

/// A reminder's text without its tags and the line breaks next to them (`twe`).
pub fn unwrap(text: &str) -> &str {
    let (open, close) = ("<system-reminder>", "</system-reminder>");
    let Some(inner) = text.strip_prefix(open).and_then(|r| r.strip_suffix(close)) else { return text };
    let inner = inner.strip_prefix('\n').unwrap_or(inner);
    if inner.is_empty() {
        return inner;
    }
    inner.strip_suffix('\n').unwrap_or(inner)
}

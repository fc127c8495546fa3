//! pi's token estimate (`estimateTokens`): which pieces of each message pi counts, and how.
//!
//! Per message `ceil(chars / 4)` in UTF-16 code units, images 4,800 chars (1,200 tokens), tool
//! calls as name + `JSON.stringify(arguments)`, signatures not counted. The pieces are fed to a
//! [`Pieces`] sink, so a BPE tokenizer counts exactly what pi's estimate counts.

use std::borrow::Cow;

use serde_json::value::RawValue;

use super::entry::{as_str, is_truthy, EntryType};
use super::message::Message;
use super::project::Projection;
use crate::host::Pieces;
use crate::host::{BlockKind, Content, Projected};
use crate::js::stringify;

/// The provider's prompt size for an assistant reply, when it is usable: not aborted or failed,
/// and not zero (pi's own rule for trusting usage).
pub fn request_tokens(m: &Message<'_>) -> Option<u64> {
    if m.role.as_deref() != Some("assistant") || matches!(m.stop_reason.as_deref(), Some("aborted" | "error")) {
        return None;
    }
    let u = m.usage?;
    let n = u.input + u.cache_read + u.cache_write;
    (n.is_finite() && n > 0.0).then_some(n as u64)
}

/// Feeds the pieces of every message context entry `pos` (entry `index`) projects to, one
/// message at a time (`projectContextEntry` then `estimateTokens`).
pub fn visit_entry(projection: &Projection<'_, '_>, pos: usize, index: usize, sink: &mut dyn Pieces) {
    let e = &projection.pi.entries[index];
    if matches!(projection.projected(index), Projected::Omitted) {
        return;
    }
    match e.kind {
        EntryType::Message => {
            let Some(said) = projection.role_said(index) else { return };
            let role = if e.hook_message_role { "custom" } else { said.as_deref().unwrap_or_default() };
            match is_content_role(role) {
                true => visit_said(role, &projection.content(index).unwrap_or(Content::Other), sink),
                // The rare roles that read more of the message than the context keeps.
                false => {
                    if let Some(m) = e.message() {
                        visit_message(role, &m, &m.content(), sink);
                    }
                }
            }
        }
        EntryType::CustomMessage => {
            if let Some(content) = projection.content(index) {
                visit_content(&content, sink);
                sink.end_message();
            }
        }
        EntryType::BranchSummary => visit_summary(e.fields.summary(), sink),
        EntryType::Compaction if pos == 0 => {
            let system = e.fields.system_message().filter(|s| is_truthy(Some(s)));
            if let Some(m) = system.and_then(Message::parse) {
                visit_message(m.role.as_deref().unwrap_or_default(), &m, &m.content(), sink);
            }
            visit_summary(e.fields.summary(), sink);
        }
        _ => {}
    }
}

/// Feeds what editable entry `index` would give the model with `content` in place of its own.
pub fn visit_with(projection: &Projection<'_, '_>, index: usize, content: &Content<'_>, sink: &mut dyn Pieces) {
    let e = &projection.pi.entries[index];
    match projection.role_said(index) {
        Some(said) if e.kind == EntryType::Message => match said.as_deref().unwrap_or_default() {
            role if is_content_role(role) => visit_said(role, content, sink),
            _ => match e.message() {
                Some(m) => visit_message(m.role.as_deref().unwrap_or_default(), &m, content, sink),
                None => sink.end_message(),
            },
        },
        _ => {
            visit_content(content, sink);
            sink.end_message();
        }
    }
}

/// `JSON.stringify(JSON.parse(raw))` ([`stringify::stringify`]), found without parsing `raw` when
/// it is already what that writes (as pi writes every tool call's arguments): building the value
/// to write it again was a twentieth of a dry run on many small entries.
fn stringified(raw: &RawValue) -> Cow<'_, str> {
    match crate::js::is_stringified(raw.get()) {
        true => Cow::Borrowed(raw.get()),
        false => stringify::stringify(raw),
    }
}

fn is_content_role(role: &str) -> bool {
    matches!(role, "user" | "assistant" | "toolResult" | "custom")
}

/// A summary message (`branchSummary`, `compactionSummary`): its text; a branch summary with an
/// empty summary gives no message at all.
fn visit_summary(summary: Option<&RawValue>, sink: &mut dyn Pieces) {
    if let Some(s) = as_str(summary).filter(|s| !s.is_empty()) {
        sink.text(&s);
        sink.end_message();
    }
}

/// pi's `estimateTokens(message)` for one message with the given (projected) content.
fn visit_message(role: &str, m: &Message<'_>, content: &Content<'_>, sink: &mut dyn Pieces) {
    match role {
        "system" => {
            visit_content(content, sink);
            visit_sections(m.sections, sink);
            if let Some(tools) = m.tools_added {
                sink.text(&stringified(tools));
            }
        }
        "user" | "custom" | "toolResult" | "assistant" => return visit_said(role, content, sink),
        "bashExecution" => {
            sink.text(m.command.as_deref().unwrap_or_default());
            sink.text(m.output.as_deref().unwrap_or_default());
        }
        "branchSummary" | "compactionSummary" => sink.text(m.summary.as_deref().unwrap_or_default()),
        _ => {}
    }
    sink.end_message();
}

/// `estimateTokens` for a message of a role whose count is its content's alone.
fn visit_said(role: &str, content: &Content<'_>, sink: &mut dyn Pieces) {
    match role {
        // pi iterates assistant content as blocks; a string yields no blocks, so counts 0.
        "assistant" => {
            for block in content.blocks() {
                match &block.kind {
                    BlockKind::Text(s) | BlockKind::Thinking(s) => sink.text(s),
                    BlockKind::ToolCall { name, arguments, .. } => {
                        sink.text(name);
                        sink.text(&arguments.map_or("undefined".into(), stringified));
                    }
                    _ => {}
                }
            }
        }
        _ => visit_content(content, sink),
    }
    sink.end_message();
}

/// Text blocks and images, as pi counts user, custom and tool-result content.
fn visit_content(content: &Content<'_>, sink: &mut dyn Pieces) {
    match content {
        Content::Text(s) => sink.text(s),
        Content::Blocks(blocks) => {
            for block in blocks {
                match &block.kind {
                    BlockKind::Text(s) => sink.text(s),
                    BlockKind::Image { .. } => sink.image(),
                    _ => {}
                }
            }
        }
        Content::Other => {}
    }
}

fn visit_sections(sections: Option<&RawValue>, sink: &mut dyn Pieces) {
    let Some(raw) = sections else { return };
    let Ok(map) = crate::js::parse(raw.get()) else { return };
    // `Object.values`, in JavaScript's order.
    for (_, value) in map.members() {
        if let Some(s) = value.as_str() {
            sink.text(&s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text pi counts for a value is the same found either way, canonical or not.
    #[test]
    fn stringified_is_what_stringify_writes() {
        for text in
            [r#"{"command":"ls -l"}"#, r#"{ "a" : 1.0 }"#, r#"{"2":1,"1":2}"#, r#"{"a":"\u00e9"}"#, "[]", "null"]
        {
            let raw: &RawValue = serde_json::from_str(text).unwrap();
            assert_eq!(stringified(raw), stringify::stringify(raw), "{text}");
        }
        let canonical: &RawValue = serde_json::from_str(r#"{"path":"a.rs"}"#).unwrap();
        assert!(matches!(stringified(canonical), Cow::Borrowed(_)));
    }
}

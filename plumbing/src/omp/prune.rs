//! What OMP sends the model for a tool result it pruned (`prunedAt` set, by `/shake` or by its
//! pruning): `getPrunedToolResultContent` in `pi-agent-core/src/compaction/messages.ts`. The
//! text blocks are joined with `""` into one at the first text block's place (`[Output
//! truncated]` when that is empty; put first when there is no text block), other blocks kept.

use std::collections::HashMap;

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use crate::pi;

/// OMP's content for a pruned tool result message, or `None` when the message is not one (or
/// its content is not an array of blocks, which OMP's code cannot prune either).
pub fn sent_content(message: &Map<String, Value>) -> Option<Vec<Value>> {
    if message.get("role").and_then(Value::as_str) != Some("toolResult") || !message.contains_key("prunedAt") {
        return None;
    }
    let Some(Value::Array(content)) = message.get("content") else { return None };
    let is_text = |b: &Value| b.get("type").and_then(Value::as_str) == Some("text");
    // JavaScript's `join("")`: a missing or null `text` joins as nothing.
    let joined: String = content
        .iter()
        .filter(|b| is_text(b))
        .map(|b| match b.get("text") {
            Some(Value::String(s)) => s.clone(),
            None | Some(Value::Null) => String::new(),
            Some(other) => other.to_string(),
        })
        .collect();
    let text = json!({"type": "text", "text": if joined.is_empty() { "[Output truncated]" } else { &joined }});
    let Some(first) = content.iter().position(is_text) else {
        return Some(std::iter::once(text).chain(content.iter().cloned()).collect());
    };
    let mut text = Some(text);
    Some(
        content
            .iter()
            .enumerate()
            .filter_map(|(i, b)| match (is_text(b), i == first) {
                (false, _) => Some(b.clone()),
                (true, true) => text.take(),
                (true, false) => None,
            })
            .collect(),
    )
}

/// The pruned tool results of a file pi's reader loaded: entry index → the content OMP sends.
pub fn rewrites(session: &pi::Session<'_>) -> HashMap<usize, Box<RawValue>> {
    let mut out = HashMap::new();
    for (i, e) in session.entries.iter().enumerate() {
        // Only a message that names the key is parsed in full.
        let Some(raw) =
            e.fields.message().filter(|m| e.kind == pi::EntryType::Message && m.get().contains("\"prunedAt\""))
        else {
            continue;
        };
        let Ok(message) = serde_json::from_str::<Map<String, Value>>(raw.get()) else { continue };
        if let Some(content) = sent_content(&message) {
            let json = Value::Array(content).to_string();
            out.insert(i, RawValue::from_string(json).expect("serde_json writes valid JSON"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(content: Value) -> Option<Value> {
        let m = json!({"role": "toolResult", "prunedAt": 1, "content": content});
        sent_content(m.as_object().unwrap()).map(Value::Array)
    }

    #[test]
    fn joins_text_as_omp_does() {
        let img = json!({"type": "image", "data": "x", "mimeType": "image/png"});
        let t = |s: &str| json!({"type": "text", "text": s});
        assert_eq!(sent(json!([t("a\n"), img, t("b")])), Some(json!([t("a\nb"), img])));
        assert_eq!(sent(json!([img, t(""), t("")])), Some(json!([img, t("[Output truncated]")])));
        assert_eq!(sent(json!([img])), Some(json!([t("[Output truncated]"), img])));
        assert_eq!(sent(json!([{"type": "text", "text": "k", "extra": 1}])), Some(json!([t("k")])));
        // Not pruned, not a result, or string content: as written.
        assert_eq!(sent_content(json!({"role": "toolResult", "content": []}).as_object().unwrap()), None);
        assert_eq!(sent_content(json!({"role": "user", "prunedAt": 1, "content": []}).as_object().unwrap()), None);
        assert_eq!(sent(json!("text")), None);
    }
}

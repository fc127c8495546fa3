//! The model a projection is for. Claude Code 2.1.328 builds a different request for the same
//! transcript depending on the model it sends it to: resumed with a model other than the one
//! that wrote an assistant row, the row's signed thinking blocks are left out (a signature only
//! the model family that made it accepts). shake projects for the model the next request will
//! use: the transcript's own last model unless one is chosen (`--model`).

use serde_json::Value;

use super::loader::Chain;
use super::transcript::{as_str, Row, Transcript};
use crate::json::members;

/// The `model` Claude Code writes on the assistant rows it made up itself (API errors, …).
const SYNTHETIC: &str = "<synthetic>";

/// The model a projection of `chain` is for: the one chosen (`--model`, [`Transcript::model`]), else the transcript's own last
/// model (the `message.model` of the chain's last assistant row that Claude Code did not make
/// up itself), else none (no assistant row: nothing to tell apart).
pub fn target(t: &Transcript, chain: &Chain) -> Option<String> {
    if let Some(chosen) = &t.model {
        return Some(chosen.clone());
    }
    chain.rows.iter().rev().map(|&i| &t.rows[i]).filter(|r| r.kind() == "assistant").find_map(|r| {
        let model = row_model(t, r)?;
        (model != SYNTHETIC).then_some(model)
    })
}

/// Whether `model` is one of the models Claude Code 2.1.328 keeps its older ways for (`jBs` in
/// the binary: the claude-3 families to claude-opus-4-7, claude-sonnet-4-6 and claude-haiku-4-5):
/// it has the task tools for them and sends them no mid-conversation system messages.
pub fn is_legacy(model: &str) -> bool {
    const LEGACY: [&str; 15] = [
        "claude-3-opus",
        "claude-3-sonnet",
        "claude-3-haiku",
        "claude-3-5-sonnet",
        "claude-3-5-haiku",
        "claude-3-7-sonnet",
        "claude-opus-4-0",
        "claude-opus-4-1",
        "claude-opus-4-5",
        "claude-opus-4-6",
        "claude-opus-4-7",
        "claude-sonnet-4-0",
        "claude-sonnet-4-5",
        "claude-sonnet-4-6",
        "claude-haiku-4-5",
    ];
    LEGACY.contains(&canonical(model).as_str())
}

/// Whether Claude Code has its task tools (`TaskCreate`, …) when it sends to `target` (`$ne` in
/// the binary, with `CLAUDE_CODE_ENABLE_TASKS` unset): for the legacy models ([`is_legacy`]) and
/// no model, or when `CLAUDE_CODE_ENABLE_TODO_TOOLS` is on.
pub fn has_task_tools(target: Option<&str>) -> bool {
    target.is_none_or(|m| is_legacy(m) || m.contains("application-inference-profile"))
        || std::env::var("CLAUDE_CODE_ENABLE_TODO_TOOLS").is_ok_and(|v| v == "1" || v == "true")
}

/// An assistant row's `message.model`, when it is a string.
pub fn row_model(t: &Transcript, row: &Row) -> Option<String> {
    let [model] = members(t.message(row)?, &["model"])?;
    as_str(model).map(|m| m.into_owned())
}

/// Whether Claude Code sends an assistant row written by `written` (its `message.model`, `None`
/// when not a string) to `target` without its signed thinking: the model is not a string, or
/// it is neither Claude Code's own `<synthetic>` nor `target` nor of `target`'s canonical name
/// (`Aze` in the binary; the models a request was served by instead of the one asked for are
/// not known from a transcript).
pub fn is_foreign(written: Option<&str>, target: &str) -> bool {
    match written {
        None => true,
        Some(w) => w != SYNTHETIC && w != target && canonical(w) != canonical(target),
    }
}

/// Leaves out of an assistant row's blocks the thinking Claude Code does not send to another
/// model: `redacted_thinking`, and `thinking` with a non-empty `signature` (`Uqr`).
pub fn drop_signed_thinking(blocks: &mut Vec<Value>) {
    blocks.retain(|b| match b.get("type").and_then(Value::as_str) {
        Some("redacted_thinking") => false,
        Some("thinking") => b.get("signature").and_then(Value::as_str).is_none_or(str::is_empty),
        _ => true,
    });
}

/// A model id's canonical name, as Claude Code 2.1.328 reads it (`Ij`): the first family whose
/// name the lower-cased id contains, else the id without a date suffix (`-YYYYMMDD`).
pub fn canonical(model: &str) -> String {
    let m = model.to_lowercase();
    // In the binary's order: a longer name before the shorter one it contains.
    const FAMILIES: [&str; 25] = [
        "claude-fable-5-2",
        "claude-fable-5-1",
        "claude-fable-5",
        "claude-mythos-5-2",
        "claude-mythos-5-1",
        "claude-mythos-5",
        "claude-opus-5-5",
        "claude-opus-5",
        "claude-opus-4-8",
        "claude-opus-4-7",
        "claude-opus-4-6",
        "claude-opus-4-5",
        "claude-opus-4-1",
        "claude-sonnet-5-5",
        "claude-sonnet-5",
        "claude-sonnet-4-6",
        "claude-sonnet-4-5",
        "claude-haiku-5-5",
        "claude-haiku-4-5",
        "claude-3-7-sonnet",
        "claude-3-5-sonnet",
        "claude-3-5-haiku",
        "claude-3-opus",
        "claude-3-sonnet",
        "claude-3-haiku",
    ];
    if let Some(family) = FAMILIES.iter().find(|f| m.contains(*f)) {
        return (*family).to_owned();
    }
    // `claude-opus-4` / `claude-sonnet-4` not followed by a one-digit minor version.
    for (stem, name) in [("claude-opus-4", "claude-opus-4-0"), ("claude-sonnet-4", "claude-sonnet-4-0")] {
        let bare = m.match_indices(stem).any(|(i, _)| {
            let rest = &m.as_bytes()[i + stem.len()..];
            !(rest.first() == Some(&b'-')
                && rest.get(1).is_some_and(u8::is_ascii_digit)
                && !rest.get(2).is_some_and(u8::is_ascii_digit))
        });
        if bare {
            return name.to_owned();
        }
    }
    match m.len().checked_sub(9).map(|cut| m.split_at(cut)) {
        Some((base, date)) if date.starts_with('-') && date[1..].bytes().all(|b| b.is_ascii_digit()) => base.to_owned(),
        _ => m,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_names_follow_claude_codes_table() {
        assert_eq!(canonical("claude-opus-4-5-20251101"), "claude-opus-4-5");
        assert_eq!(canonical("claude-sonnet-4-20250514"), "claude-sonnet-4-0");
        assert_eq!(canonical("claude-opus-4-1-20250805"), "claude-opus-4-1");
        assert_eq!(canonical("claude-haiku-4-5-20251001"), "claude-haiku-4-5");
        assert_eq!(canonical("claude-opus-5"), "claude-opus-5");
        assert_eq!(canonical("claude-3-haiku-20240307"), "claude-3-haiku");
        assert_eq!(canonical("some-model-20240101"), "some-model");
        assert!(!is_foreign(Some("claude-opus-4-5-20251101"), "claude-opus-4-5"));
        assert!(is_foreign(Some("claude-opus-5"), "claude-sonnet-4-6"));
        assert!(!is_foreign(Some(SYNTHETIC), "claude-sonnet-4-6"));
        assert!(is_foreign(None, "claude-sonnet-4-6"));
    }

    #[test]
    fn the_task_tools_are_there_for_the_models_before_claude_opus_5() {
        assert!(has_task_tools(Some("claude-sonnet-4-6")) && has_task_tools(Some("claude-opus-4-5-20251101")));
        assert!(has_task_tools(None));
        if std::env::var_os("CLAUDE_CODE_ENABLE_TODO_TOOLS").is_none() {
            assert!(!has_task_tools(Some("claude-opus-5")));
        }
    }
}

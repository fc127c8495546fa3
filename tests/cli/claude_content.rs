//! The content Claude Code 2.1.328 sends for real transcripts (issue 29's content rules): each
//! excerpt of a real user's transcript under `tests/fixtures/claude-real/` (`attach-*`,
//! `toolsearch-*`, `model-*`) projects, for a model, exactly the `messages` Claude Code sent
//! when it resumed the excerpt with that model (`<name>.<model>.request.json`, made by
//! `tests/claude-oracle/content-excerpts.mjs`).

use std::path::{Path, PathBuf};

use serde_json::Value;
use shake_plumbing::claude::{self, LoadOptions, Transcript};

use crate::claude_project::assert_same_messages;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-real")
}

/// shake's messages for excerpt `name` projected for `model`, checked against Claude Code's
/// request for it; returns the request's messages.
fn check(name: &str, model: &str) -> Vec<Value> {
    let dir = fixtures();
    let t = Transcript::read(&dir.join(format!("{name}.jsonl"))).expect("excerpt");
    let chain = claude::load(&t, LoadOptions::default());
    let ours = claude::project::project_for(&t, &chain, Some(model));
    let request: Value =
        serde_json::from_slice(&std::fs::read(dir.join(format!("{name}.{model}.request.json"))).unwrap()).unwrap();
    let oracle = request["messages"].as_array().expect("messages").clone();
    assert_same_messages(&format!("{name} for {model}"), &ours, &oracle);
    oracle
}

fn thinking_blocks(messages: &[Value]) -> usize {
    messages.iter().filter_map(|m| m["content"].as_array()).flatten().filter(|b| b["type"] == "thinking").count()
}

#[test]
fn thinking_is_sent_only_to_the_model_family_that_wrote_it() {
    // Written by claude-opus-4-5-20251101: resumed with claude-opus-4-5 (the same canonical
    // name) the signed thinking is sent; with claude-sonnet-4-6 it is left out.
    let same = check("model-dd09f641", "claude-opus-4-5");
    let other = check("model-dd09f641", "claude-sonnet-4-6");
    assert_eq!((thinking_blocks(&same), thinking_blocks(&other)), (1, 0));
}

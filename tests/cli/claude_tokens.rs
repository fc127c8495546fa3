//! `shake tokens` on Claude Code transcripts: each API message Claude Code sent for the loaded
//! conversation (since its last compaction) is one turn, whose provider count is the `usage` on its assistant row (input +
//! cache creation + cache read), and every tokenizer follows those counts turn by turn.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::claude_project::claude_fixtures;
use crate::env::TestEnv;

/// The assistant rows of a transcript by uuid (the last copy of a uuid, as the loader keeps it).
fn assistant_rows(path: &std::path::Path) -> HashMap<String, Value> {
    let text = std::fs::read_to_string(path).unwrap();
    let rows = text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok());
    rows.filter(|r| r["type"] == "assistant").map(|r| (r["uuid"].as_str().unwrap().to_string(), r)).collect()
}

#[test]
fn every_sent_assistant_message_is_a_turn_with_its_rows_usage() {
    for dir in claude_fixtures() {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let env = TestEnv::new();
        let path = dir.join("transcript.jsonl");
        let out: Value = serde_json::from_str(&env.ok(&["tokens", "--json", path.to_str().unwrap()])).unwrap();
        let rows = assistant_rows(&path);
        let turns = out["turns"].as_array().unwrap();
        let mut messages = HashSet::new();
        for turn in turns {
            let row = &rows[turn["id"].as_str().unwrap()];
            let usage = &row["message"]["usage"];
            let n = |k: &str| usage[k].as_u64().unwrap_or(0);
            let sum = n("input_tokens") + n("cache_creation_input_tokens") + n("cache_read_input_tokens");
            assert_eq!(turn["providerTokens"], sum, "{name}: {turn}");
            assert_eq!(turn["provider"], "anthropic", "{name}");
            assert!(messages.insert(row["message"]["id"].as_str().unwrap().to_string()), "{name}: a message twice");
        }
        // One turn per assistant message on the main chain written since the last compaction
        // (one written before it, in a preserved segment, was sent the context the compaction
        // replaced); where there was none, that is every assistant message Claude Code sends on
        // resume (its request.json, where rows split by message.id are one message again).
        let text = std::fs::read_to_string(&path).unwrap();
        let all: Vec<Value> = text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        let boundary = all.iter().rposition(|r| r["subtype"] == "compact_boundary");
        let since = &all[boundary.map_or(0, |b| b + 1)..];
        let main = since.iter().filter(|r| r["type"] == "assistant" && r["isSidechain"] != true);
        let real = main.filter(|r| r["message"]["model"] != "<synthetic>");
        let expected: HashSet<&str> = real.map(|r| r["message"]["id"].as_str().unwrap()).collect();
        assert_eq!(messages.iter().map(String::as_str).collect::<HashSet<_>>(), expected, "{name}");
        let request: Value = serde_json::from_slice(&std::fs::read(dir.join("request.json")).unwrap()).unwrap();
        let sent = request["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "assistant").count();
        match boundary {
            None => assert_eq!(turns.len(), sent, "{name}"),
            Some(_) => assert!(turns.len() <= sent, "{name}: {} turns, {sent} sent", turns.len()),
        }
        // The local API's usage is the size of each request: every tokenizer, less a fixed part
        // (the system prompt and tools the file does not hold), follows it within 2%.
        for (tokenizer, summary) in out["summary"].as_object().unwrap() {
            let fit = summary["fitError"].as_f64().unwrap();
            assert!(fit < 0.02, "{name} {tokenizer}: fit error {fit}");
        }
    }
}

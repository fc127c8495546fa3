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

/// What each turn added, on a real transcript (`claude-real/attach-d3f32579.jsonl`, 99 lines of a
/// user's Claude Code 2.1.224 session with Claude Opus 5, usage as Anthropic's API reported it):
/// the difference of consecutive prompt totals, checked by a hand computation from its rows.
#[test]
fn what_each_turn_added_is_the_difference_of_prompt_totals() {
    let env = TestEnv::new();
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-real/attach-d3f32579.jsonl");
    let out: Value = serde_json::from_str(&env.ok(&["tokens", "--json", path.to_str().unwrap()])).unwrap();
    let turns = out["turns"].as_array().unwrap();
    let turn = |id: &str| turns.iter().find(|t| t["id"].as_str().unwrap().starts_with(id)).unwrap();
    // By hand, from the rows' usage (input + cache creation + cache read):
    //   686f1dff (the first):  2 + 18,104 + 13,371 = 31,477
    //   7f54e568:              2 +  7,353 + 31,475 = 38,830, cached 31,475 + 7,353 = 38,828
    //   5869142f:              2 +    974 + 38,828 = 39,804, reads all 38,828: added 974
    //   9c8e055d:              2 +  3,285 + 42,623 = 45,910
    //   78261e58:              2 + 49,568 +      0 = 49,570, reads nothing: the cache broke
    //   64852d07 (the last):                         56,673
    let total = |id: &str| turn(id)["providerTokens"].as_i64().unwrap();
    assert_eq!(
        [
            total("686f1dff"),
            total("7f54e568"),
            total("5869142f"),
            total("9c8e055d"),
            total("78261e58"),
            total("64852d07")
        ],
        [31_477, 38_830, 39_804, 45_910, 49_570, 56_673]
    );
    assert_eq!((&turn("78261e58")["cacheRead"], &turn("78261e58")["cacheWrite"]), (&0.into(), &49_568.into()));
    // 14 turns, so 13 pairs: the broken one left out; the sums telescope over the other 12.
    assert_eq!(turns.len(), 14);
    let added = &out["added"];
    assert_eq!((&added["modelChanged"], &added["cacheBroken"]), (&0.into(), &1.into()));
    let provider = (56_673 - 31_477) - (49_570 - 45_910);
    assert_eq!(provider, 21_536);
    // Opus 5: Claude's count is claude-v5; its counts of the same turns, likewise.
    let count = |id: &str| turn(id)["counts"]["claude-v5"].as_i64().unwrap();
    let counted = (count("64852d07") - count("686f1dff")) - (count("78261e58") - count("9c8e055d"));
    let v5 = &added["summary"]["claude-v5"];
    assert_eq!((&v5["pairs"], &v5["provider"], &v5["counted"]), (&12.into(), &provider.into(), &counted.into()));
    let error = v5["error"].as_f64().unwrap();
    assert!((error - (counted as f64 / provider as f64 - 1.0)).abs() < 1e-12, "{v5}");
    // A turn's count is the count of the context sent for it: count-tokens at its parent row.
    let parent = "f651b074";
    let rev = format!("{}:{parent}", path.display());
    let at = |tok: &str| -> i64 {
        let report: Value =
            serde_json::from_str(&env.ok(&["count-tokens", &rev, "--json", "--tokenizer", tok])).unwrap();
        report["total"].as_i64().unwrap()
    };
    assert_eq!(at("claude-v5"), count("78261e58"));
}

//! `shake status`, `shake log` and `shake show`: the wall, stranded folds, other tools' later
//! edits, the history newest first, and the three kinds of `show`.

use serde_json::Value;

use crate::env::TestEnv;
use crate::synthetic::{self, Rich};

fn json(env: &TestEnv, args: &[&str]) -> Value {
    serde_json::from_str(&env.ok(args)).unwrap()
}

fn folded() -> (TestEnv, Rich, String, Value) {
    let env = TestEnv::new();
    let rich = synthetic::rich();
    let path = env.write("rich.jsonl", &rich.text);
    let p = path.to_str().unwrap().to_string();
    let fold = json(&env, &["fold", &p, "--json"]);
    (env, rich, p, fold)
}

fn append_line(path: &str, line: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    writeln!(f, "{line}").unwrap();
}

#[test]
fn status_shows_the_wall_by_scope() {
    let (env, _, p, fold) = folded();
    let out = env.ok(&["status", &p]);
    let freed = crate::render_thousands(fold["tokensFreed"].as_u64().unwrap());
    let leaf = fold["leafAfter"].as_str().unwrap();
    assert_eq!(out, format!("6 entries folded at {leaf}: ~{freed} tokens freed. Tokenizer: o200k.\n  elide     3 tool results + 4 blocks\n"));
    let s = json(&env, &["status", &p, "--json"]);
    assert_eq!(s["tokensFreed"], fold["tokensFreed"], "one number: status and fold");
    assert_eq!(s["regions"], 7);
}

#[test]
fn status_reports_folds_stranded_on_an_abandoned_branch() {
    let (env, _, p, fold) = folded();
    // pi continued from the entry before the fold (it had the file open): a new user message
    // whose parent is the old leaf becomes the last entry.
    let before = fold["leafBefore"].as_str().unwrap();
    append_line(
        &p,
        &format!(
            r#"{{"type":"message","id":"feedbeef","parentId":"{before}","timestamp":"2026-11-21T10:00:00.000Z","message":{{"role":"user","content":"next","timestamp":1795255200000}}}}"#
        ),
    );
    let s = json(&env, &["status", &p, "--json"]);
    assert_eq!(s["entries"], 0);
    let stranded = &s["stranded"][0];
    assert_eq!(stranded["log"], fold["appended"][0]);
    assert_eq!(stranded["regions"], 7);
    let out = env.ok(&["status", &p]);
    assert!(out.contains("Stranded: log entry") && out.contains("folds 7 regions on an abandoned branch"), "{out}");
    assert!(out.contains("pi continued from an earlier entry"), "{out}");
    assert_eq!(stranded["byShake"], false);
}

#[test]
fn a_later_edit_by_another_tool_takes_the_target_off_the_wall() {
    let (env, rich, p, fold) = folded();
    let leaf = fold["leafAfter"].as_str().unwrap();
    let target = &rich.folded_results[2];
    append_line(
        &p,
        &format!(
            r#"{{"type":"context_edit","id":"0ther0ed","parentId":"{leaf}","timestamp":"2026-11-21T10:00:00.000Z","targetId":"{target}","replacement":{{"content":[{{"type":"text","text":"mine"}}]}}}}"#
        ),
    );
    let s = json(&env, &["status", &p, "--json"]);
    assert_eq!(s["superseded"][0], target.as_str());
    assert_eq!(s["entries"], 5);
    // Undo leaves the other tool's edit alone: it restores only what shake still holds.
    let undo = json(&env, &["undo", &p, "--json"]);
    assert_eq!(undo["entries"], 5);
}

#[test]
fn log_lists_operations_newest_first() {
    let (env, _, p, fold) = folded();
    env.ok(&["fold", &p, "--scope", "thinking"]);
    env.ok(&["undo", &p]);
    let log = json(&env, &["log", &p, "--json"]);
    let ops: Vec<&str> = log.as_array().unwrap().iter().map(|e| e["op"].as_str().unwrap()).collect();
    assert_eq!(ops, ["undo", "fold", "fold"]);
    assert_eq!(log[2]["id"], fold["appended"][0]);
    assert_eq!((log[2]["toolResults"].as_u64(), log[2]["blocks"].as_u64()), (Some(3), Some(4)));
    let text = env.ok(&["log", &p]);
    assert!(text.lines().next().unwrap().contains("undo: restored 6 entries"), "{text}");
    assert!(text.contains("fold thinking: 1 thinking block"), "{text}");
    assert!(text.contains("fold elide/default: 3 tool results + 4 blocks"), "{text}");
}

#[test]
fn log_all_covers_every_branch() {
    let env = TestEnv::new();
    let rich = synthetic::rich();
    let path = env.write("rich.jsonl", &rich.text);
    let p = path.to_str().unwrap();
    let main_leaf = json(&env, &["status", p, "--json"])["leafId"].as_str().unwrap().to_string();
    env.ok(&["fold", p, "--branch", &rich.side_leaf, "--scope", "images", "--force"]);
    assert_eq!(json(&env, &["log", p, "--leaf", &main_leaf, "--json"]).as_array().unwrap().len(), 0);
    let all = json(&env, &["log", p, "--leaf", &main_leaf, "--all", "--json"]);
    assert_eq!(all.as_array().unwrap().len(), 1);
    assert_eq!(all[0]["onPath"], false);
}

#[test]
fn show_a_log_entry_an_entry_and_a_leaf() {
    let (env, rich, p, fold) = folded();
    let log = fold["appended"][0].as_str().unwrap();
    let out = env.ok(&["show", &format!("{p}:{log}")]);
    assert!(out.starts_with(&format!("shake log entry {log} (line ")), "{out}");
    assert!(out.contains("[read output omitted (~"), "{out}");
    let entry = &rich.folded_results[0];
    let out = env.ok(&["show", &format!("{p}:{entry}")]);
    assert!(out.contains("raw:\n{\"type\":\"message\"") && out.contains("[read output omitted (~"), "{out}");
    let table = env.ok(&["show", &p]);
    assert!(table.starts_with("Context at "), "{table}");
    assert!(table.lines().any(|l| l.contains(entry.as_str()) && l.contains("folded: 1 tool result")), "{table}");
    assert!(table.lines().any(|l| l.contains("omitted (null edit)")), "{table}");
    let v = json(&env, &["show", &p, "--json"]);
    assert!(v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["id"] == entry.as_str() && e["state"] == "folded: 1 tool result"));
}

/// `show`'s table is as wide as its cells: Claude Code's 36-character uuids keep every column in
/// line (a fixed width of 9 pushed each row's type out of its column).
#[test]
fn show_s_table_keeps_its_columns_with_long_ids() {
    let env = crate::env::TestEnv::new();
    let file =
        env.write("t.jsonl", std::fs::read(crate::env::fixture_path("claude/bash-read/transcript.jsonl")).unwrap());
    let text = env.ok(&["show", file.to_str().unwrap()]);
    let mut lines = text.lines().skip(1);
    let header = lines.next().unwrap();
    let (at_type, at_tokens) = (header.find("type").unwrap(), header.find("tokens").unwrap() + "tokens".len());
    let mut rows = 0;
    for row in lines {
        let id = row.split_whitespace().nth(1).unwrap();
        assert_eq!(id.len(), 36, "{row}");
        assert_eq!(row.find(id).map(|at| at + id.len() + 2), Some(at_type), "type column: {row}");
        assert!(row.as_bytes().get(at_tokens - 1).is_some_and(u8::is_ascii_digit), "tokens end in line: {row}");
        rows += 1;
    }
    assert!(rows > 10, "{text}");
}

//! The default tokenizer is the session's own (issue 30.2): Claude's count for its model's
//! family where the model is Claude (Claude Code transcripts, status line included; pi sessions),
//! o200k elsewhere; `--tokenizer` still picks any other, and every output names the one used.

use std::io::Write;
use std::process::Stdio;

use serde_json::{json, Value};

use crate::claude_host::install;
use crate::claude_project::claude_fixtures;
use crate::env::TestEnv;

fn json_of(s: &str) -> Value {
    serde_json::from_str(s).unwrap()
}

/// `count-tokens --json` of `rev`, with `extra` arguments.
fn count(env: &TestEnv, rev: &str, extra: &[&str]) -> Value {
    let mut args = vec!["count-tokens", rev, "--json"];
    args.extend(extra);
    json_of(&env.ok(&args))
}

/// A pi session: a user message, then one assistant reply per `(provider, model)`, in order.
fn pi_session(replies: &[(&str, &str)]) -> String {
    let mut lines = vec![
        r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#.to_string(),
        json!({"type":"message","id":"u0","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z",
            "message":{"role":"user","content":"Say “hello” in THREE languages, please.","timestamp":1}})
        .to_string(),
    ];
    for (i, (provider, model)) in replies.iter().enumerate() {
        lines.push(
            json!({"type":"message","id":format!("a{i}"),"parentId":if i == 0 { "u0".to_string() } else { format!("a{}", i - 1) },
                "timestamp":"2026-01-01T00:00:02.000Z",
                "message":{"role":"assistant","content":[{"type":"text","text":"Hello — Bonjour — こんにちは. ÉTÉ!"}],
                    "api":"x","provider":provider,"model":model,
                    "usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15,
                        "cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},
                    "stopReason":"stop","timestamp":2}})
            .to_string(),
        );
    }
    lines.join("\n") + "\n"
}

#[test]
fn pi_sessions_default_to_claudes_count_for_their_model() {
    let env = TestEnv::new();
    // Model of the last reply on the branch → the tokenizer.
    let cases = [
        (vec![("anthropic", "claude-sonnet-4-5")], "claude-v3"),
        (vec![("anthropic", "claude-opus-4-7")], "claude-v47"),
        (vec![("anthropic", "claude-opus-5")], "claude-v5"),
        (vec![("openrouter", "anthropic/claude-sonnet-5")], "claude-v5-sonnet"),
        (vec![("openai", "gpt-5.1-codex")], "o200k"),
        (vec![("anthropic", "claude-opus-4-5"), ("openai", "gpt-5.1-codex")], "o200k"),
        (vec![("openai", "gpt-5.1-codex"), ("anthropic", "claude-opus-4-5")], "claude-v3"),
        (vec![], "o200k"),
    ];
    for (i, (replies, want)) in cases.iter().enumerate() {
        let path = env.write(&format!("s{i}.jsonl"), pi_session(replies));
        let p = path.to_str().unwrap();
        let default = count(&env, p, &[]);
        assert_eq!(default["tokenizer"], *want, "{replies:?}");
        assert_eq!(default, count(&env, p, &["--tokenizer", want]), "{replies:?}");
        // Any other can still be chosen.
        assert_eq!(count(&env, p, &["--tokenizer", "cl100k"])["tokenizer"], "cl100k");
        let meter = json_of(&env.ok(&["meter", p, "--json"]));
        assert_eq!(meter["tokenizer"], *want, "{replies:?}");
    }
    // Before the last reply the branch's model was another: a leaf names its own.
    let path = env.write("two.jsonl", pi_session(&[("openai", "gpt-5.1-codex"), ("anthropic", "claude-opus-4-7")]));
    assert_eq!(count(&env, &format!("{}:a0", path.display()), &[])["tokenizer"], "o200k");
    assert_eq!(count(&env, &format!("{}:a1", path.display()), &[])["tokenizer"], "claude-v47");
}

/// A real pi session of Claude Opus 4.5: every figure a plain command prints is Claude's v3 count.
#[test]
fn a_real_claude_session_counts_with_claude_v3_everywhere() {
    let env = TestEnv::new();
    let path = env.fixture("pi-mono-before-compaction.v3-migrated-by-pi-1.6.0.jsonl");
    let p = path.to_str().unwrap();
    let v3 = count(&env, p, &["--tokenizer", "claude-v3"]);
    assert_eq!(count(&env, p, &[]), v3);
    assert!(env.ok(&["count-tokens", p]).ends_with(&format!("{}\ttotal (claude-v3)\n", v3["total"])));
    let dry = env.ok(&["fold", p, "--dry-run"]);
    assert!(dry.lines().next().unwrap().ends_with("Tokenizer: claude-v3."), "{dry}");
    let meter = json_of(&env.ok(&["meter", p, "--json"]));
    assert_eq!(meter["tokenizer"], "claude-v3");
    assert_eq!(meter["tokens"], json_of(&env.ok(&["meter", p, "--json", "--tokenizer", "claude-v3"]))["tokens"]);
    let folded = json_of(&env.ok(&["fold", p, "--dry-run", "--json"]));
    assert_eq!((&folded["tokenizer"], &folded["tokensFreed"]), (&json!("claude-v3"), &meter["tokens"]));
    assert_eq!(json_of(&env.ok(&["status", p, "--json"]))["tokenizer"], "claude-v3");
    assert_eq!(json_of(&env.ok(&["regions", p, "--json"]))["tokenizer"], "claude-v3");
}

/// Claude Code transcripts (every fixture is Claude Sonnet 4.5's): the meter, its status line and
/// count-tokens count with `claude-v3`; `--model` chooses the model, and so the family.
#[test]
fn claude_code_transcripts_default_to_their_models_family() {
    for dir in claude_fixtures() {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let env = TestEnv::new();
        let path = install(&env, &dir);
        let p = path.to_str().unwrap();
        assert_eq!(count(&env, p, &[]), count(&env, p, &["--tokenizer", "claude-v3"]), "{name}");
        let meter = json_of(&env.ok(&["meter", p, "--json"]));
        assert_eq!(meter["tokenizer"], "claude-v3", "{name}");
        let v3 = json_of(&env.ok(&["meter", p, "--json", "--tokenizer", "claude-v3"]));
        assert_eq!(meter["tokens"], v3["tokens"], "{name}");
        let input = json!({"session_id": "x", "transcript_path": p, "cwd": env.cwd()}).to_string();
        let mut child =
            env.cmd().args(["meter", "--statusline"]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        let line = String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap();
        let want = match v3["tokens"].as_u64().unwrap() {
            0 => "nothing to shake\n".to_string(),
            _ => env.ok(&["meter", p, "--tokenizer", "claude-v3"]),
        };
        assert_eq!(line, format!("✂ {want}"), "{name}");
        let opus5 = json_of(&env.ok(&["meter", p, "--json", "--model", "claude-opus-5"]));
        assert_eq!(opus5["tokenizer"], "claude-v5", "{name}");
    }
}

/// The meter's memo keeps the tokenizer the session's model gave, and a session whose new lines
/// switch the model (pi's append shortcut) is measured again with the new one.
#[test]
fn the_meter_follows_a_model_switch() {
    let env = TestEnv::new();
    let path = env.write("s.jsonl", pi_session(&[("anthropic", "claude-sonnet-4-5")]));
    let p = path.to_str().unwrap();
    let first = json_of(&env.ok(&["meter", p, "--json"]));
    assert_eq!(first["tokenizer"], "claude-v3");
    // Recalled from the memo: the same reading, the same tokenizer.
    assert_eq!(json_of(&env.ok(&["meter", p, "--json"])), first);
    let switched = pi_session(&[("anthropic", "claude-sonnet-4-5"), ("anthropic", "claude-opus-4-7")]);
    std::fs::write(&path, switched).unwrap();
    let second = json_of(&env.ok(&["meter", p, "--json"]));
    assert_eq!(second["tokenizer"], "claude-v47");
    assert_eq!(second, json_of(&env.ok(&["meter", p, "--json", "--tokenizer", "claude-v47"])));
}

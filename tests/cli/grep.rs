//! `shake grep`: every stored session searched with ripgrep's engine in the text a person reads
//! (JSON escapes decoded), restricted by session, host, role and time; grep's exit codes; JSON
//! and `-z` for scripts.

use crate::env::{fixture_path, TestEnv};

/// A pi session whose text holds quotes, a line break and an é that its JSON escapes.
const PI: &str = concat!(
    r#"{"type":"session","version":3,"id":"5e55-grep-pi","timestamp":"2026-11-01T10:00:00.000Z","cwd":"/w"}"#,
    "\n",
    r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2026-11-01T10:00:01.000Z","message":{"role":"user","content":"please run the \"deploy\" script\nthen stop","timestamp":1}}"#,
    "\n",
    r#"{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-11-02T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"./deploy --target prod"}}],"provider":"anthropic","model":"claude-sonnet-4-5","api":"anthropic-messages","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":2}}"#,
    "\n",
    r#"{"type":"message","id":"a3","parentId":"a2","timestamp":"2026-11-03T10:00:03.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"deploy: done\ncaf\u00e9 deploy ok"}],"isError":false,"timestamp":3}}"#,
    "\n",
);

fn lines(out: &str) -> Vec<serde_json::Value> {
    out.lines().map(|l| serde_json::from_str(l).expect("one JSON object a line")).collect()
}

#[test]
fn grep_searches_the_text_people_read_in_every_stored_session() {
    let env = TestEnv::new();
    let pi = env.write("pi.jsonl", PI);
    let claude = env.write("claude.jsonl", std::fs::read(fixture_path("claude/bash-read/transcript.jsonl")).unwrap());
    env.ok(&["import", pi.to_str().unwrap(), claude.to_str().unwrap()]);

    // The quotes and the line break are the text's, not JSON's `\"` and `\n`: a pattern with a
    // quote matches, and a line of text is a line (`^then` starts the message's second line).
    let hits = lines(&env.ok(&["grep", "--json", r#"the "deploy" script$"#]));
    assert_eq!(hits.len(), 1, "{hits:?}");
    let h = &hits[0];
    assert_eq!((h["host"].as_str(), h["session"].as_str()), (Some("pi"), Some("5e55-grep-pi")));
    assert_eq!((h["entry"].as_str(), h["line"].as_u64(), h["role"].as_str()), (Some("a1"), Some(2), Some("user")));
    assert_eq!(h["text"], "please run the \"deploy\" script");
    assert_eq!(h["spans"], serde_json::json!([[11, 30]]));
    assert_eq!(lines(&env.ok(&["grep", "--json", "^then stop$"]))[0]["entry"], "a1");
    assert_eq!(lines(&env.ok(&["grep", "--json", "café deploy"]))[0]["role"], "tool");
    // Keys and ids are not text: "toolCallId" and the entry id "a3" match nothing.
    env.fails(&["grep", "toolCallId"], 1);
    env.fails(&["grep", "-w", "a3"], 1);

    // Tool input is the assistant's; tool output the tool's; --role picks them.
    let roles = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["grep", "--json", "deploy", "--session", "5e55"];
        all.extend_from_slice(args);
        lines(&env.ok(&all)).iter().map(|h| h["role"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(roles(&[]), ["user", "assistant", "tool", "tool"]);
    assert_eq!(roles(&["--role", "tool"]), ["tool", "tool"]);
    assert_eq!(roles(&["--role", "assistant", "--role", "user"]), ["user", "assistant"]);
    // Time: --since inclusive, --until exclusive, by each entry's own time.
    assert_eq!(roles(&["--since", "2026-11-02"]), ["assistant", "tool", "tool"]);
    assert_eq!(roles(&["--since", "2026-11-02", "--until", "2026-11-03"]), ["assistant"]);

    // Every host's sessions are searched; --host and --session restrict them.
    let claude_hits = lines(&env.ok(&["grep", "--json", "-i", "no such file or directory"]));
    assert!(!claude_hits.is_empty() && claude_hits.iter().all(|h| h["host"] == "claude"), "{claude_hits:?}");
    // A tool's output that Claude Code keeps twice in its row (content, toolUseResult) is one hit.
    let mut seen: Vec<_> = claude_hits.iter().map(|h| (h["line"].clone(), h["text"].clone())).collect();
    seen.dedup();
    assert_eq!(seen.len(), claude_hits.len(), "{claude_hits:?}");
    env.fails(&["grep", "--host", "pi", "-i", "no such file or directory"], 1);
    env.ok(&["grep", "--host", "claude", "-i", "no such file or directory"]);
    env.fails(&["grep", "--session", "5e55", "-i", "no such file or directory"], 1);
    let everywhere = lines(&env.ok(&["grep", "--json", "deploy"]));
    assert!(everywhere.iter().any(|h| h["host"] == "claude") && everywhere.iter().any(|h| h["host"] == "pi"));

    // For people: the host, the session as shake prints it, the entry, its role, the line.
    let people = env.ok(&["grep", "café deploy"]);
    assert!(people.starts_with("pi ") && people.ends_with("pi.jsonl:a3 tool: café deploy ok\n"), "{people}");
    // -z: host, session, path, entry, line, role and text, each ended by NUL.
    let z = env.ok(&["grep", "-z", "café deploy"]);
    let fields: Vec<&str> = z.split('\0').collect();
    assert_eq!(fields[..2], ["pi", "5e55-grep-pi"]);
    assert_eq!(fields[3..8], ["a3", "4", "tool", "café deploy ok", ""]);
}

#[test]
fn grep_exits_as_grep_does() {
    let env = TestEnv::new();
    // An empty store: nothing found, exit 1.
    env.fails(&["grep", "anything"], 1);
    let pi = env.write("pi.jsonl", PI);
    env.ok(&["import", pi.to_str().unwrap()]);
    env.ok(&["grep", "deploy"]);
    env.fails(&["grep", "nowhere-to-be-found"], 1);
    // A bad pattern or time is an error, exit 2, never read as "nothing found".
    let e = env.fails(&["grep", "(unclosed"], 2);
    assert!(e.contains("not a pattern"), "{e}");
    env.fails(&["grep", "--since", "yesterday", "x"], 2);
}

/// A flipped byte in the store's pack: grep and scan say the store is corrupt (exit 3), never
/// "nothing found" or "clean".
#[test]
fn grep_and_scan_say_a_damaged_store_is_corrupt() {
    let env = TestEnv::new();
    let pi = env.write("pi.jsonl", PI);
    env.ok(&["import", pi.to_str().unwrap()]);
    let packs = env.store().join("packs");
    let pack = crate::env::first_pack(&packs);
    let mut bytes = std::fs::read(&pack).unwrap();
    let at = bytes.windows(6).position(|w| w == b"deploy").unwrap();
    bytes[at] ^= 0x20;
    std::fs::write(&pack, &bytes).unwrap();
    let e = env.fails(&["grep", "deploy"], 3);
    assert!(e.contains("corrupt"), "{e}");
    env.fails(&["grep", "nothing-here"], 3);
    env.fails(&["scan"], 3);
}

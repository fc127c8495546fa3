//! `shake count-tokens` against pi's own `estimateTokens`, the token cache across runs, and
//! `shake tokens` (provider usage beside each tokenizer, calibration).

use serde_json::{json, Value};

use crate::env::{fixture_path, fixtures, Oracle, TestEnv};

/// The branch tips of a v3 file (entries nobody names as parent), read straight from its lines;
/// `None` stands for pi's default leaf (v1 files have no ids to name).
fn leaves(name: &str) -> Vec<Option<String>> {
    leaves_of(&fixture_path(name))
}

/// [`leaves`] of any session file.
fn leaves_of(path: &std::path::Path) -> Vec<Option<String>> {
    let text = String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned();
    let entries: Vec<Value> = text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let ids: Vec<&str> = entries.iter().filter(|e| e["type"] != "session").filter_map(|e| e["id"].as_str()).collect();
    let parents: Vec<&str> = entries.iter().filter_map(|e| e["parentId"].as_str()).collect();
    let tips: Vec<Option<String>> =
        ids.iter().filter(|id| !parents.contains(id)).map(|id| Some(id.to_string())).collect();
    if tips.is_empty() {
        vec![None]
    } else {
        tips
    }
}

fn per_entry(report: &Value) -> Vec<u64> {
    report["perEntry"].as_array().unwrap().iter().map(|e| e["tokens"].as_u64().unwrap()).collect()
}

fn json(s: &str) -> Value {
    serde_json::from_str(s).unwrap()
}

#[test]
fn pi_tokenizer_equals_pi_on_every_fixture_and_leaf() {
    let env = TestEnv::new();
    for name in fixtures() {
        let path = env.fixture(&name);
        let path = path.to_str().unwrap();
        for leaf in leaves(&name) {
            let rev = leaf.as_ref().map_or(path.to_string(), |l| format!("{path}:{l}"));
            let ours = json(&env.ok(&["count-tokens", &rev, "--tokenizer", "pi", "--json"]));
            let mut args = vec![path];
            args.extend(leaf.as_deref());
            let pi = Oracle::run("project.mjs", &args);
            assert_eq!(per_entry(&ours), per_entry(&pi["tokens"]), "{name} at {leaf:?}");
            assert_eq!(ours["total"], pi["tokens"]["estimateSum"], "{name} at {leaf:?}");
            assert_eq!(ours["tokenizer"], "pi");
        }
    }
}

#[test]
fn pi_tokenizer_equals_pi_at_every_entry_of_the_v3_fixtures() {
    let env = TestEnv::new();
    for name in fixtures().into_iter().filter(|n| n.starts_with("pi-v3-")) {
        let path = env.fixture(&name);
        let path = path.to_str().unwrap();
        let all = Oracle::run("tokens-per-leaf.mjs", &[path]);
        for leaf in all.as_array().unwrap() {
            let id = leaf["leafId"].as_str().unwrap();
            let ours = json(&env.ok(&["count-tokens", &format!("{path}:{id}"), "--tokenizer", "pi", "--json"]));
            assert_eq!(ours["perEntry"], leaf["perEntry"], "{name} at {id}");
        }
    }
}

#[test]
fn pi_tokenizer_equals_pi_on_generated_sessions_at_every_leaf() {
    let env = TestEnv::new();
    for seed in 1..=6 {
        let path = env.dir.path().join(format!("gen-{seed}.jsonl"));
        let path_str = path.to_str().unwrap();
        env.ok(&["generate-session", "--seed", &seed.to_string(), "-o", path_str]);
        let pi = Oracle::run("tokens-per-leaf.mjs", &[path_str]);
        for leaf in leaves_of(&path).into_iter().flatten() {
            let ours = json(&env.ok(&["count-tokens", &format!("{path_str}:{leaf}"), "--tokenizer", "pi", "--json"]));
            let theirs = pi.as_array().unwrap().iter().find(|l| l["leafId"] == leaf.as_str()).unwrap();
            assert_eq!(ours["perEntry"], theirs["perEntry"], "seed {seed} at {leaf}");
        }
    }
}

#[test]
fn count_tokens_prints_ids_with_counts_and_a_total() {
    let env = TestEnv::new();
    let path = env.fixture("pi-v3-branch-compaction-edit.jsonl");
    let path = path.to_str().unwrap();
    let report = json(&env.ok(&["count-tokens", path, "--tokenizer", "o200k", "--json"]));
    assert_eq!(report["tokenizer"], "o200k");
    let counts = per_entry(&report);
    assert_eq!(counts.iter().sum::<u64>(), report["total"].as_u64().unwrap());
    assert!(report["total"].as_u64().unwrap() > 0);
    let text = env.ok(&["count-tokens", path, "--tokenizer", "o200k"]);
    let last = text.lines().last().unwrap();
    assert_eq!(last, format!("{}\ttotal (o200k)", report["total"]));
    let first_id = report["perEntry"][0]["id"].as_str().unwrap();
    assert_eq!(text.lines().next().unwrap(), format!("{}\t{first_id}", counts[0]));
    // The default is Claude's count for the session's model, Claude Sonnet 4.5 (docs/tokens.md).
    assert_eq!(json(&env.ok(&["count-tokens", path, "--json"]))["tokenizer"], "claude-v3");
}

#[test]
fn the_token_cache_is_reused_and_survives_corruption() {
    let env = TestEnv::new();
    let path = env.fixture("pi-mono-large-session.v1.jsonl");
    let path = path.to_str().unwrap();
    let cache = env.store().join("cache/tokens-cl100k.bin");
    let cold = env.ok(&["count-tokens", path, "--tokenizer", "cl100k", "--json"]);
    let saved = std::fs::read(&cache).expect("the first run writes the cache");
    // Nothing new: the same answer, and the cache is not rewritten.
    assert_eq!(env.ok(&["count-tokens", path, "--tokenizer", "cl100k", "--json"]), cold);
    assert_eq!(std::fs::read(&cache).unwrap(), saved);
    // A damaged cache is ignored with a warning, the answer is unchanged, and it is rebuilt.
    std::fs::write(&cache, b"not a cache").unwrap();
    let out = env.run(&["count-tokens", path, "--tokenizer", "cl100k", "--json"]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8(out.stdout).unwrap(), cold);
    assert!(String::from_utf8_lossy(&out.stderr).contains("ignoring the token cache"));
    assert_eq!(std::fs::read(&cache).unwrap().len(), saved.len());
}

#[test]
fn tokens_reports_provider_usage_beside_each_tokenizer() {
    let env = TestEnv::new();
    let path = env.fixture("pi-mono-large-session.v1.jsonl");
    let path = path.to_str().unwrap();
    let report = json(&env.ok(&["tokens", path, "--json"]));
    let turns = report["turns"].as_array().unwrap();
    // 453 assistant messages; aborted, failed and zero-usage replies are left out.
    assert_eq!(turns.len(), 431);
    let first = &turns[0];
    assert_eq!(first["providerTokens"], 1687); // input 3 + cacheRead 0 + cacheWrite 1684
    for name in ["pi", "o200k", "cl100k"] {
        assert!(first["counts"][name].as_u64().unwrap() > 0, "{name}");
        let s = &report["summary"][name];
        assert_eq!(s["turns"], 431);
        // Every tokenizer counts low here: the system prompt and tools are not in the file.
        assert!(s["meanError"].as_f64().unwrap() < 0.0, "{name}");
        assert!(s["slope"].as_f64().unwrap() > 1.0, "{name}");
    }
    // The session's model is Claude Sonnet 4: Claude's own count (claude-v3) is measured too, and
    // is the nearest to the provider's per content token (slope 1.065 where o200k's is 1.341).
    let slope = |name: &str| report["summary"][name]["slope"].as_f64().unwrap();
    assert_eq!(report["summary"]["claude-v3"]["turns"], 431);
    assert!((slope("claude-v3") - 1.0).abs() < 0.1, "{}", slope("claude-v3"));
    for name in ["pi", "o200k", "cl100k"] {
        assert!((slope("claude-v3") - 1.0).abs() < (slope(name) - 1.0).abs(), "{name}");
    }
    let ratio = report["calibration"]["ratio"].as_f64().unwrap();
    assert_eq!(report["calibration"]["base"], "o200k");
    assert!((report["summary"]["o200k"]["slope"].as_f64().unwrap() - ratio).abs() < 1e-9);
    // calibrated = o200k × ratio, rounded per message.
    let o200k = json(&env.ok(&["count-tokens", path, "--tokenizer", "o200k", "--json"]))["total"].as_f64().unwrap();
    let cal = json(&env.ok(&["count-tokens", path, "--tokenizer", "calibrated", "--json"]));
    assert_eq!(cal["tokenizer"], "calibrated");
    let scaled = o200k * ratio;
    assert!((cal["total"].as_f64().unwrap() - scaled).abs() < scaled * 0.01);
    let text = env.ok(&["tokens", path]);
    assert!(text.contains("calibrated = o200k × "), "{text}");
}

#[test]
fn calibrated_needs_usage_or_a_stored_ratio() {
    let env = TestEnv::new();
    let path = env.fixture("pi-v3-edge-edits.jsonl");
    let path = path.to_str().unwrap();
    let err = env.fails(&["count-tokens", path, "--tokenizer", "calibrated"], 1);
    assert!(err.contains("cannot calibrate"), "{err}");
    assert!(err.contains("hint: run `shake tokens`"), "{err}");
    // A ratio stored for the session's model is used.
    let report = json(&env.ok(&["tokens", path, "--json"]));
    let model = latest_model(path);
    std::fs::create_dir_all(env.store()).unwrap();
    let stored = serde_json::json!({"base": "o200k", "models": {model: {"ratio": 2.0, "turns": 9, "session": "x"}}});
    std::fs::write(env.store().join("calibration.json"), stored.to_string()).unwrap();
    let o200k = json(&env.ok(&["count-tokens", path, "--tokenizer", "o200k", "--json"]));
    let cal = json(&env.ok(&["count-tokens", path, "--tokenizer", "calibrated", "--json"]));
    assert!(report["calibration"].is_null());
    let doubled: Vec<u64> = per_entry(&o200k).iter().map(|n| n * 2).collect();
    assert_eq!(per_entry(&cal), doubled);
}

/// `provider/model` of the file's last assistant message.
fn latest_model(path: &str) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["message"]["role"] == "assistant")
        .map(|e| format!("{}/{}", e["message"]["provider"].as_str().unwrap(), e["message"]["model"].as_str().unwrap()))
        .next_back()
        .unwrap()
}

#[test]
fn usage_that_does_not_follow_the_content_does_not_calibrate() {
    let env = TestEnv::new();
    let path = env.write("g.jsonl", generate(7, 40));
    let path = path.to_str().unwrap();
    let report = json(&env.ok(&["tokens", path, "--json"]));
    assert!(report["summary"]["o200k"]["fitError"].as_f64().unwrap() > 0.10);
    assert!(report["calibration"].is_null());
    env.fails(&["count-tokens", path, "--tokenizer", "calibrated"], 1);
    assert!(!env.store().join("calibration.json").exists());
}

/// A seeded linear congruential generator: the same session for the same seed, everywhere.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % n.max(1)
    }

    /// `lines` lines of code-ish words (some non-ASCII).
    fn text(&mut self, lines: u64) -> String {
        const WORDS: [&str; 12] =
            ["fn", "let", "the", "config", "error:", "src/main.rs", "{", "}", "0x1f3a", "résumé", "value", "=>"];
        let mut out = String::new();
        for _ in 0..lines {
            let words: Vec<&str> = (0..1 + self.below(12)).map(|_| WORDS[self.below(12) as usize]).collect();
            out.push_str(&words.join(" "));
            out.push('\n');
        }
        out
    }
}

/// A small deterministic pi v3 session: user turns with fenced and XML blocks, assistant turns
/// with thinking and tool calls, tool results of every size (some with images).
pub fn generate(seed: u64, turns: usize) -> String {
    let mut rng = Lcg(seed);
    let header = json!({"type": "session", "version": 3, "id": format!("gen-{seed}"), "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"});
    let mut lines = vec![header];
    let mut parent = Value::Null;
    let mut push = |lines: &mut Vec<Value>, message: Value| {
        let id = format!("{seed:02x}{:06x}", lines.len());
        lines.push(json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z", "message": message}));
        parent = Value::from(id);
    };
    for turn in 0..turns {
        let user = match turn % 4 {
            0 => format!("look at this:\n```rust\n{}```\nthanks", rng.text(5 + seed * 13 % 200)),
            1 => format!("<context>\n{}</context>\nok?", rng.text(3 + seed % 90)),
            _ => rng.text(2),
        };
        push(&mut lines, json!({"role": "user", "content": user, "timestamp": 1}));
        let call = format!("call{turn}");
        let assistant = json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": rng.text(3), "thinkingSignature": "sig"},
            {"type": "text", "text": rng.text(2)},
            {"type": "toolCall", "id": call, "name": "bash", "arguments": {"command": "cargo build", "timeout": 60}}],
            "provider": "anthropic", "model": "claude-test",
            // Usage that does not follow the content: such a session must not calibrate.
            "usage": {"input": 10, "output": 20, "cacheRead": turn * 7919 % 50_000, "cacheWrite": 50, "totalTokens": 0},
            "stopReason": "toolUse", "timestamp": 1});
        push(&mut lines, assistant);
        let size = rng.below(3) * rng.below(400) + 1;
        let mut content = vec![json!({"type": "text", "text": rng.text(size)})];
        if rng.below(7) == 0 {
            content.push(json!({"type": "image", "data": "QUJD", "mimeType": "image/png"}));
        }
        let tool = if turn % 5 == 0 { "read" } else { "bash" };
        push(
            &mut lines,
            json!({"role": "toolResult", "toolCallId": call, "toolName": tool, "content": content, "isError": false, "timestamp": 1}),
        );
    }
    lines.iter().map(|v| format!("{v}\n")).collect()
}

//! Claude Code transcripts through the `shake` binary: every read command works on them,
//! `shake project --json` equals what Claude Code 2.1.328 itself sent on resume (each fixture's
//! `request.json`), the meter equals `fold --dry-run`, tombstones are never folded, the
//! claude-shake profile selects as claude-shake does, and with no session named shake picks pi's
//! session here, else Claude Code's.

use std::path::{Path, PathBuf};

use serde_json::Value;
use shake_plumbing::regions::claude_shake::is_tombstone;
use shake_plumbing::regions::claude_shake::{ClaudeShake, Output};

use crate::claude_project::{assert_same_messages, claude_fixtures};
use crate::env::TestEnv;

/// Puts a fixture's transcript where Claude Code keeps the sessions of the sandbox's working
/// directory, named after its session id, and returns the path.
pub fn install(env: &TestEnv, fixture: &Path) -> PathBuf {
    let meta: Value = serde_json::from_slice(&std::fs::read(fixture.join("meta.json")).unwrap()).unwrap();
    let id = meta["sessionId"].as_str().unwrap();
    install_bytes(env, id, &std::fs::read(fixture.join("transcript.jsonl")).unwrap())
}

/// Writes a transcript into the sandbox's Claude Code project folder as `<id>.jsonl`.
pub fn install_bytes(env: &TestEnv, id: &str, bytes: &[u8]) -> PathBuf {
    let dir = project_dir(env);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{id}.jsonl"));
    std::fs::write(&path, bytes).unwrap();
    path
}

/// The sandbox working directory's folder under `~/.claude/projects/`.
fn project_dir(env: &TestEnv) -> PathBuf {
    let cwd = std::fs::canonicalize(env.cwd()).unwrap();
    let name = shake_plumbing::claude::paths::encode_cwd(&cwd.to_string_lossy());
    env.dir.path().join("home/.claude/projects").join(name)
}

/// The tool_result contents of a transcript by tool_use_id (string contents only).
fn result_texts(path: &Path) -> std::collections::HashMap<String, String> {
    let t = shake_plumbing::claude::Transcript::read(path).unwrap();
    shake_plumbing::claude::fork::result_texts(&t)
}

#[test]
fn every_read_command_works_on_every_fixture_and_project_equals_claude_code() {
    let fixtures = claude_fixtures();
    assert!(fixtures.len() >= 12, "expected the generated fixtures, found {}", fixtures.len());
    for dir in fixtures {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let env = TestEnv::new();
        let path = install(&env, &dir);
        let f = path.to_str().unwrap();
        let before = std::fs::read(&path).unwrap();
        let imported = env.ok(&["import", f]);
        let t = shake_plumbing::claude::Transcript::read(&path).unwrap();
        let rows = t.rows.iter().filter(|r| r.is_conversation()).count();
        assert!(imported.contains(&format!("{rows} entries")), "{name}: {imported}");
        // The path by parentUuid, and with --context the loader's chain (recovered rows too).
        assert!(env.ok(&["ls-entries", f]).lines().count() <= rows, "{name}");
        let chain = shake_plumbing::claude::load(&t, Default::default());
        assert_eq!(env.ok(&["ls-entries", "--context", f]).lines().count(), chain.rows.len(), "{name}");
        assert!(!env.ok(&["ls-leaves", f]).is_empty(), "{name}");
        let session_id = t.session_id().unwrap();
        assert!(env.ok(&["sessions", "--porcelain"]).contains(session_id), "{name}");
        // The projection, as the CLI prints it, is Claude Code's own request.
        let projected: Value = serde_json::from_str(&env.ok(&["project", "--json", f])).unwrap();
        let request: Value = serde_json::from_slice(&std::fs::read(dir.join("request.json")).unwrap()).unwrap();
        let ours = projected["messages"].as_array().unwrap();
        assert_same_messages(&name, ours, request["messages"].as_array().unwrap());
        assert!(projected["leafId"].is_string(), "{name}");
        // Every fixture is Claude Sonnet 4.5's: counted by default as Claude counts it.
        assert!(env.ok(&["count-tokens", f]).contains("total (claude-v3)"), "{name}");
        assert!(env.ok(&["show", f]).contains("Context at"), "{name}");
        // meter = fold --dry-run, and no target is a tombstone or a result that is not text.
        let meter: Value = serde_json::from_str(&env.ok(&["meter", "--json", f])).unwrap();
        let dry: Value = serde_json::from_str(&env.ok(&["fold", "--dry-run", "--json", f])).unwrap();
        assert_eq!(meter["tokens"], dry["tokensFreed"], "{name}");
        assert_eq!(meter["toolResults"], dry["toolResults"], "{name}");
        let texts = result_texts(&path);
        for target in dry["targets"].as_array().unwrap() {
            let text = texts.get(target["id"].as_str().unwrap()).unwrap_or_else(|| panic!("{name}: {target}"));
            assert!(!is_tombstone(text), "{name}: {target} is already a placeholder");
        }
        let regions = env.ok(&["regions", f]);
        assert_eq!(regions.lines().count(), dry["targets"].as_array().unwrap().len(), "{name}: {regions}");
        assert_eq!(std::fs::read(&path).unwrap(), before, "{name}: a read command wrote the transcript");
    }
}

#[test]
fn a_result_claude_code_persisted_is_a_tombstone() {
    let env = TestEnv::new();
    let path = install(&env, &crate::env::fixture_path("claude/bash-read"));
    let persisted: Vec<String> = result_texts(&path)
        .into_iter()
        .filter(|(_, t)| t.starts_with("<persisted-output>"))
        .map(|(id, _)| id)
        .collect();
    assert_eq!(persisted.len(), 1);
    // The aggressive profile folds everything outside a 2,000-token tail: still not that one.
    let dry: Value = serde_json::from_str(&env.ok(&[
        "fold",
        "--dry-run",
        "--json",
        "--profile",
        "aggressive",
        path.to_str().unwrap(),
    ]))
    .unwrap();
    let ids: Vec<&str> = dry["targets"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert!(!ids.is_empty());
    assert!(!ids.contains(&persisted[0].as_str()), "{ids:?}");
}

/// A linear transcript: per turn a prompt, a Bash call and its result of `sizes[i]` characters
/// (line `i` of each result repeated), the last turn ending with an answer.
pub fn transcript(id: &str, sizes: &[usize], tombstone: Option<usize>) -> String {
    let mut out = format!("{{\"type\":\"queue-operation\",\"operation\":\"enqueue\",\"sessionId\":\"{id}\"}}\n");
    let mut parent = "null".to_string();
    let mut row = |out: &mut String, uuid: String, kind: &str, message: String| {
        out.push_str(&format!(
            "{{\"parentUuid\":{parent},\"isSidechain\":false,\"type\":\"{kind}\",\"message\":{message},\"uuid\":\"{uuid}\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"sessionId\":\"{id}\",\"cwd\":\"/w\"}}\n"
        ));
        parent = format!("\"{uuid}\"");
    };
    for (i, &n) in sizes.iter().enumerate() {
        row(&mut out, format!("p{i}"), "user", format!("{{\"role\":\"user\",\"content\":\"turn {i}\"}}"));
        let call = format!(
            "{{\"id\":\"m{i}\",\"role\":\"assistant\",\"content\":[{{\"type\":\"tool_use\",\"id\":\"toolu_{i}\",\"name\":\"Bash\",\"input\":{{\"command\":\"cat f{i}\"}}}}]}}"
        );
        row(&mut out, format!("a{i}"), "assistant", call);
        let text = match tombstone == Some(i) {
            true => format!("<persisted-output>\\nOutput too large{}", "x".repeat(n)),
            false => format!("line {i} ").repeat(n / 7 + 1)[..n].to_string(),
        };
        let result = format!(
            "{{\"role\":\"user\",\"content\":[{{\"tool_use_id\":\"toolu_{i}\",\"type\":\"tool_result\",\"content\":\"{text}\",\"is_error\":false}}]}}"
        );
        row(&mut out, format!("r{i}"), "user", result);
    }
    let answer =
        "{\"id\":\"mz\",\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}".to_string();
    row(&mut out, "z".into(), "assistant", answer);
    out
}

#[test]
fn the_claude_shake_profile_selects_what_claude_shake_selects() {
    let env = TestEnv::new();
    // Oldest first: small results are kept, the newest ~47,059 characters are the window.
    let sizes = [30_000, 1_500, 2_000, 2_001, 9_000, 40_000, 20_000, 30_000];
    let path = install_bytes(
        &env,
        "11111111-2222-4333-8444-555555555555",
        transcript("11111111-2222-4333-8444-555555555555", &sizes, Some(4)).as_bytes(),
    );
    let f = path.to_str().unwrap();
    let outputs: Vec<Output> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| Output { chars: n + if i == 4 { 35 } else { 0 }, tombstone: i == 4 })
        .collect();
    let want: Vec<String> = ClaudeShake::default().select(&outputs).iter().map(|i| format!("toolu_{i}")).collect();
    assert_eq!(want, ["toolu_0", "toolu_3", "toolu_5"]);
    let dry: Value =
        serde_json::from_str(&env.ok(&["fold", "--dry-run", "--json", "--profile", "claude-shake", f])).unwrap();
    let got: Vec<&str> = dry["targets"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect();
    // Of those, a result Claude Code's placeholder (a 2,000-character preview) would not shrink
    // stays: toolu_3 (2,001 characters).
    assert_eq!(got, ["toolu_0", "toolu_5"]);
    let meter: Value = serde_json::from_str(&env.ok(&["meter", "--json", "--profile", "claude-shake", f])).unwrap();
    assert_eq!(meter["tokens"], dry["tokensFreed"]);
    // Below the floor (15% of the context), nothing is folded: one old result among big new ones.
    let small = [2_500, 20_000, 40_000];
    let path = install_bytes(
        &env,
        "11111111-2222-4333-8444-666666666666",
        transcript("11111111-2222-4333-8444-666666666666", &small, None).as_bytes(),
    );
    let out = env.ok(&["fold", "--dry-run", "--profile", "claude-shake", path.to_str().unwrap()]);
    assert!(out.contains("under the floor (15% of the context)"), "{out}");
}

#[test]
fn with_no_session_named_shake_picks_pis_session_else_claude_codes() {
    let env = TestEnv::new();
    // Nothing here: pi's error, which says where pi looked.
    let err = env.fails(&["meter"], 1);
    assert!(err.contains("no pi session"), "{err}");
    // Only a Claude Code session here: that one (the newest by mtime, as `claude --continue`).
    let older = install_bytes(
        &env,
        "11111111-2222-4333-8444-000000000001",
        transcript("11111111-2222-4333-8444-000000000001", &[100], None).as_bytes(),
    );
    let newer = install(&env, &crate::env::fixture_path("claude/bash-read"));
    let old_time = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    std::fs::File::options().write(true).open(&older).unwrap().set_modified(old_time).unwrap();
    let projected: Value = serde_json::from_str(&env.ok(&["project", "--json"])).unwrap();
    let t = shake_plumbing::claude::Transcript::read(&newer).unwrap();
    assert_eq!(
        projected["leafId"].as_str(),
        t.rows.iter().rev().find(|r| r.kind() == "assistant").and_then(|r| r.uuid())
    );
    // `$CLAUDE_CONFIG_DIR` moves Claude Code's folder.
    let moved = env.dir.path().join("cfg");
    let rel = project_dir(&env).strip_prefix(env.dir.path().join("home/.claude")).unwrap().to_path_buf();
    std::fs::create_dir_all(moved.join(&rel)).unwrap();
    std::fs::rename(&newer, moved.join(&rel).join(newer.file_name().unwrap())).unwrap();
    let out = env.cmd().args(["project", "--json"]).env("CLAUDE_CONFIG_DIR", &moved).output().unwrap();
    let projected: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        projected["leafId"].as_str(),
        t.rows.iter().rev().find(|r| r.kind() == "assistant").and_then(|r| r.uuid())
    );
    // A pi session here wins over Claude Code's.
    let pi = std::fs::read(crate::env::fixture_path("pi-v3-branch-compaction-edit.jsonl")).unwrap();
    env.pi_session("0194f5a0-0000-7000-8000-000000000001", pi);
    let projected: Value = serde_json::from_str(&env.ok(&["project", "--json"])).unwrap();
    assert!(projected.get("entries").is_some(), "pi's projection, with its entries: {projected}");
}

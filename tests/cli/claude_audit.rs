//! The audits on Claude Code transcripts through the binary: `shake diff` of a transcript and
//! the fork `shake fold` wrote shows exactly the fold's targets as seen differently (the rows
//! are the same entries, by uuid, although every row of the fork carries its own `sessionId`),
//! and the undone session against the fork shows them again the other way round; `shake audit
//! fork` follows the fork records (new, carried, dropped) and finds an original whose saved
//! file is gone; `shake restore` brings back, byte for byte, a transcript Claude Code rewrote
//! after a compaction.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use crate::claude_host::{install, install_bytes, transcript};
use crate::env::TestEnv;

fn json(env: &TestEnv, args: &[&str]) -> Value {
    serde_json::from_str(&env.ok(args)).unwrap()
}

/// Runs `shake diff --json A B`, checks it exits 1 (the leaves differ) and returns its answer.
fn diff(env: &TestEnv, a: &Path, b: &Path) -> Value {
    let out = env.run(&["diff", "--json", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The row uuid holding each `tool_result`, by `tool_use_id`.
fn result_rows(path: &Path) -> std::collections::HashMap<String, String> {
    let mut rows = std::collections::HashMap::new();
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let row: Value = serde_json::from_str(line).unwrap_or_default();
        let Some(uuid) = row["uuid"].as_str() else { continue };
        for block in row["message"]["content"].as_array().into_iter().flatten() {
            if block["type"] == "tool_result" {
                rows.insert(block["tool_use_id"].as_str().unwrap().to_string(), uuid.to_string());
            }
        }
    }
    rows
}

/// Folds `path` with `profile`, then checks `diff source fork` and `diff fork undone`: the
/// whole path shared, nothing only on one side, and the changed entries exactly the rows of the
/// fold's targets, folded at the fork (with the record's regions) and raw at the other side.
fn check(env: &TestEnv, path: &Path, profile: &str) {
    let fold = json(env, &["fold", "--json", "--profile", profile, path.to_str().unwrap()]);
    let fork = Path::new(fold["fork"]["path"].as_str().unwrap()).to_path_buf();
    let targets: BTreeSet<String> =
        fold["targets"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap().to_string()).collect();
    assert!(!targets.is_empty(), "{fold}");
    let rows = result_rows(path);
    let expected: BTreeSet<&str> = targets.iter().map(|t| rows[t].as_str()).collect();
    let undo = json(env, &["undo", "--json", fork.to_str().unwrap()]);
    let undone = Path::new(undo["session"]["path"].as_str().unwrap()).to_path_buf();
    for (a, b, folded_at) in [(path, &fork, "b"), (&fork, &undone, "a")] {
        let d = diff(env, a, b);
        assert_eq!(d["shared"]["length"], d["a"]["pathLength"], "{profile}: the whole path is shared: {d}");
        assert_eq!(d["a"]["pathLength"], d["b"]["pathLength"]);
        assert_eq!(d["onlyA"], serde_json::json!([]));
        assert_eq!(d["onlyB"], serde_json::json!([]));
        assert_eq!(d["same"], false);
        let changed = d["targets"].as_array().unwrap();
        let ids: BTreeSet<&str> = changed.iter().map(|c| c["id"].as_str().unwrap()).collect();
        assert_eq!(ids, expected, "{profile}: exactly the folded results are seen differently");
        let raw_at = if folded_at == "a" { "b" } else { "a" };
        let mut regions = BTreeSet::new();
        for c in changed {
            assert_eq!(c[folded_at]["seen"], "folded", "{c}");
            assert_eq!(c[raw_at]["seen"], "raw", "{c}");
            assert_eq!(c[raw_at]["regions"], serde_json::json!([]), "{c}");
            for r in c[folded_at]["regions"].as_array().unwrap() {
                assert_eq!(rows[r["target"].as_str().unwrap()], c["id"].as_str().unwrap());
                regions.insert(r["target"].as_str().unwrap().to_string());
            }
        }
        assert_eq!(regions, targets, "{profile}: the regions are the fold record's targets");
    }
    // The fork against itself: the same context, exit 0.
    let same = env.run(&["diff", fork.to_str().unwrap(), fork.to_str().unwrap()]);
    assert_eq!(same.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&same.stdout).contains("Same leaf"));
}

#[test]
fn diff_of_a_fork_and_its_source_shows_exactly_the_folded_results() {
    let env = TestEnv::new();
    check(&env, &install(&env, &crate::env::fixture_path("claude/bash-read")), "default");
    let sizes = [30_000, 1_500, 2_000, 2_001, 9_000, 40_000, 20_000, 30_000, 500];
    let path = install_bytes(
        &env,
        "11111111-2222-4333-8444-555555555555",
        transcript("11111111-2222-4333-8444-555555555555", &sizes, Some(4)).as_bytes(),
    );
    check(&env, &path, "claude-shake");
    check(&env, &path, "aggressive");
}

/// Runs `shake audit fork --json SOURCE FORK`, checks its exit code and returns the folds.
fn audit(env: &TestEnv, source: &Path, fork: &Path, code: i32) -> Vec<Value> {
    let out = env.run(&["audit", "fork", "--json", source.to_str().unwrap(), fork.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(code), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["consistent"], code == 0);
    v["folds"].as_array().unwrap().clone()
}

/// One fold's `(target, problem)` pairs.
type Targets = Vec<(String, Value)>;

/// `(status, log, targets)` of each fold.
fn verdicts(folds: &[Value]) -> Vec<(String, String, Targets)> {
    folds
        .iter()
        .map(|f| {
            let targets = f["targets"].as_array().unwrap().iter();
            let targets = targets.map(|t| (t["id"].as_str().unwrap().to_string(), t["problem"].clone())).collect();
            (f["status"].as_str().unwrap().to_string(), f["log"].as_str().unwrap().to_string(), targets)
        })
        .collect()
}

fn targets_of(fold: &Value) -> Targets {
    fold["targets"].as_array().unwrap().iter().map(|t| (t["id"].as_str().unwrap().to_string(), Value::Null)).collect()
}

#[test]
fn audit_fork_follows_the_fold_records_and_the_saved_originals() {
    let env = TestEnv::new();
    let sizes = [30_000, 30_000, 9_000, 40_000, 20_000, 30_000, 500];
    let path = install_bytes(
        &env,
        "11111111-2222-4333-8444-666666666666",
        transcript("11111111-2222-4333-8444-666666666666", &sizes, None).as_bytes(),
    );
    let fold = json(&env, &["fold", "--json", "--profile", "claude-shake", path.to_str().unwrap()]);
    let fork = Path::new(fold["fork"]["path"].as_str().unwrap()).to_path_buf();
    let again = json(&env, &["fold", "--json", "--profile", "aggressive", fork.to_str().unwrap()]);
    let fork2 = Path::new(again["fork"]["path"].as_str().unwrap()).to_path_buf();
    assert!(!targets_of(&fold).is_empty() && !targets_of(&again).is_empty(), "{fold} {again}");
    let (first, second) = (targets_of(&fold), targets_of(&again));
    // The source has no fold; the fork's is new. The second fork carries it and adds its own.
    assert_eq!(verdicts(&audit(&env, &path, &fork, 0)), [("new".into(), "z".into(), first.clone())]);
    let both = verdicts(&audit(&env, &fork, &fork2, 0));
    assert_eq!(both, [("carried".into(), "z".into(), first.clone()), ("new".into(), "z".into(), second.clone())]);
    // The other way round the second fork's fold is missing: dropped, a difference.
    assert_eq!(verdicts(&audit(&env, &fork2, &fork, 1))[1].0, "dropped");
    // An original whose saved file is gone cannot be had back.
    let saved = Path::new(fold["fork"]["saved"][0]["path"].as_str().unwrap()).to_path_buf();
    let lost = first[0].0.clone();
    std::fs::rename(&saved, saved.with_extension("gone")).unwrap();
    let folds = audit(&env, &path, &fork, 1);
    let problems: Targets = verdicts(&folds)[0].2.iter().filter(|t| !t.1.is_null()).cloned().collect();
    assert_eq!(problems, [(lost, Value::from("original not saved"))]);
    let text = env.run(&["audit", "fork", path.to_str().unwrap(), fork.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("original not saved"));
}

/// Claude Code's rewrite of a transcript over 5 MiB after a compaction, simulated: only the rows
/// from the last `compact_boundary` on (what its loader keeps of such a file) are written to a
/// new file that replaces the old one.
fn rewrite_after_compaction(path: &Path) {
    let bytes = std::fs::read(path).unwrap();
    assert!(bytes.len() > 5 << 20, "the fixture is past the size gate");
    let lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
    let boundary = lines
        .iter()
        .rposition(|l| {
            let row: Value = serde_json::from_slice(l).unwrap_or_default();
            row["type"] == "system" && row["subtype"] == "compact_boundary"
        })
        .expect("a compaction");
    assert!(boundary > 0);
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, lines[boundary..].concat()).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

#[test]
fn restore_brings_back_a_transcript_claude_code_rewrote() {
    let env = TestEnv::new();
    let fixture = crate::env::fixture_path("claude/big-unanchored");
    let path = install(&env, &fixture);
    let first = std::fs::read(&path).unwrap();
    let f = path.to_str().unwrap();
    env.ok(&["import", f]);
    rewrite_after_compaction(&path);
    let rewritten = std::fs::read(&path).unwrap();
    assert!(rewritten.len() < first.len() / 10);
    assert!(env.ok(&["import", f]).starts_with("rewritten "), "the second import sees a rewrite");
    let versions = env.ok(&["sessions", "--versions"]);
    assert!(versions.contains("version 2") && versions.contains("rewritten"), "{versions}");
    // By path and by the transcript's session id, to stdout, to a file, and over the file itself.
    let id = path.file_stem().unwrap().to_str().unwrap();
    assert_eq!(env.run(&["restore", "--version", "1", "-o", "-", f]).stdout, first);
    assert_eq!(env.run(&["restore", "--version", "1", "-o", "-", &id[..8]]).stdout, first);
    assert_eq!(env.run(&["restore", "-o", "-", f]).stdout, rewritten, "the latest version");
    env.fails(&["restore", "--version", "1", f], 1);
    assert_eq!(std::fs::read(&path).unwrap(), rewritten, "not overwritten without --force");
    env.ok(&["restore", "--version", "1", "--force", f]);
    assert_eq!(std::fs::read(&path).unwrap(), first, "the first bytes back exactly");
    // The restored transcript is what Claude Code loaded before the rewrite.
    let projected: Value = serde_json::from_str(&env.ok(&["project", "--json", f])).unwrap();
    let request: Value = serde_json::from_slice(&std::fs::read(fixture.join("request.json")).unwrap()).unwrap();
    crate::claude_project::assert_same_messages(
        "big-unanchored",
        projected["messages"].as_array().unwrap(),
        request["messages"].as_array().unwrap(),
    );
}

/// Runs `shake audit rewind --json` and checks its exit code.
fn rewind(env: &TestEnv, path: &Path, code: i32) -> Value {
    let out = env.run(&["audit", "rewind", "--json", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(code), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn audit_rewind_follows_the_rows_a_branch_reaches_and_checks_each_fold_at_its_row() {
    let env = TestEnv::new();
    let sid = "11111111-2222-4333-8444-bbbbbbbbbbbb";
    let source = transcript(sid, &[30_000, 30_000, 30_000, 500], None);
    let path = install_bytes(&env, sid, source.as_bytes());
    let f = path.to_str().unwrap();
    let fold = json(&env, &["fold", "--json", "--profile", "aggressive", "--in-place", "--force", f]);
    let targets: Vec<&str> = fold["targets"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert_eq!(targets, ["toolu_0", "toolu_1"], "{fold}");
    let audit = rewind(&env, &path, 0);
    assert_eq!(audit["folds"][0]["log"], "z");
    assert_eq!(audit["folds"][0]["targets"][0]["seen"], "folded");
    // A resume from r1 (after both results) keeps both folds; one from r0 strands toolu_1.
    let branch = |parent: &str, uuid: &str| {
        format!(
            "{{\"parentUuid\":\"{parent}\",\"isSidechain\":false,\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":\"again\"}},\"uuid\":\"{uuid}\",\"timestamp\":\"2026-01-01T00:02:00.000Z\",\"sessionId\":\"{sid}\",\"cwd\":\"/w\"}}\n"
        )
    };
    let mut bytes = std::fs::read_to_string(&path).unwrap() + &branch("r1", "b1");
    std::fs::write(&path, &bytes).unwrap();
    let audit = rewind(&env, &path, 0);
    assert_eq!((audit["defaultLeaf"].as_str(), &audit["stranded"]), (Some("b1"), &serde_json::json!([])));
    bytes += &branch("r0", "c1");
    std::fs::write(&path, &bytes).unwrap();
    let audit = rewind(&env, &path, 0);
    assert_eq!(audit["stranded"], serde_json::json!([{"log": "z", "regions": 1, "leaves": ["z", "b1"]}]));
    let status = env.ok(&["status", f]);
    assert!(status.contains("Stranded: the fold recorded at z folds 1 region on an abandoned branch (leaf z, b1); Claude Code continued from an earlier message"), "{status}");
    // A row that no longer holds the placeholder, with no undo recorded: the check fails.
    let folded = bytes.clone();
    let original = source.lines().find(|l| l.contains("\"uuid\":\"r0\"")).unwrap();
    let placeholder_row = folded.lines().find(|l| l.contains("\"uuid\":\"r0\"")).unwrap();
    std::fs::write(&path, folded.replacen(placeholder_row, original, 1)).unwrap();
    let audit = rewind(&env, &path, 1);
    assert_eq!(audit["folds"][0]["targets"][0]["problem"], "not folded", "{audit}");
    // An undo at c1 puts back the result it reaches, and the other stays folded: consistent.
    std::fs::write(&path, &folded).unwrap();
    env.ok(&["undo", "--in-place", "--force", f]);
    let audit = rewind(&env, &path, 0);
    let seen: Vec<&Value> = audit["folds"][0]["targets"].as_array().unwrap().iter().map(|t| &t["seen"]).collect();
    assert_eq!(seen, ["restored", "folded"], "{audit}");
}

/// A fold of tool inputs is audited as any: its targets (the rows holding the calls) are
/// recoverable while each saved input is the one the placeholder was made from; a saved input
/// changed since is not put back, and the audit says so.
#[test]
fn audit_fork_checks_the_saved_inputs_of_folded_calls() {
    let env = TestEnv::new();
    let path = install(&env, &crate::env::fixture_path("claude/write-edit"));
    let fold = json(&env, &["fold", "--json", path.to_str().unwrap(), "--fold-tool-inputs"]);
    let fork = Path::new(fold["fork"]["path"].as_str().unwrap()).to_path_buf();
    let inputs: Vec<&str> = fold["targets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["kind"] == "toolInput")
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(inputs.len(), 2, "{fold}");
    let leaf = fold["leafBefore"].as_str().unwrap().to_string();
    assert_eq!(verdicts(&audit(&env, &path, &fork, 0)), [("new".into(), leaf, targets_of(&fold))]);
    // The Write's saved input, changed: the same keys, another content.
    let (_, saved) = crate::claude_fold::saved_files(&fold).into_iter().find(|(id, _)| *id == inputs[0]).unwrap();
    let mut input: Value = serde_json::from_str(&std::fs::read_to_string(saved).unwrap()).unwrap();
    input["content"] = Value::from("other");
    std::fs::write(saved, input.to_string()).unwrap();
    let problems: Targets =
        verdicts(&audit(&env, &path, &fork, 1))[0].2.iter().filter(|t| !t.1.is_null()).cloned().collect();
    assert_eq!(problems, [(inputs[0].to_string(), Value::from("original not saved"))]);
    // Undo puts back the Edit's input and leaves the Write's placeholder where it is.
    let undo = json(&env, &["undo", "--json", fork.to_str().unwrap()]);
    let undone = std::fs::read_to_string(undo["session"]["path"].as_str().unwrap()).unwrap();
    let row = |uuid: &str| undone.lines().find(|l| l.contains(&format!("\"uuid\":\"{uuid}\""))).unwrap().to_string();
    assert!(row(inputs[0]).contains("input omitted"), "the Write's input stays folded");
    assert!(!row(inputs[1]).contains("input omitted"), "the Edit's input is back");
}

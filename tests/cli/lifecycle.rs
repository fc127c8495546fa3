//! The fold lifecycle checked with pi's own code (seed 000's table): after a fold pi accepts the
//! file and projects the same context except the folded content; a fork of the folded leaf shows
//! the same wall; a rewind shows raw content and an empty wall; undo restores pi's projection
//! exactly. On a synthetic session with every skip case, and on the real fixtures.

use std::collections::HashSet;
use std::path::Path;

use serde_json::Value;

use crate::env::{fixtures, Oracle, TestEnv};
use crate::synthetic;

/// pi's projection of a file (at `leaf`, or pi's leaf on load).
pub fn pi_project(path: &Path, leaf: Option<&str>) -> Value {
    let p = path.to_str().unwrap();
    let mut args = vec![p];
    args.extend(leaf);
    Oracle::run("project.mjs", &args)
}

/// The context entries that give messages, as (id, messages).
pub fn messages_by_entry(p: &Value) -> Vec<(String, Value)> {
    p["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| !e["messages"].as_array().unwrap().is_empty())
        .map(|e| (e["id"].as_str().unwrap().to_string(), e["messages"].clone()))
        .collect()
}

/// Asserts pi accepts the file and would itself append, unchanged, every context_edit on the
/// active path that is not one of `theirs` (edits the file had before shake touched it).
pub fn assert_pi_accepts(path: &Path, theirs: &HashSet<String>) {
    let r = Oracle::run("append-check.mjs", &[path.to_str().unwrap()]);
    assert_eq!(r["accepted"], true, "{r}");
    assert_eq!(r["probe"]["ok"], true, "{}", r["probe"]);
    for edit in r["contextEdits"].as_array().unwrap() {
        if edit["onActivePath"] == true && !theirs.contains(edit["id"].as_str().unwrap()) {
            assert_eq!(edit["piWouldAppend"], true, "{edit}");
            assert!(edit.get("piWouldNormalizeTo").is_none(), "{edit}");
        }
    }
}

/// Asserts `post` equals `pre` except the content of `folded` targets, whose other fields and
/// tool-call blocks are unchanged.
pub fn assert_same_except(pre: &Value, post: &Value, folded: &HashSet<String>) {
    let (a, b) = (messages_by_entry(pre), messages_by_entry(post));
    assert_eq!(a.iter().map(|x| &x.0).collect::<Vec<_>>(), b.iter().map(|x| &x.0).collect::<Vec<_>>());
    for ((id, before), (_, after)) in a.iter().zip(&b) {
        if !folded.contains(id) {
            assert_eq!(before, after, "entry {id} changed but was not folded");
            continue;
        }
        let strip = |m: &Value| {
            let mut m = m.clone();
            let calls: Vec<Value> = m["content"]
                .as_array()
                .map(|c| c.iter().filter(|b| b["type"] == "toolCall").cloned().collect())
                .unwrap_or_default();
            m.as_object_mut().unwrap().remove("content");
            (m, calls)
        };
        assert_eq!(strip(&before[0]), strip(&after[0]), "entry {id}: metadata or tool calls changed");
        assert_ne!(before, after, "entry {id} listed as folded but unchanged");
    }
}

fn json(env: &TestEnv, args: &[&str]) -> Value {
    serde_json::from_str(&env.ok(args)).unwrap()
}

fn ids_of(v: &Value) -> HashSet<String> {
    v["targets"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap().to_string()).collect()
}

fn wall(env: &TestEnv, args: &[&str]) -> Vec<Value> {
    let mut a = vec!["status", "--json"];
    a.extend_from_slice(args);
    json(env, &a)["targets"].as_array().unwrap().clone()
}

/// Runs the whole lifecycle on one file; returns the targets of the elide fold.
fn lifecycle(env: &TestEnv, path: &Path) -> HashSet<String> {
    let p = path.to_str().unwrap();
    let pre = pi_project(path, None);
    let theirs: HashSet<String> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "context_edit")
        .map(|v| v["id"].as_str().unwrap_or_default().to_string())
        .collect();
    let pre_leaf = pre["leafId"].as_str().map(str::to_string);
    let mut folded = HashSet::new();
    for scope in ["elide", "thinking", "images"] {
        let dry = json(env, &["fold", p, "--scope", scope, "--dry-run", "--json"]);
        let before = std::fs::read(path).unwrap();
        let real = json(env, &["fold", p, "--scope", scope, "--json"]);
        assert_eq!(dry["tokensFreed"], real["tokensFreed"], "one number: dry run and fold");
        assert_eq!(dry["targets"], real["targets"]);
        if real["appended"].as_array().unwrap().is_empty() {
            assert_eq!(std::fs::read(path).unwrap(), before, "nothing to fold must append nothing");
            continue;
        }
        let log = json(env, &["log", p, "--json"]);
        assert_eq!(log[0]["tokens"], real["tokensFreed"], "one number: the log entry");
        folded.extend(ids_of(&real));
        assert_pi_accepts(path, &theirs);
        assert_same_except(&pre, &pi_project(path, None), &folded);
        let ours: Value = json(env, &["project", p, "--json"]);
        let theirs = Oracle::run("project.mjs", &[p, "--compact"]);
        assert_eq!(ours, theirs, "shake's projection of the folded file equals pi's");
        let again = std::fs::read(path).unwrap();
        assert!(env.ok(&["fold", p, "--scope", scope]).starts_with("Nothing to fold"));
        assert_eq!(std::fs::read(path).unwrap(), again, "a repeat fold appends nothing");
    }
    if folded.is_empty() {
        return folded;
    }
    let the_wall = wall(env, &[p]);
    // A fork of the folded leaf (pi's createBranchedSession and forkFrom) carries the wall.
    let leaf = json(env, &["status", p, "--json"])["leafId"].as_str().unwrap().to_string();
    let forks = env.dir.path().join(format!("forks-{}", path.file_name().unwrap().to_string_lossy()));
    let f = forks.to_str().unwrap();
    let branched = Oracle::run("fork.mjs", &["branched", p, &leaf, f]);
    assert_eq!(wall(env, &[branched["file"].as_str().unwrap()]), the_wall, "createBranchedSession keeps the wall");
    let from = Oracle::run("fork.mjs", &["from", p, &format!("{f}-from")]);
    assert_eq!(wall(env, &[from["file"].as_str().unwrap()]), the_wall, "forkFrom keeps the wall");
    // A rewind to before the first fold: raw content and an empty wall.
    if let Some(pre_leaf) = &pre_leaf {
        assert!(wall(env, &[p, "--leaf", pre_leaf]).is_empty());
        assert_eq!(messages_by_entry(&pi_project(path, Some(pre_leaf))), messages_by_entry(&pre));
        // A pi fork at that entry starts from raw, unshaken context.
        let early = Oracle::run("fork.mjs", &["branched", p, pre_leaf, &format!("{f}-early")]);
        let early = Path::new(early["file"].as_str().unwrap());
        assert!(wall(env, &[early.to_str().unwrap()]).is_empty());
        assert_eq!(messages_by_entry(&pi_project(early, None)), messages_by_entry(&pre));
    }
    // Undo restores pi's projection exactly; a repeat undo appends nothing.
    let undo = json(env, &["undo", p, "--json"]);
    assert_eq!(
        undo["entries"].as_u64().unwrap() as usize,
        the_wall.iter().map(|t| &t["id"]).collect::<HashSet<_>>().len()
    );
    assert_pi_accepts(path, &theirs);
    assert_eq!(messages_by_entry(&pi_project(path, None)), messages_by_entry(&pre), "undo restores the projection");
    assert!(wall(env, &[p]).is_empty());
    let after_undo = std::fs::read(path).unwrap();
    assert!(env.ok(&["undo", p]).starts_with("Nothing to undo"));
    assert_eq!(std::fs::read(path).unwrap(), after_undo);
    folded
}

#[test]
fn lifecycle_on_a_synthetic_session_with_every_case() {
    let env = TestEnv::new();
    let rich = synthetic::rich();
    let path = env.write("rich.jsonl", &rich.text);
    let pre_tokens = pi_project(&path, None)["tokens"]["projected"].as_u64().unwrap();
    let dry = json(&env, &["fold", path.to_str().unwrap(), "--dry-run", "--json", "--tokenizer", "pi"]);
    let targets = ids_of(&dry);
    for id in &rich.folded_results {
        assert!(targets.contains(id), "{id} should fold: {dry}");
    }
    for id in rich.skill.iter().chain(&rich.skipped) {
        assert!(!targets.contains(id), "{id} must be skipped");
    }
    let kinds: Vec<&str> = dry["targets"].as_array().unwrap().iter().map(|t| t["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "block").count(), 4, "python, context, rust, ~~~ blocks: {dry}");
    // One number: the fold frees exactly what pi's own estimate loses.
    env.ok(&["fold", path.to_str().unwrap(), "--tokenizer", "pi"]);
    let post_tokens = pi_project(&path, None)["tokens"]["projected"].as_u64().unwrap();
    assert_eq!(pre_tokens - post_tokens, dry["tokensFreed"].as_u64().unwrap());
    // The foreign edit's content is what got folded; the image of the read result stayed.
    let post = pi_project(&path, None);
    let by_id = messages_by_entry(&post);
    let read = &by_id.iter().find(|(id, _)| *id == rich.folded_results[0]).unwrap().1[0]["content"];
    assert_eq!(read.as_array().unwrap().len(), 2);
    let planned =
        dry["targets"].as_array().unwrap().iter().find(|t| t["id"] == rich.folded_results[0].as_str()).unwrap();
    assert_eq!(read[0]["text"], planned["placeholder"]);
    assert!(planned["placeholder"].as_str().unwrap().starts_with("[read output omitted (~1,"));
    assert_eq!(read[1]["type"], "image");
    env.ok(&["undo", path.to_str().unwrap()]);
    let folded = lifecycle(&env, &path);
    assert!(folded.contains(&rich.foreign));
}

#[test]
fn lifecycle_on_the_real_fixtures() {
    let env = TestEnv::new();
    for name in fixtures().iter().filter(|n| !n.contains("v1")) {
        let path = env.fixture(name);
        let p = path.to_str().unwrap();
        if !std::fs::read(&path).unwrap().ends_with(b"\n") {
            // A partial last line that is not shake's: refused, and nothing written.
            let before = std::fs::read(&path).unwrap();
            assert!(env.fails(&["fold", p], 1).contains("last line is incomplete"));
            assert_eq!(std::fs::read(&path).unwrap(), before);
            continue;
        }
        lifecycle(&env, &path);
    }
}

/// How many generated sessions the lifecycle runs over (seeds `0..GENERATED`).
const GENERATED: u64 = 60;

/// pi's view of many files at once (`fold-check.mjs`): projection at pi's leaf, lines that do
/// not round-trip through JSON.stringify, and each active edit replayed through pi's writer.
fn fold_check(paths: &[std::path::PathBuf]) -> Vec<Value> {
    let args: Vec<&str> = paths.iter().map(|p| p.to_str().unwrap()).collect();
    Oracle::run("fold-check.mjs", &args).as_array().unwrap().clone()
}

#[test]
fn lifecycle_on_generated_sessions() {
    use shake_plumbing::pi::generate::{generate, Limit, Options};
    let env = TestEnv::new();
    let paths: Vec<_> = (0..GENERATED)
        .map(|seed| {
            env.write(&format!("gen-{seed}.jsonl"), generate(&Options { seed, limit: Limit::Default, cwd: None }))
        })
        .collect();
    let pre = fold_check(&paths);
    let mut folded: Vec<HashSet<String>> = Vec::new();
    for path in &paths {
        let p = path.to_str().unwrap();
        let mut ids = HashSet::new();
        for scope in ["elide", "thinking", "images"] {
            let dry = json(&env, &["fold", p, "--scope", scope, "--profile", "aggressive", "--dry-run", "--json"]);
            let real = json(&env, &["fold", p, "--scope", scope, "--profile", "aggressive", "--json"]);
            assert_eq!(dry["tokensFreed"], real["tokensFreed"], "{p} {scope}: one number");
            if !real["appended"].as_array().unwrap().is_empty() {
                assert_eq!(json(&env, &["log", p, "--json"])[0]["tokens"], real["tokensFreed"]);
            }
            ids.extend(ids_of(&real));
        }
        folded.push(ids);
    }
    assert!(folded.iter().filter(|f| !f.is_empty()).count() > GENERATED as usize / 2, "most sessions fold something");
    for ((path, before), (after, ids)) in paths.iter().zip(&pre).zip(fold_check(&paths).iter().zip(&folded)) {
        let what = path.display();
        assert_eq!(after["accepted"], true, "{what}");
        assert_eq!(after["piChangedFile"], "unchanged", "{what}");
        assert_eq!(
            after["notRoundTripping"], before["notRoundTripping"],
            "{what}: shake's lines are what pi would write"
        );
        for edit in after["edits"].as_array().unwrap() {
            assert!(edit["ok"] == true && edit.get("normalized").is_none(), "{what}: {edit}");
        }
        assert_same_except(before, after, ids);
        let ours = json(&env, &["project", path.to_str().unwrap(), "--json"]);
        assert_eq!(ours["entries"], after["entries"], "{what}: shake projects the folded file as pi does");
        env.ok(&["undo", path.to_str().unwrap()]);
    }
    for ((path, before), after) in paths.iter().zip(&pre).zip(&fold_check(&paths)) {
        assert_eq!(
            messages_by_entry(after),
            messages_by_entry(before),
            "{}: undo restores pi's projection",
            path.display()
        );
        assert!(wall(&env, &[path.to_str().unwrap()]).is_empty());
    }
}

//! The fold rules besides the token tail (issue 31), each on real fixtures, pi's and Claude
//! Code's: tools never folded, the last N tool uses kept, superseded reads folded even inside
//! what is protected (the placeholder says why, in each host's form), the floor; the config file
//! and its precedence; and meter = dry run = fold = status with every rule.

use std::path::{Path, PathBuf};

use serde_json::Value;

use shake_plumbing::regions::thousands;

use crate::claude_fold::{renamed, saved_files};
use crate::env::{fixture_path, settled, TestEnv};

const PI: &str = "pi-mono-before-compaction.v3-migrated-by-pi-1.6.0.jsonl";
/// A Claude Code transcript with reads superseded inside the tail.
const CLAUDE: &str = "claude-real/aistrad__work__4de22212-8a9b-4541-85d7-4b4f8c0c2451.jsonl";

fn json(env: &TestEnv, args: &[&str]) -> Value {
    let out = env.ok(args);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// A fresh copy of a fixture (in its own folder: a Claude Code fold saves originals beside it).
fn copy(env: &TestEnv, name: &str, dir: &str) -> PathBuf {
    let folder = env.dir.path().join(dir);
    std::fs::create_dir_all(&folder).unwrap();
    let to = folder.join(Path::new(name).file_name().unwrap());
    std::fs::copy(fixture_path(name), &to).unwrap();
    settled(&to)
}

/// The regions `shake regions` lists with these arguments (pi's tokenizer).
fn regions(env: &TestEnv, path: &Path, extra: &[&str]) -> Vec<Value> {
    let args = [&["regions", path.to_str().unwrap(), "--json", "--tokenizer", "pi"], extra].concat();
    json(env, &args)["regions"].as_array().unwrap().clone()
}

/// meter = dry run = fold = status, with these arguments; returns the fold's JSON (on Claude
/// Code, status reads the fork the fold wrote).
fn one_number(env: &TestEnv, path: &Path, extra: &[&str]) -> Value {
    let p = path.to_str().unwrap();
    let with = |head: &[&'static str]| [head, &[p, "--json", "--tokenizer", "pi"], extra].concat();
    let meter = json(env, &with(&["meter"]));
    let dry = json(env, &with(&["fold", "--dry-run"]));
    let fold = json(env, &with(&["fold"]));
    let figures = |v: &Value, tokens: &str| (v[tokens].clone(), v["toolResults"].clone(), v["blocks"].clone());
    assert_eq!(figures(&meter, "tokens"), figures(&dry, "tokensFreed"), "meter = dry run {extra:?}");
    assert_eq!(figures(&fold, "tokensFreed"), figures(&dry, "tokensFreed"), "dry run = fold {extra:?}");
    let folded = fold["fork"]["path"].as_str().unwrap_or(p).to_string();
    let status = json(env, &["status", &folded, "--json", "--tokenizer", "pi"]);
    assert_eq!(status["tokensFreed"], fold["tokensFreed"], "fold = status {extra:?}");
    fold
}

fn labels(regions: &[Value]) -> Vec<&str> {
    regions.iter().map(|r| r["label"].as_str().unwrap()).collect()
}

#[test]
fn excluded_tools_are_never_folded() {
    let env = TestEnv::new();
    for (name, tool) in [(PI, "bash"), (CLAUDE, "Edit")] {
        let path = copy(&env, name, "x");
        let all = regions(&env, &path, &[]);
        let kept = regions(&env, &path, &["--exclude-tool", tool]);
        let others = labels(&all).into_iter().filter(|l| *l != tool).count();
        assert!(others < all.len(), "{name}: the fixture has {tool} results to exclude");
        assert_eq!((kept.len(), labels(&kept).contains(&tool)), (others, false), "{name}");
        let fold = one_number(&env, &path, &["--exclude-tool", tool]);
        assert_eq!(fold["toolResults"], others, "{name}");
    }
}

#[test]
fn the_last_tool_uses_are_kept() {
    let env = TestEnv::new();
    let path = copy(&env, PI, "k");
    let p = path.to_str().unwrap();
    let shown = json(&env, &["show", p, "--json", "--tokenizer", "pi"]);
    let results: Vec<&str> = shown["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["role"] == "toolResult")
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    let no_superseded = ["--superseded-reads", "false"];
    let base = regions(&env, &path, &no_superseded);
    let kept = regions(&env, &path, &[&["--keep-tool-uses", "60"], &no_superseded[..]].concat());
    let last: Vec<&str> = results[results.len() - 60..].to_vec();
    assert!(kept.len() < base.len(), "60 tool uses reach past the 4,000-token tail");
    assert!(kept.iter().all(|r| !last.contains(&r["id"].as_str().unwrap())), "a kept tool use was folded");
    // None kept: the tail alone decides.
    let none = regions(&env, &path, &[&["--keep-tool-uses", "0"], &no_superseded[..]].concat());
    assert!(none == base, "--keep-tool-uses 0 changed the plan");
    one_number(&env, &path, &[&["--keep-tool-uses", "60"], &no_superseded[..]].concat());
}

#[test]
fn superseded_reads_fold_inside_what_is_protected_and_say_why() {
    let env = TestEnv::new();
    // pi: 60 kept tool uses protect reads whose files were read again or edited later.
    let path = copy(&env, PI, "s");
    let keep = ["--keep-tool-uses", "60"];
    let on = regions(&env, &path, &keep);
    let off = regions(&env, &path, &[&keep[..], &["--superseded-reads", "false"]].concat());
    let stale: Vec<&Value> = on.iter().filter(|r| r["kind"] == "supersededRead").collect();
    assert!(on.len() > off.len(), "superseded reads inside the kept tool uses are folded");
    assert!(stale.iter().all(|r| r["label"] == "read"), "only reads are superseded");
    for r in &stale {
        let placeholder = r["placeholder"].as_str().unwrap();
        assert!(placeholder.ends_with("tokens): superseded: the file was read again or changed later]"), "{r}");
    }
    let fold = one_number(&env, &path, &keep);
    assert_eq!(fold["supersededReads"], stale.len());
    let log = json(&env, &["log", path.to_str().unwrap(), "--json"]);
    assert_eq!(log[0]["supersededReads"], stale.len());
    // Undo puts every read back as it was.
    env.ok(&["undo", path.to_str().unwrap()]);
    assert_eq!(regions(&env, &path, &keep), on);

    // Claude Code: the reads superseded inside the tail are folded, in Claude Code's own form
    // with the reason on its own line; the fork's undo brings back the originals.
    let path = copy(&env, CLAUDE, "c");
    let on = regions(&env, &path, &[]);
    let off = regions(&env, &path, &["--superseded-reads", "false"]);
    assert!(on.len() > off.len(), "{} vs {}", on.len(), off.len());
    let fold = one_number(&env, &path, &[]);
    let fork = fold["fork"]["path"].as_str().unwrap();
    let text = std::fs::read_to_string(fork).unwrap();
    let noted = "Full output saved to: ";
    let reason = "\\nsuperseded: the file was read again or changed later\\n\\nPreview";
    assert!(text.matches(reason).count() >= on.len() - off.len(), "the fork says why");
    assert!(text.contains(noted));
    let undo = json(&env, &["undo", fork, "--json"]);
    let back = undo["session"]["path"].as_str().unwrap();
    let original = std::fs::read_to_string(&path).unwrap();
    let restored = std::fs::read_to_string(back).unwrap();
    assert_eq!(restored.lines().count(), original.lines().count());
    assert!(!restored.contains(reason), "undo restores every superseded read");
}

#[test]
fn the_floor_stops_a_small_fold_and_the_config_sets_it() {
    let env = TestEnv::new();
    let path = copy(&env, PI, "f");
    let p = path.to_str().unwrap();
    let all = json(&env, &["fold", p, "--dry-run", "--json", "--tokenizer", "pi"])["tokensFreed"].as_u64().unwrap();
    let over = (all + 1).to_string();
    let out = env.ok(&["fold", p, "--dry-run", "--tokenizer", "pi", "--floor", &over]);
    assert!(out.contains(&format!("under the floor ({} tokens)", thousands(all + 1))), "{out}");
    assert_eq!(json(&env, &["meter", p, "--json", "--tokenizer", "pi", "--floor", &over])["tokens"], 0);
    assert!(env
        .ok(&["fold", p, "--dry-run", "--tokenizer", "pi", "--floor", "99%"])
        .contains("under the floor (99% of"));
    // The config file sets it; a flag wins over it.
    std::fs::write(env.cwd().join(".shake.toml"), format!("[fold]\nfloor = {over}\n")).unwrap();
    assert_eq!(json(&env, &["meter", p, "--json", "--tokenizer", "pi"])["tokens"], 0);
    assert_eq!(json(&env, &["meter", p, "--json", "--tokenizer", "pi", "--floor", "0"])["tokens"], all);
    std::fs::write(env.cwd().join(".shake.toml"), "[fold]\nfloor = \"1%\"\n").unwrap();
    let fold = one_number(&env, &path, &[]);
    assert_eq!(fold["tokensFreed"], all);
    // A bad file is an error naming it and its line.
    std::fs::write(env.cwd().join(".shake.toml"), "[fold]\nfloor = \"1%\"\nfloors = 3\n").unwrap();
    let err = env.fails(&["meter", p], 1);
    assert!(err.contains(".shake.toml: not a valid shake config") && err.contains("line 3"), "{err}");
}

/// pi's view of a file (`tests/oracle/fold-check.mjs`): its projection at pi's leaf, and each
/// `context_edit` on the path replayed through pi's own `appendContextEdit`.
fn pi_check(path: &Path) -> Value {
    crate::env::Oracle::run("fold-check.mjs", &[path.to_str().unwrap()])[0].clone()
}

#[test]
fn tool_inputs_fold_on_request_and_pi_projects_them() {
    let env = TestEnv::new();
    let path = copy(&env, PI, "i");
    let p = path.to_str().unwrap();
    let on = ["--fold-tool-inputs"];
    assert!(regions(&env, &path, &[]).iter().all(|r| r["kind"] != "toolInput"), "opt-in");
    let inputs: Vec<Value> = regions(&env, &path, &on).into_iter().filter(|r| r["kind"] == "toolInput").collect();
    assert!(inputs.len() >= 10, "the session's old writes and edits: {}", inputs.len());
    // The config file turns it on as the flag does.
    std::fs::write(env.cwd().join(".shake.toml"), "[fold]\nfold-tool-inputs = true\n").unwrap();
    let by_config: Vec<Value> = regions(&env, &path, &[]).into_iter().filter(|r| r["kind"] == "toolInput").collect();
    assert_eq!(by_config, inputs);
    std::fs::remove_file(env.cwd().join(".shake.toml")).unwrap();
    let before = pi_check(&path);
    let without = json(&env, &["fold", p, "--dry-run", "--json", "--tokenizer", "pi"]);
    let fold = one_number(&env, &path, &on);
    assert_eq!(fold["toolInputs"], inputs.len());
    assert!(fold["tokensFreed"].as_u64() > without["tokensFreed"].as_u64(), "{fold}");
    assert_eq!(json(&env, &["log", p, "--json"])[0]["toolInputs"], inputs.len());

    // pi accepts every edit as written and projects the folded calls: id and name kept, each big
    // argument the placeholder, the path kept; shake projects the file as pi does.
    let after = pi_check(&path);
    assert_eq!((&after["accepted"], &after["piChangedFile"]), (&Value::Bool(true), &Value::from("unchanged")));
    for edit in after["edits"].as_array().unwrap() {
        assert!(edit["ok"] == true && edit.get("normalized").is_none(), "{edit}");
    }
    let ours = json(&env, &["project", p, "--json"]);
    assert_eq!(ours["entries"], after["entries"], "shake projects the folded file as pi does");
    let projected = |v: &Value, id: &str| {
        let entry = v["entries"].as_array().unwrap().iter().find(|e| e["id"] == id).unwrap().clone();
        entry["messages"][0]["content"].as_array().unwrap().clone()
    };
    for r in &inputs {
        let id = r["id"].as_str().unwrap();
        let placeholder = r["placeholder"].as_str().unwrap();
        assert!(placeholder.ends_with(&format!("tokens): `shake show :{id}` prints the call as written]")), "{r}");
        let (was, now) = (projected(&before, id), projected(&after, id));
        let calls = |c: &[Value]| c.iter().filter(|b| b["type"] == "toolCall").cloned().collect::<Vec<_>>();
        let (was, now) = (calls(&was), calls(&now));
        assert_eq!(was.len(), now.len());
        let folded: Vec<(&Value, &Value)> = was.iter().zip(&now).filter(|(w, n)| w != n).collect();
        assert!(!folded.is_empty(), "{id}: a call is folded");
        for (w, n) in folded {
            assert_eq!(
                (&w["id"], &w["name"], &w["arguments"]["path"]),
                (&n["id"], &n["name"], &n["arguments"]["path"])
            );
            let args = n["arguments"].as_object().unwrap();
            assert!(args.values().any(|v| v == placeholder), "{id}: {n}");
            assert_eq!(args.keys().collect::<Vec<_>>(), w["arguments"].as_object().unwrap().keys().collect::<Vec<_>>());
        }
        // The way back the placeholder names: the entry's line as written.
        let line = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .find(|l| l.contains(&format!("\"id\":\"{id}\"")))
            .unwrap()
            .to_string();
        assert!(env.ok(&["show", &format!("{p}:{id}")]).contains(&line), "{id}");
    }

    // Nothing else changed; undo puts every input back exactly: pi projects the context entries
    // as before the fold (shake's own entries project to no message).
    let messages = |v: &Value| -> Vec<Value> {
        v["entries"].as_array().unwrap().iter().filter(|e| e["messages"] != serde_json::json!([])).cloned().collect()
    };
    let folded: Vec<&str> = fold["targets"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect();
    let (was, now) = (messages(&before), messages(&after));
    assert_eq!(was.len(), now.len());
    for (w, n) in was.iter().zip(&now) {
        assert!(w == n || folded.contains(&w["id"].as_str().unwrap()), "{} changed but was not folded", w["id"]);
    }
    env.ok(&["undo", p]);
    assert_eq!(messages(&pi_check(&path)), was);
}

#[test]
fn tool_inputs_are_refused_on_omp_and_folded_on_claude_code() {
    let env = TestEnv::new();
    // oh-my-pi's own /shake never folds a tool call: its meter says so rather than ignore it.
    let omp = copy(&env, "omp/omp-large-session.jsonl", "o");
    let err = env.fails(&["meter", omp.to_str().unwrap(), "--fold-tool-inputs"], 1);
    assert!(err.contains("OMP's own /shake never folds tool inputs"), "{err}");
    // Claude Code, a real session whose calls are all small (its longest Edit is 1,100 bytes,
    // under the block minimum): nothing more is folded, and the figures stay one number.
    let path = copy(&env, CLAUDE, "c");
    let without = json(&env, &["fold", path.to_str().unwrap(), "--dry-run", "--json", "--tokenizer", "pi"]);
    let fold = one_number(&env, &path, &["--fold-tool-inputs"]);
    assert_eq!((&fold["toolInputs"], &fold["tokensFreed"]), (&Value::from(0), &without["tokensFreed"]));
    // A Write then an Edit of one file read whole after them (made by Claude Code 2.1.328): the
    // fork splices each call's `input`, and the figures stay one number with the rule on.
    for (name, dir) in [("claude/write-edit/transcript.jsonl", "w")] {
        let path = copy(&env, name, dir);
        let p = path.to_str().unwrap();
        let source = std::fs::read_to_string(&path).unwrap();
        let without = json(&env, &["fold", p, "--dry-run", "--json", "--tokenizer", "pi"]);
        let fold = one_number(&env, &path, &["--fold-tool-inputs"]);
        let n = fold["toolInputs"].as_u64().unwrap();
        assert_eq!(n, 2, "{name}: the Write and the Edit: {fold}");
        assert!(fold["tokensFreed"].as_u64() > without["tokensFreed"].as_u64(), "{name}");
        let fork = std::fs::read_to_string(fold["fork"]["path"].as_str().unwrap()).unwrap();
        let (sid, fork_id) = (session_id(&source), fold["fork"]["sessionId"].as_str().unwrap());
        let renamed = |from: &str, to: &str| String::from_utf8(renamed(source.as_bytes(), from, to)).unwrap();
        let mut want = renamed(&sid, fork_id);
        let saved = saved_files(&fold);
        let inputs: Vec<&Value> =
            fold["targets"].as_array().unwrap().iter().filter(|t| t["kind"] == "toolInput").collect();
        assert_eq!(inputs.len() as u64, n);
        for t in inputs {
            // The target is the assistant row (its uuid); its call keeps id, name and every key,
            // and each big string is the placeholder, which names the saved input.
            let uuid = t["id"].as_str().unwrap();
            let placeholder = t["placeholder"].as_str().unwrap();
            let (_, at) = *saved.iter().find(|(id, _)| *id == uuid).unwrap_or_else(|| panic!("{uuid} saved"));
            assert!(
                placeholder.ends_with(&format!("tokens): the input as written is saved in {at}]")),
                "{placeholder}"
            );
            let holds = format!("\"uuid\":\"{uuid}\"");
            let (was, now) = (call_of(&want, &holds), call_of(&fork, &holds));
            assert_eq!((&was.1["id"], &was.1["name"]), (&now.1["id"], &now.1["name"]), "{uuid}");
            let (was_args, now_args) = (was.1["input"].as_object().unwrap(), now.1["input"].as_object().unwrap());
            assert_eq!(was_args.keys().collect::<Vec<_>>(), now_args.keys().collect::<Vec<_>>(), "{uuid}");
            for (key, value) in now_args {
                match value == &was_args[key] {
                    true => {}
                    false => assert!(value == placeholder && was_args[key].is_string(), "{uuid}: {key}"),
                }
            }
            // The saved file is the input as written, byte for byte; the fork's row is the
            // source's with the folded input in its place.
            let original = std::fs::read_to_string(at).unwrap();
            assert_eq!(original, was.0, "{uuid}: the saved input");
            let line = want.lines().find(|l| l.contains(&holds)).unwrap().to_string();
            want = want.replacen(&line, &line.replacen(&original, &now.0, 1), 1);
        }
        // Every other byte is the source's, folded results aside.
        let results: Vec<&str> = fold["targets"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["kind"] != "toolInput")
            .map(|t| t["id"].as_str().unwrap())
            .collect();
        for (w, f) in want.lines().zip(fork.lines()) {
            assert!(
                w == f || results.iter().any(|id| w.contains(&format!("\"tool_use_id\":\"{id}\""))),
                "{name}: {f:.300}"
            );
        }
        assert_eq!(want.lines().count(), fork.lines().count());
        // Undo gives the source's bytes back, under the undone session's id.
        let undo = json(&env, &["undo", "--json", fold["fork"]["path"].as_str().unwrap()]);
        let undone = std::fs::read_to_string(undo["session"]["path"].as_str().unwrap()).unwrap();
        assert_eq!(undone, renamed(&sid, undo["session"]["sessionId"].as_str().unwrap()), "{name}: undo");
        // In place: the transcript itself gets the fork's bytes (its own id kept), and undo in
        // place gives back the bytes the fold read.
        let args = ["fold", p, "--json", "--tokenizer", "pi", "--fold-tool-inputs", "--in-place", "--force"];
        let in_place = json(&env, &args);
        assert_eq!((&in_place["toolInputs"], &in_place["tokensFreed"]), (&fold["toolInputs"], &fold["tokensFreed"]));
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            String::from_utf8(crate::claude_fold::renamed(fork.as_bytes(), fork_id, &sid)).unwrap()
        );
        env.ok(&["undo", p, "--in-place", "--force"]);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), source, "{name}: undo in place");
    }
}

/// A transcript's session id (the first row naming one).
fn session_id(text: &str) -> String {
    let row = text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).find(|r| r["sessionId"].is_string());
    row.unwrap()["sessionId"].as_str().unwrap().to_string()
}

/// The `tool_use` block of the row holding `holds` in `text`: its `input` as written, and the
/// block parsed.
fn call_of(text: &str, holds: &str) -> (String, Value) {
    use serde_json::value::RawValue;
    type Object<'a> = std::collections::HashMap<&'a str, &'a RawValue>;
    let line = text.lines().find(|l| l.contains(holds)).unwrap_or_else(|| panic!("no row {holds}"));
    let row: Object = serde_json::from_str(line).unwrap();
    let message: Object = serde_json::from_str(row["message"].get()).unwrap();
    let blocks: Vec<&RawValue> = serde_json::from_str(message["content"].get()).unwrap();
    for block in blocks {
        let parsed: Value = serde_json::from_str(block.get()).unwrap();
        if parsed["type"] == "tool_use" {
            let members: Object = serde_json::from_str(block.get()).unwrap();
            return (members["input"].get().to_string(), parsed);
        }
    }
    panic!("no tool_use in {holds}")
}

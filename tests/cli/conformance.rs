//! pi is the oracle: `shake project`, `ls-entries --context` and `ls-leaves` against pi 1.6.0's
//! own code, for every branch tip of every fixture and of a few hundred generated sessions.
//!
//! One node process projects every tip of many files (`tests/oracle/project-all.mjs`), so the
//! suite stays fast; the bulk compares against the library functions the commands run, and a
//! sample goes through the `shake` binary itself.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;
use shake_plumbing::host::View;
use shake_plumbing::pi::generate::{generate, Limit, Options};

use crate::env::{fixtures, Oracle, TestEnv};

/// How many generated sessions the suite checks (seeds `0..SEEDS`).
const SEEDS: u64 = 300;
/// How many of them also go through the `shake` binary.
const BINARY_SEEDS: u64 = 8;

/// Runs `project-all.mjs --roundtrip [--no-flat]` over `files` in one node process; one JSON
/// value per file. Without `flat`, leaves have no `messages` (only their entries' messages).
fn pi_project_all(files: &[PathBuf], flat: bool) -> Vec<Value> {
    pi_project(files, if flat { &[] } else { &["--no-flat"] })
}

/// Runs `project-all.mjs FLAGS… FILES…`; one JSON value per file.
fn pi_project(files: &[PathBuf], flags: &[&str]) -> Vec<Value> {
    Oracle::ensure();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracle/project-all.mjs");
    let mut child = Command::new("node")
        .arg(script)
        .arg("--roundtrip")
        .args(flags)
        .args(files)
        .stdout(Stdio::piped())
        .spawn()
        .expect("node");
    let stdout = child.stdout.take().expect("stdout");
    let values: Vec<Value> = std::io::BufReader::new(stdout)
        .lines()
        .map(|line| serde_json::from_str(&line.expect("oracle output")).expect("oracle JSON"))
        .collect();
    assert!(child.wait().expect("node").success(), "project-all.mjs failed");
    assert_eq!(values.len(), files.len());
    values
}

/// v1 files get random ids from pi's migration, so only entry types and messages compare.
fn comparable(p: &Value, with_ids: bool) -> Value {
    if with_ids {
        return serde_json::json!({"leafId": p["leafId"], "entries": p["entries"], "messages": p["messages"]});
    }
    let entries = p["entries"].as_array().expect("entries");
    let entries: Vec<Value> = entries.iter().map(|e| serde_json::json!([e["type"], e["messages"]])).collect();
    serde_json::json!({ "entries": entries })
}

/// The leaf and its entries, without the flattened message list.
fn leaf_entries(p: &Value) -> Value {
    serde_json::json!({"leafId": p["leafId"], "entries": p["entries"]})
}

/// Asserts two projections are equal, naming the first entry that differs (whole projections
/// of generated sessions are too long to print).
fn assert_same(ours: &Value, pi: &Value, what: &str) {
    if ours == pi {
        return;
    }
    let short = |v: &Value| {
        let s = v.to_string();
        s.chars().take(3000).collect::<String>()
    };
    let (a, b) = (ours["entries"].as_array(), pi["entries"].as_array());
    if let (Some(a), Some(b)) = (a, b) {
        if let Some(i) = (0..a.len().min(b.len())).find(|&i| a[i] != b[i]) {
            panic!("{what}: entry {i} differs\n shake: {}\n    pi: {}", short(&a[i]), short(&b[i]));
        }
    }
    panic!("{what}: projections differ\n shake: {}\n    pi: {}", short(ours), short(pi));
}

fn ids(list: &Value) -> Vec<&str> {
    list.as_array().expect("array").iter().map(|v| v.as_str().expect("id")).collect()
}

/// Every tip of every fixture, through the binary.
#[test]
fn fixtures_every_leaf_equals_pi() {
    let env = TestEnv::new();
    let names = fixtures();
    let paths: Vec<PathBuf> = names.iter().map(|n| env.fixture(n)).collect();
    for ((name, path), pi) in names.iter().zip(&paths).zip(pi_project_all(&paths, true)) {
        let path = path.to_str().unwrap();
        let v3 = !name.contains(".v1.") && !name.contains("v1-legacy");
        if !v3 {
            // Only pi's leaf on load can be named: the ids differ.
            let ours: Value = serde_json::from_str(&env.ok(&["project", path, "--json"])).unwrap();
            let last = pi["leaves"].as_array().unwrap().last().unwrap();
            assert_same(&comparable(&ours, false), &comparable(last, false), name);
            continue;
        }
        for leaf in pi["leaves"].as_array().unwrap() {
            let rev = format!("{path}:{}", leaf["leafId"].as_str().unwrap());
            let ours: Value = serde_json::from_str(&env.ok(&["project", &rev, "--json"])).unwrap();
            assert_same(&comparable(&ours, true), &comparable(leaf, true), &rev);
            let listed: Value = serde_json::from_str(&env.ok(&["ls-entries", &rev, "--context", "--json"])).unwrap();
            let listed: Vec<&str> =
                listed["entries"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap()).collect();
            assert_eq!(listed, ids(&leaf["contextEntryIds"]), "{name} leaf {}", leaf["leafId"]);
        }
        let leaves: Value = serde_json::from_str(&env.ok(&["ls-leaves", path, "--json"])).unwrap();
        assert_eq!(tip_ids(&leaves, &pi), ids(&pi["tips"]), "{name}");
    }
}

/// Our tips in file order, without pi's leaf on load when it is listed only for that reason.
fn tip_ids<'v>(ours: &'v Value, pi: &Value) -> Vec<&'v str> {
    let pi_tips = ids(&pi["tips"]);
    ours["leaves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["id"].as_str().unwrap())
        .filter(|id| pi_tips.contains(id) || *id != pi["lastEntryId"])
        .collect()
}

/// Writes generated sessions for `seeds` into `dir`.
fn generated(dir: &Path, seeds: std::ops::Range<u64>) -> Vec<PathBuf> {
    seeds
        .map(|seed| {
            let path = dir.join(format!("gen-{seed}.jsonl"));
            std::fs::write(&path, generate(&Options { seed, limit: Limit::Default, cwd: None })).unwrap();
            path
        })
        .collect()
}

/// Checks one generated file against pi's output, with the library functions the commands use.
fn check_generated(path: &Path, pi: &Value) {
    check_leaves(path, pi);
    let name = path.display();
    assert_eq!(pi["piChangedFile"], "unchanged", "{name}: pi rewrote it");
    assert_eq!(pi["notRoundTripping"], serde_json::json!([]), "{name}: lines JSON.stringify would print differently");
    let file = shake_plumbing::hosts::read(path).unwrap();
    let session = shake_plumbing::hosts::load(&file, None).unwrap();
    assert!(session.warnings.is_empty(), "{name}: {:?}", session.warnings);
    let tips: Vec<&str> = session.leaves().iter().map(|&i| session.entries[i].id()).collect();
    assert_eq!(tips, ids(&pi["tips"]), "{name}: tips");
}

/// Checks pi loaded the file and shake projects every leaf pi projected the same way.
fn check_leaves(path: &Path, pi: &Value) {
    let name = path.display();
    assert!(pi.get("error").is_none(), "{name}: pi refused it: {}", pi["error"]);
    let file = shake_plumbing::hosts::read(path).unwrap();
    let session = shake_plumbing::hosts::load(&file, None).unwrap();
    for leaf in pi["leaves"].as_array().unwrap() {
        let id = leaf["leafId"].as_str().unwrap();
        let projection = View::at(&session, session.index_of(id)).unwrap();
        assert_same(&leaf_entries(&projection.to_json()), &leaf_entries(leaf), &format!("{name} leaf {id}"));
        let context: Vec<&str> = projection.context.iter().map(|&i| session.entries[i].id()).collect();
        assert_eq!(context, ids(&leaf["contextEntryIds"]), "{name} leaf {id}: context");
        let path: Vec<&str> = projection.path.iter().map(|&i| session.entries[i].id()).collect();
        assert_eq!(path, ids(&leaf["pathIds"]), "{name} leaf {id}: path");
    }
}

/// Every tip of `SEEDS` generated sessions, two node processes at once (the machines have 2 cores).
#[test]
fn generated_sessions_every_leaf_equals_pi() {
    let env = TestEnv::new();
    let mut files = generated(env.dir.path(), 0..SEEDS);
    // One long session too (long paths, many compactions and branches, bigger outputs).
    let long = env.dir.path().join("gen-long.jsonl");
    std::fs::write(&long, generate(&Options { seed: 1, limit: Limit::Entries(2500), cwd: None })).unwrap();
    files.insert(0, long);
    let check = |half: &[PathBuf]| {
        for (path, pi) in half.iter().zip(pi_project_all(half, false)) {
            check_generated(path, &pi);
        }
    };
    let (a, b) = files.split_at(files.len() / 2);
    std::thread::scope(|s| {
        s.spawn(|| check(a));
        check(b);
    });
}

/// A sample of generated sessions through the `shake` binary: project, ls-entries, ls-leaves.
#[test]
fn generated_sessions_through_the_binary() {
    let env = TestEnv::new();
    let files = generated(env.dir.path(), 0..BINARY_SEEDS);
    for (path, pi) in files.iter().zip(pi_project_all(&files, true)) {
        let path = path.to_str().unwrap();
        for leaf in pi["leaves"].as_array().unwrap() {
            let rev = format!("{path}:{}", leaf["leafId"].as_str().unwrap());
            let ours: Value = serde_json::from_str(&env.ok(&["project", &rev, "--json"])).unwrap();
            assert_same(&comparable(&ours, true), &comparable(leaf, true), &rev);
            let listed = env.ok(&["ls-entries", &rev, "--context"]);
            let listed: Vec<&str> = listed.lines().map(|l| l.split('\t').next().unwrap()).collect();
            assert_eq!(listed, ids(&leaf["contextEntryIds"]), "{rev}");
        }
        let leaves: Value = serde_json::from_str(&env.ok(&["ls-leaves", path, "--json"])).unwrap();
        assert_eq!(tip_ids(&leaves, &pi), ids(&pi["tips"]), "{path}");
    }
}

/// Generated context edits are exactly what pi's `appendContextEdit` would write at their place.
#[test]
fn generated_edits_are_what_pi_would_append() {
    let env = TestEnv::new();
    let files = generated(env.dir.path(), 0..8);
    let mut edits = 0;
    for path in &files {
        let report = Oracle::run("append-check.mjs", &[path.to_str().unwrap(), "--no-probe"]);
        assert_eq!(report["accepted"], true, "{}", path.display());
        for edit in report["contextEdits"].as_array().unwrap() {
            edits += 1;
            assert_eq!(edit["piWouldAppend"], true, "{}: {edit}", path.display());
            assert!(edit.get("piWouldNormalizeTo").is_none(), "{}: {edit}", path.display());
        }
    }
    assert!(edits > 10, "the sample holds only {edits} edits");
}

/// Every entry as the leaf (pi's in-memory leaf after `/tree`), for the hand-made fixtures and a
/// few generated sessions (the output grows with entries × path length, so only small files).
#[test]
fn every_entry_as_leaf_equals_pi() {
    let env = TestEnv::new();
    let mut files: Vec<PathBuf> =
        fixtures().iter().filter(|n| n.starts_with("pi-v3-")).map(|n| env.fixture(n)).collect();
    files.extend(generated(env.dir.path(), 1000..1002));
    for (path, pi) in files.iter().zip(pi_project(&files, &["--no-flat", "--every-entry"])) {
        check_leaves(path, &pi);
    }
}

/// A session whose lines `JSON.parse` reads and serde_json refuses: lone surrogates (high, low,
/// and a pair split across a key and its value), numbers out of a double's range, nesting past
/// serde's 128 (up to shake's own limit, which node's `JSON.stringify` still writes).
fn odd_json_session() -> String {
    let nest = |d: usize, leaf: &str| format!("{}{leaf}{}", "[".repeat(d), "]".repeat(d));
    let objects = |d: usize| format!("{}1{}", "{\"o\":".repeat(d), "}".repeat(d));
    let head = r#"{"type":"session","version":3,"id":"odd-json","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#;
    let entry = |id: &str, parent: &str, rest: &str| {
        let parent = if parent.is_empty() { "null".to_string() } else { format!("\"{parent}\"") };
        format!(r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-01-01T00:00:01.000Z",{rest}}}"#)
    };
    let lines = [
        head.to_string(),
        entry("u1", "", r#""message":{"role":"user","content":"look \ud83d here \udc00 and \ud83d\ude00 \uD800","timestamp":1}"#),
        entry(
            "a1",
            "u1",
            &format!(
                r#""message":{{"role":"assistant","content":[{{"type":"thinking","thinking":"\ud800 think"}},{{"type":"text","text":"x\ud800y"}},{{"type":"toolCall","id":"t1","name":"read","arguments":{{"path":"f\udbff.rs","n":1e400,"deep":{}}}}}],"provider":"p","model":"m","usage":{{"input":1e400,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":5}},"stopReason":"toolUse","timestamp":2}}"#,
                nest(200, "-1e400")
            ),
        ),
        entry(
            "r1",
            "a1",
            &format!(
                r#""message":{{"role":"toolResult","toolCallId":"t1","toolName":"read","content":[{{"type":"text","text":"big\udbff","k\ud83d":"\ude00v"}}],"details":{{"n":1e400,"m":-1e400,"small":1e-400,"deep":{},"objects":{}}},"isError":false,"timestamp":3}}"#,
                nest(300, "\"\\udfff\""),
                objects(200)
            ),
        ),
        r#"{"type":"custom_message","id":"c1","parentId":"r1","timestamp":"2026-01-01T00:00:02.000Z","customType":"n\ud800","content":"c\udfff","display":true,"details":{"x\udc00":1e999}}"#.to_string(),
        entry("u2", "c1", r#""\ud800top":true,"message":{"role":"user","\udc00":1,"content":[{"type":"text","text":"hi \ud83d"}],"timestamp":4}"#),
        entry(
            "u3",
            "u2",
            &format!(r#""message":{{"role":"user","content":"at the limit","details":{},"timestamp":5}}"#, nest(999, "0")),
        ),
    ];
    lines.join("\n") + "\n"
}

/// `shake project --json` is byte for byte pi's `JSON.stringify` of its projection, and
/// `count-tokens --tokenizer pi` pi's `estimateTokens`, at every tip of `path`.
fn assert_text_equals_pi(env: &TestEnv, path: &str) {
    let pi = Oracle::run("project-text.mjs", &[path]);
    let leaves = pi.as_array().expect("leaves");
    assert!(!leaves.is_empty(), "{path}: pi projected nothing");
    for leaf in leaves {
        let rev = format!("{path}:{}", leaf["leafId"].as_str().unwrap());
        let out = env.run(&["project", &rev, "--json"]);
        assert!(out.status.success(), "{rev}: {}", String::from_utf8_lossy(&out.stderr));
        let ours = String::from_utf8(out.stdout).unwrap();
        let theirs = leaf["text"].as_str().unwrap();
        if ours.trim_end() != theirs {
            let at = ours.bytes().zip(theirs.bytes()).position(|(a, b)| a != b).unwrap_or(0);
            let from = at.saturating_sub(120);
            panic!(
                "{rev}: projection differs at byte {at}\n shake: {}\n    pi: {}",
                ours.get(from..(at + 120).min(ours.len())).unwrap_or("?"),
                theirs.get(from..(at + 120).min(theirs.len())).unwrap_or("?")
            );
        }
        let tokens: Value =
            serde_json::from_str(&env.ok(&["count-tokens", &rev, "--tokenizer", "pi", "--json"])).unwrap();
        assert_eq!(tokens["perEntry"], leaf["perEntry"], "{rev}: estimate");
    }
}

/// Lone surrogates, `1e400` and deep nesting are read as pi reads them, without a warning.
#[test]
fn lines_only_javascript_reads_exactly_project_and_count_as_pi() {
    let env = TestEnv::new();
    let path = env.write("odd.jsonl", odd_json_session());
    let path = path.to_str().unwrap();
    assert_text_equals_pi(&env, path);
    let out = env.run(&["project", path, "--json"]);
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "no warning");
}

/// Nesting beyond shake's limit is named by file and line, not projected as silently empty.
#[test]
fn nesting_beyond_the_limit_is_a_warning_naming_the_line() {
    let env = TestEnv::new();
    let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    let text = odd_json_session()
        + &format!(
            r#"{{"type":"message","id":"u4","parentId":"u3","timestamp":"t","message":{{"role":"user","content":"x","d":{deep}}}}}"#
        )
        + "\n";
    let path = env.write("deep.jsonl", text);
    let out = env.run(&["project", path.to_str().unwrap(), "--json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("deep.jsonl:8: JSON nested deeper than 1000 levels"), "{stderr}");
    assert_eq!(stderr.matches("nested deeper").count(), 1, "{stderr}");
}

/// A session whose text is full of lone surrogates (one in about every seventh space): a fold
/// keeps them where it keeps text, and fold + undo gives back the projection byte for byte.
#[test]
fn fold_and_undo_keep_lone_surrogates_byte_for_byte() {
    let env = TestEnv::new();
    let mut n = 0;
    // Compact JSON has spaces only inside strings.
    let text: String = crate::synthetic::rich()
        .text
        .chars()
        .map(|c| match c {
            ' ' => {
                n += 1;
                match n % 21 {
                    0 => " \\ud83d".to_string(),
                    7 => "\\udc00 ".to_string(),
                    14 => "\\ud800\\ud800 ".to_string(),
                    _ => " ".to_string(),
                }
            }
            c => c.to_string(),
        })
        .collect();
    let path = env.write("lone.jsonl", &text);
    let path = path.to_str().unwrap();
    assert_text_equals_pi(&env, path);
    // What the model sees: the top-level `messages` (the leaf and its entry list change with
    // every append). A `],"messages":[` outside strings is the entry list's end.
    let messages = || {
        let text = env.ok(&["project", path, "--json"]);
        text[text.rfind("],\"messages\":[").expect("messages")..].to_string()
    };
    let before = messages();
    let fold: Value = serde_json::from_str(&env.ok(&["fold", path, "--json"])).unwrap();
    assert!(fold["appended"].as_array().is_some_and(|a| !a.is_empty()), "{fold}");
    assert_text_equals_pi(&env, path);
    let folded = messages();
    assert_ne!(folded, before);
    assert!(folded.matches("\\ud83d").count() > 10, "the text a fold keeps keeps its surrogates");
    env.ok(&["undo", path]);
    assert_text_equals_pi(&env, path);
    assert_eq!(messages(), before, "fold + undo gives back every byte");
}

/// A raw control character inside a top-level key (one flipped bit: `I` 0x49 → TAB 0x09) is not
/// JSON: pi's `JSON.parse` refuses the line and pi skips it. shake skips it too, so a fold never
/// chains on an entry pi does not have (pi would then resume a branch with no messages).
#[test]
fn a_control_character_in_a_key_makes_the_line_skipped_as_pi_skips_it() {
    let env = TestEnv::new();
    let base = crate::append::small();
    let last = crate::append::resumed_branch(base.as_bytes())[0].clone();
    let flipped = |key: &str, id: &str| {
        format!(
            r#"{{"type":"message","id":"{id}","{key}":"{last}","timestamp":"2026-01-01T00:00:09.000Z","message":{{"role":"user","content":"flipped","timestamp":9}}}}"#
        ) + "\n"
    };
    for (name, key) in [("tab", "parent\tId"), ("soh", "parentI\u{1}"), ("nul", "\u{0}")] {
        let text = base.clone() + &flipped(key, &format!("{name}0001"));
        let path = env.write(&format!("{name}.jsonl"), &text);
        let file = path.to_str().unwrap();
        let pi = &Oracle::run("load-many.mjs", &[file])[0];
        let ours: Value = serde_json::from_str(&env.ok(&["project", file, "--json"])).unwrap();
        assert_eq!(ours["leafId"], pi["leafId"], "{name}: shake resumes where pi does\n{pi}");
        assert_eq!(ours["messages"].as_array().unwrap().len() as u64, pi["messages"].as_u64().unwrap(), "{name}");
        env.ok(&["fold", file, "--profile", "aggressive"]);
        let after = &Oracle::run("load-many.mjs", &[file])[0];
        assert_eq!(after["messages"], pi["messages"], "{name}: pi resumes every message after the fold\n{after}");
    }
}

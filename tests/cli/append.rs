//! Safe writing: a batch cut at every byte leaves a file pi loads, `shake status` reports the
//! half-written batch, and the next fold repairs it to exactly the wall a whole fold gives.
//! Also the refusals: v1 files, foreign partial last lines.

use serde_json::Value;

use crate::env::{Oracle, TestEnv};
use crate::synthetic::{filler, text, Builder};

/// A small session whose fold writes a short batch (two tool results).
fn small() -> String {
    let mut b = Builder::new();
    b.user(serde_json::json!("go"));
    b.tool("bash", serde_json::json!({"command": "make"}), serde_json::json!([text(&filler("make", 300))]));
    b.tool("grep", serde_json::json!({"pattern": "x"}), serde_json::json!([text(&filler("grep", 300))]));
    b.user(serde_json::json!(filler("tail", 9000)));
    b.text()
}

fn status(env: &TestEnv, path: &str) -> Value {
    serde_json::from_str(&env.ok(&["status", path, "--json"])).unwrap()
}

fn wall_ids(s: &Value) -> Vec<(String, String)> {
    s["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["id"].as_str().unwrap().to_string(), t["kind"].as_str().unwrap().to_string()))
        .collect()
}

/// Runs `op` on a copy of `before`, then cuts its batch at every byte: pi loads each cut,
/// `shake status` reports the half-written batch, and running `op` again repairs it to the wall
/// the whole batch gave (pi then projects the same context). Returns that wall.
fn cut_everywhere(env: &TestEnv, name: &str, before: &[u8], op: &[&str]) -> Vec<(String, String)> {
    let full = env.write(&format!("{name}.jsonl"), before);
    let full_s = full.to_str().unwrap();
    env.ok(&[op, &[full_s]].concat());
    let after = std::fs::read(&full).unwrap();
    let batch = &after[before.len()..];
    let intended = wall_ids(&status(env, full_s));
    let cuts = env.dir.path().join(format!("cuts-{name}"));
    std::fs::create_dir_all(&cuts).unwrap();
    let mut files = Vec::new();
    for k in 0..=batch.len() {
        let path = cuts.join(format!("cut-{k:05}.jsonl"));
        std::fs::write(&path, [before, &batch[..k]].concat()).unwrap();
        files.push(path.to_str().unwrap().to_string());
    }
    // pi loads every cut.
    let args: Vec<&str> = files.iter().map(String::as_str).collect();
    for r in Oracle::run("load-many.mjs", &args).as_array().unwrap() {
        assert_eq!(r["accepted"], true, "{r}");
    }
    let first_line = batch.iter().position(|b| *b == b'\n').unwrap() + 1;
    for (k, path) in files.iter().enumerate() {
        let s = status(env, path);
        let torn = s["tornLastLine"] == true || !s["halfWritten"].as_array().unwrap().is_empty();
        let whole = k == 0 || k == batch.len();
        assert_eq!(torn, !whole, "{name}: cut at byte {k}: {s}");
        if k >= first_line && k < batch.len() - 1 {
            assert_eq!(
                s["halfWritten"].as_array().unwrap().len(),
                1,
                "{name}: cut at byte {k} after the log entry: {s}"
            );
        }
        if whole {
            continue;
        }
        let out = env.ok(&[op, &[path.as_str()]].concat());
        assert!(out.contains("Repaired a half-written shake batch"), "{name}: cut at byte {k}: {out}");
        let repaired = status(env, path);
        assert_eq!(wall_ids(&repaired), intended, "{name}: cut at byte {k}");
        assert_eq!(repaired["tornLastLine"], false);
        assert!(repaired["halfWritten"].as_array().unwrap().is_empty(), "{name}: cut at byte {k}: {repaired}");
    }
    // pi loads every repaired file too, with the same context as after the whole batch.
    let whole = &Oracle::run("load-many.mjs", &[full_s])[0];
    for r in Oracle::run("load-many.mjs", &args[1..args.len() - 1]).as_array().unwrap() {
        assert_eq!(r["accepted"], true, "{r}");
        assert_eq!(r["messages"], whole["messages"], "{r}");
    }
    intended
}

#[test]
fn a_fold_batch_cut_at_every_byte_loads_in_pi_and_is_repaired() {
    let env = TestEnv::new();
    let wall = cut_everywhere(&env, "fold", small().as_bytes(), &["fold", "--profile", "aggressive"]);
    assert_eq!(wall.len(), 2);
}

#[test]
fn an_undo_batch_cut_at_every_byte_loads_in_pi_and_is_repaired() {
    let env = TestEnv::new();
    let path = env.write("folded.jsonl", small());
    env.ok(&["fold", path.to_str().unwrap(), "--profile", "aggressive"]);
    let folded = std::fs::read(&path).unwrap();
    assert!(cut_everywhere(&env, "undo", &folded, &["undo"]).is_empty());
}

#[test]
fn refuses_v1_files_and_foreign_partial_lines() {
    let env = TestEnv::new();
    let v1 = env.fixture("pi-v1-legacy.jsonl");
    let err = env.fails(&["fold", v1.to_str().unwrap()], 1);
    assert!(err.contains("version 1 session") && err.contains("open the session in pi once"), "{err}");
    let mut text = small();
    text.push_str(r#"{"type":"message","id":"half"#);
    let path = env.write("partial.jsonl", &text);
    let err = env.fails(&["undo", path.to_str().unwrap()], 1);
    assert!(err.contains("last line is incomplete"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}

#[test]
fn warns_when_the_file_was_just_written() {
    let env = TestEnv::new();
    let path = env.write("live.jsonl", small());
    let out = env.cmd().args(["fold", path.to_str().unwrap(), "--profile", "aggressive"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    // "0s ago", or more on a loaded machine: the seconds are not the point.
    let (_, after) = err.split_once(" was written ").unwrap_or_else(|| panic!("{err}"));
    let (secs, rest) = after.split_once("s ago; ").unwrap_or_else(|| panic!("{err}"));
    assert!(secs.parse::<u64>().is_ok_and(|s| s < 30), "{err}");
    assert!(rest.starts_with("if pi has this session open, quit pi"), "{err}");
}

/// The entry ids on the branch pi resumes: from the file's last entry back along `parentId`.
fn resumed_branch(bytes: &[u8]) -> Vec<String> {
    let entries: Vec<Value> = bytes
        .split(|b| *b == b'\n')
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .filter(|v| v["type"] != "session")
        .collect();
    let parent: std::collections::HashMap<&str, Option<&str>> =
        entries.iter().map(|e| (e["id"].as_str().unwrap(), e["parentId"].as_str())).collect();
    let mut branch = Vec::new();
    let mut at = entries.last().and_then(|e| e["id"].as_str());
    while let Some(id) = at {
        branch.push(id.to_string());
        at = parent[id];
    }
    branch
}

/// Appends entries the way pi's session manager does (one `appendFileSync` per entry, no lock,
/// each chained from the previous) as soon as shake holds the file's lock, i.e. between shake's
/// "file unchanged" check and its write (widened by the fault-injection delay).
fn pi_writer(
    path: std::path::PathBuf,
    leaf: String,
    prefix: &'static str,
    n: usize,
) -> std::thread::JoinHandle<Vec<String>> {
    std::thread::spawn(move || {
        use std::io::Write;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let f = std::fs::File::open(&path).unwrap();
            if matches!(f.try_lock(), Err(std::fs::TryLockError::WouldBlock)) {
                break;
            }
            drop(f);
            assert!(std::time::Instant::now() < deadline, "shake never took the lock");
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        let mut parent = leaf;
        let mut ids = Vec::new();
        for i in 0..n {
            let id = format!("{prefix}{i:06}");
            let line = serde_json::json!({"type": "message", "id": id, "parentId": parent,
                "timestamp": "2026-11-21T10:00:00.000Z",
                "message": {"role": "user", "content": format!("typed while shake wrote {i}"), "timestamp": 1795255200000u64}});
            let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
            f.write_all(format!("{line}\n").as_bytes()).unwrap();
            parent = id.clone();
            ids.push(id);
        }
        ids
    })
}

#[test]
fn a_pi_append_racing_the_write_stays_on_the_branch() {
    let env = TestEnv::new();
    let path = env.write("race.jsonl", small());
    let file = path.to_str().unwrap();
    for (op, folded, prefix) in
        [(&["fold", file, "--profile=aggressive"][..], 2, "pia"), (&["undo", file][..], 0, "pib")]
    {
        let before = std::fs::read(&path).unwrap();
        let before_branch = resumed_branch(&before);
        let writer = pi_writer(path.clone(), before_branch[0].clone(), prefix, 3);
        let out = env.cmd().env(shake_plumbing::append::DELAY_ENV, "300").args(op).output().unwrap();
        let pi_ids = writer.join().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{op:?}: {err}");
        let after = std::fs::read(&path).unwrap();
        let branch = resumed_branch(&after);
        for id in &pi_ids {
            assert!(branch.contains(id), "{op:?}: pi's {id} is not on the resumed branch {branch:?}");
        }
        // The branch: shake's batch, then pi's entries, then what was there; pi agrees.
        let k = branch.iter().position(|id| *id == pi_ids[2]).unwrap();
        let mut pi_then_before: Vec<String> = pi_ids.iter().rev().cloned().collect();
        pi_then_before.extend(before_branch);
        assert!(k > 0 && branch[k..] == pi_then_before[..], "{op:?}: {branch:?}");
        assert!(err.contains("pi appended entries while shake was writing"), "{op:?}: {err}");
        let s = status(&env, file);
        assert_eq!(wall_ids(&s).len(), folded, "{op:?}: {s}");
        let pi = &Oracle::run("load-many.mjs", &[file])[0];
        assert_eq!(pi["leafId"].as_str(), Some(branch[0].as_str()), "{pi}");
    }
}

//! `shake drop`: a fork shake wrote goes away (a host that forks, Claude Code, lists every file
//! in its project folder), only one shake wrote, only when nothing was added to it since unless
//! `--force`, and never lost: its bytes stay in the store for `shake restore`.

use std::path::PathBuf;

use serde_json::Value;

use crate::claude_host::{install_bytes, transcript};
use crate::env::TestEnv;

fn json(env: &TestEnv, args: &[&str]) -> Value {
    serde_json::from_str(&env.ok(args)).unwrap()
}

const SOURCE: &str = "11111111-2222-4333-8444-999999999999";

/// A transcript folded, then the fork undone: the source, the fork and the undone session.
fn fold_then_undo(env: &TestEnv) -> (PathBuf, PathBuf, PathBuf) {
    let path = install_bytes(env, SOURCE, transcript(SOURCE, &[30_000, 30_000, 500], None).as_bytes());
    crate::env::settled(&path);
    let fold = json(env, &["fold", "--json", path.to_str().unwrap()]);
    let fork = PathBuf::from(fold["fork"]["path"].as_str().unwrap());
    let undo = json(env, &["undo", "--json", fork.to_str().unwrap()]);
    let undone = PathBuf::from(undo["session"]["path"].as_str().unwrap());
    (path, fork, undone)
}

#[test]
fn a_fork_shake_wrote_is_dropped_and_its_bytes_stay_in_the_store() {
    let env = TestEnv::new();
    let (source, fork, undone) = fold_then_undo(&env);
    let (f, u) = (fork.to_str().unwrap(), undone.to_str().unwrap());
    let fork_bytes = std::fs::read(&fork).unwrap();
    // A dry run says what the real run does and changes nothing.
    let dry = env.ok(&["drop", "--dry-run", f]);
    assert!(dry.starts_with("[dry-run] ") && dry.contains("would drop"), "{dry}");
    assert!(fork.is_file());
    let out = json(&env, &["drop", "--json", f]);
    assert_eq!(out["dropped"], f);
    assert_eq!(out["op"], "fold");
    assert_eq!(out["source"], source.to_str().unwrap());
    assert!(!fork.exists(), "the fork is gone");
    // The undone session is a fork too (of the fork); the source is not one shake wrote.
    let text = env.ok(&["drop", u]);
    assert!(text.contains("Dropped ") && text.contains("shake restore"), "{text}");
    assert!(!undone.exists());
    let err = env.fails(&["drop", source.to_str().unwrap()], 1);
    assert!(err.contains("not a session shake wrote"), "{err}");
    assert!(source.is_file(), "the source stays");
    // Nothing is lost: the fork's bytes come back from the store.
    let sid = fork.file_stem().unwrap().to_str().unwrap();
    let back = env.dir.path().join("back.jsonl");
    env.ok(&["restore", sid, "-o", back.to_str().unwrap()]);
    assert_eq!(std::fs::read(&back).unwrap(), fork_bytes);
}

#[test]
fn a_fork_written_to_since_is_dropped_only_with_force() {
    let env = TestEnv::new();
    let (_, fork, _) = fold_then_undo(&env);
    let f = fork.to_str().unwrap();
    let sid = fork.file_stem().unwrap().to_str().unwrap().to_string();
    // Claude Code resumed the fork and wrote a turn.
    let turn = format!(
        "{{\"parentUuid\":\"z\",\"isSidechain\":false,\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":\"more\"}},\"uuid\":\"y\",\"timestamp\":\"2026-01-01T00:01:00.000Z\",\"sessionId\":\"{sid}\",\"cwd\":\"/w\"}}\n"
    );
    let mut bytes = std::fs::read(&fork).unwrap();
    bytes.extend_from_slice(turn.as_bytes());
    std::fs::write(&fork, &bytes).unwrap();
    for args in [&["drop", f][..], &["drop", "--dry-run", f]] {
        let err = env.fails(args, 1);
        assert!(err.contains("changed since shake wrote it") && err.contains("--force"), "{err}");
    }
    assert!(fork.is_file());
    env.ok(&["drop", "--force", f]);
    assert!(!fork.exists());
    let back = env.dir.path().join("back.jsonl");
    env.ok(&["restore", &sid, "-o", back.to_str().unwrap()]);
    assert_eq!(std::fs::read(&back).unwrap(), bytes, "the latest version, turn included");
}

#[test]
fn a_session_of_a_host_that_appends_is_never_dropped() {
    let env = TestEnv::new();
    let path = env.fixture("pi-v3-edge-edits.jsonl");
    let err = env.fails(&["drop", path.to_str().unwrap()], 1);
    assert!(err.contains("not a session shake wrote"), "{err}");
    assert!(path.is_file());
}

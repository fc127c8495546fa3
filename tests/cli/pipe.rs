//! Exit codes that carry an answer (`diff`, `audit`, `fsck`) stay true when the reader closes
//! the pipe early (`shake diff A B | head -1`): a closed pipe never turns "differs" into 0.

use std::io::Read;
use std::process::Stdio;

use crate::env::TestEnv;

/// How often each reader runs: the old bug showed on some runs only, as the close raced the write.
const RUNS: usize = 15;

/// Runs `shake ARGS…` with readers that close the pipe at once, after one byte, and after one
/// line; asserts every run exits `code`.
fn exits_through_a_closed_pipe(env: &TestEnv, args: &[&str], code: i32) {
    let full = env.run(args);
    assert_eq!(full.status.code(), Some(code), "shake {args:?} unpiped: {}", String::from_utf8_lossy(&full.stderr));
    assert!(!full.stdout.is_empty(), "shake {args:?} prints something to cut short");
    for keep in [0usize, 1, 2] {
        for run in 0..RUNS {
            let mut child = env.cmd().args(args).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
            let mut stdout = child.stdout.take().unwrap();
            match keep {
                0 => {}
                1 => stdout.read_exact(&mut [0u8; 1]).unwrap(),
                _ => {
                    let mut byte = [0u8; 1];
                    while stdout.read(&mut byte).unwrap() == 1 && byte[0] != b'\n' {}
                }
            }
            drop(stdout);
            let status = child.wait().unwrap();
            assert_eq!(status.code(), Some(code), "shake {args:?}, reader keeping {keep} (run {run})");
        }
    }
}

#[test]
fn diff_audit_and_fsck_answer_through_a_closed_pipe() {
    let env = TestEnv::new();
    let path = env.fixture("pi-v3-branch-compaction-edit.jsonl");
    let p = path.to_str().unwrap();
    let (a, b) = (format!("{p}:5f607182"), format!("{p}:2d3e4f50"));
    exits_through_a_closed_pipe(&env, &["diff", &a, &b], 1);
    exits_through_a_closed_pipe(&env, &["diff", &a, &b, "--json"], 1);
    exits_through_a_closed_pipe(&env, &["diff", &a, &a], 0);

    // A fork whose copy of the fold's log entry differs: the fold is "changed", a difference.
    let source = env.dir.path().join("source.jsonl");
    let s = source.to_str().unwrap();
    env.ok(&["generate-session", "--seed", "3", "-o", s]);
    env.ok(&["fold", s, "--tokenizer", "o200k"]);
    let text = std::fs::read_to_string(&source).unwrap();
    let changed = text.replacen("\"tokenizer\":\"o200k\"", "\"tokenizer\":\"pi\"", 1);
    assert_ne!(changed, text);
    let fork = env.write("fork.jsonl", changed);
    exits_through_a_closed_pipe(&env, &["audit", "fork", s, fork.to_str().unwrap()], 1);

    // A flipped byte in the store's only pack: fsck reports corruption, exit 3.
    env.ok(&["import", p]);
    let packs = env.store().join("packs");
    let pack = crate::env::first_pack(&packs);
    let mut bytes = std::fs::read(&pack).unwrap();
    let at = bytes.windows(6).position(|w| w == b"\"type\"").unwrap();
    bytes[at + 2] ^= 0x20;
    std::fs::write(&pack, &bytes).unwrap();
    exits_through_a_closed_pipe(&env, &["fsck"], 3);
}

/// clap_complete writes its script straight into the writer and panics when a write fails: a
/// reader that closes early (`shake completions bash | head`) or a full disk made shake exit 101.
/// The script is rendered into memory first, so a closed pipe is exit 0 and `/dev/full` a clear
/// error (exit 4, the system's).
#[test]
fn completions_through_a_closed_pipe_and_into_a_full_disk() {
    let env = TestEnv::new();
    exits_through_a_closed_pipe(&env, &["completions", "bash"], 0);
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let out = env.cmd().args(["completions", "zsh"]).stdout(full).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "into /dev/full: {stderr}");
    assert!(stderr.contains("cannot write to standard output: No space left on device"), "{stderr}");
}

/// `shake grep` found something when the reader closes the pipe: exit 0, as grep's, not an error.
#[test]
fn grep_answers_found_through_a_closed_pipe() {
    let env = TestEnv::new();
    let path = env.fixture("pi-v3-branch-compaction-edit.jsonl");
    env.ok(&["import", path.to_str().unwrap()]);
    exits_through_a_closed_pipe(&env, &["grep", "."], 0);
    exits_through_a_closed_pipe(&env, &["grep", "--json", "."], 0);
}

/// A fold whose report cannot be printed (stdout on a full disk) has still written its session:
/// the store keeps what was written, on every host, as it keeps a fold that printed (the
/// batch's errors and the command's result are apart: `batch::write_then_store`).
#[test]
fn a_fold_whose_report_fails_is_stored_all_the_same() {
    let env = TestEnv::new();
    let sessions = |env: &TestEnv| -> Vec<String> {
        let listed: serde_json::Value = serde_json::from_str(&env.ok(&["sessions", "--json"])).unwrap();
        listed.as_array().unwrap().iter().map(|s| s["path"].as_str().unwrap().to_string()).collect()
    };
    let full = || std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();

    // Claude Code: the fork is a new session file, stored as the fold writes it.
    let source = crate::claude_host::install_bytes(
        &env,
        "11111111-2222-4333-8444-999999999999",
        crate::claude_host::transcript("11111111-2222-4333-8444-999999999999", &[30_000, 30_000, 10], None).as_bytes(),
    );
    let s = source.to_str().unwrap();
    let out = env.cmd().args(["fold", s]).stdout(full()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "into /dev/full: {stderr}");
    assert!(stderr.contains("No space left on device"), "{stderr}");
    let dir = source.parent().unwrap();
    let forks: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl") && p != &source)
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    assert_eq!(forks.len(), 1, "one fork written: {forks:?}");
    assert!(sessions(&env).contains(&forks[0]), "the fork is stored: {:?}", sessions(&env));

    // pi: the batch appended is stored as the file's newest version.
    let pi = env.dir.path().join("pi.jsonl");
    let p = pi.to_str().unwrap();
    env.ok(&["generate-session", "--seed", "3", "-o", p]);
    let out = env.cmd().args(["fold", p, "--force"]).stdout(full()).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", String::from_utf8_lossy(&out.stderr));
    let stored: serde_json::Value = serde_json::from_str(&env.ok(&["sessions", "--json"])).unwrap();
    let row = stored.as_array().unwrap().iter().find(|s| s["path"] == p).expect("the pi session is stored");
    assert_eq!(
        row["bytes"].as_u64(),
        Some(std::fs::metadata(&pi).unwrap().len()),
        "the folded file is the stored version"
    );
}

//! `shake fold --in-place --force` and `shake undo --in-place --force` on Claude Code
//! transcripts: without `--force` nothing is written and the refusal says why; the fold rewrites
//! the transcript itself (same session id, placeholders at the targets, every other byte kept,
//! originals saved first); rows Claude Code appends while shake writes survive (a hook between
//! the read and the rename, in-process); a half-written row stops the write; the undo gives the
//! bytes the fold read back exactly, with the turns made since, or refuses when it could not.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use serde_json::Value;
use shake_plumbing::claude::fork::{fold_in_place, result_texts};
use shake_plumbing::claude::in_place::{Stage, RENAME_DELAY_ENV};
use shake_plumbing::claude::write::placeholder;
use shake_plumbing::claude::Transcript;

use crate::claude_host::{install, install_bytes, transcript};
use crate::env::TestEnv;

fn json(env: &TestEnv, args: &[&str]) -> Value {
    serde_json::from_str(&env.ok(args)).unwrap()
}

/// A turn Claude Code would write next: a user row under `parent`.
fn turn(sid: &str, parent: &str, uuid: &str) -> String {
    format!(
        "{{\"parentUuid\":\"{parent}\",\"isSidechain\":false,\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":\"more\"}},\"uuid\":\"{uuid}\",\"timestamp\":\"2026-01-01T00:01:00.000Z\",\"sessionId\":\"{sid}\",\"cwd\":\"/w\"}}\n"
    )
}

/// A sandbox with a transcript of session `sid` (three results: two big, one small) installed
/// where Claude Code keeps it: the sandbox, the transcript's path and its text.
pub fn sandbox(sid: &str) -> (TestEnv, std::path::PathBuf, String) {
    let env = TestEnv::new();
    let text = transcript(sid, &[30_000, 30_000, 500], None);
    let path = install_bytes(&env, sid, text.as_bytes());
    (env, path, text)
}

/// Runs `then` when a rewrite reaches stage `at`.
fn on(stage: Stage, at: Stage, then: impl FnOnce()) {
    if stage == at {
        then()
    }
}

fn append(path: &Path, text: &str) {
    std::fs::OpenOptions::new().append(true).open(path).unwrap().write_all(text.as_bytes()).unwrap();
}

/// The file names in `path`'s folder (the temporary file must never stay behind).
fn neighbours(path: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The source's bytes with each target's `content` replaced by `placeholder(text, saved)`.
fn with_placeholders(source: &[u8], texts: &HashMap<String, String>, saved: &[(String, String)]) -> String {
    let mut want = String::from_utf8(source.to_vec()).unwrap();
    for (id, at) in saved {
        let text = &texts[id];
        let now = placeholder(text, Path::new(at));
        want = want.replacen(&serde_json::to_string(text).unwrap(), &serde_json::to_string(&now).unwrap(), 1);
    }
    want
}

#[test]
fn fold_in_place_needs_force_and_undo_in_place_gives_the_bytes_back() {
    let env = TestEnv::new();
    let path = install(&env, &crate::env::fixture_path("claude/bash-read"));
    let f = path.to_str().unwrap();
    let source = std::fs::read(&path).unwrap();
    let sid = Transcript::read(&path).unwrap().session_id().unwrap().to_string();
    let texts = result_texts(&Transcript::read(&path).unwrap());
    let files = neighbours(&path);

    // Without --force: refused, saying why, and nothing written (no saved originals either).
    let err = env.fails(&["fold", "--in-place", f], 1);
    assert!(err.contains("nobody can tell from outside whether a running Claude Code has it open"), "{err}");
    assert!(err.contains("--force"), "{err}");
    assert_eq!((std::fs::read(&path).unwrap(), neighbours(&path)), (source.clone(), files.clone()));
    let dry = env.ok(&["fold", "--in-place", "--dry-run", f]);
    assert!(dry.contains("rewrites this transcript in place"), "{dry}");
    // On a pi session --in-place means nothing: refused.
    let err = env.fails(&["fold", "--example", "--in-place", "--force"], 1);
    assert!(err.contains("--in-place is for the sessions a fold writes anew (Claude Code)"), "{err}");

    let meter = json(&env, &["meter", "--json", f]);
    let fold = json(&env, &["fold", "--json", "--in-place", "--force", f]);
    assert_eq!(fold["fork"]["inPlace"], true);
    assert_eq!(fold["fork"]["sessionId"], sid.as_str());
    assert_eq!(fold["fork"]["path"], f);
    assert_eq!(fold["tokensFreed"], meter["tokens"]);
    let saved: Vec<(String, String)> = fold["fork"]["saved"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["id"].as_str().unwrap().to_string(), s["path"].as_str().unwrap().to_string()))
        .collect();
    assert!(!saved.is_empty(), "{fold}");
    for (id, at) in &saved {
        assert_eq!(&std::fs::read_to_string(at).unwrap(), &texts[id], "{id}: the saved original");
    }
    // The transcript: its own bytes, its own session id, placeholders at the targets only.
    let folded = std::fs::read_to_string(&path).unwrap();
    assert_eq!(folded, with_placeholders(&source, &texts, &saved));
    let status = json(&env, &["status", "--json", f]);
    assert_eq!(status["tokensFreed"], fold["tokensFreed"]);
    assert!(neighbours(&path).iter().all(|n| !n.ends_with(".tmp")), "{:?}", neighbours(&path));

    // Claude Code goes on in the file; the in-place undo gives the fold's source back, and the turn.
    let leaf = Transcript::read(&path).unwrap().rows.iter().rev().find_map(|r| r.uuid().map(str::to_string)).unwrap();
    let later = turn(&sid, &leaf, "99999999-0000-4000-8000-000000000001");
    append(&path, &later);
    assert!(env.fails(&["undo", "--in-place", f], 1).contains("--force"));
    let undo = json(&env, &["undo", "--json", "--in-place", "--force", f]);
    assert_eq!(undo["session"]["inPlace"], true);
    assert_eq!(undo["tokensRestored"], fold["tokensFreed"]);
    let mut want = source.clone();
    want.extend_from_slice(later.as_bytes());
    assert_eq!(std::fs::read(&path).unwrap(), want, "the source's bytes and the turn made since");
    assert!(env.ok(&["undo", "--in-place", "--force", f]).contains("Nothing to undo"));
    assert_eq!(std::fs::read(&path).unwrap(), want);
    let log = env.ok(&["log", f]);
    assert!(log.contains("undo: restored") && log.contains("fold elide/"), "{log}");
}

#[test]
fn rows_claude_code_appends_while_shake_folds_in_place_survive() {
    let sid = "11111111-2222-4333-8444-999999999999";
    let (env, path, _) = sandbox(sid);
    let source = std::fs::read(&path).unwrap();
    let t = Transcript::read(&path).unwrap();
    let texts = result_texts(&t);
    let targets = vec!["toolu_0".to_string(), "toolu_1".to_string()];
    let rows = turn(sid, "z", "y1") + &turn(sid, "y1", "y2");
    let forked =
        fold_in_place(&t, &path, (&targets, &[]), placeholder, |s| on(s, Stage::Written, || append(&path, &rows)))
            .unwrap();
    assert_eq!((forked.session_id.as_str(), forked.carried), (sid, rows.len() as u64));
    let saved: Vec<(String, String)> =
        forked.folded.iter().map(|(id, p)| (id.clone(), p.to_string_lossy().into_owned())).collect();
    assert_eq!(saved.len(), 2);
    let want = with_placeholders(&source, &texts, &saved) + &rows;
    assert_eq!(std::fs::read_to_string(&path).unwrap(), want, "the fold, then the rows written meanwhile");
    // Claude Code loads it with the appended turn as its leaf, and the placeholders in the chain.
    let projected: Value = serde_json::from_str(&env.ok(&["project", "--json", path.to_str().unwrap()])).unwrap();
    assert_eq!(projected["leafId"], "y2");
    let sent = projected["messages"].to_string();
    assert_eq!(sent.matches("<persisted-output>").count(), 2, "{sent:.300}");
    assert_eq!(neighbours(&path), [sid.to_string(), format!("{sid}.jsonl")]);

    // A row half written when shake is done: refused, the transcript as Claude Code left it.
    let before = std::fs::read(&path).unwrap();
    let t = Transcript::read(&path).unwrap();
    let half = "{\"parentUuid\":\"y2\",\"type\":\"user\",\"mess";
    let hook = |s| on(s, Stage::Written, || append(&path, half));
    let e = fold_in_place(&t, &path, (&["toolu_2".to_string()], &[]), placeholder, hook).unwrap_err();
    assert!(e.to_string().contains("midway through writing a row"), "{e}");
    let mut left = before.clone();
    left.extend_from_slice(half.as_bytes());
    assert_eq!(std::fs::read(&path).unwrap(), left);
    assert_eq!(neighbours(&path), [sid.to_string(), format!("{sid}.jsonl")], "no temporary file left");
}

#[test]
fn undo_in_place_refuses_when_the_originals_would_not_give_the_bytes_back() {
    let env = TestEnv::new();
    let sid = "11111111-2222-4333-8444-aaaaaaaaaaaa";
    // A result written with an escape JSON.stringify never writes: the text is the same, the
    // bytes an undo would write are not.
    let text = transcript(sid, &[30_000, 30_000, 500], None).replacen(
        "\"content\":\"line 0 ",
        "\"content\":\"\\u006cine 0 ",
        1,
    );
    let path = install_bytes(&env, sid, text.as_bytes());
    let f = path.to_str().unwrap();
    json(&env, &["fold", "--json", "--in-place", "--force", f]);
    let folded = std::fs::read(&path).unwrap();
    let err = env.fails(&["undo", "--in-place", "--force", f], 1);
    assert!(err.contains("would not give the bytes the fold read"), "{err}");
    assert!(err.contains("shake restore --version"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), folded, "nothing was written");
    // The version imported before the fold is the source, byte for byte.
    let restored = env.ok(&["restore", "--version", "1", "-o", "-", f]);
    assert_eq!(restored.as_bytes(), text.as_bytes());
}

/// Finding 28.4: a Claude Code flush opened the transcript before shake's rename and wrote
/// after it. A process that holds the file open when shake is about to rename refuses the
/// write (naming it), so the row it writes through its descriptor lands in the transcript.
#[test]
fn a_writer_holding_the_transcript_open_refuses_the_in_place_fold() {
    let sid = "11111111-2222-4333-8444-bbbbbbbbbbbb";
    let (env, path, _) = sandbox(sid);
    let f = path.to_str().unwrap();
    let source = std::fs::read(&path).unwrap();
    // Opened for appending, as Claude Code opens it for a flush.
    let mut open = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    let out = env.run(&["fold", "--in-place", "--force", f]);
    let row = turn(sid, "z", "y1");
    open.write_all(row.as_bytes()).unwrap();
    drop(open);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("is open in pid {}", std::process::id())), "{stderr}");
    assert_eq!(std::fs::read(&path).unwrap(), [source, row.into_bytes()].concat(), "the row reached the transcript");
    assert!(neighbours(&path).iter().all(|n| !n.starts_with('.')), "{:?}", neighbours(&path));
}

/// Finding 28.4, the window: a flush opens the old file after shake's last look and writes after
/// the rename, and the next flush reaches the new file before the first closes. shake waits until
/// no other descriptor holds the old file and puts the late row before the next one, in the
/// order Claude Code wrote them (an append would put it last and make it the resumed leaf).
#[test]
fn a_row_written_to_the_old_file_after_the_rename_is_carried_over_in_order() {
    let sid = "11111111-2222-4333-8444-cccccccccccc";
    let (env, path, _) = sandbox(sid);
    let t = Transcript::read(&path).unwrap();
    let (first, next) = (turn(sid, "z", "y1"), turn(sid, "y1", "y2"));
    let mut writer = None;
    let hook = |s| {
        on(s, Stage::Renaming, || {
            let mut open = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
            let (path, first, next) = (path.clone(), first.clone(), next.clone());
            // Writes once shake has renamed (it waits for this descriptor to close).
            writer = Some(std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(50));
                open.write_all(first.as_bytes()).unwrap();
                append(&path, &next);
            }));
        })
    };
    let forked = fold_in_place(&t, &path, (&["toolu_0".to_string()], &[]), placeholder, hook).unwrap();
    writer.unwrap().join().unwrap();
    assert_eq!(forked.carried, first.len() as u64);
    let now = std::fs::read_to_string(&path).unwrap();
    assert!(now.ends_with(&format!("{first}{next}")), "{}", &now[now.len() - 500..]);
    assert!(now.contains("<persisted-output>"));
    assert_eq!(json(&env, &["project", "--json", path.to_str().unwrap()])["leafId"], "y2");
    assert!(neighbours(&path).iter().all(|n| !n.starts_with('.')), "{:?}", neighbours(&path));
}

/// Finding 28.6: a store that cannot be written (a full disk) must not leave a transcript with
/// placeholders and no way back: the fold is refused before the rename, the transcript as it
/// was; with the store writable again the fold and its undo work.
#[test]
fn a_store_that_cannot_be_written_refuses_the_in_place_fold() {
    use std::os::unix::fs::PermissionsExt;
    let (env, path, text) = sandbox("11111111-2222-4333-8444-dddddddddddd");
    let f = path.to_str().unwrap();
    let store = env.store();
    std::fs::create_dir_all(&store).unwrap();
    let mode = |m| std::fs::set_permissions(&store, std::fs::Permissions::from_mode(m)).unwrap();
    mode(0o500);
    let wrapper = crate::env::without_dac(&["test", "-w", store.to_str().unwrap()]);
    let out = env.cmd_through(wrapper).args(["fold", "--in-place", "--force", f]).output().unwrap();
    mode(0o700);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("the store could not keep the way back"), "{stderr}");
    assert_eq!(std::fs::read(&path).unwrap(), text.as_bytes(), "the transcript was rewritten");
    json(&env, &["fold", "--json", "--in-place", "--force", f]);
    env.ok(&["undo", "--in-place", "--force", f]);
    assert_eq!(std::fs::read(&path).unwrap(), text.as_bytes());
}

/// Finding 28.6: killed right after the rename, the fold has left its record and the version it
/// read in the store: `undo --in-place` gives the bytes back.
#[test]
fn a_fold_killed_right_after_the_rename_can_be_undone() {
    use std::os::unix::fs::MetadataExt;
    let (env, path, text) = sandbox("11111111-2222-4333-8444-eeeeeeeeeeee");
    let f = path.to_str().unwrap();
    let inode = std::fs::metadata(&path).unwrap().ino();
    let mut child = env
        .cmd()
        .env(RENAME_DELAY_ENV, "60000")
        .args(["fold", "--in-place", "--force", f])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    while std::fs::metadata(&path).unwrap().ino() == inode {
        assert!(child.try_wait().unwrap().is_none(), "the fold ended before its rename");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_ne!(std::fs::read(&path).unwrap(), text.as_bytes(), "the rename happened");
    let undo = env.ok(&["undo", "--in-place", "--force", f]);
    assert!(undo.contains("Restored 1 entry"), "{undo}");
    assert_eq!(std::fs::read(&path).unwrap(), text.as_bytes());
}

/// Finding 28.12: an in-place fold of a symbolic link would replace the link by a regular file
/// (the target keeping the old bytes): refused, the link and its target as they were.
#[test]
fn a_symlinked_transcript_is_not_rewritten_in_place() {
    let env = TestEnv::new();
    let sid = "11111111-2222-4333-8444-ffffffffffff";
    let text = transcript(sid, &[30_000, 30_000, 500], None);
    let target = env.write("elsewhere.jsonl", text.as_bytes());
    let path = install_bytes(&env, sid, b"");
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(&target, &path).unwrap();
    let err = env.fails(&["fold", "--in-place", "--force", path.to_str().unwrap()], 1);
    assert!(err.contains("is a symbolic link"), "{err}");
    assert!(std::fs::symlink_metadata(&path).unwrap().file_type().is_symlink(), "the link was replaced");
    assert_eq!(std::fs::read(&target).unwrap(), text.as_bytes());
    // A fork reads through the link and writes beside it.
    assert!(env.ok(&["fold", path.to_str().unwrap()]).contains("Wrote the fork"));
}

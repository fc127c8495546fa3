//! `shake fold` and `shake undo` on Claude Code transcripts through the binary: the fold writes a
//! fork (the source's bytes never change), its figure is one number (meter = fold --dry-run =
//! the fold's report = status of the fork), the fork holds Claude Code's `<persisted-output>`
//! placeholder exactly at the targets and every other byte as the source (session ids aside),
//! the saved originals are the results byte for byte; `shake undo` of the fork writes a session
//! whose bytes are the source's again (turns made in the fork kept), is idempotent, and is a
//! no-op with a clear message on the source.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use shake_plumbing::claude::write::noted_placeholder;
use shake_plumbing::claude::Transcript;

use crate::claude_host::{install, install_bytes, transcript};
use crate::env::TestEnv;

/// The file with every `"sessionId":"<from>"` turned into `<to>` (what a fork changes besides
/// the folded results).
pub fn renamed(bytes: &[u8], from: &str, to: &str) -> Vec<u8> {
    let text = String::from_utf8_lossy(bytes);
    text.replace(&format!("\"sessionId\":\"{from}\""), &format!("\"sessionId\":\"{to}\"")).into_bytes()
}

/// The originals a fold's `--json` report says it saved: (target, path).
pub fn saved_files(fold: &Value) -> Vec<(&str, &str)> {
    let saved = fold["fork"]["saved"].as_array().unwrap().iter();
    saved.map(|s| (s["id"].as_str().unwrap(), s["path"].as_str().unwrap())).collect()
}

fn texts(path: &Path) -> HashMap<String, String> {
    shake_plumbing::claude::fork::result_texts(&Transcript::read(path).unwrap())
}

fn json(env: &TestEnv, args: &[&str]) -> Value {
    serde_json::from_str(&env.ok(args)).unwrap()
}

/// Folds `path` with `profile`, checks the fork and the figures, undoes it, checks the undone
/// session, and returns (fork, undone) paths.
pub fn fold_and_undo(env: &TestEnv, path: &Path, profile: &str) -> (PathBuf, PathBuf) {
    let f = path.to_str().unwrap();
    let source = std::fs::read(path).unwrap();
    let sid = Transcript::read(path).unwrap().session_id().unwrap().to_string();
    let meter = json(env, &["meter", "--json", "--profile", profile, f]);
    let dry = json(env, &["fold", "--dry-run", "--json", "--profile", profile, f]);
    assert!(dry["fork"].is_null());
    let fold = json(env, &["fold", "--json", "--profile", profile, f]);
    assert_eq!(std::fs::read(path).unwrap(), source, "the source was written");
    let freed = fold["tokensFreed"].as_u64().unwrap();
    assert!(freed > 0, "{fold}");
    assert_eq!(meter["tokens"], fold["tokensFreed"]);
    assert_eq!(dry["tokensFreed"], fold["tokensFreed"]);
    let fork = PathBuf::from(fold["fork"]["path"].as_str().unwrap());
    let fork_id = fold["fork"]["sessionId"].as_str().unwrap().to_string();
    assert_eq!(fork.file_name().unwrap().to_string_lossy(), format!("{fork_id}.jsonl"));
    assert!(fold["fork"]["resume"].as_str().unwrap().ends_with(&format!("&& claude --resume {fork_id}")));
    let status = json(env, &["status", "--json", fork.to_str().unwrap()]);
    assert_eq!(status["tokensFreed"], fold["tokensFreed"], "status of the fork");
    assert_eq!(status["regions"], fold["toolResults"]);
    // The fork: the source's bytes, its session id, and the placeholders at the targets only.
    let targets: Vec<&str> = fold["targets"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect();
    let (before, after) = (texts(path), texts(&fork));
    let saved: HashMap<&str, &str> = saved_files(&fold).into_iter().collect();
    let renamed_source = String::from_utf8(renamed(&source, &sid, &fork_id)).unwrap();
    let mut lines: Vec<String> = renamed_source.split_inclusive('\n').map(str::to_string).collect();
    for (id, text) in &before {
        match targets.contains(&id.as_str()) {
            true => {
                let at = Path::new(saved[id.as_str()]);
                assert!(at.is_absolute());
                assert_eq!(&std::fs::read_to_string(at).unwrap(), text, "{id}: the saved original");
                // A superseded read's placeholder says why on a line of its own.
                let stale = fold["targets"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|t| t["id"] == **id && t["kind"] == "supersededRead");
                let why = stale.then_some(shake_porcelain::scope::SUPERSEDED_WHY);
                assert_eq!(after[id], noted_placeholder(text, at, why));
                let (from, to) = (serde_json::to_string(text).unwrap(), serde_json::to_string(&after[id]).unwrap());
                // In the rows of that result only (a real transcript may hold the same text in
                // other results, and the same result in more than one row).
                let holds = format!("\"tool_use_id\":\"{id}\"");
                for line in lines.iter_mut().filter(|l| l.contains(&holds)) {
                    *line = line.replacen(&from, &to, 1);
                }
            }
            false => assert_eq!(&after[id], text),
        }
    }
    assert_eq!(String::from_utf8(std::fs::read(&fork).unwrap()).unwrap(), lines.concat(), "the fork's bytes");
    // Folding the fork again folds nothing new; undo on the source does nothing, and says so.
    assert!(env.ok(&["undo", f]).contains("Nothing to undo: no fold is in force in this file"));
    assert_eq!(std::fs::read(path).unwrap(), source);
    // Undo of the fork: the source's bytes under a new id, written once.
    let fork_bytes = std::fs::read(&fork).unwrap();
    let undo = json(env, &["undo", "--json", fork.to_str().unwrap()]);
    assert_eq!(undo["tokensRestored"].as_u64(), Some(freed));
    let undone = PathBuf::from(undo["session"]["path"].as_str().unwrap());
    let undone_id = undo["session"]["sessionId"].as_str().unwrap();
    assert_eq!(std::fs::read(&undone).unwrap(), renamed(&source, &sid, undone_id), "the undone session's bytes");
    assert_eq!(std::fs::read(&fork).unwrap(), fork_bytes, "undo wrote the fork");
    let again = json(env, &["undo", "--json", fork.to_str().unwrap()]);
    assert_eq!(again["session"]["sessionId"], undo["session"]["sessionId"]);
    assert_eq!(again["session"]["reused"], true);
    assert!(env.ok(&["undo", undone.to_str().unwrap()]).contains("Nothing to undo"));
    let log = env.ok(&["log", undone.to_str().unwrap()]);
    assert!(log.contains("undo: restored") && log.contains("fold elide/"), "{log}");
    (fork, undone)
}

#[test]
fn fold_writes_a_fork_and_undo_writes_the_source_back() {
    let env = TestEnv::new();
    let path = install(&env, &crate::env::fixture_path("claude/bash-read"));
    fold_and_undo(&env, &path, "default");
    let sizes = [30_000, 1_500, 2_000, 2_001, 9_000, 40_000, 20_000, 30_000, 500];
    let path = install_bytes(
        &env,
        "11111111-2222-4333-8444-555555555555",
        transcript("11111111-2222-4333-8444-555555555555", &sizes, Some(4)).as_bytes(),
    );
    fold_and_undo(&env, &path, "claude-shake");
    fold_and_undo(&env, &path, "aggressive");
}

#[test]
fn undo_keeps_the_turns_made_in_the_fork() {
    let env = TestEnv::new();
    let sizes = [30_000, 30_000, 500];
    let path = install_bytes(
        &env,
        "11111111-2222-4333-8444-777777777777",
        transcript("11111111-2222-4333-8444-777777777777", &sizes, None).as_bytes(),
    );
    let fold = json(&env, &["fold", "--json", path.to_str().unwrap()]);
    let fork = PathBuf::from(fold["fork"]["path"].as_str().unwrap());
    let fork_id = fold["fork"]["sessionId"].as_str().unwrap();
    // Claude Code resumed the fork and wrote a turn.
    let turn = format!(
        "{{\"parentUuid\":\"z\",\"isSidechain\":false,\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":\"more\"}},\"uuid\":\"y\",\"timestamp\":\"2026-01-01T00:01:00.000Z\",\"sessionId\":\"{fork_id}\",\"cwd\":\"/w\"}}\n"
    );
    let mut bytes = std::fs::read(&fork).unwrap();
    bytes.extend_from_slice(turn.as_bytes());
    std::fs::write(&fork, &bytes).unwrap();
    let undo = json(&env, &["undo", "--json", fork.to_str().unwrap()]);
    let undone = std::fs::read_to_string(undo["session"]["path"].as_str().unwrap()).unwrap();
    let id = undo["session"]["sessionId"].as_str().unwrap();
    let source =
        String::from_utf8(renamed(&std::fs::read(&path).unwrap(), "11111111-2222-4333-8444-777777777777", id)).unwrap();
    assert_eq!(undone, source + &turn.replace(fork_id, id));
}

#[test]
fn a_transcript_being_written_is_not_forked() {
    let env = TestEnv::new();
    let sid = "11111111-2222-4333-8444-888888888888";
    let mut text = transcript(sid, &[30_000, 30_000, 500], None);
    text.push_str("{\"parentUuid\":\"z\",\"type\":\"user\",\"mess");
    let path = install_bytes(&env, sid, text.as_bytes());
    let err = env.fails(&["fold", path.to_str().unwrap()], 1);
    assert!(err.contains("partial") || err.contains("incomplete"), "{err}");
    assert_eq!(std::fs::read_dir(path.parent().unwrap()).unwrap().count(), 1, "nothing else was written");
}

/// Runs `shake --store STORE ARGS…` and returns its JSON answer.
fn in_store(env: &TestEnv, store: &Path, args: &[&str]) -> Value {
    let mut all = vec!["--store", store.to_str().unwrap()];
    all.extend_from_slice(args);
    json(env, &all)
}

#[test]
fn a_fork_shares_its_rows_with_its_source_in_the_store() {
    let env = TestEnv::new();
    let path = install(&env, &crate::env::fixture_path("claude/bash-read"));
    let fold = json(&env, &["fold", "--json", "--profile", "aggressive", path.to_str().unwrap()]);
    let fork = PathBuf::from(fold["fork"]["path"].as_str().unwrap());
    let folded = fold["targets"].as_array().unwrap().len();
    // A store that has the source adds, for the fork, its version, its node table, the rows the
    // fold changed, and the nodes below them: every other row object is the source's.
    let store = env.dir.path().join("store2");
    let imported =
        |file: &Path| in_store(&env, &store, &["import", "--json", file.to_str().unwrap()])["files"][0].clone();
    let source = imported(&path);
    let forked = imported(&fork);
    let (all, added) = (source["newObjects"].as_u64().unwrap(), forked["newObjects"].as_u64().unwrap());
    let t = Transcript::read(&path).unwrap();
    let rows = t.rows.iter().filter(|r| r.is_conversation()).count() as u64;
    let first = t.rows.iter().position(|r| {
        t.content(r).is_some_and(|c| {
            fold["targets"].as_array().unwrap().iter().any(|x| c.to_string().contains(x["id"].as_str().unwrap()))
        }) && r.has_tool_result()
    });
    let below = t.rows[first.unwrap()..].iter().filter(|r| r.is_conversation()).count() as u64;
    assert!(added <= 2 + folded as u64 + below, "{added} new objects for the fork (source: {all})");
    assert!(added < all / 2, "{added} new objects for the fork (source: {all}, {rows} rows)");
    // Exact bytes back, a clean store, one family.
    let out =
        env.run(&["--store", store.to_str().unwrap(), "restore", "--version", "1", "-o", "-", fork.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.stdout, std::fs::read(&fork).unwrap(), "the fork's bytes from the store");
    env.ok(&["--store", store.to_str().unwrap(), "fsck"]);
    // Each names the other in its family, sharing the rows before the first folded result.
    let sessions = in_store(&env, &store, &["sessions", "--json"]);
    for s in sessions.as_array().unwrap() {
        let family = s["family"].as_array().unwrap();
        assert_eq!(family.len(), 1, "{sessions}");
        assert_eq!(family[0]["shared"].as_u64(), Some(rows - below), "{sessions}");
    }
}

/// A project folder shake may not write into: the fold is refused as the system's refusal (exit
/// 4) naming the folder, nothing is left behind (no fork, no saved original, no record), the
/// source is unchanged, and once the folder is writable again the same fold works.
#[test]
fn a_read_only_project_folder_refuses_the_fold_and_loses_nothing() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    let sid = "11111111-2222-4333-8444-999999999999";
    let text = transcript(sid, &[30_000, 30_000, 500], None);
    let path = install_bytes(&env, sid, text.as_bytes());
    let (f, dir) = (path.to_str().unwrap(), path.parent().unwrap());
    let mode = |m| std::fs::set_permissions(dir, std::fs::Permissions::from_mode(m)).unwrap();
    mode(0o555);
    let wrapper = crate::env::without_dac(&["test", "-w", dir.to_str().unwrap()]);
    let out = env.cmd_through(wrapper).args(["fold", f]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    mode(0o755);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("Permission denied") && stderr.contains(dir.to_str().unwrap()), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let left: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, [path.file_name().unwrap()], "nothing else was written");
    assert_eq!(std::fs::read(&path).unwrap(), text.as_bytes(), "the source was written");
    assert_eq!(json(&env, &["status", "--json", f])["regions"], 0, "a record of a fold that did not happen");
    let fold = json(&env, &["fold", "--json", f]);
    assert!(fold["fork"]["path"].as_str().is_some_and(|p| Path::new(p).exists()), "{fold}");
}

/// Finding 28.11: a transcript's `sessionId` names the originals' folder and is a word of the
/// printed resume command. Ids that are not uuids (`../..`, an absolute path, shell syntax) are
/// refused with an error naming the file, and nothing is created anywhere.
#[test]
fn a_crafted_session_id_never_chooses_where_shake_writes() {
    let env = TestEnv::new();
    let outside = env.dir.path().join("outside");
    let ids = [
        "../../../../../outside/up".to_string(),
        outside.join("abs").to_string_lossy().into_owned(),
        "x;touch PWNED;#".to_string(),
    ];
    for (n, id) in ids.iter().enumerate() {
        let text = transcript(id, &[30_000, 30_000, 500], None);
        let file = format!("11111111-2222-4333-8444-00000000000{n}");
        let path = install_bytes(&env, &file, text.as_bytes());
        let f = path.to_str().unwrap();
        for args in [&["fold", f][..], &["fold", "--in-place", "--force", f]] {
            let err = env.fails(args, 1);
            assert!(err.contains("is not a Claude Code session id (a uuid)") && err.contains(f), "{id}: {err}");
        }
        assert_eq!(std::fs::read(&path).unwrap(), text.as_bytes());
        let dir: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(dir.len(), n + 1, "{id}: only the transcripts: {dir:?}");
    }
    assert!(!outside.exists(), "a file was written outside the project folder");
    assert!(!env.cwd().join("PWNED").exists());
}

/// Finding 28.7: a saved original a killed fold left empty (or cut) is written again, so the fold
/// folds what it reports; one with other bytes refuses the fold, naming the file, and records
/// nothing.
#[test]
fn a_saved_original_left_cut_is_written_again_and_a_wrong_one_refuses_the_fold() {
    let env = TestEnv::new();
    let sid = "11111111-2222-4333-8444-123456789abc";
    let path = install_bytes(&env, sid, transcript(sid, &[30_000, 30_000, 30_000, 500], None).as_bytes());
    let f = path.to_str().unwrap();
    let saved = std::fs::canonicalize(path.parent().unwrap()).unwrap().join(sid).join("shake");
    std::fs::create_dir_all(&saved).unwrap();
    let texts = texts(&path);
    std::fs::write(saved.join("toolu_0.txt"), "").unwrap();
    std::fs::write(saved.join("toolu_1.txt"), &texts["toolu_1"][..1000]).unwrap();
    let fold = json(&env, &["fold", "--json", f]);
    assert_eq!(fold["toolResults"], 2, "{fold}");
    for id in ["toolu_0", "toolu_1"] {
        assert_eq!(std::fs::read_to_string(saved.join(format!("{id}.txt"))).unwrap(), texts[id], "{id}");
    }
    let fork = fold["fork"]["path"].as_str().unwrap();
    let status = json(&env, &["status", "--json", fork]);
    assert_eq!((status["regions"].clone(), status["tokensFreed"].clone()), (2.into(), fold["tokensFreed"].clone()));

    let other = "11111111-2222-4333-8444-123456789abd";
    let path = install_bytes(&env, other, transcript(other, &[30_000, 30_000, 30_000, 500], None).as_bytes());
    let f = path.to_str().unwrap();
    let saved = saved.parent().unwrap().parent().unwrap().join(other).join("shake");
    std::fs::create_dir_all(&saved).unwrap();
    std::fs::write(saved.join("toolu_1.txt"), "something else").unwrap();
    let err = env.fails(&["fold", f], 1);
    assert!(err.contains("toolu_1.txt exists with other content") && err.contains(f), "{err}");
    assert_eq!(std::fs::read_to_string(saved.join("toolu_1.txt")).unwrap(), "something else");
    assert_eq!(json(&env, &["status", "--json", f])["regions"], 0, "a record of a fold that did not happen");
    let left = std::fs::read_dir(path.parent().unwrap()).unwrap().count();
    assert_eq!(left, 5, "the two transcripts, the fork and the two folders; no second fork");
}

/// Finding 28.12: the originals' folders are never followed when they are links: a symlinked
/// `shake/` (or session) folder refuses the fold, and nothing is written where it points.
#[test]
fn a_symlinked_originals_folder_refuses_the_fold() {
    let sid = "11111111-2222-4333-8444-123456789abe";
    let (env, path, _) = crate::claude_in_place::sandbox(sid);
    let f = path.to_str().unwrap();
    let outside = env.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let session_dir = path.parent().unwrap().join(sid);
    std::fs::create_dir_all(&session_dir).unwrap();
    std::os::unix::fs::symlink(&outside, session_dir.join("shake")).unwrap();
    let err = env.fails(&["fold", f], 1);
    assert!(err.contains("is a symbolic link or not a folder") && err.contains(f), "{err}");
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0, "an original was written through the link");
    std::fs::remove_file(session_dir.join("shake")).unwrap();
    std::fs::remove_dir(&session_dir).unwrap();
    std::os::unix::fs::symlink(&outside, &session_dir).unwrap();
    assert!(env.fails(&["fold", f], 1).contains("is a symbolic link or not a folder"));
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0, "a folder was made through the link");
}

/// Finding 28.13: a fork or an undone session cut by a kill (here SIGXFSZ: a file-size limit the
/// session file exceeds) leaves no `<uuid>.jsonl` Claude Code would list, only a hidden temp
/// file that the next run removes; the next undo is not blocked.
#[test]
fn a_fork_or_undo_killed_midway_leaves_no_session_file() {
    let env = TestEnv::new();
    let sid = "11111111-2222-4333-8444-123456789abf";
    // A row no fold takes, so the fork stays past the limit (200 KB) and the originals under it.
    let mut text = transcript(sid, &[30_000, 30_000, 500], None);
    let big = format!(
        "{{\"parentUuid\":null,\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":\"{}\"}},\"uuid\":\"big\",\"sessionId\":\"{sid}\"}}\n",
        "b".repeat(300_000)
    );
    text.insert_str(text.find('\n').unwrap() + 1, &big);
    let path = install_bytes(&env, sid, text.as_bytes());
    let f = path.to_str().unwrap();
    // Imported and counted first: the store and the token caches are written whole before.
    env.ok(&["fold", "--dry-run", f]);
    let dir = path.parent().unwrap();
    let sessions = || {
        let mut names: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    };
    let limited = |args: &[&str]| {
        let wrapper = ["bash", "-c", "ulimit -f 200 && exec \"$0\" \"$@\""];
        let out = env.cmd_through(&wrapper).args(args).output().unwrap();
        assert!(!out.status.success(), "{args:?} ran whole under the limit");
    };
    limited(&["fold", f]);
    let jsonl = |names: &[String]| names.iter().filter(|n| n.ends_with(".jsonl")).count();
    let after_kill = sessions();
    assert_eq!(jsonl(&after_kill), 1, "a cut fork was left: {after_kill:?}");
    assert!(after_kill.iter().any(|n| n.starts_with(".shake-tmp-")), "{after_kill:?}");
    let fold = json(&env, &["fold", "--json", f]);
    let fork = fold["fork"]["path"].as_str().unwrap().to_string();
    let now = sessions();
    assert!(now.iter().all(|n| !n.starts_with(".shake-tmp-")), "the killed run's temp file stays: {now:?}");
    limited(&["undo", &fork]);
    assert_eq!(jsonl(&sessions()), 2, "a cut undone session was left: {:?}", sessions());
    let undo = json(&env, &["undo", "--json", &fork]);
    let undone = undo["session"]["path"].as_str().unwrap();
    assert_eq!(
        std::fs::read(undone).unwrap(),
        renamed(text.as_bytes(), sid, undo["session"]["sessionId"].as_str().unwrap())
    );
}

/// Finding 28.13: an undone session an older shake left cut (it wrote at the final name and was
/// killed) no longer blocks every later undo: the undo writes it whole again. A file there with
/// other bytes is still never overwritten.
#[test]
fn an_undone_session_left_cut_is_written_again() {
    let sid = "11111111-2222-4333-8444-123456789ac0";
    let (env, path, _) = crate::claude_in_place::sandbox(sid);
    let fold = json(&env, &["fold", "--json", path.to_str().unwrap()]);
    let fork = fold["fork"]["path"].as_str().unwrap().to_string();
    let undo = json(&env, &["undo", "--json", &fork]);
    let undone = PathBuf::from(undo["session"]["path"].as_str().unwrap());
    let whole = std::fs::read(&undone).unwrap();
    std::fs::write(&undone, &whole[..whole.len() / 2]).unwrap();
    let again = json(&env, &["undo", "--json", &fork]);
    assert_eq!(
        (again["session"]["path"].clone(), again["session"]["reused"].clone()),
        (undone.to_str().into(), false.into())
    );
    assert_eq!(std::fs::read(&undone).unwrap(), whole);
    std::fs::write(&undone, b"other").unwrap();
    let err = env.fails(&["undo", &fork], 1);
    assert!(err.contains("exists already; not overwritten"), "{err}");
    assert_eq!(std::fs::read(&undone).unwrap(), b"other");
}

/// `log` on a fork prints when the fold was made (the time its record keeps), not the time of
/// the source row it was made at (issue 34.6); a record an older shake wrote, without a time,
/// is read with its row's time, as before.
#[test]
fn log_on_a_fork_prints_when_the_fold_was_made() {
    let env = TestEnv::new();
    let path = install(&env, &crate::env::fixture_path("claude/bash-read"));
    let at = "2031-05-06T07:08:09.010Z";
    let out = env.cmd().env("SHAKE_TIMESTAMP", at).args(["fold", "--json", path.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let fold: Value = serde_json::from_slice(&out.stdout).unwrap();
    let (fork, fork_id) = (fold["fork"]["path"].as_str().unwrap(), fold["fork"]["sessionId"].as_str().unwrap());
    let log = json(&env, &["log", "--json", fork]);
    assert_eq!(log[0]["timestamp"], at, "{log}");
    assert!(env.ok(&["log", fork]).contains(at));
    // An older shake's record: no time; the row's stands in.
    let ctx = shake_plumbing::Context {
        cwd: env.cwd(),
        home: env.dir.path().to_path_buf(),
        agent_dir: env.agent_dir(),
        custom_session_dir: None,
        store_dir: env.store(),
        color: false,
        host: None,
        model: None,
    };
    let mut records = shake_plumbing::fork_record::read(&ctx, fork_id).unwrap();
    records.iter_mut().for_each(|r| assert!(r.as_object_mut().unwrap().remove("at").is_some()));
    shake_plumbing::fork_record::put(&ctx, fork_id, records).unwrap();
    let log = json(&env, &["log", "--json", fork]);
    let row_time = log[0]["timestamp"].as_str().unwrap();
    assert!(row_time.starts_with("20") && row_time != at, "{log}");
}

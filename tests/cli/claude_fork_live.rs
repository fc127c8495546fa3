//! A fold written as a fork, checked by the real Claude Code 2.1.328: resuming the fork sends the
//! placeholders exactly where shake put them and every other message unchanged; a scripted `Read`
//! of a placeholder's path returns the original; a fork back with the originals resumes exactly as
//! the source. The source file is never written.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use shake_plumbing::claude::fork::{fork, new_session_id, result_texts};
use shake_plumbing::claude::write::placeholder;
use shake_plumbing::claude::{self, Transcript};
use shake_plumbing::regions::claude_shake::is_tombstone;

use crate::claude_live::claude_oracle;
use crate::claude_project::{assert_same_messages, projected};

/// A live session made by the real Claude Code, kept in place for resuming.
pub struct LiveSession {
    pub _tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub cwd: PathBuf,
    pub id: String,
    pub file: PathBuf,
}

impl LiveSession {
    /// Runs scenario `name` of make-fixtures.mjs with the real Claude Code.
    pub fn make(name: &str) -> LiveSession {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        let dir = claude_oracle();
        let result = Command::new("node")
            .arg(dir.join("make-fixtures.mjs"))
            .arg(&out)
            .args([name, "--keep"])
            .env("TMPDIR", tmp.path())
            .output()
            .expect("node");
        assert!(result.status.success(), "make-fixtures.mjs: {}", String::from_utf8_lossy(&result.stderr));
        let meta: Value = serde_json::from_slice(&std::fs::read(out.join(name).join("meta.json")).unwrap()).unwrap();
        let (home, cwd, id) =
            (meta["home"].as_str().unwrap(), meta["cwd"].as_str().unwrap(), meta["sessionId"].as_str().unwrap());
        let project = shake_plumbing::claude::paths::encode_cwd(cwd);
        let file = Path::new(home).join(".claude/projects").join(project).join(format!("{id}.jsonl"));
        LiveSession { _tmp: tmp, home: home.into(), cwd: cwd.into(), id: id.into(), file }
    }

    /// Runs probe.mjs for session `id` (`--read PATH` when `read` is given).
    pub fn probe(&self, id: &str, read: Option<&Path>) -> Value {
        let mut cmd = Command::new("node");
        cmd.arg(claude_oracle().join("probe.mjs")).arg("--home").arg(&self.home).arg("--cwd").arg(&self.cwd);
        cmd.args(["--session", id]);
        if let Some(path) = read {
            cmd.arg("--read").arg(path);
        }
        let out = cmd.output().expect("node");
        assert!(out.status.success(), "probe.mjs: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).expect("probe JSON")
    }

    /// Resumes session `id` from its chain entry `at` with a new prompt, as a rewind does: Claude
    /// Code writes the turn as a new branch under `at`.
    pub fn rewind(&self, id: &str, at: &str) {
        let mut cmd = Command::new("node");
        cmd.arg(claude_oracle().join("probe.mjs")).arg("--home").arg(&self.home).arg("--cwd").arg(&self.cwd);
        let out = cmd.args(["--session", id, "--rewind-at", at]).output().expect("node");
        assert!(out.status.success(), "probe.mjs --rewind-at: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// The messages Claude Code sends when it resumes session `id`.
    pub fn resumed(&self, id: &str) -> Vec<Value> {
        self.probe(id, None)["messages"].as_array().unwrap().clone()
    }
}

/// The text a `Read` result holds, without the `N\t` line numbers Claude Code puts before lines.
fn unnumbered(read: &str) -> String {
    read.split('\n').map(|l| l.split_once('\t').map_or(l, |(_, rest)| rest)).collect::<Vec<_>>().join("\n")
}

/// Each tool_result block's content by tool_use_id, over all messages.
fn results(messages: &[Value]) -> Vec<(String, Value)> {
    let blocks = messages.iter().filter_map(|m| m["content"].as_array()).flatten();
    blocks
        .filter(|b| b["type"] == "tool_result")
        .map(|b| (b["tool_use_id"].as_str().unwrap().to_string(), b["content"].clone()))
        .collect()
}

#[test]
fn claude_code_resumes_a_fork_with_placeholders_where_shake_put_them() {
    let live = LiveSession::make("bash-read");
    let source_bytes = std::fs::read(&live.file).unwrap();
    let t = Transcript::read(&live.file).unwrap();
    let original = live.resumed(&live.id);
    assert_same_messages("source", &projected(&live.file), &original);

    // Fold every text result over 2,000 characters that is not a tombstone.
    let texts = result_texts(&t);
    let mut targets: Vec<String> =
        texts.iter().filter(|(_, s)| s.len() > 2000 && !is_tombstone(s)).map(|(id, _)| id.clone()).collect();
    targets.sort();
    assert!(targets.len() >= 2, "{targets:?}");
    let forked = fork(&t, &live.file, (&targets, &[]), &new_session_id(), placeholder).unwrap();
    assert_eq!(forked.folded.len(), targets.len());
    assert_eq!(std::fs::read(&live.file).unwrap(), source_bytes, "the source was written");

    // Claude Code sends what shake projects for the fork…
    let resumed = live.resumed(&forked.session_id);
    assert_same_messages("fork", &projected(&forked.path), &resumed);
    // …placeholders exactly where shake folded, every other message and block unchanged.
    assert_eq!(resumed.len(), original.len());
    let folded: HashSet<&str> = targets.iter().map(String::as_str).collect();
    for (i, (a, b)) in original.iter().zip(&resumed).enumerate() {
        let ids: Vec<_> = results(std::slice::from_ref(a)).into_iter().map(|(id, _)| id).collect();
        if !ids.iter().any(|id| folded.contains(id.as_str())) {
            assert_eq!(a, b, "message {i} changed");
        }
    }
    let (before, after) = (results(&original), results(&resumed));
    let mut seen = HashSet::new();
    for ((id, was), (id2, now)) in before.iter().zip(&after) {
        assert_eq!(id, id2);
        assert!(seen.insert(id.clone()), "duplicate tool_use id {id}");
        if let Some((_, saved)) = forked.folded.iter().find(|(f, _)| f == id) {
            let text = &texts[id];
            let now = now.as_str().unwrap();
            assert!(now.starts_with(&placeholder(text, saved)), "{id}: {now:.200}");
            assert!(was.as_str().unwrap().starts_with(text.trim_end()));
        } else {
            assert_eq!(was, now);
        }
    }

    // The model can read each original back through the placeholder's path.
    let (id, saved) = &forked.folded[0];
    let read = live.probe(&forked.session_id, Some(saved));
    let read = read["read"].as_str().unwrap();
    // The saved file is the original byte for byte; Read sends it with line numbers, and Claude
    // Code right-trims a result it appends a reminder to (as it does to every result).
    assert_eq!(std::fs::read_to_string(saved).unwrap(), texts[id]);
    let (body, reminded) = match read.split_once("\n\n<system-reminder>") {
        Some((body, _)) => (body, true),
        None => (read, false),
    };
    let want = if reminded { texts[id].trim_end() } else { texts[id].as_str() };
    assert_eq!(unnumbered(body), want, "Read of {id}");

    // A fork of the fork with the originals put back resumes exactly as the source.
    let ft = Transcript::read(&forked.path).unwrap();
    let back = claude::fork::fork(&ft, &forked.path, (&targets, &[]), &new_session_id(), |_, p| {
        let id = p.file_stem().unwrap().to_string_lossy();
        std::fs::read_to_string(forked.folded.iter().find(|(f, _)| *f == id).unwrap().1.clone()).unwrap()
    })
    .unwrap();
    assert_eq!(live.resumed(&back.session_id), original);
}

/// Runs the `shake` binary against a live session's Claude Code folder and a private store.
fn shake(live: &LiveSession, store: &Path, args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_shake"))
        .args(args)
        .current_dir(&live.cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &live.home)
        .env("SHAKE_DIR", store)
        .output()
        .expect("run shake");
    assert!(out.status.success(), "shake {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("shake JSON")
}

#[test]
fn claude_code_resumes_the_fork_shake_fold_wrote_and_the_session_shake_undo_wrote() {
    let live = LiveSession::make("bash-read");
    let store = live._tmp.path().join("store");
    let source_bytes = std::fs::read(&live.file).unwrap();
    let original = live.resumed(&live.id);
    let texts = result_texts(&Transcript::read(&live.file).unwrap());
    // No session named: shake picks this directory's Claude Code session (no pi session here).
    let fold = shake(&live, &store, &["fold", "--json", "--profile", "aggressive"]);
    assert_eq!(std::fs::read(&live.file).unwrap(), source_bytes, "the source was written");
    let fork_id = fold["fork"]["sessionId"].as_str().unwrap().to_string();
    let targets: HashSet<&str> =
        fold["targets"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert!(!targets.is_empty(), "{fold}");
    let resumed = live.resumed(&fork_id);
    assert_same_messages("fork", &projected(Path::new(fold["fork"]["path"].as_str().unwrap())), &resumed);
    assert_eq!(resumed.len(), original.len());
    let mut seen = HashSet::new();
    for ((id, was), (id2, now)) in results(&original).iter().zip(&results(&resumed)) {
        assert_eq!(id, id2);
        assert!(seen.insert(id.clone()), "duplicate tool_use id {id}");
        match targets.contains(id.as_str()) {
            true => {
                let now = now.as_str().unwrap();
                assert!(now.starts_with("<persisted-output>\nOutput too large"), "{id}: {now:.200}");
                assert!(was.as_str().unwrap().starts_with(texts[id].trim_end()));
            }
            false => assert_eq!(was, now, "{id} changed"),
        }
    }
    let undo = shake(&live, &store, &["undo", "--json", &fork_id]);
    let undone = undo["session"]["sessionId"].as_str().unwrap();
    assert_eq!(live.resumed(undone), original, "the undone session resumes as the source");
}

#[test]
fn claude_code_resumes_a_transcript_shake_folded_in_place_and_undid_in_place() {
    let live = LiveSession::make("bash-read");
    let store = live._tmp.path().join("store");
    let source_bytes = std::fs::read(&live.file).unwrap();
    let original = live.resumed(&live.id);
    let texts = result_texts(&Transcript::read(&live.file).unwrap());
    let fold = shake(&live, &store, &["fold", "--json", "--profile", "aggressive", "--in-place", "--force"]);
    assert_eq!(fold["fork"]["sessionId"], live.id.as_str(), "{fold}");
    assert_eq!(fold["fork"]["inPlace"], true);
    let saved = crate::claude_fold::saved_files(&fold);
    assert!(!saved.is_empty(), "{fold}");
    // Claude Code resumes the same session with the placeholders exactly where shake said.
    let resumed = live.resumed(&live.id);
    assert_same_messages("in place", &projected(&live.file), &resumed);
    assert_eq!(resumed.len(), original.len());
    let mut seen = HashSet::new();
    for ((id, was), (id2, now)) in results(&original).iter().zip(&results(&resumed)) {
        assert_eq!(id, id2);
        assert!(seen.insert(id.clone()), "duplicate tool_use id {id}");
        match saved.iter().find(|(s, _)| s == id) {
            Some((_, at)) => {
                let now = now.as_str().unwrap();
                assert!(now.starts_with(&placeholder(&texts[id], Path::new(at))), "{id}: {now:.200}");
            }
            None => assert_eq!(was, now, "{id} changed"),
        }
    }
    shake(&live, &store, &["undo", "--json", "--in-place", "--force", &live.id]);
    assert_eq!(std::fs::read(&live.file).unwrap(), source_bytes, "undo gave the bytes back");
    assert_eq!(live.resumed(&live.id), original);
}

#[test]
fn a_rewind_in_claude_code_strands_the_folds_its_branch_no_longer_reaches() {
    let live = LiveSession::make("bash-read");
    let store = live._tmp.path().join("store");
    let fold = shake(&live, &store, &["fold", "--json", "--profile", "aggressive", "--in-place", "--force"]);
    let targets: Vec<String> =
        fold["targets"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap().to_string()).collect();
    assert!(!targets.is_empty(), "{fold}");
    let t = Transcript::read(&live.file).unwrap();
    let by_uuid: HashMap<&str, &claude::Row> = t.rows.iter().filter_map(|r| Some((r.uuid()?, r))).collect();
    let is_result_of = |r: &claude::Row, id: &str| {
        let blocks = t.content(r).and_then(|c| c.as_array().cloned()).into_iter().flatten();
        blocks.into_iter().any(|b| b["type"] == "tool_result" && b["tool_use_id"] == id)
    };
    let last = targets.last().unwrap();
    let result_row = t.rows.iter().find(|r| is_result_of(r, last)).unwrap();
    // The prompt of the turn that made it: the nearest user row above it with no tool result.
    let mut prompt = result_row;
    while prompt.kind() != "user" || t.content(prompt).is_some_and(|c| c.to_string().contains("tool_result")) {
        prompt = by_uuid[prompt.parent_uuid().unwrap()];
    }
    let audit = |live: &LiveSession| {
        let resumed = live.resumed(&live.id);
        assert_same_messages("after the rewind", &projected(&live.file), &resumed);
        let sent: HashSet<String> = results(&resumed).into_iter().map(|(id, _)| id).collect();
        let audit = shake(live, &store, &["audit", "rewind", "--json", &live.id]);
        assert_eq!(audit["consistent"], true, "{audit}");
        let status = shake(live, &store, &["status", "--json", &live.id]);
        let mut stranded = status["stranded"].clone();
        stranded.as_array_mut().unwrap().iter_mut().for_each(|s| drop(s.as_object_mut().unwrap().remove("byShake")));
        assert_eq!(stranded, audit["stranded"]);
        (sent, audit, status)
    };

    // A rewind to the row of the last folded result keeps it on the branch: still in force.
    live.rewind(&live.id, result_row.uuid().unwrap());
    let (sent, first, status) = audit(&live);
    assert!(targets.iter().all(|id| sent.contains(id)), "Claude Code still sends every folded result");
    assert_eq!(first["stranded"], serde_json::json!([]), "{first}");
    assert_eq!(status["regions"].as_u64(), Some(targets.len() as u64), "{status}");

    // A rewind to that turn's prompt drops it: the fold is stranded on both older branches.
    live.rewind(&live.id, prompt.uuid().unwrap());
    let (sent, audit, status) = audit(&live);
    let left: Vec<&String> = targets.iter().filter(|id| !sent.contains(*id)).collect();
    assert!(left.contains(&last), "Claude Code no longer sends {last}");
    let stranded = audit["stranded"].as_array().unwrap();
    assert_eq!(stranded.len(), 1, "{audit}");
    assert_eq!(stranded[0]["regions"].as_u64(), Some(left.len() as u64), "{audit}");
    assert_eq!(stranded[0]["leaves"].as_array().unwrap().len(), 2, "{audit}");
    assert_eq!(status["regions"].as_u64(), Some((targets.len() - left.len()) as u64), "{status}");
    let leaves = audit["leaves"].as_array().unwrap();
    assert!(leaves.len() >= 3, "{audit}");
    assert!(audit["folds"].as_array().unwrap().iter().all(|f| f["ok"] == true), "{audit}");
}

/// Each `tool_use` block of the messages, in order: (id, name, input).
fn calls(messages: &[Value]) -> Vec<(String, String, Value)> {
    let blocks = messages.iter().filter_map(|m| m["content"].as_array()).flatten();
    let uses = blocks.filter(|b| b["type"] == "tool_use");
    uses.map(|b| (b["id"].as_str().unwrap().into(), b["name"].as_str().unwrap().into(), b["input"].clone())).collect()
}

#[test]
fn claude_code_resumes_a_fork_with_folded_tool_inputs_and_undo_gives_them_back() {
    let live = LiveSession::make("write-edit");
    let store = live._tmp.path().join("store");
    let source_bytes = std::fs::read(&live.file).unwrap();
    let original = live.resumed(&live.id);
    let fold = shake(&live, &store, &["fold", "--json", "--fold-tool-inputs"]);
    assert_eq!(fold["toolInputs"], 2, "the Write and the Edit: {fold}");
    assert_eq!(std::fs::read(&live.file).unwrap(), source_bytes, "the source was written");
    let fork_id = fold["fork"]["sessionId"].as_str().unwrap().to_string();
    // The folded inputs' placeholders, and the folded results' ids.
    let (inputs, others): (Vec<&Value>, Vec<&Value>) =
        fold["targets"].as_array().unwrap().iter().partition(|t| t["kind"] == "toolInput");
    let placeholders: Vec<&str> = inputs.iter().map(|t| t["placeholder"].as_str().unwrap()).collect();
    let shaken: HashSet<&str> = others.iter().map(|t| t["id"].as_str().unwrap()).collect();
    // Claude Code sends what shake projects for the fork: every call with its id and name, the
    // folded inputs with each big string the placeholder naming the saved input.
    let resumed = live.resumed(&fork_id);
    assert_same_messages("fork", &projected(Path::new(fold["fork"]["path"].as_str().unwrap())), &resumed);
    assert_eq!(resumed.len(), original.len());
    let (was, now) = (calls(&original), calls(&resumed));
    assert_eq!(was.len(), now.len());
    let mut folded = Vec::new();
    for ((id, name, input), (id2, name2, input2)) in was.iter().zip(&now) {
        assert_eq!((id, name), (id2, name2));
        if input == input2 {
            continue;
        }
        let (input, input2) = (input.as_object().unwrap(), input2.as_object().unwrap());
        assert_eq!(input.keys().collect::<Vec<_>>(), input2.keys().collect::<Vec<_>>(), "{id}");
        let saved = format!("{id}.input.json]");
        for (key, value) in input2.iter().filter(|(k, v)| input[*k] != **v) {
            let text = value.as_str().unwrap();
            assert!(placeholders.contains(&text) && text.ends_with(&saved), "{id} {key}: {text}");
            assert!(input[key].as_str().is_some_and(|s| s.len() >= 200), "{id} {key}");
        }
        folded.push((id.clone(), name.clone()));
    }
    assert_eq!(folded.iter().map(|(_, n)| n.as_str()).collect::<Vec<_>>(), ["Write", "Edit"]);
    // The folded results aside, every other message is the same.
    for (i, (a, b)) in original.iter().zip(&resumed).enumerate() {
        let touched = calls(std::slice::from_ref(a)).iter().any(|(id, ..)| folded.iter().any(|(f, _)| f == id))
            || results(std::slice::from_ref(a)).iter().any(|(id, _)| shaken.contains(id.as_str()));
        assert!(touched || a == b, "message {i} changed");
    }

    // The model can read the input as written back through the placeholder's path.
    let saved = placeholders[0].rsplit_once("saved in ").unwrap().1.trim_end_matches(']');
    let read = live.probe(&fork_id, Some(Path::new(saved)));
    let body = read["read"].as_str().unwrap().split("\n\n<system-reminder>").next().unwrap().to_string();
    assert_eq!(unnumbered(&body).trim_end(), std::fs::read_to_string(saved).unwrap().trim_end());
    let written: Value = serde_json::from_str(&std::fs::read_to_string(saved).unwrap()).unwrap();
    assert!(was.iter().any(|(.., input)| *input == written), "the saved input is a call's input as sent");

    // Undo gives the source's bytes back (under the undone session's id); Claude Code resumes it
    // as the source.
    let undo = shake(&live, &store, &["undo", "--json", &fork_id]);
    let undone = undo["session"]["sessionId"].as_str().unwrap();
    let sid = Transcript::read(&live.file).unwrap().session_id().unwrap().to_string();
    let bytes = std::fs::read(undo["session"]["path"].as_str().unwrap()).unwrap();
    assert_eq!(bytes, crate::claude_fold::renamed(&source_bytes, &sid, undone), "the undone session's bytes");
    assert_eq!(live.resumed(undone), original, "the undone session resumes as the source");
}

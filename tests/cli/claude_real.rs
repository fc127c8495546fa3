//! Real users' Claude Code transcripts (`tests/fixtures/claude-real/`, README there) against the
//! real Claude Code 2.1.328: each is resumed once per test run with its own model
//! (`tests/claude-oracle/probe-real.mjs`, all files in one run of a few seconds) and shake's
//! projection must be the request's `messages`, less only what the probe itself adds (see
//! [`without_probe`]). A test per structural rule of issue 29 names the file that shows it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

use crate::claude_live::claude_oracle;
use crate::claude_project::projected;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-real")
}

/// What Claude Code did with one file: the request's messages (probe turn included) for the
/// model it was resumed with, or its error.
#[derive(Debug)]
pub enum Resumed {
    Sent { model: String, messages: Vec<Value> },
    Refused(String),
}

/// Claude Code's answer for every fixture, by file name (one oracle run per test run).
pub fn oracle() -> &'static HashMap<String, Resumed> {
    static ONCE: OnceLock<HashMap<String, Resumed>> = OnceLock::new();
    ONCE.get_or_init(|| resume_all(&fixtures()))
}

/// Claude Code's answer for every transcript in `dir`, by file name (`probe-real.mjs`).
pub fn resume_all(dir: &Path) -> HashMap<String, Resumed> {
    let script = claude_oracle().join("probe-real.mjs");
    let out = Command::new("node").arg(script).arg(dir).output().expect("node");
    assert!(out.status.success(), "probe-real.mjs failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let mut all = HashMap::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let name = v["file"].as_str().unwrap().to_string();
        let resumed = match v["messages"].as_array() {
            Some(m) => Resumed::Sent { model: v["model"].as_str().unwrap().to_string(), messages: m.clone() },
            None => Resumed::Refused(v["error"].as_str().unwrap_or_default().to_string()),
        };
        all.insert(name, resumed);
    }
    all
}

/// The request's messages less what the probe added, given shake's `ours`:
/// - a `role: "system"` message after the probe turn (models that take them get the
///   environment there);
/// - the probe turn: the last user message, whose last block is the text `probe`. When the
///   transcript ends on a user message the probe joins it: then only the blocks the probe
///   brought go (its `<system-reminder>` texts, which may land between the transcript's blocks,
///   with the `\n` a join puts at a seam, and reminders joined into a trailing tool result);
/// - "No response requested.", which Claude Code puts before the probe turn after an unanswered
///   end.
///
/// Returns the oracle's messages with the last one as shake's should be.
pub fn without_probe(name: &str, ours: &[Value], oracle: &[Value]) -> Vec<Value> {
    let mut theirs = oracle.to_vec();
    while theirs.last().is_some_and(|m| m["role"] == "system") {
        theirs.pop();
    }
    let probe = theirs.pop().unwrap_or_default();
    let mut blocks = probe["content"].as_array().cloned().unwrap_or_default();
    assert!(
        probe["role"] == "user" && blocks.last().is_some_and(|b| b["text"] == "probe"),
        "{name}: the request does not end with the probe turn: {}",
        shown(&probe)
    );
    blocks.pop();
    let joined = ours.len() == theirs.len() + 1 && ours.last().is_some_and(|m| m["role"] == "user");
    if joined {
        let last = ours.last().unwrap();
        theirs.push(serde_json::json!({"role": "user", "content": probe_blocks_out(name, last, blocks)}));
    } else if theirs.last().is_some_and(is_no_response) && ours.len() + 1 == theirs.len() {
        theirs.pop();
    }
    theirs
}

fn is_no_response(m: &Value) -> bool {
    m["role"] == "assistant" && m["content"] == serde_json::json!([{"type": "text", "text": "No response requested."}])
}

/// The blocks of the probe turn joined into shake's last user message `last`, less the probe's:
/// aligned on `last`'s blocks, skipping the probe's reminders.
fn probe_blocks_out(name: &str, last: &Value, theirs: Vec<Value>) -> Value {
    let ours: Vec<Value> = match &last["content"] {
        Value::Array(b) => b.clone(),
        Value::String(s) => vec![serde_json::json!({"type": "text", "text": s})],
        _ => vec![],
    };
    let reminder =
        |b: &Value| b["type"] == "text" && b["text"].as_str().is_some_and(|t| t.starts_with("<system-reminder>"));
    let mut out = Vec::new();
    let mut theirs = theirs.into_iter().peekable();
    for mine in &ours {
        while theirs.peek().is_some_and(|b| reminder(b) && !same_block(mine, b)) {
            theirs.next();
        }
        let Some(b) = theirs.next() else { break };
        // The seam: a `\n` where text met text in one of the joins and not in the other, and
        // reminders joined into a trailing string result (which Claude Code trims first).
        out.push(if same_block(mine, &b) { mine.clone() } else { b });
    }
    assert!(theirs.all(|b| reminder(&b)), "{name}: the probe turn brought more than reminders");
    if last["content"].is_string() && out.len() == 1 {
        return out[0]["text"].clone();
    }
    Value::Array(out)
}

/// Two blocks of the last message equal up to the probe's join (see [`probe_blocks_out`]).
fn same_block(ours: &Value, theirs: &Value) -> bool {
    if same(ours, theirs) {
        return true;
    }
    let text = |b: &Value, k: &str| b[k].as_str().map(str::to_string);
    match (ours["type"].as_str(), text(ours, "text"), text(theirs, "text")) {
        (Some("text"), Some(a), Some(b)) => a.trim_end_matches('\n') == b.trim_end_matches('\n'),
        (Some("tool_result"), ..) => match (text(ours, "content"), text(theirs, "content")) {
            (Some(a), Some(b)) => {
                ours["tool_use_id"] == theirs["tool_use_id"]
                    && b.strip_prefix(a.trim())
                        .is_some_and(|rest| rest.is_empty() || rest.starts_with("\n\n<system-reminder>"))
            }
            _ => false,
        },
        _ => false,
    }
}

/// Equal JSON (key order included), but for Claude Code's decoding of valid UTF-8 as U+FFFD
/// where its reader split a character (2 to 4 U+FFFD for one character of as many bytes).
pub fn same(ours: &Value, theirs: &Value) -> bool {
    match (ours, theirs) {
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|((ka, va), (kb, vb))| ka == kb && same(va, vb))
        }
        (Value::Array(a), Value::Array(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y)),
        (Value::String(a), Value::String(b)) => a == b || same_but_split_characters(a, b),
        _ => ours == theirs,
    }
}

fn same_but_split_characters(ours: &str, theirs: &str) -> bool {
    let mut b = theirs.chars().peekable();
    for c in ours.chars() {
        match b.next() {
            Some(d) if d == c => {}
            Some('\u{fffd}') if c.len_utf8() > 1 => {
                let mut n = 1;
                while n < c.len_utf8() && b.peek() == Some(&'\u{fffd}') {
                    b.next();
                    n += 1;
                }
                if n < 2 {
                    return false;
                }
            }
            _ => return false,
        }
    }
    b.next().is_none()
}

fn shown(v: &Value) -> String {
    v.to_string().chars().take(600).collect()
}

/// shake's messages for the file at `path` for the model Claude Code resumed it with.
pub fn project_file(path: &Path, resumed: Option<&Resumed>) -> Vec<Value> {
    let Some(Resumed::Sent { model, .. }) = resumed else { return projected(path) };
    let t = shake_plumbing::claude::Transcript::read(path).unwrap();
    let chain = shake_plumbing::claude::load(&t, Default::default());
    shake_plumbing::claude::project::project_for(&t, &chain, Some(model))
}

/// Asserts shake's projection of fixture `name` is what Claude Code sent when it resumed it;
/// returns the messages.
pub fn assert_projects_as_sent(name: &str) -> Vec<Value> {
    assert_same_as_sent(name, project_file(&fixtures().join(name), oracle().get(name)), oracle().get(name))
}

/// Asserts `ours` is what Claude Code sent for `name` (`resumed`); returns `ours`.
fn assert_same_as_sent(name: &str, ours: Vec<Value>, resumed: Option<&Resumed>) -> Vec<Value> {
    let Some(Resumed::Sent { messages: oracle, .. }) = resumed else {
        panic!("{name}: Claude Code did not resume it: {resumed:?}");
    };
    let theirs = without_probe(name, &ours, oracle);
    for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
        assert!(same(a, b), "{name}: message {i} differs:\n shake:  {}\n claude: {}", shown(a), shown(b));
    }
    assert_eq!(
        ours.len(),
        theirs.len(),
        "{name}: shake projects {} messages, Claude Code sent {}",
        ours.len(),
        theirs.len()
    );
    ours
}

const HOOKS: &str = "aistrad__work__560343df-fb9a-4a40-af98-7c1fa4218709.jsonl";
const API_ERRORS: &str = "aistrad__work__2e75676f-cf4b-4274-b7c3-fcaebb112349.jsonl";
const ENDS_ON_API_ERROR: &str = "aistrad__work__4de22212-8a9b-4541-85d7-4b4f8c0c2451.jsonl";
const DANGLING: &str = "gouchan__agent-swarm-config__bdc6842b-5fce-422b-8644-c62e32c34900.jsonl";

fn texts(messages: &[Value]) -> Vec<String> {
    let mut all = Vec::new();
    for m in messages {
        match &m["content"] {
            Value::String(s) => all.push(s.clone()),
            Value::Array(blocks) => all.extend(blocks.iter().filter_map(|b| b["text"].as_str().map(str::to_string))),
            _ => {}
        }
    }
    all
}

#[test]
fn rows_under_hook_progress_rows_stay_in_the_conversation() {
    // Rule 2: 23 rows hang from `hook_progress` rows (PostToolUse hooks up to 11 s); Claude
    // Code reads through them to their parents.
    assert_eq!(assert_projects_as_sent(HOOKS).len(), 128);
}

#[test]
fn synthetic_api_errors_are_not_sent_and_the_user_turns_around_them_join() {
    // Rule 3: "Prompt is too long" and "You've hit your limit" rows (model `<synthetic>`).
    for name in [API_ERRORS, ENDS_ON_API_ERROR] {
        let sent = texts(&assert_projects_as_sent(name));
        assert!(!sent.iter().any(|t| t == "Prompt is too long" || t.starts_with("You've hit your limit")), "{name}");
    }
}

#[test]
fn local_commands_are_sent_as_user_text() {
    // Rule 5: `/compact` and `/resume` with their output, `system` rows of subtype local_command.
    for name in [API_ERRORS, ENDS_ON_API_ERROR] {
        let sent = texts(&assert_projects_as_sent(name));
        assert!(sent.iter().any(|t| t.starts_with("<command-name>/")), "{name}");
    }
}

#[test]
fn a_transcript_ending_on_a_call_gets_the_interrupted_call_result() {
    // Rule 7: the file (Claude Code 2.0.19) ends on a Bash call with no result.
    let sent = assert_projects_as_sent(DANGLING);
    let last = &sent.last().unwrap()["content"][0];
    assert_eq!((last["type"].as_str(), last["is_error"].as_bool()), (Some("tool_result"), Some(true)));
    assert!(last["content"].as_str().unwrap().starts_with("[Tool call interrupted"));
}

#[test]
fn the_old_task_tool_is_sent_as_agent() {
    // Rule 9: Claude Code 2.1.19 wrote `Task` calls.
    let sent = assert_projects_as_sent(HOOKS);
    let names: Vec<&str> =
        sent.iter().filter_map(|m| m["content"].as_array()).flatten().filter_map(|b| b["name"].as_str()).collect();
    assert!(names.contains(&"Agent") && !names.contains(&"Task"));
}

#[test]
fn the_comparison_forgives_only_split_characters() {
    // What the comparison forgives, and nothing more.
    assert!(same_but_split_characters("a─b", "a\u{fffd}\u{fffd}b"));
    assert!(same_but_split_characters("a─b", "a\u{fffd}\u{fffd}\u{fffd}b"));
    assert!(!same_but_split_characters("a─b", "a\u{fffd}b"));
    assert!(!same_but_split_characters("ab", "a\u{fffd}\u{fffd}"));
    assert!(!same_but_split_characters("a─", "a─x"));
}

const SUMMARY_ONLY: &str = "aistrad__work__d6ae3ef5-fae9-4f38-9d8a-5b5249c0cbd6.jsonl";
const SUB_AGENT: &str = "LAF-US__IDAHO-VAULT__agent-aa5a2fd4876769e2f.jsonl";

/// What Claude Code said when it would not resume fixture `name`.
fn refused(name: &str) -> &'static str {
    match oracle().get(name) {
        Some(Resumed::Refused(said)) => said,
        other => panic!("{name}: Claude Code resumed it: {other:?}"),
    }
}

#[test]
fn a_summary_only_file_is_said_to_hold_no_conversation() {
    // Rule 11: 59 `summary` rows. Before: "not a pi session" (no host took it).
    assert!(refused(SUMMARY_ONLY).contains("No conversation found with session ID"));
    let env = crate::env::TestEnv::new();
    let file = env.write(SUMMARY_ONLY, std::fs::read(fixtures().join(SUMMARY_ONLY)).unwrap());
    for args in [&["project", "--json"][..], &["fold", "--dry-run"], &["status"]] {
        let said = env.fails(&[args, &[file.to_str().unwrap()]].concat(), 1);
        assert!(said.contains("a Claude Code file of 59 `summary` rows and no conversation"), "{args:?}: {said}");
        assert!(said.contains("No conversation found with session ID"), "{args:?}: {said}");
    }
}

#[test]
fn a_sub_agent_transcript_is_said_to_be_one_and_names_its_parent() {
    // Rule 11: 37 rows, all on the side chain. Before: `fold` said "the session has no
    // entries", the meter 0 tokens.
    assert!(refused(SUB_AGENT).contains("is not a UUID and does not match any session title"));
    let env = crate::env::TestEnv::new();
    let parent = "cc06da85-8b62-41f5-9393-d8ff1a51b0df";
    let bytes = std::fs::read(fixtures().join(SUB_AGENT)).unwrap();
    let alone = env.write("agent-aa5a2fd4876769e2f.jsonl", &bytes);
    let said = env.fails(&["fold", "--dry-run", alone.to_str().unwrap()], 1);
    assert!(said.contains("a Claude Code sub-agent transcript (all 37 of its rows are on a side chain)"), "{said}");
    assert!(said.contains(&format!("only its parent session {parent}")), "{said}");
    // Where Claude Code keeps it, beside its parent's transcript: that file is named.
    let project = env.cwd().join("project");
    let dir = project.join(parent).join("subagents");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("agent-aa5a2fd4876769e2f.jsonl"), &bytes).unwrap();
    std::fs::write(project.join(format!("{parent}.jsonl")), b"").unwrap();
    let kept = dir.join("agent-aa5a2fd4876769e2f.jsonl");
    for args in [&["project", "--json"][..], &["fold", "--dry-run"], &["status"]] {
        let said = env.fails(&[args, &[kept.to_str().unwrap()]].concat(), 1);
        let named = project.join(format!("{parent}.jsonl"));
        assert!(said.contains(&format!("{parent} ({})", named.display())), "{args:?}: {said}");
    }
}

/// The tool_result blocks of messages, by tool_use_id, in order.
fn results(messages: &[Value]) -> Vec<(String, Value)> {
    let blocks = messages.iter().filter_map(|m| m["content"].as_array()).flatten();
    let results = blocks.filter(|b| b["type"] == "tool_result");
    results.map(|b| (b["tool_use_id"].as_str().unwrap_or_default().to_string(), b["content"].clone())).collect()
}

#[test]
fn every_real_transcript_projects_folds_and_undoes_as_claude_code_resumes_it() {
    let resumed = tempfile::tempdir().unwrap();
    let mut names: Vec<&String> = oracle().keys().collect();
    names.sort();
    let (mut checks, mut resumable) = (Vec::new(), 0);
    for name in names {
        // A sandbox and store per file: excerpts of one session share its id, so its path.
        let env = crate::env::TestEnv::new();
        let path = fixtures().join(name);
        let Resumed::Sent { model, .. } = &oracle()[name] else {
            // Both refuse it: Claude Code (said above) and shake, with the reason.
            let said = env.fails(&["project", "--json", path.to_str().unwrap()], 1);
            assert!(said.contains("Claude Code does not resume it"), "{name}: {said}");
            continue;
        };
        // `shake project --json` is the request, for the model Claude Code resumed it with (the
        // transcript's own, but for excerpts whose fixture names one).
        resumable += 1;
        let printed = env.ok(&["project", "--json", "--model", model, path.to_str().unwrap()]);
        let printed: Value = serde_json::from_str(&printed).unwrap();
        let source = assert_same_as_sent(name, printed["messages"].as_array().unwrap().clone(), oracle().get(name));
        let t = shake_plumbing::claude::Transcript::read(&path).unwrap();
        let id = t.session_id().unwrap().to_string();
        let installed = crate::claude_host::install_bytes(&env, &id, &std::fs::read(&path).unwrap());
        let f = installed.to_str().unwrap();
        let figure = |args: &[&str], key: &str| -> Value {
            let out: Value =
                serde_json::from_str(&env.ok(&[args, &["--json", "--profile", "aggressive", f]].concat())).unwrap();
            out[key].clone()
        };
        if figure(&["fold", "--dry-run"], "tokensFreed") == 0 {
            // Nothing to fold at the leaf (after a compaction, say): nothing is written.
            assert_eq!(figure(&["meter"], "tokens"), 0, "{name}");
            assert!(figure(&["fold"], "fork").is_null(), "{name}");
            continue;
        }
        // meter = fold --dry-run = fold = status, the fork's bytes, undo's bytes (claude_fold).
        let (fork, undone) = crate::claude_fold::fold_and_undo(&env, &installed, "aggressive");
        // Copies named for the model the source was resumed with.
        let copy = |file: &PathBuf| {
            let stem = file.file_stem().unwrap().to_string_lossy();
            let to = resumed.path().join(format!("{stem}@{model}.jsonl"));
            std::fs::copy(file, &to).unwrap();
            to
        };
        checks.push((name.clone(), source, copy(&fork), copy(&undone)));
    }
    assert!(resumable >= 6 && checks.len() >= 4, "{resumable} resumable files, {} folded", checks.len());
    // Claude Code resumes every fork and undone session (one run for all of them).
    let again = resume_all(resumed.path());
    for (name, source, fork, undone) in checks {
        let file_name = |p: &PathBuf| p.file_name().unwrap().to_string_lossy().into_owned();
        let forked = assert_same_as_sent(
            &format!("{name}, fork"),
            project_file(&fork, again.get(&file_name(&fork))),
            again.get(&file_name(&fork)),
        );
        // Placeholders exactly at the folded results, every other message unchanged.
        let texts =
            shake_plumbing::claude::fork::result_texts(&shake_plumbing::claude::Transcript::read(&fork).unwrap());
        assert_eq!(forked.len(), source.len(), "{name}");
        let mut folded = 0;
        for (i, (a, b)) in source.iter().zip(&forked).enumerate() {
            if a == b {
                continue;
            }
            let (was, now) = (results(std::slice::from_ref(a)), results(std::slice::from_ref(b)));
            assert_eq!(was.len(), now.len(), "{name}: message {i}");
            for ((id, x), (id2, y)) in was.iter().zip(&now) {
                assert_eq!(id, id2, "{name}: message {i}");
                if x != y {
                    let placeholder = texts[id].as_str();
                    assert!(shake_plumbing::regions::claude_shake::is_tombstone(placeholder), "{name}: {id}");
                    assert!(y.as_str().is_some_and(|s| s.starts_with(placeholder.trim_end())), "{name}: {id}");
                    folded += 1;
                }
            }
        }
        assert!(folded > 0, "{name}: the fork sends no placeholder");
        // Undo gives the original request back.
        let back = assert_same_as_sent(
            &format!("{name}, undone"),
            project_file(&undone, again.get(&file_name(&undone))),
            again.get(&file_name(&undone)),
        );
        assert_eq!(back, source, "{name}: the undone session");
    }
}

const BLANK_TEXT: &str = "marot__spotter__fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl";
const THINKING_ONLY: &str = "LAF-US__IDAHO-VAULT__c39af7a9-6188-45a9-a7b0-1e32ecaefd67.jsonl";
const TASK_NOTIFICATIONS: &str =
    "hannibal8856__claude_backup__d3f32579-7f66-464a-b856-526a67163a15@claude-sonnet-4-6.jsonl";
const SEND_MESSAGE: &str = "hannibal8856__claude_backup__bdcc4d2c-9721-438a-afe2-8482c5b0ae9b@claude-sonnet-4-6.jsonl";

fn blocks_of(messages: &[Value]) -> impl Iterator<Item = &Value> {
    messages.iter().filter_map(|m| m["content"].as_array()).flatten()
}

#[test]
fn blank_text_blocks_and_thinking_only_turns_are_not_sent() {
    // Rule 6: a "\n\n" text block before thinking (Claude Code 2.1.39); an API message of one
    // thinking block between a ToolSearch result and "[Request interrupted by user]" (2.1.87),
    // whose user messages then join.
    let sent = assert_projects_as_sent(BLANK_TEXT);
    assert!(!blocks_of(&sent).any(|b| b["type"] == "text" && b["text"].as_str().is_some_and(|t| t.trim().is_empty())));
    let sent = assert_projects_as_sent(THINKING_ONLY);
    let said = |m: &Value| blocks_of(std::slice::from_ref(m)).any(|b| b["type"] != "thinking");
    assert!(sent.iter().filter(|m| m["role"] == "assistant").all(said));
}

#[test]
fn task_notifications_are_sent_framed_as_no_user_input() {
    // Rule 8: a background command's <task-notification> (user row, origin.kind
    // task-notification, Claude Code 2.1.224) goes in a <system-reminder> frame.
    let sent = texts(&assert_projects_as_sent(TASK_NOTIFICATIONS));
    let framed = sent.iter().filter(|t| t.contains("<task-notification>")).collect::<Vec<_>>();
    assert!(!framed.is_empty());
    assert!(framed.iter().all(|t| t.starts_with("<system-reminder>\n[SYSTEM NOTIFICATION - NOT USER INPUT]\n")));
}

#[test]
fn send_message_loses_its_legacy_input_fields() {
    // Rule 9: SendMessage calls of Claude Code 2.1.229 carry both forms of input; the old
    // `type`, `recipient` and `content` are not sent.
    let sent = assert_projects_as_sent(SEND_MESSAGE);
    let calls: Vec<&Value> = blocks_of(&sent).filter(|b| b["name"] == "SendMessage").collect();
    assert!(!calls.is_empty());
    for call in calls {
        let keys: Vec<&String> = call["input"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["to", "summary", "message"]);
    }
}

#[test]
fn a_row_appended_after_a_call_without_result_is_measured_as_the_whole_file() {
    // Rule 7 and the meter's append shortcut: a call the file ends on is answered by Claude
    // Code's interrupted-call result, but once a row follows, its message is not sent at all.
    // The real file ends on such a call; here a big result and a big unanswered call follow,
    // then a prompt: the meter that measured the shorter file must say what a fresh meter says
    // (a regression check: the shortcut held here before and after rule 7).
    let env = crate::env::TestEnv::new();
    let bytes = std::fs::read(fixtures().join(DANGLING)).unwrap();
    let t = shake_plumbing::claude::Transcript::read(&fixtures().join(DANGLING)).unwrap();
    let id = t.session_id().unwrap().to_string();
    let tip = t.rows.iter().rev().find_map(|r| r.uuid()).unwrap().to_string();
    let row = |uuid: &str, parent: &str, at: &str, body: Value| {
        let mut r = serde_json::json!({"parentUuid": parent, "isSidechain": false, "sessionId": id, "version": "2.0.19",
            "uuid": uuid, "timestamp": format!("2025-10-17T02:{at}.000Z")});
        r.as_object_mut().unwrap().extend(body.as_object().unwrap().clone());
        format!("{r}\n")
    };
    let call = |uuid: &str, parent: &str, at: &str, msg: &str, tool: &str, input: Value| {
        let content =
            serde_json::json!([{"type": "tool_use", "id": format!("toolu_{msg}"), "name": tool, "input": input}]);
        let message = serde_json::json!({"model": "claude-sonnet-4-5-20250929", "id": format!("msg_{msg}"), "type": "message",
            "role": "assistant", "content": content, "stop_reason": null});
        row(uuid, parent, at, serde_json::json!({"type": "assistant", "message": message}))
    };
    let big = "a line of output that a fold would shorten\n".repeat(300);
    let result = serde_json::json!({"type": "user", "message": {"role": "user", "content": [
        {"tool_use_id": "toolu_read1", "type": "tool_result", "content": big}]}});
    let mut file = bytes;
    // The real file's last call has no result: this one answers nothing, so it is the tip's.
    file.extend(
        call(
            "aaaaaaaa-0000-4000-8000-000000000001",
            &tip,
            "00:00",
            "read1",
            "Read",
            serde_json::json!({"file_path": "/x"}),
        )
        .bytes(),
    );
    file.extend(
        row("aaaaaaaa-0000-4000-8000-000000000002", "aaaaaaaa-0000-4000-8000-000000000001", "00:01", result).bytes(),
    );
    let content = "text to write\n".repeat(1000);
    let write = serde_json::json!({"file_path": "/y", "content": content});
    file.extend(
        call(
            "aaaaaaaa-0000-4000-8000-000000000003",
            "aaaaaaaa-0000-4000-8000-000000000002",
            "00:02",
            "write1",
            "Write",
            write,
        )
        .bytes(),
    );
    let path = crate::claude_host::install_bytes(&env, &id, &file);
    let p = path.to_str().unwrap();
    let meter = |store: &str| -> Value {
        let mut cmd = env.cmd();
        cmd.env("SHAKE_DIR", env.dir.path().join(store)).args(["meter", "--json", "--profile", "aggressive", p]);
        serde_json::from_slice(&cmd.output().unwrap().stdout).unwrap()
    };
    meter("memo");
    let prompt = serde_json::json!({"type": "user", "message": {"role": "user", "content": "go on"}});
    file.extend(
        row("aaaaaaaa-0000-4000-8000-000000000004", "aaaaaaaa-0000-4000-8000-000000000003", "00:03", prompt).bytes(),
    );
    std::fs::write(&path, &file).unwrap();
    let (grown, fresh) = (meter("memo"), meter("fresh"));
    assert_eq!(grown["leafId"], "aaaaaaaa-0000-4000-8000-000000000004");
    assert_eq!(
        (&grown["tokens"], &grown["toolResults"]),
        (&fresh["tokens"], &fresh["toolResults"]),
        "{grown}\n{fresh}"
    );
}

const CONTEXT_SEAM: &str = "hannibal8856__claude_backup__lines-1250-1275__bdcc4d2c-9721-438a-afe2-8482c5b0ae9b.jsonl";

#[test]
fn a_user_text_joined_after_a_text_ending_in_a_newline_still_gets_the_seam() {
    // Rules 5 and the join: `/context` and its output (local commands, 2.1.229) and then the
    // user's own copy of it, whose text ends in "\n\n": Claude Code adds the `\n` of the seam
    // all the same (its PVo). Resumed with the file's own model, claude-opus-5.
    let sent = assert_projects_as_sent(CONTEXT_SEAM);
    assert!(texts(&sent).iter().any(|t| t.ends_with("|\n\n\n")));
}

#[test]
fn tool_results_the_conversation_starts_with_are_not_sent() {
    // Claude Code's pairing pass: the excerpt starts with a Bash result whose call is in rows
    // before it (not in the file), with a reminder joined into it; Claude Code sends the text
    // it puts for an orphaned result instead.
    let sent = assert_projects_as_sent(CONTEXT_SEAM);
    assert_eq!(texts(&sent[..1]), ["[Orphaned tool result removed due to conversation resume]"]);
}

const SPOTTER: &str = "marot__spotter__fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl";

#[test]
fn a_row_holding_a_lone_surrogate_or_a_byte_that_is_no_utf8_is_read_as_claude_code_reads_it() {
    // Claude Code reads its file as JavaScript does: bytes that are no UTF-8 as U+FFFD, each line
    // by JSON.parse, which takes a lone surrogate escape (JSON.stringify writes one for half an
    // emoji, e.g. a tool output cut mid-character); the request carries U+FFFD. Before, shake
    // skipped such a row as "not a JSON row": the chain broke there and the projection lost
    // every message before it.
    let source = std::fs::read(fixtures().join(SPOTTER)).unwrap();
    let lines: Vec<&[u8]> = source.split(|&b| b == b'\n').collect();
    let results: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].windows(13).any(|w| w == br#""tool_result""#))
        .filter(|&i| lines[i].windows(11).any(|w| w == br#""content":""#))
        .collect();
    assert!(results.len() >= 2, "tool results with text content");
    let dir = tempfile::tempdir().unwrap();
    let with = |i: usize, insert: &[u8], name: &str| {
        let mut rows: Vec<Vec<u8>> = lines.iter().map(|l| l.to_vec()).collect();
        let row = &mut rows[i];
        let result = row.windows(13).position(|w| w == br#""tool_result""#).unwrap();
        let at = result + row[result..].windows(11).position(|w| w == br#""content":""#).unwrap() + 11;
        row.splice(at..at, insert.iter().copied());
        std::fs::write(dir.path().join(name), rows.join(&b'\n')).unwrap();
    };
    let id = "fa812bfe-b295-4cca-9c2f-fdf01028cb46";
    let (surrogate, not_utf8) = (format!("lone__surrogate__{id}.jsonl"), format!("not__utf8__{id}.jsonl"));
    with(results[0], br"half an emoji \ud83d, ", &surrogate);
    // 0xe5 opens a three-byte character: alone, it is no UTF-8.
    with(results[1], b"x\xe5y ", &not_utf8);
    let resumed = resume_all(dir.path());
    for name in [&surrogate, &not_utf8] {
        let ours = project_file(&dir.path().join(name), resumed.get(name));
        let sent = assert_same_as_sent(name, ours, resumed.get(name));
        assert_eq!(sent.len(), assert_projects_as_sent(SPOTTER).len(), "{name}: every message");
        assert!(texts_anywhere(&sent).contains('\u{fffd}'), "{name}: the request carries U+FFFD");
    }
}

/// Every string of the messages, joined.
fn texts_anywhere(messages: &[Value]) -> String {
    fn walk(v: &Value, out: &mut String) {
        match v {
            Value::String(s) => out.push_str(s),
            Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
            Value::Object(map) => map.values().for_each(|i| walk(i, out)),
            _ => {}
        }
    }
    let mut out = String::new();
    messages.iter().for_each(|m| walk(m, &mut out));
    out
}

#[test]
fn calls_without_their_results_are_paired_as_claude_code_pairs_them() {
    // Claude Code's ensureToolResultPairing: a call whose result is not in the user message
    // after it gets "[Tool result missing due to internal error]" there, first; a result of no
    // call of the message before it goes. Before, shake left out the whole API message of such
    // a call (and so its answered calls and their results) when the conversation went on.
    // Copies of a real transcript whose first API message makes two calls (rows 10, 15)
    // answered by rows 18 and 25: one result renamed; both renamed; row 18 torn (not JSON); and
    // row 26's call turned into text, so row 33's result answers no call.
    let source = std::fs::read(fixtures().join(SPOTTER)).unwrap();
    let rows: Vec<&[u8]> = source.split(|&b| b == b'\n').collect();
    let (first, second) = ("toolu_01SZB3juMsXcXZbHjVubHiga", "toolu_016BubCytDrE5ACMhyM1JFso");
    assert!(String::from_utf8_lossy(rows[17]).contains(first) && String::from_utf8_lossy(rows[24]).contains(second));
    let renamed = |row: &[u8], id: &str| String::from_utf8_lossy(row).replace(id, "toolu_renamed").into_bytes();
    let dir = tempfile::tempdir().unwrap();
    let id = "fa812bfe-b295-4cca-9c2f-fdf01028cb46";
    let change = |variant: &str, i: usize, row: &[u8]| match (variant, i) {
        ("one__renamed" | "both__renamed", 24) => renamed(row, second),
        ("both__renamed", 17) => renamed(row, first),
        ("one__torn", 17) => row[..row.len() / 2].to_vec(),
        // A later API message that makes no call: its result is of no call; the user message
        // left empty is Claude Code's "(no content)".
        ("no__call", 25) => {
            let mut r: Value = serde_json::from_slice(row).unwrap();
            r["message"]["content"] = serde_json::json!([{"type": "text", "text": "I will look at it."}]);
            serde_json::to_vec(&r).unwrap()
        }
        _ => row.to_vec(),
    };
    let names: Vec<String> = ["one__renamed", "both__renamed", "one__torn", "no__call"]
        .iter()
        .map(|variant| {
            let changed: Vec<Vec<u8>> = rows.iter().enumerate().map(|(i, row)| change(variant, i, row)).collect();
            let name = format!("{variant}__{id}.jsonl");
            std::fs::write(dir.path().join(&name), changed.join(&b'\n')).unwrap();
            name
        })
        .collect();
    let resumed = resume_all(dir.path());
    for name in &names {
        let sent =
            assert_same_as_sent(name, project_file(&dir.path().join(name), resumed.get(name)), resumed.get(name));
        let second_message = &sent[1]["content"];
        let calls: Vec<&str> = second_message.as_array().unwrap().iter().filter_map(|b| b["id"].as_str()).collect();
        assert_eq!(calls, [first, second], "{name}: both calls are sent");
        match name.starts_with("no__call") {
            true => assert_eq!(sent[4]["content"], "(no content)", "{name}"),
            false => assert!(sent[2].to_string().contains(shake_plumbing::claude::normalize::MISSING_RESULT), "{name}"),
        }
    }
}

//! The content Claude Code 2.1.328 sends for real transcripts (issue 29's content rules): each
//! excerpt of a real user's transcript under `tests/fixtures/claude-real/` (`attach-*`,
//! `toolsearch-*`, `model-*`) projects, for a model, exactly the `messages` Claude Code sent
//! when it resumed the excerpt with that model (`<name>.<model>.request.json`, made by
//! `tests/claude-oracle/content-excerpts.mjs`).

use std::path::{Path, PathBuf};

use serde_json::Value;
use shake_plumbing::claude::{self, LoadOptions, Transcript};

use crate::claude_project::assert_same_messages;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-real")
}

/// shake's messages for excerpt `name` projected for `model`, checked against Claude Code's
/// request for it; returns the request's messages.
fn check(name: &str, model: &str) -> Vec<Value> {
    let dir = fixtures();
    let t = Transcript::read(&dir.join(format!("{name}.jsonl"))).expect("excerpt");
    let chain = claude::load(&t, LoadOptions::default());
    let ours = claude::project::project_for(&t, &chain, Some(model));
    let request: Value =
        serde_json::from_slice(&std::fs::read(dir.join(format!("{name}.{model}.request.json"))).unwrap()).unwrap();
    let oracle = request["messages"].as_array().expect("messages").clone();
    assert_same_messages(&format!("{name} for {model}"), &ours, &oracle);
    oracle
}

fn thinking_blocks(messages: &[Value]) -> usize {
    messages.iter().filter_map(|m| m["content"].as_array()).flatten().filter(|b| b["type"] == "thinking").count()
}

#[test]
fn thinking_is_sent_only_to_the_model_family_that_wrote_it() {
    // Written by claude-opus-4-5-20251101: resumed with claude-opus-4-5 (the same canonical
    // name) the signed thinking is sent; with claude-sonnet-4-6 it is left out.
    let same = check("model-dd09f641", "claude-opus-4-5");
    let other = check("model-dd09f641", "claude-sonnet-4-6");
    assert_eq!((thinking_blocks(&same), thinking_blocks(&other)), (1, 0));
}

/// The text of every block and string of the messages, tool results' included.
fn texts(messages: &[Value]) -> String {
    fn walk(v: &Value, out: &mut String) {
        match v {
            Value::String(s) => out.push_str(s),
            Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
            Value::Object(o) => ["text", "content"].iter().filter_map(|k| o.get(*k)).for_each(|i| walk(i, out)),
            _ => {}
        }
    }
    let mut out = String::new();
    messages.iter().for_each(|m| walk(&m["content"], &mut out));
    out
}

#[test]
fn attachments_without_rendered_are_rendered_from_their_type() {
    // Claude Code 2.1.229 wrote these rows without `rendered`: the deferred tools, agent types,
    // MCP instructions and skills listed at the start (bubbled up before the prompt), the
    // total-tokens reminder after each tool result (appended to its string), a task reminder,
    // and PreToolUse hook successes with no content (which send nothing).
    let oracle = check("attach-bdcc4d2c", "claude-sonnet-4-6");
    let text = texts(&oracle);
    for sent in [
        "The following deferred tools are now available via ToolSearch.",
        "Available agent types for the Agent tool:",
        "# MCP Server Instructions",
        "The following skills are available for use with the Skill tool:",
        "The task tools haven't been used recently.",
    ] {
        assert_eq!(text.matches(sent).count(), 1, "{sent}");
    }
    assert_eq!(text.matches("<total_tokens>Infinite tokens left</total_tokens>").count(), 10);
    assert!(!text.contains("PreToolUse:Bash hook success"));
}

#[test]
fn a_prompt_queued_mid_turn_is_sent_as_claude_code_surfaces_it() {
    // Claude Code 2.1.224 wrote the prompt the user typed during a tool call as a
    // `queued_command` attachment without `rendered`; resumed, it is a reminder appended to the
    // next tool result, before that result's total-tokens reminder.
    let oracle = check("attach-d3f32579", "claude-sonnet-4-6");
    let text = texts(&oracle);
    assert_eq!(text.matches("The user sent a new message while you were working:\n").count(), 1);
    assert!(text.contains(
        "Address the message above as you continue this turn.\n</system-reminder>\n\n<system-reminder>\n<total_tokens>"
    ));
}

#[test]
fn toolsearch_references_are_sent_only_for_tools_claude_code_has() {
    // A real ToolSearch result (Claude Code 2.1.86) loaded TodoWrite, which 2.1.328 no longer
    // has: the reference is replaced by Claude Code's note.
    let removed = check("toolsearch-61dcf75d", "claude-sonnet-4-6");
    assert!(texts(&removed).contains("[Tool references removed - tools no longer available]"));
    // The same excerpt with the result loading WebFetch too (edited): that reference stays, and
    // the message says the tool was loaded.
    let loaded = check("toolsearch-61dcf75d-loaded", "claude-sonnet-4-6");
    let result = &loaded[2]["content"];
    assert_eq!(result[0]["content"], serde_json::json!([{"type": "tool_reference", "tool_name": "WebFetch"}]));
    assert_eq!(result[1], serde_json::json!({"type": "text", "text": "Tool loaded."}));
}

#[test]
fn reminders_go_to_claude_opus_5_as_system_messages() {
    // The same two excerpts resumed with their own model, claude-opus-5: every reminder is a
    // `role: "system"` message (untagged, the reminders between two assistant messages joined by
    // a blank line) after the user message before the next assistant message, the listings
    // after the first prompt rather than before it; the task reminder is not sent (no task
    // tools for claude-opus-5); the thinking stays.
    let first = check("attach-bdcc4d2c", "claude-opus-5");
    let system: Vec<&str> =
        first.iter().filter(|m| m["role"] == "system").filter_map(|m| m["content"].as_str()).collect();
    assert_eq!(system.len(), 10);
    assert!(system[0].starts_with("The following deferred tools are now available via ToolSearch."));
    assert!(system[0].ends_with("\n\n<total_tokens>Infinite tokens left</total_tokens>"));
    assert_eq!(first[0]["role"], "user");
    assert!(system.iter().all(|s| !s.contains("<system-reminder>") && !s.contains("The task tools haven't been used")));
    assert!(thinking_blocks(&first) > 0);
    let second = check("attach-d3f32579", "claude-opus-5");
    assert_eq!(second.last().unwrap()["role"], "system");
    assert!(second.iter().any(|m| m["role"] == "system"
        && m["content"]
            .as_str()
            .is_some_and(|s| s.starts_with("The user sent a new message while you were working:\n"))));
}

#[test]
fn every_attachment_type_shake_renders_is_rendered_as_claude_code_renders_it() {
    // The ToolSearch excerpt followed by one attachment row (without `rendered`) of each type
    // shake renders, hung under its last row: joined to the last tool result for
    // claude-sonnet-4-6 (the task reminder too; the todo reminder and a hook's system message
    // send nothing), one system message for claude-opus-5 (but `fork_briefing`, user text, and
    // no task reminder).
    let older = check("attach-every-type", "claude-sonnet-4-6");
    let text = texts(&older);
    for sent in [
        "Token usage: 1200/200000; 198800 remaining",
        "PreToolUse:Bash hook blocking error from command: \"check.sh\": no &lt;/system-reminder> here &lt;",
        "Note: /w/notes.md is not shown exactly as it is on disk.",
        "The following skills were invoked EARLIER in this session",
        "[SYSTEM NOTIFICATION - NOT USER INPUT]",
        "The task tools haven't been used recently.",
        "The user opened the file /w/odd&lt;name&gt;&#9;file.rs in the IDE.",
        "Explan&lt;a&gt;tory &amp; more output style is active.",
        "## Exited Auto Mode",
        "The user selected the lines 1 to 100 from /w/long.rs:\n",
        "\n... (truncated)\n\nThis may or may not be related to the current task.",
        "The user selected the following 1 line from the diff view (in /w/src/lib.rs):\n+ added",
        "resource text &lt;/system-reminder&gt; end",
        "<mcp-resource server=\"s\" uri=\"u\">(No content)</mcp-resource>",
    ] {
        assert!(text.contains(sent), "{sent}");
    }
    assert!(!text.contains("TodoWrite tool hasn't been used recently"));
    let newer = check("attach-every-type", "claude-opus-5");
    let last = newer.last().unwrap();
    assert_eq!(last["role"], "system");
    assert!(last["content"].as_str().unwrap().starts_with("Token usage: 1200/200000; 198800 remaining\n\nUSD budget:"));
    assert!(!texts(&newer).contains("The task tools haven't been used recently."));
    assert!(texts(&newer[4..5]).ends_with("<system-reminder>\nbriefing &lt;system-reminder> text\n</system-reminder>"));
}

#[test]
fn project_meter_and_fold_take_the_model_to_project_for() {
    // `shake project` projects for the transcript's own model unless `--model` names one, and
    // the meter equals `fold --dry-run` for either.
    let env = crate::env::TestEnv::new();
    let name = "attach-d3f32579";
    let path = env.write(&format!("{name}.jsonl"), std::fs::read(fixtures().join(format!("{name}.jsonl"))).unwrap());
    let f = path.to_str().unwrap();
    let json = |args: &[&str]| -> Value { serde_json::from_str(&env.ok(args)).unwrap() };
    for model in [None, Some("claude-sonnet-4-6")] {
        let with: Vec<&str> = model.map(|m| vec!["--model", m]).unwrap_or_default();
        let projected = json(&[&["project", "--json"][..], &with, &[f]].concat());
        let request = format!("{name}.{}.request.json", model.unwrap_or("claude-opus-5"));
        let oracle: Value = serde_json::from_slice(&std::fs::read(fixtures().join(request)).unwrap()).unwrap();
        assert_same_messages(name, projected["messages"].as_array().unwrap(), oracle["messages"].as_array().unwrap());
        let meter = json(&[&["meter", "--json"][..], &with, &[f]].concat());
        let dry = json(&[&["fold", "--dry-run", "--json"][..], &with, &[f]].concat());
        assert_eq!(meter["tokens"], dry["tokensFreed"], "{model:?}");
    }
}

//! ToolSearch results: a `tool_result` whose content holds `tool_reference` blocks (the tools a
//! search loaded). Claude Code 2.1.328 sends a reference only while the tool it names is one of
//! its tools (`qGi` in the binary); a result left with none says
//! `[Tool references removed - tools no longer available]`, and a user message still holding a
//! reference gets a `Tool loaded.` text block after its blocks.
//!
//! Which tools Claude Code has depends on how it runs, not on the transcript: these are the
//! tools of Claude Code 2.1.328 resumed in print mode (`claude -p --resume`) with no MCP server
//! configured, the oracle's setting (docs/claude-code.md). The interactive UI adds a few
//! (`AskUserQuestion`, `EnterPlanMode`, `ExitPlanMode`), and each configured MCP server its
//! `mcp__<server>__*` tools, whose references shake therefore takes as removed.

use serde_json::{json, Value};

/// Claude Code 2.1.328's tools in print mode, loaded and deferred (the request's `tools`, and
/// the deferred tools its first reminder lists).
const TOOLS: [&str; 26] = [
    "Agent",
    "Bash",
    "Edit",
    "ListAgents",
    "Read",
    "ReportFindings",
    "ScheduleWakeup",
    "Skill",
    "ToolSearch",
    "Workflow",
    "Write",
    "CronCreate",
    "CronDelete",
    "CronList",
    "EnterWorktree",
    "ExitWorktree",
    "Monitor",
    "NotebookEdit",
    "SendMessage",
    "TaskCreate",
    "TaskGet",
    "TaskList",
    "TaskStop",
    "TaskUpdate",
    "WebFetch",
    "WebSearch",
];

/// Old tool names and the tools that took them over (`Wgo`).
const RENAMED: [(&str, &str); 9] = [
    ("Task", "Agent"),
    ("KillShell", "TaskStop"),
    ("KillBash", "TaskStop"),
    ("ListPeers", "ListAgents"),
    ("Brief", "SendUserMessage"),
    ("ListMcpResources", "ListMcpResourcesTool"),
    ("ReadMcpResource", "ReadMcpResourceTool"),
    ("ReadMcpResourceDir", "ReadMcpResourceDirTool"),
    ("ProposeGoal", "SetGoal"),
];

const REMOVED: &str = "[Tool references removed - tools no longer available]";
const LOADED: &str = "Tool loaded.";

fn is_reference(block: &Value) -> bool {
    block.get("type").and_then(Value::as_str) == Some("tool_reference")
}

/// Whether Claude Code still has the tool a reference names (an MCP name as it is, another
/// under its current name).
fn available(name: &str) -> bool {
    let current = if name.starts_with("mcp__") {
        name
    } else {
        RENAMED.iter().find(|(old, _)| *old == name).map_or(name, |(_, new)| new)
    };
    TOOLS.contains(&current)
}

/// A user message's content as Claude Code sends it: references to tools it lacks left out of
/// each result (a result left with none says so), and `Tool loaded.` after the blocks while a
/// reference remains.
pub fn resolve(content: &mut Value) {
    let Value::Array(blocks) = content else { return };
    let holds = |b: &Value| {
        b.get("type").and_then(Value::as_str) == Some("tool_result")
            && b.get("content").and_then(Value::as_array).is_some_and(|c| c.iter().any(is_reference))
    };
    if !blocks.iter().any(holds) {
        return;
    }
    for result in blocks.iter_mut().filter(|b| holds(b)) {
        let Some(Value::Array(inner)) = result.get_mut("content") else { continue };
        inner.retain(|b| {
            !is_reference(b)
                || match b.get("tool_name").and_then(Value::as_str) {
                    Some(name) if !name.is_empty() => available(name),
                    _ => true,
                }
        });
        if inner.is_empty() {
            inner.push(json!({"type": "text", "text": REMOVED}));
        }
    }
    let loaded = |b: &Value| b.get("text").and_then(Value::as_str).is_some_and(|t| t.starts_with(LOADED));
    if blocks.iter().any(holds)
        && !blocks.iter().any(|b| b.get("type").and_then(Value::as_str) == Some("text") && loaded(b))
    {
        blocks.push(json!({"type": "text", "text": LOADED}));
    }
}

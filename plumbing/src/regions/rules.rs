//! The rules that protect or expose entries besides the token tail, read from the neutral
//! context alone (so every host gets them): the last N tool uses ([`keep_tool_uses`]) and the
//! superseded reads ([`superseded`]): a file read whose file the session read again, wrote or
//! edited later holds what the model can no longer trust (`docs/folding.md`, "Rules").

use std::collections::HashSet;

use crate::host::{Role, Tool, View};

/// What one tool result did to a file, as its call's arguments say.
#[derive(Debug, PartialEq, Eq)]
enum Access {
    /// Read the whole file.
    ReadAll(String),
    /// Read a part of it: the path, and the part's arguments (`offset`, `limit`) as written.
    ReadPart(String, String),
    /// Wrote or edited it.
    Change(String),
}

/// The tools that read a file (pi and oh-my-pi: `read`; Claude Code: `Read`).
const READS: [&str; 2] = ["read", "Read"];
/// The tools that write or edit one (pi and oh-my-pi: `write`, `edit`; Claude Code's four).
const CHANGES: [&str; 6] = ["write", "edit", "Write", "Edit", "MultiEdit", "NotebookEdit"];

/// The file a tool call names: `path` (pi, oh-my-pi), `file_path` or `notebook_path` (Claude
/// Code), when it is a string.
fn file_of(args: &serde_json::Value) -> Option<String> {
    ["path", "file_path", "notebook_path"].iter().find_map(|k| args.get(*k)?.as_str().map(str::to_string))
}

/// `path` as one spelling of its file: joined to the session's working directory `cwd` when
/// relative, then `.`, empty and `..` parts resolved lexically (`./a.rs`, `a.rs`, `/w/a.rs` and
/// `d/../a.rs` in `/w` are all `/w/a.rs`). Nothing is asked of the file system: the file may not
/// exist here, and a symbolic link is taken as written. A relative path without a working
/// directory stays relative (its leading `..` kept).
fn normalise(path: &str, cwd: Option<&str>) -> String {
    let joined;
    let path = match cwd.filter(|c| c.starts_with('/') && !path.starts_with('/')) {
        Some(cwd) => {
            joined = format!("{cwd}/{path}");
            joined.as_str()
        }
        None => path,
    };
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            // Above the root is the root; above a relative start is kept.
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            ".." if absolute => {}
            part => parts.push(part),
        }
    }
    let body = parts.join("/");
    match absolute {
        true => format!("/{body}"),
        false => body,
    }
}

/// What tool result `tool` did to a file, or `None` for a tool that neither reads nor changes one.
/// Its path is normalised against the session's working directory `cwd` ([`normalise`]).
fn access(tool: &Tool<'_>, cwd: Option<&str>) -> Option<Access> {
    let reads = READS.contains(&tool.name.as_ref());
    if !reads && !CHANGES.contains(&tool.name.as_ref()) {
        return None;
    }
    let args: serde_json::Value = serde_json::from_str(tool.arguments?.get()).ok()?;
    let path = normalise(&file_of(&args)?, cwd);
    if !reads {
        return Some(Access::Change(path));
    }
    let part: Vec<String> = ["offset", "limit"]
        .iter()
        .filter_map(|k| args.get(*k).filter(|v| !v.is_null()).map(|v| v.to_string()))
        .collect();
    Some(match part.is_empty() {
        true => Access::ReadAll(path),
        false => Access::ReadPart(path, part.join(",")),
    })
}

/// For each context position, whether it is a superseded read: a tool result of a read whose
/// file a later tool result in the context reads whole, writes or edits, or reads again with
/// the very same part (a later read of another part of the file leaves it alone). Paths are
/// compared normalised against the session's working directory ([`normalise`]).
pub fn superseded(view: &View<'_, '_>) -> Vec<bool> {
    stale(view).0
}

/// For each context position, whether it is the result of a write or edit whose file a later
/// tool result in the context reads whole, writes or edits: what the call wrote is no longer
/// the file (its arguments may be folded, `--fold-tool-inputs`).
pub fn stale_changes(view: &View<'_, '_>) -> Vec<bool> {
    stale(view).1
}

/// [`superseded`] and [`stale_changes`], in one walk from the newest result back.
fn stale(view: &View<'_, '_>) -> (Vec<bool>, Vec<bool>) {
    let cwd = cwd_of(view);
    let mut out = vec![false; view.units.len()];
    let mut changes = vec![false; view.units.len()];
    let mut whole: HashSet<String> = HashSet::new();
    let mut parts: HashSet<(String, String)> = HashSet::new();
    for (pos, unit) in view.units.iter().enumerate().rev() {
        let Some(tool) = unit.tool.as_deref().filter(|_| unit.role == Role::ToolResult) else { continue };
        match access(tool, cwd) {
            Some(Access::ReadAll(path)) => {
                out[pos] = whole.contains(&path);
                whole.insert(path);
            }
            Some(Access::ReadPart(path, part)) => {
                out[pos] = whole.contains(&path) || parts.contains(&(path.clone(), part.clone()));
                parts.insert((path, part));
            }
            Some(Access::Change(path)) => {
                changes[pos] = whole.contains(&path);
                whole.insert(path);
            }
            None => {}
        }
    }
    (out, changes)
}

/// The files tool results in the context touch (read, write or edit): a read of one is
/// superseded when a later result touches it ([`superseded`]). `None` when a result of a tool
/// that reads or changes files has no call arguments in this context (its call is outside it:
/// which file it touched is unknown).
pub fn touched(view: &View<'_, '_>) -> Option<Vec<String>> {
    let cwd = cwd_of(view);
    let mut out = Vec::new();
    for tool in view.units.iter().filter(|u| u.role == Role::ToolResult).filter_map(|u| u.tool.as_deref()) {
        let files = READS.contains(&tool.name.as_ref()) || CHANGES.contains(&tool.name.as_ref());
        match access(tool, cwd) {
            Some(Access::ReadAll(p) | Access::ReadPart(p, _) | Access::Change(p)) => out.push(p),
            None if files && tool.arguments.is_none() => return None,
            None => {}
        }
    }
    Some(out)
}

/// The files read by tool results of the context (what a later result may supersede).
pub fn read_files(view: &View<'_, '_>) -> Vec<String> {
    let cwd = cwd_of(view);
    let of = |tool: &Tool<'_>| match access(tool, cwd)? {
        Access::ReadAll(p) | Access::ReadPart(p, _) => Some(p),
        Access::Change(_) => None,
    };
    view.units.iter().filter(|u| u.role == Role::ToolResult).filter_map(|u| of(u.tool.as_deref()?)).collect()
}

/// The session's working directory, as its header records it.
fn cwd_of<'v>(view: &'v View<'_, '_>) -> Option<&'v str> {
    view.session.header.as_ref()?.cwd.as_deref()
}

/// Whether the unit is a tool use's result (what "keep the last N tool uses" counts).
pub fn is_tool_use(role: Role) -> bool {
    role == Role::ToolResult
}

/// The first context position the last `n` tool uses protect: the position of the `n`-th
/// newest tool result (the context's length for `n` = 0; 0 when there are fewer).
pub fn keep_tool_uses(view: &View<'_, '_>, n: usize) -> usize {
    if n == 0 {
        return view.units.len();
    }
    let mut seen = 0;
    for (pos, unit) in view.units.iter().enumerate().rev() {
        if is_tool_use(unit.role) {
            seen += 1;
            if seen == n {
                return pos;
            }
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool<'a>(name: &'a str, args: &'a serde_json::value::RawValue) -> Tool<'a> {
        Tool { name: name.into(), call_id: None, arguments: Some(args) }
    }

    fn raw(s: &str) -> Box<serde_json::value::RawValue> {
        serde_json::value::RawValue::from_string(s.to_string()).unwrap()
    }

    /// A pi session in `/` of `read`/`edit` results on files, in order: (tool, arguments).
    fn session(calls: &[(&str, &str)]) -> crate::host::SessionFile {
        session_in("/", calls)
    }

    /// [`session`] in the working directory `cwd`.
    fn session_in(cwd: &str, calls: &[(&str, &str)]) -> crate::host::SessionFile {
        let mut text =
            format!("{{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"t\",\"cwd\":\"{cwd}\"}}\n");
        let mut parent = "null".to_string();
        for (i, (name, args)) in calls.iter().enumerate() {
            let call = format!(
                "{{\"type\":\"message\",\"id\":\"a{i}\",\"parentId\":{parent},\"timestamp\":\"t\",\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"toolCall\",\"id\":\"c{i}\",\"name\":\"{name}\",\"arguments\":{args}}}]}}}}\n"
            );
            let result = format!(
                "{{\"type\":\"message\",\"id\":\"r{i}\",\"parentId\":\"a{i}\",\"timestamp\":\"t\",\"message\":{{\"role\":\"toolResult\",\"toolCallId\":\"c{i}\",\"toolName\":\"{name}\",\"content\":[{{\"type\":\"text\",\"text\":\"x\"}}]}}}}\n"
            );
            text.push_str(&call);
            text.push_str(&result);
            parent = format!("\"r{i}\"");
        }
        crate::host::SessionFile::from_bytes("t.jsonl".into(), text.into_bytes())
    }

    #[test]
    fn later_reads_writes_and_edits_supersede_a_read() {
        let file = session(&[
            ("read", r#"{"path":"a"}"#),                      // read again whole below: superseded
            ("read", r#"{"path":"b","offset":1,"limit":9}"#), // another part read below: kept
            ("read", r#"{"path":"c"}"#),                      // edited below: superseded
            ("read", r#"{"path":"b","offset":20}"#),          // the last read of this part: kept
            ("edit", r#"{"path":"c","oldText":"x","newText":"y"}"#),
            ("read", r#"{"path":"a"}"#),        // the newest read: kept
            ("bash", r#"{"command":"cat a"}"#), // not a file tool: touches nothing
        ]);
        let s = crate::hosts::load(&file, None).unwrap();
        let v = View::at(&s, s.default_leaf()).unwrap();
        let stale: Vec<usize> = superseded(&v).iter().enumerate().filter(|(_, s)| **s).map(|(p, _)| p).collect();
        let ids: Vec<&str> = stale.iter().map(|&p| s.entries[v.context[p]].id()).collect();
        assert_eq!(ids, ["r0", "r2"]);
        let changed: Vec<&str> = stale_changes(&v)
            .iter()
            .enumerate()
            .filter(|(_, s)| **s)
            .map(|(p, _)| s.entries[v.context[p]].id())
            .collect();
        assert!(changed.is_empty(), "the edit of c is the last change of c: {changed:?}");
        assert_eq!(keep_tool_uses(&v, 2), v.units.len() - 3);
        assert_eq!((keep_tool_uses(&v, 0), keep_tool_uses(&v, 99)), (v.units.len(), 0));
        assert_eq!(touched(&v).unwrap(), ["/a", "/b", "/c", "/b", "/c", "/a"]);
    }

    /// The ids of the superseded reads of `file` at its leaf.
    fn stale_ids(file: &crate::host::SessionFile) -> Vec<String> {
        let s = crate::hosts::load(file, None).unwrap();
        let v = View::at(&s, s.default_leaf()).unwrap();
        let stale = superseded(&v).into_iter().enumerate().filter(|(_, s)| *s);
        stale.map(|(p, _)| s.entries[v.context[p]].id().to_string()).collect()
    }

    #[test]
    fn two_spellings_of_one_path_are_one_file() {
        let file = session_in(
            "/abs/cwd",
            &[
                ("read", r#"{"path":"./a.rs"}"#),                      // edited below as /abs/cwd/a.rs
                ("read", r#"{"path":"src/../b.rs"}"#),                 // read again below as b.rs
                ("read", r#"{"path":"/abs/cwd/src/c.rs","limit":5}"#), // the same part, as src//c.rs
                ("read", r#"{"path":"../cwd/d.rs"}"#),                 // written below as d.rs
                ("read", r#"{"path":"e.rs"}"#),                        // /abs/e.rs below: another file
                ("edit", r#"{"path":"/abs/cwd/a.rs","oldText":"x","newText":"y"}"#),
                ("read", r#"{"path":"b.rs"}"#),
                ("read", r#"{"path":"src//c.rs","limit":5}"#),
                ("write", r#"{"path":"./d.rs","content":"z"}"#),
                ("read", r#"{"path":"/abs/e.rs"}"#),
                ("read", r#"{"path":"a.rs"}"#), // after the edit of a.rs: the edit is stale
            ],
        );
        assert_eq!(stale_ids(&file), ["r0", "r1", "r2", "r3"]);
        let s = crate::hosts::load(&file, None).unwrap();
        let v = View::at(&s, s.default_leaf()).unwrap();
        let changed = stale_changes(&v).into_iter().enumerate().filter(|(_, c)| *c);
        let changed: Vec<&str> = changed.map(|(p, _)| s.entries[v.context[p]].id()).collect();
        assert_eq!(changed, ["r5"]);
        // Without a working directory, relative spellings still meet; an absolute one stays apart.
        assert_eq!(normalise("./x/../a.rs", None), "a.rs");
        assert_eq!(normalise("../../a.rs", Some("/w")), "/a.rs");
        assert_eq!(normalise("../a.rs", None), "../a.rs");
        assert_eq!(normalise("/abs/a.rs", None), "/abs/a.rs");
        assert_eq!(normalise("a.rs/", Some("/w/")), "/w/a.rs");
    }

    /// A Claude Code transcript in `cwd` of calls and their results, in order: (tool, input).
    fn claude_transcript(cwd: &str, calls: &[(&str, &str)]) -> crate::host::SessionFile {
        let row = |kind: &str, uuid: &str, parent: &str, content: String| {
            format!(
                "{{\"parentUuid\":{parent},\"type\":\"{kind}\",\"message\":{{\"role\":\"{kind}\",\"content\":{content}}},\"uuid\":\"{uuid}\",\"sessionId\":\"s\",\"cwd\":\"{cwd}\"}}\n"
            )
        };
        let mut text = row("user", "u0", "null", "\"go\"".into());
        let mut parent = "\"u0\"".to_string();
        for (i, (name, input)) in calls.iter().enumerate() {
            let call = format!("[{{\"type\":\"tool_use\",\"id\":\"c{i}\",\"name\":\"{name}\",\"input\":{input}}}]");
            text.push_str(&row("assistant", &format!("a{i}"), &parent, call));
            let result = format!("[{{\"tool_use_id\":\"c{i}\",\"type\":\"tool_result\",\"content\":\"x\"}}]");
            text.push_str(&row("user", &format!("r{i}"), &format!("\"a{i}\""), result));
            parent = format!("\"r{i}\"");
        }
        crate::host::SessionFile::from_bytes("t.jsonl".into(), text.into_bytes())
    }

    /// On Claude Code too, a path written relative to the session's `cwd` and the same path
    /// written absolute (or with `.` and `..`) are one file.
    #[test]
    fn two_spellings_of_one_path_are_one_file_on_claude_code() {
        let file = claude_transcript(
            "/w",
            &[
                ("Read", r#"{"file_path":"./src/a.rs"}"#),  // edited below, written absolute
                ("Read", r#"{"file_path":"/w/src/b.rs"}"#), // written below, relative
                ("Read", r#"{"file_path":"/w/c.rs"}"#),     // read below as src/../c.rs
                ("Read", r#"{"file_path":"d.rs"}"#),        // /d.rs below: another file
                ("Edit", r#"{"file_path":"/w/src/a.rs","old_string":"x","new_string":"y"}"#),
                ("Write", r#"{"file_path":"src/b.rs","content":"z"}"#),
                ("Read", r#"{"file_path":"src/../c.rs"}"#),
                ("Read", r#"{"file_path":"/d.rs"}"#),
                ("Read", r#"{"file_path":"./src/b.rs"}"#), // after the Write of b: it is stale
            ],
        );
        assert_eq!(stale_ids(&file), ["r0", "r1", "r2"]);
        let s = crate::hosts::load(&file, None).unwrap();
        let v = View::at(&s, s.default_leaf()).unwrap();
        let changed = stale_changes(&v).into_iter().enumerate().filter(|(_, c)| *c);
        let changed: Vec<&str> = changed.map(|(p, _)| s.entries[v.context[p]].id()).collect();
        assert_eq!(changed, ["r5"]);
    }

    #[test]
    fn accesses_are_read_from_each_hosts_arguments() {
        let (a, b, c) =
            (raw(r#"{"path":"x.rs"}"#), raw(r#"{"file_path":"/x.rs","offset":10}"#), raw(r#"{"path":"x"}"#));
        assert_eq!(access(&tool("read", &a), None), Some(Access::ReadAll("x.rs".into())));
        assert_eq!(access(&tool("read", &a), Some("/w")), Some(Access::ReadAll("/w/x.rs".into())));
        assert_eq!(access(&tool("Read", &b), Some("/w")), Some(Access::ReadPart("/x.rs".into(), "10".into())));
        assert_eq!(access(&tool("Edit", &b), None), Some(Access::Change("/x.rs".into())));
        assert_eq!(access(&tool("bash", &c), None), None);
    }
}

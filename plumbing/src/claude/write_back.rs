//! Writing a fold or an undo of a Claude Code transcript from the engine's edits: the folded
//! results (Claude Code's `<persisted-output>` placeholders) and the folded tool inputs (a call's
//! `input` spliced, its id and name kept), as a fork, in place, or back (`super::fork`,
//! `super::in_place`).

use std::borrow::Cow;
use std::path::Path;

use serde_json::value::RawValue;

use super::fork::Input;
use super::host::{parse_content, ClaudeSession};
use super::write;
use crate::host::error::{HostError, Result};
use crate::host::{self, BlockKind, ForkWrite};

/// Writes a fold or an undo of `host`'s transcript ([`crate::host::HostSession::write_fork`]):
/// each `(target, content)` of `edits` is a tool result's new content (target: its
/// `tool_use_id`) or an assistant row's new message content whose calls' inputs differ (target:
/// the row's uuid).
pub(super) fn write_fork<'a>(
    host: &ClaudeSession<'a>,
    session: &host::Session<'a>,
    edits: &[(String, &RawValue)],
    how: ForkWrite,
) -> Result<host::Forked> {
    let source = &session.file.path;
    let shown = session.file.display();
    let sid = host.t.session_id().ok_or_else(|| HostError::refused(format!("{shown}: no row names a sessionId")))?;
    let texts = super::fork::Results::new(&host.t);
    // The new contents as JSON strings, borrowed from the edits where they are written as
    // shake writes a text (an undo's originals: held once, not again decoded).
    let mut contents = write::Replace::default();
    // The calls whose inputs change, and the results to fold.
    let mut inputs: Vec<Input> = Vec::new();
    let mut targets: Vec<String> = Vec::new();
    // The notes the plan's placeholders carry (a superseded read's), by saved file.
    let mut notes = std::collections::HashMap::new();
    for (target, content) in edits {
        let Some(text) = texts.text(target) else {
            let changed = changed_inputs(host, source, sid, (target, content), how.is_fold())
                .map_err(|why| HostError::refused(format!("{shown}: {why}")))?;
            contents.inputs.extend(changed.iter().map(|i| (i.call.clone(), Cow::Owned(i.new.clone()))));
            inputs.extend(changed);
            continue;
        };
        targets.push(target.clone());
        let new = serde_json::from_str::<String>(content.get())
            .map_err(|_| HostError::refused(format!("{shown}: the new content of {target} is not a string")))?;
        // A fold writes Claude Code's placeholder: it must be what the plan counted.
        let saved = super::fork::saved_path(source, sid, target);
        let note = write::note_of(&new);
        if how.is_fold() && new != write::noted_placeholder(&text, &saved, note) {
            return Err(HostError::refused(format!("{shown}: the planned placeholder of {target} is not the fork's")));
        }
        if let Some(note) = note.filter(|_| how.is_fold()) {
            notes.insert(saved, note.to_string());
        }
        let json = crate::js::json::js_string(&new);
        let json = if json == content.get() { Cow::Borrowed(content.get()) } else { json.into() };
        contents.results.insert(target.clone(), json);
    }
    let cwd = host.t.cwd().map(str::to_string);
    let fail = |e: super::fork::ForkError| match e {
        super::fork::ForkError::File(e) => HostError::from(e),
        e => HostError::refused(e.to_string()),
    };
    let forked = |f: super::fork::Forked, in_place| host::Forked {
        session_id: f.session_id,
        path: f.path,
        cwd: cwd.clone(),
        saved: f.folded,
        reused: false,
        in_place,
        carried: f.carried,
    };
    let noted = |text: &str, saved: &std::path::Path| {
        write::noted_placeholder(text, saved, notes.get(saved).map(String::as_str))
    };
    match how {
        ForkWrite::Fold => {
            let id = super::fork::new_session_id();
            let f = super::fork::fork(&host.t, source, (&targets, &inputs), &id, noted).map_err(fail)?;
            return Ok(forked(f, false));
        }
        ForkWrite::FoldInPlace => {
            let f = super::fork::fold_in_place(&host.t, source, (&targets, &inputs), noted, |_| {}).map_err(fail)?;
            return Ok(forked(f, true));
        }
        ForkWrite::RestoreInPlace(exact) => {
            // The new bytes are streamed to the temporary file, hashed on the way: the
            // rewrite is abandoned (the file left as it is) when they are not the fold's.
            let mismatch = std::cell::Cell::new(false);
            let write = |out: &mut dyn std::io::Write| {
                let Some(exact) = exact else {
                    return super::in_place::write_replaced(&host.t, source, &contents, out);
                };
                let mut hashed = super::fork::PrefixHash { out, left: exact.len, hasher: blake3::Hasher::new() };
                super::in_place::write_replaced(&host.t, source, &contents, &mut hashed)?;
                if hashed.left > 0 || *hashed.hasher.finalize().as_bytes() != exact.hash {
                    mismatch.set(true);
                    return Err(super::fork::ForkError::Rewritten(shown.to_string()));
                }
                Ok(())
            };
            let carried = super::in_place::rewrite(&host.t, source, write, |_| {});
            if let (true, Some(exact)) = (mismatch.get(), exact) {
                return Err(HostError::refused(format!(
                    "{shown}: putting the saved originals back would not give the bytes the fold read (blake3 {}, {} bytes); nothing was written",
                    blake3::Hash::from(exact.hash).to_hex(),
                    exact.len
                ))
                .hint("`shake sessions --versions` lists every version imported; `shake restore --version N` brings one back byte for byte"));
            }
            let carried = carried.map_err(fail)?;
            let f = super::fork::Forked {
                session_id: sid.to_string(),
                path: source.to_path_buf(),
                folded: Vec::new(),
                carried,
            };
            return Ok(forked(f, true));
        }
        ForkWrite::Restore => {}
    }
    // The same undo of the same bytes is the same session: written once.
    let mut key = blake3::Hasher::new();
    key.update(b"shake undo\0").update(host.t.file.raw());
    let mut restored: Vec<&String> = contents.results.keys().collect();
    restored.sort();
    let mut calls: Vec<&String> = contents.inputs.keys().collect();
    calls.sort();
    for t in restored {
        key.update(t.as_bytes()).update(b"\0");
    }
    // Inputs after the results, marked (a call's id is also its result's).
    for call in calls {
        key.update(b"input\0").update(call.as_bytes()).update(b"\0");
    }
    let id = super::fork::session_id_from(key.finalize().as_bytes());
    let (path, reused) = super::fork::restore(&host.t, source, &contents, &id).map_err(fail)?;
    let f = super::fork::Forked { session_id: id, path, folded: Vec::new(), carried: 0 };
    Ok(host::Forked { reused, ..forked(f, false) })
}

/// The calls of assistant row `target` whose input `content` (the row's new message content)
/// changes, each with its input as written and the new one. A fold's new input must be the
/// written one with big strings turned into the placeholder naming its saved file, and the new
/// content may change nothing else; an undo's is the saved input put back. The error says why not.
fn changed_inputs(
    host: &ClaudeSession<'_>,
    source: &Path,
    sid: &str,
    (target, content): (&str, &RawValue),
    fold: bool,
) -> std::result::Result<Vec<Input>, String> {
    let t = &host.t;
    // The loader takes the later of two rows with one uuid.
    let row = t.rows.iter().rev().find(|r| r.kind() == "assistant" && r.uuid() == Some(target));
    let Some(row) = row else { return Err(format!("no text tool_result or assistant row {target}")) };
    let line = t.text(row);
    let new_calls = parse_content(Some(content));
    let new_input = |id: &str| {
        new_calls.blocks().iter().find_map(|b| match &b.kind {
            BlockKind::ToolCall { id: Some(i), arguments, .. } if i == id => Some(*arguments),
            _ => None,
        })
    };
    let mut out = Vec::new();
    let mut spliced = String::new();
    let old_content = row.message_in(line).and_then(|m| crate::js::json::members(m, &["content"])?[0]);
    let Some(old_content) = old_content else { return Err(format!("assistant row {target} has no content")) };
    let base = old_content.get().as_ptr() as usize - line.as_ptr() as usize;
    let mut at = base;
    for (call, span) in write::input_spans(line) {
        let original = &line[span.clone()];
        let Some(Some(new)) = new_input(&call) else {
            return Err(format!("the new content of {target} has no input for its call {call}"));
        };
        if new.get() == original {
            continue;
        }
        let saved = super::fork::saved_input_path(source, sid, &call);
        if fold && write::is_folded_input(new, original, &saved) != Some(true) {
            return Err(format!("the planned input of call {call} in {target} is not the fork's"));
        }
        spliced.push_str(&line[at..span.start]);
        spliced.push_str(new.get());
        at = span.end;
        out.push(Input { call, row: target.to_string(), original: original.to_string(), new: new.get().to_string() });
    }
    spliced.push_str(&line[at..base + old_content.get().len()]);
    // Nothing but the inputs may change (the fork splices them alone).
    let same = |a: &str, b: &str| serde_json::from_str::<serde_json::Value>(a).ok() == serde_json::from_str(b).ok();
    if !same(&spliced, content.get()) {
        return Err(format!("the new content of {target} changes more than its calls' inputs"));
    }
    Ok(out)
}

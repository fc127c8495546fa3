//! pi's `/fork` (`createBranchedSession`): one leaf's root→leaf path as a new pi session file,
//! re-chained without labels, then one label per resolved label, so folds travel with it.
//! Entries whose bytes do not change are borrowed from the source, not copied.

use std::borrow::Cow;

use serde_json::value::RawValue;

use super::entry::{as_str, is_truthy, EntryType};
use super::write::EntryWriter;
use super::{ids, paths, Session};
use crate::host::error::{HostError, Result};
use crate::host::{self, Export};
use crate::js::json::js_string as string;
use crate::js::json::{raw, raw_string, RawObject};
use crate::Context;

/// Exports the path to `leaf` as pi's `/fork` writes it, for a new file in pi's session folder
/// of the session's cwd.
pub fn export<'a>(ctx: &Context, session: &host::Session<'a>, pi: &Session<'a>, leaf: usize) -> Result<Export<'a>> {
    let file = session.file;
    if pi.needs_migration() {
        return Err(HostError::refused(format!(
            "{}: a v{} session has no stable entry ids",
            file.display(),
            pi.version()
        ))
        .hint("open it in pi once (pi migrates it to v3), then export"));
    }
    let path = session.path(leaf).map_err(|c| HostError::refused(format!("{}: {c}", file.display())))?;
    let millis = ids::now_millis();
    let session_id = ids::uuid_v7(millis);
    let source = std::fs::canonicalize(&file.path).unwrap_or_else(|_| file.path.clone());
    let cwd = session.header.as_ref().and_then(|h| h.cwd.as_deref()).map(str::to_string);
    let mut lines =
        vec![Cow::Owned(header_line(&session_id, millis, cwd.as_deref(), &source.to_string_lossy()).into_bytes())];
    lines.extend(branch_lines(session, pi, &path));
    let entries = lines.len() - 1;
    let dir = match &cwd {
        Some(c) => paths::sessions_root(ctx).join(paths::encode_cwd(std::path::Path::new(c))),
        None => paths::session_dir_for_cwd(ctx).0,
    };
    let path = dir.join(format!("{}_{session_id}.jsonl", ids::iso(millis).replace([':', '.'], "-")));
    Ok(Export { lines, session_id, entries, path, parent: source })
}

fn header_line(id: &str, millis: u64, cwd: Option<&str>, parent: &str) -> String {
    let cwd = cwd.map_or("null".to_string(), string);
    format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":{},\"timestamp\":{},\"cwd\":{cwd},\"parentSession\":{}}}",
        string(id),
        string(&ids::iso(millis)),
        string(parent)
    )
}

/// The path without labels, re-chained, then one label per resolved label on the path.
fn branch_lines<'a>(session: &host::Session<'a>, pi: &Session<'a>, path: &[usize]) -> Vec<Cow<'a, [u8]>> {
    let mut lines = Vec::new();
    let mut kept_ids: Vec<&str> = Vec::new();
    let mut pending_labels: Vec<&str> = Vec::new();
    let mut label_to_next: Vec<(&str, &str)> = Vec::new();
    let mut parent: Option<String> = None;
    for &i in path {
        let (e, node) = (&pi.entries[i], &session.entries[i]);
        if e.kind == EntryType::Label {
            pending_labels.push(node.id());
            continue;
        }
        label_to_next.extend(pending_labels.drain(..).map(|l| (l, node.id())));
        let first_kept = (e.kind == EntryType::Compaction)
            .then(|| pi.first_kept_entry_id(i))
            .flatten()
            .filter(|k| k != node.id())
            .and_then(|k| label_to_next.iter().find(|(l, _)| *l == k).map(|(_, n)| n.to_string()));
        lines.push(rechained(node, parent.as_deref(), first_kept.as_deref()));
        kept_ids.push(node.id());
        parent = Some(node.id().to_string());
    }
    let mut writer = EntryWriter::new(session);
    for (target, label, timestamp) in resolved_labels(pi) {
        if !kept_ids.contains(&target.as_str()) {
            continue;
        }
        let id = writer.fresh_id(session);
        let parent_json = parent.as_deref().map_or("null".to_string(), string);
        let mut line = format!("{{\"type\":\"label\",\"id\":{},\"parentId\":{parent_json}", string(&id));
        if let Some(ts) = timestamp {
            line.push_str(&format!(",\"timestamp\":{}", ts.get()));
        }
        line.push_str(&format!(",\"targetId\":{},\"label\":{}}}", string(&target), label.get()));
        lines.push(Cow::Owned(line.into_bytes()));
        parent = Some(id);
    }
    lines
}

/// The entry's line with a new parent (and compaction boundary): its own bytes when unchanged
/// (borrowed; a line that is not UTF-8 is written with its lossy text, as ever).
fn rechained<'a>(e: &host::Node<'a>, parent: Option<&str>, first_kept: Option<&str>) -> Cow<'a, [u8]> {
    let text = String::from_utf8_lossy(e.raw());
    let kept = |text: Cow<'a, str>| match text {
        Cow::Borrowed(s) => Cow::Borrowed(s.as_bytes()),
        Cow::Owned(s) => Cow::Owned(s.into_bytes()),
    };
    if e.parent_id() == parent && first_kept.is_none() {
        return kept(text);
    }
    let Some(mut object) = RawObject::parse(&text) else { return kept(text) };
    object.set("parentId", parent.map_or_else(|| raw("null".into()), raw_string));
    if let Some(k) = first_kept {
        object.set("firstKeptEntryId", raw_string(k));
    }
    Cow::Owned(object.to_json().into_bytes())
}

/// pi's `labelsById` after loading: every label entry in file order; a falsy label clears.
fn resolved_labels<'a>(session: &Session<'a>) -> Vec<(String, &'a RawValue, Option<&'a RawValue>)> {
    let mut labels: Vec<(String, &'a RawValue, Option<&'a RawValue>)> = Vec::new();
    for e in session.entries.iter().filter(|e| e.kind == EntryType::Label) {
        let Some(target) = as_str(e.fields.target_id()).map(|t| t.into_owned()) else { continue };
        let position = labels.iter().position(|(t, _, _)| *t == target);
        match (e.fields.label().filter(|l| is_truthy(Some(l))), position) {
            (Some(label), Some(p)) => labels[p] = (target, label, e.fields.timestamp()),
            (Some(label), None) => labels.push((target, label, e.fields.timestamp())),
            (None, Some(p)) => {
                labels.remove(p);
            }
            (None, None) => {}
        }
    }
    labels
}

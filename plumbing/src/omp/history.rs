//! What changed between two versions of an OMP file: which entries OMP's rewrite (`/shake`,
//! pruning) changed, which it shook, and how many tokens left the context, counted as OMP counts.
//!
//! Entries are matched by id; the title slot is compared only as a title (OMP overwrites it in
//! place, so its bytes say nothing).

use std::collections::HashMap;

use serde_json::Value;

use super::file::{message, OmpFile};
use super::shake::entry_tokens;
use super::tokenizer::OmpTokenizer;
use crate::host::own::{Change, ChangeKind, Rewrite};

/// Compares two versions of one OMP file, counting with `tok`.
pub fn compare(old: &OmpFile, new: &OmpFile, tok: &OmpTokenizer) -> Rewrite {
    let by_id = |f: &'_ OmpFile| -> HashMap<String, usize> {
        f.entries.iter().enumerate().filter_map(|(i, e)| Some((e.id()?.to_string(), i))).collect()
    };
    let (old_ids, new_ids) = (by_id(old), by_id(new));
    let mut changes = Vec::new();
    for (i, e) in new.entries.iter().enumerate() {
        let Some(id) = e.id() else { continue };
        if new_ids.get(id) != Some(&i) {
            continue; // a repeated id: the later entry speaks for it
        }
        let before = old_ids.get(id).map(|&j| &old.entries[j]);
        if before.is_some_and(|b| old.line_bytes(b) == new.line_bytes(e)) {
            continue;
        }
        let (e_value, before_value) = (new.value(e), before.map(|b| old.value(b)));
        let kind = match &before_value {
            None => ChangeKind::Added,
            Some(b) if shaken(b, &e_value) => ChangeKind::Shaken,
            Some(_) => ChangeKind::Edited,
        };
        changes.push(Change {
            id: id.to_string(),
            kind,
            old_line: before.map(|b| b.line),
            new_line: Some(e.line),
            tokens_before: before.map_or(0, |b| entry_tokens(old.raw(b), tok)),
            tokens_after: entry_tokens(new.raw(e), tok),
            placeholders: match (kind, &before_value) {
                (ChangeKind::Shaken, Some(b)) => placeholders(b, &e_value),
                _ => Vec::new(),
            },
        });
    }
    for e in &old.entries {
        let Some(id) = e.id() else { continue };
        if !new_ids.contains_key(id) && old_ids.get(id).map(|&j| old.entries[j].line) == Some(e.line) {
            let tokens_before = entry_tokens(old.raw(e), tok);
            changes.push(Change {
                id: id.to_string(),
                kind: ChangeKind::Removed,
                old_line: Some(e.line),
                new_line: None,
                tokens_before,
                tokens_after: 0,
                placeholders: Vec::new(),
            });
        }
    }
    let appended = new.body().starts_with(old.body());
    let title_changed = old.title.as_ref().map(|t| &t.title) != new.title.as_ref().map(|t| &t.title);
    Rewrite { appended, title_changed, changes }
}

/// Whether `after` is `before` shaken (entries' values): newly `prunedAt`, or a new `[shaken ~`
/// placeholder.
fn shaken(before: &Entry, after: &Entry) -> bool {
    (pruned(after) && !pruned(before)) || marks(after).len() > marks(before).len()
}

/// An entry's parsed value.
type Entry = serde_json::Map<String, Value>;

fn pruned(e: &Entry) -> bool {
    message(e).is_some_and(|m| m.contains_key("prunedAt"))
}

/// The placeholders OMP put into `after`: its `[shaken ~…]` marks not in `before` (as many times
/// as they are new), else, for a result newly pruned, its text.
fn placeholders(before: &Entry, after: &Entry) -> Vec<String> {
    let mut old = marks(before);
    let mut new = Vec::new();
    for mark in marks(after) {
        match old.iter().position(|m| *m == mark) {
            Some(i) => {
                old.swap_remove(i);
            }
            None => new.push(mark),
        }
    }
    if new.is_empty() && pruned(after) && !pruned(before) {
        let content = message(after).and_then(|m| m.get("content"));
        let texts = content.and_then(Value::as_array).into_iter().flatten().filter_map(|b| b.get("text")?.as_str());
        new.push(texts.collect());
    }
    new
}

/// Every `[shaken ~…]` placeholder in the entry's strings, in order.
fn marks(e: &Entry) -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => {
                let mut rest = s.as_str();
                while let Some(start) = rest.find("[shaken ~") {
                    let tail = &rest[start..];
                    let end = tail.find(']').map_or(tail.len(), |i| i + 1);
                    out.push(tail[..end].to_string());
                    rest = &tail[end..];
                }
            }
            Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
            Value::Object(map) => map.values().for_each(|i| walk(i, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for v in e.values() {
        walk(v, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::omp::generate::{generate, Options};
    use crate::omp::shake::{self, AGGRESSIVE};
    use crate::omp::{reading, OmpFile};

    #[test]
    fn a_simulated_shake_is_seen_as_one() {
        let opts = Options {
            seed: 5,
            limit: crate::pi::generate::Limit::Entries(200),
            model: "openai/gpt-5.1-codex".into(),
            title: "t".into(),
        };
        let old = OmpFile::parse("s.jsonl".into(), generate(&opts)).unwrap();
        let tok = OmpTokenizer::new(None, false);
        let got = reading(&old, &AGGRESSIVE, None, tok);
        let (bytes, freed) = shake::rewrite(&old, &got.regions, Some(3), 1);
        let new = OmpFile::parse("s.jsonl".into(), bytes).unwrap();
        let diff = compare(&old, &new, &tok);
        assert!(!diff.appended && !diff.title_changed);
        let shaken_entries: std::collections::HashSet<&str> = got.regions.iter().map(|r| r.entry_id.as_str()).collect();
        assert_eq!(diff.shaken(), shaken_entries.len());
        assert!(diff.changes.iter().all(|c| c.kind == ChangeKind::Shaken), "{:?}", diff.changes);
        // Each region's placeholder is named on its entry.
        let named: usize = diff.changes.iter().map(|c| c.placeholders.len()).sum();
        assert_eq!(named, got.regions.len());
        assert!(diff
            .changes
            .iter()
            .flat_map(|c| &c.placeholders)
            .all(|p| p.starts_with("[shaken ~") && p.ends_with(")]")));
        // What left equals the regions minus their placeholders, as /shake reports it (blocks
        // and results alike are whole entries' text here).
        assert!(diff.tokens_removed().abs_diff(freed) * 100 <= freed, "{} vs {freed}", diff.tokens_removed());
        // Unchanged and appended versions.
        assert!(compare(&old, &old, &tok).changes.is_empty());
        let mut longer = old.bytes.to_vec();
        longer.extend_from_slice(b"{\"type\":\"custom\",\"id\":\"zz\",\"parentId\":null}\n");
        let longer = OmpFile::parse("s.jsonl".into(), longer).unwrap();
        let d = compare(&old, &longer, &tok);
        assert!(d.appended);
        assert_eq!(d.changes.iter().map(|c| (c.id.as_str(), c.kind)).collect::<Vec<_>>(), [("zz", ChangeKind::Added)]);
    }
}

//! `shake show`: a shake log entry (the operation and each target with its placeholder), any
//! other entry (raw line and projected content), or a leaf (the projected context as a table).

use std::io::Write;

use serde_json::{json, Value};
use shake_plumbing::host::{Projected, Session, View};
use shake_plumbing::output::quote;
use shake_plumbing::regions::RegionKind;
use shake_plumbing::rev::resolve_entry;
use shake_plumbing::tokens::cache::open_tokenizer;
use shake_plumbing::tokens::{context_tokens, Tokenizer};
use shake_plumbing::{Context, Result};

use crate::log::describe;
use crate::log_entry::{self, LogData};
use crate::render::{thousands, Paint, ReadArgs};
use crate::wall::Wall;

/// Show a shake log entry, any other entry, or the projected context at a leaf
#[derive(clap::Args, Debug)]
pub struct ShowArgs {
    #[command(flatten)]
    pub read: ReadArgs,
}

/// Runs `shake show`.
pub fn run(ctx: &Context, args: &ShowArgs, out: &mut dyn Write) -> Result {
    let (file, rev) = args.read.rev.load(ctx)?;
    let (session, leaf) = rev.open(ctx, &file)?;
    let tok = open_tokenizer(ctx, args.read.tokenizer, &session, leaf)?;
    let named = match (&args.read.rev.leaf, &rev.entry) {
        (None, Some(prefix)) => Some(resolve_entry(&session, prefix)?),
        _ => None,
    };
    if !args.read.json {
        crate::render::write_session_line(out, ctx, &rev, &file.path)?;
    }
    let log = named.and_then(|i| log_entry::parse(&session, i).map(|d| (i, d)));
    let value = match (log, named) {
        (Some((i, data)), _) => show_log(&session, i, &data, args.read.json, out)?,
        (None, Some(i)) if !session.leaves().contains(&i) => show_entry(&session, i, args.read.json, out)?,
        _ => show_leaf(&View::at(&session, leaf)?, &tok, args.read.json, Paint::new(ctx), out)?,
    };
    if let Some(v) = value {
        shake_plumbing::output::write_json(out, &v)?;
    }
    Ok(0)
}

fn show_log(session: &Session<'_>, i: usize, d: &LogData, json: bool, out: &mut dyn Write) -> Result<Option<Value>> {
    let e = &session.entries[i];
    let written = |id: &str| session.index_of(id).is_some_and(|x| session.is_edit(x));
    if json {
        let targets: Vec<Value> = d
            .targets
            .iter()
            .map(|t| {
                json!({"id": t.id, "kind": t.kind, "label": t.label, "tokens": t.tokens, "edit": t.edit,
                "written": written(&t.edit), "placeholder": t.placeholder()})
            })
            .collect();
        return Ok(Some(json!({"id": e.id(), "line": e.line(), "op": d.op, "scope": d.scope, "profile": d.profile,
            "tokenizer": d.tokenizer, "tokens": d.tokens, "targets": targets, "repairs": d.repairs})));
    }
    writeln!(out, "shake log entry {} (line {}): {}", e.id(), e.line(), describe(d))?;
    for t in &d.targets {
        let shown = t.placeholder().unwrap_or_else(|| format!("{} ~{} tokens", t.label, thousands(t.tokens)));
        let missing = if written(&t.edit) { "" } else { "  (edit not written)" };
        writeln!(out, "  {}  {:<10} {shown}  edit {}{missing}", t.id, t.kind, t.edit)?;
    }
    Ok(None)
}

fn show_entry(session: &Session<'_>, i: usize, json: bool, out: &mut dyn Write) -> Result<Option<Value>> {
    let e = &session.entries[i];
    let projection = View::at(session, session.default_leaf())?;
    let pos = projection.context.iter().position(|&c| c == i);
    let projected: Option<Vec<Value>> = pos.map(|p| projection.messages_json(p));
    let raw = String::from_utf8_lossy(e.raw());
    if json {
        let raw_value: Value = serde_json::from_slice(e.raw()).unwrap_or(Value::Null);
        return Ok(Some(json!({"id": e.id(), "line": e.line(), "type": e.kind(), "raw": raw_value,
            "leafId": projection.leaf.map(|l| session.entries[l].id().to_string()), "projected": projected})));
    }
    writeln!(out, "entry {} (line {}, {})", e.id(), e.line(), e.kind())?;
    writeln!(out, "raw:\n{raw}")?;
    let leaf = projection.leaf.map_or("-".to_string(), |l| session.entries[l].id().to_string());
    match projected {
        None => writeln!(
            out,
            "projected at {leaf}: not in the context (other branch, or before a compaction's kept range)"
        )?,
        Some(messages) => {
            writeln!(out, "projected at {leaf}:")?;
            for m in messages {
                writeln!(out, "{}", serde_json::to_string(&m.get("content").unwrap_or(&m)).unwrap_or_default())?;
            }
        }
    }
    Ok(None)
}

fn show_leaf(
    projection: &View<'_, '_>,
    tok: &Tokenizer,
    json: bool,
    paint: Paint,
    out: &mut dyn Write,
) -> Result<Option<Value>> {
    let session = projection.session;
    let wall = Wall::at(projection);
    let tokens = context_tokens(projection, tok);
    let mut rows = Vec::new();
    for (pos, &i) in projection.context.iter().enumerate() {
        let e = &session.entries[i];
        let items = wall.items_of(e.id());
        let count = |k| items.iter().filter(|it| it.kind == k).count();
        let folded = crate::render::region_counts(count, &RegionKind::ALL);
        let state = match projection.projected(i) {
            _ if !folded.is_empty() => format!("folded: {folded}"),
            Projected::Omitted => "omitted (null edit)".to_string(),
            Projected::Replaced(_) => "edited by another tool".to_string(),
            Projected::Raw => String::new(),
        };
        rows.push((e.id().to_string(), e.kind().to_string(), session.role_label(i), tokens[pos], state));
    }
    let leaf = projection.leaf.map(|l| session.entries[l].id().to_string());
    if json {
        let entries: Vec<Value> = rows
            .iter()
            .map(|(id, kind, role, tokens, state)| json!({"id": id, "type": kind, "role": role, "tokens": tokens, "state": state}))
            .collect();
        return Ok(Some(json!({"leafId": leaf, "tokenizer": tok.name.as_str(), "entries": entries})));
    }
    let total: u64 = rows.iter().map(|r| r.3).sum();
    let head = format!(
        "Context at {}: {} entries, ~{} tokens ({}).",
        leaf.as_deref().unwrap_or("-"),
        rows.len(),
        thousands(total),
        tok.name
    );
    writeln!(out, "{}", paint.strong(&head))?;
    // Widths from the cells: a Claude Code uuid is 36 characters, a pi id 8.
    let cells: Vec<Vec<String>> = rows
        .iter()
        .enumerate()
        .map(|(n, (id, kind, role, tokens, state))| {
            vec![n.to_string(), quote(id).into_owned(), kind.clone(), role.clone(), thousands(*tokens), state.clone()]
        })
        .collect();
    shake_plumbing::output::table(out, &["#", "id", "type", "role", "tokens", "folded"], &cells, &[4])?;
    Ok(None)
}

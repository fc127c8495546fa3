//! `shake log`: the fold and undo operations on a branch (or in the whole file), newest first;
//! on an oh-my-pi session, the versions OMP rewrote (`crate::host_history`).

use std::collections::HashSet;
use std::io::Write;

use serde_json::{json, Value};
use shake_plumbing::host::{Session, View};
use shake_plumbing::regions::RegionKind;
use shake_plumbing::rev::RevArgs;
use shake_plumbing::{Context, Result};

use crate::log_entry::{self, LogData};
use crate::render::{plural, thousands, Paint};

/// Show the fold and undo operations on a branch, newest first (an oh-my-pi session: OMP's rewrites)
#[derive(clap::Args, Debug)]
pub struct LogArgs {
    #[command(flatten)]
    pub rev: RevArgs,
    /// Every branch of the session, not just the one ending at the leaf
    #[arg(long)]
    pub all: bool,
    /// Print JSON: an array of log entries, newest first
    #[arg(long)]
    pub json: bool,
}

/// Runs `shake log`.
pub fn run(ctx: &Context, args: &LogArgs, out: &mut dyn Write) -> Result {
    // A host that rewrites its files itself (oh-my-pi): its log is the file's rewrites, from the
    // store (shake never writes such a file but to restore a version).
    let path = args.rev.rev().session_path(ctx).ok();
    let host = path.and_then(|p| shake_plumbing::hosts::of_head(&p, ctx.host, |h| h.history().is_some()));
    if let Some(host) = host {
        return crate::host_history::log(ctx, &args.rev, host, args.json, out);
    }
    let (file, rev) = args.rev.load(ctx)?;
    let (session, leaf) = rev.open(ctx, &file)?;
    let projection = View::at(&session, leaf)?;
    let on_path: HashSet<usize> = projection.path.iter().copied().collect();
    let scan: Vec<usize> = if args.all { (0..session.entries.len()).collect() } else { projection.path.clone() };
    // Newest first, then those of a host that keeps the records in the store (Claude Code's
    // forks), newest first as well. Each log is read, told and let go in turn: a long session's
    // folds are not all held at once.
    // A log entry in the file was written when its entry was; a record in the store says when it
    // was made (one of an older shake does not: its row's time stands in).
    let stored = log_entry::stored_at(&session);
    let when = |i: usize, at: Option<&str>| at.map(str::to_string).or_else(|| Some(session.timestamp(i)?.into_owned()));
    let mut logs = scan
        .into_iter()
        .rev()
        .filter_map(|i| log_entry::parse(&session, i).map(|d| (i, d, when(i, None))))
        .chain(stored.into_iter().rev().map(|(i, d, at)| (i, d, when(i, at))))
        .peekable();
    if args.json {
        let items: Vec<Value> =
            logs.map(|(i, d, time)| to_json(&session, i, &d, time.as_deref(), on_path.contains(&i))).collect();
        shake_plumbing::output::write_json(out, &items)?;
        return Ok(0);
    }
    let paint = Paint::new(ctx);
    crate::render::write_session_line(out, ctx, &rev, &file.path)?;
    if logs.peek().is_none() {
        writeln!(out, "No folds or undos {}.", if args.all { "in this session" } else { "on this branch" })?;
    }
    for (i, d, time) in logs {
        let e = &session.entries[i];
        let time = time.unwrap_or_default();
        let off = if on_path.contains(&i) { "" } else { "  (other branch)" };
        writeln!(out, "{} {}  {}{off}", paint.dim(&time), e.id(), describe(&d))?;
    }
    Ok(0)
}

/// One operation in words: `fold elide/default: 43 tool results + 1 block, ~27,838 tokens (pi)`.
pub fn describe(d: &LogData) -> String {
    let what = match d.op.as_str() {
        "undo" => match &d.undoes {
            Some(log) => format!("restored {} folded by {log}", plural(d.targets.len(), "entry")),
            None => format!("restored {}", plural(d.targets.len(), "entry")),
        },
        _ => {
            let c = crate::render::region_counts(|k| d.count(k), &RegionKind::ALL);
            if c.is_empty() {
                "nothing new (repair)".to_string()
            } else {
                c
            }
        }
    };
    let how = match (&d.scope, &d.profile) {
        (Some(s), Some(p)) if s == "elide" => format!(" {s}/{p}"),
        (Some(s), _) => format!(" {s}"),
        _ => String::new(),
    };
    format!("{}{how}: {what}, ~{} tokens ({})", d.op, thousands(d.tokens), d.tokenizer)
}

fn to_json(session: &Session<'_>, index: usize, d: &LogData, time: Option<&str>, on_path: bool) -> Value {
    let e = &session.entries[index];
    json!({
        "id": e.id(),
        "line": e.line(),
        "timestamp": time,
        "op": d.op,
        "scope": d.scope,
        "profile": d.profile,
        "tokenizer": d.tokenizer,
        "toolResults": d.count(RegionKind::ToolResult) + d.count(RegionKind::SupersededRead),
        "supersededReads": d.count(RegionKind::SupersededRead),
        "blocks": d.count(RegionKind::Block),
        "thinking": d.count(RegionKind::Thinking),
        "images": d.count(RegionKind::Image),
        "toolInputs": d.count(RegionKind::ToolInput),
        "entries": d.edit_ids().len(),
        "tokens": d.tokens,
        "onPath": on_path,
    })
}

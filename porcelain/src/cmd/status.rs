//! `shake status`: the wall at a leaf (what is folded now, by scope and kind, and what it frees),
//! folds stranded on abandoned branches, and half-written batches.

use std::io::Write;

use serde_json::json;
use shake_plumbing::host::{View, Writer};
use shake_plumbing::regions::RegionKind;
use shake_plumbing::tokens::cache::open_tokenizer;
use shake_plumbing::{Context, Result};

use crate::batch::torn_last_line;
use crate::render::{counts, plural, thousands, Paint, ReadArgs};
use crate::rewind::stranded;
use crate::undo::undo_plan;

/// Show what is folded at a leaf, what it frees, and folds stranded on abandoned branches
#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    #[command(flatten)]
    pub read: ReadArgs,
}

/// Runs `shake status`.
pub fn run(ctx: &Context, args: &StatusArgs, out: &mut dyn Write) -> Result {
    let (file, rev) = args.read.rev.load(ctx)?;
    let (session, leaf) = rev.open(ctx, &file)?;
    let projection = View::at(&session, leaf)?;
    let tok = open_tokenizer(ctx, args.read.tokenizer, &session, leaf)?;
    let wall = crate::overlay::wall_at(ctx, &session, &projection);
    let freed = undo_plan(&projection, &wall, &tok).tokens_restored;
    let stranded = stranded(&session, &projection);
    let torn_line = torn_last_line(&file);
    let count = |k| wall.items.iter().filter(|it| it.kind == k).count();
    let by_kind: serde_json::Map<String, serde_json::Value> =
        RegionKind::ALL.iter().map(|&k| (k.as_str().to_string(), count(k).into())).collect();
    let leaf = projection.leaf.map(|l| session.entries[l].id().to_string());
    if args.read.json {
        let targets: Vec<_> = wall
            .items
            .iter()
            .map(|it| {
                json!({"id": it.target, "kind": it.kind.as_str(), "label": it.label, "tokens": it.tokens,
                "placeholder": it.placeholder(), "log": it.log})
            })
            .collect();
        let value = json!({
            "leafId": leaf,
            "tokenizer": tok.name.as_str(),
            "entries": wall.targets().len(),
            "regions": wall.items.len(),
            "tokensFreed": freed,
            "byKind": by_kind,
            "targets": targets,
            "superseded": wall.superseded,
            "stranded": stranded.iter().map(|s| json!({"log": s.log, "regions": s.regions, "leaves": s.leaves, "byShake": s.by_shake})).collect::<Vec<_>>(),
            "halfWritten": wall.torn.iter().map(|t| json!({"log": t.log, "line": t.line, "listed": t.listed, "written": t.written})).collect::<Vec<_>>(),
            "tornLastLine": torn_line,
        });
        shake_plumbing::output::write_json(out, &value)?;
        return Ok(0);
    }
    let paint = Paint::new(ctx);
    crate::render::write_session_line(out, ctx, &rev, &file.path)?;
    let at = leaf.as_deref().unwrap_or("(empty session)");
    if wall.is_empty() {
        writeln!(out, "Nothing is folded at {at}.")?;
    } else {
        let line = format!(
            "{} folded at {at}: ~{} tokens freed. Tokenizer: {}.",
            plural(wall.targets().len(), "entry"),
            thousands(freed),
            tok.name
        );
        writeln!(out, "{}", paint.strong(&line))?;
        let rows = [
            (
                "elide",
                crate::render::region_counts(
                    count,
                    &[RegionKind::ToolResult, RegionKind::SupersededRead, RegionKind::Block, RegionKind::ToolInput],
                ),
            ),
            ("thinking", counts(&[(count(RegionKind::Thinking), "thinking block")])),
            ("images", counts(&[(count(RegionKind::Image), "image")])),
        ];
        for (scope, what) in rows.iter().filter(|(_, w)| !w.is_empty()) {
            writeln!(out, "  {scope:<9} {what}")?;
        }
    }
    if !wall.superseded.is_empty() {
        writeln!(
            out,
            "{} folded by shake now carry another tool's later edit (not counted).",
            plural(wall.superseded.len(), "entry")
        )?;
    }
    for s in &stranded {
        let (log, regions, leaves) = (&s.log, plural(s.regions, "region"), s.leaves.join(", "));
        let title = session.kind.title();
        let msg = match (session.host().writer(), s.by_shake) {
            (Writer::Fork(_), _) => format!("Stranded: the fold recorded at {log} folds {regions} on an abandoned branch (leaf {leaves}); {title} continued from an earlier message (a rewind), so they do not apply here."),
            (Writer::Append | Writer::ReadOnly { .. }, true) => format!("On another branch: log entry {log} folds {regions} on the branch ending at {leaves}; a shake write with --branch moved {title} to this branch, so they do not apply here."),
            (Writer::Append | Writer::ReadOnly { .. }, false) => format!("Stranded: log entry {log} folds {regions} on an abandoned branch (leaf {leaves}); {title} continued from an earlier entry, so they do not apply here."),
        };
        writeln!(out, "{}", paint.warn(&msg))?;
    }
    for t in &wall.torn {
        let msg = format!(
            "Half-written batch: log entry {} (line {}) announces {} edits, {} were written; the next `shake fold` or `shake undo` repairs it.",
            t.log, t.line, t.listed, t.written
        );
        writeln!(out, "{}", paint.warn(&msg))?;
    }
    if torn_line {
        let msg = "Half-written batch: the last line is a shake entry cut short; pi skips it, and the next `shake fold` or `shake undo` terminates it.";
        writeln!(out, "{}", paint.warn(msg))?;
    }
    Ok(0)
}

//! `shake status`: the wall at a leaf (what is folded now, by scope and kind, and what it frees),
//! folds stranded on abandoned branches, and half-written batches.

use std::collections::{BTreeMap, HashSet};
use std::io::Write;

use serde_json::json;
use shake_plumbing::host::{Session, View, Writer};
use shake_plumbing::regions::RegionKind;
use shake_plumbing::token_cache::open_tokenizer;
use shake_plumbing::{Context, Result};

use crate::batch::torn_last_line;
use crate::log_entry;
use crate::render::{counts, plural, thousands, Paint, ReadArgs};
use crate::undo::undo_plan;
use crate::wall::Wall;

/// Show what is folded at a leaf, what it frees, and folds stranded on abandoned branches
#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    #[command(flatten)]
    pub read: ReadArgs,
}

/// Folds that apply on another branch of the session but not at this leaf.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stranded {
    /// The shake log entry that folded them.
    pub log: String,
    /// Regions it keeps folded on its branch.
    pub regions: usize,
    /// Branch tips where they apply.
    pub leaves: Vec<String>,
    /// The current path left their branch through shake's own entries only (a fold or undo
    /// written with `--branch` elsewhere), not through pi continuing from an earlier entry.
    pub by_shake: bool,
}

/// Finds folds in force at other leaves whose log entries are not on `current`'s path. Only
/// branches that hold a shake log entry below their fork from the current path are projected,
/// as shared views ([`View::shared`]: each entry is read once for them all).
pub fn stranded<'a>(session: &Session<'a>, current: &View<'_, 'a>) -> Vec<Stranded> {
    if let Writer::Fork(_) = session.host().writer() {
        return crate::rewind_forks::stranded(session, current);
    }
    let on_path: HashSet<usize> = current.path.iter().copied().collect();
    let off_path_log = |i: usize| !on_path.contains(&i) && log_entry::parse(session, i).is_some();
    let mut by_log: BTreeMap<usize, Stranded> = BTreeMap::new();
    for leaf in session.leaves() {
        let mut branch = Some(leaf);
        let mut holds_log = false;
        let mut steps = 0;
        while let Some(i) = branch.filter(|i| !on_path.contains(i) && steps <= session.entries.len()) {
            holds_log |= off_path_log(i);
            branch = session.parent_of(i);
            steps += 1;
        }
        if !holds_log {
            continue;
        }
        let Ok(projection) = View::shared(session, Some(leaf)) else { continue };
        let leaf_id = session.entries[leaf].id().to_string();
        for item in &Wall::at(&projection).items {
            let Some(log) = session.index_of(item.log).filter(|i| !on_path.contains(i)) else { continue };
            let s = by_log.entry(log).or_insert_with(|| Stranded {
                log: item.log.to_string(),
                regions: 0,
                leaves: Vec::new(),
                by_shake: left_by_shake(session, current, log),
            });
            if !s.leaves.contains(&leaf_id) {
                s.leaves.push(leaf_id.clone());
            }
            if s.leaves.len() == 1 {
                s.regions += 1;
            }
        }
    }
    by_log.into_values().collect()
}

/// Tells whether the current path, after the entry where it leaves log entry `log`'s branch,
/// holds only shake's own entries (log entries and `context_edit`s) among those written after
/// `log`: then a later shake write moved pi's resume point, not pi continuing on its own.
fn left_by_shake(session: &Session<'_>, current: &View<'_, '_>, log: usize) -> bool {
    let mut at = Some(log);
    let mut steps = 0;
    let fork = loop {
        match at {
            Some(i) if steps <= session.entries.len() => match current.path.iter().position(|&p| p == i) {
                Some(pos) => break pos,
                None => (at, steps) = (session.parent_of(i), steps + 1),
            },
            _ => return false,
        }
    };
    current.path[fork + 1..]
        .iter()
        .filter(|&&i| i > log)
        .all(|&i| session.is_edit(i) || log_entry::parse(session, i).is_some())
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

//! `shake audit rewind`: what rewinds did to a session's folds. For every leaf its wall; the
//! folds stranded on branches pi no longer resumes; and, for each fold anywhere in the file, a
//! check that projecting the entry just before it shows its targets unfolded (`docs/plumbing.md`).

use std::io::Write;

use serde_json::{json, Value};
use shake_plumbing::host::{Session, Writer};
use shake_plumbing::output::{answer, json_or, write_record};
use shake_plumbing::rev::RevArgs;
use shake_plumbing::{Context, Error, Result};

use super::fold_of;
use crate::leaf::{id_of, LeafView, Leaves, Seen};
use crate::log_entry::LogData;
use crate::rewind::stranded;

/// Check a session's rewinds: each leaf's wall, stranded folds, and that before each fold its targets show unfolded
#[derive(clap::Args, Debug)]
pub struct RewindArgs {
    /// Session file or session id (prefix); default: the current session here (pi's, else oh-my-pi's or Claude Code's). Every leaf is audited
    #[arg(value_name = "SESSION")]
    pub session: Option<String>,
    /// Print JSON: {"file","defaultLeaf","leaves":[{"id","line","default","node","wall"}],"stranded","folds":[{"log","line","before","ok","targets"}],"consistent"}
    #[arg(long, conflicts_with = "nul")]
    pub json: bool,
    /// End every field with NUL and print ids verbatim
    #[arg(short = 'z', id = "nul")]
    pub nul: bool,
}

/// One leaf as the audit reports it: its entry, node id and wall.
struct Tip {
    leaf: usize,
    node: Option<String>,
    wall: Vec<Value>,
}

/// What the model sees of one target of a fold at the entry before it.
struct TargetCheck {
    id: String,
    seen: Seen,
    /// Why the check fails; `None` when the target shows unfolded.
    problem: Option<&'static str>,
}

/// The check of one fold.
struct FoldCheck {
    log: String,
    line: usize,
    before: Option<String>,
    targets: Vec<TargetCheck>,
}

impl FoldCheck {
    fn ok(&self) -> bool {
        self.targets.iter().all(|t| t.problem.is_none())
    }
}

/// Runs `shake audit rewind`.
pub fn run(ctx: &Context, args: &RewindArgs, out: &mut dyn Write) -> Result {
    let (file, rev) = RevArgs { rev: args.session.clone(), leaf: None }.load(ctx)?;
    if rev.entry.is_some() {
        return Err(Error::user("audit rewind takes a session, not a leaf: it audits every leaf")
            .hint("drop the `:ENTRY` suffix"));
    }
    let (session, _) = rev.open(ctx, &file)?;
    // Every leaf and the entry before every fold is projected: they share what is read of each
    // entry, and each view is dropped once its wall is kept, so the audit costs the file once
    // plus a walk of each path.
    let mut views = Leaves::new(&session);
    let leaves: Vec<Tip> = session
        .tips()
        .into_iter()
        .map(|i| {
            let v = views.at(Some(i))?;
            Ok(Tip { leaf: i, node: v.nodes.last().map(|n| n.to_hex()), wall: v.wall_json() })
        })
        .collect::<Result<_>>()?;
    let current = views.at(session.default_leaf())?;
    let stranded = stranded(&session, &current.projection);
    let checks = match session.host().writer() {
        // Claude Code: the folds are the store's records, each checked at the row it was made at.
        Writer::Fork(_) => crate::rewind::checks(&session)?.into_iter().map(|c| of_record(&session, c)).collect(),
        _ => (0..session.entries.len())
            .filter_map(|i| fold_of(&session, i).map(|d| check(&mut views, i, &d)))
            .collect::<Result<Vec<_>>>()?,
    };
    let consistent = checks.iter().all(FoldCheck::ok);
    let default = session.default_leaf();
    let json = || {
        let leaves: Vec<Value> = leaves
            .iter()
            .map(|t| {
                let e = &session.entries[t.leaf];
                json!({"id": e.id(), "line": e.line(), "default": Some(t.leaf) == default, "node": t.node, "wall": t.wall})
            })
            .collect();
        json!({
            "file": file.path.to_string_lossy(),
            "defaultLeaf": default.map(|d| id_of(&session, d)),
            "leaves": leaves,
            "stranded": stranded.iter().map(|s| json!({"log": s.log, "regions": s.regions, "leaves": s.leaves})).collect::<Vec<_>>(),
            "folds": checks.iter().map(check_json).collect::<Vec<_>>(),
            "consistent": consistent,
        })
    };
    let records = |out: &mut dyn Write| {
        for t in &leaves {
            let mark = if Some(t.leaf) == default { "*" } else { "-" };
            write_record(out, &["leaf", mark, id_of(&session, t.leaf), &t.wall.len().to_string()], args.nul)?;
        }
        for s in &stranded {
            for leaf in &s.leaves {
                write_record(out, &["stranded", &s.log, &s.regions.to_string(), leaf], args.nul)?;
            }
        }
        for c in &checks {
            let verdict = if c.ok() { "ok" } else { "fail" };
            write_record(out, &["fold", &c.log, c.before.as_deref().unwrap_or_default(), verdict], args.nul)?;
            for t in &c.targets {
                if let Some(problem) = t.problem {
                    write_record(out, &["!", &c.log, &t.id, problem], args.nul)?;
                }
            }
        }
        Ok(())
    };
    answer(Ok(u8::from(!consistent)), json_or(out, args.json, json, records))
}

/// Projects the entry just before fold `log` (its parent: the leaf the fold was made at) and
/// checks each target: in the context, and showing none of this fold's placeholders there (the
/// fold's own edits are not in force, and no one folded the entry itself in place).
fn check(views: &mut Leaves<'_, '_>, log: usize, data: &LogData) -> Result<FoldCheck> {
    let session = views.session();
    let before = session.parent_of(log);
    let view = views.at(before)?;
    let own_edits = data.edit_ids();
    let mut targets: Vec<TargetCheck> = Vec::new();
    for t in &data.targets {
        if targets.iter().any(|c| c.id == t.id) {
            continue;
        }
        let index = session.index_of(&t.id);
        let seen = index.map_or(Seen::Absent, |i| view.seen(i));
        let problem = match index {
            None => Some("missing"),
            Some(_) if seen == Seen::Absent => Some("absent"),
            Some(i) if view.projection.edit_of(i).is_some_and(|e| own_edits.contains(&id_of(view.session(), e))) => {
                Some("fold in force")
            }
            Some(i) => shows_fold(&view, i, data).then_some("shows the fold"),
        };
        targets.push(TargetCheck { id: t.id.to_string(), seen, problem });
    }
    let before = before.map(|b| session.entries[b].id().to_string());
    Ok(FoldCheck { log: session.entries[log].id().to_string(), line: session.entries[log].line(), before, targets })
}

/// The check of a fold record ([`crate::rewind::checks`]): `log` and `before` both name
/// the row the record is attached to, the leaf the fold was made at.
fn of_record(session: &Session<'_>, c: crate::rewind::RecordCheck) -> FoldCheck {
    let e = &session.entries[c.at];
    let targets = c.targets.into_iter().map(|(id, seen, problem)| TargetCheck { id, seen, problem }).collect();
    FoldCheck { log: e.id().to_string(), line: e.line(), before: Some(e.id().to_string()), targets }
}

/// Tells whether the text the model sees of entry `index` holds a placeholder of this fold that
/// no fold already in force there explains.
fn shows_fold(view: &LeafView<'_, '_>, index: usize, data: &LogData) -> bool {
    let id = id_of(view.session(), index);
    let earlier: Vec<String> = view.wall.items_of(id).iter().filter_map(|it| it.placeholder()).collect();
    let text = view.projection.content(index).map(|c| c.joined_text()).unwrap_or_default();
    data.targets
        .iter()
        .filter(|t| t.id == id)
        .filter_map(|t| t.placeholder())
        .any(|p| !earlier.contains(&p) && text.contains(&p))
}

fn check_json(c: &FoldCheck) -> Value {
    let targets: Vec<Value> = c
        .targets
        .iter()
        .map(|t| json!({"id": t.id, "seen": t.seen.as_str(), "ok": t.problem.is_none(), "problem": t.problem}))
        .collect();
    json!({"log": c.log, "line": c.line, "before": c.before, "ok": c.ok(), "targets": targets})
}

//! `shake undo`: restore every folded entry of a branch to its exact pre-fold content.
//! All-or-nothing and idempotent: a repeat undo appends nothing. `--last` restores only what the
//! most recent fold still in force folded; earlier folds stay.

use std::borrow::Cow;
use std::io::Write;

use serde_json::json;
use serde_json::value::RawValue;
use shake_plumbing::fork_record as record;
use shake_plumbing::host::{ForkWrite, Forks, Role, Session, SessionFile, View, Writer};
use shake_plumbing::regions::tool_label;
use shake_plumbing::rev::Rev;
use shake_plumbing::tokens::cache::open_tokenizer;
use shake_plumbing::tokens::{Tokenizer, TokenizerName};
use shake_plumbing::{Context, Error, Result};

use crate::batch::{self, Leftover, WriteArgs};
use crate::host_plan::{self, Tokens};
use crate::log_entry::{LogData, LogTarget, VERSION};
use crate::plan::{compose, TargetEdit};
use crate::render::{plural, thousands, Paint};
use crate::wall::{Item, Wall};

/// Restore every folded entry of a branch to its exact pre-fold content
#[derive(clap::Args, Debug)]
pub struct UndoArgs {
    #[command(flatten)]
    pub write: WriteArgs,
    /// Tokenizer for every token figure [default: Claude's own for the session's model when it is Claude, else o200k]
    #[arg(long, value_enum)]
    pub tokenizer: Option<TokenizerName>,
    /// Undo only the most recent fold still in force at the leaf; earlier folds stay
    #[arg(long)]
    pub last: bool,
    #[command(flatten)]
    pub in_place: batch::InPlaceArgs,
}

/// What an undo would write: one edit per folded target, restoring its pre-fold content.
#[derive(Debug)]
pub struct UndoPlan<'s> {
    /// One edit per folded target, in context order (`after` − `before` is what it restores).
    pub edits: Vec<TargetEdit<'s>>,
    /// Tokens the model sees again: Σ (after − before).
    pub tokens_restored: u64,
    /// The fold log entry undone, for `--last`; `None` when every fold is undone.
    pub undoes: Option<String>,
}

/// Plans the undo of every fold in `wall` (derived from `projection`).
pub fn undo_plan<'s>(projection: &View<'s, '_>, wall: &Wall, tok: &Tokenizer) -> UndoPlan<'s> {
    plan_undo(projection, wall, tok, None)
}

/// Plans the undo of the most recent fold with regions still on `wall` (`undo --last`): its
/// targets get their pre-shake content with only the other folds' regions applied.
pub fn undo_last_plan<'s>(projection: &View<'s, '_>, wall: &Wall, tok: &Tokenizer) -> UndoPlan<'s> {
    let session = projection.session;
    let last = wall
        .logs
        .iter()
        .rev()
        .map(|&i| session.entries[i].id().to_string())
        .find(|id| wall.items.iter().any(|it| it.log == *id));
    match last {
        Some(log) => plan_undo(projection, wall, tok, Some(log)),
        None => UndoPlan { edits: Vec::new(), tokens_restored: 0, undoes: None },
    }
}

/// Plans an undo of every fold, or of fold log entry `undoes` only. Only the targets are
/// counted, before and after, in one pass over their pieces when the cache holds them (what it
/// lacks is tokenized on every core: [`Tokenizer::count_each`]), not the whole context's.
///
/// A target restored to content the session holds (its own, or another tool's edit: an undo
/// of every fold) borrows it, and each restored content is parsed as it is counted, not all
/// held at once: on 100,000 tiny
/// entries a copy of every restored content and a list of them all parsed were 9 MB.
fn plan_undo<'s>(projection: &View<'s, '_>, wall: &Wall, tok: &Tokenizer, undoes: Option<String>) -> UndoPlan<'s> {
    let mut edits: Vec<TargetEdit<'s>> = Vec::new();
    for index in wall.targets() {
        // The fold's name for the entry (pi: its id; Claude Code: the tool_use_id).
        let unit_target = projection.unit(index).and_then(|u| u.target);
        let target = Cow::Borrowed(unit_target.map_or_else(|| projection.session.entries[index].id(), |t| t.0));
        let items = wall.items_of(&target);
        let (undone, kept): (Vec<&Item>, Vec<&Item>) =
            items.iter().partition(|it| undoes.as_ref().is_none_or(|log| it.log == *log));
        if undone.is_empty() {
            continue;
        }
        // A host whose fold replaced the content itself keeps the original beside it (Claude
        // Code's saved file); else the content before shake's edits.
        let base = match projection.original(index) {
            Some(original) => Cow::Owned(original),
            None => match wall.base_content(projection, index) {
                Some(base) => Cow::Borrowed(base),
                None => continue,
            },
        };
        if projection.position(index).is_none() {
            continue;
        }
        let content = match kept.is_empty() {
            true => base,
            false => Cow::Owned(compose(&projection.parse_content(Some(&base)), &base, &kept)),
        };
        edits.push(TargetEdit { target, index, content, before: 0, after: 0 });
    }
    // Grown by doubling: up to half of it was room for edits the plan does not have, and an
    // undo holds its plan until the batch is written.
    edits.shrink_to_fit();
    // Thing 2k is target k as the model sees it now, 2k + 1 with its content restored; the
    // counts are filled into the edits (a list of what to count beside them was 2 MiB of a
    // status on 100,000 tiny entries).
    let counts = tok.count_each(2 * edits.len(), |i, sink| {
        let e = &edits[i / 2];
        match (i % 2, projection.position(e.index)) {
            (0, Some(pos)) => projection.pieces(pos, sink),
            (0, None) => {} // not planned: every edit's entry is in the context
            _ => projection.pieces_with(e.index, &projection.parse_content(Some(&e.content)), sink),
        }
    });
    let mut restored = 0;
    for (e, counts) in edits.iter_mut().zip(counts.chunks_exact(2)) {
        (e.before, e.after) = (counts[0], counts[1]);
        restored += e.after.saturating_sub(e.before);
    }
    UndoPlan { edits, tokens_restored: restored, undoes }
}

/// Runs `shake undo`.
pub fn run(ctx: &Context, args: &UndoArgs, out: &mut dyn Write) -> Result {
    let (file, rev) = args.write.load(ctx)?;
    batch::write_then_store(ctx, file, |file, left| -> Result {
        let (session, leaf, in_place) = batch::open(ctx, file, &rev, &args.write, &args.in_place)?;
        let projection = View::at(&session, Some(leaf))?;
        let tok = open_tokenizer(ctx, args.tokenizer, &session, Some(leaf))?;
        let wall = Wall::at(&projection);
        let plan = match args.last {
            true => undo_last_plan(&projection, &wall, &tok),
            false => plan_undo(&projection, &wall, &tok, None),
        };
        let data = |view: &View<'_, '_>, repairs| log_data(view, &plan, &tok, repairs);
        if args.write.plan {
            let printed = host_plan::print(
                out,
                &wall,
                &plan.edits,
                |repairs| data(&projection, repairs),
                Tokens::Restored(plan.tokens_restored),
                &summary(&plan, &tok),
            );
            return printed;
        }
        let mut outcome = match session.host().writer() {
            Writer::Fork(forks) => {
                let session = (&session, forks, in_place);
                let data = data(&projection, Vec::new());
                undo_fork(ctx, args, (file, &rev), session, (&plan, &tok), data, (out, left))?;
                return Ok(0);
            }
            // A host that never writes refuses the batch as it is made, dry run or not.
            Writer::Append | Writer::ReadOnly { .. } => {
                batch::commit(ctx, projection, &args.write, wall, &plan.edits, data)?
            }
        };
        *left = Leftover::Appended(outcome.after.take().map(Box::new));
        let leaf_id = session.entries[leaf].id().to_string();
        report(ctx, args, (file, &rev), (&plan, &tok), &outcome, &leaf_id, out)?;
        Ok(0)
    })
}

/// Prints what an undo appended (or, in a dry run, would append).
fn report(
    ctx: &Context,
    args: &UndoArgs,
    (file, rev): (&SessionFile, &Rev),
    (plan, tok): (&UndoPlan, &Tokenizer),
    outcome: &batch::Outcome,
    leaf_id: &str,
    out: &mut dyn Write,
) -> Result<()> {
    if args.write.json {
        let targets: Vec<_> = plan
            .edits
            .iter()
            .map(|e| json!({"id": e.target, "kind": "restore", "tokens": e.after.saturating_sub(e.before)}))
            .collect();
        let value = json!({
            "op": "undo",
            "dryRun": args.write.dry_run,
            "tokenizer": tok.name.as_str(),
            "entries": plan.edits.len(),
            "tokensRestored": plan.tokens_restored,
            "targets": targets,
            "appended": outcome.appended,
            "leafBefore": leaf_id,
            "leafAfter": outcome.appended.last().map_or(leaf_id, String::as_str),
            "resumePointMoved": outcome.moved,
            "undoes": plan.undoes,
        });
        shake_plumbing::output::write_json(out, &value)?;
        return Ok(());
    }
    let paint = Paint::new(ctx);
    crate::render::write_session_line(out, ctx, rev, &file.path)?;
    let prefix = if args.write.dry_run { "[dry-run] · " } else { "" };
    writeln!(out, "{prefix}{}", paint.strong(&summary(plan, tok)))?;
    Ok(batch::notices(out, paint, outcome, args.write.dry_run, leaf_id)?)
}

/// `shake undo` on a host whose folds are forks (Claude Code): writes a session whose folded
/// results are the saved originals again (every other byte, turns made since included, as in
/// the file), with the fold records and this undo as its record. On a file with no fold in
/// force (the source of a fork, or an undone fork) it writes nothing and says so. Returns the
/// file written, for the caller to import.
fn undo_fork(
    ctx: &Context,
    args: &UndoArgs,
    (file, rev): (&SessionFile, &Rev),
    (session, forks, in_place): (&Session<'_>, &dyn Forks, bool),
    (plan, tok): (&UndoPlan, &Tokenizer),
    data: LogData,
    (out, left): (&mut dyn Write, &mut Leftover),
) -> Result<()> {
    let title = session.kind.title();
    let sid = session.header.as_ref().map(|h| h.id.to_string()).unwrap_or_default();
    let written = match args.write.dry_run || plan.edits.is_empty() {
        true => None,
        false => {
            let edits: Vec<(String, &RawValue)> =
                plan.edits.iter().map(|e| (e.target.to_string(), &*e.content)).collect();
            let how = match in_place {
                // The bytes an in-place fold read come back exactly (rows appended since kept).
                true => {
                    let targets: Vec<&str> = plan.edits.iter().map(|e| &*e.target).collect();
                    ForkWrite::RestoreInPlace(record::exact_before(&record::read(ctx, &sid)?, &sid, &targets))
                }
                false => ForkWrite::Restore,
            };
            let restored = session.write_fork(&edits, how)?;
            let leaf = session.default_leaf().map(|l| session.entries[l].id().to_string()).unwrap_or_default();
            let value = serde_json::to_value(&data).map_err(|e| Error::user(format!("cannot encode the undo: {e}")))?;
            let record = record::Record {
                leaf: &leaf,
                source: &file.path,
                source_session: &sid,
                fork: &restored.session_id,
                fork_path: &restored.path,
                read: file.raw(),
                in_place,
                data: value,
            };
            if let Err(e) = record::write(ctx, record) {
                ctx.warn(format_args!("the undo's record was not stored: {}", Error::from(e).message));
            }
            Some(restored)
        }
    };
    *left = Leftover::Written(written.as_ref().map(|f| f.path.clone()));
    if args.write.json {
        let value = json!({
            "op": "undo",
            "dryRun": args.write.dry_run,
            "tokensRestored": plan.tokens_restored,
            "targets": plan.edits.iter().map(|e| json!({"id": e.target, "kind": "restore", "tokens": e.after.saturating_sub(e.before)})).collect::<Vec<_>>(),
            "session": written.as_ref().map(|f| json!({"sessionId": f.session_id, "path": f.path, "resume": forks.resume_command(f), "reused": f.reused, "inPlace": f.in_place, "carried": f.carried})),
        });
        return Ok(shake_plumbing::output::write_json(out, &value)?);
    }
    crate::render::write_session_line(out, ctx, rev, &file.path)?;
    if plan.edits.is_empty() {
        writeln!(
            out,
            "Nothing to undo: no fold is in force in this file. A fold of a {title} session writes a fork and leaves its source as it was (unless --in-place); undo the fork."
        )?;
        return Ok(());
    }
    let prefix = if args.write.dry_run { "[dry-run] · " } else { "" };
    writeln!(out, "{prefix}{}", Paint::new(ctx).strong(&summary(plan, tok)))?;
    match &written {
        None if in_place => writeln!(
            out,
            "The real run puts the originals back into this {} in place (with --force).",
            forks.file_word()
        )?,
        None => {
            writeln!(out, "The real run writes a new {title} session with the originals; this file is never written.")?
        }
        Some(f) if f.in_place => {
            writeln!(out, "Rewrote {} in place{}.", file.display(), crate::cmd::fold::carried(f))?;
            writeln!(out, "Continue with: {}", Paint::new(ctx).strong(&forks.resume_command(f)))?;
        }
        Some(f) => {
            let verb = if f.reused { "Already written" } else { "Wrote" };
            writeln!(
                out,
                "{verb}: the session {} ({}), {} unchanged.",
                f.session_id,
                f.path.display(),
                file.display()
            )?;
            writeln!(out, "Continue with: {}", Paint::new(ctx).strong(&forks.resume_command(f)))?;
        }
    }
    Ok(())
}

/// The log entry's data for an undo plan (edit ids are filled in when the batch is written).
pub fn log_data<'p>(view: &View<'_, '_>, plan: &'p UndoPlan, tok: &Tokenizer, repairs: Vec<String>) -> LogData<'p> {
    let targets = plan
        .edits
        .iter()
        .map(|e| LogTarget {
            id: Cow::Borrowed(&e.target),
            kind: Cow::Borrowed("restore"),
            label: Cow::Owned(label(view, e.index)),
            tokens: e.after.saturating_sub(e.before),
            edit: Cow::Borrowed(""),
            block: None,
            at: None,
        })
        .collect();
    LogData {
        v: VERSION,
        op: "undo".into(),
        scope: None,
        profile: None,
        tokenizer: tok.name.as_str().into(),
        tokens: plan.tokens_restored,
        targets,
        repairs,
        undoes: plan.undoes.clone(),
    }
}

/// The one sentence an undo is reported with.
pub fn summary(plan: &UndoPlan, tok: &Tokenizer) -> String {
    if plan.edits.is_empty() {
        return format!("Nothing to undo: no folds at this leaf. Tokenizer: {}.", tok.name);
    }
    let which = plan.undoes.as_ref().map(|log| format!(", the fold of log entry {log}")).unwrap_or_default();
    format!(
        "Restored {} (~{} tokens{which}). Tokenizer: {}.",
        plural(plan.edits.len(), "entry"),
        thousands(plan.tokens_restored),
        tok.name
    )
}

/// A target's label in an undo log: the tool name of a tool result, else the role.
fn label(view: &View<'_, '_>, index: usize) -> String {
    match view.unit(index) {
        Some(unit) if unit.role == Role::ToolResult => tool_label(unit.tool.as_deref()),
        _ => view.session.entry_label(index),
    }
}

//! Writing a fold or undo back: the checks before planning, and one batch (the log entry first,
//! listing the edit ids it announces, then the edits, chained) appended by the safe writer.
//!
//! The log entry comes first so a batch cut short at any byte is recognisable: a log entry whose
//! announced edits are missing from the path (see [`crate::wall::Torn`]), or a torn last line.

use std::collections::HashMap;

use serde_json::value::RawValue;
use shake_plumbing::append::{self, ending, recently_written, Ending, Snapshot};
use shake_plumbing::host::{Session, SessionFile};
use shake_plumbing::rev::{Rev, RevArgs};
use shake_plumbing::{Context, Error, Result};

use crate::log_entry::{LogData, CUSTOM_TYPE};
use crate::plan::TargetEdit;
use crate::wall::Wall;

/// The arguments every command that appends takes.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct WriteArgs {
    /// Session file, or session id (prefix), optionally `:<entry-id>`; default: pi's current session here
    #[arg(value_name = "REV")]
    pub rev: Option<String>,
    /// Act on the branch ending at this entry (id or prefix) instead of pi's leaf, e.g. pi's in-memory leaf; pi then resumes that branch
    #[arg(long, visible_alias = "leaf", value_name = "REV")]
    pub branch: Option<String>,
    /// Print what would happen, prefixed "[dry-run]", and change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Print the batch for a host to append with its own writer (JSON: edits, log, tokens, message; docs/pi.md), and change nothing
    #[arg(long, conflicts_with = "dry_run")]
    pub plan: bool,
    /// Print JSON instead of a sentence
    #[arg(long)]
    pub json: bool,
}

impl WriteArgs {
    /// Reads the session file these arguments name.
    pub fn load(&self, ctx: &Context) -> Result<(SessionFile, Rev)> {
        let leaf = self.branch.as_deref().map(|b| b.rsplit(':').next().unwrap_or(b).to_string());
        RevArgs { rev: self.rev.clone(), leaf }.load(ctx)
    }
}

/// Returns the leaf a write acts on, after telling the session's warnings and refusing files
/// shake must not append to.
pub fn write_leaf(ctx: &Context, session: &Session<'_>, rev: &Rev, dry_run: bool) -> Result<usize> {
    ctx.warn_session(session);
    check_writable(ctx, session, dry_run)?;
    rev.leaf(session)?.ok_or_else(|| Error::user(format!("{}: the session has no entries", session.file.display())))
}

/// What a write did.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Ids appended, log entry first (empty for a dry run or when there was nothing to do).
    pub appended: Vec<String>,
    /// A half-written batch was (or, in a dry run, would be) repaired.
    pub repaired: bool,
    /// The leaf was not pi's leaf on load, so pi now resumes this branch.
    pub moved: bool,
}

/// Writes a fold or undo batch unless it is a dry run: `edits`, and the log entry `data`
/// builds from the ids of the half-written batches it repairs. With no edits it writes only
/// when there is something to repair.
pub fn commit(
    ctx: &Context,
    session: &Session<'_>,
    leaf: usize,
    args: &WriteArgs,
    wall: &Wall,
    edits: &[TargetEdit],
    data: impl FnOnce(Vec<String>) -> LogData,
) -> Result<Outcome> {
    let repairs: Vec<String> = wall.torn.iter().map(|t| t.log.clone()).collect();
    let repaired = !repairs.is_empty() || torn_last_line(session.file);
    let mut outcome = Outcome { appended: Vec::new(), repaired, moved: session.default_leaf() != Some(leaf) };
    if !args.dry_run && (!edits.is_empty() || repaired) {
        let contents: Vec<(String, &RawValue)> = edits.iter().map(|e| (e.target.clone(), &*e.content)).collect();
        outcome.appended = write(ctx, session, leaf, data(repairs), &contents)?;
        if let Some(last) = outcome.appended.last() {
            crate::overlay::after_write(ctx, &session.file.path, last);
        }
    }
    outcome.moved &= args.dry_run || !outcome.appended.is_empty();
    Ok(outcome)
}

/// Refuses files shake must not append to: v1/v2 sessions (pi rewrites them on open) and files
/// ending in a partial line shake did not write. A dry run only warns about the latter.
pub fn check_writable(ctx: &Context, session: &Session<'_>, dry_run: bool) -> Result<()> {
    if session.needs_migration() {
        return Err(Error::user(format!(
            "{}: a version {} session; pi migrates and rewrites such a file (with new entry ids) when it opens it",
            session.file.display(),
            session.version().unwrap_or_default()
        ))
        .hint("open the session in pi once (pi --session <file>), quit, then run shake again"));
    }
    if ending(session.file.raw()) == Ending::Partial {
        let err = append::partial_line(&session.file.path);
        if !dry_run {
            return Err(err);
        }
        ctx.warn(&err.message);
    }
    Ok(())
}

/// Tells whether the file ends in a line a shake batch left half-written.
pub fn torn_last_line(file: &SessionFile) -> bool {
    ending(file.raw()) == Ending::TornShakeLine
}

/// Appends one batch after entry `leaf`: the log entry (its targets' `edit` fields filled in
/// with fresh ids), then one `context_edit` per `(target id, content)`. Returns the ids
/// appended, log entry first.
fn write(
    ctx: &Context,
    session: &Session<'_>,
    leaf: usize,
    mut data: LogData,
    edits: &[(String, &RawValue)],
) -> Result<Vec<String>> {
    let path = &session.file.path;
    if let Some(age) = recently_written(path) {
        ctx.warn(format_args!(
            "{} was written {}s ago; if pi has this session open, quit pi and run shake again, or pi's next message will put this change on a side branch",
            path.display(),
            age.as_secs()
        ));
    }
    let mut writer = session.appender()?;
    let log_id = writer.fresh_id();
    let edit_ids: HashMap<&str, String> = edits.iter().map(|(t, _)| (t.as_str(), writer.fresh_id())).collect();
    for t in &mut data.targets {
        t.edit = edit_ids.get(t.id.as_str()).cloned().unwrap_or_default();
    }
    let value = serde_json::to_value(&data).map_err(|e| Error::user(format!("cannot encode the log entry: {e}")))?;
    let mut lines = vec![writer.log_line(&log_id, Some(&session.entries[leaf].id), CUSTOM_TYPE, &value)];
    let mut ids = vec![log_id];
    for (target, content) in edits {
        let id = &edit_ids[target.as_str()];
        lines.push(writer.edit_line(id, ids.last().map(String::as_str), target, content));
        ids.push(id.clone());
    }
    let mut bytes = lines.join("\n").into_bytes();
    bytes.push(b'\n');
    append::append(path, &Snapshot::of(session.file.raw()), &bytes)?;
    Ok(ids)
}

/// Prints the lines that follow a fold's or undo's sentence: a repair, a moved resume point.
pub fn notices(out: &mut dyn std::io::Write, outcome: &Outcome, dry_run: bool, leaf: &str) -> Result<()> {
    let paint = crate::render::Paint::stdout();
    if outcome.repaired && !dry_run {
        writeln!(out, "Repaired a half-written shake batch (see `shake status`).")?;
    } else if outcome.repaired {
        writeln!(out, "A half-written shake batch is on this branch; the real run repairs it.")?;
    }
    if outcome.moved {
        writeln!(out, "{}", paint.warn(&resume_notice(dry_run, leaf)))?;
    }
    Ok(())
}

/// The sentence for a write at a leaf that is not pi's leaf on load.
fn resume_notice(dry_run: bool, leaf: &str) -> String {
    let verb = if dry_run { "would resume" } else { "will now resume" };
    format!(
        "pi {verb} this branch (after {leaf}) the next time it opens the session: the appended entries become the file's last entries."
    )
}

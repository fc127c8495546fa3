//! `shake drop`: remove a session file that shake wrote as a fork (a fold or an undo on a host
//! that forks, Claude Code), which the host would otherwise list forever. Only a file shake
//! wrote (its fork records name it), only when nothing was added to it since shake wrote it
//! unless `--force`, and never lost: its bytes are imported first and `shake restore` writes
//! them back.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use shake_plumbing::durable::FileError;
use shake_plumbing::host::Writer;
use shake_plumbing::output::{path as shown, shell_word};
use shake_plumbing::rev::Rev;
use shake_plumbing::store::Store;
use shake_plumbing::{fork_record, Context, Error, Result};

/// Remove a session file shake wrote as a fork (a fold or undo of a Claude Code transcript); its bytes stay in the store
#[derive(clap::Args, Debug)]
pub struct DropArgs {
    /// The fork: session file, or session id (prefix)
    #[arg(value_name = "SESSION")]
    pub session: String,
    /// Drop it although something was added to it since shake wrote it (every version stays in the store)
    #[arg(long)]
    pub force: bool,
    /// Print what would happen, prefixed "[dry-run]", and change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Print JSON: {"dropped","sessionId","op","source","at","changedSince","dryRun"}
    #[arg(long)]
    pub json: bool,
}

/// Runs `shake drop`.
pub fn run(ctx: &Context, args: &DropArgs, out: &mut dyn Write) -> Result {
    let path = Rev { session: Some(args.session.clone()), entry: None }.session_path(ctx)?;
    let file = shake_plumbing::hosts::read(&path).map_err(FileError::at(&path, "read"))?;
    let session = shake_plumbing::hosts::load(&file, ctx.host)?;
    let sid = session.header.as_ref().map(|h| h.id.to_string()).unwrap_or_default();
    let record = match session.host().writer() {
        Writer::Fork(_) => written_by_shake(ctx, &sid, &path)?,
        Writer::Append | Writer::ReadOnly { .. } => None,
    };
    let Some(record) = record else {
        return Err(Error::user(format!(
            "{}: not a session shake wrote: shake drops only the forks it wrote (a fold or undo that writes a new session)",
            file.display()
        ))
        .hint("to take folds back out of a session, `shake undo` it"));
    };
    drop(session);
    drop(file);
    // Kept before anything is removed: a store that cannot take it stops the drop.
    let mut store = Store::open(ctx)?;
    store.import_file(&path, ctx.host)?;
    let versions = store.sessions()?.into_iter().find(|s| same_file(&s.path, &path)).map_or(1, |s| s.versions);
    let changed = versions > 1;
    if changed && !args.force {
        return Err(Error::user(format!(
            "{}: changed since shake wrote it ({versions} versions in the store: the host went on with it, or another program wrote it)",
            shown(&path)
        ))
        .hint("pass --force to drop it all the same (every version stays in the store)"));
    }
    if !args.dry_run {
        std::fs::remove_file(&path).map_err(FileError::at(&path, "remove"))?;
    }
    report(out, args, &path, &sid, &record, changed)?;
    Ok(0)
}

/// The record of the fork `session_id` at `path` that shake wrote (not in place), if any.
fn written_by_shake(ctx: &Context, session_id: &str, path: &Path) -> Result<Option<Value>> {
    let records = fork_record::read(ctx, session_id)?;
    Ok(records.into_iter().rev().find(|r| {
        r["fork"] == session_id
            && r["inPlace"] != true
            && r["forkPath"].as_str().is_some_and(|p| same_file(Path::new(p), path))
    }))
}

/// Tells whether two paths name the same file (either may be relative or through a link).
fn same_file(a: &Path, b: &Path) -> bool {
    let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| PathBuf::from(p));
    real(a) == real(b)
}

/// Prints what was (or would be) dropped and how to bring it back.
fn report(out: &mut dyn Write, args: &DropArgs, path: &Path, sid: &str, record: &Value, changed: bool) -> Result<()> {
    let op = record["data"]["op"].as_str().unwrap_or("fold");
    let source = record["source"].as_str().unwrap_or_default();
    let at = record["at"].as_str();
    if args.json {
        let value = json!({
            "dropped": path.to_string_lossy(), "sessionId": sid, "op": op, "source": source,
            "at": at, "changedSince": changed, "dryRun": args.dry_run,
        });
        return shake_plumbing::output::write_json(out, &value).map_err(Error::from);
    }
    let what = format!(
        "the {op} shake wrote of {}{}",
        shown(Path::new(source)),
        at.map(|t| format!(" at {t}")).unwrap_or_default()
    );
    match args.dry_run {
        true => writeln!(out, "[dry-run] · would drop {}: {what}.", shown(path))?,
        false => {
            writeln!(out, "Dropped {}: {what}.", shown(path))?;
            writeln!(
                out,
                "Its bytes stay in the store: `shake restore {} -o FILE` writes them back.",
                shell_word(sid)
            )?;
        }
    }
    Ok(())
}

//! `shake export`: a new session file holding one leaf's root→leaf path, written as the host's
//! own fork writes it (pi: `/fork`), so folds travel with it.

use std::io::Write;
use std::path::PathBuf;

use crate::rev::RevArgs;
use crate::{Context, Error, Result};

/// Write a leaf's branch to a new session file, as the agent's own fork would (pi's /fork)
#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    #[command(flatten)]
    pub rev: RevArgs,
    /// Where to write (default: a new file in the agent's session folder for the session's cwd)
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Print {"path","sessionId","entries","parentSession"} instead of the path
    #[arg(long)]
    pub json: bool,
}

/// Runs `shake export`.
pub fn run(ctx: &Context, args: &ExportArgs, out: &mut dyn Write) -> Result {
    let (file, rev) = args.rev.load(ctx)?;
    let (session, leaf) = rev.open(ctx, &file)?;
    let leaf = leaf.ok_or_else(|| Error::user(format!("{}: the session has no entries", file.display())))?;
    let export = session.export(ctx, leaf)?;
    let target = args.output.clone().unwrap_or_else(|| export.path.clone());
    crate::durable::write_new_with(&target, |out| export.write_to(out))?;
    crate::own_write::record(ctx, &target);
    if args.json {
        let report = serde_json::json!({
            "path": target.to_string_lossy(),
            "sessionId": export.session_id,
            "entries": export.entries,
            "parentSession": export.parent.to_string_lossy(),
        });
        crate::output::write_json(out, &report)?;
    } else {
        writeln!(out, "{}", crate::output::path(&target))?;
    }
    Ok(0)
}

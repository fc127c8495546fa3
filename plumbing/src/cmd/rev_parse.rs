//! `shake rev-parse`: names the leaf a revision resolves to, by node id and pi entry id
//! (`docs/revisions.md`, `docs/plumbing.md`).

use std::io::Write;

use serde_json::json;

use crate::id::ObjectId;
use crate::nodes::{entry_object, row_session, NodeIds};
use crate::rev::{leaf_path, RevArgs};
use crate::{Context, Result};

/// Print the node id and entry id of the leaf a revision names
#[derive(clap::Args, Debug)]
pub struct RevParseArgs {
    #[command(flatten)]
    pub rev: RevArgs,
    /// Print JSON: {"file","leafId","line","node","object"}
    #[arg(long)]
    pub json: bool,
}

/// Runs `shake rev-parse`.
pub fn run(ctx: &Context, args: &RevParseArgs, out: &mut dyn Write) -> Result {
    let (file, rev) = args.rev.load(ctx)?;
    let (session, _) = rev.open(ctx, &file)?;
    let (leaf, path) = leaf_path(&session, &rev)?;
    let nodes = NodeIds::new(&session).path(&path);
    let entry = &session.entries[leaf];
    let node = nodes.last().copied().unwrap_or(ObjectId::NULL);
    if args.json {
        let value = json!({
            "file": file.path.to_string_lossy(),
            "leafId": entry.id(),
            "line": entry.line(),
            "node": node.to_hex(),
            "object": entry_object(entry, row_session(&session).as_deref()).to_hex(),
        });
        crate::output::write_json(out, &value)?;
    } else {
        writeln!(out, "{node} {}", crate::output::quote(entry.id()))?;
    }
    Ok(0)
}

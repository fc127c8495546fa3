//! `shake rev-parse`: names the leaf a revision resolves to, by node id and pi entry id; and the
//! helpers the tree commands (`ls-entries`, `ls-leaves`) share: chain node ids and leaf paths
//! (`docs/revisions.md`, `docs/plumbing.md`).

use std::io::Write;

use serde_json::json;

use crate::host::Session;
use crate::id::ObjectId;
use crate::nodes::{entry_object, NodeIds};
use crate::rev::{Rev, RevArgs};
use crate::{Context, Error, Result};

/// Print the node id and pi entry id of the leaf a revision names
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
    let session = crate::host::load(&file, ctx.host)?;
    ctx.warn_session(&session);
    let (leaf, path) = leaf_path(&session, &rev)?;
    let nodes = NodeIds::new(&session).path(&path);
    let entry = &session.entries[leaf];
    let node = nodes.last().copied().unwrap_or(ObjectId::NULL);
    if args.json {
        let value = json!({
            "file": file.display(),
            "leafId": entry.id,
            "line": entry.line,
            "node": node.to_hex(),
            "object": entry_object(entry).to_hex(),
        });
        crate::output::write_json(out, &value)?;
    } else {
        writeln!(out, "{node} {}", crate::output::quote(&entry.id))?;
    }
    Ok(0)
}

/// Resolves a revision to its leaf and the root→leaf path; fails on an empty session or a cycle.
pub fn leaf_path(session: &Session<'_>, rev: &Rev) -> Result<(usize, Vec<usize>)> {
    let leaf = rev
        .leaf(session)?
        .ok_or_else(|| Error::user(format!("{}: the session has no entries, so no leaf", session.file.display())))?;
    Ok((leaf, path_of(session, leaf)?))
}

/// Returns the root→leaf path, or an error naming the entry and line where `parentId` loops.
pub fn path_of(session: &Session<'_>, leaf: usize) -> Result<Vec<usize>> {
    session.path(leaf).map_err(|cycle| {
        Error::user(format!("{}: {cycle}", session.file.display()))
            .hint("repair the parentId of one entry on the loop by hand")
    })
}

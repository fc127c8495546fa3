//! `shake ls-entries`: the root→leaf path of a revision (or pi's compaction-aware context subset
//! of it), one record per entry: pi entry id, type, entry object id.

use std::collections::HashMap;
use std::io::Write;

use serde_json::json;

use crate::nodes::{entry_object, row_session, NodeIds};
use crate::output::write_record;
use crate::rev::leaf_path;
use crate::rev::RevArgs;
use crate::{Context, Result};

/// List the entries from the root to a leaf: entry id, type, object id
#[derive(clap::Args, Debug)]
pub struct LsEntriesArgs {
    #[command(flatten)]
    pub rev: RevArgs,
    /// Only the entries the agent's projection reads (compaction-aware, like pi's buildContextEntries)
    #[arg(long)]
    pub context: bool,
    /// Print JSON: {"file","leafId","context","entries":[{"id","type","line","object","node"}]}
    #[arg(long, conflicts_with = "nul")]
    pub json: bool,
    /// End every field with NUL and print ids verbatim (ids in hand-edited files may hold any character)
    #[arg(short = 'z', id = "nul")]
    pub nul: bool,
}

/// Runs `shake ls-entries`.
pub fn run(ctx: &Context, args: &LsEntriesArgs, out: &mut dyn Write) -> Result {
    let (file, rev) = args.rev.load(ctx)?;
    let (session, _) = rev.open(ctx, &file)?;
    let (leaf, path) = leaf_path(&session, &rev)?;
    let mut ids = NodeIds::new(&session);
    let mut nodes: HashMap<usize, _> = path.iter().copied().zip(ids.path(&path)).collect();
    let listed = if args.context { session.context(&path) } else { path };
    // A host's context may hold entries off the leaf's path (Claude Code's recovered rows of a
    // split message): each gets the node id of its own path.
    for &i in &listed {
        if !nodes.contains_key(&i) {
            let own = ids.path(&crate::rev::path_of(&session, i)?);
            nodes.extend(own.last().map(|&n| (i, n)));
        }
    }
    let entries = listed.iter().map(|i| (&session.entries[*i], nodes[i]));
    let rows = row_session(&session);
    if args.json {
        let entries: Vec<_> = entries
            .map(|(e, node)| {
                json!({"id": e.id(), "type": e.kind(), "line": e.line(), "object": entry_object(e, rows.as_deref()).to_hex(), "node": node.to_hex()})
            })
            .collect();
        let value = json!({
            "file": file.path.to_string_lossy(),
            "leafId": session.entries[leaf].id(),
            "context": args.context,
            "entries": entries,
        });
        crate::output::write_json(out, &value)?;
        return Ok(0);
    }
    for (e, _) in entries {
        write_record(out, &[e.id(), e.kind(), &entry_object(e, rows.as_deref()).to_hex()], args.nul)?;
    }
    Ok(0)
}

//! `shake ls-leaves`: every branch tip of a session (optionally only those below an entry), with
//! its line, path length and node id, marking the leaf pi picks on load.

use std::io::Write;

use serde_json::json;

use crate::nodes::NodeIds;
use crate::output::write_record;
use crate::rev::path_of;
use crate::rev::RevArgs;
use crate::{Context, Result};

/// List every branch tip of a session; `*` marks the agent's leaf on load (pi's: the last entry)
#[derive(clap::Args, Debug)]
pub struct LsLeavesArgs {
    /// Session, or a revision `SESSION:ENTRY` to list only the tips below that entry
    #[command(flatten)]
    pub rev: RevArgs,
    /// Print JSON: {"file","defaultLeaf","leaves":[{"id","type","line","pathLength","node","default"}]}
    #[arg(long, conflicts_with = "nul")]
    pub json: bool,
    /// End every field with NUL and print ids verbatim
    #[arg(short = 'z', id = "nul")]
    pub nul: bool,
}

/// One listed tip.
struct Tip {
    index: usize,
    path_len: usize,
    node: String,
    default: bool,
}

/// Runs `shake ls-leaves`.
pub fn run(ctx: &Context, args: &LsLeavesArgs, out: &mut dyn Write) -> Result {
    let (file, rev) = args.rev.load(ctx)?;
    let (session, leaf) = rev.open(ctx, &file)?;
    let below = leaf.filter(|_| rev.entry.is_some());
    let default = session.default_leaf();
    let candidates = session.tips();
    let mut nodes = NodeIds::new(&session);
    let mut tips = Vec::new();
    for index in candidates {
        let path = path_of(&session, index)?;
        if below.is_some_and(|b| !path.contains(&b)) {
            continue;
        }
        let node = nodes.path(&path).last().map(|n| n.to_hex()).unwrap_or_default();
        tips.push(Tip { index, path_len: path.len(), node, default: Some(index) == default });
    }
    if args.json {
        let leaves: Vec<_> = tips
            .iter()
            .map(|t| {
                let e = &session.entries[t.index];
                json!({"id": e.id(), "type": e.kind(), "line": e.line(), "pathLength": t.path_len, "node": t.node, "default": t.default})
            })
            .collect();
        let default_id = default.map(|d| session.entries[d].id());
        let value = json!({"file": file.path.to_string_lossy(), "defaultLeaf": default_id, "leaves": leaves});
        crate::output::write_json(out, &value)?;
        return Ok(0);
    }
    for t in &tips {
        let e = &session.entries[t.index];
        let (line, len) = (e.line().to_string(), t.path_len.to_string());
        let mark = if t.default { "*" } else { "-" };
        write_record(out, &[mark, e.id(), e.kind(), &line, &len, &t.node], args.nul)?;
    }
    Ok(0)
}

//! `shake ls-leaves`: every branch tip of a session (optionally only those below an entry), with
//! its line, path length and node id, marking the leaf pi picks on load.

use std::io::Write;

use serde_json::json;

use super::rev_parse::{path_of, write_record};
use crate::host::Session;
use crate::nodes::NodeIds;
use crate::rev::RevArgs;
use crate::{Context, Result};

/// List every branch tip of a session; `*` marks pi's leaf on load (the last entry)
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

/// Returns the branch tips in file order, plus pi's leaf on load: normally a tip, but listed even
/// when a later-written entry hangs off it.
pub fn tips(session: &Session<'_>) -> Vec<usize> {
    let mut tips = session.leaves();
    if let Some(d) = session.default_leaf().filter(|d| !tips.contains(d)) {
        tips.push(d);
        tips.sort_unstable();
    }
    tips
}

/// Runs `shake ls-leaves`.
pub fn run(ctx: &Context, args: &LsLeavesArgs, out: &mut dyn Write) -> Result {
    let (file, rev) = args.rev.load(ctx)?;
    let session = crate::host::load(&file, ctx.host)?;
    ctx.warn_session(&session);
    let below = rev.entry.as_ref().map(|_| rev.leaf(&session)).transpose()?.flatten();
    let default = session.default_leaf();
    let candidates = tips(&session);
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
                json!({"id": e.id, "type": e.kind, "line": e.line, "pathLength": t.path_len, "node": t.node, "default": t.default})
            })
            .collect();
        let default_id = default.map(|d| session.entries[d].id.as_ref());
        let value = json!({"file": file.display(), "defaultLeaf": default_id, "leaves": leaves});
        serde_json::to_writer(&mut *out, &value).map_err(std::io::Error::from)?;
        writeln!(out)?;
        return Ok(0);
    }
    for t in &tips {
        let e = &session.entries[t.index];
        let (line, len) = (e.line.to_string(), t.path_len.to_string());
        let mark = if t.default { "*" } else { "-" };
        write_record(out, &[mark, &e.id, &e.kind, &line, &len, &t.node], args.nul)?;
    }
    Ok(0)
}

//! `shake fsck`: verify the whole store and name whatever is wrong.

use std::io::Write;

use serde_json::json;

use crate::store::fsck;
use crate::{Context, Error, Result};

/// Re-hash every object and check indexes, packs, refs and import states; exit 3 on corruption
#[derive(clap::Args, Debug)]
pub struct FsckArgs {
    /// Print JSON: {"ok","objects","packs","refs","sessions","problems":[..],"notes":[..]}
    #[arg(long)]
    pub json: bool,
}

/// Runs `shake fsck`.
pub fn run(ctx: &Context, args: &FsckArgs, out: &mut dyn Write) -> Result {
    let r = fsck::check(&ctx.store_dir)?;
    if args.json {
        let report = json!({
            "ok": r.problems.is_empty(),
            "objects": r.objects,
            "packs": r.packs,
            "refs": r.refs,
            "sessions": r.sessions,
            "problems": r.problems,
            "notes": r.notes,
        });
        writeln!(out, "{report}")?;
    } else {
        for p in &r.problems {
            writeln!(out, "error: {p}")?;
        }
        for n in &r.notes {
            writeln!(out, "note: {n}")?;
        }
        writeln!(out, "checked {} objects in {} packs, {} refs, {} sessions", r.objects, r.packs, r.refs, r.sessions)?;
    }
    match r.problems.len() {
        0 => Ok(0),
        n => Err(Error::corrupt(format!("{}: {n} problem{} found", ctx.store_dir.display(), if n == 1 { "" } else { "s" }))),
    }
}

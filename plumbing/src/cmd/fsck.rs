//! `shake fsck`: verify the whole store and name whatever is wrong.

use std::io::Write;

use serde_json::json;

use crate::output::{answer, json_or};
use crate::store::fsck;
use crate::{Context, Error, Result};

/// Re-hash every object, check indexes, packs, refs and import states, recompute overlays; exit 3 on corruption
#[derive(clap::Args, Debug)]
pub struct FsckArgs {
    /// Print JSON: {"ok","objects","packs","refs","sessions","problems":[..],"notes":[..]}
    #[arg(long)]
    pub json: bool,
}

/// Runs `shake fsck`; `overlays` recomputes a leaf's overlay (the porcelain's wall) to compare
/// with the stored one.
pub fn run(
    ctx: &Context,
    args: &FsckArgs,
    out: &mut dyn Write,
    overlays: fsck::OverlayCheck<'_, crate::Error>,
) -> Result {
    let r = fsck::check(&ctx.store_dir, overlays)?;
    let json = || {
        json!({
            "ok": r.problems.is_empty(),
            "objects": r.objects,
            "packs": r.packs,
            "refs": r.refs,
            "sessions": r.sessions,
            "problems": r.problems,
            "notes": r.notes,
        })
    };
    let text = |out: &mut dyn Write| {
        for p in &r.problems {
            writeln!(out, "error: {p}")?;
        }
        for n in &r.notes {
            writeln!(out, "note: {n}")?;
        }
        writeln!(out, "checked {} objects in {} packs, {} refs, {} sessions", r.objects, r.packs, r.refs, r.sessions)
    };
    let verdict = match r.problems.len() {
        0 => Ok(0),
        n => Err(Error::corrupt(format!(
            "{}: {n} problem{} found",
            ctx.store_dir.display(),
            if n == 1 { "" } else { "s" }
        ))),
    };
    answer(verdict, json_or(out, args.json, json, text))
}

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
    /// Check this remote instead (docs/remotes.md): every manifest reads, every pack it names is there whole and hashes right. JSON: {"ok","remote","manifests","packs","unnamed","problems":[..]}
    #[arg(long, value_name = "NAME")]
    pub remote: Option<String>,
}

/// Runs `shake fsck`; `overlays` recomputes a leaf's overlay (the porcelain's wall) to compare
/// with the stored one.
pub fn run(
    ctx: &Context,
    args: &FsckArgs,
    out: &mut dyn Write,
    overlays: fsck::OverlayCheck<'_, crate::Error>,
) -> Result {
    if let Some(name) = &args.remote {
        return remote(ctx, name, args.json, out);
    }
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

/// Runs `shake fsck --remote NAME`.
fn remote(ctx: &Context, name: &str, as_json: bool, out: &mut dyn Write) -> Result {
    let remote = crate::remote::named(&ctx.store_dir, Some(name))?;
    let r = crate::remote::check::check(&remote)?;
    let json = || {
        json!({
            "ok": r.problems.is_empty(), "remote": remote.name, "manifests": r.manifests, "packs": r.packs,
            "unnamed": r.unnamed, "problems": r.problems,
        })
    };
    let text = |out: &mut dyn Write| {
        for p in &r.problems {
            writeln!(out, "error: {p}")?;
        }
        if r.unnamed > 0 {
            writeln!(
                out,
                "note: {} pack(s) no manifest names yet (a push cut short; the next push finishes it)",
                r.unnamed
            )?;
        }
        writeln!(out, "checked {} manifests and {} packs on {}", r.manifests, r.packs, remote.name)
    };
    let verdict = match r.problems.len() {
        0 => Ok(0),
        n => Err(Error::corrupt(format!(
            "remote {} ({}): {n} problem{} found",
            remote.name,
            remote.url,
            if n == 1 { "" } else { "s" }
        ))),
    };
    answer(verdict, json_or(out, as_json, json, text))
}

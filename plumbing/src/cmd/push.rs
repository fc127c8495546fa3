//! `shake push [NAME]`: send this store's new packs and its sessions' manifest to a remote.

use std::io::Write;

use serde_json::json;

use crate::output::json_or;
use crate::remote::push::{self, Check};
use crate::remote::Progress;
use crate::{Context, Result};

/// Send this machine's sessions to a remote: packs it lacks, then this machine's manifest
#[derive(clap::Args, Debug)]
pub struct PushArgs {
    /// The remote (default: the only one)
    pub name: Option<String>,
    /// Let a kind of secret through the scan run before anything leaves (a rule id, e.g. aws-access-token) or one secret (fp:<12 hex>, as printed); repeat for more; adds to [scan] allow in .shake.toml
    #[arg(long, value_name = "KIND|fp:HEX")]
    pub allow: Vec<String>,
    /// Print JSON: {"remote","machine","name","sessions","changed","packs","objects","bytes","manifest"}
    #[arg(long)]
    pub json: bool,
}

/// Runs `shake push`; `check` sees the sessions that would leave and may refuse.
pub fn run(ctx: &Context, args: &PushArgs, out: &mut dyn Write, check: Check<'_, crate::Error>) -> Result {
    let remote = crate::remote::named(&ctx.store_dir, args.name.as_deref())?;
    let r = push::push(ctx, &remote, check, &Progress::new(args.json))?;
    let value = || {
        json!({
            "remote": remote.name, "machine": r.machine.id, "name": r.machine.name, "sessions": r.sessions,
            "changed": r.changed, "packs": r.packs, "objects": r.objects, "bytes": r.bytes, "manifest": r.manifest,
        })
    };
    json_or(out, args.json, value, |out: &mut dyn Write| {
        writeln!(
            out,
            "pushed to {} as {}: {} objects in {} pack ({} bytes), {} of {} sessions changed",
            remote.name,
            r.machine.name,
            r.objects,
            r.packs,
            crate::regions::thousands(r.bytes),
            r.changed,
            r.sessions
        )
    })?;
    Ok(0)
}

//! `shake count-objects`: how many objects and packs the store holds, and their size.

use std::io::Write;

use crate::store::Store;
use crate::{Context, Result};

/// Count the store's objects, packs and bytes on disk
#[derive(clap::Args, Debug)]
pub struct CountObjectsArgs {
    /// Print JSON: {"objects","packs","bytes"}
    #[arg(long)]
    pub json: bool,
}

/// Runs `shake count-objects`.
pub fn run(ctx: &Context, args: &CountObjectsArgs, out: &mut dyn Write) -> Result {
    let c = Store::open(ctx)?.counts();
    if args.json {
        writeln!(out, "{}", serde_json::json!({"objects": c.objects, "packs": c.packs, "bytes": c.bytes}))?;
    } else {
        writeln!(out, "objects {}\npacks {}\nbytes {}", c.objects, c.packs, c.bytes)?;
    }
    Ok(0)
}

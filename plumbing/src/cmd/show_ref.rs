//! `shake show-ref`: every ref and the object it names.

use std::io::Write;

use crate::store::Store;
use crate::{Context, Result};

/// List the store's refs: object id and name, sorted by name
#[derive(clap::Args, Debug)]
pub struct ShowRefArgs {
    /// Print JSON: [{"ref","id"}]
    #[arg(long)]
    pub json: bool,
}

/// Runs `shake show-ref`.
pub fn run(ctx: &Context, args: &ShowRefArgs, out: &mut dyn Write) -> Result {
    let refs = Store::open(ctx)?.refs()?;
    if args.json {
        let rows: Vec<_> = refs.iter().map(|(name, id)| serde_json::json!({"ref": name, "id": id.to_hex()})).collect();
        writeln!(out, "{}", serde_json::Value::Array(rows))?;
    } else {
        for (name, id) in &refs {
            writeln!(out, "{id} {name}")?;
        }
    }
    Ok(0)
}

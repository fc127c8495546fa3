//! `shake gc`: drop objects nothing reaches and repack the rest into one pack.

use std::io::Write;

use serde_json::json;

use crate::store::Store;
use crate::{Context, Result};

/// Drop objects no ref or imported version reaches and repack the rest into one pack
#[derive(clap::Args, Debug)]
pub struct GcArgs {
    /// Count what would be dropped and change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Print JSON: {"dryRun","objects","kept","dropped":{"entry","node","version","overlay","row","table"},"packsBefore","bytesBefore","bytesAfter","tempFiles"}
    #[arg(long)]
    pub json: bool,
}

/// Runs `shake gc`.
pub fn run(ctx: &Context, args: &GcArgs, out: &mut dyn Write) -> Result {
    let r = Store::open(ctx)?.gc(args.dry_run)?;
    let [entry, node, version, overlay, row, table] = r.dropped;
    if args.json {
        let value = json!({
            "dryRun": args.dry_run, "objects": r.objects, "kept": r.kept,
            "dropped": {"entry": entry, "node": node, "version": version, "overlay": overlay, "row": row, "table": table},
            "packsBefore": r.packs_before, "bytesBefore": r.bytes_before, "bytesAfter": r.bytes_after,
            "tempFiles": r.temp_files,
        });
        crate::output::write_json(out, &value)?;
    } else {
        let prefix = if args.dry_run { "[dry-run] " } else { "" };
        writeln!(
            out,
            "{prefix}kept {} of {} objects; dropped {entry} entries, {node} nodes, {version} versions, {overlay} overlays, {row} rows, {table} tables; {} bytes in {} packs -> {} bytes",
            r.kept, r.objects, r.bytes_before, r.packs_before, r.bytes_after
        )?;
    }
    Ok(0)
}

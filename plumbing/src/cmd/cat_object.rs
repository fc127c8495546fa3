//! `shake cat-object`: an object's kind, size or bytes.

use std::io::Write;

use crate::id::{hex, Kind};
use crate::store::Store;
use crate::{Context, Result};

/// Print an object's bytes (or its kind, size, or a readable form)
#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("mode").args(["kind", "size", "pretty"])))]
pub struct CatObjectArgs {
    /// Print the kind: entry, node, version or overlay
    #[arg(short = 't')]
    pub kind: bool,
    /// Print the size of the canonical bytes
    #[arg(short = 's')]
    pub size: bool,
    /// Print a readable form (a node as its parent and entry ids; lines end with a newline)
    #[arg(short = 'p')]
    pub pretty: bool,
    /// Object id or unique prefix (at least 4 hex digits)
    #[arg(value_name = "OBJECT")]
    pub object: String,
}

/// Runs `shake cat-object`.
pub fn run(ctx: &Context, args: &CatObjectArgs, out: &mut dyn Write) -> Result {
    let store = Store::open(ctx)?;
    let id = store.resolve(&args.object)?;
    let obj = store.read(&id)?;
    if args.kind {
        writeln!(out, "{}", obj.kind)?;
    } else if args.size {
        writeln!(out, "{}", obj.bytes.len())?;
    } else if args.pretty {
        match obj.kind {
            Kind::Node => {
                let (parent, entry) = obj.bytes.split_at(obj.bytes.len().saturating_sub(32));
                if !parent.is_empty() {
                    writeln!(out, "parent {}", hex(parent))?;
                }
                writeln!(out, "entry {}", hex(entry))?;
            }
            _ => {
                out.write_all(obj.bytes)?;
                if !obj.bytes.ends_with(b"\n") {
                    writeln!(out)?;
                }
            }
        }
    } else {
        out.write_all(obj.bytes)?;
    }
    Ok(0)
}

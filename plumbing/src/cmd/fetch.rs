//! `shake fetch [NAME]`: bring the other machines' sessions from a remote, as `<machine>/<session>`.

use std::io::Write;

use serde_json::json;

use crate::output::{answer, json_or};
use crate::remote::{fetch, Progress};
use crate::{Context, Error, Result};

/// Bring the other machines' sessions from a remote; they read as <machine>/<session>
#[derive(clap::Args, Debug)]
pub struct FetchArgs {
    /// The remote (default: the only one)
    pub name: Option<String>,
    /// Print JSON: {"remote","machines":[{"machine","id","sessions"}],"packs","bytes","refused":[..]}
    #[arg(long)]
    pub json: bool,
}

/// Runs `shake fetch`: exit 3 when the remote holds damage (what is sound is fetched).
pub fn run(ctx: &Context, args: &FetchArgs, out: &mut dyn Write) -> Result {
    let remote = crate::remote::named(&ctx.store_dir, args.name.as_deref())?;
    let r = fetch::fetch(ctx, &remote, &Progress::new(args.json))?;
    let value = || {
        let machines: Vec<_> =
            r.machines.iter().map(|(m, id, n)| json!({"machine": m, "id": id, "sessions": n})).collect();
        json!({"remote": remote.name, "machines": machines, "packs": r.packs, "bytes": r.bytes, "refused": r.refused})
    };
    let text = |out: &mut dyn Write| {
        for (machine, _, n) in &r.machines {
            writeln!(out, "{machine}: {n} session{}", if *n == 1 { "" } else { "s" })?;
        }
        writeln!(
            out,
            "fetched {} pack{} ({} bytes) from {}",
            r.packs,
            if r.packs == 1 { "" } else { "s" },
            crate::regions::thousands(r.bytes),
            remote.name
        )
    };
    let verdict = match r.refused.first() {
        None => Ok(0),
        Some(first) => Err(Error::corrupt(format!(
            "{first}{}",
            match r.refused.len() {
                1 => String::new(),
                n => format!(" (and {} more)", n - 1),
            }
        ))
        .hint("run shake fsck --remote")),
    };
    answer(verdict, json_or(out, args.json, value, text))
}

//! `shake project`: the model context pi builds for a leaf, as pi's own code returns it.

use std::io::Write;

use crate::rev::RevArgs;
use crate::{Context, Result};

/// Print the context the agent would send the model for a leaf
#[derive(clap::Args, Debug)]
pub struct ProjectArgs {
    #[command(flatten)]
    pub rev: RevArgs,
    /// Print JSON: {"leafId","entries":[{"id","type","messages"}],"messages"} (the only format)
    #[arg(long)]
    pub json: bool,
    /// Claude Code: project for this model (default: the transcript's own last model)
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
}

/// Runs `shake project`.
pub fn run(ctx: &Context, args: &ProjectArgs, out: &mut dyn Write) -> Result {
    let ctx = &ctx.with_model(args.model.as_deref());
    let (file, rev) = args.rev.load(ctx)?;
    let (session, leaf) = rev.open(ctx, &file)?;
    session.write_context_json(leaf, out)?;
    writeln!(out)?;
    Ok(0)
}

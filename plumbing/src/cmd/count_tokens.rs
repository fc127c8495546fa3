//! `shake count-tokens`: the tokens of the context pi would send for a leaf, per entry.

use std::io::Write;

use serde_json::json;

use crate::host::View;
use crate::rev::RevArgs;
use crate::tokens::{context_tokens, TokenizerName};
use crate::{Context, Result};

/// Count the tokens of the context the agent would send for a leaf, per projected entry
#[derive(clap::Args, Debug)]
pub struct CountTokensArgs {
    #[command(flatten)]
    pub rev: RevArgs,
    /// Tokenizer: pi (pi's own estimate), o200k, cl100k, calibrated (see `shake tokens`), or Claude's own (claude-v3, …) [default: Claude's own for the session's model when it is Claude, else o200k]
    #[arg(long, value_name = "T")]
    pub tokenizer: Option<TokenizerName>,
    /// Print JSON: {"tokenizer","total","perEntry":[{"id","tokens"}]}
    #[arg(long)]
    pub json: bool,
}

/// Runs `shake count-tokens`.
pub fn run(ctx: &Context, args: &CountTokensArgs, out: &mut dyn Write) -> Result {
    let (file, rev) = args.rev.load(ctx)?;
    let (session, leaf) = rev.open(ctx, &file)?;
    let projection = View::at(&session, leaf)?;
    let tok = crate::tokens::cache::open_tokenizer(ctx, args.tokenizer, &session, leaf)?;
    let counts = context_tokens(&projection, &tok);
    let total: u64 = counts.iter().sum();
    let ids = projection.context.iter().map(|&i| session.entries[i].id());
    if args.json {
        let per_entry: Vec<_> = ids.zip(&counts).map(|(id, n)| json!({"id": id, "tokens": n})).collect();
        let report = json!({"tokenizer": tok.name.as_str(), "total": total, "perEntry": per_entry});
        crate::output::write_json(out, &report)?;
    } else {
        for (id, n) in ids.zip(&counts) {
            writeln!(out, "{n}\t{id}")?;
        }
        writeln!(out, "{total}\ttotal ({})", tok.name)?;
    }
    Ok(0)
}

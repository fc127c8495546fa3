//! `shake regions`: the regions a fold could take in the projected context of a leaf, listed
//! without writing anything. It sees the context as projected now (folded content is already a
//! placeholder, so it is not listed again); `shake fold --dry-run` is the fold's own plan.

use std::io::Write;

use serde_json::json;

use crate::cmd::tokens::{open_tokenizer, save_cache};
use crate::host::View;
use crate::regions::{regions, skip, tail_start, Profile, Scope};
use crate::rev::RevArgs;
use crate::tokens::{TokenizerName, DEFAULT_TOKENIZER};
use crate::{Context, Result};

/// List the regions a fold could take at a leaf, without writing anything
#[derive(clap::Args, Debug)]
pub struct RegionsArgs {
    #[command(flatten)]
    pub rev: RevArgs,
    /// What to look for
    #[arg(long, value_enum, default_value_t = Scope::Elide)]
    pub scope: Scope,
    /// Tail and block minimum (elide only)
    #[arg(long, value_enum, default_value_t = Profile::Default)]
    pub profile: Profile,
    /// Tokenizer for the token figures
    #[arg(long, value_enum, default_value_t = DEFAULT_TOKENIZER)]
    pub tokenizer: TokenizerName,
    /// Print JSON: {"leafId","scope","profile","tokenizer","tailStart","regions":[{"id","kind","label","tokens","block","at","placeholder"}]}
    #[arg(long)]
    pub json: bool,
}

/// Runs `shake regions`.
pub fn run(ctx: &Context, args: &RegionsArgs, out: &mut dyn Write) -> Result {
    let (file, rev) = args.rev.load(ctx)?;
    let session = crate::host::load(&file, ctx.host)?;
    ctx.warn_session(&session);
    let projection = View::at(&session, rev.leaf(&session)?)?;
    let tok = open_tokenizer(ctx, args.tokenizer, &session)?;
    tok.prefetch(&projection);
    let end = match args.scope {
        Scope::Elide => tail_start(&projection, args.profile.tail(), &tok),
        _ => projection.context.len(),
    };
    let mut found = Vec::new();
    for unit in &projection.units[..end] {
        let content = projection.content(unit.index);
        if skip(&projection, unit, content.as_ref()).is_some() {
            continue;
        }
        let Some(content) = content else { continue };
        let entry = &session.entries[unit.index];
        for r in regions(unit, &content, args.scope, args.profile, &tok) {
            found.push(json!({"id": entry.id, "kind": r.kind.as_str(), "label": r.label, "tokens": r.tokens,
                "block": r.block, "at": r.at.map(|(a, b)| [a, b]), "placeholder": r.placeholder()}));
        }
    }
    if args.json {
        let leaf = projection.leaf.map(|l| session.entries[l].id.to_string());
        let value = json!({"leafId": leaf, "scope": args.scope.as_str(), "profile": args.profile.as_str(),
            "tokenizer": tok.name.as_str(), "tailStart": end, "regions": found});
        serde_json::to_writer(&mut *out, &value).map_err(std::io::Error::from)?;
        writeln!(out)?;
        return Ok(0);
    }
    for r in &found {
        writeln!(
            out,
            "{}\t{}\t{}\t{}\t{}",
            r["id"].as_str().unwrap_or(""),
            r["kind"].as_str().unwrap_or(""),
            r["label"].as_str().unwrap_or(""),
            r["tokens"],
            r["placeholder"].as_str().unwrap_or("(dropped)")
        )?;
    }
    save_cache(ctx, &tok);
    Ok(0)
}

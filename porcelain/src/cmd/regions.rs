//! `shake regions`: the regions `shake fold` would take at a leaf, listed without writing
//! anything. It lists the fold's own plan, so it never lists what is already folded and always
//! agrees with `shake fold --dry-run` (same scope, profile and tokenizer).

use std::io::Write;

use crate::profile::Profile;
use crate::scope::Scope;
use serde_json::json;
use shake_plumbing::host::View;
use shake_plumbing::output::{json_or, write_record};
use shake_plumbing::rev::RevArgs;
use shake_plumbing::tokens::cache::open_tokenizer;
use shake_plumbing::tokens::{context_tokens, TokenizerName};
use shake_plumbing::{Context, Result};

use crate::plan::{plan_with_wall, FoldOptions};
use crate::wall::Wall;

/// List the regions a fold would take at a leaf, without writing anything
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
    /// Tokenizer for the token figures [default: Claude's own for the session's model when it is Claude, else o200k]
    #[arg(long, value_enum)]
    pub tokenizer: Option<TokenizerName>,
    #[command(flatten)]
    pub rules: crate::rules::RuleArgs,
    /// Print JSON: {"leafId","scope","profile","tokenizer","tailStart","regions":[{"id","kind","label","tokens","block","at","placeholder"}]}
    #[arg(long)]
    pub json: bool,
}

/// Runs `shake regions`.
pub fn run(ctx: &Context, args: &RegionsArgs, out: &mut dyn Write) -> Result {
    let (file, rev) = args.rev.load(ctx)?;
    let (session, leaf) = rev.open(ctx, &file)?;
    let projection = View::at(&session, leaf)?;
    let tokenizer = open_tokenizer(ctx, args.tokenizer, &session, leaf)?;
    let tokens = context_tokens(&projection, &tokenizer);
    let wall = Wall::at(&projection);
    let rules = crate::rules::resolve(ctx, &args.rules, args.profile)?;
    let options = FoldOptions { scope: args.scope, profile: args.profile, tokenizer: *tokenizer, rules };
    let plan = plan_with_wall(&projection, &wall, &options, &tokens);
    let json = || {
        let regions: Vec<_> = plan
            .regions
            .iter()
            .map(|r| {
                json!({"id": r.target, "kind": r.kind.as_str(), "label": r.label, "tokens": r.tokens,
                    "block": r.block, "at": r.at.map(|(a, b)| [a, b]), "placeholder": r.placeholder()})
            })
            .collect();
        json!({"leafId": projection.leaf.map(|l| session.entries[l].id().to_string()), "scope": args.scope.as_str(),
            "profile": args.profile.as_str(), "tokenizer": tokenizer.name.as_str(), "tailStart": plan.tail_start,
            "regions": regions})
    };
    let text = |out: &mut dyn Write| {
        for r in &plan.regions {
            let placeholder = r.placeholder().unwrap_or_else(|| "(dropped)".into());
            write_record(out, &[&r.target, r.kind.as_str(), &r.label, &r.tokens.to_string(), &placeholder], false)?;
        }
        Ok(())
    };
    json_or(out, args.json, json, text)?;
    Ok(0)
}

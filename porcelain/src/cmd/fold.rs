//! `shake fold`: fold stale heavy content of a branch by appending pi `context_edit` entries and
//! one shake log entry.

use std::io::Write;

use crate::profile::Profile;
use crate::scope::Scope;
use serde_json::json;
use shake_plumbing::host::View;
use shake_plumbing::regions::RegionKind;
use shake_plumbing::token_cache::open_tokenizer;
use shake_plumbing::tokens::{TokenizerName, DEFAULT_TOKENIZER};
use shake_plumbing::{Context, Result};

use crate::batch::{self, WriteArgs};
use crate::host_plan::{self, Tokens};
use crate::log_entry::{LogData, LogTarget, VERSION};
use crate::plan::{plan_with_wall, FoldOptions, Plan};
use crate::profile::{self, ProfileSource};
use crate::render::{counts, thousands, Paint};
use crate::wall::Wall;

/// Fold stale tool output, big blocks, thinking or images out of what pi sends the model
#[derive(clap::Args, Debug, Clone)]
pub struct FoldArgs {
    #[command(flatten)]
    pub write: WriteArgs,
    /// What to fold
    #[arg(long, value_enum, default_value_t = Scope::Elide)]
    pub scope: Scope,
    /// Tail and block minimum (default: "shake": {"profile"} in .pi/settings.json, else pi's agent settings.json, else default)
    #[arg(long, value_enum)]
    pub profile: Option<Profile>,
    /// Tokenizer for every token figure
    #[arg(long, value_enum, default_value_t = DEFAULT_TOKENIZER)]
    pub tokenizer: TokenizerName,
    /// Fold a fresh private copy of the bundled example session (a real pi session) and say where it is
    #[arg(long, conflicts_with_all = ["rev", "branch", "plan"])]
    pub example: bool,
}

/// Runs `shake fold`.
pub fn run(ctx: &Context, args: &FoldArgs, out: &mut dyn Write) -> Result {
    let mut write = args.write.clone();
    if args.example {
        let path = crate::example::fresh_copy(ctx)?;
        write.rev = Some(path.to_string_lossy().into_owned());
        if !write.json {
            let id = crate::example::SESSION_ID;
            let at = shake_plumbing::output::short_path(ctx, &path);
            writeln!(out, "Example: a fresh copy of the bundled pi session, at {at} (session {id}).")?;
        }
    }
    let args = &FoldArgs { write, ..args.clone() };
    let (file, rev) = args.write.load(ctx)?;
    let session = shake_plumbing::host::load(&file, ctx.host)?;
    let leaf = batch::write_leaf(ctx, &session, &rev, args.write.dry_run || args.write.plan)?;
    let (profile, source) = profile::resolve(ctx, args.profile)?;
    let projection = View::at(&session, Some(leaf))?;
    let tokenizer = open_tokenizer(ctx, args.tokenizer, &session)?;
    // Tokenize what the cache lacks on every core first; the plan's counts are then lookups.
    tokenizer.prefetch(&projection);
    let options = FoldOptions { scope: args.scope, profile, tokenizer: *tokenizer };
    let wall = Wall::at(&projection);
    let plan = plan_with_wall(&projection, &wall, &options);
    if args.write.plan {
        let message = summary(&plan, &source);
        return host_plan::print(
            out,
            &wall,
            &plan.edits,
            |r| log_data(&plan, r),
            Tokens::Freed(plan.tokens_freed),
            &message,
        );
    }
    let outcome =
        batch::commit(ctx, &session, leaf, &args.write, &wall, &plan.edits, |repairs| log_data(&plan, repairs))?;
    let leaf_id = session.entries[leaf].id.to_string();
    let report = Report {
        paint: Paint::new(ctx),
        plan: &plan,
        source: &source,
        dry_run: args.write.dry_run,
        leaf: &leaf_id,
        outcome: &outcome,
    };
    if args.write.json {
        shake_plumbing::output::write_json(out, &report.json())?;
    } else {
        crate::render::write_session_line(out, ctx, &rev, &file.path)?;
        report.human(out)?;
    }
    Ok(0)
}

/// The log entry's data for a plan (edit ids are filled in when the batch is written).
pub fn log_data(plan: &Plan, repairs: Vec<String>) -> LogData {
    let o = &plan.options;
    LogData {
        v: VERSION,
        op: "fold".into(),
        scope: Some(o.scope.as_str().into()),
        profile: Some(o.profile.as_str().into()),
        tokenizer: o.tokenizer.name.as_str().into(),
        tokens: plan.tokens_freed,
        targets: plan
            .regions
            .iter()
            .map(|r| LogTarget {
                id: r.target.clone(),
                kind: r.kind.as_str().into(),
                label: r.label.clone(),
                tokens: r.tokens,
                edit: String::new(),
                block: r.block,
                at: r.at.map(|(a, b)| [a, b]),
            })
            .collect(),
        repairs,
        undoes: None,
    }
}

/// The one sentence a plan is reported with: `Shook 43 tool results + 1 block (~27,838 tokens).
/// Protects the last 4,000 tokens. Profile: default (built-in). Tokenizer: pi.`
pub fn summary(plan: &Plan, source: &ProfileSource) -> String {
    let o = &plan.options;
    let what = counts(&[
        (plan.count(RegionKind::ToolResult), "tool result"),
        (plan.count(RegionKind::Block), "block"),
        (plan.count(RegionKind::Thinking), "thinking block"),
        (plan.count(RegionKind::Image), "image"),
    ]);
    let head = if let Some(freed) = plan.below_floor {
        format!(
            "Nothing to fold: it would free ~{} tokens, under the profile's floor (15% of the context).",
            thousands(freed)
        )
    } else if plan.is_empty() {
        match o.scope {
            Scope::Elide => "Nothing to fold.".to_string(),
            Scope::Thinking => "Nothing to fold: no thinking blocks on this branch.".to_string(),
            Scope::Images => "Nothing to fold: no images on this branch.".to_string(),
        }
    } else {
        format!("Shook {what} (~{} tokens).", thousands(plan.tokens_freed))
    };
    let tail = match o.scope {
        Scope::Elide => format!(
            " Protects the last {} tokens. Profile: {} ({source}).",
            thousands(o.profile.tail()),
            o.profile.as_str()
        ),
        Scope::Thinking | Scope::Images => String::new(),
    };
    format!("{head}{tail} Tokenizer: {}.", o.tokenizer.name)
}

struct Report<'r> {
    paint: Paint,
    plan: &'r Plan,
    source: &'r ProfileSource,
    dry_run: bool,
    leaf: &'r str,
    outcome: &'r batch::Outcome,
}

impl Report<'_> {
    fn human(&self, out: &mut dyn Write) -> Result<()> {
        let paint = self.paint;
        let prefix = if self.dry_run { "[dry-run] · " } else { "" };
        writeln!(out, "{prefix}{}", paint.strong(&summary(self.plan, self.source)))?;
        batch::notices(out, paint, self.outcome, self.dry_run, self.leaf)
    }

    fn json(&self) -> serde_json::Value {
        let p = self.plan;
        let o = &p.options;
        let targets: Vec<_> = p
            .regions
            .iter()
            .map(|r| json!({"id": r.target, "kind": r.kind.as_str(), "label": r.label, "tokens": r.tokens, "placeholder": r.placeholder()}))
            .collect();
        json!({
            "op": "fold",
            "dryRun": self.dry_run,
            "scope": o.scope.as_str(),
            "profile": o.profile.as_str(),
            "profileSource": self.source.key(),
            "tokenizer": o.tokenizer.name.as_str(),
            "toolResults": p.count(RegionKind::ToolResult),
            "blocks": p.count(RegionKind::Block),
            "thinking": p.count(RegionKind::Thinking),
            "images": p.count(RegionKind::Image),
            "tokensFreed": p.tokens_freed,
            "protectsTokens": if o.scope == Scope::Elide { o.profile.tail() } else { 0 },
            "targets": targets,
            "appended": self.outcome.appended,
            "leafBefore": self.leaf,
            "leafAfter": self.outcome.appended.last().map_or(self.leaf, String::as_str),
            "resumePointMoved": self.outcome.moved,
        })
    }
}

//! `shake fold`: fold stale heavy content of a branch by appending pi `context_edit` entries and
//! one shake log entry.

use std::borrow::Cow;
use std::io::Write;

use crate::profile::Profile;
use crate::scope::Scope;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use shake_plumbing::fork_record as record;
use shake_plumbing::host::{ForkWrite, Forked, Forks, Session, SessionFile, View, Writer};
use shake_plumbing::regions::RegionKind;
use shake_plumbing::rev::{Rev, RevArgs};
use shake_plumbing::tokens::cache::open_tokenizer;
use shake_plumbing::tokens::{context_tokens, TokenizerName};
use shake_plumbing::{Context, Error, Result};

use crate::batch::{self, Leftover, WriteArgs};
use crate::host_plan::{self, Tokens};
use crate::log_entry::{LogData, LogTarget, VERSION};
use crate::plan::{plan_with_wall, FoldOptions, Plan};
use crate::profile::{self, ProfileSource};
use crate::render::{region_counts, thousands, Paint};
use crate::wall::Wall;

/// Fold stale tool output, big blocks, thinking or images out of what the agent sends the model
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
    /// Tokenizer for every token figure [default: Claude's own for the session's model when it is Claude, else o200k]
    #[arg(long, value_enum)]
    pub tokenizer: Option<TokenizerName>,
    /// Claude Code: plan for what is sent to this model (default: the transcript's own last model)
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// Fold a fresh private copy of the bundled example session (a real pi session) and say where it is
    #[arg(long, conflicts_with_all = ["rev", "branch", "plan"])]
    pub example: bool,
    #[command(flatten)]
    pub in_place: batch::InPlaceArgs,
    #[command(flatten)]
    pub rules: crate::rules::RuleArgs,
}

/// Runs `shake fold`.
pub fn run(ctx: &Context, args: &FoldArgs, out: &mut dyn Write) -> Result {
    let ctx = &ctx.with_model(args.model.as_deref());
    let mut write = args.write.clone();
    if args.example {
        let path = match args.write.dry_run {
            true => crate::example::path(ctx),
            false => crate::example::fresh_copy(ctx)?,
        };
        write.rev = Some(path.to_string_lossy().into_owned());
        if !write.json {
            let id = crate::example::SESSION_ID;
            let at = shake_plumbing::hosts::short_path(ctx, &path);
            writeln!(out, "Example: a fresh copy of the bundled pi session, at {at} (session {id}).")?;
        }
    }
    let args = &FoldArgs { write, ..args.clone() };
    let (file, rev) = match args.example && args.write.dry_run {
        // The copy a real run would write, read from memory: a dry run changes nothing.
        true => (crate::example::fresh_in_memory(ctx), RevArgs { rev: args.write.rev.clone(), leaf: None }.rev()),
        false => args.write.load(ctx)?,
    };
    batch::write_then_store(ctx, file, |file, left| -> Result {
        let (session, leaf, in_place) = batch::open(ctx, file, &rev, &args.write, &args.in_place)?;
        let (profile, source) = profile::resolve(ctx, args.profile)?;
        let projection = View::at(&session, Some(leaf))?;
        let tokenizer = open_tokenizer(ctx, args.tokenizer, &session, Some(leaf))?;
        let tokens = context_tokens(&projection, &tokenizer);
        let rules = crate::rules::resolve(ctx, &args.rules, profile)?;
        let options = FoldOptions { scope: args.scope, profile, tokenizer: *tokenizer, rules };
        let wall = Wall::at(&projection);
        let plan = plan_with_wall(&projection, &wall, &options, &tokens);
        let economics = crate::price::of_plan(ctx, &projection, &plan, &tokens)?;
        if args.write.plan {
            let message = reported(&plan, &source, economics.as_ref());
            let printed = host_plan::print(
                out,
                &wall,
                &plan.edits,
                |r| log_data(&plan, r),
                Tokens::Freed(plan.tokens_freed),
                &message,
            );
            return printed;
        }
        let mut outcome = match session.host().writer() {
            Writer::Fork(forks) => {
                let session = (&session, forks, in_place);
                fork(ctx, args, (file, &rev), session, leaf, (&plan, &source, economics), (out, left))?;
                return Ok(0);
            }
            // A host that never writes refuses the batch as it is made, dry run or not.
            Writer::Append | Writer::ReadOnly { .. } => {
                batch::commit(ctx, projection, &args.write, wall, &plan.edits, |_, repairs| log_data(&plan, repairs))?
            }
        };
        *left = Leftover::Appended(outcome.after.take().map(Box::new));
        let leaf_id = session.entries[leaf].id().to_string();
        let report = Report {
            paint: Paint::new(ctx),
            economics,
            plan: &plan,
            source: &source,
            dry_run: args.write.dry_run,
            leaf: &leaf_id,
            outcome: &outcome,
        };
        if args.write.json {
            shake_plumbing::output::write_json(out, &report.json())?;
        } else {
            // The example's line above names its session already.
            if !args.example {
                crate::render::write_session_line(out, ctx, &rev, &file.path)?;
            }
            report.human(out)?;
        }
        Ok(0)
    })
}

/// `shake fold` on a host that takes a fold as a new session (Claude Code): writes the fork with
/// the plan's edits (never the source), stores the fold's record under the fork's id, and prints
/// the command that resumes the fork. The file written is left for the caller to import
/// ([`Leftover::Written`]) before anything is printed.
fn fork(
    ctx: &Context,
    args: &FoldArgs,
    (file, rev): (&SessionFile, &Rev),
    (session, forks, in_place): (&Session<'_>, &dyn Forks, bool),
    leaf: usize,
    (plan, source, economics): (&Plan, &ProfileSource, Option<crate::price::Economics>),
    (out, left): (&mut dyn Write, &mut Leftover),
) -> Result<()> {
    let title = session.kind.title();
    if session.default_leaf() != Some(leaf) {
        return Err(Error::user(format!(
            "{}: {title} resumes a session at its last message; shake folds it there only",
            file.display()
        ))
        .hint("name no leaf (`shake fold <session>`)"));
    }
    let leaf_id = session.entries[leaf].id().to_string();
    let written = match args.write.dry_run || plan.is_empty() {
        true => None,
        false => {
            let edits: Vec<(String, &RawValue)> =
                plan.edits.iter().map(|e| (e.target.to_string(), &*e.content)).collect();
            let data = serde_json::to_value(log_data(plan, Vec::new()))
                .map_err(|e| Error::user(format!("cannot encode the fold's record: {e}")))?;
            let source_session = session.header.as_ref().map(|h| h.id.to_string()).unwrap_or_default();
            // In place, the fork is the transcript itself.
            let record = record::Record {
                leaf: &leaf_id,
                source: &file.path,
                source_session: &source_session,
                fork: &source_session,
                fork_path: &file.path,
                read: file.raw(),
                in_place,
                data,
            };
            match in_place {
                true => Some(fold_in_place(ctx, (session, forks.file_word()), file, &edits, record)?),
                false => {
                    let forked = session.write_fork(&edits, ForkWrite::Fold)?;
                    // The fork exists: a record that cannot be stored is a warning (undo reads
                    // the placeholders themselves), never a reason to lose the fork.
                    let record = record::Record { fork: &forked.session_id, fork_path: &forked.path, ..record };
                    if let Err(e) = record::write(ctx, record) {
                        ctx.warn(format_args!("the fold's record was not stored: {}", Error::from(e).message));
                    }
                    Some(forked)
                }
            }
        }
    };
    *left = Leftover::Written(written.as_ref().map(|f| f.path.clone()));
    let outcome = batch::Outcome::default();
    let report = Report {
        paint: Paint::new(ctx),
        economics,
        plan,
        source,
        dry_run: args.write.dry_run,
        leaf: &leaf_id,
        outcome: &outcome,
    };
    if args.write.json {
        let mut json = report.json();
        json["fork"] = match &written {
            None => Value::Null,
            Some(f) => json!({
                "sessionId": f.session_id,
                "path": f.path,
                "inPlace": f.in_place,
                "carried": f.carried,
                "resume": forks.resume_command(f),
                "saved": f.saved.iter().map(|(id, p)| json!({"id": id, "path": p})).collect::<Vec<_>>(),
            }),
        };
        return Ok(shake_plumbing::output::write_json(out, &json)?);
    }
    crate::render::write_session_line(out, ctx, rev, &file.path)?;
    report.human(out)?;
    match &written {
        None if args.write.dry_run && !plan.is_empty() && in_place => writeln!(
            out,
            "The real run saves the originals, then rewrites this {} in place (with --force).",
            forks.file_word()
        )?,
        None if args.write.dry_run && !plan.is_empty() => {
            writeln!(out, "The real run writes a new {title} session beside this one; this file is never written.")?
        }
        None => {}
        Some(f) => {
            let dir = f.saved.first().and_then(|(_, p)| p.parent());
            match f.in_place {
                true => writeln!(out, "Rewrote {} in place{}.", file.display(), carried(f))?,
                false => writeln!(
                    out,
                    "Wrote the fork {} ({}); {} is unchanged.",
                    f.session_id,
                    f.path.display(),
                    file.display()
                )?,
            }
            if let Some(dir) = dir {
                writeln!(out, "Originals saved in {} (the placeholders point there).", dir.display())?;
            }
            writeln!(out, "Continue with: {}", Paint::new(ctx).strong(&forks.resume_command(f)))?;
        }
    }
    Ok(())
}

/// Folds the transcript in place, its way back stored first: the version read and the fold's
/// record go into the store durably before the transcript is rewritten, so a full disk refuses
/// the fold (nothing written) and a kill after the rename leaves `undo` all it needs. A rewrite
/// that is refused takes the record back.
fn fold_in_place(
    ctx: &Context,
    (session, word): (&Session<'_>, &str),
    file: &SessionFile,
    edits: &[(String, &RawValue)],
    record: record::Record<'_>,
) -> Result<Forked> {
    let refused = |e: Error| {
        Error::user(format!(
            "{}: the store could not keep the way back ({}); the {word} was not rewritten",
            file.display(),
            e.message
        ))
        .hint("free space for the store (or make it writable), then fold again")
    };
    let mut store = shake_plumbing::store::Store::open(ctx).map_err(|e| refused(e.into()))?;
    store.import_read(file, ctx.host).map_err(|e| refused(e.into()))?;
    let before = record::read(ctx, record.source_session).map_err(|e| refused(e.into()))?;
    let session_id = record.source_session.to_string();
    record::write(ctx, record).map_err(|e| refused(e.into()))?;
    Ok(session.write_fork(edits, ForkWrite::FoldInPlace).inspect_err(|_| {
        if let Err(e) = record::put(ctx, &session_id, before) {
            ctx.warn(format_args!("the record of the fold not written stays in the store: {}", Error::from(e).message));
        }
    })?)
}

/// What an in-place write says of the rows the host appended while it wrote.
pub fn carried(f: &Forked) -> String {
    match f.carried {
        0 => String::new(),
        n => format!(" ({n} bytes of rows appended meanwhile copied after it)"),
    }
}

/// The log entry's data for a plan (edit ids are filled in when the batch is written).
pub fn log_data<'p>(plan: &'p Plan, repairs: Vec<String>) -> LogData<'p> {
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
                id: Cow::Borrowed(&r.target),
                kind: Cow::Borrowed(r.kind.as_str()),
                label: Cow::Borrowed(&r.label),
                tokens: r.tokens,
                edit: Cow::Borrowed(""),
                block: r.block,
                at: r.at.map(|(a, b)| [a, b]),
            })
            .collect(),
        repairs,
        undoes: None,
    }
}

/// What a fold reports: [`summary`], and on a line of its own what the fold costs with the prompt
/// cache when it folds something and is priced (`--plan`'s `message` is the same text).
fn reported(plan: &Plan, source: &ProfileSource, economics: Option<&crate::price::Economics>) -> String {
    match economics.filter(|_| !plan.is_empty()) {
        Some(e) => format!("{}\n{}", summary(plan, source), e.sentence()),
        None => summary(plan, source),
    }
}

/// The one sentence a plan is reported with: `Shook 43 tool results + 1 block (~27,838 tokens).
/// Protects the last 4,000 tokens. Profile: default (built-in). Tokenizer: pi.`
pub fn summary(plan: &Plan, source: &ProfileSource) -> String {
    let o = &plan.options;
    let what = region_counts(|k| plan.count(k), &RegionKind::ALL);
    let head = if let Some(freed) = plan.below_floor {
        let floor = o.rules.floor.map(|f| f.to_string()).unwrap_or_default();
        format!("Nothing to fold: it would free ~{} tokens, under the floor ({floor}).", thousands(freed))
    } else if plan.is_empty() {
        match o.scope {
            Scope::Elide => "Nothing to fold.".to_string(),
            Scope::Thinking => "Nothing to fold: no thinking blocks on this branch.".to_string(),
            Scope::Images => "Nothing to fold: no images on this branch.".to_string(),
        }
    } else {
        format!("Shook {what} (~{} tokens).", thousands(plan.tokens_freed))
    };
    let kept = match o.rules.keep_tool_uses {
        0 => String::new(),
        n => format!(" and the last {}", crate::render::plural(n, "tool use")),
    };
    let tail = match o.scope {
        Scope::Elide => format!(
            " Protects the last {} tokens{kept}. Profile: {} ({source}).",
            thousands(o.profile.tail()),
            o.profile.as_str()
        ),
        Scope::Thinking | Scope::Images => String::new(),
    };
    let never = match o.rules.exclude_tools.as_slice() {
        [] => String::new(),
        tools => format!(" Never folds: {}.", tools.join(", ")),
    };
    format!("{head}{tail}{never} Tokenizer: {}.", o.tokenizer.name)
}

struct Report<'r> {
    paint: Paint,
    /// What the fold costs and saves with the prompt cache (issue 31).
    economics: Option<crate::price::Economics>,
    plan: &'r Plan<'r>,
    source: &'r ProfileSource,
    dry_run: bool,
    leaf: &'r str,
    outcome: &'r batch::Outcome,
}

impl Report<'_> {
    fn human(&self, out: &mut dyn Write) -> Result<()> {
        let paint = self.paint;
        let prefix = if self.dry_run { "[dry-run] · " } else { "" };
        let text = reported(self.plan, self.source, self.economics.as_ref());
        let (head, cache) = text.split_once('\n').map_or((text.as_str(), None), |(h, c)| (h, Some(c)));
        writeln!(out, "{prefix}{}", paint.strong(head))?;
        if let Some(cache) = cache {
            writeln!(out, "{cache}")?;
        }
        Ok(batch::notices(out, paint, self.outcome, self.dry_run, self.leaf)?)
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
            "toolResults": p.tool_results(),
            "supersededReads": p.count(RegionKind::SupersededRead),
            "blocks": p.count(RegionKind::Block),
            "thinking": p.count(RegionKind::Thinking),
            "images": p.count(RegionKind::Image),
            "toolInputs": p.count(RegionKind::ToolInput),
            "tokensFreed": p.tokens_freed,
            "cache": self.economics.as_ref().map(crate::price::Economics::json),
            "protectsTokens": if o.scope == Scope::Elide { o.profile.tail() } else { 0 },
            "targets": targets,
            "appended": self.outcome.appended,
            "leafBefore": self.leaf,
            "leafAfter": self.outcome.appended.last().map_or(self.leaf, String::as_str),
            "resumePointMoved": self.outcome.moved,
        })
    }
}

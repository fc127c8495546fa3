//! `shake meter`: the tokens a plain `shake fold` would free now, as one short figure
//! (`~27k shakeable`), for a status bar or a script.
//!
//! The figure is the fold engine's own plan ([`crate::plan::plan_with_wall`]) with the same options a plain
//! fold resolves, so meter, `fold --dry-run` and the fold's report are one number.
//!
//! The rooms: this file (the command, a reading and its label, a measurement), [`watch`] (one
//! reading, or with `--watch` one per change of the file), [`serve`](mod@serve) (`--serve`'s loop), [`memo`]
//! (the reading remembered per session file), [`grow`] (the append shortcut: measuring the new
//! bytes alone), [`log`] (`--log`), [`statusline`] (`--statusline`, Claude Code's status line)
//! and [`own`] (a host's own meter: OMP's `/shake`).

mod grow;
mod log;
pub(crate) mod memo;
mod own;
mod serve;
pub(crate) mod stamp;
mod statusline;
mod watch;

use std::io::Write;
use std::path::PathBuf;

use crate::price::{economics, Economics, LastTurn};
use crate::profile::Profile;
use crate::rules::Rules;
use crate::scope::Scope;
use anstyle::{AnsiColor, Style};
use serde_json::{json, Value};
use shake_plumbing::host::{Session, View};
use shake_plumbing::regions::RegionKind;
use shake_plumbing::rev::RevArgs;
use shake_plumbing::tokens::cache::Caches;
use shake_plumbing::tokens::calibration::calibrated_for;
use shake_plumbing::tokens::{context_tokens, resolve, Tokenizer, TokenizerName};
use shake_plumbing::{Context, Error, Result};

use crate::fingerprint::Proof;
use crate::plan::{plan_with_wall, FoldOptions};
use crate::profile;

pub use grow::Growth;
pub(crate) use log::append_log;
pub use serve::serve;

/// From this many shakeable tokens the meter shows a warning colour.
pub const WARNING_FROM: u64 = 10_000;
/// From this many it shows the alert colour.
pub const ALERT_FROM: u64 = 25_000;

/// Show how many tokens a plain `shake fold` would free now
#[derive(clap::Args, Debug)]
pub struct MeterArgs {
    #[command(flatten)]
    pub rev: RevArgs,
    /// Print JSON: {"tokens","toolResults","blocks","severity","tokenizer","profile","session","leafId","cache"} (cache: what the fold costs and saves with the prompt cache, or null)
    #[arg(long)]
    pub json: bool,
    /// Tokenizer for the figure [default: as fold's, Claude's own for the session's model when it is Claude, else o200k]
    #[arg(long, value_enum, value_name = "T")]
    pub tokenizer: Option<TokenizerName>,
    /// Tail and block minimum (default: as `shake fold` resolves it)
    #[arg(long, value_enum, value_name = "P")]
    pub profile: Option<Profile>,
    /// Claude Code: measure what is sent to this model (default: the transcript's own last model)
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// Keep running and print a new figure whenever the session file changes (Ctrl-C stops)
    #[arg(long)]
    pub watch: bool,
    /// Append the reading as one JSON line to FILE whenever the figure changes
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Serve readings: read one REV per line on stdin, print one `--json` reading per line (or
    /// {"error"}); the tokenizer is built once (for a host's footer)
    #[arg(long, conflicts_with_all = ["rev", "leaf", "watch", "log"])]
    pub serve: bool,
    /// Claude Code's status line: read its JSON on stdin, meter its `transcript_path` and print
    /// `✂ ~27k shakeable`; always exits 0 (a bad input prints `✂ ?`, the reason on stderr)
    #[arg(long, conflicts_with_all = ["rev", "leaf", "watch", "log", "serve", "json"])]
    pub statusline: bool,
    #[command(flatten)]
    pub rules: crate::rules::RuleArgs,
}

/// How urgent a figure is: ignore, consider, do it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// Below 10,000 tokens.
    Low,
    /// From 10,000.
    Warning,
    /// From 25,000.
    Alert,
}

impl Severity {
    /// The severity of a figure.
    pub fn of(tokens: u64) -> Severity {
        match tokens {
            t if t >= ALERT_FROM => Severity::Alert,
            t if t >= WARNING_FROM => Severity::Warning,
            _ => Severity::Low,
        }
    }

    /// The name in JSON: `low`, `warning`, `alert`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Low => "low",
            Severity::Warning => "warning",
            Severity::Alert => "alert",
        }
    }

    fn style(self) -> Style {
        match self {
            Severity::Low => Style::new().dimmed(),
            Severity::Warning => Style::new().fg_color(Some(AnsiColor::Yellow.into())),
            Severity::Alert => Style::new().bold().fg_color(Some(AnsiColor::Red.into())),
        }
    }
}

/// One reading of the meter.
#[derive(Clone, Debug, PartialEq)]
pub struct Reading {
    /// Tokens a plain fold would free (the plan's `tokens_freed`).
    pub tokens: u64,
    /// Tool results it would fold.
    pub tool_results: usize,
    /// Fenced/XML blocks it would fold.
    pub blocks: usize,
    /// Tokens from the first entry it would fold to the end (what the cache writes again).
    pub suffix: u64,
    /// The newest turn's time, model, cache lifetime and recorded prices.
    pub turn: LastTurn,
    /// What the fold costs and saves with the prompt cache, now ([`priced`]); `None` when
    /// nothing is freed or no price is known.
    pub economics: Option<Economics>,
    /// The tokenizer that counted.
    pub tokenizer: TokenizerName,
    /// The profile planned with.
    pub profile: Profile,
    /// The session file.
    pub session: PathBuf,
    /// The leaf measured (`None` for an empty session).
    pub leaf_id: Option<String>,
}

impl Reading {
    /// The figure's severity.
    pub fn severity(&self) -> Severity {
        Severity::of(self.tokens)
    }

    /// `~27k shakeable`, or `<1k shakeable`, and the verdict when the fold is priced:
    /// `~27k shakeable · pays back in 2 turns`.
    pub fn label(&self) -> String {
        self.priced(label(self.tokens))
    }

    /// The label, coloured by severity when `color` is on.
    pub fn render(&self, color: bool) -> String {
        self.priced(render(self.tokens, color))
    }

    /// A figure's text with the verdict after it ([`with_verdict`]).
    fn priced(&self, figure: String) -> String {
        with_verdict(figure, self.tokens, self.economics.as_ref())
    }

    /// `{"tokens","toolResults","blocks","severity","tokenizer","profile","session","leafId","cache"}`
    /// (`cache`: the economics' numbers, or `null`).
    pub fn json(&self) -> Value {
        json!({
            "tokens": self.tokens,
            "toolResults": self.tool_results,
            "blocks": self.blocks,
            "severity": self.severity().as_str(),
            "tokenizer": self.tokenizer.as_str(),
            "profile": self.profile.as_str(),
            "session": self.session.to_string_lossy(),
            "leafId": self.leaf_id,
            "cache": self.economics.as_ref().map(Economics::json),
        })
    }
}

/// `~27k shakeable`, or `<1k shakeable`, for a figure.
pub fn label(tokens: u64) -> String {
    match tokens {
        t if t < 1_000 => "<1k shakeable".into(),
        t => format!("~{}k shakeable", crate::render::thousands((t + 500) / 1_000)),
    }
}

/// A figure's text with the verdict after it, when there is one (from 1,000 tokens on: below,
/// the figure says already that there is little to gain): `~27k shakeable · pays back in 2 turns`.
pub fn with_verdict(figure: String, tokens: u64, economics: Option<&Economics>) -> String {
    match economics {
        Some(e) if tokens >= 1_000 => format!("{figure} · {}", e.verdict()),
        _ => figure,
    }
}

/// A figure's label, coloured by its severity when `color` is on.
pub fn render(tokens: u64, color: bool) -> String {
    let style = Severity::of(tokens).style();
    match color {
        true => format!("{style}{}{style:#}", label(tokens)),
        false => label(tokens),
    }
}

/// Prices a reading now (`$SHAKE_TIMESTAMP`, else the clock), with the config file's prices.
pub(crate) fn priced(ctx: &Context, mut reading: Reading) -> Result<Reading> {
    let config = crate::config::load(ctx)?;
    let now = shake_plumbing::time::now_millis();
    reading.economics = economics(reading.tokens, reading.suffix, &reading.turn, now, &config);
    Ok(reading)
}

/// Measures a session at a leaf (`at_last`: the host's leaf on load): the plan a plain `shake
/// fold` would make there, with the wall read from the leaf's stored overlay (or derived and
/// stored).
pub fn measure(
    ctx: &Context,
    session: &Session<'_>,
    leaf: Option<usize>,
    at_last: bool,
    (profile, rules): (Profile, &Rules),
    tok: Tokenizer,
) -> Result<(Reading, Option<Growth>)> {
    let projection = View::at(session, leaf)?;
    let wall = crate::overlay::wall_at(ctx, session, &projection);
    let options = FoldOptions { scope: Scope::Elide, profile, tokenizer: tok, rules: rules.clone() };
    // A growth plans every position once (its figures are the plan's: the gains before the
    // tail), so the plan is not made a second time.
    let turn = LastTurn::of(&projection);
    let (figures, growth) = match Growth::of(&projection, &wall, &options, at_last, &turn) {
        Some((growth, figures)) => (figures, Some(growth)),
        None => {
            let tokens = context_tokens(&projection, &tok);
            let plan = plan_with_wall(&projection, &wall, &options, &tokens);
            let suffix = crate::price::suffix_of(&projection, &plan, &tokens);
            ((plan.tokens_freed, plan.tool_results(), plan.count(RegionKind::Block), suffix), None)
        }
    };
    let reading = Reading {
        tokens: figures.0,
        tool_results: figures.1,
        blocks: figures.2,
        suffix: figures.3,
        turn,
        economics: None,
        tokenizer: tok.name,
        profile,
        session: session.file.path.clone(),
        leaf_id: leaf.map(|l| session.entries[l].id().to_string()),
    };
    Ok((reading, growth))
}

/// What a meter counts with: the tokenizer chosen (`--tokenizer`), else each session's own
/// (`tokens::default_for`), through caches opened once for all the readings of the process.
pub struct Counting<'c> {
    /// `--tokenizer`, when given.
    pub(crate) choice: Option<TokenizerName>,
    caches: Caches<'c>,
    /// Says when the count is pi's estimate on a host without one of its own (off for the status
    /// line: the setting was chosen once, and Claude Code does not draw its stderr).
    says_estimate: bool,
}

impl<'c> Counting<'c> {
    /// Counts with `choice`, else each session's own tokenizer.
    pub(crate) fn new(ctx: &'c Context, choice: Option<TokenizerName>) -> Counting<'c> {
        Counting { choice, caches: Caches::new(ctx), says_estimate: true }
    }

    /// Counts as [`Counting::new`], without saying that a count is pi's estimate on a host
    /// without its own (`--statusline`).
    pub(crate) fn quiet(ctx: &'c Context, choice: Option<TokenizerName>) -> Counting<'c> {
        Counting { says_estimate: false, ..Counting::new(ctx, choice) }
    }

    /// `name` through its cache.
    pub(crate) fn tokenizer(&self, name: TokenizerName) -> Tokenizer {
        self.caches.get(name)
    }

    /// Saves what the caches learnt (a long-running meter, between readings).
    pub(crate) fn save(&self) {
        self.caches.save();
    }
}

/// Reads the session `rev` names and measures it, counting with the tokenizer chosen or the
/// session's own (re-calibrated for this session when it is `calibrated`); also returns the
/// proof of the bytes measured.
fn read(ctx: &Context, rev: &RevArgs, policy: (Profile, &Rules), counting: &Counting<'_>) -> Result<Measured> {
    let (file, rev) = rev.load(ctx)?;
    let (session, leaf) = rev.open(ctx, &file)?;
    let tok = counting.tokenizer(resolve(counting.choice, &session, leaf, ctx.model.as_deref()));
    if counting.says_estimate {
        shake_plumbing::tokens::cache::warn_foreign_estimate(ctx, tok.name, &session);
    }
    let tok = match tok.name {
        TokenizerName::Calibrated => calibrated_for(ctx, &session, tok)?,
        _ => tok,
    };
    // Without `:LEAF` the leaf is the host's on load (asking again would load Claude Code's chain again).
    let at_last = rev.entry.is_none() || leaf == session.default_leaf();
    let (reading, growth) = measure(ctx, &session, leaf, at_last, policy, tok)?;
    Ok(Measured { reading, at_last, growth, proof: Proof::of(file.raw()) })
}

/// A reading of the file `state` names from remembered figures.
fn reading_of(
    state: &stamp::FileState,
    tokenizer: TokenizerName,
    profile: Profile,
    f: (u64, usize, usize, u64),
    leaf_id: Option<String>,
    turn: LastTurn,
) -> Reading {
    Reading {
        tokens: f.0,
        tool_results: f.1,
        blocks: f.2,
        suffix: f.3,
        turn,
        economics: None,
        tokenizer,
        profile,
        session: state.path.clone(),
        leaf_id,
    }
}

/// A reading and what the memo keeps of it.
struct Measured {
    reading: Reading,
    /// The leaf measured is pi's leaf on load (the file's last entry).
    at_last: bool,
    growth: Option<Growth>,
    proof: Proof,
}

/// Runs `shake meter`.
pub fn run(ctx: &Context, args: &MeterArgs, out: &mut dyn Write) -> Result {
    let ctx = &ctx.with_model(args.model.as_deref());
    if args.statusline {
        return statusline::run(ctx, args, std::io::stdin().lock(), out);
    }
    // A host with a meter of its own (oh-my-pi's /shake) measures by its own rules.
    if let Some(own) = own::of(ctx, &args.rev) {
        // The only host with a meter of its own is oh-my-pi, whose /shake has no such rule: the
        // flag is refused rather than ignored.
        if args.rules.fold_tool_inputs == Some(true) {
            return Err(Error::user(
                "--fold-tool-inputs: this session's meter is OMP's own /shake, and OMP's own /shake never folds tool inputs",
            )
            .hint("omit --fold-tool-inputs"));
        }
        return own::run(ctx, args, own, out);
    }
    let (profile, _) = profile::resolve(ctx, args.profile)?;
    let rules = crate::rules::resolve(ctx, &args.rules, profile)?;
    let counting = Counting::new(ctx, args.tokenizer);
    if args.serve {
        return serve(ctx, profile, &rules, &counting, std::io::stdin().lock(), out);
    }
    watch::run(ctx, args, profile, &rules, &counting, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reading of `tokens` (the other figures fixed).
    pub(super) fn reading(tokens: u64) -> Reading {
        Reading {
            tokens,
            tool_results: 3,
            blocks: 1,
            suffix: 0,
            turn: LastTurn::default(),
            economics: None,
            tokenizer: TokenizerName::O200k,
            profile: Profile::Default,
            session: PathBuf::from("/s.jsonl"),
            leaf_id: Some("ab".into()),
        }
    }

    #[test]
    fn labels_round_to_thousands() {
        assert_eq!(reading(0).label(), "<1k shakeable");
        assert_eq!(reading(999).label(), "<1k shakeable");
        assert_eq!(reading(1_000).label(), "~1k shakeable");
        assert_eq!(reading(27_838).label(), "~28k shakeable");
        assert_eq!(reading(27_499).label(), "~27k shakeable");
        assert_eq!(reading(1_234_567).label(), "~1,235k shakeable");
    }

    #[test]
    fn severity_thresholds_and_colours() {
        assert_eq!(reading(9_999).severity(), Severity::Low);
        assert_eq!(reading(10_000).severity(), Severity::Warning);
        assert_eq!(reading(24_999).severity(), Severity::Warning);
        assert_eq!(reading(25_000).severity(), Severity::Alert);
        assert_eq!(reading(30_000).render(false), "~30k shakeable");
        assert_eq!(reading(30_000).render(true), "\u{1b}[1m\u{1b}[31m~30k shakeable\u{1b}[0m");
        assert_eq!(reading(12_000).render(true), "\u{1b}[33m~12k shakeable\u{1b}[0m");
        assert_eq!(reading(2_000).render(true), "\u{1b}[2m~2k shakeable\u{1b}[0m");
    }

    #[test]
    fn json_has_the_documented_keys() {
        let j = reading(12_000).json();
        let keys: Vec<&str> = j.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            ["tokens", "toolResults", "blocks", "severity", "tokenizer", "profile", "session", "leafId", "cache"]
        );
        assert_eq!(j["severity"], "warning");
    }
}

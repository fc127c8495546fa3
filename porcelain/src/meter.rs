//! `shake meter`: the tokens a plain `shake fold` would free now, as one short figure
//! (`~27k shakeable`), for a status bar or a script.
//!
//! The figure is the fold engine's own plan ([`crate::plan::plan_with_wall`]) with the same options a plain
//! fold resolves, so meter, `fold --dry-run` and the fold's report are one number.

use std::io::{IsTerminal, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anstyle::{AnsiColor, Style};
use serde_json::{json, Value};
use shake_plumbing::cmd::tokens::{calibrated_for, open_cached, save_cache};
use shake_plumbing::host::{self, Role, Session, SessionFile, View};
use shake_plumbing::regions::{is_skill_path, tail_start_by, Profile, RegionKind, Scope};
use shake_plumbing::rev::RevArgs;
use shake_plumbing::tokens::{context_tokens, Tokenizer, TokenizerName, DEFAULT_TOKENIZER};
use shake_plumbing::{Context, Result};

use crate::plan::{gains, plan_with_wall, FoldOptions, Gain};
use crate::profile;
use crate::wall::Wall;

/// From this many shakeable tokens the meter shows a warning colour.
pub const WARNING_FROM: u64 = 10_000;
/// From this many it shows the alert colour.
pub const ALERT_FROM: u64 = 25_000;
/// How often `--watch` looks at the session file.
const POLL: Duration = Duration::from_millis(500);

/// Show how many tokens a plain `shake fold` would free now
#[derive(clap::Args, Debug)]
pub struct MeterArgs {
    #[command(flatten)]
    pub rev: RevArgs,
    /// Print JSON: {"tokens","toolResults","blocks","severity","tokenizer","profile","session","leafId"}
    #[arg(long)]
    pub json: bool,
    /// Tokenizer for the figure (the same default as fold)
    #[arg(long, value_enum, value_name = "T", default_value_t = DEFAULT_TOKENIZER)]
    pub tokenizer: TokenizerName,
    /// Tail and block minimum (default: as `shake fold` resolves it)
    #[arg(long, value_enum, value_name = "P")]
    pub profile: Option<Profile>,
    /// Keep running and print a new figure whenever the session file changes (Ctrl-C stops)
    #[arg(long)]
    pub watch: bool,
    /// Append the reading as one JSON line to FILE whenever the figure changes
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
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
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reading {
    /// Tokens a plain fold would free (the plan's `tokens_freed`).
    pub tokens: u64,
    /// Tool results it would fold.
    pub tool_results: usize,
    /// Fenced/XML blocks it would fold.
    pub blocks: usize,
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

    /// `~27k shakeable`, or `<1k shakeable`.
    pub fn label(&self) -> String {
        match self.tokens {
            t if t < 1_000 => "<1k shakeable".into(),
            t => format!("~{}k shakeable", crate::render::thousands((t + 500) / 1_000)),
        }
    }

    /// The label, coloured by severity when `color` is on.
    pub fn render(&self, color: bool) -> String {
        let style = self.severity().style();
        match color {
            true => format!("{style}{}{style:#}", self.label()),
            false => self.label(),
        }
    }

    /// `{"tokens","toolResults","blocks","severity","tokenizer","profile","session","leafId"}`.
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
        })
    }
}

/// Measures a session at a leaf: the plan a plain `shake fold` would make there, with the wall
/// read from the leaf's stored overlay (or derived and stored).
pub fn measure(
    ctx: &Context,
    session: &Session<'_>,
    leaf: Option<usize>,
    profile: Profile,
    tok: Tokenizer,
) -> Result<(Reading, Option<Growth>)> {
    let projection = View::at(session, leaf)?;
    // Tokenize what the cache lacks on every core first; the plan's counts are then lookups.
    tok.prefetch(&projection);
    let wall = crate::overlay::wall_at(ctx, session, &projection);
    let options = FoldOptions { scope: Scope::Elide, profile, tokenizer: tok };
    let plan = plan_with_wall(&projection, &wall, &options);
    let reading = Reading {
        tokens: plan.tokens_freed,
        tool_results: plan.count(RegionKind::ToolResult),
        blocks: plan.count(RegionKind::Block),
        tokenizer: tok.name,
        profile,
        session: session.file.path.clone(),
        leaf_id: leaf.map(|l| session.entries[l].id.to_string()),
    };
    Ok((reading, Growth::of(&projection, &wall, &options)))
}

/// Reads the session the arguments name and measures it, counting with `tok` (re-calibrated for
/// this session when it is `calibrated`).
fn read(ctx: &Context, args: &MeterArgs, profile: Profile, tok: Tokenizer) -> Result<(Reading, Option<Growth>)> {
    let (file, rev) = args.rev.load(ctx)?;
    let session = shake_plumbing::host::load(&file, ctx.host)?;
    ctx.warn_session(&session);
    let leaf = rev.leaf(&session)?;
    let tok = match tok.name {
        TokenizerName::Calibrated => calibrated_for(ctx, &session, tok)?,
        _ => tok,
    };
    let reading = measure(ctx, &session, leaf, profile, tok);
    save_cache(ctx, &tok);
    reading
}

/// Runs `shake meter`.
pub fn run(ctx: &Context, args: &MeterArgs, out: &mut dyn Write) -> Result {
    let (profile, _) = profile::resolve(ctx, args.profile)?;
    let tok = open_cached(ctx, args.tokenizer);
    let color = !args.json && color_on();
    let mut state = FileState::of(ctx, &args.rev)?;
    loop {
        let key = memo_key(&state, args, profile);
        let known = key.as_deref().and_then(|k| load_memo(ctx).entries.into_iter().find(|e| e.key == k));
        let reading = match known.as_ref().and_then(|e| e.recall(&state, args.tokenizer, profile)) {
            Some(reading) => reading,
            None => {
                let grown = known.as_ref().filter(|_| args.rev.rev().entry.is_none()).and_then(|e| {
                    let grown = e.grow(&state, profile, tok);
                    save_cache(ctx, &tok);
                    grown
                });
                let (reading, growth) = match grown {
                    Some(grown) => grown,
                    None => read(ctx, args, profile, tok)?,
                };
                if let Some(k) = &key {
                    remember(ctx, k, &state, &reading, growth);
                }
                reading
            }
        };
        if args.json {
            writeln!(out, "{}", reading.json())?;
        } else {
            writeln!(out, "{}", reading.render(color))?;
        }
        out.flush()?;
        if let Some(log) = &args.log {
            append_log(log, &reading)?;
        }
        if !args.watch {
            return Ok(0);
        }
        // Poll: a stat every half second; read again only when the file changed.
        loop {
            std::thread::sleep(POLL);
            let now = FileState::of(ctx, &args.rev)?;
            if now != state {
                state = now;
                break;
            }
        }
    }
}

/// Colour only on a terminal, and never with `NO_COLOR`.
fn color_on() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stdout().is_terminal()
}

/// What `--watch` and the memo compare: which file the revision names now, and its size,
/// modification time and inode (as git's index does for a work-tree file).
#[derive(Clone, Debug, PartialEq, Eq)]
struct FileState {
    path: PathBuf,
    len: u64,
    mtime_ns: u128,
    inode: u64,
}

impl FileState {
    fn of(ctx: &Context, rev: &RevArgs) -> Result<FileState> {
        let path = rev.rev().session_path(ctx)?;
        let meta = std::fs::metadata(&path).map_err(|e| shake_plumbing::Error::io(path.display(), e))?;
        let mtime_ns = meta.modified().ok().and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok());
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(&meta);
        #[cfg(not(unix))]
        let inode = 0;
        Ok(FileState { path, len: meta.len(), mtime_ns: mtime_ns.map_or(0, |d| d.as_nanos()), inode })
    }

    /// Tells whether the file was modified long enough ago that a write in the same clock tick
    /// cannot hide behind an unchanged stamp (git's "racily clean" rule).
    fn settled(&self) -> bool {
        let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        self.mtime_ns > 0 && now.saturating_sub(self.mtime_ns) >= SETTLED.as_nanos()
    }
}

/// A file modified less than this long ago is measured, never recalled from the memo.
const SETTLED: Duration = Duration::from_secs(2);
/// Readings the memo keeps (one per session, leaf, tokenizer and profile measured lately).
const MEMO_ENTRIES: usize = 64;

/// Readings remembered per (session file state, leaf, tokenizer, profile), so a meter with
/// nothing new to measure reads one small file instead of the session:
/// `<store>/cache/meter.json`. Only an optimisation: unreadable means empty.
#[derive(Default, serde::Serialize, serde::Deserialize)]
struct Memo {
    entries: Vec<MemoEntry>,
}

#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct MemoEntry {
    key: String,
    len: u64,
    mtime_ns: u128,
    inode: u64,
    /// The file was settled when measured, so the reading may answer for the same state.
    #[serde(default)]
    exact: bool,
    tokens: u64,
    tool_results: usize,
    blocks: usize,
    leaf_id: Option<String>,
    /// What an append to this state needs to be measured from the new bytes alone.
    #[serde(default)]
    growth: Option<Growth>,
}

/// The memo key of a reading, or `None` when it must always be measured: `calibrated` (its
/// ratio may come from `calibration.json`).
fn memo_key(state: &FileState, args: &MeterArgs, profile: Profile) -> Option<String> {
    if args.tokenizer == TokenizerName::Calibrated {
        return None;
    }
    let rev = args.rev.rev();
    // The version, because what a plan frees is a function of shake's rules too.
    Some(format!(
        "{} {} {} {} {}",
        env!("CARGO_PKG_VERSION"),
        args.tokenizer,
        profile.as_str(),
        rev.entry.as_deref().unwrap_or("-"),
        std::fs::canonicalize(&state.path).unwrap_or_else(|_| state.path.clone()).display()
    ))
}

fn memo_path(ctx: &Context) -> PathBuf {
    ctx.store_dir.join("cache").join("meter.json")
}

fn load_memo(ctx: &Context) -> Memo {
    std::fs::read(memo_path(ctx)).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default()
}

impl MemoEntry {
    /// The remembered reading, if it was measured settled and the file is still exactly as it was.
    fn recall(&self, state: &FileState, tokenizer: TokenizerName, profile: Profile) -> Option<Reading> {
        if !self.exact || (self.len, self.mtime_ns, self.inode) != (state.len, state.mtime_ns, state.inode) {
            return None;
        }
        Some(self.reading(state, tokenizer, profile, (self.tokens, self.tool_results, self.blocks)))
    }

    fn reading(
        &self,
        state: &FileState,
        tokenizer: TokenizerName,
        profile: Profile,
        f: (u64, usize, usize),
    ) -> Reading {
        Reading {
            tokens: f.0,
            tool_results: f.1,
            blocks: f.2,
            tokenizer,
            profile,
            session: state.path.clone(),
            leaf_id: self.leaf_id.clone(),
        }
    }

    /// Measures the file from the bytes appended since this reading, when they are whole lines of
    /// plain entries continuing its leaf (see [`Growth`]); `None` means: measure it all.
    fn grow(&self, state: &FileState, profile: Profile, tok: Tokenizer) -> Option<(Reading, Option<Growth>)> {
        let g = self.growth.as_ref()?;
        if state.inode != self.inode || state.len <= self.len {
            return None;
        }
        let from = self.len.checked_sub(g.last_bytes.len() as u64)?;
        let mut file = std::fs::File::open(&state.path).ok()?;
        file.seek(SeekFrom::Start(from)).ok()?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).ok()?;
        let (before, new) = bytes.split_at_checked(g.last_bytes.len())?;
        if before != g.last_bytes || new.last() != Some(&b'\n') {
            return None;
        }
        let mut mini = format!("{}\n", g.header).into_bytes();
        mini.extend_from_slice(new);
        let mini = SessionFile::from_bytes(state.path.clone(), mini);
        let session = host::load(&mini, None).ok()?;
        let projection = View::at(&session, session.default_leaf()).ok()?;
        if !g.continued_by(&projection, self.leaf_id.as_deref()?) {
            return None;
        }
        tok.prefetch(&projection);
        let options = FoldOptions { scope: Scope::Elide, profile, tokenizer: tok };
        let mut next = g.clone();
        next.extend(&projection, &Wall::at(&projection), &options)?;
        next.last_bytes = bytes[bytes.len().saturating_sub(LAST_BYTES)..].to_vec();
        let start = tail_start_by(next.tokens.len(), profile.tail(), |pos| next.tokens[pos]);
        let sum =
            next.gains[..start].iter().fold((0, 0, 0), |(t, r, b), g| (t + g.tokens, r + g.tool_results, b + g.blocks));
        let mut entry = self.clone();
        entry.leaf_id = session.entries.last().map(|e| e.id.to_string());
        Some((entry.reading(state, tok.name, profile, sum), Some(next)))
    }
}

/// How many bytes before the measured length must still be there for an append to be trusted.
const LAST_BYTES: usize = 4096;
/// Memo entries that keep their [`Growth`] (the newest); older ones keep only their reading.
const GROWTH_ENTRIES: usize = 4;

/// What measuring an appended file from its new bytes alone needs, per context position of the
/// measured leaf: its tokens and its [`Gain`]. When the new lines are plain entries continuing
/// the leaf (messages and entries pi keeps out of the context; no edit, compaction or branch
/// summary), the old context is unchanged and each old position's gain too, so the new plan is
/// the new tail (found from the tokens) and the sum of the gains before it: the full plan's figures.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub struct Growth {
    /// The session header line (the new lines are parsed after it).
    header: String,
    /// The file's last bytes when measured.
    last_bytes: Vec<u8>,
    /// Ids on the leaf's path (a new entry reusing one would change the path).
    path_ids: Vec<String>,
    /// Tool-call ids in the context, and those whose `path` is a `skill://` (the skip rules).
    calls: Vec<String>,
    skill_calls: Vec<String>,
    /// Per context position: tokens, and the gain of folding it.
    tokens: Vec<u64>,
    gains: Vec<Gain>,
}

impl Growth {
    /// The growth of a measured projection, or `None` when an append to it cannot be followed
    /// (a session pi would migrate, a file not ending in a newline, no leaf).
    fn of(projection: &View<'_, '_>, wall: &Wall, options: &FoldOptions) -> Option<Growth> {
        let session = projection.session;
        let raw = session.file.raw();
        if !session.file.ends_with_newline() {
            return None;
        }
        let header = String::from_utf8(session.append_prefix()?.to_vec()).ok()?;
        projection.leaf?;
        let mut g = Growth {
            header,
            last_bytes: raw[raw.len().saturating_sub(LAST_BYTES)..].to_vec(),
            path_ids: Vec::new(),
            calls: Vec::new(),
            skill_calls: Vec::new(),
            tokens: Vec::new(),
            gains: Vec::new(),
        };
        g.extend(projection, wall, options)?;
        Some(g)
    }

    /// Appends a projection's positions (all of them: the whole context, or the new entries alone).
    fn extend(&mut self, projection: &View<'_, '_>, wall: &Wall, options: &FoldOptions) -> Option<()> {
        for call in &projection.calls {
            if is_skill_path(host::model::call_path(call.arguments).as_deref()) {
                self.skill_calls.push(call.id.to_string());
            }
            self.calls.push(call.id.to_string());
        }
        self.tokens.extend(context_tokens(projection, &options.tokenizer));
        self.gains.extend(gains(projection, wall, options));
        let session = projection.session;
        self.path_ids.extend(session.path(projection.leaf?).ok()?.iter().map(|&i| session.entries[i].id.to_string()));
        Some(())
    }

    /// Tells whether `new` (the appended lines parsed alone) is a chain of plain entries from
    /// `leaf` that leaves every old position's figures as they were.
    fn continued_by(&self, new: &View<'_, '_>, leaf: &str) -> bool {
        let session = new.session;
        // The one warning expected: the first new entry's parent is not in the new lines.
        if session.warnings.len() != 1 || session.entries.is_empty() {
            return false;
        }
        let mut ids: std::collections::HashSet<&str> = self.path_ids.iter().map(String::as_str).collect();
        let mut parent = leaf;
        for (i, e) in session.entries.iter().enumerate() {
            if e.parent_id.as_deref() != Some(parent) || !ids.insert(&e.id) || !session.is_plain(i) {
                return false;
            }
            let result = new.unit(i).filter(|u| u.role == Role::ToolResult).and_then(|u| u.tool.as_ref());
            if result.and_then(|t| t.call_id.as_deref()).is_some_and(|c| self.skill_calls.iter().any(|s| s == c)) {
                return false;
            }
            parent = &e.id;
        }
        new.calls.iter().all(|call| !self.calls.iter().any(|c| *c == call.id))
    }
}

/// Remembers a reading (temporary file, then rename); failing to is not an error.
fn remember(ctx: &Context, key: &str, state: &FileState, r: &Reading, growth: Option<Growth>) {
    let mut memo = load_memo(ctx);
    memo.entries.retain(|e| e.key != key);
    memo.entries.push(MemoEntry {
        key: key.to_string(),
        len: state.len,
        mtime_ns: state.mtime_ns,
        inode: state.inode,
        exact: state.settled(),
        tokens: r.tokens,
        tool_results: r.tool_results,
        blocks: r.blocks,
        leaf_id: r.leaf_id.clone(),
        growth,
    });
    let excess = memo.entries.len().saturating_sub(MEMO_ENTRIES);
    memo.entries.drain(..excess);
    let keep_growth = memo.entries.len().saturating_sub(GROWTH_ENTRIES);
    memo.entries[..keep_growth].iter_mut().for_each(|e| e.growth = None);
    let path = memo_path(ctx);
    let write = || -> std::io::Result<()> {
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let tmp = dir.join(format!(".meter.json.{}", std::process::id()));
        std::fs::write(&tmp, serde_json::to_vec(&memo)?)?;
        std::fs::rename(&tmp, &path)
    };
    if let Err(e) = write() {
        ctx.warn(format_args!("{}: cannot save the meter memo: {e}", path.display()));
    }
}

/// Appends the reading to the log unless the log's last line already says the same.
fn append_log(path: &Path, reading: &Reading) -> Result<()> {
    let mut line = reading.json();
    if last_logged(path).is_some_and(|last| same_figure(&last, &line)) {
        return Ok(());
    }
    line["time"] = Value::from(shake_plumbing::time::iso(shake_plumbing::time::now_millis()));
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| shake_plumbing::Error::io(format_args!("cannot open the meter log {}", path.display()), e))?;
    file.write_all(format!("{line}\n").as_bytes())?;
    Ok(())
}

fn same_figure(a: &Value, b: &Value) -> bool {
    ["tokens", "toolResults", "blocks", "tokenizer", "profile", "session", "leafId"].iter().all(|k| a[k] == b[k])
}

/// The last line of the log, when it is JSON (reads at most the last 64 KiB).
fn last_logged(path: &Path) -> Option<Value> {
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(64 << 10))).ok()?;
    let mut tail = String::new();
    file.read_to_string(&mut tail).ok()?;
    serde_json::from_str(tail.trim_end().rsplit('\n').next()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(tokens: u64) -> Reading {
        Reading {
            tokens,
            tool_results: 3,
            blocks: 1,
            tokenizer: TokenizerName::O200k,
            profile: Profile::Default,
            session: PathBuf::from("/s.jsonl"),
            leaf_id: Some("ab".into()),
        }
    }

    /// The shortcut against the full plan: each generated session is measured at a prefix cut
    /// at a line, then grown by the lines after it; where the shortcut is taken (plain entries)
    /// its figures are the whole file's plan, and it is taken on most cuts.
    #[test]
    fn growing_a_prefix_equals_planning_the_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mut taken = 0;
        for seed in 1..=10u64 {
            let options = shake_plumbing::host::generate::Options {
                seed,
                limit: shake_plumbing::host::generate::Limit::Default,
                cwd: None,
            };
            let bytes = shake_plumbing::host::generate::generate(&options);
            let ends: Vec<usize> = bytes.iter().enumerate().filter(|(_, &b)| b == b'\n').map(|(i, _)| i + 1).collect();
            let profile = [Profile::Default, Profile::Aggressive, Profile::Conservative][seed as usize % 3];
            let tok = Tokenizer::new(TokenizerName::Pi);
            let fold = FoldOptions { scope: Scope::Elide, profile, tokenizer: tok };
            for cut in ends.iter().skip(3).step_by(7) {
                let prefix = SessionFile::from_bytes(PathBuf::from("p.jsonl"), bytes[..*cut].to_vec());
                let session = host::load(&prefix, None).unwrap();
                let projection = View::at(&session, session.default_leaf()).unwrap();
                let entry = MemoEntry {
                    key: String::new(),
                    len: *cut as u64,
                    mtime_ns: 0,
                    inode: 1,
                    exact: false,
                    tokens: 0,
                    tool_results: 0,
                    blocks: 0,
                    leaf_id: session.entries.last().map(|e| e.id.to_string()),
                    growth: Growth::of(&projection, &Wall::at(&projection), &fold),
                };
                let path = dir.path().join(format!("s{seed}-{cut}.jsonl"));
                std::fs::write(&path, &bytes).unwrap();
                let state = FileState { path, len: bytes.len() as u64, mtime_ns: 0, inode: 1 };
                let Some((reading, _)) = entry.grow(&state, profile, tok) else { continue };
                taken += 1;
                let whole = SessionFile::from_bytes(PathBuf::from("w.jsonl"), bytes.clone());
                let session = host::load(&whole, None).unwrap();
                let projection = View::at(&session, session.default_leaf()).unwrap();
                let plan = plan_with_wall(&projection, &Wall::at(&projection), &fold);
                let figures = (plan.tokens_freed, plan.count(RegionKind::ToolResult), plan.count(RegionKind::Block));
                assert_eq!((reading.tokens, reading.tool_results, reading.blocks), figures, "seed {seed} cut {cut}");
            }
        }
        assert!(taken >= 20, "the shortcut was taken {taken} times");
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
        assert_eq!(keys, ["tokens", "toolResults", "blocks", "severity", "tokenizer", "profile", "session", "leafId"]);
        assert_eq!(j["severity"], "warning");
    }

    #[test]
    fn the_log_gets_a_line_only_when_the_figure_changes() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("meter.jsonl");
        append_log(&log, &reading(12_000)).unwrap();
        append_log(&log, &reading(12_000)).unwrap();
        append_log(&log, &reading(500)).unwrap();
        let text = std::fs::read_to_string(&log).unwrap();
        let tokens: Vec<u64> =
            text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["tokens"].as_u64().unwrap()).collect();
        assert_eq!(tokens, [12_000, 500]);
        assert!(text.lines().all(|l| l.contains("\"time\":\"")));
    }
}

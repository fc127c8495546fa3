//! `shake meter`: the tokens a plain `shake fold` would free now, as one short figure
//! (`~27k shakeable`), for a status bar or a script.
//!
//! The figure is the fold engine's own plan ([`crate::plan::plan_with_wall`]) with the same options a plain
//! fold resolves, so meter, `fold --dry-run` and the fold's report are one number.

use std::io::{BufRead, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use anstyle::{AnsiColor, Style};
use serde_json::{json, Value};
use shake_plumbing::cmd::tokens::{calibrated_for, open_cached};
use shake_plumbing::host::{self, Role, Session, SessionFile, View};
use shake_plumbing::regions::{is_skill_path, tail_start_by, Profile, RegionKind, Scope};
use shake_plumbing::rev::RevArgs;
use shake_plumbing::token_cache::CachedTokenizer;
use shake_plumbing::tokens::{context_tokens, Tokenizer, TokenizerName, DEFAULT_TOKENIZER};
use shake_plumbing::{Context, Result};

use crate::fingerprint::{Bloom, Proof};
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
    /// Serve readings: read one REV per line on stdin, print one `--json` reading per line (or
    /// {"error"}); the tokenizer is built once (for a host's footer)
    #[arg(long, conflicts_with_all = ["rev", "leaf", "watch", "log"])]
    pub serve: bool,
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
        label(self.tokens)
    }

    /// The label, coloured by severity when `color` is on.
    pub fn render(&self, color: bool) -> String {
        render(self.tokens, color)
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

/// `~27k shakeable`, or `<1k shakeable`, for a figure.
pub fn label(tokens: u64) -> String {
    match tokens {
        t if t < 1_000 => "<1k shakeable".into(),
        t => format!("~{}k shakeable", crate::render::thousands((t + 500) / 1_000)),
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

/// Reads the session `rev` names and measures it, counting with `tok` (re-calibrated for this
/// session when it is `calibrated`); also returns the proof of the bytes measured.
fn read(ctx: &Context, rev: &RevArgs, profile: Profile, tok: Tokenizer) -> Result<Measured> {
    let (file, rev) = rev.load(ctx)?;
    let (session, leaf) = rev.open(ctx, &file)?;
    let tok = match tok.name {
        TokenizerName::Calibrated => calibrated_for(ctx, &session, tok)?,
        _ => tok,
    };
    let (reading, growth) = measure(ctx, &session, leaf, profile, tok)?;
    Ok(Measured { reading, at_last: leaf == session.default_leaf(), growth, proof: Proof::of(file.raw()) })
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
    if crate::omp_meter::is_omp(ctx, &args.rev)? {
        return crate::omp_meter::run(ctx, args, ctx.color, out);
    }
    let (profile, _) = profile::resolve(ctx, args.profile)?;
    let tok = open_cached(ctx, args.tokenizer);
    if args.serve {
        return serve(ctx, profile, &tok, std::io::stdin().lock(), out);
    }
    let color = !args.json && ctx.color;
    let mut state = FileState::of(ctx, &args.rev)?;
    loop {
        let reading = reading(ctx, &args.rev, &state, profile, *tok)?;
        if args.json {
            writeln!(out, "{}", reading.json())?;
        } else {
            writeln!(out, "{}", reading.render(color))?;
        }
        out.flush()?;
        if let Some(log) = &args.log {
            append_log(log, reading.json())?;
        }
        if !args.watch {
            return Ok(0);
        }
        // A watching meter runs for hours: keep what it learnt after every reading.
        tok.save();
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

/// How often `--serve` saves the token cache while it runs (and once at the end): saving writes
/// the whole cache, which a reading per turn should not pay for.
const SAVE_EVERY: Duration = Duration::from_secs(30);

/// `shake meter --serve`: one request per input line, a revision as on the command line (`FILE`,
/// `FILE:LEAF`, a session id; an empty line is pi's current session here), and one line of
/// output per request, in order: the `--json` reading, or `{"error": MESSAGE}`. Stops at the end
/// of the input. The tokenizer's tables and the token cache are built once for every request.
pub fn serve(
    ctx: &Context,
    profile: Profile,
    tok: &CachedTokenizer<'_>,
    input: impl BufRead,
    out: &mut dyn Write,
) -> Result {
    let mut saved = Instant::now();
    for line in input.lines() {
        let line = line?;
        let line = line.trim_end_matches('\r');
        let rev = RevArgs { rev: (!line.is_empty()).then(|| line.to_string()), leaf: None };
        let answer = FileState::of(ctx, &rev).and_then(|state| reading(ctx, &rev, &state, profile, **tok));
        match answer {
            Ok(r) => writeln!(out, "{}", r.json())?,
            Err(e) => writeln!(out, "{}", json!({ "error": e.to_string() }))?,
        }
        out.flush()?;
        if saved.elapsed() >= SAVE_EVERY {
            tok.save();
            saved = Instant::now();
        }
    }
    Ok(0)
}

/// One reading of the session `rev` names, whose file is now as `state` says: from the memo when
/// nothing changed (a stat, or for a touched file the proof of its bytes), from the new bytes
/// alone when the file only grew by plain entries, else by measuring the whole file.
fn reading(ctx: &Context, rev: &RevArgs, state: &FileState, profile: Profile, tok: Tokenizer) -> Result<Reading> {
    let Some(key) = memo_key(state, tok.name, profile) else { return Ok(read(ctx, rev, profile, tok)?.reading) };
    let leaf = rev.rev().entry;
    let known = load_memo(ctx, &key);
    if let Some(known) = &known {
        if let Some((reading, proven)) = known.recall(state, leaf.as_deref(), tok.name, profile) {
            if proven {
                // Same bytes, new stamp: the next call is a stat again.
                remember(ctx, &key, MemoEntry { exact: state.settled(), mtime_ns: state.mtime_ns, ..known.clone() });
            }
            return Ok(reading);
        }
        if let Some(m) = known.grow(state, leaf.as_deref(), profile, tok) {
            remember(ctx, &key, MemoEntry::new(&key, state, &m));
            return Ok(m.reading);
        }
    }
    let m = read(ctx, rev, profile, tok)?;
    remember(ctx, &key, MemoEntry::new(&key, state, &m));
    Ok(m.reading)
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

/// A file modified less than this long ago is never recalled by its stamp alone.
const SETTLED: Duration = Duration::from_secs(2);

/// The reading remembered per (session file, tokenizer, profile), so a meter with nothing new to
/// measure reads one small file instead of the session: `<store>/cache/meter/<hash of the key>`,
/// bincode. Its size does not grow with the session (ids are kept in [`Bloom`] filters, the
/// per-position figures only for the tail, the bytes as a [`Proof`]). Only an optimisation:
/// unreadable means absent.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct MemoEntry {
    key: String,
    /// The bytes measured, and the file's stamp when they were read.
    len: u64,
    mtime_ns: u128,
    inode: u64,
    /// The file was settled when measured, so its stamp alone may recall the reading.
    exact: bool,
    tokens: u64,
    tool_results: usize,
    blocks: usize,
    leaf_id: Option<String>,
    /// The leaf measured was pi's leaf on load (the file's last entry), asked for by no `:LEAF`.
    at_last: bool,
    /// The measured bytes, for a touched file.
    proof: Proof,
    /// What an append to this state needs to be measured from the new bytes alone.
    growth: Option<Growth>,
}

/// The memo key of a reading, or `None` when it must always be measured: `calibrated` (its
/// ratio may come from `calibration.json`). The leaf is not in it: pi's leaf moves every turn,
/// and the entry says which leaf it measured.
fn memo_key(state: &FileState, tokenizer: TokenizerName, profile: Profile) -> Option<String> {
    if tokenizer == TokenizerName::Calibrated {
        return None;
    }
    // The version, because what a plan frees is a function of shake's rules too.
    Some(format!(
        "{} {} {} {}",
        env!("CARGO_PKG_VERSION"),
        tokenizer,
        profile.as_str(),
        std::fs::canonicalize(&state.path).unwrap_or_else(|_| state.path.clone()).display()
    ))
}

/// Bumped whenever the memo's layout changes (an older file is then ignored).
const MEMO_MAGIC: &str = "shake-meter-memo 2";

fn memo_path(ctx: &Context, key: &str) -> PathBuf {
    let hash = blake3::hash(key.as_bytes()).to_hex();
    ctx.store_dir.join("cache").join("meter").join(&hash[..32])
}

fn load_memo(ctx: &Context, key: &str) -> Option<MemoEntry> {
    let bytes = std::fs::read(memo_path(ctx, key)).ok()?;
    let config = bincode::config::standard().with_limit::<{ 4 << 20 }>();
    let ((magic, entry), _): ((String, MemoEntry), usize) = bincode::serde::decode_from_slice(&bytes, config).ok()?;
    (magic == MEMO_MAGIC && entry.key == key).then_some(entry)
}

impl MemoEntry {
    fn new(key: &str, state: &FileState, m: &Measured) -> MemoEntry {
        let r = &m.reading;
        MemoEntry {
            key: key.to_string(),
            len: m.proof.len,
            mtime_ns: state.mtime_ns,
            inode: state.inode,
            // Bytes read after the stat may be newer than its stamp.
            exact: state.settled() && m.proof.len == state.len,
            tokens: r.tokens,
            tool_results: r.tool_results,
            blocks: r.blocks,
            leaf_id: r.leaf_id.clone(),
            at_last: m.at_last,
            proof: m.proof.clone(),
            growth: m.growth.clone(),
        }
    }

    /// Tells whether this reading was taken at the leaf asked for: pi's leaf on load (`None`),
    /// or an entry named by its whole id.
    fn measured(&self, leaf: Option<&str>) -> bool {
        match leaf {
            None => self.at_last,
            Some(id) => self.leaf_id.as_deref() == Some(id),
        }
    }

    /// The remembered reading, if the file is still exactly as it was: the same stamp (measured
    /// settled), or the same size and inode and the same bytes (proven). `true` when proven.
    fn recall(
        &self,
        state: &FileState,
        leaf: Option<&str>,
        tokenizer: TokenizerName,
        profile: Profile,
    ) -> Option<(Reading, bool)> {
        if !self.measured(leaf) || (state.len, state.inode) != (self.len, self.inode) {
            return None;
        }
        let stamped = self.exact && state.mtime_ns == self.mtime_ns;
        if !stamped && !self.proof.verify(&state.path) {
            return None;
        }
        let figures = (self.tokens, self.tool_results, self.blocks);
        Some((reading_of(state, tokenizer, profile, figures, self.leaf_id.clone()), !stamped))
    }

    /// Measures the file from the bytes appended since this reading, when they are whole lines of
    /// plain entries continuing its leaf and the leaf asked for is pi's (the last new entry, by
    /// no `:LEAF` or by its id; see [`Growth`]); `None` means: measure it all.
    fn grow(&self, state: &FileState, leaf: Option<&str>, profile: Profile, tok: Tokenizer) -> Option<Measured> {
        let g = self.growth.as_ref()?;
        if state.inode != self.inode || state.len <= self.len {
            return None;
        }
        let last_from = self.len.checked_sub(g.last_bytes.len() as u64)?;
        let from = last_from.min(self.proof.resume_at());
        let mut file = std::fs::File::open(&state.path).ok()?;
        file.seek(SeekFrom::Start(from)).ok()?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).ok()?;
        let old = usize::try_from(self.len - from).ok()?;
        let (before, new) = bytes.split_at_checked(old)?;
        if !before.ends_with(&g.last_bytes) || new.last() != Some(&b'\n') {
            return None;
        }
        let mut mini = format!("{}\n", g.header).into_bytes();
        mini.extend_from_slice(new);
        let mini = SessionFile::from_bytes(state.path.clone(), mini);
        let session = host::load(&mini, None).ok()?;
        let last = session.entries.last().map(|e| e.id.to_string());
        if leaf.is_some_and(|id| last.as_deref() != Some(id)) {
            return None;
        }
        let projection = View::at(&session, session.default_leaf()).ok()?;
        if !g.continued_by(&projection, self.leaf_id.as_deref()?) {
            return None;
        }
        tok.prefetch(&projection);
        let options = FoldOptions { scope: Scope::Elide, profile, tokenizer: tok };
        let mut next = g.clone();
        next.extend(&projection, &Wall::at(&projection), &options)?;
        next.last_bytes = bytes[bytes.len().saturating_sub(LAST_BYTES)..].to_vec();
        let sum = next.settle(profile);
        let proof = self.proof.extended(&bytes[usize::try_from(self.proof.resume_at() - from).ok()?..]);
        let reading = reading_of(state, tok.name, profile, sum, last);
        Some(Measured { reading, at_last: true, growth: Some(next), proof })
    }
}

/// A reading of the file `state` names from remembered figures.
fn reading_of(
    state: &FileState,
    tokenizer: TokenizerName,
    profile: Profile,
    f: (u64, usize, usize),
    leaf_id: Option<String>,
) -> Reading {
    Reading { tokens: f.0, tool_results: f.1, blocks: f.2, tokenizer, profile, session: state.path.clone(), leaf_id }
}

/// How many bytes before the measured length must still be there for an append to be trusted.
const LAST_BYTES: usize = 4096;

/// What measuring an appended file from its new bytes alone needs. When the new lines are plain
/// entries continuing the leaf (messages and entries pi keeps out of the context; no edit,
/// compaction or branch summary), the old context is unchanged and each old position's gain
/// too, so the new plan is the new tail (found from the tokens) and the sum of the gains before
/// it: the full plan's figures. The tail only moves forward as entries are added, so positions
/// before it are kept as one sum and only the tail's positions one by one: the size is that of
/// the tail, not of the session.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub struct Growth {
    /// The session header line (the new lines are parsed after it).
    header: String,
    /// The file's last bytes when measured.
    last_bytes: Vec<u8>,
    /// Ids on the leaf's path (a new entry reusing one would change the path).
    path_ids: Bloom,
    /// Tool-call ids in the context, and those whose `path` is a `skill://` (the skip rules).
    calls: Bloom,
    skill_calls: Bloom,
    /// The gains of the positions before the tail, summed.
    before: Gain,
    /// Per context position from the tail's start: tokens, and the gain of folding it.
    tokens: Vec<u64>,
    gains: Vec<Gain>,
}

impl Growth {
    /// The growth of a measured projection, or `None` when an append to it cannot be followed
    /// (a session pi would migrate, a file not ending in a newline, no leaf).
    fn of(projection: &View<'_, '_>, wall: &Wall, options: &FoldOptions) -> Option<Growth> {
        let session = projection.session;
        let raw = session.file.raw();
        // claude-shake's window and floor are not a token tail: its plan is made whole each time.
        if !session.file.ends_with_newline() || options.profile == Profile::ClaudeShake {
            return None;
        }
        let header = String::from_utf8(session.append_prefix()?.to_vec()).ok()?;
        let leaf = projection.leaf?;
        // Room for the path to double before the filter fills.
        let path = session.path(leaf).ok()?.len();
        let calls = projection.calls.len();
        let mut g = Growth {
            header,
            last_bytes: raw[raw.len().saturating_sub(LAST_BYTES)..].to_vec(),
            path_ids: Bloom::with_capacity(2 * path),
            calls: Bloom::with_capacity(2 * calls),
            skill_calls: Bloom::with_capacity(0),
            before: Gain::default(),
            tokens: Vec::new(),
            gains: Vec::new(),
        };
        g.extend(projection, wall, options)?;
        g.settle(options.profile);
        Some(g)
    }

    /// Appends a projection's positions (all of them: the whole context, or the new entries alone).
    fn extend(&mut self, projection: &View<'_, '_>, wall: &Wall, options: &FoldOptions) -> Option<()> {
        for call in &projection.calls {
            if is_skill_path(host::model::call_path(call.arguments).as_deref()) {
                self.skill_calls.insert(&call.id);
            }
            self.calls.insert(&call.id);
        }
        self.tokens.extend(context_tokens(projection, &options.tokenizer));
        self.gains.extend(gains(projection, wall, options));
        let session = projection.session;
        session.path(projection.leaf?).ok()?.iter().for_each(|&i| self.path_ids.insert(&session.entries[i].id));
        Some(())
    }

    /// Moves the positions now before the tail into `before` and returns the plan's figures:
    /// tokens freed, tool results and blocks folded.
    fn settle(&mut self, profile: Profile) -> (u64, usize, usize) {
        let start = tail_start_by(self.tokens.len(), profile.tail(), |pos| self.tokens[pos]);
        for g in self.gains.drain(..start) {
            self.before.tokens += g.tokens;
            self.before.tool_results += g.tool_results;
            self.before.blocks += g.blocks;
        }
        self.tokens.drain(..start);
        (self.before.tokens, self.before.tool_results, self.before.blocks)
    }

    /// Tells whether `new` (the appended lines parsed alone) is a chain of plain entries from
    /// `leaf` that leaves every old position's figures as they were (a "maybe" of a filter is a no).
    fn continued_by(&self, new: &View<'_, '_>, leaf: &str) -> bool {
        let session = new.session;
        // The one warning expected: the first new entry's parent is not in the new lines.
        if session.warnings.len() != 1 || session.entries.is_empty() {
            return false;
        }
        let mut ids = std::collections::HashSet::new();
        let mut parent = leaf;
        for (i, e) in session.entries.iter().enumerate() {
            let reused = self.path_ids.may_contain(&e.id) || !ids.insert(&e.id);
            if e.parent_id.as_deref() != Some(parent) || reused || !session.is_plain(i) {
                return false;
            }
            let result = new.unit(i).filter(|u| u.role == Role::ToolResult).and_then(|u| u.tool.as_ref());
            if result.and_then(|t| t.call_id.as_deref()).is_some_and(|c| self.skill_calls.may_contain(c)) {
                return false;
            }
            parent = &e.id;
        }
        new.calls.iter().all(|call| !self.calls.may_contain(&call.id))
    }
}

/// Remembers a reading (temporary file, then rename); failing to is not an error.
fn remember(ctx: &Context, key: &str, entry: MemoEntry) {
    let path = memo_path(ctx, key);
    let write = || -> std::io::Result<()> {
        let bytes = bincode::serde::encode_to_vec((MEMO_MAGIC, &entry), bincode::config::standard())
            .map_err(std::io::Error::other)?;
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let tmp = dir.join(format!(".{}.{}", &blake3::hash(key.as_bytes()).to_hex()[..32], std::process::id()));
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(&tmp, &path)
    };
    if let Err(e) = write() {
        ctx.warn(format_args!("{}: cannot save the meter memo: {e}", path.display()));
    }
}

/// Appends the reading to the log unless the log's last line already says the same.
/// Appends a reading's JSON to the meter log, with the time, unless the figure is the last one's.
pub(crate) fn append_log(path: &Path, mut line: Value) -> Result<()> {
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

    /// The full plan of a session's bytes: tokens freed, tool results, blocks.
    fn planned(bytes: &[u8], fold: &FoldOptions) -> (u64, usize, usize) {
        let whole = SessionFile::from_bytes(PathBuf::from("w.jsonl"), bytes.to_vec());
        let session = host::load(&whole, None).unwrap();
        let projection = View::at(&session, session.default_leaf()).unwrap();
        let plan = plan_with_wall(&projection, &Wall::at(&projection), fold);
        (plan.tokens_freed, plan.count(RegionKind::ToolResult), plan.count(RegionKind::Block))
    }

    /// The shortcut against the full plan: each generated session is measured at a prefix cut at
    /// a line, then grown by the lines after it, again and again from the grown memo (so the tail
    /// kept one position at a time moves on); where the shortcut is taken (plain entries) its
    /// figures are the plan of the file as it is then, and it is taken on most cuts. A memo whose
    /// file was rewritten (not only grown) is never grown.
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
            let path = dir.path().join(format!("s{seed}.jsonl"));
            let state_at = |cut: usize| {
                std::fs::write(&path, &bytes[..cut]).unwrap();
                FileState { path: path.clone(), len: cut as u64, mtime_ns: 0, inode: 1 }
            };
            let mut memo: Option<MemoEntry> = None;
            for &cut in ends.iter().skip(3).step_by(7) {
                let state = state_at(cut);
                let grown = memo.as_ref().and_then(|m| m.grow(&state, None, profile, tok));
                if let Some(m) = &grown {
                    taken += 1;
                    let r = &m.reading;
                    assert_eq!(
                        (r.tokens, r.tool_results, r.blocks),
                        planned(&bytes[..cut], &fold),
                        "seed {seed} cut {cut}"
                    );
                    assert_eq!(m.proof, Proof::of(&bytes[..cut]));
                }
                let m = grown.unwrap_or_else(|| {
                    let prefix = SessionFile::from_bytes(PathBuf::from("p.jsonl"), bytes[..cut].to_vec());
                    let session = host::load(&prefix, None).unwrap();
                    let projection = View::at(&session, session.default_leaf()).unwrap();
                    let f = planned(&bytes[..cut], &fold);
                    Measured {
                        reading: reading_of(
                            &state,
                            tok.name,
                            profile,
                            f,
                            session.entries.last().map(|e| e.id.to_string()),
                        ),
                        at_last: true,
                        growth: Growth::of(&projection, &Wall::at(&projection), &fold),
                        proof: Proof::of(&bytes[..cut]),
                    }
                });
                if let Some(g) = &m.growth {
                    assert!(g.tokens.len() <= 400, "the memo keeps the tail only: {} positions", g.tokens.len());
                }
                memo = Some(MemoEntry::new("k", &state, &m));
            }
            // The same length but other bytes before the end: no growth, and no recall.
            let last = memo.unwrap();
            let cut = last.len as usize;
            let mut other = bytes[..cut].to_vec();
            other[cut / 2] ^= 0x20;
            std::fs::write(&path, &other).unwrap();
            let state = FileState { path: path.clone(), len: cut as u64, mtime_ns: 1, inode: 1 };
            assert!(last.recall(&state, None, tok.name, profile).is_none());
            std::fs::write(&path, &bytes[..cut]).unwrap();
            let (_, proven) = last.recall(&state, None, tok.name, profile).expect("same bytes, touched");
            assert!(proven);
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
        append_log(&log, reading(12_000).json()).unwrap();
        append_log(&log, reading(12_000).json()).unwrap();
        append_log(&log, reading(500).json()).unwrap();
        let text = std::fs::read_to_string(&log).unwrap();
        let tokens: Vec<u64> =
            text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["tokens"].as_u64().unwrap()).collect();
        assert_eq!(tokens, [12_000, 500]);
        assert!(text.lines().all(|l| l.contains("\"time\":\"")));
    }
}

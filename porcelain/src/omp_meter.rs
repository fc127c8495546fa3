//! `shake meter` on an oh-my-pi session: what OMP's own manual `/shake` would free now, by OMP's
//! rules and OMP's count for the session's model (`shake_plumbing::omp`, `docs/omp.md`), not
//! shake's fold plan (OMP sessions are read-only).
//!
//! Every run that measures imports the file first, so a footer that runs the meter keeps the
//! version before each `/shake` in the store (`shake restore --version N` undoes it); a run
//! that finds the file as last measured answers from the memo, and the store has that version.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use crate::profile::Profile;
use serde_json::{json, Value};
use shake_plumbing::host::HostKind;
use shake_plumbing::omp::shake::{Config, Kind, AGGRESSIVE, AUTO};
use shake_plumbing::omp::{looks_like_omp, reading, session_tokenizer, OmpFile};
use shake_plumbing::rev::RevArgs;
use shake_plumbing::token_cache::{open_cached, CachedTokenizer};
use shake_plumbing::tokens::{Tokenizer, TokenizerName};
use shake_plumbing::{Context, Error, Result};

use crate::cmd::meter::memo::{self, Seen};
use crate::cmd::meter::watch::FileState;
use crate::fingerprint::Proof;
use crate::meter::{append_log, render, MeterArgs, Severity};

/// How often `--watch` looks at the file.
const POLL: Duration = Duration::from_millis(500);

/// Tells whether the session the arguments name is an OMP file (or `--host omp` says so).
pub fn is_omp(ctx: &Context, rev: &RevArgs) -> Result<bool> {
    if let Some(kind) = ctx.host {
        return Ok(kind == HostKind::Omp);
    }
    let Ok(path) = rev.rev().session_path(ctx) else { return Ok(false) };
    let mut head = Vec::new();
    let read = std::fs::File::open(&path)
        .and_then(|f| std::io::Read::read_to_end(&mut std::io::Read::take(f, 65_536), &mut head));
    Ok(read.is_ok() && looks_like_omp(&head))
}

/// Whether OMP counts with o200k for models without a tokenizer family (its
/// `PI_TOKENIZER_ACCURATE=1`).
pub fn accurate() -> bool {
    std::env::var_os("PI_TOKENIZER_ACCURATE").is_some_and(|v| v == "1")
}

/// Runs `shake meter` on an OMP session.
pub fn run(ctx: &Context, args: &MeterArgs, color: bool, out: &mut dyn Write) -> Result {
    let (config, profile) = match args.profile {
        None => (AGGRESSIVE, "omp"),
        Some(Profile::OmpAuto) => (AUTO, "omp-auto"),
        Some(p) => {
            return Err(Error::user(format!(
                "profile {} is shake's; an oh-my-pi session meters OMP's /shake",
                p.as_str()
            ))
            .hint("omit --profile for the manual /shake, or pass --profile omp-auto for OMP's auto-shake"))
        }
    };
    if args.rev.rev().entry.is_some() {
        return Err(Error::user("OMP's /shake takes the branch of the last entry; a leaf cannot be chosen"));
    }
    let accurate = accurate();
    // Opened by the first reading that measures with it: a recalled one reads no token cache.
    let mut caches: Vec<CachedTokenizer<'_>> = Vec::new();
    loop {
        let state = FileState::of(ctx, &args.rev)?;
        let key = memo_key(&state, profile, accurate);
        let figures = match recall(ctx, &key, &state) {
            Some(figures) => figures,
            None => {
                let (figures, proof) = measure(ctx, &state.path, &config, accurate, &mut caches)?;
                let memo = Memo { key: key.clone(), seen: Seen::new(&state, proof), figures };
                memo::save(ctx, &key, MEMO_MAGIC, &memo);
                memo.figures
            }
        };
        let path = &state.path;
        let line: Value = json!({
            "tokens": figures.tokens,
            "toolResults": figures.tool_results,
            "blocks": figures.blocks,
            "severity": Severity::of(figures.tokens).as_str(),
            "tokenizer": figures.tokenizer,
            "exact": figures.exact,
            "profile": profile,
            "host": "omp",
            "model": figures.model,
            "session": path.to_string_lossy(),
            "leafId": figures.leaf_id,
        });
        match args.json {
            true => writeln!(out, "{line}")?,
            false => writeln!(out, "{}", render(figures.tokens, color))?,
        }
        out.flush()?;
        if let Some(log) = &args.log {
            append_log(log, line)?;
        }
        if !args.watch {
            return Ok(0);
        }
        let stamp = |p: &std::path::Path| std::fs::metadata(p).ok().map(|m| (m.len(), m.modified().ok()));
        let seen = stamp(path);
        while stamp(path) == seen {
            std::thread::sleep(POLL);
        }
    }
}

/// What one reading of an OMP session shows.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct Figures {
    tokens: u64,
    tool_results: usize,
    blocks: usize,
    tokenizer: String,
    exact: bool,
    model: Option<String>,
    leaf_id: Option<String>,
}

/// Reads, imports (the version before OMP may rewrite the file) and measures the session; also
/// returns the proof of the bytes measured.
fn measure<'c>(
    ctx: &'c Context,
    path: &Path,
    config: &Config,
    accurate: bool,
    caches: &mut Vec<CachedTokenizer<'c>>,
) -> Result<(Figures, Proof)> {
    let (file, read) = OmpFile::read_shared(path).map_err(|e| Error::user(e.to_string()))?;
    // A store failure only warns; the import takes the bytes just read.
    shake_plumbing::store::touch::import_read(ctx, &read);
    let proof = Proof::of(read.raw());
    drop(read);
    // The session's model decides what counts (o200k, Claude's encoding), so its cache is
    // opened once the file is read, and kept for later readings under --watch.
    let (model, tok) = session_tokenizer(&file, accurate, Tokenizer::new(TokenizerName::Pi));
    let cached = tok.counts_with().map(|name| match caches.iter().position(|c| c.base() == name) {
        Some(at) => &caches[at],
        None => {
            caches.push(open_cached(ctx, name));
            &caches[caches.len() - 1]
        }
    });
    let tok = match cached {
        Some(cached) => tok.with_cached(**cached),
        None => tok,
    };
    let r = reading(&file, config, model, tok);
    if let Some(cached) = cached {
        cached.save();
    }
    let count = |kind| r.regions.iter().filter(|g| g.kind == kind).count();
    let figures = Figures {
        tokens: r.freed,
        tool_results: count(Kind::ToolResult),
        blocks: count(Kind::Block),
        tokenizer: r.tokenizer.label(),
        exact: r.tokenizer.exact(),
        model: r.model,
        leaf_id: file.entries.last().and_then(|e| e.id()).map(str::to_string),
    };
    Ok((figures, proof))
}

/// Bumped whenever [`Memo`]'s layout changes (an older file is then ignored).
const MEMO_MAGIC: &str = "shake-meter-memo-omp 2";

/// An OMP reading remembered per (session file, preset, `accurate`), as pi's meter remembers
/// its own (`cmd::meter::memo`): recalled while the file is unchanged, by its stamp when it
/// was settled, else by the proof of its bytes. Nothing is imported then: the store took these
/// bytes when they were measured. OMP rewrites its file in place, so there is no append
/// shortcut: any change is measured whole.
#[derive(serde::Serialize, serde::Deserialize)]
struct Memo {
    key: String,
    seen: Seen,
    figures: Figures,
}

/// The memo key: shake's version (its rules), the preset, `accurate`, the file.
fn memo_key(state: &FileState, profile: &str, accurate: bool) -> String {
    let path = std::fs::canonicalize(&state.path).unwrap_or_else(|_| state.path.clone());
    format!("{} omp {profile} {accurate} {}", env!("CARGO_PKG_VERSION"), path.display())
}

/// The remembered figures, if the file is still exactly as measured; a proven recall is
/// remembered with the file's new stamp, so the next one is a stat again.
fn recall(ctx: &Context, key: &str, state: &FileState) -> Option<Figures> {
    let known: Memo = memo::load(ctx, key, MEMO_MAGIC).filter(|m: &Memo| m.key == key)?;
    if !known.seen.unchanged(state)? {
        return Some(known.figures);
    }
    let memo = Memo { seen: known.seen.restamped(state), ..known };
    memo::save(ctx, key, MEMO_MAGIC, &memo);
    Some(memo.figures)
}

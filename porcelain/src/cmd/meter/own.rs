//! `shake meter` on a session whose host has a meter of its own ([`OwnMeter`]: oh-my-pi's
//! `/shake`): what the host's own rules would free now, counted as the host counts for the
//! session's model (`docs/omp.md`), not shake's fold plan (such a host never takes one).
//!
//! Every run that measures imports the file it read (beside the count), so a footer that runs
//! the meter keeps the version before each rewrite by the host in the store (`shake restore
//! --version N` undoes it); a run that finds the file as last measured answers from the memo, and
//! the store has that version.

use std::io::Write;
use std::time::Duration;

use serde_json::{json, Value};
use shake_plumbing::host::own::{OwnFigures, OwnMeter, Rules};
use shake_plumbing::host::Host;
use shake_plumbing::rev::RevArgs;
use shake_plumbing::{Context, Result};

use super::memo;
use super::stamp::{FileState, Seen};
use super::{append_log, render, with_verdict, MeterArgs, Severity};
use crate::fingerprint::Proof;
use crate::price::{economics, Economics};
use shake_plumbing::store::touch;

/// How often `--watch` looks at the file.
const POLL: Duration = Duration::from_millis(500);

/// The host of the session the arguments name, when it has a meter of its own (its head tells,
/// or `--host`): the meter goes its way before reading the whole file.
pub fn of(ctx: &Context, rev: &RevArgs) -> Option<(&'static dyn Host, &'static dyn OwnMeter)> {
    let path = rev.rev().session_path(ctx).ok()?;
    let host = shake_plumbing::hosts::of_head(&path, ctx.host, |h| h.own_meter().is_some())?;
    Some((host, host.own_meter()?))
}

/// Runs `shake meter` with the host's own meter.
pub fn run(ctx: &Context, args: &MeterArgs, (host, own): (&dyn Host, &dyn OwnMeter), out: &mut dyn Write) -> Result {
    let rules = own.rules(args.profile.map(|p| p.as_str()), args.rev.rev().entry.is_some())?;
    let config = crate::config::load(ctx)?;
    loop {
        let state = FileState::of(ctx, &args.rev)?;
        let key = memo_key(&state, host, &rules);
        let figures = match recall(ctx, &key, &state) {
            Some(figures) => figures,
            None => {
                let mut proof = None;
                let figures = own.measure(ctx, &state.path, &rules, &mut |read| {
                    // A store failure only warns; the import takes the bytes just read, and
                    // proves them once for both.
                    touch::import_read(ctx, read);
                    proof = Some(read.proof().clone());
                })?;
                let proof = proof.unwrap_or_else(|| Proof::of(&[]));
                let memo = Memo { key: key.clone(), seen: Seen::new(&state, proof), figures };
                memo::save(ctx, &key, MEMO_MAGIC, &memo);
                memo.figures
            }
        };
        let path = &state.path;
        // Priced now (`$SHAKE_TIMESTAMP`, else the clock) as shake's own meter prices its plan.
        let now = shake_plumbing::time::now_millis();
        let priced = economics(figures.tokens, figures.suffix, &figures.turn, now, &config);
        let line: Value = json!({
            "tokens": figures.tokens,
            "toolResults": figures.tool_results,
            "blocks": figures.blocks,
            "severity": Severity::of(figures.tokens).as_str(),
            "tokenizer": figures.tokenizer,
            "exact": figures.exact,
            "profile": rules.name,
            "host": host.kind().as_str(),
            "model": figures.model,
            "session": path.to_string_lossy(),
            "leafId": figures.leaf_id,
            "cache": priced.as_ref().map(Economics::json),
        });
        match args.json {
            true => writeln!(out, "{line}")?,
            false => {
                writeln!(out, "{}", with_verdict(render(figures.tokens, ctx.color), figures.tokens, priced.as_ref()))?
            }
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

/// Bumped whenever [`Memo`]'s layout, or what a remembered field says, changes (an older file is
/// then ignored; 4: the newest turn's facts are remembered; 5: a Claude session's tokenizer is
/// OMP's encoding, `omp-v3`, not `claude-v3`).
const MEMO_MAGIC: &str = "shake-meter-memo-omp 6";

/// A reading of a host's own meter remembered per (session file, rules), as shake's meter
/// remembers its own (`cmd::meter::memo`): recalled while the file is unchanged, by its stamp
/// when it was settled, else by the proof of its bytes. Nothing is imported then: the store
/// took these bytes when they were measured. Such a host rewrites its file in place, so there
/// is no append shortcut: any change is measured whole.
#[derive(serde::Serialize, serde::Deserialize)]
struct Memo {
    key: String,
    seen: Seen,
    figures: OwnFigures,
}

/// The memo key: shake's version, the host, its rules and what else decides them, the file.
fn memo_key(state: &FileState, host: &dyn Host, rules: &Rules) -> String {
    let path = std::fs::canonicalize(&state.path).unwrap_or_else(|_| state.path.clone());
    let (version, kind) = (env!("CARGO_PKG_VERSION"), host.kind());
    format!("{version} {kind} {} {} {}", rules.name, rules.key, path.display())
}

/// The remembered figures, if the file is still exactly as measured; a proven recall is
/// remembered with the file's new stamp, so the next one is a stat again.
fn recall(ctx: &Context, key: &str, state: &FileState) -> Option<OwnFigures> {
    let known: Memo = memo::load(ctx, key, MEMO_MAGIC).filter(|m: &Memo| m.key == key)?;
    if !known.seen.unchanged(state)? {
        return Some(known.figures);
    }
    let memo = Memo { seen: known.seen.restamped(state), ..known };
    memo::save(ctx, key, MEMO_MAGIC, &memo);
    Some(memo.figures)
}

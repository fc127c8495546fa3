//! `shake meter` on an oh-my-pi session: what OMP's own manual `/shake` would free now, by OMP's
//! rules and OMP's count for the session's model (`shake_plumbing::omp`, `docs/omp.md`), not
//! shake's fold plan (OMP sessions are read-only).
//!
//! Every run imports the file first, so a footer that runs the meter keeps the version before
//! each `/shake` in the store (`shake restore --version N` undoes it).

use std::io::Write;
use std::time::Duration;

use crate::profile::Profile;
use serde_json::{json, Value};
use shake_plumbing::host::HostKind;
use shake_plumbing::omp::shake::{AGGRESSIVE, AUTO};
use shake_plumbing::omp::{looks_like_omp, reading, session_tokenizer, OmpFile};
use shake_plumbing::rev::RevArgs;
use shake_plumbing::token_cache::open_cached;
use shake_plumbing::tokens::TokenizerName;
use shake_plumbing::{Context, Error, Result};

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
    let o200k = open_cached(ctx, TokenizerName::O200k);
    loop {
        let path = args.rev.rev().session_path(ctx)?;
        let (file, read) = OmpFile::read_shared(&path).map_err(|e| Error::user(e.to_string()))?;
        // Keep this version before OMP may rewrite the file (a store failure only warns); the
        // import takes the bytes just read.
        shake_plumbing::store::touch::import_read(ctx, &read);
        drop(read);
        let (model, tok) = session_tokenizer(&file, accurate, *o200k);
        let r = reading(&file, &config, model, tok);
        o200k.save();
        let count = |kind| r.regions.iter().filter(|g| g.kind == kind).count();
        let line: Value = json!({
            "tokens": r.freed,
            "toolResults": count(shake_plumbing::omp::shake::Kind::ToolResult),
            "blocks": count(shake_plumbing::omp::shake::Kind::Block),
            "severity": Severity::of(r.freed).as_str(),
            "tokenizer": r.tokenizer.label(),
            "exact": r.tokenizer.exact(),
            "profile": profile,
            "host": "omp",
            "model": r.model,
            "session": path.to_string_lossy(),
            "leafId": file.entries.last().and_then(|e| e.id()),
        });
        match args.json {
            true => writeln!(out, "{line}")?,
            false => writeln!(out, "{}", render(r.freed, color))?,
        }
        out.flush()?;
        if let Some(log) = &args.log {
            append_log(log, line)?;
        }
        if !args.watch {
            return Ok(0);
        }
        let stamp = |p: &std::path::Path| std::fs::metadata(p).ok().map(|m| (m.len(), m.modified().ok()));
        let seen = stamp(&path);
        while stamp(&path) == seen {
            std::thread::sleep(POLL);
        }
    }
}

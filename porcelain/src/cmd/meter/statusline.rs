//! `shake meter --statusline`: Claude Code's status line. Claude Code runs the command after
//! each message with a JSON object on stdin (`session_id`, `transcript_path`, `cwd`, `model`, …);
//! this reads the transcript it names, meters it as `shake meter FILE` does (through the memo)
//! and prints one line, `✂ ~27k shakeable`. It never fails: the status bar must stay sane, so
//! a bad input prints `✂ ?` (the reason on stderr) and exits 0.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde_json::Value;
use shake_plumbing::rev::RevArgs;
use shake_plumbing::{Context, Error, Result};

use super::memo::reading;
use super::stamp::FileState;
use super::{render, Counting, MeterArgs, Severity};
use crate::profile;

/// The most of stdin read (Claude Code's object is a few KB).
const INPUT_LIMIT: u64 = 1 << 20;

/// What the status line says.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Line {
    /// The meter's figure, and its verdict when the fold is priced (`pays back in 2 turns`).
    Tokens(u64, Option<String>),
    /// The transcript does not exist yet (a new session before its first message).
    NoTranscript,
    /// The input or the transcript could not be read (the reason goes to stderr).
    Unreadable,
}

impl Line {
    /// The line, coloured (by severity; dim when there is nothing to free) when `color` is on.
    pub(super) fn render(&self, color: bool) -> String {
        let dim = |text: &str| match color {
            true => format!("{0}{text}{0:#}", Severity::Low.style()),
            false => text.to_string(),
        };
        match self {
            Line::Tokens(0, _) | Line::NoTranscript => dim("✂ nothing to shake"),
            Line::Tokens(tokens, verdict) => {
                let verdict = verdict.as_ref().map(|v| format!(" · {v}")).unwrap_or_default();
                match color {
                    true => format!("{}{}{verdict}", dim("✂ "), render(*tokens, true)),
                    false => format!("✂ {}{verdict}", render(*tokens, false)),
                }
            }
            Line::Unreadable => dim("✂ ?"),
        }
    }
}

/// Runs `shake meter --statusline`: reads Claude Code's object from `input`, prints one line to
/// `out`, the reason for a `✂ ?` to stderr; exits 0 whatever the input.
pub(super) fn run(ctx: &Context, args: &MeterArgs, input: impl Read, out: &mut dyn Write) -> Result {
    let line = match measure(ctx, args, input) {
        Ok(line) => line,
        Err(e) => {
            eprintln!("shake meter --statusline: {}", e.message);
            Line::Unreadable
        }
    };
    writeln!(out, "{}", line.render(ctx.color))?;
    Ok(0)
}

/// The line for the transcript Claude Code's object names.
fn measure(ctx: &Context, args: &MeterArgs, input: impl Read) -> Result<Line> {
    let path = transcript_path(ctx, input)?;
    if !path.exists() {
        return Ok(Line::NoTranscript);
    }
    let (profile, _) = profile::resolve(ctx, args.profile)?;
    let rules = crate::rules::resolve(ctx, &args.rules, profile)?;
    // `--tokenizer pi` on a transcript is not said each turn: Claude Code does not draw the stderr.
    let counting = Counting::quiet(ctx, args.tokenizer);
    let rev = RevArgs { rev: Some(path.to_string_lossy().into_owned()), leaf: None };
    let state = FileState::of(ctx, &rev)?;
    let r = reading(ctx, &rev, &state, (profile, &rules), &counting)?;
    Ok(Line::Tokens(r.tokens, r.economics.filter(|_| r.tokens >= 1_000).map(|e| e.verdict())))
}

/// The `transcript_path` of Claude Code's status-line object (a relative one taken from its
/// `cwd`, else from ours).
fn transcript_path(ctx: &Context, input: impl Read) -> Result<PathBuf> {
    let mut text = String::new();
    input.take(INPUT_LIMIT).read_to_string(&mut text).map_err(|e| Error::io("standard input", e))?;
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| Error::user(format!("standard input is not Claude Code's status-line JSON: {e}")))?;
    let path = value.get("transcript_path").and_then(Value::as_str).filter(|p| !p.is_empty());
    let Some(path) = path else {
        return Err(Error::user("standard input has no \"transcript_path\" (is this Claude Code's statusLine?)"));
    };
    let cwd = value.get("cwd").and_then(Value::as_str).map_or(ctx.cwd.clone(), PathBuf::from);
    Ok(cwd.join(Path::new(path)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_short_and_coloured_only_when_asked() {
        assert_eq!(Line::Tokens(27_400, None).render(false), "✂ ~27k shakeable");
        assert_eq!(Line::Tokens(400, None).render(false), "✂ <1k shakeable");
        assert_eq!(Line::Tokens(0, None).render(false), "✂ nothing to shake");
        assert_eq!(Line::NoTranscript.render(false), "✂ nothing to shake");
        assert_eq!(Line::Unreadable.render(false), "✂ ?");
        let priced = Line::Tokens(27_400, Some("pays back in 2 turns".into()));
        assert_eq!(priced.render(false), "✂ ~27k shakeable · pays back in 2 turns");
        assert_eq!(
            Line::Tokens(30_000, None).render(true),
            "\u{1b}[2m✂ \u{1b}[0m\u{1b}[1m\u{1b}[31m~30k shakeable\u{1b}[0m"
        );
        assert_eq!(Line::Tokens(0, None).render(true), "\u{1b}[2m✂ nothing to shake\u{1b}[0m");
    }
}

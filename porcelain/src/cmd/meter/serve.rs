//! `shake meter --serve`: readings on request, one per input line, each tokenizer built once.

use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

use crate::profile::Profile;
use crate::rules::Rules;
use serde_json::json;
use shake_plumbing::rev::RevArgs;
use shake_plumbing::{Context, Result};

use super::memo::reading;
use super::stamp::FileState;
use super::Counting;

/// How often `--serve` saves the token cache while it runs (and once at the end): saving writes
/// the whole cache, which a reading per turn should not pay for.
const SAVE_EVERY: Duration = Duration::from_secs(30);

/// `shake meter --serve`: one request per input line, a revision as on the command line (`FILE`,
/// `FILE:LEAF`, a session id; an empty line is pi's current session here), and one line of
/// output per request, in order: the `--json` reading, or `{"error": MESSAGE}`. Stops at the end
/// of the input. The tokenizers' tables and token caches are built once for every request.
pub fn serve(
    ctx: &Context,
    profile: Profile,
    rules: &Rules,
    counting: &Counting<'_>,
    input: impl BufRead,
    out: &mut dyn Write,
) -> Result {
    let mut saved = Instant::now();
    for line in input.lines() {
        let line = line?;
        let line = line.trim_end_matches('\r');
        let rev = RevArgs { rev: (!line.is_empty()).then(|| line.to_string()), leaf: None };
        let answer = FileState::of(ctx, &rev).and_then(|state| reading(ctx, &rev, &state, (profile, rules), counting));
        match answer {
            Ok(r) => writeln!(out, "{}", r.json())?,
            Err(e) => writeln!(out, "{}", json!({ "error": e.to_string() }))?,
        }
        out.flush()?;
        if saved.elapsed() >= SAVE_EVERY {
            counting.save();
            saved = Instant::now();
        }
    }
    Ok(0)
}

//! `shake tokens`: each tokenizer's count of the context the host sent (pi, Claude Code), beside
//! the provider's own count of that request, turn by turn; the error of each tokenizer on the
//! session, on whole requests and on what each turn added; and the calibration that
//! `--tokenizer calibrated` uses (`docs/tokens.md`). The measuring and the calibration are
//! library code, in [`crate::tokens::calibration`].

use std::io::Write;

use serde_json::json;

use crate::host::View;
use crate::rev::RevArgs;
use crate::tokens::cache::{open_cached, open_tokenizer, CachedTokenizer};
use crate::tokens::calibration::{
    added, added_pairs, calibration_from, measure, summarize, AddedPairs, AddedSummary, ErrorSummary, Turn,
};
use crate::tokens::{TokenizerName, CALIBRATION_BASE};
use crate::{Context, Result};

/// Compare each tokenizer with the provider's own token counts, turn by turn
#[derive(clap::Args, Debug)]
pub struct TokensArgs {
    #[command(flatten)]
    pub rev: RevArgs,
    /// Print JSON: {"leafId","turns":[{"id","provider","model","providerTokens","cacheRead","cacheWrite","counts"}],"summary","added":{"modelChanged","cacheBroken","summary"},"calibration"}
    #[arg(long)]
    pub json: bool,
}

/// The tokenizers `shake tokens` compares (calibrated is derived from the base's column), and
/// Claude's own count for the model when the session's last turn is Claude's.
const MEASURED: [TokenizerName; 3] = [TokenizerName::Pi, TokenizerName::O200k, TokenizerName::Cl100k];
/// Runs `shake tokens`.
pub fn run(ctx: &Context, args: &TokensArgs, out: &mut dyn Write) -> Result {
    let (file, rev) = args.rev.load(ctx)?;
    let (session, leaf) = rev.open(ctx, &file)?;
    // pi's estimate is one of the figures compared on any host's session, named as pi's: no warning.
    let toks: Vec<CachedTokenizer> = MEASURED.iter().map(|&n| open_cached(ctx, n)).collect();
    if let Some(l) = leaf {
        let projection = View::at(&session, Some(l))?;
        toks.iter().for_each(|t| t.prefetch(&projection));
    }
    let mut turns = measure(&session, leaf, &toks.iter().map(|t| **t).collect::<Vec<_>>())?;
    let mut measured = MEASURED.to_vec();
    let claude = turns
        .iter()
        .rev()
        .find_map(|t| crate::tokens::claude::for_model(t.provider.as_deref().unwrap_or(""), t.model.as_deref()?));
    if let Some(name) = claude {
        let tok = open_tokenizer(ctx, Some(name), &session, leaf)?;
        if let Some(l) = leaf {
            tok.prefetch(&View::at(&session, Some(l))?);
        }
        for (turn, again) in turns.iter_mut().zip(measure(&session, leaf, &[*tok])?) {
            turn.counts.extend(again.counts);
        }
        measured.push(name);
    }
    let measured = &measured[..];
    let summary: Vec<ErrorSummary> = (0..measured.len()).map(|c| summarize(&turns, c)).collect();
    let pairs = added_pairs(&turns);
    let added: Vec<AddedSummary> = (0..measured.len()).map(|c| added(&turns, &pairs, c)).collect();
    let base_col = MEASURED.iter().position(|&n| n == CALIBRATION_BASE).unwrap_or(0);
    let calibration = calibration_from(ctx, &session, &turns, base_col).ok();
    let leaf_id = leaf.map(|l| session.entries[l].id());
    if args.json {
        let turns_json: Vec<_> = turns
            .iter()
            .map(|t| {
                let counts: serde_json::Map<_, _> =
                    measured.iter().zip(&t.counts).map(|(n, c)| (n.to_string(), json!(c))).collect();
                json!({"id": t.id, "provider": t.provider, "model": t.model, "providerTokens": t.provider_tokens,
                    "cacheRead": t.cache.0, "cacheWrite": t.cache.1, "counts": counts})
            })
            .collect();
        let summary_json: serde_json::Map<_, _> =
            measured.iter().zip(&summary).map(|(n, s)| (n.to_string(), json!(s))).collect();
        let added_json: serde_json::Map<_, _> =
            measured.iter().zip(&added).map(|(n, s)| (n.to_string(), json!(s))).collect();
        let report = json!({
            "leafId": leaf_id,
            "turns": turns_json,
            "summary": summary_json,
            "added": {"modelChanged": pairs.model_changed, "cacheBroken": pairs.cache_broken, "summary": added_json},
            "calibration": calibration.map(|r| json!({"base": CALIBRATION_BASE.as_str(), "ratio": r})),
        });
        crate::output::write_json(out, &report)?;
        return Ok(0);
    }
    write_table(out, measured, &turns, &summary, calibration)?;
    write_added(out, measured, &pairs, &added)?;
    Ok(0)
}

/// The table of what each turn added: each tokenizer's count beside the provider's.
fn write_added(
    out: &mut dyn Write,
    measured: &[TokenizerName],
    pairs: &AddedPairs,
    added: &[AddedSummary],
) -> Result<()> {
    writeln!(
        out,
        "\nwhat each turn added: {} pairs of consecutive turns ({} left out: the model changed; {}: the cache broke)",
        pairs.pairs.len(),
        pairs.model_changed,
        pairs.cache_broken
    )?;
    writeln!(
        out,
        "{:<16} {:>6} {:>9} {:>9} {:>7} {:>7} {:>10}",
        "tokenizer", "pairs", "provider", "counted", "error", "median", "mean |Δ|"
    )?;
    for (n, s) in measured.iter().zip(added) {
        writeln!(
            out,
            "{:<16} {:>6} {:>9} {:>9} {:>6.1}% {:>6.1}% {:>10.1}",
            n.as_str(),
            s.pairs,
            s.provider,
            s.counted,
            s.error * 100.0,
            s.median_error * 100.0,
            s.mean_abs_diff
        )?;
    }
    Ok(())
}

fn write_table(
    out: &mut dyn Write,
    measured: &[TokenizerName],
    turns: &[Turn],
    summary: &[ErrorSummary],
    calibration: Option<f64>,
) -> Result<()> {
    write!(out, "{:<10} {:>9}", "turn", "provider")?;
    for n in measured {
        write!(out, " {:>9}", n.as_str())?;
    }
    writeln!(out)?;
    for t in turns {
        write!(out, "{:<10} {:>9}", t.id, t.provider_tokens)?;
        for c in &t.counts {
            write!(out, " {c:>9}")?;
        }
        writeln!(out)?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "{:<10} {:>6} {:>10} {:>7} {:>10} {:>9}",
        "tokenizer", "turns", "mean error", "slope", "intercept", "fit error"
    )?;
    for (n, s) in measured.iter().zip(summary) {
        writeln!(
            out,
            "{:<10} {:>6} {:>9.1}% {:>7.3} {:>10.0} {:>8.1}%",
            n.as_str(),
            s.turns,
            s.mean_error * 100.0,
            s.slope,
            s.intercept,
            s.fit_error * 100.0
        )?;
    }
    match calibration {
        Some(r) => writeln!(out, "calibrated = {CALIBRATION_BASE} × {r:.3}")?,
        None => writeln!(
            out,
            "calibrated: usage too sparse or too far from the content here, and no stored ratio for this model"
        )?,
    }
    Ok(())
}

//! Calibration: each tokenizer's count of the context a host sent, beside the provider's own
//! count of that request, turn by turn ([`measure`], [`summarize`]); the ratio
//! `--tokenizer calibrated` scales its base by ([`calibrate`], [`calibrated_for`]), fitted on the
//! session or remembered per model in `<store>/calibration.json` (`docs/tokens.md`). `shake
//! tokens` shows it; every command that counts with `calibrated` uses it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::host::error::HostError;
use crate::host::{Session, View};
use crate::tokens::{entry_tokens, Tokenizer, CALIBRATION_BASE};
use crate::Context;

/// Why a session's context could not be calibrated. The CLI's exit code and hint are the
/// command boundary's (`command_error.rs`).
#[derive(Debug, thiserror::Error)]
pub enum CalibrationError {
    /// Neither the session's own turns nor a ratio stored for its model give one.
    #[error(
        "{}: cannot calibrate: too few assistant turns whose usage follows the content, and no stored ratio for its model",
        crate::output::path(path)
    )]
    NoRatio {
        /// The session file.
        path: PathBuf,
    },
    /// The host could not project a context the turns were sent.
    #[error(transparent)]
    Host(#[from] HostError),
}

/// What calibrating returns.
pub type Result<T, E = CalibrationError> = std::result::Result<T, E>;

/// A session needs this many usable turns before its own ratio calibrates.
const MIN_CALIBRATION_TURNS: usize = 3;
/// ... and a fit this close: real sessions fit within 2-5% (`docs/tokens.md`); usage that does
/// not follow the content (generated sessions, a proxy that rewrites requests) must not calibrate.
const MAX_CALIBRATION_FIT_ERROR: f64 = 0.10;
/// ... and a plausible ratio (real Claude sessions: 1.25-1.34 provider tokens per o200k token).
const CALIBRATION_RANGE: std::ops::RangeInclusive<f64> = 0.5..=3.0;

/// One assistant reply whose request the provider counted.
#[derive(Clone, Debug)]
pub struct Turn {
    /// The assistant entry's id.
    pub id: String,
    /// Provider and model that answered.
    pub provider: Option<String>,
    /// The model id.
    pub model: Option<String>,
    /// The provider's context size for the request: input + cacheRead + cacheWrite.
    pub provider_tokens: u64,
    /// Of it, the tokens read from the provider's cache and those written to it.
    pub cache: (u64, u64),
    /// Each measured tokenizer's count of the context pi sent (the projection at the parent).
    pub counts: Vec<u64>,
}

/// How far one tokenizer is from the provider on a session.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorSummary {
    /// Turns measured.
    pub turns: usize,
    /// Mean of (count − provider) / provider: negative means the tokenizer counts low. It
    /// includes what the file does not hold (system prompt, tool definitions).
    pub mean_error: f64,
    /// Least-squares fit provider ≈ intercept + slope × count: the slope is the provider's
    /// tokens per counted token on this session's content.
    pub slope: f64,
    /// The fit's intercept: the provider's tokens the file does not hold (system prompt, tools).
    pub intercept: f64,
    /// Mean |residual| / provider after the fit.
    pub fit_error: f64,
}

/// What an entry's count depends on besides the entry: the edit that wins for it, and whether it
/// is first in the context list (only the first compaction contributes).
type CountKey = (Option<usize>, bool);

/// Finds the turns on the branch at `projection`'s leaf and counts each request's context with
/// every tokenizer in `toks`.
pub fn measure(session: &Session<'_>, leaf: Option<usize>, toks: &[Tokenizer]) -> Result<Vec<Turn>, HostError> {
    let Some(leaf) = leaf else { return Ok(Vec::new()) };
    // The host's own path to the leaf: pi's root→leaf entries; Claude Code's loader chain (its
    // relinked preserved segment and the rows its timestamp fallback recovers included).
    let path = View::at(session, Some(leaf))?.path;
    // Entry counts depend on (entry, winning edit, first in context); remember the last one.
    let mut memo: Vec<Option<(CountKey, Vec<u64>)>> = vec![None; session.entries.len()];
    let mut turns = Vec::new();
    // The entry written last (entries are in file order) on the path so far.
    let mut written = 0;
    for w in path.windows(2) {
        let (parent, index) = (w[0], w[1]);
        written = written.max(parent);
        // A reply placed after an entry written later (Claude Code's preserved segment, relinked
        // after the compaction's summary) was sent a context other than the one before it here.
        if written > index {
            continue;
        }
        let Some(reply) = session.reply(index) else { continue };
        let Some(provider_tokens) = reply.prompt_tokens else { continue };
        let projection = View::at(session, Some(parent))?;
        let mut counts = vec![0; toks.len()];
        for (pos, unit) in projection.units.iter().enumerate() {
            let i = unit.index;
            let key = (unit.edit(), pos == 0);
            let fresh = memo[i].as_ref().is_some_and(|(k, _)| *k == key);
            if !fresh {
                let c = toks.iter().map(|t| entry_tokens(&projection, pos, t)).collect();
                memo[i] = Some((key, c));
            }
            let Some((_, c)) = &memo[i] else { continue };
            for (sum, n) in counts.iter_mut().zip(c) {
                *sum += n;
            }
        }
        turns.push(Turn {
            id: session.entries[index].id().to_string(),
            provider: reply.provider.map(|p| p.into_owned()),
            model: reply.model.map(|p| p.into_owned()),
            provider_tokens,
            cache: reply.cache.map_or((0, 0), |c| (c.cache_read, c.cache_write)),
            counts,
        });
    }
    Ok(turns)
}

/// Summarises column `col` of `turns` against the provider.
pub fn summarize(turns: &[Turn], col: usize) -> ErrorSummary {
    let pairs: Vec<(f64, f64)> =
        turns.iter().map(|t| (t.counts[col] as f64, t.provider_tokens as f64)).filter(|(x, _)| *x > 0.0).collect();
    let n = pairs.len();
    if n == 0 {
        return ErrorSummary::default();
    }
    let nf = n as f64;
    let mean_error = pairs.iter().map(|(x, y)| (x - y) / y).sum::<f64>() / nf;
    let (mx, my) = (pairs.iter().map(|p| p.0).sum::<f64>() / nf, pairs.iter().map(|p| p.1).sum::<f64>() / nf);
    let sxx: f64 = pairs.iter().map(|(x, _)| (x - mx) * (x - mx)).sum();
    let sxy: f64 = pairs.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
    let (slope, intercept) = if sxx > 0.0 { (sxy / sxx, my - sxy / sxx * mx) } else { (my / mx, 0.0) };
    let fit_error = pairs.iter().map(|(x, y)| (intercept + slope * x - y).abs() / y).sum::<f64>() / nf;
    ErrorSummary { turns: n, mean_error, slope, intercept, fit_error }
}

/// How far one tokenizer's count of what each turn added to the context is from the provider's
/// count of it ([`added`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AddedSummary {
    /// Pairs of consecutive turns compared.
    pub pairs: usize,
    /// What the provider counted the turns added, summed over the pairs.
    pub provider: i64,
    /// What the tokenizer counted they added, summed over the pairs.
    pub counted: i64,
    /// counted / provider − 1: negative means the tokenizer counts what turns add low.
    pub error: f64,
    /// The median over the pairs of (counted − provider) / provider (pairs that added nothing
    /// left out).
    pub median_error: f64,
    /// The mean over the pairs of |counted − provider|, in tokens.
    pub mean_abs_diff: f64,
}

/// The pairs of consecutive turns [`added`] compares, and how many it leaves out and why.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AddedPairs {
    /// Each pair, as indexes into the turns: (the earlier, the later).
    #[serde(skip)]
    pub pairs: Vec<(usize, usize)>,
    /// Left out: the model changed between the two (another encoding, maybe another prompt).
    pub model_changed: usize,
    /// Left out: the later request read less from the cache than the earlier one had cached,
    /// so its prefix (system prompt, tools, or a compacted history) changed, or the cache expired
    /// and nothing says it did not change.
    pub cache_broken: usize,
}

/// The pairs of consecutive turns whose difference of prompt totals is what the later turn's
/// request added to the earlier one's: the system prompt and tool definitions, counted by the
/// provider and absent from the file, cancel. A pair is left out when the model changed (its
/// encoding and prompt differ), or when the later request did not read from the cache all that
/// the earlier one had in it or wrote to it (`read₂ < read₁ + write₁`, for a provider that reports
/// its cache): the prefix changed (a compaction, a new system prompt or tool list), or the cache
/// expired, and then nothing shows the prefix is the same. The prompt total itself does not
/// depend on the cache (input + read + write), so a carried cache changes nothing in it.
pub fn added_pairs(turns: &[Turn]) -> AddedPairs {
    let mut out = AddedPairs::default();
    for (k, w) in turns.windows(2).enumerate() {
        let (a, b) = (&w[0], &w[1]);
        if a.model != b.model {
            out.model_changed += 1;
        } else if a.cache != (0, 0) && b.cache.0 < a.cache.0 + a.cache.1 {
            out.cache_broken += 1;
        } else {
            out.pairs.push((k, k + 1));
        }
    }
    out
}

/// Summarises column `col` of `turns` on `pairs` ([`added_pairs`]): each tokenizer's count of
/// what each turn added beside the provider's.
pub fn added(turns: &[Turn], pairs: &AddedPairs, col: usize) -> AddedSummary {
    let diffs: Vec<(i64, i64)> = pairs
        .pairs
        .iter()
        .map(|&(a, b)| {
            let (a, b) = (&turns[a], &turns[b]);
            (b.counts[col] as i64 - a.counts[col] as i64, b.provider_tokens as i64 - a.provider_tokens as i64)
        })
        .collect();
    if diffs.is_empty() {
        return AddedSummary::default();
    }
    let (counted, provider) = diffs.iter().fold((0, 0), |(c, p), (dc, dp)| (c + dc, p + dp));
    let mut errors: Vec<f64> = diffs.iter().filter(|(_, p)| *p > 0).map(|&(c, p)| (c - p) as f64 / p as f64).collect();
    errors.sort_by(f64::total_cmp);
    let median_error = match errors.len() {
        0 => 0.0,
        n if n % 2 == 1 => errors[n / 2],
        n => (errors[n / 2 - 1] + errors[n / 2]) / 2.0,
    };
    AddedSummary {
        pairs: diffs.len(),
        provider,
        counted,
        error: if provider != 0 { counted as f64 / provider as f64 - 1.0 } else { 0.0 },
        median_error,
        mean_abs_diff: diffs.iter().map(|(c, p)| (c - p).abs() as f64).sum::<f64>() / diffs.len() as f64,
    }
}

/// Ratios `calibrated` has learnt, per model, in `<store>/calibration.json`.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Calibrations {
    /// Always [`CALIBRATION_BASE`]'s name; a file for another base is ignored.
    pub base: String,
    /// `provider/model` → the last ratio measured on a session of that model.
    pub models: BTreeMap<String, Calibration>,
}

/// One learnt ratio.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Calibration {
    /// Provider tokens per base token (the fit's slope).
    pub ratio: f64,
    /// Turns it was measured on.
    pub turns: usize,
    /// The session file it was measured on.
    pub session: String,
}

impl Calibrations {
    fn path(store_dir: &Path) -> std::path::PathBuf {
        store_dir.join("calibration.json")
    }

    /// Loads the stored ratios (none when the file is missing or unreadable).
    pub fn load(ctx: &Context) -> Calibrations {
        let path = Self::path(&ctx.store_dir);
        let Ok(bytes) = std::fs::read(&path) else { return Calibrations::default() };
        match serde_json::from_slice::<Calibrations>(&bytes) {
            Ok(c) if c.base == CALIBRATION_BASE.as_str() => c,
            Ok(_) => Calibrations::default(),
            Err(e) => {
                ctx.warn(format_args!("{}: ignoring unreadable calibrations ({e})", path.display()));
                Calibrations::default()
            }
        }
    }

    /// Writes the ratios (durably: they were learnt from sessions that may be gone).
    pub fn save(&self, ctx: &Context) -> std::io::Result<()> {
        Ok(crate::durable::write(&Self::path(&ctx.store_dir), &serde_json::to_vec_pretty(self)?)?)
    }
}

/// The model key a session is calibrated under: the last usable turn's `provider/model`.
fn model_key(turns: &[Turn]) -> Option<String> {
    let t = turns.last()?;
    Some(format!("{}/{}", t.provider.as_deref().unwrap_or("?"), t.model.as_deref().unwrap_or("?")))
}

/// Works out the calibrated ratio for a session: its own fit when it has enough usable turns
/// (and then remembers it for its model), else the last ratio stored for its model.
pub fn calibrate(ctx: &Context, session: &Session<'_>, leaf: Option<usize>, base: &Tokenizer) -> Result<f64> {
    let turns = measure(session, leaf, std::slice::from_ref(base))?;
    calibration_from(ctx, session, &turns, 0)
}

/// [`calibrate`] from turns already measured, `col` being the base tokenizer's column.
pub fn calibration_from(ctx: &Context, session: &Session<'_>, turns: &[Turn], col: usize) -> Result<f64> {
    let own = summarize(turns, col);
    let key = model_key(turns);
    let mut stored = Calibrations::load(ctx);
    let trusted = own.turns >= MIN_CALIBRATION_TURNS
        && own.fit_error <= MAX_CALIBRATION_FIT_ERROR
        && CALIBRATION_RANGE.contains(&own.slope);
    if trusted {
        if let Some(key) = key {
            let c = Calibration {
                ratio: own.slope,
                turns: own.turns,
                session: session.file.path.to_string_lossy().into_owned(),
            };
            stored.base = CALIBRATION_BASE.as_str().into();
            if stored.models.get(&key) != Some(&c) {
                stored.models.insert(key, c);
                if let Err(e) = stored.save(ctx) {
                    ctx.warn(format_args!("cannot save calibration.json: {e}"));
                }
            }
        }
        return Ok(own.slope);
    }
    let model = key.or_else(|| latest_model(session));
    model
        .and_then(|k| stored.models.get(&k).map(|c| c.ratio))
        .ok_or_else(|| CalibrationError::NoRatio { path: session.file.path.clone() })
}

/// The `provider/model` of the last assistant message, usable or not.
fn latest_model(session: &Session<'_>) -> Option<String> {
    (0..session.entries.len()).rev().find_map(|i| {
        let m = session.reply(i)?;
        Some(format!("{}/{}", m.provider.as_deref().unwrap_or("?"), m.model.as_deref().unwrap_or("?")))
    })
}

/// Returns `calibrated` for this session, counting through `tok`'s cache.
pub fn calibrated_for(ctx: &Context, session: &Session<'_>, tok: Tokenizer) -> Result<Tokenizer> {
    let base = tok.cache().into_iter().fold(Tokenizer::new(CALIBRATION_BASE), Tokenizer::with_cache);
    let ratio = calibrate(ctx, session, session.default_leaf(), &base)?;
    Ok(tok.cache().into_iter().fold(Tokenizer::calibrated(ratio), Tokenizer::with_cache))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(model: &str, provider_tokens: u64, cache: (u64, u64), count: u64) -> Turn {
        Turn {
            id: String::new(),
            provider: None,
            model: Some(model.into()),
            provider_tokens,
            cache,
            counts: vec![count],
        }
    }

    /// A pair is left out where the model changed or the cache broke; a provider that reports
    /// no cache breaks none; the sums are over the pairs kept.
    #[test]
    fn added_pairs_leave_out_model_changes_and_broken_caches() {
        let turns = [
            turn("a", 1_000, (0, 900), 100),
            turn("a", 1_200, (900, 250), 250),   // carried: +200 / +150
            turn("b", 1_300, (1_150, 100), 300), // another model
            turn("b", 1_500, (0, 1_450), 400),   // read nothing: broke
            turn("b", 1_600, (1_450, 100), 480), // carried: +100 / +80
            turn("b", 1_700, (0, 0), 500),       // reports no cache: broke against a cached one
        ];
        let pairs = added_pairs(&turns);
        assert_eq!((pairs.pairs.clone(), pairs.model_changed, pairs.cache_broken), (vec![(0, 1), (3, 4)], 1, 2));
        let s = added(&turns, &pairs, 0);
        assert_eq!((s.pairs, s.provider, s.counted), (2, 300, 230));
        assert!((s.error - (230.0 / 300.0 - 1.0)).abs() < 1e-12);
        assert!((s.median_error - (-0.25 + -0.2) / 2.0).abs() < 1e-12);
        assert_eq!(s.mean_abs_diff, (50.0 + 20.0) / 2.0);
        let uncached = [turn("a", 10, (0, 0), 5), turn("a", 20, (0, 0), 9)];
        assert_eq!(added_pairs(&uncached).pairs, vec![(0, 1)]);
    }
}

//! The priced meter (issue 31.2): what a fold costs and saves with the provider's prompt cache.
//!
//! A fold changes the prompt from its first folded entry on, so the next turn writes that part
//! to the cache again (the cache-write price) where it would have read it (the cache-read
//! price); every later turn reads the freed tokens less. So, in US dollars, with `suffix` the
//! tokens from the first folded entry to the end and `freed` the fold's figure:
//!
//! - cost = (suffix − freed) × write − suffix × read
//! - saving per turn = freed × read
//! - break-even = ⌈cost / saving⌉ turns (0 when the cost is not positive)
//!
//! When the cache has surely expired (no turn for longer than its lifetime: 5 minutes, or an
//! hour when the session's usage shows the 1-hour cache), the next turn writes everything
//! anyway: the fold is free now. Prices come from the session where it records them (pi's
//! `usage.cost`), else the config file's `[prices]`, else [`TABLE`]; the reading says which.

use std::path::PathBuf;

pub use shake_plumbing::host::turn::LastTurn;
use shake_plumbing::host::View;

use crate::config::Loaded;

/// One model family's prices, in US dollars per million tokens.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Prices {
    /// Writing the cache with the 5-minute lifetime.
    pub cache_write: f64,
    /// Writing it with the 1-hour lifetime.
    pub cache_write_1h: f64,
    /// Reading it.
    pub cache_read: f64,
}

/// When the built-in table's prices were read, and where.
pub const TABLE_DATE: &str = "2025-11-24";
/// Where the built-in table's prices come from.
pub const TABLE_SOURCE: &str = "the providers' API price pages (Anthropic: cache write 1.25x input for 5 minutes, 2x for an hour, read 0.1x; OpenAI: no write surcharge)";

/// The built-in prices per model family: the longest family that starts the model's name wins.
pub const TABLE: &[(&str, Prices)] = &[
    ("claude-opus-4-5", anthropic(5.0)),
    ("claude-opus-4", anthropic(15.0)),
    ("claude-opus", anthropic(5.0)),
    ("claude-3-opus", anthropic(15.0)),
    ("claude-sonnet", anthropic(3.0)),
    ("claude-3-7-sonnet", anthropic(3.0)),
    ("claude-3-5-sonnet", anthropic(3.0)),
    ("claude-haiku-4-5", anthropic(1.0)),
    ("claude-haiku", anthropic(1.0)),
    ("claude-3-5-haiku", anthropic(0.8)),
    ("claude-3-haiku", anthropic(0.25)),
    ("gpt-5", openai(1.25, 0.125)),
    ("gpt-4.1", openai(2.0, 0.5)),
    ("gpt-4o", openai(2.5, 1.25)),
];

/// Anthropic's cache prices for an input price.
const fn anthropic(input: f64) -> Prices {
    Prices { cache_write: input * 1.25, cache_write_1h: input * 2.0, cache_read: input * 0.1 }
}

/// OpenAI's: a write costs the input price, a read the cached-input price.
const fn openai(input: f64, cached: f64) -> Prices {
    Prices { cache_write: input, cache_write_1h: input, cache_read: cached }
}

/// Where the prices came from.
#[derive(Clone, Debug, PartialEq)]
pub enum PriceSource {
    /// The session's recorded cost (pi's `usage.cost`).
    Session,
    /// The config file's `[prices.<family>]`.
    Config { family: String, file: PathBuf },
    /// The built-in table's family.
    Table { family: &'static str },
}

impl PriceSource {
    /// `session`, `config` or `table`.
    pub fn key(&self) -> &'static str {
        match self {
            PriceSource::Session => "session",
            PriceSource::Config { .. } => "config",
            PriceSource::Table { .. } => "table",
        }
    }

    /// Words for people: `the session's recorded cost`, `.shake.toml [prices.claude-sonnet]`,
    /// `built-in prices for claude-sonnet (2025-11-24)`.
    pub fn describe(&self) -> String {
        match self {
            PriceSource::Session => "the session's recorded cost".into(),
            PriceSource::Config { family, file } => format!("{} [prices.{family}]", file.display()),
            PriceSource::Table { family } => format!("built-in prices for {family} ({TABLE_DATE})"),
        }
    }
}

/// The cache's lifetime: 5 minutes, or an hour with the extended cache.
pub fn lifetime_ms(long_cache: bool) -> u64 {
    if long_cache {
        3_600_000
    } else {
        300_000
    }
}

/// The tokens from the plan's first folded entry to the end of the context (0 for an empty plan).
pub fn suffix_of(view: &View<'_, '_>, plan: &crate::plan::Plan<'_>, tokens: &[u64]) -> u64 {
    let folded: std::collections::HashSet<usize> = plan.edits.iter().map(|e| e.index).collect();
    view.context.iter().position(|i| folded.contains(i)).map_or(0, |first| tokens[first..].iter().sum())
}

/// A plan's economics now (`$SHAKE_TIMESTAMP`, else the clock), with the config file's prices:
/// what `shake fold` reports.
pub fn of_plan(
    ctx: &shake_plumbing::Context,
    view: &View<'_, '_>,
    plan: &crate::plan::Plan<'_>,
    tokens: &[u64],
) -> Result<Option<Economics>, crate::config::ConfigError> {
    let config = crate::config::load(ctx)?;
    let now = shake_plumbing::time::now_millis();
    Ok(economics(plan.tokens_freed, suffix_of(view, plan, tokens), &LastTurn::of(view), now, &config))
}

/// The default horizon: past this many turns (requests) to pay back, a fold is "not worth it
/// yet"; `[fold] payback-turns` in the config file sets another. Why 25 (`docs/folding.md`, "The
/// horizon"): an agent makes several requests a prompt (the bundled pi session: 484 for 55
/// prompts, about 9), so 25 is about three prompts of work in one warm stretch; and with
/// Anthropic's write/read ratio of 12.5 it is the break-even of a fold that frees about 31% of
/// what the cache writes again: smaller folds wait for a cold cache.
pub const PAYBACK_TURNS: u64 = 25;

/// A fold's economics.
#[derive(Clone, Debug, PartialEq)]
pub struct Economics {
    /// Tokens from the first folded entry to the end, before the fold.
    pub suffix: u64,
    /// Tokens the fold frees.
    pub freed: u64,
    /// What the next turn pays more because of the fold, US dollars (≤ 0: nothing).
    pub cost: f64,
    /// What every later turn pays less.
    pub saving_per_turn: f64,
    /// Turns after which the fold has paid for itself (0: at once); `None`: never.
    pub break_even: Option<u64>,
    /// The cache has surely expired: the fold is free now.
    pub cold: bool,
    /// Milliseconds since the last turn, when its time is known.
    pub idle_ms: Option<u64>,
    /// The last turn's time, Unix milliseconds.
    pub last_turn_ms: Option<u64>,
    /// The cache's lifetime the usage shows.
    pub lifetime_ms: u64,
    /// The prices used, per million tokens (the write price of the lifetime in force).
    pub write_price: f64,
    pub read_price: f64,
    /// Where they came from.
    pub source: PriceSource,
    /// The horizon: a fold that pays back within this many turns is worth it.
    pub horizon: u64,
}

impl Economics {
    /// What to do: `cache cold: free now`, `pays back in 2 turns`, `not worth it yet`.
    pub fn verdict(&self) -> String {
        match self.break_even {
            _ if self.cold => "cache cold: free now".into(),
            Some(0) => "free now".into(),
            Some(1) => "pays back in 1 turn".into(),
            Some(n) if n <= self.horizon => format!("pays back in {n} turns"),
            _ => "not worth it yet".into(),
        }
    }

    /// The sentence `shake fold` adds: `Cache: cold (the last turn was more than 5 minutes
    /// ago), so this fold is free now. Prices: the session's recorded cost.`
    pub fn sentence(&self) -> String {
        let minutes = self.lifetime_ms / 60_000;
        let span = if minutes >= 60 { "an hour".to_string() } else { format!("{minutes} minutes") };
        let what = match self.break_even {
            _ if self.cold => format!("cold (the last turn was more than {span} ago), so this fold is free now"),
            Some(0) => "this fold costs nothing more".to_string(),
            turns => format!(
                "warm; this fold costs ${:.4} more on the next turn and saves ${:.4} a turn after: {}",
                self.cost,
                self.saving_per_turn,
                match turns {
                    Some(n) if n <= self.horizon => self.verdict(),
                    Some(n) => format!("it pays back in {n} turns, not worth it yet (beyond {})", self.horizon),
                    None => "it never pays back".to_string(),
                }
            ),
        };
        format!("Cache: {what}. Prices: {}.", self.source.describe())
    }

    /// The numbers, for `--json`.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "suffixTokens": self.suffix,
            "cost": self.cost,
            "savingPerTurn": self.saving_per_turn,
            "breakEvenTurns": self.break_even,
            "cold": self.cold,
            "lastTurn": self.last_turn_ms.map(shake_plumbing::time::iso),
            "cacheLifetimeSeconds": self.lifetime_ms / 1000,
            "writePrice": self.write_price,
            "readPrice": self.read_price,
            "priceSource": self.source.key(),
            "prices": self.source.describe(),
            "paybackTurns": self.horizon,
            "verdict": self.verdict(),
        })
    }
}

/// The prices for a turn: the session's recorded ones (both), else the config file's family,
/// else the built-in table's; `None` when none knows the model.
pub fn prices(turn: &LastTurn, config: &Loaded) -> Option<(f64, f64, PriceSource)> {
    if let (Some(read), Some(write)) = (turn.read_price, turn.write_price) {
        return Some((read, write, PriceSource::Session));
    }
    let model = turn.model.as_deref()?;
    let write_of = |p: &Prices| if turn.long() { p.cache_write_1h } else { p.cache_write };
    let configured = config.config.prices.iter().filter(|(family, _)| model.starts_with(family.as_str()));
    if let Some((family, p)) = configured.max_by_key(|(family, _)| family.len()) {
        let p = Prices {
            cache_write: p.cache_write,
            cache_write_1h: p.cache_write_1h.unwrap_or(p.input * 2.0),
            cache_read: p.cache_read,
        };
        let file = config.files.first().cloned().unwrap_or_default();
        return Some((p.cache_read, write_of(&p), PriceSource::Config { family: family.clone(), file }));
    }
    let (family, p) = TABLE.iter().filter(|(family, _)| model.starts_with(family)).max_by_key(|(f, _)| f.len())?;
    Some((p.cache_read, write_of(p), PriceSource::Table { family }))
}

/// A fold's economics: `freed` tokens of a prompt whose part from the first folded entry on is
/// `suffix` tokens, the last turn as `turn` says, at `now_ms`; `None` when nothing is freed or
/// no price is known.
pub fn economics(freed: u64, suffix: u64, turn: &LastTurn, now_ms: u64, config: &Loaded) -> Option<Economics> {
    if freed == 0 {
        return None;
    }
    let (read, write, source) = prices(turn, config)?;
    let lifetime = lifetime_ms(turn.long());
    let idle = turn.at_ms.map(|at| now_ms.saturating_sub(at));
    let cold = idle.is_some_and(|idle| idle > lifetime);
    let suffix = suffix.max(freed);
    let cost = match cold {
        // The next turn writes it all anyway: the fold writes less.
        true => -(freed as f64) * write / 1e6,
        false => ((suffix - freed) as f64 * write - suffix as f64 * read) / 1e6,
    };
    let saving = freed as f64 * read / 1e6;
    let break_even = match cost {
        c if c <= 0.0 => Some(0),
        _ if saving <= 0.0 => None,
        c => Some((c / saving).ceil() as u64),
    };
    Some(Economics {
        suffix,
        freed,
        cost,
        saving_per_turn: saving,
        break_even,
        cold,
        idle_ms: idle,
        last_turn_ms: turn.at_ms,
        lifetime_ms: lifetime,
        write_price: write,
        read_price: read,
        source,
        horizon: config.config.fold.payback_turns.unwrap_or(PAYBACK_TURNS),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(model: &str, at_ms: u64) -> LastTurn {
        LastTurn { at_ms: Some(at_ms), model: Some(model.into()), ..LastTurn::default() }
    }

    #[test]
    fn the_longest_family_prices_a_model() {
        let none = Loaded::default();
        let (read, write, source) = prices(&turn("claude-opus-4-5-20251101", 0), &none).unwrap();
        assert_eq!((read, write, source), (0.5, 6.25, PriceSource::Table { family: "claude-opus-4-5" }));
        let (_, write, _) = prices(&turn("claude-opus-4-1", 0), &none).unwrap();
        assert_eq!(write, 18.75);
        assert!(prices(&turn("mystery-1", 0), &none).is_none());
    }

    #[test]
    fn a_warm_cache_pays_back_and_a_cold_one_is_free() {
        let none = Loaded::default();
        let t = turn("claude-sonnet-4-5", 1_000_000);
        // 30k freed of a 40k suffix: the next turn writes 10k (3.75/M) instead of reading 40k (0.30/M).
        let e = economics(30_000, 40_000, &t, 1_000_000 + 60_000, &none).unwrap();
        assert!((e.cost - (10_000.0 * 3.75 - 40_000.0 * 0.30) / 1e6).abs() < 1e-12);
        assert!((e.saving_per_turn - 30_000.0 * 0.30 / 1e6).abs() < 1e-12);
        assert_eq!((e.break_even, e.verdict()), (Some(3), "pays back in 3 turns".to_string()));
        // A small fold of a long suffix: never within ten turns.
        let e = economics(2_000, 100_000, &t, 1_000_000, &none).unwrap();
        assert_eq!(e.verdict(), "not worth it yet");
        // Six minutes idle: the 5-minute cache is gone.
        let e = economics(2_000, 100_000, &t, 1_000_000 + 360_000, &none).unwrap();
        assert_eq!((e.cold, e.verdict()), (true, "cache cold: free now".to_string()));
        // The 1-hour cache is still warm then.
        let long = LastTurn { long_cache: Some(true), ..t };
        assert!(!economics(2_000, 100_000, &long, 1_000_000 + 360_000, &none).unwrap().cold);
    }
}

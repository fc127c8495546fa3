//! claude-shake's selection (spec: peer-rules §4), for the `claude-shake` profile: which tool
//! results a claude-shake fold would replace, and whether it would fold at all.
//!
//! Only tool-result text counts. Walking the results newest first, a result is kept while the
//! characters of the strictly newer (unshaken) results are below the window (16,000 tokens at
//! 0.34 tokens per character, about 47,059 characters; the straddler is kept); an older result
//! is selected when it is longer than 2,000 characters. Already-shaken results (tombstones) are
//! neither selected nor counted. The fold happens only when it frees at least 15% of the used
//! context.

/// claude-shake's settings (its `CONFIG`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClaudeShake {
    /// Newest tool output never shaken, in tokens.
    pub keep_tokens: f64,
    /// The token estimate for one character.
    pub tokens_per_char: f64,
    /// The smallest result shaken: longer than this many characters.
    pub min_result_chars: usize,
    /// The least share of the used context a shake must free.
    pub floor_share: f64,
}

impl Default for ClaudeShake {
    fn default() -> Self {
        ClaudeShake { keep_tokens: 16_000.0, tokens_per_char: 0.34, min_result_chars: 2_000, floor_share: 0.15 }
    }
}

/// Characters of a result's text that claude-shake's placeholder keeps (a 500-character preview
/// plus 300 of overhead).
const PLACEHOLDER_OVERHEAD_CHARS: usize = 800;

/// One tool result as claude-shake sees it: its length in UTF-16 units and whether it is a tombstone.
#[derive(Clone, Copy, Debug)]
pub struct Output {
    /// `text.length` in JavaScript (UTF-16 units).
    pub chars: usize,
    /// Starts with `[shaken:`, `<persisted-output>` or `<truncated-output>`.
    pub tombstone: bool,
}

impl ClaudeShake {
    /// The indexes (into `results`, oldest first) claude-shake would select, oldest first.
    pub fn select(&self, results: &[Output]) -> Vec<usize> {
        let start = self.window_start(results);
        (0..start).filter(|&i| !results[i].tombstone && results[i].chars > self.min_result_chars).collect()
    }

    /// The index (into `results`, oldest first) of the oldest result the window protects: every
    /// result from it on is kept (`results.len()` when none is).
    pub fn window_start(&self, results: &[Output]) -> usize {
        let window = self.keep_tokens / self.tokens_per_char;
        let mut newer = 0.0;
        let mut start = results.len();
        for (i, r) in results.iter().enumerate().rev() {
            if r.tombstone {
                continue;
            }
            if newer >= window {
                break;
            }
            start = i;
            newer += r.chars as f64;
        }
        start
    }

    /// The tokens claude-shake estimates the selected results free.
    pub fn freed(&self, results: &[Output], selected: &[usize]) -> f64 {
        let chars: usize = selected.iter().map(|&i| results[i].chars.saturating_sub(PLACEHOLDER_OVERHEAD_CHARS)).sum();
        chars as f64 * self.tokens_per_char
    }

    /// Whether a fold freeing `freed` tokens of `used` passes the floor.
    pub fn passes_floor(&self, freed: f64, used: f64) -> bool {
        freed >= self.floor_share * used
    }
}

/// A result already folded, by Claude Code or by a fold tool: never folded or counted again.
pub fn is_tombstone(text: &str) -> bool {
    let head = text.trim_start();
    ["[shaken:", "<persisted-output>", "<truncated-output>"].iter().any(|p| head.starts_with(p))
        || head == "[Old tool result content cleared]"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(chars: usize) -> Output {
        Output { chars, tombstone: false }
    }

    #[test]
    fn keeps_the_newest_window_and_small_results() {
        let cs = ClaudeShake::default();
        // Newest first: 50,000 chars (kept, straddles the window), then older ones.
        let results = [r(3_000), r(2_000), r(2_001), Output { chars: 90_000, tombstone: true }, r(50_000)];
        assert_eq!(cs.select(&results), [0, 2]);
        // Everything within the window is kept.
        assert_eq!(cs.select(&[r(20_000), r(20_000)]), Vec::<usize>::new());
        // The newest result is kept even when it alone exceeds the window.
        assert_eq!(cs.select(&[r(60_000)]), Vec::<usize>::new());
        assert_eq!(cs.window_start(&results), 4);
        assert_eq!(cs.window_start(&[r(20_000), r(30_000), r(20_000)]), 1);
        assert_eq!(cs.window_start(&[]), 0);
        let freed = cs.freed(&results, &[0, 2]);
        assert!((freed - (2_200.0 + 1_201.0) * 0.34).abs() < 1e-9);
        assert!(cs.passes_floor(freed, freed / 0.15) && !cs.passes_floor(freed, freed / 0.14));
    }
}

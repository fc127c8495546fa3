//! OMP's `Tokenizer` (`@oh-my-pi/pi-agent-core` `tokenizer.ts`) as far as Rust can reach it
//! offline: which count OMP makes for a session's model, and how close shake gets.
//!
//! OMP counts a list of fragments one fragment at a time and sums. For a model without a
//! catalog tokenizer family (GPT, Gemini, unknown) that is `(utf8 bytes + 3) >> 2` per fragment,
//! or o200k with `PI_TOKENIZER_ACCURATE=1`: both exact here. Claude's families are OMP's port of
//! ctok, which shake counts too ([`crate::tokens::claude`], with the vocabulary OMP carries):
//! exact. The other families (Qwen 3.5+, DeepSeek, Kimi, GLM 5) are OMP's native vocabularies,
//! which no crate ships; shake counts them as o200k times a ratio measured against OMP's own
//! counts and says so (`docs/tokens.md`).
//! Images cost a flat 1,200 in every mode.

use crate::tokens::family::Family;
use crate::tokens::{Tokenizer, TokenizerName};

/// OMP's fixed charge for one image (`IMAGE_TOKEN_ESTIMATE`).
pub const IMAGE_TOKENS: u64 = 1_200;

/// How a count relates to OMP's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counting {
    /// `(bytes + 3) >> 2` per fragment: OMP's count for models without a family. Exact.
    Bytes4,
    /// o200k per fragment: OMP's count without a family under `PI_TOKENIZER_ACCURATE=1`. Exact.
    O200k,
    /// Claude's count per fragment, OMP's vocabulary (`omp-v3`, …). Exact.
    Claude(Family),
    /// o200k times a measured ratio, standing in for a native family count. Approximate.
    Scaled(Family),
}

/// Counts as OMP counts for one session's model.
#[derive(Clone, Copy, Debug)]
pub struct OmpTokenizer {
    /// Which count this is.
    pub counting: Counting,
    /// What counts o200k or Claude's encoding (maybe through the token cache).
    counter: Tokenizer,
}

impl OmpTokenizer {
    /// The tokenizer OMP uses for a model of `family` (`None`: no catalog family), with
    /// `accurate` standing for `PI_TOKENIZER_ACCURATE=1`.
    pub fn new(family: Option<Family>, accurate: bool) -> OmpTokenizer {
        let counting = match family {
            Some(f) if encoding(f).is_some() => Counting::Claude(f),
            Some(f) => Counting::Scaled(f),
            None if accurate => Counting::O200k,
            None => Counting::Bytes4,
        };
        let counter = match counting {
            Counting::Claude(f) => encoding(f).unwrap_or(TokenizerName::O200k),
            _ => TokenizerName::O200k,
        };
        OmpTokenizer { counting, counter: Tokenizer::new(counter) }
    }

    /// The tokenizer whose counts (and token cache) these are made of; `None` for bytes/4.
    pub fn counts_with(&self) -> Option<TokenizerName> {
        (self.counting != Counting::Bytes4).then(|| self.counter.base())
    }

    /// The same, counting through `tokenizer` (which may carry the token cache) when it is the
    /// one [`OmpTokenizer::counts_with`] names.
    pub fn with_cached(mut self, tokenizer: Tokenizer) -> OmpTokenizer {
        if tokenizer.base() == self.counter.base() && tokenizer.name == tokenizer.base() {
            self.counter = tokenizer;
        }
        self
    }

    /// Tells whether counts equal OMP's exactly.
    pub fn exact(&self) -> bool {
        !matches!(self.counting, Counting::Scaled(_))
    }

    /// The name printed beside a count: `bytes/4`, `o200k`, `omp-v3` (OMP's encoding of the
    /// `claude-v3` family: what counts, not the catalog's family), or `~qwen3` (approximate).
    pub fn label(&self) -> String {
        match self.counting {
            Counting::Bytes4 => "bytes/4".into(),
            Counting::O200k | Counting::Claude(_) => self.counter.base().as_str().into(),
            Counting::Scaled(f) => format!("~{}", f.as_str()),
        }
    }

    /// Counts one text (OMP's `countTokens(text)`).
    pub fn count(&self, text: &str) -> u64 {
        self.count_all(&[text])
    }

    /// Counts fragments one by one and sums (OMP's `countTokens(fragments)`).
    pub fn count_all(&self, fragments: &[&str]) -> u64 {
        match self.counting {
            Counting::Bytes4 => fragments.iter().map(|t| (t.len() as u64 + 3) >> 2).sum(),
            Counting::O200k | Counting::Claude(_) => fragments.iter().map(|t| self.counter.count(t)).sum(),
            Counting::Scaled(f) => {
                let base: u64 = fragments.iter().map(|t| self.counter.count(t)).sum();
                (base as f64 * ratio(f)).round() as u64
            }
        }
    }
}

/// The encoding OMP counts a Claude family with (its port of ctok, ctok 1.0.0's vocabulary).
pub fn encoding(family: Family) -> Option<TokenizerName> {
    match family {
        Family::ClaudeV3 => Some(TokenizerName::OmpV3),
        Family::ClaudeV47 => Some(TokenizerName::OmpV47),
        Family::ClaudeV5 => Some(TokenizerName::OmpV5),
        Family::ClaudeV5Sonnet => Some(TokenizerName::OmpV5Sonnet),
        _ => None,
    }
}

/// OMP's native count per o200k token, for each family without an encoding here, measured with OMP 18.2.11's own
/// tokenizer on the fragments of the OMP fixture and generated sessions (`docs/tokens.md`).
pub fn ratio(family: Family) -> f64 {
    match family {
        Family::Qwen3 => 1.11,
        Family::DeepSeekV3 => 1.05,
        Family::KimiK2 => 0.99,
        // GLM 5; Claude's families are counted, not scaled.
        _ => 1.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::cache::TokenCache;

    #[test]
    fn bytes4_is_per_fragment() {
        let t = OmpTokenizer::new(None, false);
        assert_eq!(t.count_all(&["a", "bb", "é"]), 3);
        assert_eq!(t.count("abcde"), 2);
        assert_eq!(t.count(""), 0);
        assert!(t.exact());
        assert_eq!(t.label(), "bytes/4");
        assert_eq!(OmpTokenizer::new(None, true).count("hello world"), 2);
        assert!(!OmpTokenizer::new(Some(Family::Qwen3), false).exact());
        let claude = OmpTokenizer::new(Some(Family::ClaudeV3), false);
        assert!(claude.exact());
        assert_eq!(claude.label(), "omp-v3");
        assert_eq!(claude.count_all(&["hello, world", "\u{FFFD}"]), 5); // OMP's 3 + 2
    }

    /// A Claude session's counts go through the token cache of OMP's encoding (the meter's
    /// second reading of a changed file is then lookups).
    #[test]
    fn claude_counts_go_through_the_token_cache() {
        let cache: &'static TokenCache = Box::leak(Box::new(TokenCache::in_memory(TokenizerName::OmpV3)));
        let cached = Tokenizer::new(TokenizerName::OmpV3).with_cache(cache);
        let tok = OmpTokenizer::new(Some(Family::ClaudeV3), false).with_cached(cached);
        assert_eq!(tok.counts_with(), Some(TokenizerName::OmpV3));
        assert_eq!(tok.count("hello, world"), 3);
        assert_eq!(cache.get(&crate::tokens::cache::key("hello, world")), Some(3));
    }
}

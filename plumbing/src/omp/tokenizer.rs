//! OMP's `Tokenizer` (`@oh-my-pi/pi-agent-core` `tokenizer.ts`) as far as Rust can reach it
//! offline: which count OMP makes for a session's model, and how close shake gets.
//!
//! OMP counts a list of fragments one fragment at a time and sums. For a model without a
//! catalog tokenizer family (GPT, Gemini, unknown) that is `(utf8 bytes + 3) >> 2` per fragment,
//! or o200k with `PI_TOKENIZER_ACCURATE=1`: both exact here. The families (Claude, Qwen 3.5+,
//! DeepSeek, Kimi, GLM 5) are OMP's native vocabularies, which no crate ships; shake counts them
//! as o200k times a ratio measured against OMP's own counts and says so (`docs/tokens.md`).
//! Images cost a flat 1,200 in every mode.

use super::model::Family;
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
    /// o200k times a measured ratio, standing in for a native family count. Approximate.
    Scaled(Family),
}

/// Counts as OMP counts for one session's model.
#[derive(Clone, Copy, Debug)]
pub struct OmpTokenizer {
    /// Which count this is.
    pub counting: Counting,
    o200k: Tokenizer,
}

impl OmpTokenizer {
    /// The tokenizer OMP uses for a model of `family` (`None`: no catalog family), with
    /// `accurate` standing for `PI_TOKENIZER_ACCURATE=1`.
    pub fn new(family: Option<Family>, accurate: bool) -> OmpTokenizer {
        let counting = match family {
            Some(f) => Counting::Scaled(f),
            None if accurate => Counting::O200k,
            None => Counting::Bytes4,
        };
        OmpTokenizer { counting, o200k: Tokenizer::new(TokenizerName::O200k) }
    }

    /// The same, counting o200k through `tokenizer` (which may carry the token cache).
    pub fn with_o200k(mut self, tokenizer: Tokenizer) -> OmpTokenizer {
        if tokenizer.base() == TokenizerName::O200k {
            self.o200k = tokenizer;
        }
        self
    }

    /// Tells whether counts equal OMP's exactly.
    pub fn exact(&self) -> bool {
        !matches!(self.counting, Counting::Scaled(_))
    }

    /// The name printed beside a count: `bytes/4`, `o200k`, or `~claude-v3` (approximate).
    pub fn label(&self) -> String {
        match self.counting {
            Counting::Bytes4 => "bytes/4".into(),
            Counting::O200k => "o200k".into(),
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
            Counting::O200k => fragments.iter().map(|t| self.o200k.count(t)).sum(),
            Counting::Scaled(f) => {
                let base: u64 = fragments.iter().map(|t| self.o200k.count(t)).sum();
                (base as f64 * ratio(f)).round() as u64
            }
        }
    }
}

/// OMP's native count per o200k token, for each family, measured with OMP 18.2.11's own
/// tokenizer on the fragments of the OMP fixture and generated sessions (`docs/tokens.md`).
pub fn ratio(family: Family) -> f64 {
    match family {
        Family::ClaudeV3 => 1.22,
        Family::ClaudeV47 => 1.49,
        Family::ClaudeV5 => 1.47,
        Family::ClaudeV5Sonnet => 1.47,
        Family::Qwen3 => 1.11,
        Family::DeepSeekV3 => 1.05,
        Family::KimiK2 => 0.99,
        Family::Glm5 => 1.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes4_is_per_fragment() {
        let t = OmpTokenizer::new(None, false);
        assert_eq!(t.count_all(&["a", "bb", "é"]), 3);
        assert_eq!(t.count("abcde"), 2);
        assert_eq!(t.count(""), 0);
        assert!(t.exact());
        assert_eq!(t.label(), "bytes/4");
        assert_eq!(OmpTokenizer::new(None, true).count("hello world"), 2);
        assert!(!OmpTokenizer::new(Some(Family::ClaudeV3), false).exact());
    }
}

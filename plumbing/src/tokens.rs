//! Token counting: a host's own estimate and real BPE counts, behind one interface.
//!
//! Every number shake prints says which tokenizer made it. The host decides which pieces of a
//! message count ([`crate::host::View::pieces`]); a tokenizer counts them. `pi` is pi 1.6.0's
//! `estimateTokens` exactly (the pi host's estimate: per message `ceil(chars / 4)` in UTF-16
//! code units, images 4,800 chars). `o200k` and `cl100k` count the same pieces with tiktoken's
//! BPE (images 1,200 tokens), with counting code of ours ([`bpe`]) over tables the store keeps
//! ready to map; the tables load lazily, on first use only. `calibrated` is one of
//! those scaled by a ratio measured against the provider's own usage (`docs/tokens.md`).
//!
//! A [`Tokenizer`] may carry a [`TokenCache`]: BPE counts are then looked up by content hash and
//! only new text is tokenized. Everything that counts (count-tokens, tokens, fold, meter) goes
//! through [`Tokenizer`], so they all share one cache and one definition of a token.

pub mod bpe;
pub mod cache;
pub mod calibration;
pub mod claude;
pub mod family;
mod o200k_ascii;

use std::fmt;
use std::str::FromStr;

use crate::host::{Estimator, Pieces, Session, View};
use bpe::Bpe;
use cache::TokenCache;

/// An image's cost in tokens for every BPE tokenizer (what pi's estimate gives one).
pub const IMAGE_TOKENS: u64 = 1_200;

/// The tokenizers shake knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum TokenizerName {
    /// pi's own estimate: ceil(UTF-16 chars / 4) per message
    Pi,
    /// OpenAI o200k_base BPE (tiktoken)
    O200k,
    /// OpenAI cl100k_base BPE (tiktoken)
    Cl100k,
    /// o200k scaled by the ratio measured against the provider's usage (docs/tokens.md)
    Calibrated,
    /// Claude 3 … Opus 4.6: ctok's v3 reconstruction of Claude's count (content, no frame)
    ClaudeV3,
    /// Claude Opus 4.7 … 4.9: ctok's v4.7
    ClaudeV47,
    /// Claude Opus 5+: ctok's v4.8, trailing ASCII whitespace free (as oh-my-pi counts it)
    ClaudeV5,
    /// Claude Sonnet/Fable 5+: ctok's v4.8
    ClaudeV5Sonnet,
    /// The four above with the vocabulary oh-my-pi 18.2.11 counts with (ctok 1.0.0's): an OMP
    /// session's own figures. Not offered on the command line.
    #[cfg_attr(feature = "cli", value(skip))]
    OmpV3,
    #[cfg_attr(feature = "cli", value(skip))]
    OmpV47,
    #[cfg_attr(feature = "cli", value(skip))]
    OmpV5,
    #[cfg_attr(feature = "cli", value(skip))]
    OmpV5Sonnet,
}

impl TokenizerName {
    /// Every name, in the order reports list them.
    pub const ALL: [TokenizerName; 8] = [
        TokenizerName::Pi,
        TokenizerName::O200k,
        TokenizerName::Cl100k,
        TokenizerName::Calibrated,
        TokenizerName::ClaudeV3,
        TokenizerName::ClaudeV47,
        TokenizerName::ClaudeV5,
        TokenizerName::ClaudeV5Sonnet,
    ];

    /// Returns the name as printed and accepted on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenizerName::Pi => "pi",
            TokenizerName::O200k => "o200k",
            TokenizerName::Cl100k => "cl100k",
            TokenizerName::Calibrated => "calibrated",
            TokenizerName::ClaudeV3 => "claude-v3",
            TokenizerName::ClaudeV47 => "claude-v47",
            TokenizerName::ClaudeV5 => "claude-v5",
            TokenizerName::ClaudeV5Sonnet => "claude-v5-sonnet",
            TokenizerName::OmpV3 => "omp-v3",
            TokenizerName::OmpV47 => "omp-v47",
            TokenizerName::OmpV5 => "omp-v5",
            TokenizerName::OmpV5Sonnet => "omp-v5-sonnet",
        }
    }

    /// Tells whether counting with it needs BPE tables (and so benefits from the cache).
    pub fn is_bpe(self) -> bool {
        matches!(self, TokenizerName::O200k | TokenizerName::Cl100k)
    }

    /// Tells whether it is one of Claude's encodings ([`claude`]).
    pub fn is_claude(self) -> bool {
        use TokenizerName::*;
        matches!(self, ClaudeV3 | ClaudeV47 | ClaudeV5 | ClaudeV5Sonnet | OmpV3 | OmpV47 | OmpV5 | OmpV5Sonnet)
    }

    /// Tells whether its counts are worth keeping in the token cache (a real tokenizer's).
    pub fn is_cached(self) -> bool {
        self.is_bpe() || self.is_claude()
    }
}

impl fmt::Display for TokenizerName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for TokenizerName {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TokenizerName::ALL
            .into_iter()
            .find(|n| n.as_str() == s)
            .ok_or_else(|| format!("unknown tokenizer {s:?} (pi, o200k, cl100k, calibrated, claude-v3, claude-v47, claude-v5, claude-v5-sonnet)"))
    }
}

/// A tokenizer, ready to count: a base tokenizer, a scale (1 unless calibrated), and maybe a cache.
///
/// A command opens one cache per tokenizer and keeps it for the whole process, so the cache is
/// held by `&'static` reference and a `Tokenizer` stays `Copy` (plans and options hold it by value).
#[derive(Clone, Copy, Debug)]
pub struct Tokenizer {
    /// Which one, as printed.
    pub name: TokenizerName,
    base: TokenizerName,
    scale: f64,
    cache: Option<&'static TokenCache>,
    /// The host's own estimate this is (`None` for BPE).
    estimate: Option<&'static dyn Estimator>,
}

impl Tokenizer {
    /// Returns an uncached tokenizer; BPE tables load on the first count, not here.
    /// `Calibrated` needs a ratio: use [`Tokenizer::calibrated`]; here it means a ratio of 1.
    pub fn new(name: TokenizerName) -> Tokenizer {
        let base = if name == TokenizerName::Calibrated { CALIBRATION_BASE } else { name };
        Tokenizer { name, base, scale: 1.0, cache: None, estimate: estimator(base) }
    }

    /// Returns the calibrated tokenizer: [`CALIBRATION_BASE`] counts times `scale`.
    pub fn calibrated(scale: f64) -> Tokenizer {
        Tokenizer { name: TokenizerName::Calibrated, base: CALIBRATION_BASE, scale, cache: None, estimate: None }
    }

    /// Returns this tokenizer counting through `cache` (which must be for its base tokenizer).
    pub fn with_cache(mut self, cache: &'static TokenCache) -> Tokenizer {
        if cache.tokenizer() == self.base && self.base.is_cached() {
            self.cache = Some(cache);
        }
        self
    }

    /// Returns the tokenizer that is scaled (itself unless calibrated).
    pub fn base(&self) -> TokenizerName {
        self.base
    }

    /// Returns the calibration factor (1 unless calibrated).
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// Returns the cache counts go through, if any.
    pub fn cache(&self) -> Option<&'static TokenCache> {
        self.cache
    }

    /// Starts a tally for one message (pi rounds once per message, not per piece).
    pub fn tally(&self) -> Tally {
        Tally { tokenizer: *self, chars: 0, tokens: 0, done: 0 }
    }

    /// Counts one piece of text on its own (a region, a placeholder).
    pub fn count(&self, text: &str) -> u64 {
        let mut t = self.tally();
        t.text(text);
        t.total()
    }

    /// Counts the BPE tokens of one piece, through the cache when there is one.
    fn bpe(&self, text: &str) -> u64 {
        match self.cache {
            // Every piece goes through the cache, short ones too: a warm run then never builds
            // the BPE tables (0.15-0.35 s).
            Some(cache) => {
                let key = cache::key(text);
                cache.get(&key).unwrap_or_else(|| {
                    let n = self.counter().count(text);
                    cache.insert(key, n);
                    n
                })
            }
            _ => self.counter().count(text),
        }
    }

    /// Returns what counts this tokenizer's tokens: Claude's encoding, or the BPE table (the
    /// cache's, mapped from the store, or one built for this process when there is no cache).
    fn counter(&self) -> Counter {
        if let Some(claude) = claude::shared(self.base) {
            return Counter::Claude(claude);
        }
        Counter::Bpe(match self.cache {
            Some(cache) => cache.bpe(),
            None => bpe::shared(self.base, None).0,
        })
    }

    fn scaled(&self, tokens: u64) -> u64 {
        if self.scale == 1.0 {
            tokens
        } else {
            (tokens as f64 * self.scale).round() as u64
        }
    }

    /// Tokenizes, on every core, the texts of `view` the cache does not hold yet, so the
    /// counts that follow are lookups. Does nothing without a cache or for `pi`.
    pub fn prefetch(&self, view: &View<'_, '_>) {
        let Some(mut misses) = Misses::new(*self) else { return };
        for pos in 0..view.context.len() {
            view.pieces(pos, &mut misses);
        }
        misses.flush();
    }

    /// Counts `n` things, each of the pieces `feed(i, sink)` gives (thing `i`), with what the
    /// cache lacks tokenized on every core: one pass over the pieces when the cache holds them
    /// all (each piece is hashed and looked up once, not once to prefetch and once to count);
    /// a thing that had a miss is counted again once the misses are in the cache. The same
    /// counts as a [`Tokenizer::tally`] of each.
    pub fn count_each(&self, n: usize, feed: impl Fn(usize, &mut dyn Pieces)) -> Vec<u64> {
        let tally = |i| {
            let mut t = self.tally();
            feed(i, &mut t);
            t.total()
        };
        let Some(mut misses) = Misses::new(*self) else { return (0..n).map(tally).collect() };
        let cache = misses.cache;
        let mut missed = Vec::new();
        let mut counts: Vec<u64> = (0..n)
            .map(|i| {
                let mut lookup = Lookup { tally: self.tally(), cache, misses: &mut misses, missed: false };
                feed(i, &mut lookup);
                if lookup.missed {
                    missed.push(i);
                }
                lookup.tally.total()
            })
            .collect();
        if !missed.is_empty() {
            misses.flush();
            for i in missed {
                counts[i] = tally(i);
            }
        }
        counts
    }

    /// Counts `texts` on every core into the cache (`prefetch`'s work once the misses are known).
    fn prefetch_texts<T: AsRef<str> + Sync>(&self, texts: &[(cache::Key, T)]) {
        let Some(cache) = self.cache else { return };
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        // The work: every text, a huge one (a 100 MB line) cut in one part per core, so one
        // text alone still keeps every core busy. Each part is (text, byte range).
        let mut parts: Vec<(usize, std::ops::Range<usize>)> = Vec::new();
        for (t, (_, text)) in texts.iter().enumerate() {
            let text = text.as_ref();
            let mut start = 0;
            if text.len() >= SPLIT_BYTES && threads > 1 {
                for cut in self.counter().cuts(text, threads) {
                    parts.push((t, start..cut));
                    start = cut;
                }
            }
            parts.push((t, start..text.len()));
        }
        let threads = threads.min(parts.len().max(1));
        let total: usize = parts.iter().map(|(_, r)| r.len()).sum();
        let mut chunks: Vec<Vec<&(usize, std::ops::Range<usize>)>> = vec![Vec::new(); threads];
        let mut filled = 0;
        for part in &parts {
            chunks[(filled * threads / total.max(1)).min(threads - 1)].push(part);
            filled += part.1.len();
        }
        let counter = self.counter();
        let counts: Vec<u64> = vec![0; texts.len()];
        let counts = std::sync::Mutex::new(counts);
        std::thread::scope(|s| {
            for chunk in chunks {
                let (texts, counts) = (&texts, &counts);
                s.spawn(move || {
                    let bpe = match counter {
                        Counter::Bpe(bpe) => Some(bpe.for_thread()),
                        Counter::Claude(_) => None,
                    };
                    for (t, range) in chunk {
                        let text = &texts[*t].1.as_ref()[range.clone()];
                        let n = bpe.as_ref().map_or_else(|| counter.count(text), |bpe| bpe.count(text));
                        counts.lock().unwrap_or_else(|e| e.into_inner())[*t] += n;
                    }
                });
            }
        });
        let counts = counts.into_inner().unwrap_or_else(|e| e.into_inner());
        for ((key, _), n) in texts.iter().zip(counts) {
            cache.insert(*key, n);
        }
    }
}

/// What counts a real tokenizer's tokens.
#[derive(Clone, Copy)]
enum Counter {
    Bpe(&'static Bpe),
    Claude(&'static claude::Claude),
}

impl Counter {
    fn count(&self, text: &str) -> u64 {
        match self {
            Counter::Bpe(bpe) => bpe.count(text),
            Counter::Claude(claude) => claude.count(text),
        }
    }

    /// Where a huge text may be cut into parts counted apart ([`cuts`] for BPE). Nowhere for
    /// Claude's: its count of a part is not its share of the whole (the frame prices the line
    /// feeds ending a text, and a boundary marker looks at both neighbours), so a huge text is
    /// counted whole, on one core, while the other texts share the rest.
    fn cuts(&self, text: &str, parts: usize) -> Vec<usize> {
        match self {
            Counter::Bpe(_) => cuts(text, parts),
            Counter::Claude(_) => Vec::new(),
        }
    }
}

/// Texts at least this long are counted in parts, on every core ([`Tokenizer::prefetch`]).
const SPLIT_BYTES: usize = 1 << 20;

/// Up to `parts - 1` places, near even shares of `text`, where it can be cut with the BPE count
/// of the parts adding up to the text's own, for o200k and cl100k alike: just after a `\n` that
/// an ASCII letter follows. Why that is exact: both tokenizers count each piece their pattern
/// splits the text into, every character is in some piece, and no alternative of either
/// pattern puts a line feed and a following letter in one piece (letter runs exclude `\r\n`
/// from their optional lead, punctuation runs and whitespace runs end at the letter), so a
/// piece ends at the cut; the pattern has no look-behind and its only look-ahead (`\s+(?!\S)`)
/// is tried after `\s*[\r\n]+`, which already takes a whitespace run ending in `\n`, so the
/// pieces before the cut are the same when the text ends there. A text without such a place
/// (one huge word, say) is not cut.
fn cuts(text: &str, parts: usize) -> Vec<usize> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    for i in 1..parts {
        let aim = (bytes.len() * i / parts).max(from);
        let found = memchr::memchr_iter(b'\n', &bytes[aim..])
            .map(|j| aim + j + 1)
            .find(|&at| bytes.get(at).is_some_and(u8::is_ascii_alphabetic));
        match found {
            Some(at) if at < bytes.len() => {
                out.push(at);
                from = at;
            }
            _ => break,
        }
    }
    out
}

/// The tokenizer `meter`, `fold` and `count-tokens` use unless told otherwise, when the session's
/// model is not Claude ([`default_for`], `docs/tokens.md`).
pub const DEFAULT_TOKENIZER: TokenizerName = TokenizerName::O200k;

/// The tokenizer a command counts with: the one chosen (`--tokenizer`), else the session's own
/// ([`default_for`]) at `leaf`, `model` being the model chosen (`--model`, `Context::model`).
pub fn resolve(
    choice: Option<TokenizerName>,
    session: &Session<'_>,
    leaf: Option<usize>,
    model: Option<&str>,
) -> TokenizerName {
    choice.unwrap_or_else(|| default_for(session, leaf, model))
}

/// The tokenizer a session's figures default to: Claude's own count for its model when the
/// model is Claude ([`claude::for_model`]), else [`DEFAULT_TOKENIZER`]. The model is the one
/// chosen (`--model`) when there is one, else the last reply's on the way back from `leaf` to the
/// root (pi's and Claude Code's assistant messages name theirs). A host with a meter of its own
/// (oh-my-pi's, which counts by OMP's own rules) keeps [`DEFAULT_TOKENIZER`] for the other
/// commands, which do not restate those rules.
pub fn default_for(session: &Session<'_>, leaf: Option<usize>, model: Option<&str>) -> TokenizerName {
    match session.host().own_meter() {
        Some(_) => DEFAULT_TOKENIZER,
        None => named_default(session, leaf, model).unwrap_or(DEFAULT_TOKENIZER),
    }
}

/// The default the session's model gives ([`default_for`]): `None` when no model is chosen and
/// no reply on the way back from `leaf` names one (a meter grown by a few lines keeps the
/// tokenizer it measured with unless they name another).
pub fn named_default(session: &Session<'_>, leaf: Option<usize>, model: Option<&str>) -> Option<TokenizerName> {
    let chosen = model.map(|m| (String::new(), m.to_string()));
    // The walk is bounded: parent links from a file may make a cycle.
    let (provider, model) = chosen.or_else(|| {
        std::iter::successors(leaf, |&i| session.parent_of(i)).take(session.entries.len()).find_map(|i| {
            let reply = session.reply(i)?;
            Some((reply.provider.unwrap_or_default().into_owned(), reply.model?.into_owned()))
        })
    })?;
    Some(claude::for_model(&provider, &model).unwrap_or(DEFAULT_TOKENIZER))
}

/// The tokenizer `calibrated` scales.
pub const CALIBRATION_BASE: TokenizerName = TokenizerName::O200k;

/// The host's own estimate a tokenizer is: `pi`, the estimate of the host of that name.
fn estimator(name: TokenizerName) -> Option<&'static dyn Estimator> {
    match name {
        TokenizerName::Pi => Some(&PiRule),
        _ => None,
    }
}

/// pi 1.6.0's `estimateTokens`, the `pi` tokenizer: UTF-16 code units, an image 4,800 of them
/// (`ESTIMATED_IMAGE_CHARS`), `ceil(units / 4)` per message. The pi host offers it as its own
/// estimate ([`crate::host::Host::estimator`]); what it counts of each message is the host's
/// ([`crate::host::View::pieces`]).
pub struct PiRule;

impl Estimator for PiRule {
    fn text(&self, text: &str) -> u64 {
        crate::js::utf16_len(text) as u64
    }

    fn image(&self) -> u64 {
        4_800
    }

    fn tokens(&self, units: u64) -> u64 {
        units.div_ceil(4)
    }
}

/// What the texts waiting in [`Misses`] may add up to before they are counted. The copies are
/// what a text borrowed for one call costs to keep; without a bound they were a copy of every
/// text of the session (the cold meter of a 100 MB line held 3.6× the file).
const PENDING_BYTES: usize = 8 << 20;

/// Collects the texts a cache lacks and counts them on every core into the cache, a batch of
/// under [`PENDING_BYTES`] at a time (for [`Tokenizer::prefetch`] and
/// [`Tokenizer::count_each`]); a text that long alone is counted at once, not copied.
struct Misses {
    tokenizer: Tokenizer,
    cache: &'static TokenCache,
    seen: std::collections::HashSet<cache::Key>,
    texts: Vec<(cache::Key, String)>,
    bytes: usize,
    /// [`PENDING_BYTES`] (smaller in tests).
    budget: usize,
}

impl Misses {
    /// Collects for `tokenizer`'s cache; `None` without one.
    fn new(tokenizer: Tokenizer) -> Option<Misses> {
        let cache = tokenizer.cache?;
        Some(Misses { tokenizer, cache, seen: Default::default(), texts: Vec::new(), bytes: 0, budget: PENDING_BYTES })
    }

    /// Adds a text the cache lacks, unless it was added already.
    fn add(&mut self, key: cache::Key, text: &str) {
        if text.len() >= self.budget {
            self.tokenizer.prefetch_texts(&[(key, text)]);
        } else if self.seen.insert(key) {
            self.texts.push((key, text.to_string()));
            self.bytes += text.len();
            if self.bytes >= self.budget {
                self.flush();
            }
        }
    }

    /// Counts the texts waiting into the cache.
    fn flush(&mut self) {
        if !self.texts.is_empty() {
            self.tokenizer.prefetch_texts(&std::mem::take(&mut self.texts));
        }
        self.seen.clear();
        self.bytes = 0;
    }
}

impl Pieces for Misses {
    fn text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        let key = cache::key(text);
        if !self.cache.contains(&key) {
            self.add(key, text);
        }
    }

    fn image(&mut self) {}
}

/// A tally through the cache that counts only what the cache holds, and collects the texts it
/// lacks (for [`Tokenizer::count_each`]): its total is right only when nothing `missed`.
struct Lookup<'c, 'm> {
    tally: Tally,
    cache: &'c TokenCache,
    misses: &'m mut Misses,
    missed: bool,
}

impl Pieces for Lookup<'_, '_> {
    fn text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        let key = cache::key(text);
        match self.cache.get(&key) {
            Some(n) => self.tally.tokens += n,
            None => {
                self.missed = true;
                self.misses.add(key, text);
            }
        }
    }

    fn image(&mut self) {
        self.tally.image();
    }

    fn end_message(&mut self) {
        Pieces::end_message(&mut self.tally);
    }
}

/// A running count: for one message, or for several when each is ended with `end_message`.
#[derive(Clone, Copy, Debug)]
pub struct Tally {
    tokenizer: Tokenizer,
    chars: u64,
    tokens: u64,
    done: u64,
}

impl Tally {
    /// Adds a piece of text.
    pub fn text(&mut self, text: &str) {
        match self.tokenizer.estimate {
            Some(estimate) => self.chars += estimate.text(text),
            None if text.is_empty() => {}
            None => self.tokens += self.tokenizer.bpe(text),
        }
    }

    /// Adds one image.
    pub fn image(&mut self) {
        match self.tokenizer.estimate {
            Some(estimate) => self.chars += estimate.image(),
            None => self.tokens += IMAGE_TOKENS,
        }
    }

    fn current(&self) -> u64 {
        let estimated = self.tokenizer.estimate.map_or(0, |estimate| estimate.tokens(self.chars));
        self.tokenizer.scaled(self.tokens + estimated)
    }

    /// Returns the count: the host's estimate per message (pi: `ceil(chars / 4)`), the BPE sum
    /// otherwise.
    pub fn total(&self) -> u64 {
        self.done + self.current()
    }
}

impl Pieces for Tally {
    fn text(&mut self, text: &str) {
        Tally::text(self, text)
    }

    fn image(&mut self) {
        Tally::image(self)
    }

    fn end_message(&mut self) {
        self.done += self.current();
        self.chars = 0;
        self.tokens = 0;
    }
}

/// Every piece of text a tokenizer counts in `view`, in order (images are not text): what a
/// raw tokenizer run must get through to count the context (the benchmark's limit).
pub fn context_texts(view: &View<'_, '_>) -> Vec<String> {
    struct Texts(Vec<String>);
    impl Pieces for Texts {
        fn text(&mut self, text: &str) {
            self.0.push(text.to_string());
        }
        fn image(&mut self) {}
    }
    let mut texts = Texts(Vec::new());
    for pos in 0..view.context.len() {
        view.pieces(pos, &mut texts);
    }
    texts.0
}

/// Counts what the model sees of context entry `pos` (the host's pieces of every message the
/// entry projects to, after edits). `pos` is its position in the context list.
pub fn entry_tokens(view: &View<'_, '_>, pos: usize, tok: &Tokenizer) -> u64 {
    let mut t = tok.tally();
    view.pieces(pos, &mut t);
    t.total()
}

/// Counts what the model would see of foldable entry `index` with `content` in place of its own.
pub fn tokens_with(view: &View<'_, '_>, index: usize, content: &crate::host::Content<'_>, tok: &Tokenizer) -> u64 {
    let mut t = tok.tally();
    view.pieces_with(index, content, &mut t);
    t.total()
}

/// Counts every entry of the context, in context order, in one pass over its pieces when the
/// cache holds them all (what it lacks tokenized on every core: [`Tokenizer::count_each`]). A
/// plan is given these counts rather than counting its positions again.
pub fn context_tokens(view: &View<'_, '_>, tok: &Tokenizer) -> Vec<u64> {
    tok.count_each(view.context.len(), |pos, sink| view.pieces(pos, sink))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pi_rounds_per_message_in_utf16_units() {
        let pi = Tokenizer::new(TokenizerName::Pi);
        let mut t = pi.tally();
        t.text("abc");
        t.text("de");
        assert_eq!(t.total(), 2); // ceil(5/4), not ceil(3/4)+ceil(2/4)
        assert_eq!(pi.count("😀"), 1); // 2 UTF-16 units
        let mut img = pi.tally();
        img.image();
        img.text("x");
        assert_eq!(img.total(), 1201);
    }

    #[test]
    fn bpe_counts_real_tokens() {
        let o = Tokenizer::new(TokenizerName::O200k);
        assert_eq!(o.count("hello world"), 2);
        assert_eq!(o.count(""), 0);
    }

    #[test]
    fn counts_come_from_the_cache_when_it_has_them() {
        let cache: &'static TokenCache = Box::leak(Box::new(TokenCache::in_memory(TokenizerName::O200k)));
        cache.insert(cache::key("hello world"), 99);
        let o = Tokenizer::new(TokenizerName::O200k).with_cache(cache);
        assert_eq!(o.count("hello world"), 99);
        assert_eq!(o.count("hello there"), 2);
        assert_eq!(cache.stats(), cache::CacheStats { hits: 1, added: 2, len: 2 });
        // A cache for another tokenizer is not used.
        let c = Tokenizer::new(TokenizerName::Cl100k).with_cache(cache);
        assert_eq!(c.count("hello world"), 2);
    }

    /// Claude's counts go through a cache of their own encoding, keyed by content hash like
    /// BPE counts; a cache of another encoding (OMP's vocabulary) is not used.
    #[test]
    fn claude_counts_are_cached_per_encoding() {
        let cache: &'static TokenCache = Box::leak(Box::new(TokenCache::in_memory(TokenizerName::ClaudeV3)));
        let c = Tokenizer::new(TokenizerName::ClaudeV3).with_cache(cache);
        assert_eq!(c.count("hello, world"), 3);
        assert_eq!(cache.get(&cache::key("hello, world")), Some(3));
        cache.insert(cache::key("cached"), 99);
        assert_eq!(c.count("cached"), 99);
        assert!(Tokenizer::new(TokenizerName::OmpV3).with_cache(cache).cache().is_none());
        // Counted on every core into the cache, as the meter prefetches.
        let texts = ["un", "deux trois", "\u{FFFD}"].map(|t| (cache::key(t), t));
        c.prefetch_texts(&texts);
        assert_eq!(cache.get(&texts[2].0), Some(1));
        assert_eq!(TokenizerName::ClaudeV5Sonnet.as_str().parse(), Ok(TokenizerName::ClaudeV5Sonnet));
    }

    #[test]
    fn calibrated_scales_per_message() {
        let cal = Tokenizer::calibrated(1.5);
        assert_eq!(cal.name, TokenizerName::Calibrated);
        let mut t = cal.tally();
        t.text("hello world"); // 2 o200k tokens
        t.image(); // 1,200
        assert_eq!(t.total(), 1803);
        Pieces::end_message(&mut t);
        t.text("hello world");
        assert_eq!(t.total(), 1806);
    }

    /// The cuts of a huge text give the count of the whole, on text full of the cases the
    /// patterns treat specially around line feeds (runs of blank lines, trailing spaces,
    /// punctuation before a line feed, contractions, digits, non-ASCII letters).
    #[test]
    fn counting_a_huge_text_in_parts_is_exact() {
        let rows = [
            "fn main() {\n",
            "    let x = 1;  \n",
            "\n\n",
            "It's done.\n",
            "  \n",
            "Ünïcode wörds\n",
            "12345 678\n",
            "a/b/c/\n",
            "x\r\n",
            "don't STOP'll\n",
            "\t\n",
            "}\n",
            "?!\n",
            "zzzzzzzzzz",
        ];
        let mut text = String::new();
        for i in 0..4000 {
            text.push_str(rows[i * 7 % rows.len()]);
            text.push_str(rows[i % rows.len()]);
        }
        for name in [TokenizerName::O200k, TokenizerName::Cl100k] {
            let whole = bpe::shared(name, None).0.count(&text);
            for parts in [2, 3, 7, 64] {
                let cuts = cuts(&text, parts);
                assert!(!cuts.is_empty());
                let mut sum = 0;
                let mut start = 0;
                for cut in cuts.into_iter().chain([text.len()]) {
                    sum += bpe::shared(name, None).0.count(&text[start..cut]);
                    start = cut;
                }
                assert_eq!(sum, whole, "{name} in {parts} parts");
            }
        }
        // One huge word has no cut; nor has a text whose only line feeds end it.
        assert!(cuts(&"a".repeat(10_000), 4).is_empty());
        assert!(cuts("abc\n", 4).is_empty());
        // Through the cache: a prefetched huge text counts as it does alone.
        let cache: &'static TokenCache = Box::leak(Box::new(TokenCache::in_memory(TokenizerName::O200k)));
        let big = text.repeat(1 + SPLIT_BYTES / text.len());
        let o = Tokenizer::new(TokenizerName::O200k).with_cache(cache);
        let mut misses = Misses::new(o).unwrap();
        misses.text(&big);
        assert_eq!(misses.texts.len(), 1);
        misses.flush();
        assert_eq!(cache.get(&cache::key(&big)), Some(bpe::shared(TokenizerName::O200k, None).0.count(&big)));
    }

    /// The texts a cache lacks are copied only up to [`PENDING_BYTES`] before they are counted,
    /// and a text that long is counted without a copy: the counts are the same either way.
    #[test]
    fn misses_wait_in_bounded_batches() {
        let cache: &'static TokenCache = Box::leak(Box::new(TokenCache::in_memory(TokenizerName::O200k)));
        let o = Tokenizer::new(TokenizerName::O200k).with_cache(cache);
        let mut misses = Misses { budget: 4096, ..Misses::new(o).unwrap() };
        let line = "cargo build: compiling shake v0.1 (plumbing)\n";
        let texts: Vec<String> = (0..40).map(|i| format!("{i}: {}", line.repeat(400 / line.len()))).collect();
        let huge = line.repeat(1 + misses.budget / line.len());
        let mut most = 0;
        for text in texts.iter().chain([&huge]) {
            misses.text(text);
            most = most.max(misses.bytes);
            assert!(misses.texts.iter().all(|(_, t)| t.len() < misses.budget), "the huge text is not copied");
        }
        assert!(most < misses.budget, "{most} bytes waited");
        misses.flush();
        let bpe = bpe::shared(TokenizerName::O200k, None).0;
        for text in texts.iter().chain([&huge]) {
            assert_eq!(cache.get(&cache::key(text)), Some(bpe.count(text)));
        }
    }

    #[test]
    fn tokenizer_names_round_trip() {
        for n in TokenizerName::ALL {
            assert_eq!(n.as_str().parse::<TokenizerName>(), Ok(n));
        }
        assert!("gpt".parse::<TokenizerName>().is_err());
    }
}

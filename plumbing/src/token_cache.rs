//! The token cache: BPE counts per (content hash, tokenizer), kept in the store folder so a second
//! count tokenizes only what is new.
//!
//! One file per tokenizer, `<store>/cache/tokens-<name>.bin`: a bincode 2 record (magic, version,
//! tokenizer, entries), written whole to a temporary file and renamed over the old one. A cache is
//! only ever an optimisation: a file that does not decode is ignored with a warning and rebuilt,
//! and two processes racing to save simply lose one run's additions.
//!
//! A command counts through a [`CachedTokenizer`]: the tokenizer with its cache opened, which
//! saves the cache when it goes out of scope (on every return path, errors included), so no
//! command has to remember to.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::host::Session;
use crate::tokens::bpe::{self, Bpe};
use crate::tokens::{Tokenizer, TokenizerName};
use crate::{Context, Result};

/// What a count is keyed by: the first 128 bits of blake3 over the counted text.
pub type Key = [u8; 16];

/// Returns the cache key of a piece of text.
pub fn key(text: &str) -> Key {
    let hash = blake3::hash(text.as_bytes());
    let mut k = [0; 16];
    k.copy_from_slice(&hash.as_bytes()[..16]);
    k
}

const MAGIC: [u8; 8] = *b"shaketok";
/// Bumped whenever what a count means changes (tokenizer version, what is counted).
const VERSION: u32 = 1;
/// The most counts kept; past it, the least recently used are dropped on save.
const MAX_ENTRIES: usize = 1 << 20;
/// Decoding never allocates more than this, whatever the file says.
const MAX_FILE_BYTES: usize = 64 << 20;

#[derive(bincode::Encode, bincode::Decode)]
struct CacheFile {
    magic: [u8; 8],
    version: u32,
    tokenizer: String,
    /// How many times the file was saved; an entry's `run` is the last save that used it.
    run: u32,
    entries: Vec<(Key, u32, u32)>,
}

/// Token counts for one tokenizer, shared by every count a command makes.
#[derive(Debug)]
pub struct TokenCache {
    tokenizer: TokenizerName,
    path: Option<PathBuf>,
    inner: Mutex<Inner>,
    /// Where the store keeps the tokenizer's BPE table (none for a cache in memory).
    table: Option<PathBuf>,
    /// What was wrong with the table, told when the cache is saved (which has the context).
    bpe_problem: Mutex<Option<String>>,
}

#[derive(Debug, Default)]
struct Inner {
    /// key → (tokens, last run that used it). Hashed by foldhash: std's SipHash of the 16-byte
    /// keys was 3% of a dry run of many small entries (one lookup per text).
    counts: HashMap<Key, (u32, u32), foldhash::fast::RandomState>,
    run: u32,
    added: usize,
    hits: usize,
}

/// What a cache did in this process: how many counts it answered and how many it learned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups answered from the cache.
    pub hits: usize,
    /// Counts computed and added since the last save.
    pub added: usize,
    /// Counts held.
    pub len: usize,
}

impl TokenCache {
    /// Returns an empty cache that is never saved (tests, `--no-cache`).
    pub fn in_memory(tokenizer: TokenizerName) -> TokenCache {
        TokenCache::blank(tokenizer)
    }

    /// Loads the cache for `tokenizer` from the store; a missing file gives an empty cache, a
    /// corrupt one a warning and an empty cache.
    pub fn open(ctx: &Context, tokenizer: TokenizerName) -> TokenCache {
        let path = cache_path(&ctx.store_dir, tokenizer);
        let mut inner = Inner::default();
        match std::fs::read(&path) {
            Ok(bytes) => match decode(&bytes, tokenizer) {
                Ok(Some(file)) => {
                    inner.run = file.run.wrapping_add(1);
                    inner.counts = file.entries.into_iter().map(|(k, n, run)| (k, (n, run))).collect();
                }
                // An older or newer layout: rebuilt silently, it is not damage.
                Ok(None) => {}
                Err(why) => {
                    ctx.warn(format_args!("{}: ignoring the token cache ({why}); rebuilding it", path.display()))
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => ctx.warn(format_args!("{}: cannot read the token cache ({e}); rebuilding it", path.display())),
        }
        TokenCache {
            path: Some(path),
            inner: Mutex::new(inner),
            table: Some(bpe::table_path(&ctx.store_dir, tokenizer)),
            ..TokenCache::blank(tokenizer)
        }
    }

    fn blank(tokenizer: TokenizerName) -> TokenCache {
        TokenCache { tokenizer, path: None, inner: Mutex::default(), table: None, bpe_problem: Mutex::default() }
    }

    /// Returns what counts the texts this cache lacks: the table the store keeps next to the
    /// cache (built and kept there on first use) or, for a cache in memory, one built for the
    /// process; either is made once per process ([`bpe::shared`]).
    pub fn bpe(&self) -> &'static Bpe {
        let (bpe, problem) = bpe::shared(self.tokenizer, self.table.as_deref());
        if problem.is_some() {
            *self.bpe_problem.lock().unwrap_or_else(|e| e.into_inner()) = problem;
        }
        bpe
    }

    /// The tokenizer whose counts this holds.
    pub fn tokenizer(&self) -> TokenizerName {
        self.tokenizer
    }

    /// Returns the cached count of the text with this key.
    pub fn get(&self, key: &Key) -> Option<u64> {
        let mut inner = self.lock();
        let run = inner.run;
        let hit = inner.counts.get_mut(key).map(|(n, last)| {
            *last = run;
            u64::from(*n)
        });
        if hit.is_some() {
            inner.hits += 1;
        }
        hit
    }

    /// Records a count.
    pub fn insert(&self, key: Key, tokens: u64) {
        let mut inner = self.lock();
        let run = inner.run;
        let n = u32::try_from(tokens).unwrap_or(u32::MAX);
        if inner.counts.insert(key, (n, run)).is_none() {
            inner.added += 1;
        }
    }

    /// Tells whether the text with this key is cached, without marking it used.
    pub fn contains(&self, key: &Key) -> bool {
        self.lock().counts.contains_key(key)
    }

    /// Returns what the cache did so far.
    pub fn stats(&self) -> CacheStats {
        let inner = self.lock();
        CacheStats { hits: inner.hits, added: inner.added, len: inner.counts.len() }
    }

    /// Writes the cache back if it learned anything (temporary file, then rename). Failing to
    /// save is a warning, never an error: the counts are recomputed next time.
    pub fn save(&self, ctx: &Context) {
        if let Some(problem) = self.bpe_problem.lock().unwrap_or_else(|e| e.into_inner()).take() {
            ctx.warn(format_args!("{problem}"));
        }
        let Some(path) = &self.path else { return };
        if let Err(e) = self.write(path) {
            ctx.warn(format_args!("{}: cannot save the token cache: {e}", path.display()));
        }
    }

    fn write(&self, path: &Path) -> std::io::Result<()> {
        let inner = self.lock();
        if inner.added == 0 {
            return Ok(());
        }
        let mut entries: Vec<(Key, u32, u32)> = inner.counts.iter().map(|(k, &(n, run))| (*k, n, run)).collect();
        if entries.len() > MAX_ENTRIES {
            // Keep the most recently used.
            entries.sort_unstable_by_key(|&(_, _, run)| std::cmp::Reverse(run));
            entries.truncate(MAX_ENTRIES);
        }
        let file = CacheFile {
            magic: MAGIC,
            version: VERSION,
            tokenizer: self.tokenizer.to_string(),
            run: inner.run,
            entries,
        };
        drop(inner);
        let bytes = bincode::encode_to_vec(&file, bincode::config::standard()).map_err(std::io::Error::other)?;
        crate::durable::write_cache(path, &bytes)?;
        self.lock().added = 0;
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave the map inconsistent (single inserts).
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A tokenizer counting through the store's cache, saved when this is dropped. It dereferences
/// to the [`Tokenizer`] (which is `Copy`: `*tok` where a function takes one by value).
#[derive(Debug)]
pub struct CachedTokenizer<'c> {
    tokenizer: Tokenizer,
    ctx: &'c Context,
}

impl<'c> CachedTokenizer<'c> {
    /// Wraps a tokenizer whose cache (if any) belongs to the store of `ctx`.
    pub fn new(ctx: &'c Context, tokenizer: Tokenizer) -> CachedTokenizer<'c> {
        CachedTokenizer { tokenizer, ctx }
    }

    /// Counts with `tokenizer` from now on (e.g. re-calibrated); it must share this one's cache,
    /// the one that is saved.
    pub fn set(&mut self, tokenizer: Tokenizer) {
        debug_assert!(tokenizer.cache().map(|c| c as *const _) == self.tokenizer.cache().map(|c| c as *const _));
        self.tokenizer = tokenizer;
    }

    /// Saves the cache now if it learnt something (a long-running command between readings);
    /// dropping saves too.
    pub fn save(&self) {
        if let Some(cache) = self.tokenizer.cache() {
            cache.save(self.ctx);
        }
    }
}

impl std::ops::Deref for CachedTokenizer<'_> {
    type Target = Tokenizer;

    fn deref(&self) -> &Tokenizer {
        &self.tokenizer
    }
}

impl Drop for CachedTokenizer<'_> {
    fn drop(&mut self) {
        self.save();
    }
}

/// Where the cache for `tokenizer` lives in a store.
pub fn cache_path(store_dir: &Path, tokenizer: TokenizerName) -> PathBuf {
    store_dir.join("cache").join(format!("tokens-{tokenizer}.bin"))
}

/// Decodes a cache file: `Ok(None)` for another version or tokenizer, `Err` for damage.
fn decode(bytes: &[u8], tokenizer: TokenizerName) -> Result<Option<CacheFile>, String> {
    if bytes.len() > MAX_FILE_BYTES {
        return Err(format!("{} bytes, more than a cache may hold", bytes.len()));
    }
    let config = bincode::config::standard().with_limit::<MAX_FILE_BYTES>();
    let (file, read): (CacheFile, usize) = bincode::decode_from_slice(bytes, config).map_err(|e| e.to_string())?;
    if file.magic != MAGIC {
        return Err("not a token cache".into());
    }
    if read != bytes.len() {
        return Err("trailing bytes".into());
    }
    Ok((file.version == VERSION && file.tokenizer == tokenizer.as_str()).then_some(file))
}

/// Returns the tokenizer a command counts with: BPE ones through the store's token cache,
/// `calibrated` with its ratio worked out for this session. The cache is saved when the returned
/// guard is dropped.
pub fn open_tokenizer<'c>(ctx: &'c Context, name: TokenizerName, session: &Session<'_>) -> Result<CachedTokenizer<'c>> {
    let mut tok = open_cached(ctx, name);
    if name == TokenizerName::Calibrated {
        tok.set(crate::calibration::calibrated_for(ctx, session, *tok)?);
    }
    Ok(tok)
}

/// Returns the tokenizer with its cache opened (BPE and calibrated), not yet calibrated; the
/// cache is saved when the guard is dropped. The cache lives as long as the process, so that a
/// `Tokenizer` stays `Copy`: open it once per process (a watching meter re-calibrates with
/// [`crate::calibration::calibrated_for`] and [`CachedTokenizer::set`], it does not reopen).
pub fn open_cached(ctx: &Context, name: TokenizerName) -> CachedTokenizer<'_> {
    let tok = Tokenizer::new(name);
    let tok = match tok.base() {
        TokenizerName::Pi => tok,
        base => tok.with_cache(Box::leak(Box::new(TokenCache::open(ctx, base)))),
    };
    CachedTokenizer::new(ctx, tok)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(dir: &Path) -> Context {
        Context {
            cwd: dir.to_path_buf(),
            agent_dir: dir.to_path_buf(),
            custom_session_dir: None,
            store_dir: dir.join("store"),
            color: false,
            host: None,
        }
    }

    #[test]
    fn saves_and_reloads() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(dir.path());
        let cache = TokenCache::open(&ctx, TokenizerName::O200k);
        cache.insert(key("hello"), 1);
        cache.save(&ctx);
        let again = TokenCache::open(&ctx, TokenizerName::O200k);
        assert_eq!(again.get(&key("hello")), Some(1));
        assert_eq!(again.get(&key("other")), None);
        assert_eq!(again.stats(), CacheStats { hits: 1, added: 0, len: 1 });
        // Another tokenizer's file is separate.
        assert_eq!(TokenCache::open(&ctx, TokenizerName::Cl100k).get(&key("hello")), None);
    }

    #[test]
    fn the_guard_saves_on_drop_even_on_an_early_return() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(dir.path());
        let count = |text: &str| -> Result<u64, ()> {
            let cache: &'static TokenCache = Box::leak(Box::new(TokenCache::open(&ctx, TokenizerName::O200k)));
            let tok = CachedTokenizer::new(&ctx, Tokenizer::new(TokenizerName::O200k).with_cache(cache));
            let n = tok.count(text);
            if n > 0 {
                return Err(());
            }
            Ok(n)
        };
        assert!(count("hello world").is_err());
        let again = TokenCache::open(&ctx, TokenizerName::O200k);
        assert_eq!(again.get(&key("hello world")), Some(2));
    }

    #[test]
    fn corrupt_file_is_ignored_and_rebuilt() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(dir.path());
        let path = cache_path(&ctx.store_dir, TokenizerName::O200k);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        for junk in [&b"garbage"[..], b"", &[0xff; 40]] {
            std::fs::write(&path, junk).unwrap();
            let cache = TokenCache::open(&ctx, TokenizerName::O200k);
            assert_eq!(cache.stats().len, 0);
            cache.insert(key("x"), 7);
            cache.save(&ctx);
            assert_eq!(TokenCache::open(&ctx, TokenizerName::O200k).get(&key("x")), Some(7));
        }
    }

    #[test]
    fn a_huge_length_prefix_does_not_allocate() {
        let file = CacheFile { magic: MAGIC, version: VERSION, tokenizer: "o200k".into(), run: 0, entries: vec![] };
        let mut bytes = bincode::encode_to_vec(&file, bincode::config::standard()).unwrap();
        // Claim 2^60 entries in the last varint (the empty vector's length).
        bytes.pop();
        bytes.extend_from_slice(&[253, 0, 0, 0, 0, 0, 0, 0, 16]);
        assert!(decode(&bytes, TokenizerName::O200k).is_err());
    }
}

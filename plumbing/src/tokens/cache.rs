//! The token cache: BPE counts per (content hash, tokenizer), kept in the store folder so a second
//! count tokenizes only what is new.
//!
//! One file per tokenizer, `<store>/cache/tokens-<name>.bin`: a header, one fixed-size record per
//! count, sorted by key, then a table of buckets ([`Saved`]), mapped and looked up in place, so
//! opening the cache costs nothing however many counts it holds (decoding 2²⁰ of them into a
//! map was most of a status-line turn's floor, and 3 MiB of every command's heap on 100,000
//! entries). The counts a run learns are kept beside it in memory and merged in on save: the
//! whole file is streamed to a temporary file and renamed over the old one, never written in
//! place. A cache is only ever an optimisation: a file that does not read is ignored with a
//! warning and rebuilt, and two processes racing to save simply lose one run's additions.
//!
//! A command counts through a [`CachedTokenizer`]: the tokenizer with its cache opened, which
//! saves the cache when it goes out of scope (on every return path, errors included), so no
//! command has to remember to.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::host::Session;
use crate::tokens::bpe::{self, Bpe};
use crate::tokens::calibration::CalibrationError;
use crate::tokens::{Tokenizer, TokenizerName};
use crate::Context;

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
/// Bumped whenever what a count means (tokenizer version, what is counted) or the layout changes.
/// Version 1 was a bincode record decoded whole into a map; version 2 had no bucket table;
/// version 3 no check word in its records.
const VERSION: u32 = 4;
/// Magic, version, the tokenizer's name (16 bytes, zero-padded), the run (integers u32 LE).
const HEADER: usize = 32;
/// After the table: the record count and the bucket bits (u32 LE), known once the records are
/// written (a save streams them, dropping any a cap or damage leaves out).
const TRAILER: usize = 8;
/// A record: the key, its count (u32 LE), the last run that used it (u32 LE), the count's check
/// word ([`check_word`], u32 LE).
const RECORD: usize = 28;
/// The most counts kept; past it, the least recently used are dropped on save.
const MAX_ENTRIES: usize = 1 << 20;
/// The most bucket bits a save writes (a bucket per one or two records at most).
const MAX_BITS: u32 = MAX_ENTRIES.trailing_zeros();

/// The counts of earlier runs: the cache file as saved, mapped (or, for a cache in memory, none).
///
/// The records are sorted by key, and the keys (blake3 hashes) are spread evenly, so the table
/// after them splits them by their first `bits` bits: `table[b]` is the first record of bucket
/// `b`, `table[2^bits]` the record count. A lookup reads its bucket's bounds and searches the one
/// or two records between (a binary search of them all took 17 probes, most of them cache
/// misses: a tenth of a warm dry run's CPU on 100,000 small entries).
struct Saved {
    bytes: Option<memmap2::Mmap>,
    /// The run that saved it.
    run: u32,
    bits: u32,
    /// Where the records end and the table starts.
    table_at: usize,
}

impl Saved {
    const NONE: Saved = Saved { bytes: None, run: 0, bits: 0, table_at: HEADER };

    /// Maps the cache file at `path`: `Ok(NONE)` when there is none or it is of another version
    /// or tokenizer, `Err` when it is damaged. Only the layout is checked, not the records'
    /// order: a damaged order can only make a lookup miss (a record found has the key looked
    /// for), and a save drops the records out of order.
    fn map(path: &Path, tokenizer: TokenizerName) -> Result<Saved, String> {
        let file = match std::fs::File::open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Saved::NONE),
            Err(e) => return Err(format!("cannot read it: {e}")),
        };
        // SAFETY: the cache is only ever replaced by a rename (`durable::write_cache_with`),
        // never written in place, so the mapping does not change under us.
        let bytes = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| format!("cannot map it: {e}"))?;
        let saved = Saved::read(bytes, tokenizer)?;
        #[cfg(unix)]
        if let Some(bytes) = &saved.bytes {
            // Lookups land anywhere in the file: no read-ahead around each.
            let _ = bytes.advise(memmap2::Advice::Random);
        }
        Ok(saved)
    }

    /// Checks a cache file's header and size ([`Saved::map`]).
    fn read(bytes: memmap2::Mmap, tokenizer: TokenizerName) -> Result<Saved, String> {
        let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        if bytes.len() < HEADER || bytes[..8] != MAGIC {
            return Err("not a token cache".into());
        }
        let name = bytes[12..28].split(|&b| b == 0).next();
        if word(8) != VERSION || name != Some(tokenizer.as_str().as_bytes()) {
            return Ok(Saved::NONE); // another layout or tokenizer: rebuilt, it is not damage
        }
        if bytes.len() < HEADER + TRAILER {
            return Err("torn".into());
        }
        let (records, bits) = (word(bytes.len() - 8) as usize, word(bytes.len() - 4));
        if records > MAX_ENTRIES || bits > MAX_BITS {
            return Err(format!("{records} records in {bits} bits of buckets, more than a cache holds"));
        }
        let table_at = HEADER + RECORD * records;
        let size = table_at + 4 * ((1 << bits) + 1) + TRAILER;
        if bytes.len() != size {
            return Err(format!("{} bytes where its trailer says {size}", bytes.len()));
        }
        Ok(Saved { run: word(28), bits, table_at, bytes: Some(bytes) })
    }

    /// The records, in the file's (key) order.
    fn records(&self) -> &[[u8; RECORD]] {
        self.bytes.as_deref().map_or(&[], |b| b[HEADER..self.table_at].as_chunks::<RECORD>().0)
    }

    /// The position of the record of `key`, if any. Whatever the table says, the search stays
    /// among the records; only a sorted file with a true table finds every key.
    fn find(&self, key: &Key) -> Option<usize> {
        let (records, bucket) = (self.records(), bucket(key, self.bits));
        let table = self.bytes.as_deref().map_or(&[][..], |b| b[self.table_at..b.len() - TRAILER].as_chunks::<4>().0);
        let first = |b: usize| table.get(b).map_or(0, |w| u32::from_le_bytes(*w) as usize).min(records.len());
        let (start, end) = (first(bucket), first(bucket + 1));
        records.get(start..end)?.binary_search_by(|r| r[..16].cmp(key)).ok().map(|at| start + at)
    }
}

/// The bucket of `key` among `2^bits`: its first `bits` bits.
fn bucket(key: &Key, bits: u32) -> usize {
    let head = u64::from_be_bytes(key[..8].try_into().expect("8 bytes"));
    head.checked_shr(64 - bits).unwrap_or(0) as usize
}

/// Writes a cache file for `tokenizer` saved by `run` to `out`: `records` in key order, at most
/// [`MAX_ENTRIES`], split into `2^bits` buckets; the table is made as they go by.
fn write_file(
    out: &mut dyn std::io::Write,
    tokenizer: TokenizerName,
    run: u32,
    bits: u32,
    records: impl Iterator<Item = Record>,
) -> std::io::Result<()> {
    out.write_all(&MAGIC)?;
    out.write_all(&VERSION.to_le_bytes())?;
    let mut label = [0u8; 16];
    label[..tokenizer.as_str().len()].copy_from_slice(tokenizer.as_str().as_bytes());
    out.write_all(&label)?;
    out.write_all(&run.to_le_bytes())?;
    let mut table: Vec<u32> = Vec::with_capacity((1 << bits) + 1);
    let mut written = 0u32;
    for (key, n, run) in records {
        table.resize(table.len().max(bucket(&key, bits) + 1), written);
        let mut record = [0u8; RECORD];
        record[..16].copy_from_slice(&key);
        record[16..20].copy_from_slice(&n.to_le_bytes());
        record[20..24].copy_from_slice(&run.to_le_bytes());
        record[24..].copy_from_slice(&check_word(&key, n).to_le_bytes());
        out.write_all(&record)?;
        written += 1;
    }
    table.resize((1 << bits) + 1, written);
    for word in table.into_iter().chain([written, bits]) {
        out.write_all(&word.to_le_bytes())?;
    }
    Ok(())
}

/// The bucket bits for about `records` records: a bucket per one or two.
fn bits_for(records: usize) -> u32 {
    records.min(MAX_ENTRIES).next_power_of_two().trailing_zeros().saturating_sub(1)
}

/// A record's count and run.
fn count_and_run(r: &[u8; RECORD]) -> (u32, u32) {
    let word = |at: usize| u32::from_le_bytes(r[at..at + 4].try_into().expect("4 bytes"));
    (word(16), word(20))
}

/// The check word of a count under its key: the count turned and mixed with the key, so a
/// flipped bit in the count or in the word never passes (a damaged count was printed as it
/// read, issue 28.9), without a hash per lookup. A damaged key only misses.
fn check_word(key: &Key, count: u32) -> u32 {
    let word = |at: usize| u32::from_le_bytes(key[at..at + 4].try_into().expect("4 bytes"));
    count.rotate_left(11) ^ word(0) ^ word(4).rotate_left(5)
}

/// Tells whether a record's count matches its check word.
fn sound(r: &[u8; RECORD]) -> bool {
    let key: Key = r[..16].try_into().expect("16 bytes");
    u32::from_le_bytes(r[24..28].try_into().expect("4 bytes")) == check_word(&key, count_and_run(r).0)
}

/// Token counts for one tokenizer, shared by every count a command makes (on every core).
pub struct TokenCache {
    tokenizer: TokenizerName,
    path: Option<PathBuf>,
    saved: Saved,
    /// One bit per saved record: used in this run (saved again with this run, as recent).
    used: Box<[AtomicU64]>,
    /// This run: the saved one's successor.
    run: u32,
    /// Counts learnt in this run (none of them saved ones). Hashed by foldhash: std's SipHash of
    /// the 16-byte keys was 3% of a dry run of many small entries (one lookup per text).
    fresh: Mutex<HashMap<Key, u32, foldhash::fast::RandomState>>,
    /// Counts learnt since the last save.
    unsaved: AtomicUsize,
    hits: AtomicUsize,
    /// Where the store keeps the tokenizer's BPE table (none for a cache in memory).
    table: Option<PathBuf>,
    /// What was wrong with the table, told when the cache is saved (which has the context).
    bpe_problem: Mutex<Option<String>>,
}

impl std::fmt::Debug for TokenCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenCache").field("tokenizer", &self.tokenizer).field("path", &self.path).finish()
    }
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
        TokenCache::of(tokenizer, Saved::NONE)
    }

    /// Opens the cache for `tokenizer` in the store; a missing file gives an empty cache, a
    /// corrupt one a warning and an empty cache.
    pub fn open(ctx: &Context, tokenizer: TokenizerName) -> TokenCache {
        let path = cache_path(&ctx.store_dir, tokenizer);
        let saved = Saved::map(&path, tokenizer).unwrap_or_else(|why| {
            ctx.warn(format_args!("{}: ignoring the token cache ({why}); rebuilding it", path.display()));
            Saved::NONE
        });
        TokenCache {
            path: Some(path),
            table: Some(bpe::table_path(&ctx.store_dir, tokenizer)),
            ..TokenCache::of(tokenizer, saved)
        }
    }

    fn of(tokenizer: TokenizerName, saved: Saved) -> TokenCache {
        TokenCache {
            tokenizer,
            path: None,
            used: (0..saved.records().len().div_ceil(64)).map(|_| AtomicU64::new(0)).collect(),
            run: saved.run.wrapping_add(1),
            saved,
            fresh: Mutex::default(),
            unsaved: AtomicUsize::new(0),
            hits: AtomicUsize::new(0),
            table: None,
            bpe_problem: Mutex::default(),
        }
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
        // A count that fails its check is a miss: counted again, and left out by the next save.
        let hit = match self.saved.find(key).filter(|&at| sound(&self.saved.records()[at])) {
            Some(at) => {
                self.used[at / 64].fetch_or(1 << (at % 64), Ordering::Relaxed);
                Some(count_and_run(&self.saved.records()[at]).0)
            }
            None => self.fresh().get(key).copied(),
        };
        if hit.is_some() {
            self.hits.fetch_add(1, Ordering::Relaxed);
        }
        hit.map(u64::from)
    }

    /// Records a count.
    pub fn insert(&self, key: Key, tokens: u64) {
        if self.saved.find(&key).is_some_and(|at| sound(&self.saved.records()[at])) {
            return; // a count is a function of the text: the saved one is this one
        }
        let n = u32::try_from(tokens).unwrap_or(u32::MAX);
        if self.fresh().insert(key, n).is_none() {
            self.unsaved.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Tells whether the text with this key is cached, without marking it used.
    pub fn contains(&self, key: &Key) -> bool {
        self.saved.find(key).is_some_and(|at| sound(&self.saved.records()[at])) || self.fresh().contains_key(key)
    }

    /// Returns what the cache did so far.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            added: self.unsaved.load(Ordering::Relaxed),
            len: self.saved.records().len() + self.fresh().len(),
        }
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
        let fresh = self.fresh();
        if self.unsaved.load(Ordering::Relaxed) == 0 {
            return Ok(());
        }
        let mut learnt: Vec<(Key, u32)> = fresh.iter().map(|(k, &n)| (*k, n)).collect();
        learnt.sort_unstable_by_key(|&(k, _)| k);
        let used = |at: usize| self.used[at / 64].load(Ordering::Relaxed) & (1 << (at % 64)) != 0;
        let all = || merged(self.saved.records(), &used, &learnt, self.run);
        let bound = self.saved.records().len() + learnt.len();
        let mut keep = match bound {
            n if n <= MAX_ENTRIES => Keep::ALL,
            _ => Keep::of(all().map(|(_, _, run)| run), MAX_ENTRIES),
        };
        let kept = all().filter(|&(_, _, run)| keep.keeps(run));
        crate::durable::write_cache_with(path, |out| write_file(out, self.tokenizer, self.run, bits_for(bound), kept))?;
        self.unsaved.store(0, Ordering::Relaxed);
        Ok(())
    }

    fn fresh(&self) -> std::sync::MutexGuard<'_, HashMap<Key, u32, foldhash::fast::RandomState>> {
        // A panic while holding the lock cannot leave the map inconsistent (single inserts).
        self.fresh.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A record as a save writes it: key, count, last run that used it.
type Record = (Key, u32, u32);

/// The records a save writes, in key order, before the cap ([`Keep`]): the saved ones (those
/// `used` in this run renewed to `run`) and those `learnt` (sorted by key, with `run`). A saved
/// record out of order, or a learnt one beside a saved one of the same key, is left out: only
/// damage makes either, and the file written is sorted and each key in it once.
fn merged<'m>(
    saved: &'m [[u8; RECORD]],
    used: &'m dyn Fn(usize) -> bool,
    learnt: &'m [(Key, u32)],
    run: u32,
) -> impl Iterator<Item = Record> + 'm {
    let mut last: Option<Key> = None;
    let mut saved = saved
        .iter()
        .enumerate()
        .filter_map(move |(at, r)| {
            let key: Key = r[..16].try_into().expect("16 bytes");
            if last.is_some_and(|l| key <= l) || !sound(r) {
                return None;
            }
            last = Some(key);
            let (n, old) = count_and_run(r);
            Some((key, n, if used(at) { run } else { old }))
        })
        .peekable();
    let mut learnt = learnt.iter().map(move |&(key, n)| (key, n, run)).peekable();
    std::iter::from_fn(move || match (saved.peek(), learnt.peek()) {
        (Some(a), Some(b)) if a.0 == b.0 => {
            learnt.next();
            saved.next()
        }
        (Some(a), Some(b)) if a.0 > b.0 => learnt.next(),
        (Some(_), _) => saved.next(),
        (None, _) => learnt.next(),
    })
}

/// Which records a save keeps: all up to the cap, past it the most recently used (of those last
/// used in the oldest run kept, the first in key order).
struct Keep {
    /// The oldest run kept.
    oldest: u32,
    /// How many more records of run `oldest` fit.
    room: usize,
}

impl Keep {
    /// Every record.
    const ALL: Keep = Keep { oldest: 0, room: usize::MAX };

    /// The rule for records of these runs under `cap`.
    fn of(runs: impl Iterator<Item = u32>, cap: usize) -> Keep {
        let mut runs: Vec<u32> = runs.collect();
        if runs.len() <= cap {
            return Keep::ALL;
        }
        let (_, &mut oldest, _) = runs.select_nth_unstable_by(cap - 1, |a, b| b.cmp(a));
        let newer = runs.iter().filter(|&&r| r > oldest).count();
        Keep { oldest, room: cap - newer }
    }

    /// Tells whether the next record, last used in `run`, is kept.
    fn keeps(&mut self, run: u32) -> bool {
        match run.cmp(&self.oldest) {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Equal if self.room > 0 => {
                self.room -= 1;
                true
            }
            _ => false,
        }
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

/// Checks the cache file of `tokenizer` in a store (`fsck`): `Err` saying what is damaged (its
/// layout, or how many counts fail their check: those are counted again and the next save
/// leaves them out).
pub fn check(store_dir: &Path, tokenizer: TokenizerName) -> Result<(), String> {
    let saved = Saved::map(&cache_path(store_dir, tokenizer), tokenizer)?;
    match saved.records().iter().filter(|r| !sound(r)).count() {
        0 => Ok(()),
        n => Err(format!(
            "{n} count{} fail their check (counted again, dropped by the next save)",
            if n == 1 { "" } else { "s" }
        )),
    }
}

/// Where the cache for `tokenizer` lives in a store.
pub fn cache_path(store_dir: &Path, tokenizer: TokenizerName) -> PathBuf {
    store_dir.join("cache").join(format!("tokens-{tokenizer}.bin"))
}

/// Returns the tokenizer a command counts with at `leaf`: the one chosen, else the session's own
/// ([`crate::tokens::default_for`], for the model `ctx` chooses); real ones through the store's
/// token cache, `calibrated` with its ratio worked out for this session. The cache is saved when
/// the returned guard is dropped.
pub fn open_tokenizer<'c>(
    ctx: &'c Context,
    choice: Option<TokenizerName>,
    session: &Session<'_>,
    leaf: Option<usize>,
) -> Result<CachedTokenizer<'c>, CalibrationError> {
    let name = crate::tokens::resolve(choice, session, leaf, ctx.model.as_deref());
    warn_foreign_estimate(ctx, name, session);
    let mut tok = open_cached(ctx, name);
    if name == TokenizerName::Calibrated {
        tok.set(crate::tokens::calibration::calibrated_for(ctx, session, *tok)?);
    }
    Ok(tok)
}

/// Says when `--tokenizer pi` counts a session whose host has no estimate of its own: the figure
/// is pi's rule (what was named, and a count without tables, as benchmarks and status lines use
/// it), not what that host counts, and it was given silently (issue 34.2).
pub fn warn_foreign_estimate(ctx: &Context, name: TokenizerName, session: &Session<'_>) {
    if name == TokenizerName::Pi && session.host().estimator().is_none() {
        ctx.warn(format_args!(
            "{}: --tokenizer pi counts pi's own estimate (ceil(UTF-16 chars / 4) per message), not {}'s: {} has no estimate of its own",
            session.file.display(),
            session.kind.title(),
            session.kind.title()
        ));
    }
}

/// Returns the tokenizer with its cache opened (BPE and calibrated), not yet calibrated; the
/// cache is saved when the guard is dropped. The cache lives as long as the process, so that a
/// `Tokenizer` stays `Copy`, and is opened once per store and tokenizer ([`OPENED`]): a second
/// call counts through the same one (a watching meter re-calibrates with
/// [`crate::tokens::calibration::calibrated_for`] and [`CachedTokenizer::set`], it does not reopen).
pub fn open_cached(ctx: &Context, name: TokenizerName) -> CachedTokenizer<'_> {
    let tok = Tokenizer::new(name);
    let tok = match tok.base() {
        TokenizerName::Pi => tok,
        base => tok.with_cache(opened(ctx, base)),
    };
    CachedTokenizer::new(ctx, tok)
}

/// The caches this process opened, by store folder and tokenizer. A `Tokenizer` is `Copy` and
/// holds its cache as `&'static` (every count, on every thread, goes through it), so a cache is
/// kept until the process ends; kept here, it is made once per store and tokenizer, not once per
/// [`open_cached`] (`diff`'s two sides, `tokens`' several readings, a test process's commands).
static OPENED: Mutex<Vec<(PathBuf, TokenizerName, &'static TokenCache)>> = Mutex::new(Vec::new());

/// The cache of `base` in the store of `ctx`, opened on the first call of the process.
fn opened(ctx: &Context, base: TokenizerName) -> &'static TokenCache {
    let mut all = OPENED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(&(_, _, cache)) = all.iter().find(|(dir, name, _)| *dir == ctx.store_dir && *name == base) {
        return cache;
    }
    let cache: &'static TokenCache = Box::leak(Box::new(TokenCache::open(ctx, base)));
    all.push((ctx.store_dir.clone(), base, cache));
    cache
}

/// The tokenizers a command that reads many sessions counts with (`meter --serve`, `--watch`),
/// each opened with [`open_cached`] on its first use and kept: which one a session needs is known
/// only once it is read ([`crate::tokens::default_for`]). Every cache is saved when this is
/// dropped.
pub struct Caches<'c> {
    ctx: &'c Context,
    open: std::cell::RefCell<Vec<CachedTokenizer<'c>>>,
}

impl<'c> Caches<'c> {
    /// None opened yet.
    pub fn new(ctx: &'c Context) -> Caches<'c> {
        Caches { ctx, open: Default::default() }
    }

    /// `name` counting through its cache (opened now if it was not).
    pub fn get(&self, name: TokenizerName) -> Tokenizer {
        let mut open = self.open.borrow_mut();
        match open.iter().find(|t| t.name == name) {
            Some(t) => **t,
            None => {
                let t = open_cached(self.ctx, name);
                let tok = *t;
                open.push(t);
                tok
            }
        }
    }

    /// Saves every cache that learnt something (between readings; dropping saves too).
    pub fn save(&self) {
        self.open.borrow().iter().for_each(CachedTokenizer::save);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(dir: &Path) -> Context {
        Context {
            cwd: dir.to_path_buf(),
            home: dir.to_path_buf(),
            agent_dir: dir.to_path_buf(),
            custom_session_dir: None,
            store_dir: dir.join("store"),
            color: false,
            host: None,
            model: None,
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

    /// A count is cached per (text, encoding): each Claude family (and OMP's vocabulary of it)
    /// keeps its own file, named in its header, so one family's count is never another's, and
    /// the longest name (`claude-v5-sonnet`, the header's 16 bytes exactly) reloads as well.
    #[test]
    fn every_encoding_caches_apart() {
        use TokenizerName::*;
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(dir.path());
        let names = [O200k, Cl100k, ClaudeV3, ClaudeV47, ClaudeV5, ClaudeV5Sonnet, OmpV3, OmpV47, OmpV5, OmpV5Sonnet];
        for (n, &name) in names.iter().enumerate() {
            let cache = TokenCache::open(&ctx, name);
            cache.insert(key("same text"), n as u64 + 1);
            cache.save(&ctx);
        }
        for (n, &name) in names.iter().enumerate() {
            assert_eq!(TokenCache::open(&ctx, name).get(&key("same text")), Some(n as u64 + 1), "{name}");
            let file = std::fs::read(cache_path(&ctx.store_dir, name)).unwrap();
            assert_eq!(file[12..28].split(|&b| b == 0).next(), Some(name.as_str().as_bytes()), "{name}");
        }
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

    /// A cache is opened (and kept for the process) once per store and tokenizer: a command
    /// that opens the same one twice (`diff`'s two sides) counts through one, and what one
    /// tokenizer learnt the other finds; another store's is its own.
    #[test]
    fn a_cache_is_opened_once_per_store_and_tokenizer() {
        let (dir, other) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (ctx, other) = (ctx(dir.path()), ctx(other.path()));
        let (a, b) = (open_cached(&ctx, TokenizerName::O200k), open_cached(&ctx, TokenizerName::O200k));
        let same =
            |x: &CachedTokenizer<'_>, y: &CachedTokenizer<'_>| std::ptr::eq(x.cache().unwrap(), y.cache().unwrap());
        assert!(same(&a, &b));
        a.count("shared words");
        assert_eq!(b.cache().unwrap().get(&key("shared words")), Some(2));
        assert!(!same(&a, &open_cached(&other, TokenizerName::O200k)));
        assert!(!same(&a, &open_cached(&ctx, TokenizerName::Cl100k)));
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

    /// The bytes of a cache file for o200k of layout `version` saved by `run` with these records.
    fn file(version: u32, run: u32, records: &[(Key, u32, u32)]) -> Vec<u8> {
        let mut bytes = Vec::new();
        write_file(&mut bytes, TokenizerName::O200k, run, bits_for(records.len()), records.iter().copied()).unwrap();
        bytes[8..12].copy_from_slice(&version.to_le_bytes());
        bytes
    }

    /// Records as a file holds them.
    fn file_records(records: &[(Key, u32, u32)]) -> Vec<[u8; RECORD]> {
        let bytes = file(VERSION, 0, records);
        bytes[HEADER..HEADER + RECORD * records.len()].as_chunks::<RECORD>().0.to_vec()
    }

    /// A store whose o200k cache file holds `bytes`: its folder, context and the file's path.
    fn store_with(bytes: &[u8]) -> (tempfile::TempDir, Context, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(dir.path());
        let path = cache_path(&ctx.store_dir, TokenizerName::O200k);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
        (dir, ctx, path)
    }

    /// Three keys in order.
    const A: Key = [1; 16];
    const B: Key = [5; 16];
    const C: Key = [9; 16];

    /// Every one-bit flip in a record's count or check word: the count reads as a miss (never as
    /// another number), `check` names it, and the next save leaves it out.
    #[test]
    fn a_flipped_count_is_a_miss_never_another_number() {
        let good = file(VERSION, 1, &[(A, 1234, 1), (B, 99, 1)]);
        for bit in (HEADER + 16) * 8..(HEADER + 20) * 8 {
            for bit in [bit, bit + 64] {
                let mut bad = good.clone();
                bad[bit / 8] ^= 1 << (bit % 8);
                let (_dir, ctx, _) = store_with(&bad);
                let cache = TokenCache::open(&ctx, TokenizerName::O200k);
                assert_eq!(cache.get(&A), None, "bit {bit}");
                assert_eq!(cache.get(&B), Some(99));
                assert!(check(&ctx.store_dir, TokenizerName::O200k).is_err(), "bit {bit}");
                cache.insert(A, 1234);
                cache.save(&ctx);
                assert_eq!(TokenCache::open(&ctx, TokenizerName::O200k).get(&A), Some(1234), "bit {bit}");
                assert!(check(&ctx.store_dir, TokenizerName::O200k).is_ok());
            }
        }
    }

    #[test]
    fn the_file_is_sorted_records_and_a_used_count_is_renewed() {
        let (a, b, c) = (A, B, C);
        let (_dir, ctx, path) = store_with(&file(VERSION, 7, &[(a, 10, 3), (c, 30, 7)]));
        let cache = TokenCache::open(&ctx, TokenizerName::O200k);
        assert_eq!((cache.get(&a), cache.get(&b), cache.contains(&c)), (Some(10), None, true));
        cache.insert(b, 20);
        cache.insert(c, 99); // saved already: a count is a function of its text
        assert_eq!(cache.stats(), CacheStats { hits: 1, added: 1, len: 3 });
        cache.save(&ctx);
        // `a` was used by run 8, `c` only looked at; `b` is new: in key order.
        assert_eq!(std::fs::read(&path).unwrap(), file(VERSION, 8, &[(a, 10, 8), (b, 20, 8), (c, 30, 7)]));
        // Nothing learnt: nothing written.
        let again = TokenCache::open(&ctx, TokenizerName::O200k);
        assert_eq!(again.get(&b), Some(20));
        std::fs::remove_file(&path).unwrap();
        again.save(&ctx);
        assert!(!path.exists());
    }

    #[test]
    fn every_saved_key_is_found_and_no_other() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens-o200k.bin");
        for n in [0, 1, 2, 9, 10, 1000, 20_000] {
            let mut keys: Vec<Key> = (0..n).map(|i: u32| key(&i.to_string())).collect();
            keys.sort_unstable();
            let records: Vec<_> = keys.iter().enumerate().map(|(i, k)| (*k, i as u32, 1)).collect();
            std::fs::write(&path, file(VERSION, 1, &records)).unwrap();
            let saved = Saved::map(&path, TokenizerName::O200k).unwrap();
            for (i, k) in keys.iter().enumerate() {
                assert_eq!(saved.find(k), Some(i), "{n} keys");
            }
            for i in n..n + 1000 {
                assert_eq!(saved.find(&key(&i.to_string())), None);
            }
            assert_eq!(saved.find(&[0; 16]), None);
            assert_eq!(saved.find(&[0xff; 16]), None);
        }
    }

    #[test]
    fn damage_is_refused_and_another_version_is_rebuilt_silently() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens-o200k.bin");
        let one = file(VERSION, 1, &[([1; 16], 1, 1)]);
        let read = |bytes: &[u8]| {
            std::fs::write(&path, bytes).unwrap();
            Saved::map(&path, TokenizerName::O200k).map(|s| s.records().len())
        };
        assert_eq!(read(&one), Ok(1));
        assert!(read(&one[..one.len() - 1]).is_err(), "a torn record");
        assert!(read(&[one.as_slice(), b"x"].concat()).is_err(), "trailing bytes");
        assert!(read(&one[..HEADER - 1]).is_err(), "a torn header");
        assert!(read(b"shaketop").is_err(), "another magic");
        assert_eq!(read(&file(1, 1, &[])), Ok(0), "version 1 (bincode)");
        assert_eq!(Saved::map(&path, TokenizerName::Cl100k).map(|s| s.records().len()), Ok(0), "another tokenizer");
    }

    #[test]
    fn a_table_that_lies_only_misses() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens-o200k.bin");
        let keys: Vec<Key> = (0..40u32).map(|i| key(&i.to_string())).collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        let records: Vec<_> = sorted.iter().map(|k| (*k, 1, 1)).collect();
        let good = file(VERSION, 1, &records);
        let table = HEADER + RECORD * 40..HEADER + RECORD * 40 + 4 * 33; // 40 records: 2^5 buckets
        for lie in [[0xff; 4], [0; 4], 7u32.to_le_bytes()] {
            for at in table.clone().step_by(4) {
                let mut bytes = good.clone();
                bytes[at..at + 4].copy_from_slice(&lie);
                std::fs::write(&path, &bytes).unwrap();
                let saved = Saved::map(&path, TokenizerName::O200k).unwrap();
                for k in &keys {
                    assert!(saved.find(k).is_none_or(|i| sorted[i] == *k));
                }
            }
        }
        let mut bytes = good.clone();
        let at = bytes.len() - 4;
        bytes[at..].copy_from_slice(&40u32.to_le_bytes());
        std::fs::write(&path, &bytes).unwrap();
        assert!(Saved::map(&path, TokenizerName::O200k).is_err(), "2^40 buckets");
    }

    #[test]
    fn records_out_of_order_are_dropped_on_save() {
        let (a, b, c) = (A, B, C);
        let (_dir, ctx, path) = store_with(&file(VERSION, 2, &[(c, 30, 2), (a, 10, 2), (c, 31, 2)]));
        let cache = TokenCache::open(&ctx, TokenizerName::O200k);
        cache.insert(b, 20);
        cache.save(&ctx);
        let saved = Saved::map(&path, TokenizerName::O200k).unwrap();
        assert_eq!(saved.records(), file_records(&[(b, 20, 3), (c, 30, 2)]));
    }

    #[test]
    fn past_the_cap_the_least_recently_used_go() {
        let runs = [4, 2, 9, 2, 2, 7];
        let kept = |cap| {
            let mut keep = Keep::of(runs.into_iter(), cap);
            runs.iter().map(|&r| keep.keeps(r)).collect::<Vec<_>>()
        };
        assert_eq!(kept(6), [true; 6]);
        assert_eq!(kept(3), [true, false, true, false, false, true]);
        // Of run 2, the first in key order fit.
        assert_eq!(kept(4), [true, true, true, false, false, true]);
        assert_eq!(kept(1), [false, false, true, false, false, false]);
    }
}

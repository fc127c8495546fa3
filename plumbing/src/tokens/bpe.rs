//! BPE counting for o200k and cl100k without building tiktoken's tables in every process.
//!
//! tiktoken-rs builds, on each start, a hash map of every token's bytes, a decoder and a sorted
//! copy of every token (~150 ms for o200k), though a count needs the ranks alone. Here the ranks
//! are a [`Table`]: built once from tiktoken-rs's own tables, written to the store
//! (`<store>/cache/ranks-<name>.bin`) and mapped by every later process, ready to look up.
//!
//! A count is tiktoken's `count_ordinary`, exactly: the tokenizer's pattern splits the text into
//! pieces (o200k's on ASCII text by hand, [`super::o200k_ascii`]); a piece that is a token counts one; any other starts as its bytes and has its adjacent
//! pair of lowest rank joined (the leftmost among equals) until no adjacent pair is a token.
//! `tests` compares count for count with tiktoken-rs on text made to reach every rule.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use fancy_regex::Regex;

use super::TokenizerName;

/// Returns `name`'s counter for this process, made on first use: from the table kept at
/// `table` ([`Bpe::open`]), or built in memory when there is none. Later calls get the same
/// counter whatever they pass (a tokenizer's table is the same in every store), so a process
/// that counts through several stores, or through one it cannot write, builds it once. The text
/// is what was wrong with the kept table, told to the first caller only.
pub fn shared(name: TokenizerName, table: Option<&Path>) -> (&'static Bpe, Option<String>) {
    static O200K: OnceLock<Bpe> = OnceLock::new();
    static CL100K: OnceLock<Bpe> = OnceLock::new();
    let cell = if name == TokenizerName::Cl100k { &CL100K } else { &O200K };
    let mut problem = None;
    let bpe = cell.get_or_init(|| match table {
        Some(path) => {
            let (bpe, why) = Bpe::open(name, path);
            problem = why;
            bpe
        }
        None => Bpe::build(name),
    });
    (bpe, problem)
}

/// Checks the table a store keeps for `name`, layout and checksum (for `shake fsck`): `Ok(false)`
/// when there is none (it is made on first use), the damage when it is damaged.
pub fn check(store_dir: &Path, name: TokenizerName) -> Result<bool, TableError> {
    let path = table_path(store_dir, name);
    let Some(table) = Table::map(&path, name)? else { return Ok(false) };
    if blake3::hash(&table.bytes[HEADER..]).as_bytes()[..] != table.bytes[40..HEADER] {
        return Err(TableError::Damaged("checksum mismatch".into()));
    }
    Ok(true)
}

/// Why a store's BPE table cannot be used. The text is the reason alone: the callers name the
/// file in their own sentence (`<path>: ignoring the BPE table (<reason>)`).
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    /// The system refused to open or map it.
    #[error("{source}")]
    File {
        /// The table's file.
        path: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
    /// Its bytes are not a whole table for the tokenizer: what is wrong.
    #[error("{0}")]
    Damaged(String),
}

/// Where a store keeps `name`'s table, next to its token cache.
pub fn table_path(store_dir: &Path, name: TokenizerName) -> PathBuf {
    store_dir.join("cache").join(format!("ranks-{name}.bin"))
}

/// cl100k_base's pattern, as tiktoken-rs's `cl100k_base` passes it (it exports only o200k's).
const CL100K_PATTERN: &str = concat!(
    r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+",
    r"|\s++$|\s*[\r\n]|\s+(?!\S)|\s"
);

/// A rank no pair has: the pair is not a token.
const NONE: u32 = u32::MAX;

/// Pieces at least this long are joined with a heap (n log n), shorter ones by scanning the
/// pairs (quicker for the few bytes most pieces have); tiktoken draws the line at the same place.
const LONG_PIECE: usize = 100;

/// A tokenizer's pattern and ranks: what counting BPE tokens needs, and nothing else.
pub struct Bpe {
    name: TokenizerName,
    table: Table,
    /// Compiled on the first text the pattern is needed for: o200k splits ASCII text by hand.
    pattern: OnceLock<Regex>,
}

impl std::fmt::Debug for Bpe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bpe").field("tokens", &self.table.ranks).finish_non_exhaustive()
    }
}

impl Bpe {
    /// Returns `name`'s counter with its table built in memory from tiktoken-rs (~0.2 s).
    pub fn build(name: TokenizerName) -> Bpe {
        Bpe::with(name, Table::build(name))
    }

    /// Returns `name`'s counter with the table kept at `path`: mapped when it is there and whole,
    /// built and written there when not. The text says what was wrong, if anything was (a
    /// damaged table, one that could not be written); the counter works either way.
    pub fn open(name: TokenizerName, path: &Path) -> (Bpe, Option<String>) {
        let mut problem = None;
        match Table::map(path, name) {
            Ok(Some(table)) => return (Bpe::with(name, table), None),
            Ok(None) => {}
            Err(why) => problem = Some(format!("{}: ignoring the BPE table ({why}); rebuilding it", path.display())),
        }
        let table = Table::build(name);
        if let Err(e) = crate::durable::write_cache(path, &table.bytes) {
            problem.get_or_insert(format!("{}: cannot save the BPE table: {e}", path.display()));
        }
        (Bpe::with(name, table), problem)
    }

    fn with(name: TokenizerName, table: Table) -> Bpe {
        Bpe { name, table, pattern: OnceLock::new() }
    }

    fn pattern(&self) -> &Regex {
        self.pattern.get_or_init(|| {
            let pattern = match self.name {
                TokenizerName::Cl100k => CL100K_PATTERN,
                _ => tiktoken_rs::O200K_BASE_PAT_STR,
            };
            // Both patterns are constants that tiktoken-rs compiles with the same crate.
            Regex::new(pattern).expect("tiktoken's pattern compiles")
        })
    }

    /// Counts the tokens of `text`: tiktoken's `count_ordinary(text)`.
    pub fn count(&self, text: &str) -> u64 {
        self.count_with(|| self.pattern(), text)
    }

    /// Returns a counter for one thread: threads sharing one pattern contend for its search
    /// state (counting many small texts on two cores took twice the CPU), so each gets its own.
    pub fn for_thread(&self) -> Counter<'_> {
        Counter { bpe: self, pattern: OnceLock::new() }
    }

    fn count_with<'p>(&self, pattern: impl FnOnce() -> &'p Regex, text: &str) -> u64 {
        let mut scratch = Scratch::default();
        if self.name == TokenizerName::O200k && text.is_ascii() {
            let mut tokens = 0;
            super::o200k_ascii::split(text.as_bytes(), |piece| tokens += self.piece(piece, &mut scratch));
            return tokens as u64;
        }
        let mut tokens = 0;
        let mut done = 0;
        for found in pattern().find_iter(text) {
            match found {
                Ok(piece) => {
                    tokens += self.piece(piece.as_str().as_bytes(), &mut scratch);
                    done = piece.end();
                }
                // Only a backtracking limit can stop the pattern (tiktoken-rs panics there): the
                // rest is then counted as one piece, so a count is always given.
                Err(_) => {
                    tokens += self.piece(&text.as_bytes()[done..], &mut scratch);
                    break;
                }
            }
        }
        tokens as u64
    }

    /// Counts the tokens of one piece of the pattern's split.
    fn piece(&self, piece: &[u8], scratch: &mut Scratch) -> usize {
        if piece.len() <= 1 {
            piece.len()
        } else if self.table.rank(piece).is_some() {
            1
        } else if piece.len() < LONG_PIECE {
            self.join_short(piece, &mut scratch.bounds)
        } else {
            self.join_long(piece, scratch)
        }
    }

    /// Joins the pairs of a short piece by scanning for the lowest rank each round; returns how
    /// many tokens are left. `bounds[i]` is where token `i` starts and the rank of it joined
    /// with token `i + 1` (the last bound is the piece's end).
    fn join_short(&self, piece: &[u8], bounds: &mut Vec<(usize, u32)>) -> usize {
        bounds.clear();
        bounds.extend((0..piece.len()).map(|i| (i, self.table.pair(piece, i, i + 2))));
        bounds.push((piece.len(), NONE));
        loop {
            let tokens = bounds.len() - 1;
            let mut lowest = (NONE, 0);
            for (i, &(_, rank)) in bounds[..tokens].iter().enumerate() {
                if rank < lowest.0 {
                    lowest = (rank, i);
                }
            }
            let (rank, i) = lowest;
            if rank == NONE {
                return tokens;
            }
            // Token i takes in token i + 1: its own pair now reaches one token further, and so
            // does the pair of the token before it.
            bounds.remove(i + 1);
            let end = |j: usize| bounds.get(j).map_or(usize::MAX, |b| b.0);
            let (joined, before) = (end(i + 2), end(i + 1));
            bounds[i].1 = self.table.pair(piece, bounds[i].0, joined);
            if i > 0 {
                bounds[i - 1].1 = self.table.pair(piece, bounds[i - 1].0, before);
            }
        }
    }

    /// Joins the pairs of a long piece in rank order with a heap of candidate pairs; a candidate
    /// whose tokens changed since it was pushed is skipped when it comes off. Returns how many
    /// tokens are left.
    fn join_long(&self, piece: &[u8], scratch: &mut Scratch) -> usize {
        use std::cmp::Reverse;
        let n = piece.len();
        let Scratch { next, prev, pair, heap, .. } = scratch;
        // The tokens are a list over their start bytes: next[i] / prev[i] for the one starting at
        // i, pair[i] the rank of it joined with the one after (NONE once it was taken in).
        next.clear();
        next.extend(1..=n);
        prev.clear();
        prev.extend((0..n).map(|i| i.wrapping_sub(1)));
        pair.clear();
        pair.extend((0..n).map(|i| self.table.pair(piece, i, i + 2)));
        heap.clear();
        heap.extend(pair.iter().enumerate().filter(|(_, &r)| r != NONE).map(|(i, &r)| Reverse((r, i))));
        let mut tokens = n;
        while let Some(Reverse((rank, i))) = heap.pop() {
            if pair[i] != rank {
                continue;
            }
            let taken = next[i];
            next[i] = next[taken];
            pair[taken] = NONE;
            if next[i] < n {
                prev[next[i]] = i;
            }
            tokens -= 1;
            let after = next.get(next[i]).copied().unwrap_or(usize::MAX);
            pair[i] = self.table.pair(piece, i, after);
            if pair[i] != NONE {
                heap.push(Reverse((pair[i], i)));
            }
            if i > 0 {
                let before = prev[i];
                pair[before] = self.table.pair(piece, before, next[i]);
                if pair[before] != NONE {
                    heap.push(Reverse((pair[before], before)));
                }
            }
        }
        tokens
    }
}

/// A [`Bpe`] with a pattern of its own, for one thread ([`Bpe::for_thread`]).
pub struct Counter<'b> {
    bpe: &'b Bpe,
    pattern: OnceLock<Regex>,
}

impl Counter<'_> {
    /// Counts the tokens of `text`, as [`Bpe::count`] does.
    pub fn count(&self, text: &str) -> u64 {
        self.bpe.count_with(|| self.pattern.get_or_init(|| self.bpe.pattern().clone()), text)
    }
}

/// Buffers one count reuses from piece to piece.
#[derive(Default)]
struct Scratch {
    bounds: Vec<(usize, u32)>,
    next: Vec<usize>,
    prev: Vec<usize>,
    pair: Vec<u32>,
    heap: std::collections::BinaryHeap<std::cmp::Reverse<(u32, usize)>>,
}

/// The ranks of a tokenizer's ordinary tokens as one block of bytes, looked up in place.
///
/// Layout (integers little-endian u32): the magic `shakebpe`, the version, the tokenizer's name
/// (16 bytes, zero-padded), the rank count `R`, the log2 of the slot count `S`, the byte count
/// `B`, then blake3 of everything after the header (32 bytes); then `R` ends (token `r`'s bytes
/// are `bytes[end(r - 1)..end(r)]`, empty for a rank that is no ordinary token), `S` slots (an
/// open-addressed hash of the tokens' bytes: rank + 1, 0 empty, probed linearly from
/// [`slot_of`]), and the `B` bytes of every token in rank order.
struct Table {
    bytes: Backing,
    ranks: usize,
    shift: u32,
    slots_at: usize,
    blob_at: usize,
}

enum Backing {
    Mapped(memmap2::Mmap),
    Built(Vec<u8>),
}

impl std::ops::Deref for Backing {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Backing::Mapped(map) => map,
            Backing::Built(bytes) => bytes,
        }
    }
}

const MAGIC: [u8; 8] = *b"shakebpe";
/// Bumped whenever the layout or the hash changes.
const VERSION: u32 = 1;
const HEADER: usize = 72;

impl Table {
    /// Builds `name`'s table from tiktoken-rs's: every rank it decodes, less its special tokens.
    fn build(name: TokenizerName) -> Table {
        let core = match name {
            TokenizerName::Cl100k => tiktoken_rs::cl100k_base(),
            _ => tiktoken_rs::o200k_base(),
        };
        // tiktoken-rs's own tables, embedded in it: they always load.
        let core = core.expect("tiktoken-rs's tables load");
        let special: std::collections::HashSet<u32> =
            core.special_tokens().iter().flat_map(|s| core.encode_with_special_tokens(s)).collect();
        // Ranks are dense from 0; the tables end where a long run of ranks decodes to nothing.
        let mut tokens: Vec<Vec<u8>> = Vec::new();
        let mut rank = 0u32;
        let mut missing = 0;
        while missing < 1 << 16 {
            match core.decode_bytes(&[rank]) {
                Ok(bytes) if !special.contains(&rank) => {
                    tokens.resize(rank as usize, Vec::new());
                    tokens.push(bytes);
                    missing = 0;
                }
                _ => missing += 1,
            }
            rank += 1;
        }
        Table::of(name, &tokens)
    }

    /// Lays out the table of `tokens` (by rank; an empty one is no token).
    fn of(name: TokenizerName, tokens: &[Vec<u8>]) -> Table {
        let ranks = tokens.len();
        let bits = (ranks * 2).next_power_of_two().trailing_zeros().max(4);
        let shift = 64 - bits;
        let mut slots = vec![0u32; 1 << bits];
        for (rank, token) in tokens.iter().enumerate().filter(|(_, t)| !t.is_empty()) {
            let mut at = slot_of(token, shift);
            while slots[at] != 0 {
                at = (at + 1) & (slots.len() - 1);
            }
            slots[at] = rank as u32 + 1;
        }
        let blob: usize = tokens.iter().map(Vec::len).sum();
        let mut bytes = Vec::with_capacity(HEADER + 4 * (ranks + slots.len()) + blob);
        bytes.extend_from_slice(&MAGIC);
        bytes.extend_from_slice(&VERSION.to_le_bytes());
        let mut label = [0u8; 16];
        label[..name.as_str().len()].copy_from_slice(name.as_str().as_bytes());
        bytes.extend_from_slice(&label);
        for n in [ranks, bits as usize, blob] {
            bytes.extend_from_slice(&(n as u32).to_le_bytes());
        }
        bytes.extend_from_slice(&[0; 32]);
        let mut end = 0u32;
        for token in tokens {
            end += token.len() as u32;
            bytes.extend_from_slice(&end.to_le_bytes());
        }
        for slot in slots {
            bytes.extend_from_slice(&slot.to_le_bytes());
        }
        for token in tokens {
            bytes.extend_from_slice(token);
        }
        let sum = blake3::hash(&bytes[HEADER..]);
        bytes[40..HEADER].copy_from_slice(sum.as_bytes());
        Table::laid_out(Backing::Built(bytes), name).expect("a table just built is whole")
    }

    /// Maps the table at `path`: `Ok(None)` when there is none or it is of another version,
    /// `Err` when it is damaged.
    fn map(path: &Path, name: TokenizerName) -> Result<Option<Table>, TableError> {
        let refused = |source| TableError::File { path: path.to_path_buf(), source };
        let file = match std::fs::File::open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(refused(e)),
        };
        // SAFETY: the table is only ever replaced by a rename, never written in place, so the
        // mapping does not change under us.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(refused)?;
        if map.starts_with(&MAGIC) && map.get(8..12).is_some_and(|v| v != VERSION.to_le_bytes()) {
            return Ok(None);
        }
        Table::laid_out(Backing::Mapped(map), name).map(Some).map_err(TableError::Damaged)
    }

    /// Checks a table's layout, so that every lookup stays in bounds and every probe ends; the
    /// checksum is [`check`]'s (`shake fsck`), as a pack's is: hashing the 4.3 MB on every open
    /// was a third of a status-line turn.
    fn laid_out(bytes: Backing, name: TokenizerName) -> Result<Table, String> {
        let word =
            |at: usize| -> Option<usize> { Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?) as usize) };
        if bytes.len() < HEADER || bytes[..8] != MAGIC[..] {
            return Err("not a BPE table".into());
        }
        let label = &bytes[12..28];
        if label.split(|&b| b == 0).next() != Some(name.as_str().as_bytes()) {
            return Err("a table for another tokenizer".into());
        }
        let (ranks, bits, blob) = (word(28).unwrap_or(0), word(32).unwrap_or(0), word(36).unwrap_or(0));
        if !(4..32).contains(&bits) || ranks >= 1 << bits {
            return Err("bad header".into());
        }
        let slots_at = HEADER + 4 * ranks;
        let blob_at = slots_at + (4 << bits);
        if bytes.len() != blob_at + blob {
            return Err(format!("{} bytes where the header says {}", bytes.len(), blob_at + blob));
        }
        let mut end = 0;
        for r in 0..ranks {
            let next = word(HEADER + 4 * r).unwrap_or(0);
            if next < end || next > blob {
                return Err(format!("rank {r} out of bounds"));
            }
            end = next;
        }
        // Every slot names a rank, and some are empty, so that a probe always ends.
        let mut filled = 0;
        for s in 0..1usize << bits {
            match word(slots_at + 4 * s).unwrap_or(0) {
                0 => {}
                slot if slot <= ranks => filled += 1,
                _ => return Err("a slot out of bounds".into()),
            }
        }
        if filled > ranks {
            return Err("more tokens than ranks".into());
        }
        Ok(Table { bytes, ranks, shift: 64 - bits as u32, slots_at, blob_at })
    }

    fn word(&self, at: usize) -> usize {
        u32::from_le_bytes([self.bytes[at], self.bytes[at + 1], self.bytes[at + 2], self.bytes[at + 3]]) as usize
    }

    /// Returns the bytes of the token of rank `rank`.
    fn token(&self, rank: usize) -> &[u8] {
        let start = if rank == 0 { 0 } else { self.word(HEADER + 4 * (rank - 1)) };
        let end = self.word(HEADER + 4 * rank);
        &self.bytes[self.blob_at + start..self.blob_at + end]
    }

    /// Returns the rank of the token whose bytes are `bytes`, if there is one.
    fn rank(&self, bytes: &[u8]) -> Option<u32> {
        let mask = (1usize << (64 - self.shift)) - 1;
        let mut at = slot_of(bytes, self.shift);
        loop {
            match self.word(self.slots_at + 4 * at) {
                0 => return None,
                slot if self.token(slot - 1) == bytes => return Some(slot as u32 - 1),
                _ => at = (at + 1) & mask,
            }
        }
    }

    /// Returns the rank of `piece[start..end]` as one token (NONE when it is none, or when `end`
    /// is past the piece: there is no token after the last).
    fn pair(&self, piece: &[u8], start: usize, end: usize) -> u32 {
        piece.get(start..end).and_then(|bytes| self.rank(bytes)).unwrap_or(NONE)
    }
}

/// The slot a token's bytes hash to (with `shift` = 64 - log2 of the slot count): 8 bytes a step
/// multiplied into a word, the top bits taken. Part of the table's layout: changing it means a
/// new [`VERSION`].
fn slot_of(bytes: &[u8], shift: u32) -> usize {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        h = (h.rotate_left(23) ^ u64::from_le_bytes(chunk.try_into().unwrap_or_default())).wrapping_mul(K);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut word = [0u8; 8];
        word[..rest.len()].copy_from_slice(rest);
        h = (h.rotate_left(23) ^ u64::from_le_bytes(word)).wrapping_mul(K);
    }
    (h.wrapping_mul(K) >> shift) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiktoken(name: TokenizerName, text: &str) -> u64 {
        match name {
            TokenizerName::Cl100k => tiktoken_rs::cl100k_base_singleton().count_ordinary(text) as u64,
            _ => tiktoken_rs::o200k_base_singleton().count_ordinary(text) as u64,
        }
    }

    /// Text that reaches every rule: each alternative of both patterns (contractions in either
    /// case, letter runs with and without a lead, digit runs past three, punctuation runs with
    /// line feeds and slashes, whitespace runs before text, at the end, of `\r\n`), non-ASCII
    /// letters and marks, emoji (bytes no single token covers), long pieces either side of
    /// [`LONG_PIECE`], and pieces that are no token (joined pair by pair).
    fn corpus() -> Vec<String> {
        let mut texts: Vec<String> = [
            "hello world",
            "It's DON'T we'll they'RE I'm you'd",
            "   leading and trailing   ",
            "line one\nline two\r\n\r\n\n  indented\n\t\ttabs\n",
            "12345678901 3.14159 1e-10 0x1F",
            "a/b/c/ ?!...\n/// ---\n\n",
            "Ünïcödé wörds, 日本語のテキスト, Ελληνικά, русский текст, עִבְרִית",
            "emoji 😀🎉👩‍👩‍👧 and ZWJ",
            "fn main() { let x: Vec<u8> = vec![0; 16]; println!(\"{x:?}\"); }",
            "pneumonoultramicroscopicsilicovolcanoconiosis antidisestablishmentarianism",
            "zqxjkvbwpfgh qqqqqqqqqq xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            "<|endoftext|> <|fim_prefix|> are plain text here",
            "",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        // Long pieces: a letter run of 99, 100 and 5,000 bytes, a long non-token word, base64.
        for n in [99, 100, 101, 5000] {
            texts.push("abcdefghij".repeat(n / 10 + 1)[..n].to_string());
            texts.push("zq".repeat(n / 2 + 1)[..n].to_string());
        }
        let mut b64 = String::new();
        let mut x: u64 = 0x243F_6A88_85A3_08D3;
        for _ in 0..4000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b64.push(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[(x % 64) as usize] as char);
        }
        texts.push(b64);
        // Random runs of letters, marks, digits, spaces and punctuation, ASCII and not.
        let alphabet: Vec<char> =
            "aeiouxyzQWERTY éüßçñ日本語😀\u{301}0123456789 \n\t\r'.,;:/!?-_(){}\"".chars().collect();
        for len in [1, 2, 3, 7, 31, 200, 3000] {
            let mut s = String::new();
            for _ in 0..len {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                s.push(alphabet[(x % alphabet.len() as u64) as usize]);
            }
            texts.push(s);
        }
        texts
    }

    #[test]
    fn counts_are_tiktokens_count_for_count() {
        for name in [TokenizerName::O200k, TokenizerName::Cl100k] {
            let bpe = Bpe::build(name);
            for text in corpus() {
                assert_eq!(bpe.count(&text), tiktoken(name, &text), "{name} on {:?}", &text[..text.len().min(60)]);
            }
        }
    }

    /// Every string of every session the tests bundle (pi, Claude Code and OMP sessions: prose,
    /// code, tool output, JSON, base64), counted both ways.
    #[test]
    fn real_sessions_count_as_tiktoken_counts_them() {
        fn strings<'v>(value: &'v serde_json::Value, out: &mut Vec<&'v str>) {
            match value {
                serde_json::Value::String(s) => out.push(s),
                serde_json::Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
                serde_json::Value::Object(map) => map.values().for_each(|v| strings(v, out)),
                _ => {}
            }
        }
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures");
        let bpe = Bpe::build(TokenizerName::O200k);
        let (mut files, mut texts) = (0, 0);
        for entry in walkdir::WalkDir::new(&fixtures) {
            let entry = entry.unwrap();
            if entry.path().extension().is_none_or(|e| e != "jsonl") {
                continue;
            }
            files += 1;
            for line in std::fs::read_to_string(entry.path()).unwrap().lines() {
                let Ok(value) = serde_json::from_str::<serde_json::Value>(line) else { continue };
                let mut found = Vec::new();
                strings(&value, &mut found);
                for text in found {
                    texts += 1;
                    let want = tiktoken(TokenizerName::O200k, text);
                    assert_eq!(bpe.count(text), want, "{}: {:?}", entry.path().display(), &text[..text.len().min(60)]);
                }
            }
        }
        assert!(files >= 10 && texts >= 10_000, "{files} files, {texts} texts");
    }

    #[test]
    fn short_and_long_joins_agree() {
        let bpe = Bpe::build(TokenizerName::O200k);
        let mut scratch = Scratch::default();
        for text in corpus() {
            for piece in [text.as_bytes(), &text.as_bytes()[..text.len().min(LONG_PIECE - 1)]] {
                if piece.len() > 1 {
                    let short = bpe.join_short(piece, &mut Vec::new());
                    assert_eq!(short, bpe.join_long(piece, &mut scratch), "{:?}", String::from_utf8_lossy(piece));
                }
            }
        }
    }

    #[test]
    fn tables_hold_every_ordinary_token_and_no_special_one() {
        // o200k_base has 199,998 ordinary tokens, cl100k_base 100,256.
        for (name, tokens) in [(TokenizerName::O200k, 199_998), (TokenizerName::Cl100k, 100_256)] {
            let table = Table::build(name);
            let held = (0..table.ranks).filter(|&r| !table.token(r).is_empty()).count();
            assert_eq!(held, tokens, "{name}");
            for r in (0..table.ranks).step_by(97) {
                let token = table.token(r);
                if !token.is_empty() {
                    assert_eq!(table.rank(token), Some(r as u32));
                }
            }
            assert_eq!(table.rank(b"<|endoftext|>"), None);
        }
    }

    #[test]
    fn a_kept_table_is_mapped_and_a_damaged_one_rebuilt() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache").join("ranks-o200k.bin");
        let (first, problem) = Bpe::open(TokenizerName::O200k, &path);
        assert_eq!(problem, None);
        assert!(path.exists());
        let (again, problem) = Bpe::open(TokenizerName::O200k, &path);
        assert_eq!(problem, None);
        assert!(matches!(again.table.bytes, Backing::Mapped(_)));
        assert_eq!(again.count("hello world, it's me"), first.count("hello world, it's me"));
        let store = dir.path();
        assert_eq!(check(store, TokenizerName::O200k).map_err(|e| e.to_string()), Ok(true));
        assert_eq!(check(store, TokenizerName::Cl100k).map_err(|e| e.to_string()), Ok(false));
        // A flipped byte in the tokens is fsck's to find; a slot naming no rank, a cut file,
        // another tokenizer's table are found on open, named, and the table rebuilt, and the
        // counts stay tiktoken's.
        let whole = std::fs::read(&path).unwrap();
        let mut flipped = whole.clone();
        *flipped.last_mut().unwrap() ^= 1;
        std::fs::write(&path, &flipped).unwrap();
        assert_eq!(check(store, TokenizerName::O200k).map_err(|e| e.to_string()), Err("checksum mismatch".into()));
        let table = Table::map(&path, TokenizerName::O200k).unwrap().unwrap();
        let mut bad_slot = whole.clone();
        let slot = (0..1usize << (64 - table.shift)).map(|s| table.slots_at + 4 * s).find(|&at| table.word(at) != 0);
        let slot = slot.unwrap();
        bad_slot[slot..slot + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        for (bytes, why) in [(bad_slot, "slot out of bounds"), (whole[..whole.len() / 2].to_vec(), "bytes where")] {
            std::fs::write(&path, bytes).unwrap();
            let (bpe, problem) = Bpe::open(TokenizerName::O200k, &path);
            assert!(
                problem.as_deref().is_some_and(|p| p.contains(why) && p.contains("ranks-o200k.bin")),
                "{problem:?}"
            );
            assert_eq!(bpe.count("hello world"), 2);
            assert_eq!(std::fs::read(&path).unwrap(), whole);
        }
        let (_, problem) = Bpe::open(TokenizerName::Cl100k, &path);
        assert!(problem.is_some_and(|p| p.contains("another tokenizer")));
    }
}

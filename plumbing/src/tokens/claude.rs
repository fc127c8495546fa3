//! Claude's token count, offline: a Rust reading of ctok 1.3.0 (Sander Land, MIT; the notice is
//! `claude/LICENSE.ctok`), the reconstruction of Anthropic's `count_tokens` that oh-my-pi's
//! native Claude encodings port.
//!
//! A count is: the text normalized and written as a marked stream ([`stream`]); the fewest
//! tokens that tile the stream, each a piece of the family's measured vocabulary or, where no
//! piece covers a character, its UTF-8 bytes over the measured byte-prefix tokens; plus what a
//! run of line feeds ending the text costs against the frame's own closing line feeds. That is
//! the content of one user message; [`Claude::frame`] is the fixed cost of the message around
//! it (ctok's `token_count` = content + frame). OMP's `countTokens` counts content only, and so
//! does every figure shake prints: a session's messages are counted piece by piece, as the
//! BPE tokenizers count them.
//!
//! Two vocabularies per family: ctok 1.3.0's (`claude-v3`, …), and ctok 1.0.0's, which is what
//! OMP 18.2.11's port carries (`omp-v3`, …: the 1.3.0 rules with the 191 pieces and the one
//! byte prefix measured since left out), so an OMP session's figures are OMP's own to the token.
//!
//! The vocabularies are embedded (`claude/pieces-v3.bin` 0.49 MB, `pieces-v4_7.bin` 0.11 MB,
//! written from ctok's wheel by `claude/extract.py`): small enough that mapping them from the
//! store, as o200k's rank table is, would save nothing, and the index over them builds in a few
//! milliseconds, once per process and family, only when a count misses the token cache.

mod stream;

use std::hash::BuildHasher;
use std::sync::OnceLock;

use stream::Rules;

use super::TokenizerName;

const PIECES_V3: &[u8] = include_bytes!("claude/pieces-v3.bin");
const PIECES_V4_7: &[u8] = include_bytes!("claude/pieces-v4_7.bin");

/// One Claude encoding: a vocabulary and the rules around it.
pub struct Claude {
    /// Which vocabulary (v4.7's, OMP's), loaded on the first count that needs it.
    v47: bool,
    omp: bool,
    rules: Rules,
    frame: u64,
    /// Trailing ASCII whitespace is free (Opus 5 alone, as OMP measured it).
    free_trailing_space: bool,
}

impl std::fmt::Debug for Claude {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Claude").field("rules", &self.rules).field("frame", &self.frame).finish_non_exhaustive()
    }
}

/// Returns the encoding `name` counts with (`None` for a tokenizer that is not Claude's), made
/// on first use and kept for the process.
pub fn shared(name: TokenizerName) -> Option<&'static Claude> {
    use TokenizerName::*;
    static CELLS: [OnceLock<Claude>; 8] = [const { OnceLock::new() }; 8];
    let (cell, omp) = match name {
        ClaudeV3 | ClaudeV47 | ClaudeV5 | ClaudeV5Sonnet => (name as usize - ClaudeV3 as usize, false),
        OmpV3 | OmpV47 | OmpV5 | OmpV5Sonnet => (name as usize - OmpV3 as usize, true),
        _ => return None,
    };
    let v3 = Rules { fold_quotes: true, allcaps_min: Some(4), frame_bow: true };
    let v47 = Rules { fold_quotes: false, allcaps_min: None, frame_bow: true };
    let v48 = Rules { frame_bow: false, ..v47 };
    let (rules, frame, free_trailing_space) = match cell {
        0 => (v3, 7, false),
        1 => (v47, 11, false),
        2 => (v48, 6, true),
        _ => (v48, 6, false),
    };
    Some(CELLS[cell + 4 * omp as usize].get_or_init(|| Claude {
        v47: cell > 0,
        omp,
        rules,
        frame,
        free_trailing_space,
    }))
}

/// The v3 or v4.7 vocabulary, ctok 1.3.0's or OMP's.
/// Claude's encoding for a model (ctok's vocabulary), as OMP's catalog chooses the family:
/// `None` when the model is not Claude.
pub fn for_model(provider: &str, model: &str) -> Option<TokenizerName> {
    use super::family::Family;
    match Family::of(provider, model)? {
        Family::ClaudeV3 => Some(TokenizerName::ClaudeV3),
        Family::ClaudeV47 => Some(TokenizerName::ClaudeV47),
        Family::ClaudeV5 => Some(TokenizerName::ClaudeV5),
        Family::ClaudeV5Sonnet => Some(TokenizerName::ClaudeV5Sonnet),
        _ => None,
    }
}

fn vocab(v47: bool, omp: bool) -> &'static Vocab {
    static CELLS: [OnceLock<Vocab>; 4] = [const { OnceLock::new() }; 4];
    let data = if v47 { PIECES_V4_7 } else { PIECES_V3 };
    let id = v47 as usize + 2 * omp as usize;
    CELLS[id].get_or_init(|| Vocab::parse(data, omp, id))
}

impl Claude {
    /// The tokens of `text` as the content of one message (OMP's `countTokens(text)`).
    pub fn count(&self, text: &str) -> u64 {
        let head_space = text.starts_with(' ');
        let norm = match self.free_trailing_space {
            true => stream::normalize(text.trim_end_matches(|c: char| c.is_ascii_whitespace() || c == '\x0b'), false),
            false => stream::normalize(text, self.rules.fold_quotes),
        };
        // Opus 5's frame takes trailing whitespace free; the others price a final run of line
        // feeds against the frame's own.
        let line_feeds = match self.free_trailing_space {
            true => 0,
            false => norm.len() - norm.trim_end_matches('\n').len(),
        };
        let vocab = self.vocab();
        let text = stream::prepared(&norm, self.rules, head_space);
        SCRATCH.with_borrow_mut(|Scratch { marked, memos }| {
            let memo = &mut memos[vocab.id];
            // What the line feeds ending the content cost: the frame closes with two line
            // feeds, and one token may span both, so the run tiled is `n + 2` long and its last
            // token is the frame's own.
            let mut sum = match line_feeds {
                0 => 0,
                n => vocab.tile_segment(&"\n".repeat(n + 2), &mut memo.best) - 1,
            };
            let mut parts = stream::parts(&text);
            marked.clear();
            stream::write(parts.next().unwrap_or_default(), self.rules, true, marked);
            sum += vocab.tile(marked, memo);
            let mut seam = marked.ends_in_seam();
            for part in parts {
                let (n, ends_in_seam) = vocab.part(part, self.rules, marked, memo);
                // The space before the part's word start is folded into it: that space was a
                // segment of its own (after a word end), one token.
                sum = sum - seam as u64 + n;
                seam = ends_in_seam;
            }
            sum
        })
    }

    fn vocab(&self) -> &'static Vocab {
        vocab(self.v47, self.omp)
    }

    /// The fixed cost of the one-message frame around the content (7, 11 or 6 tokens).
    pub fn frame(&self) -> u64 {
        self.frame
    }
}

/// A family's vocabulary: a byte trie of its pieces, and the byte-prefix tokens a character no
/// piece covers is priced with.
struct Vocab {
    /// Which of the four vocabularies (its memo's index).
    id: usize,
    trie: Trie,
    byte_tokens: HashSet<u64>,
}

impl Vocab {
    /// Reads `extract.py`'s layout: pieces, byte tokens, the pieces and the byte tokens OMP's
    /// vocabulary lacks, each ended by 0xFF, the sections by 0xFE; `omp` leaves out what it lacks.
    fn parse(data: &'static [u8], omp: bool, id: usize) -> Vocab {
        let mut sections = data.split(|&b| b == 0xFE);
        let mut records = || sections.next().unwrap_or_default().split(|&x| x == 0xFF).filter(|p| !p.is_empty());
        let (pieces, bytes) = (records(), records());
        let (lacks, lacks_bytes): (HashSet<&[u8]>, HashSet<&[u8]>) = match omp {
            true => (records().collect(), records().collect()),
            false => Default::default(),
        };
        let pieces: Vec<&[u8]> = pieces.filter(|p| !lacks.contains(p)).collect();
        let byte_tokens = bytes.filter(|p| !lacks_bytes.contains(p)).map(pack).collect();
        Vocab { id, trie: Trie::build(&pieces), byte_tokens }
    }

    /// The fewest tokens tiling a marked stream: the sum of its segments' (no piece spans a
    /// cut), each one `memo` holds, or tiled.
    fn tile(&self, marked: &stream::Marked, memo: &mut Memo) -> u64 {
        let (text, mut from, mut sum) = (marked.text.as_str(), 0, 0);
        for &cut in marked.cuts.iter().chain([&text.len()]) {
            if cut > from {
                sum += self.tile_memo(&text[from..cut], memo);
                from = cut;
            }
        }
        sum
    }

    /// What a later part of a text costs (its segments' tokens) and whether it ends in a seam,
    /// from `memo` when it holds it (most parts are a word and what follows it to the next
    /// word, and they repeat), else written to `marked` and tiled. A part's stream depends on
    /// the rules' case markers alone, which are the vocabulary's (v3's or v4.7's), so the memo
    /// is the vocabulary's.
    #[inline]
    fn part(&self, part: &str, rules: Rules, marked: &mut stream::Marked, memo: &mut Memo) -> (u64, bool) {
        match memo.parts.get(part.as_bytes()) {
            Some((n, seam)) => (n as u64, seam),
            None => self.new_part(part, rules, marked, memo),
        }
    }

    /// [`Vocab::part`] of a part `memo` lacks: apart, so that a remembered part (most of them)
    /// costs its lookup alone, not the set-up of the call that writes and tiles.
    #[inline(never)]
    fn new_part(&self, part: &str, rules: Rules, marked: &mut stream::Marked, memo: &mut Memo) -> (u64, bool) {
        marked.clear();
        stream::write(part, rules, false, marked);
        let (n, seam) = (self.tile(marked, memo), marked.ends_in_seam());
        if part.len() <= Memo::LONGEST_PART {
            memo.parts.insert(part.as_bytes(), (n as u32, seam));
        }
        (n, seam)
    }

    /// A segment's tiling, from `memo` when it holds it (most segments are words, and words
    /// repeat), else tiled and, if short, remembered.
    fn tile_memo(&self, seg: &str, memo: &mut Memo) -> u64 {
        if seg.len() > Memo::LONGEST {
            return self.tile_segment(seg, &mut memo.best);
        }
        if let Some(n) = memo.counts.get(seg.as_bytes()) {
            return n as u64;
        }
        let n = self.tile_segment(seg, &mut memo.best);
        memo.counts.insert(seg.as_bytes(), n as u32);
        n
    }

    /// The fewest tokens tiling `s` (ctok's `min_vocab_tile`, forward: the best tiling of each
    /// prefix is final before any edge leaves its end), in `best` (reused across calls).
    fn tile_segment(&self, s: &str, best: &mut Vec<u32>) -> u64 {
        let bytes = s.as_bytes();
        best.clear();
        best.resize(bytes.len() + 1, u32::MAX);
        best[0] = 0;
        for start in 0..bytes.len() {
            let base = best[start];
            if base == u32::MAX {
                continue; // inside a character
            }
            let (end, floor) = match bytes[start] {
                // An ASCII character alone is one byte token at worst.
                b if b.is_ascii() => (start + 1, 1),
                _ => {
                    let c = s[start..].chars().next().unwrap_or('\0');
                    (start + c.len_utf8(), self.floor(c))
                }
            };
            best[end] = best[end].min(base + floor);
            let mut node = Trie::ROOT;
            for (k, &b) in bytes[start..].iter().enumerate() {
                match self.trie.child(node, b) {
                    Some(next) => node = next,
                    None => break,
                }
                if self.trie.terminal(node) {
                    let end = start + k + 1;
                    best[end] = best[end].min(base + 1);
                }
            }
        }
        best[bytes.len()] as u64
    }

    /// A character on its own where no piece of it is in the vocabulary: a marker is a token;
    /// anything else its UTF-8 bytes tiled over the byte-prefix tokens (each byte alone is one).
    fn floor(&self, c: char) -> u32 {
        if matches!(c, stream::BOW | stream::EOW | stream::SHIFT | stream::CAPS) {
            return 1;
        }
        let mut buf = [0u8; 4];
        let bytes = stream::unescape(c).encode_utf8(&mut buf).as_bytes();
        if bytes.len() == 1 {
            return 1;
        }
        let mut best = [0u32; 5];
        for end in 1..=bytes.len() {
            best[end] = (0..end)
                .filter(|&j| end - j == 1 || self.byte_tokens.contains(&pack(&bytes[j..end])))
                .map(|j| best[j] + 1)
                .min()
                .unwrap_or(u32::MAX);
        }
        best[bytes.len()]
    }
}

/// Segments and parts already counted, per thread and vocabulary, and the tiling's buffer.
#[derive(Default)]
struct Memo {
    counts: Remembered<u32>,
    /// A text's later parts ([`stream::parts`]): their tokens and whether they end in a seam.
    parts: Remembered<(u32, bool)>,
    best: Vec<u32>,
}

impl Memo {
    /// Segments longer than this are tiled each time (a long one seldom repeats).
    const LONGEST: usize = 64;
    /// Parts longer than this are not remembered.
    const LONGEST_PART: usize = 128;
    /// At most this many segments, and as many parts, remembered (a few MB).
    const MOST: usize = 1 << 16;
}

/// Short byte strings remembered with a value, at most [`Memo::MOST`] (then all are let go: a
/// bound on memory; the words that matter come back at once). Their bytes are kept in one
/// buffer: a key of its own was an allocation a miss, and a free a key when the thread ended.
#[derive(Default)]
struct Remembered<V> {
    bytes: Vec<u8>,
    table: hashbrown::HashTable<Slot<V>>,
    hasher: foldhash::fast::RandomState,
}

/// A remembered string: its hash, where its bytes are in [`Remembered::bytes`], its value.
struct Slot<V> {
    hash: u64,
    at: u32,
    len: u32,
    value: V,
}

impl<V: Copy> Remembered<V> {
    fn get(&self, key: &[u8]) -> Option<V> {
        let hash = self.hasher.hash_one(key);
        let same = |s: &Slot<V>| s.hash == hash && self.bytes.get(s.at as usize..(s.at + s.len) as usize) == Some(key);
        self.table.find(hash, same).map(|s| s.value)
    }

    /// Remembers a key [`Remembered::get`] did not find (of at most [`Memo::LONGEST_PART`]
    /// bytes: the buffer stays far below 4 GiB).
    fn insert(&mut self, key: &[u8], value: V) {
        if self.table.len() >= Memo::MOST {
            self.table.clear();
            self.bytes.clear();
        }
        let hash = self.hasher.hash_one(key);
        let slot = Slot { hash, at: self.bytes.len() as u32, len: key.len() as u32, value };
        self.bytes.extend_from_slice(key);
        self.table.insert_unique(hash, slot, |s| s.hash);
    }
}

/// A thread's buffers for counting: the marked stream, and each vocabulary's memo.
#[derive(Default)]
struct Scratch {
    marked: stream::Marked,
    memos: [Memo; 4],
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

/// A set hashed by foldhash: building a vocabulary looks up each of its pieces, and a count each
/// character no piece covers (SipHash was a fifth of the build).
type HashSet<T> = std::collections::HashSet<T, foldhash::fast::RandomState>;

/// A short byte string as one number (length and bytes) for the byte-token set.
fn pack(bytes: &[u8]) -> u64 {
    bytes.iter().fold(bytes.len() as u64, |acc, &b| acc << 8 | b as u64)
}

/// A byte trie laid out breadth first: node `i`'s children are the nodes `first[i]..first[i] +
/// count[i]`, sorted by their byte (`label`). A node with many children also has a table of
/// them by byte (`dense`), so a step is one load there and a scan of a few bytes elsewhere: the
/// binary search each step made was half of a cold count.
struct Trie {
    nodes: Vec<Node>,
    label: Vec<u8>,
    /// 256 child ids (or [`Trie::NONE`]) per node with a table, at `Node::dense × 256`.
    dense: Vec<u32>,
}

/// One trie node in 8 bytes: a cold count walks ~170,000 of them at random, so eight to a cache
/// line rather than four keeps more of the trie in cache.
#[derive(Clone, Copy)]
struct Node {
    first: u32,
    /// Which of `Trie::dense`'s tables is this node's, or [`Node::NO_TABLE`].
    dense: u16,
    /// The number of children (at most 256: [`Node::COUNT`]'s bits) and whether a piece ends
    /// here ([`Node::TERMINAL`]).
    meta: u16,
}

impl Node {
    const NO_TABLE: u16 = u16::MAX;
    const COUNT: u16 = 0x1FF;
    const TERMINAL: u16 = 0x8000;

    fn count(self) -> u32 {
        (self.meta & Self::COUNT) as u32
    }
}

impl Trie {
    const ROOT: u32 = 0;
    const NONE: u32 = u32::MAX;
    /// A node with more children than this has a table of them (the root and the common
    /// prefixes: about 250 tables, 250 KB); below it a scan of up to 16 labels is as quick.
    const DENSE_FROM: u32 = 16;

    /// Builds the trie of `pieces`, which must be sorted (as `extract.py` writes them).
    fn build(pieces: &[&[u8]]) -> Trie {
        let empty = Node { first: 0, dense: Node::NO_TABLE, meta: 0 };
        let mut t = Trie { nodes: vec![empty], label: vec![0], dense: Vec::new() };
        // Each queued node: its id, the range of pieces under it, its depth.
        let mut queue = std::collections::VecDeque::from([(0u32, 0usize, pieces.len(), 0usize)]);
        while let Some((node, mut lo, hi, depth)) = queue.pop_front() {
            if lo < hi && pieces[lo].len() == depth {
                t.nodes[node as usize].meta |= Node::TERMINAL;
                lo += 1;
            }
            t.nodes[node as usize].first = t.label.len() as u32;
            while lo < hi {
                let b = pieces[lo][depth];
                let mut end = lo + 1;
                while end < hi && pieces[end][depth] == b {
                    end += 1;
                }
                let id = t.label.len() as u32;
                t.nodes.push(empty);
                t.label.push(b);
                // At most 256 children: one per byte, within `Node::COUNT`.
                t.nodes[node as usize].meta += 1;
                queue.push_back((id, lo, end, depth + 1));
                lo = end;
            }
        }
        for i in 0..t.nodes.len() {
            let n = t.nodes[i];
            let table = t.dense.len() / 256;
            // Past u16's tables a node keeps its scan (the vocabularies need a few hundred).
            if (n.count() > Self::DENSE_FROM || i == Self::ROOT as usize) && table < Node::NO_TABLE as usize {
                t.dense.resize((table + 1) * 256, Self::NONE);
                for id in n.first..n.first + n.count() {
                    t.dense[table * 256 + t.label[id as usize] as usize] = id;
                }
                t.nodes[i].dense = table as u16;
            }
        }
        t
    }

    fn child(&self, node: u32, b: u8) -> Option<u32> {
        let n = self.nodes[node as usize];
        if n.dense != Node::NO_TABLE {
            let id = self.dense[n.dense as usize * 256 + b as usize];
            return (id != Self::NONE).then_some(id);
        }
        let first = n.first as usize;
        self.label[first..first + n.count() as usize].iter().position(|&l| l == b).map(|i| (first + i) as u32)
    }

    fn terminal(&self, node: u32) -> bool {
        self.nodes[node as usize].meta & Node::TERMINAL != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(name: TokenizerName, text: &str) -> u64 {
        shared(name).unwrap().count(text)
    }

    /// The node packs a child count up to 256 beside the terminal flag: a node with every byte as
    /// a child (a table) and one with 16 (a scan) find each child and know where pieces end.
    #[test]
    fn trie_nodes_hold_every_count() {
        let mut pieces: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        pieces.extend((0..=255u8).map(|b| vec![b'a', b]));
        pieces.extend((0..16u8).map(|b| vec![b'b', b'x', b]));
        pieces.sort();
        let t = Trie::build(&pieces.iter().map(Vec::as_slice).collect::<Vec<_>>());
        let walk = |s: &[u8]| s.iter().try_fold(Trie::ROOT, |n, &b| t.child(n, b));
        for p in &pieces {
            assert!(walk(p).is_some_and(|n| t.terminal(n)), "{p:?}");
        }
        assert!(walk(b"bx").is_some_and(|n| !t.terminal(n) && t.child(n, 16).is_none()));
        assert!(walk(b"ab\0").is_none());
    }

    /// Remembered strings answer with their own value, strings that share bytes apart, and past
    /// the bound all are let go and remembering starts again.
    #[test]
    fn remembered_strings_answer_with_their_value() {
        let mut r = Remembered::<u32>::default();
        let key = |i: usize| format!("{i}-").repeat(i % 5 + 1).into_bytes();
        for i in 0..Memo::MOST {
            assert_eq!(r.get(&key(i)), None, "{i}");
            r.insert(&key(i), i as u32);
        }
        assert!((0..Memo::MOST).all(|i| r.get(&key(i)) == Some(i as u32)));
        assert_eq!((r.get(b"1-1-"), r.get(b"1-"), r.get(b"")), (Some(1), None, None));
        r.insert(b"new", 7);
        assert_eq!((r.get(b"new"), r.get(&key(1)), r.table.len()), (Some(7), None, 1));
    }

    /// What [`segments`] relies on, for every piece of both vocabularies (OMP's are a subset): a
    /// word end only last, shift and caps only first, a word start only first or after them.
    #[test]
    fn every_vocabulary_cuts_at_markers() {
        use stream::{BOW, CAPS, EOW, SHIFT};
        for data in [PIECES_V3, PIECES_V4_7] {
            let pieces = data.split(|&b| b == 0xFE).next().unwrap().split(|&b| b == 0xFF).filter(|p| !p.is_empty());
            for piece in pieces {
                let chars: Vec<char> = std::str::from_utf8(piece).unwrap().chars().collect();
                for (i, &c) in chars.iter().enumerate() {
                    let ok = match c {
                        EOW => i + 1 == chars.len(),
                        SHIFT | CAPS => i == 0,
                        BOW => i == 0 || matches!(chars[i - 1], SHIFT | CAPS),
                        _ => true,
                    };
                    assert!(ok, "{chars:?}");
                }
            }
        }
    }

    /// The stream tiled in segments costs what it costs whole, segments remembered or not.
    #[test]
    fn segments_tile_as_the_whole() {
        let text = "Hello World THIS is it's 'First' x = f(a, b);\n  // ÉCOLE café 日本語 😀 ﷲ\n\nok";
        for name in [TokenizerName::ClaudeV3, TokenizerName::OmpV47, TokenizerName::ClaudeV5Sonnet] {
            let claude = shared(name).unwrap();
            let vocab = claude.vocab();
            let mut marked = stream::Marked::default();
            stream::marked(&stream::normalize(text, claude.rules.fold_quotes), claude.rules, false, &mut marked);
            let whole = vocab.tile_segment(&marked.text, &mut Vec::new());
            assert!(marked.cuts.len() > 10);
            let mut memo = Memo::default();
            assert_eq!((vocab.tile(&marked, &mut memo), vocab.tile(&marked, &mut memo)), (whole, whole), "{name:?}");
        }
    }

    /// A text counted in parts ([`stream::parts`], each later one remembered) costs what its
    /// whole marked stream tiled at once costs, on texts made at random of the pieces the
    /// marking rules turn on: letters in every case, contractions, apostrophes, spaces and
    /// line feeds of every length, digits, punctuation, marks, hard characters, the text's own
    /// markers, folded spaces and quotes.
    #[test]
    fn parts_count_as_the_whole() {
        const BITS: [&str; 44] = [
            "a", "Hello", "WORLD", "it", "x", "ll", "re", "s", "'", "’", "“", " ", " ", " ", "  ", "\n", "\n\n", "\t",
            "\r", "12", "3", ".", ",", "(", ")", "_", "—", "é", "\u{301}", "日本", "😀", "\u{FDD0}", "\u{FDD1}",
            "\u{A0}", "ẞ", "İ", "Σσς", "\u{0E4D}", "\u{0E32}", "ﷲ", "\u{3000}", "٣", "²", "\u{FE0F}",
        ];
        let names =
            [TokenizerName::ClaudeV3, TokenizerName::OmpV47, TokenizerName::ClaudeV5, TokenizerName::OmpV5Sonnet];
        for text in stream::random_texts(0x2545_F491_4F6C_DD1D, &BITS, 24).take(3000) {
            for name in names {
                let claude = shared(name).unwrap();
                // Opus 5 takes trailing whitespace free, and so no line feeds to price.
                let raw = match claude.free_trailing_space {
                    true => text.trim_end_matches(|c: char| c.is_ascii_whitespace() || c == '\x0b'),
                    false => &text,
                };
                let norm = stream::normalize(raw, claude.rules.fold_quotes);
                let mut marked = stream::Marked::default();
                stream::marked(&norm, claude.rules, text.starts_with(' '), &mut marked);
                let whole = claude.vocab().tile_segment(&marked.text, &mut Vec::new());
                let tail = match norm.len() - norm.trim_end_matches('\n').len() {
                    0 => 0,
                    n => claude.vocab().tile_segment(&"\n".repeat(n + 2), &mut Vec::new()) - 1,
                };
                assert_eq!(claude.count(&text), whole + tail, "{name:?} {text:?}");
                // Twice: the second time from the memo.
                assert_eq!(claude.count(&text), claude.count(&text), "{name:?} {text:?}");
            }
        }
    }

    /// Counts ctok 1.3.0 and OMP 18.2.11 give (ctok's `token_count` less the frame).
    #[test]
    fn counts_what_ctok_counts() {
        use TokenizerName::*;
        for (text, v3, v47, v5, v5s) in [
            ("", 1, 1, 0, 0),
            (" ", 1, 1, 0, 1),
            ("hello, world", 3, 4, 4, 4),
            (" hello", 1, 2, 3, 3),
            ("x\n\n", 1, 1, 1, 1),
            ("hello   \n", 2, 3, 2, 3),
            ("Hello World THIS is", 4, 8, 8, 8),
            ("日本語のテキスト", 9, 9, 8, 8),
        ] {
            assert_eq!(
                [count(ClaudeV3, text), count(ClaudeV47, text), count(ClaudeV5, text), count(ClaudeV5Sonnet, text)],
                [v3, v47, v5, v5s],
                "{text:?}"
            );
        }
        assert_eq!(shared(ClaudeV3).unwrap().frame(), 7);
        // A piece ctok measured after the vocabulary OMP carries.
        assert_eq!((count(ClaudeV3, "\u{FFFD}"), count(OmpV3, "\u{FFFD}")), (1, 2));
        assert!(shared(O200k).is_none());
    }
}

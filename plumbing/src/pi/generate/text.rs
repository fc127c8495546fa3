//! The generator's randomness and its raw material: a small seeded PRNG and pools of prose, code
//! and tool output lines that make generated sessions look (and tokenize) like real ones.

/// SplitMix64: tiny, fast, and the same sequence on every platform for a seed.
pub struct Rng(u64);

impl Rng {
    /// Returns a generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5eed_5e55_1011_cafe)
    }

    /// Returns the next 64 random bits.
    #[allow(clippy::should_implement_trait)] // an endless generator, not an iterator
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Returns a number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }

    /// Returns a number in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// Returns true with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// Picks one item.
    pub fn pick<'t, T>(&mut self, items: &'t [T]) -> &'t T {
        &items[self.below(items.len() as u64) as usize]
    }

    /// Returns a size with a long tail: usually near `typical`, now and then up to `max`.
    pub fn skewed(&mut self, typical: u64, max: u64) -> u64 {
        match self.below(20) {
            0 => self.range(typical, max.max(typical)),
            1..=3 => self.range(typical / 2, (typical * 3).min(max.max(1))),
            _ => self.range(1, typical.max(1)),
        }
    }
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Appends `len` random base64 characters (rounded up to a multiple of 4).
pub fn base64(rng: &mut Rng, out: &mut String, len: usize) {
    let len = len.div_ceil(4) * 4;
    out.reserve(len);
    let mut bits = 0u64;
    for i in 0..len {
        if i % 10 == 0 {
            bits = rng.next();
        }
        out.push(BASE64[(bits & 63) as usize] as char);
        bits >>= 6;
    }
}

/// Appends random alphanumerics (tool call ids, response ids).
pub fn alnum(rng: &mut Rng, out: &mut String, len: usize) {
    const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    for _ in 0..len {
        out.push(CHARS[rng.below(CHARS.len() as u64) as usize] as char);
    }
}

const WORDS: &[&str] = &[
    "the",
    "test",
    "function",
    "returns",
    "error",
    "when",
    "file",
    "is",
    "missing",
    "we",
    "should",
    "check",
    "parser",
    "session",
    "branch",
    "config",
    "value",
    "because",
    "and",
    "then",
    "update",
    "module",
    "tree",
    "handle",
    "é",
    "naïve",
    "cache",
    "index",
    "output",
    "run",
    "build",
    "fails",
    "on",
    "line",
    "with",
    "a",
    "new",
    "path",
    "flag",
    "compaction",
    "token",
    "context",
    "edit",
    "leaf",
    "entry",
    "JSON",
    "“quoted”",
    "refactor",
    "async",
    "worker",
    "queue",
    "日本語",
    "so",
    "it",
    "looks",
    "fine",
    "now",
    "🙂",
    "step",
];

/// Appends `words` words of prose, in sentences.
pub fn prose(rng: &mut Rng, out: &mut String, words: u64) {
    for i in 0..words {
        let w = rng.pick(WORDS);
        if i % 12 == 0 {
            if i > 0 {
                out.push_str(". ");
            }
            let mut chars = w.chars();
            if let Some(c) = chars.next() {
                out.extend(c.to_uppercase());
                out.push_str(chars.as_str());
            }
        } else {
            out.push(' ');
            out.push_str(w);
        }
    }
    out.push('.');
}

const RUST: &[&str] = &[
    "use std::collections::HashMap;",
    "pub fn parse(input: &str) -> Result<Session, Error> {",
    "    let mut entries = Vec::with_capacity(input.len() / 64);",
    "    for (number, line) in input.lines().enumerate() {",
    "        if line.trim().is_empty() { continue; }",
    "        let entry: Entry = serde_json::from_str(line).map_err(|e| Error::at(number + 1, e))?;",
    "        entries.push(entry);",
    "    }",
    "    Ok(Session { entries })",
    "}",
    "#[derive(Debug, Clone, PartialEq)]",
    "struct Node { id: String, parent: Option<usize>, children: Vec<usize> }",
    "impl Display for Node { fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result { write!(f, \"{}\", self.id) } }",
    "    // Walk to the root; \"parentId\" may name an entry that is not there.",
    "    match map.get(&key) { Some(v) => *v += 1, None => { map.insert(key, 1); } }",
    "\tlet tab_indented = \"a\\tb\";",
];

const PYTHON: &[&str] = &[
    "import json, sys",
    "def load(path):",
    "    with open(path, encoding=\"utf-8\") as f:",
    "        return [json.loads(line) for line in f if line.strip()]",
    "class Tree:",
    "    def __init__(self, entries):",
    "        self.by_id = {e[\"id\"]: e for e in entries}",
    "    def path(self, leaf):",
    "        while leaf is not None:",
    "            yield leaf; leaf = self.by_id.get(leaf[\"parentId\"])",
    "if __name__ == \"__main__\":",
    "    print(len(load(sys.argv[1])))",
];

const TYPESCRIPT: &[&str] = &[
    "import { readFileSync } from \"node:fs\";",
    "export function buildPath(entries: Entry[], leafId: string | null): Entry[] {",
    "  const byId = new Map(entries.map((e) => [e.id, e]));",
    "  const path: Entry[] = [];",
    "  let current = leafId ? byId.get(leafId) : entries.at(-1);",
    "  while (current) { path.unshift(current); current = current.parentId ? byId.get(current.parentId) : undefined; }",
    "  return path;",
    "}",
    "interface Entry { id: string; parentId: string | null; type: string }",
    "const html = `<div class=\"x\">${value}</div>`;",
];

const BASH_OUT: &[&str] = &[
    "   Compiling shake v0.1.0 (/home/dev/proj)",
    "warning: unused variable: `entry`",
    "  --> src/session.rs:142:13",
    "    Finished `test` profile [unoptimized + debuginfo] target(s) in 4.21s",
    "     Running unittests src/lib.rs (target/debug/deps/shake-5f1c2d9e)",
    "test pi::session::tests::cycles_are_reported ... ok",
    "test pi::project::tests::edits_apply ... ok",
    "test store::pack::tests::index_round_trip ... FAILED",
    "thread 'main' panicked at src/store/pack.rs:88:9:",
    "assertion `left == right` failed\n  left: 3\n right: 4",
    "drwxr-xr-x  5 dev dev  4096 Nov 21 09:00 src",
    "-rw-r--r--  1 dev dev 12873 Nov 21 09:00 Cargo.lock",
    "a1b2c3d Fix parent lookup for orphans",
    " M src/main.rs",
    "?? notes.txt",
    "npm warn deprecated inflight@1.0.6: This module is not supported",
    "FAIL  test/session.test.ts > buildPath > follows parentId",
    "  Expected: \"708192a3\"\n  Received: undefined",
    "\u{1b}[32m✓\u{1b}[0m 41 passed",
];

/// A source language with its line pool and fence tag.
#[derive(Clone, Copy)]
pub enum Lang {
    /// Rust source.
    Rust,
    /// Python source.
    Python,
    /// TypeScript source.
    TypeScript,
}

impl Lang {
    /// Every language.
    pub const ALL: [Lang; 3] = [Lang::Rust, Lang::Python, Lang::TypeScript];

    /// The fence info string and a file extension.
    pub fn names(self) -> (&'static str, &'static str) {
        match self {
            Lang::Rust => ("rust", "rs"),
            Lang::Python => ("python", "py"),
            Lang::TypeScript => ("ts", "ts"),
        }
    }

    fn pool(self) -> &'static [&'static str] {
        match self {
            Lang::Rust => RUST,
            Lang::Python => PYTHON,
            Lang::TypeScript => TYPESCRIPT,
        }
    }
}

/// Appends `lines` lines of source code.
pub fn code(rng: &mut Rng, out: &mut String, lang: Lang, lines: u64) {
    let pool = lang.pool();
    for _ in 0..lines {
        out.push_str(rng.pick::<&str>(pool));
        out.push('\n');
    }
}

/// Appends `lines` lines of numbered source, as pi's `read` tool shows a file.
pub fn numbered_code(rng: &mut Rng, out: &mut String, lang: Lang, lines: u64) {
    let pool = lang.pool();
    for n in 1..=lines {
        out.push_str(&n.to_string());
        out.push('\t');
        out.push_str(rng.pick::<&str>(pool));
        out.push('\n');
    }
}

/// Appends `lines` lines of build, test and shell output.
pub fn shell_output(rng: &mut Rng, out: &mut String, lines: u64) {
    for _ in 0..lines {
        out.push_str(rng.pick::<&str>(BASH_OUT));
        out.push('\n');
    }
}

/// Picks a plausible file path for a language.
pub fn file_path(rng: &mut Rng, lang: Lang) -> String {
    const DIRS: &[&str] = &["src", "src/pi", "src/store", "tests", "lib", "packages/core/src"];
    const STEMS: &[&str] = &["main", "session", "tree", "project", "pack", "index", "util", "config"];
    format!("{}/{}.{}", rng.pick(DIRS), rng.pick(STEMS), lang.names().1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        let xs: Vec<u64> = (0..5).map(|_| a.next()).collect();
        let ys: Vec<u64> = (0..5).map(|_| b.next()).collect();
        assert_eq!(xs, ys);
        assert_ne!(Rng::new(8).next(), xs[0]);
        assert!((0..1000).all(|_| a.below(7) < 7));
    }

    #[test]
    fn base64_is_padded_to_quads() {
        let mut s = String::new();
        base64(&mut Rng::new(1), &mut s, 10);
        assert_eq!(s.len(), 12);
        assert!(s.bytes().all(|b| BASE64.contains(&b)));
    }
}

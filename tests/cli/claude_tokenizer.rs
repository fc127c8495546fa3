//! shake's Claude tokenizer (`plumbing/src/tokens/claude.rs`) checked count for count against
//! its two oracles: ctok 1.3.0 itself (`tests/ctok-oracle/`, from PyPI; its `token_count`
//! includes the message frame) and oh-my-pi 18.2.11's native port of it (`tests/omp-oracle/`;
//! content without the frame, and ctok 1.0.0's vocabulary: shake's `omp-*` encodings), on a corpus of real session texts (every string of every
//! session fixture: tool output, code, JSON, prose), the opening of the Universal Declaration
//! of Human Rights in ctok's 501 languages, and ctok's own edge cases with ours
//! (`tests/fixtures/claude-tokens/`).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use shake_plumbing::tokens::claude;
use shake_plumbing::tokens::TokenizerName::{
    self, ClaudeV3, ClaudeV47, ClaudeV5Sonnet, OmpV3, OmpV47, OmpV5, OmpV5Sonnet,
};

use crate::env::{fixture_path, json_stdout};
use crate::omp::OmpOracle;

/// ctok from PyPI, installed by `tests/ctok-oracle/setup.sh`.
struct Ctok;

impl Ctok {
    fn dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ctok-oracle")
    }

    fn ensure() {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            if Self::dir().join("lib/.ctok-oracle-ready").exists() {
                return;
            }
            let status = Command::new("bash").arg(Self::dir().join("setup.sh")).status().expect("bash");
            assert!(status.success(), "tests/ctok-oracle/setup.sh failed");
        });
    }

    /// ctok's `[v3, v4.7, v4.8]` counts of each text. A U+FFFD is given to ctok as a lone
    /// surrogate (which a Rust string cannot hold, and ctok folds to U+FFFD).
    fn counts(texts: &[String]) -> Vec<[u64; 3]> {
        Self::ensure();
        let file = tempfile::NamedTempFile::new().unwrap();
        let json = serde_json::to_string(texts).unwrap().replace('\u{FFFD}', "\\ud800");
        std::fs::write(file.path(), json).unwrap();
        let mut cmd = Command::new("python3");
        cmd.arg(Self::dir().join("count.py")).arg(file.path()).env("PYTHONPATH", Self::dir().join("lib"));
        triples(json_stdout(cmd, "ctok count.py"))
    }
}

fn triples<const N: usize>(v: Value) -> Vec<[u64; N]> {
    v.as_array().unwrap().iter().map(|row| std::array::from_fn(|i| row[i].as_u64().expect("a count"))).collect()
}

/// The corpus: edge cases, the UDHR openings, and every distinct string of the session
/// fixtures up to 16 KB (ctok in Python takes seconds on the few longer ones).
fn corpus() -> Vec<String> {
    let dir = fixture_path("claude-tokens");
    let read = |name: &str| -> Value { serde_json::from_slice(&std::fs::read(dir.join(name)).unwrap()).unwrap() };
    let mut texts: Vec<String> =
        read("edge-cases.json").as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_string()).collect();
    texts.extend(read("udhr-sample.json").as_array().unwrap().iter().map(|l| l["text"].as_str().unwrap().to_string()));
    let mut seen: std::collections::BTreeSet<String> = texts.iter().cloned().collect();
    for file in sessions(&fixture_path("")) {
        let bytes = std::fs::read(&file).unwrap();
        for line in bytes.split(|&b| b == b'\n') {
            let Ok(v) = serde_json::from_slice::<Value>(line) else { continue };
            let mut stack = vec![v];
            while let Some(v) = stack.pop() {
                match v {
                    Value::String(s) if !s.is_empty() && s.len() <= 16 << 10 && !seen.contains(&s) => {
                        seen.insert(s.clone());
                        texts.push(s);
                    }
                    Value::Array(a) => stack.extend(a),
                    Value::Object(o) => stack.extend(o.into_iter().map(|(_, v)| v)),
                    _ => {}
                }
            }
        }
    }
    texts
}

/// Every session file under `dir`, in name order.
fn sessions(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    entries
        .into_iter()
        .flat_map(|p| match p.is_dir() {
            true => sessions(&p),
            false => p.extension().is_some_and(|x| x == "jsonl").then_some(p).into_iter().collect(),
        })
        .collect()
}

fn count(name: TokenizerName, text: &str) -> u64 {
    claude::shared(name).unwrap().count(text)
}

/// Lists the texts where `got` and `want` differ (at most a few, shortened).
/// Asserts shake's counts equal the oracle's for every text, listing the first 20 that differ.
fn assert_same_counts<const N: usize>(texts: &[String], got: &[[u64; N]], want: &[[u64; N]]) {
    let wrong: Vec<String> = texts
        .iter()
        .zip(got.iter().zip(want))
        .filter(|(_, (g, w))| g != w)
        .map(|(t, (g, w))| format!("{:?}: shake {g:?}, oracle {w:?}", t.chars().take(80).collect::<String>()))
        .collect();
    assert!(
        wrong.is_empty(),
        "{} of {} texts differ:\n{}",
        wrong.len(),
        texts.len(),
        wrong[..wrong.len().min(20)].join("\n")
    );
}

#[test]
fn claude_counts_equal_ctoks_on_the_corpus() {
    let texts = corpus();
    assert!(texts.len() > 5_000, "{} texts", texts.len());
    let want = Ctok::counts(&texts);
    let got: Vec<[u64; 3]> = texts
        .iter()
        .map(|t| {
            [ClaudeV3, ClaudeV47, ClaudeV5Sonnet].map(|name| count(name, t) + claude::shared(name).unwrap().frame())
        })
        .collect();
    assert_same_counts(&texts, &got, &want);
}

#[test]
fn claude_counts_equal_omps_native_ones_on_the_corpus() {
    let texts = corpus();
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), serde_json::to_vec(&texts).unwrap()).unwrap();
    let want: Vec<[u64; 4]> = triples(OmpOracle::run("claude.ts", &[&file.path().to_string_lossy()], &[]));
    let got: Vec<[u64; 4]> =
        texts.iter().map(|t| [OmpV3, OmpV47, OmpV5, OmpV5Sonnet].map(|name| count(name, t))).collect();
    assert_same_counts(&texts, &got, &want);
}

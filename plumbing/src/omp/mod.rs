//! Everything oh-my-pi-specific (`spec/pi-extensions.md` §3): OMP's session files (title slot,
//! header, OMP's entry types), its branch and compaction boundary, its `/shake` region rules and
//! its tokenizer, and a generator of OMP sessions for tests.
//!
//! shake never writes an OMP file: OMP's host is read-only. It meters what OMP's own `/shake`
//! would free and keeps every version it imports, so OMP's in-place rewrite can be undone.

pub mod file;
pub mod generate;
pub mod history;
pub mod host;
pub mod model;
pub mod own;
pub mod paths;
pub mod prune;
pub mod shake;
pub mod tokenizer;

pub use crate::tokens::family::Family;
pub use file::OmpFile;
#[cfg(feature = "fixture-host")]
pub use file::{looks_like_omp, OmpEntry, OmpError};
pub use shake::{Config, Region};
pub use tokenizer::OmpTokenizer;

/// What a meter reading of one OMP file is: the regions `/shake` would take now, counted as OMP
/// counts for the session's model.
// The engine reads the figures; the branch and boundary are for the tests (`tests/cli/omp.rs`).
#[cfg_attr(not(feature = "fixture-host"), allow(dead_code))]
#[derive(Clone, Debug)]
pub struct Reading {
    /// The session's model, `provider/id`, when the file names one.
    pub model: Option<String>,
    /// The tokenizer the counts come from.
    pub tokenizer: OmpTokenizer,
    /// The entries on the current branch.
    pub branch_len: usize,
    /// The boundary `/shake` uses, if any.
    pub boundary: Option<String>,
    /// The regions, in document order.
    pub regions: Vec<Region>,
    /// What `/shake` would free, as the meter counts it.
    pub freed: u64,
    /// The branch's tokens from the first region's entry to the end (what the cache writes
    /// again after `/shake`), counted as OMP counts an entry.
    pub suffix: u64,
}

/// The session's model (`provider/id`) and the tokenizer OMP counts it with. `accurate` stands
/// for OMP's `PI_TOKENIZER_ACCURATE=1`; `cached` is the tokenizer (with its cache) counts use when
/// it is the one they need ([`OmpTokenizer::counts_with`]).
pub fn session_tokenizer(
    file: &OmpFile,
    accurate: bool,
    cached: crate::tokens::Tokenizer,
) -> (Option<String>, OmpTokenizer) {
    let model = model::session_model(file, &shake::branch(file));
    let family = model.as_ref().and_then(|(p, m)| Family::of(p, m));
    (model.map(|(p, m)| format!("{p}/{m}")), OmpTokenizer::new(family, accurate).with_cached(cached))
}

/// Reads what OMP's `/shake` with `config` would free on `file` now, counted with `tokenizer`.
pub fn reading(file: &OmpFile, config: &Config, model: Option<String>, tokenizer: OmpTokenizer) -> Reading {
    let branch = shake::branch(file);
    let boundary = shake::boundary(file, &branch);
    let (regions, suffix) = shake::collect(file, &branch, &tokenizer, config, boundary.as_deref());
    let freed = shake::freed(&regions, &tokenizer);
    Reading { model, tokenizer, branch_len: branch.len(), boundary, regions, freed, suffix }
}

//! The meter's memo: the reading remembered per (session file, tokenizer, profile, rules), recalled
//! while the file is unchanged (its stamp, or the proof of its bytes), or grown by the append
//! shortcut ([`super::grow`]) when the file only gained lines continuing what was measured.

use std::path::PathBuf;

use crate::price::LastTurn;
use crate::profile::Profile;
use crate::rules::Rules;
use shake_plumbing::rev::RevArgs;
use shake_plumbing::store::sealed::{self, Unsealed};
use shake_plumbing::tokens::TokenizerName;
use shake_plumbing::{Context, Result};

use super::grow::Growth;
use super::stamp::{FileState, Seen};
use super::{read, reading_of, Counting, Measured, Reading};

/// One reading of the session `rev` names, whose file is now as `state` says: from the memo when
/// nothing changed (a stat, or for a touched file the proof of its bytes), from the new bytes
/// alone when the file only grew by lines continuing it, else by measuring the whole file.
pub(super) fn reading(
    ctx: &Context,
    rev: &RevArgs,
    state: &FileState,
    (profile, rules): (Profile, &Rules),
    counting: &Counting<'_>,
) -> Result<Reading> {
    unpriced(ctx, rev, state, (profile, rules), counting).and_then(|r| super::priced(ctx, r))
}

/// [`reading`] before its economics.
fn unpriced(
    ctx: &Context,
    rev: &RevArgs,
    state: &FileState,
    (profile, rules): (Profile, &Rules),
    counting: &Counting<'_>,
) -> Result<Reading> {
    let Some(key) = memo_key(ctx, state, counting.choice, profile, rules) else {
        return Ok(read(ctx, rev, (profile, rules), counting)?.reading);
    };
    let leaf = rev.rev().entry;
    let known = load_memo(ctx, &key);
    if let Some(known) = &known {
        if let Some((reading, proven)) = known.recall(state, leaf.as_deref(), profile) {
            if proven {
                // Same bytes, new stamp: the next call is a stat again.
                remember(ctx, &key, MemoEntry { seen: known.seen.restamped(state), ..known.clone() });
            }
            return Ok(reading);
        }
        let tok = counting.tokenizer(known.tokenizer);
        if let Some(m) = known.grow(state, leaf.as_deref(), (profile, rules), tok, counting.choice.is_none()) {
            remember(ctx, &key, MemoEntry::new(&key, state, &m));
            return Ok(m.reading);
        }
    }
    let m = read(ctx, rev, (profile, rules), counting)?;
    remember(ctx, &key, MemoEntry::new(&key, state, &m));
    Ok(m.reading)
}

/// The reading remembered per (session file, tokenizer chosen or not, profile), so a meter with nothing new to
/// measure reads one small file instead of the session: `<store>/cache/meter/<hash of the key>`,
/// bincode, sealed with a checksum ([`sealed`]). Its size does not grow with the session (ids
/// are kept in [`Bloom`](crate::fingerprint::Bloom) filters, the per-position figures only for
/// the tail, the bytes as a [`Proof`]). Only an optimisation: unreadable means absent, and a
/// damaged one is measured again, with a warning (`fsck` names it).
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct MemoEntry {
    pub(super) key: String,
    /// The tokenizer that counted (the session's own when none was chosen).
    pub(super) tokenizer: TokenizerName,
    /// The bytes measured, and the file's stamp when they were read.
    pub(super) seen: Seen,
    pub(super) tokens: u64,
    pub(super) tool_results: usize,
    pub(super) blocks: usize,
    /// Tokens from the first folded entry to the end (what a fold makes the cache write again).
    pub(super) suffix: u64,
    /// The newest turn's time, model, cache lifetime and recorded prices.
    pub(super) turn: LastTurn,
    pub(super) leaf_id: Option<String>,
    /// The leaf measured was pi's leaf on load (the file's last entry), asked for by no `:LEAF`.
    pub(super) at_last: bool,
    /// What an append to this state needs to be measured from the new bytes alone.
    pub(super) growth: Option<Growth>,
}

/// The memo key of a reading, or `None` when it must always be measured: `calibrated` (its
/// ratio may come from `calibration.json`), or a model chosen with `--model`. The leaf is not in it: pi's leaf moves every turn,
/// and the entry says which leaf it measured. No tokenizer chosen is a key of its own
/// (`default`): the entry says which one the session's model gave.
fn memo_key(
    ctx: &Context,
    state: &FileState,
    tokenizer: Option<TokenizerName>,
    profile: Profile,
    rules: &Rules,
) -> Option<String> {
    // A model chosen (`--model`) is not in the key: such readings are not kept.
    if tokenizer == Some(TokenizerName::Calibrated) || ctx.model.is_some() {
        return None;
    }
    let tokenizer = tokenizer.map_or("default", TokenizerName::as_str);
    // The version, because what a plan frees is a function of shake's rules too.
    Some(format!(
        "{} {} {} {} {}",
        env!("CARGO_PKG_VERSION"),
        tokenizer,
        profile.as_str(),
        rules.key(),
        std::fs::canonicalize(&state.path).unwrap_or_else(|_| state.path.clone()).display()
    ))
}

/// Bumped whenever the memo's layout changes (an older file is then ignored).
const MEMO_MAGIC: &str = "shake-meter-memo 11";

fn memo_path(ctx: &Context, key: &str) -> PathBuf {
    let hash = blake3::hash(key.as_bytes()).to_hex();
    sealed::memo_dir(&ctx.store_dir).join(&hash[..32])
}

fn load_memo(ctx: &Context, key: &str) -> Option<MemoEntry> {
    load(ctx, key, MEMO_MAGIC).filter(|entry: &MemoEntry| entry.key == key)
}

/// Reads the memo file of `key` if it holds a `T` under `magic` (any host's meter memo: the
/// caller checks the key it holds, as two keys may share a file name's hash prefix). A memo that
/// fails its checksum is absent, with a warning: the reading is measured again and replaces it.
pub(crate) fn load<T: serde::de::DeserializeOwned>(ctx: &Context, key: &str, magic: &str) -> Option<T> {
    let path = memo_path(ctx, key);
    let file = std::fs::read(&path).ok()?;
    let bytes = match sealed::unseal(&file) {
        Unsealed::Sound(bytes) => bytes,
        Unsealed::Damaged => {
            ctx.warn(format_args!("{}: damaged meter memo (checksum mismatch); measuring again", path.display()));
            return None;
        }
        Unsealed::Unsealed => return None,
    };
    let config = bincode::config::standard().with_limit::<{ 4 << 20 }>();
    let ((found, entry), _): ((String, T), usize) = bincode::serde::decode_from_slice(bytes, config).ok()?;
    (found == magic).then_some(entry)
}

impl MemoEntry {
    pub(super) fn new(key: &str, state: &FileState, m: &Measured) -> MemoEntry {
        let r = &m.reading;
        MemoEntry {
            key: key.to_string(),
            tokenizer: r.tokenizer,
            seen: Seen::new(state, m.proof.clone()),
            tokens: r.tokens,
            tool_results: r.tool_results,
            blocks: r.blocks,
            suffix: r.suffix,
            turn: r.turn.clone(),
            leaf_id: r.leaf_id.clone(),
            at_last: m.at_last,
            growth: m.growth.clone(),
        }
    }

    /// Tells whether this reading was taken at the leaf asked for: pi's leaf on load (`None`),
    /// or an entry named by its whole id.
    fn measured(&self, leaf: Option<&str>) -> bool {
        match leaf {
            None => self.at_last,
            Some(id) => self.leaf_id.as_deref() == Some(id),
        }
    }

    /// Measures the file from the bytes appended since this reading ([`Growth::grow`]); `None`
    /// means: measure it all.
    pub(super) fn grow(
        &self,
        state: &FileState,
        leaf: Option<&str>,
        policy: (Profile, &Rules),
        tok: shake_plumbing::tokens::Tokenizer,
        by_model: bool,
    ) -> Option<Measured> {
        let measured = (&self.seen, self.leaf_id.as_deref());
        self.growth.as_ref()?.grow(measured, state, leaf, policy, tok, by_model)
    }

    /// The remembered reading, if the file is still exactly as it was ([`Seen::unchanged`]).
    /// `true` when proven.
    pub(super) fn recall(&self, state: &FileState, leaf: Option<&str>, profile: Profile) -> Option<(Reading, bool)> {
        if !self.measured(leaf) {
            return None;
        }
        let proven = self.seen.unchanged(state)?;
        let figures = (self.tokens, self.tool_results, self.blocks, self.suffix);
        Some((reading_of(state, self.tokenizer, profile, figures, self.leaf_id.clone(), self.turn.clone()), proven))
    }
}

/// Remembers a reading (a cache file: atomic, not fsync-ed); failing to is not an error.
fn remember(ctx: &Context, key: &str, entry: MemoEntry) {
    save(ctx, key, MEMO_MAGIC, &entry)
}

/// Writes the memo file of `key`: `entry` under `magic`; failing to only warns.
pub(crate) fn save<T: serde::Serialize>(ctx: &Context, key: &str, magic: &str, entry: &T) {
    let path = memo_path(ctx, key);
    let write = || -> std::io::Result<()> {
        let bytes = bincode::serde::encode_to_vec((magic, entry), bincode::config::standard())
            .map_err(std::io::Error::other)?;
        Ok(shake_plumbing::durable::write_cache(&path, &sealed::seal(&bytes))?)
    };
    if let Err(e) = write() {
        ctx.warn(format_args!("{}: cannot save the meter memo: {e}", path.display()));
    }
}

//! Folding a Claude Code session as a fork: the originals are saved first, then a new session
//! file `<new uuid>.jsonl` is written beside the source with placeholders in place of the folded
//! results. The source file is only read, and its hash is checked before and after.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::transcript::Transcript;
use super::write::{result_spans, save_input, save_original, write_fork_bytes, Replace, SaveError};
use crate::durable::{Batch, FileError};
use crate::js::json::js_string;

/// What a fork (or an in-place fold) wrote.
#[derive(Debug)]
pub struct Forked {
    /// The new session id.
    pub session_id: String,
    /// The new session file.
    pub path: PathBuf,
    /// The results folded (tool_use ids) and the rows whose calls' inputs were folded (uuids),
    /// each with the saved original's path.
    pub folded: Vec<(String, PathBuf)>,
    /// In place: the bytes of rows Claude Code appended meanwhile, copied (0 for a fork).
    pub carried: u64,
}

/// Why a fork was not written.
#[derive(Debug, thiserror::Error)]
pub enum ForkError {
    /// The transcript names no session id (no row has `sessionId`).
    #[error("{0}: no row names a sessionId; not a Claude Code session")]
    NoSessionId(String),
    /// The session id is not a uuid, as Claude Code's own are: it would become a folder name
    /// and a word of the resume command, so nothing is written for it.
    #[error("{0}: the sessionId {1} is not a Claude Code session id (a uuid); shake writes nothing for it")]
    BadSessionId(String, String),
    /// A target names no `tool_result` whose content is a text.
    #[error("{0}: no tool_result {1} with a text content; nothing was written")]
    NoText(String, String),
    /// An original could not be saved safely: the fold is refused.
    #[error("{0}: cannot save the original of {1}: {2}; nothing was written")]
    Unsaved(String, String, SaveError),
    /// The transcript is a symbolic link: an in-place rewrite would replace the link by a file.
    #[error("{0} is a symbolic link; an in-place write would replace the link by a file, so nothing was written")]
    Symlink(String),
    /// Another process has the transcript open: what it writes after the rename would be lost.
    #[error("{0} is open in {1}; a row it writes after shake's rename would be lost, so nothing was written")]
    Open(String, String),
    /// The source's last line is a write in progress.
    #[error("{0}: the last line is incomplete (Claude Code may be writing it); try again when it is idle")]
    Torn(String),
    /// The new file exists already (never overwritten).
    #[error("{0} exists already; not overwritten")]
    Exists(String),
    /// The source changed while the fork was made.
    #[error("{0} changed while the fork was written; the fork {1} was removed")]
    SourceChanged(String, String),
    /// An in-place rewrite found another file at the path (renamed over it meanwhile).
    #[error("{0} was replaced by another file while shake rewrote it; it was left as it is")]
    Replaced(String),
    /// An in-place rewrite found the bytes it had read changed.
    #[error("{0} changed while shake rewrote it (not only rows appended); it was left as it is")]
    Rewritten(String),
    /// An in-place rewrite found a row half written after the bytes it had read.
    #[error(
        "{0}: Claude Code was midway through writing a row; the file was left as it is; try again when it is idle"
    )]
    Writing(String),
    /// The file system refused.
    #[error(transparent)]
    File(#[from] FileError),
}

/// A fresh session id in Claude Code's form (a random v4 uuid).
pub fn new_session_id() -> String {
    let seed = blake3::hash(
        format!("{:?}{}{:?}", std::time::SystemTime::now(), std::process::id(), std::thread::current().id()).as_bytes(),
    );
    session_id_from(seed.as_bytes())
}

/// A session id in Claude Code's form (a v4 uuid) made from the first 16 bytes of `seed`.
pub fn session_id_from(seed: &[u8; 32]) -> String {
    let mut b = [0u8; 16];
    b.copy_from_slice(&seed[..16]);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..])
}

/// Where the text of every `tool_result` whose content is a string is, by `tool_use_id` (the
/// last row wins for a repeated id): each text is decoded from the line when asked for, so the
/// index holds no text. Block contents (images, text lists) are not foldable here.
pub struct Results<'t> {
    t: &'t Transcript,
    /// `tool_use_id` → (row index, the content's byte range in the row's text).
    at: HashMap<String, (usize, std::ops::Range<usize>)>,
}

impl<'t> Results<'t> {
    /// Indexes the results of `t`'s user rows.
    pub fn new(t: &'t Transcript) -> Results<'t> {
        let mut at = HashMap::new();
        for (i, row) in t.rows.iter().enumerate().filter(|(_, r)| r.kind() == "user" && r.has_tool_result()) {
            let text = t.text(row);
            for (id, span) in result_spans(text) {
                if text[span.clone()].starts_with('"') {
                    at.insert(id, (i, span));
                }
            }
        }
        Results { t, at }
    }

    /// The text of result `id`, when it is a string.
    pub fn text(&self, id: &str) -> Option<String> {
        let (row, span) = self.at.get(id)?;
        serde_json::from_str(&self.t.text(&self.t.rows[*row])[span.clone()]).ok()
    }

    /// Every result's text, by id (tests and tools: this holds them all at once).
    #[cfg(feature = "fixture-host")]
    pub fn all(&self) -> HashMap<String, String> {
        self.at.keys().filter_map(|id| Some((id.clone(), self.text(id)?))).collect()
    }
}

/// The text of every `tool_result` whose content is a string, by `tool_use_id` ([`Results::all`]).
#[cfg(feature = "fixture-host")]
pub fn result_texts(t: &Transcript) -> HashMap<String, String> {
    Results::new(t).all()
}

/// Where the original of result `tool_use_id` of session `session_id`, read from `source`, is
/// saved: `<project dir>/<session id>/shake/<tool_use_id>.txt` (beside Claude Code's own
/// `<session id>/tool-results/`), as an absolute path the model can `Read`. It depends on the
/// source alone, so a plan's placeholder is the one the fork writes.
pub fn saved_path(source: &Path, session_id: &str, tool_use_id: &str) -> PathBuf {
    saved_dir(source, session_id).join(format!("{tool_use_id}.txt"))
}

/// Where the input of tool call `call` of session `session_id`, read from `source`, is saved
/// when a fold replaces it: beside its result's original, `<call>.input.json`.
pub fn saved_input_path(source: &Path, session_id: &str, call: &str) -> PathBuf {
    saved_dir(source, session_id).join(format!("{call}.{}", super::write::INPUT_EXT))
}

/// The folder of [`saved_path`]'s files (the source's folder made absolute: a look-up per
/// folder of the path, so found once per fold).
fn saved_dir(source: &Path, session_id: &str) -> PathBuf {
    let dir = source.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| std::path::absolute(dir).unwrap_or(dir.to_path_buf()));
    dir.join(session_id).join("shake")
}

/// A tool call whose `input` a fold replaces (`--fold-tool-inputs`).
#[derive(Clone, Debug)]
pub struct Input {
    /// The call's id (its `tool_use` block's `id`): the saved input's name.
    pub call: String,
    /// The uuid of the assistant row holding it: the fold's target.
    pub row: String,
    /// The input as written in the source (a JSON object), saved before anything points at it.
    pub original: String,
    /// The new input (a JSON object whose big strings are the placeholder naming the saved file).
    pub new: String,
}

/// Writes a fork of `source` (read as `t`) with each result of `targets` replaced by
/// `replacement(text, saved path)` and each call of `inputs` given its new input; originals go
/// to [`saved_path`] (an input's to [`saved_input_path`]) first. `new_id` is the fork's session
/// id ([`new_session_id`] for a fresh one).
pub fn fork(
    t: &Transcript,
    source: &Path,
    (targets, inputs): (&[String], &[Input]),
    new_id: &str,
    replacement: impl Fn(&str, &Path) -> String,
) -> Result<Forked, ForkError> {
    let old_id = checked_source(t, source)?;
    let (replace, folded) = save_originals(t, source, &old_id, (targets, inputs), replacement)?;
    let path = write_fork(t, source, &old_id, new_id, &replace)?;
    Ok(Forked { session_id: new_id.to_string(), path, folded, carried: 0 })
}

/// Folds `source` (read as `t`) in place: the originals of `targets` are saved first, as for
/// [`fork`], then the transcript itself is rewritten with the placeholders
/// ([`super::in_place::rewrite`], which `hook` is handed to); its session id stays.
pub fn fold_in_place(
    t: &Transcript,
    source: &Path,
    (targets, inputs): (&[String], &[Input]),
    replacement: impl Fn(&str, &Path) -> String,
    hook: impl FnMut(super::in_place::Stage),
) -> Result<Forked, ForkError> {
    let id = checked_source(t, source)?;
    let (replace, folded) = save_originals(t, source, &id, (targets, inputs), replacement)?;
    let write = |out: &mut dyn Write| super::in_place::write_replaced(t, source, &replace, out);
    let carried = super::in_place::rewrite(t, source, write, hook)?;
    Ok(Forked { session_id: id, path: source.to_path_buf(), folded, carried })
}

/// What saving the originals gave: the new content by target, and the targets with their saved
/// files.
type Saved = (Replace<'static>, Vec<(String, PathBuf)>);

/// Saves each target's original at [`saved_path`] and makes its replacement; a target whose
/// original cannot be saved safely refuses the fold (a fold reported and recorded is the fold
/// written). Returns once every original is on disk (all synced together, [`Batch`]), before
/// any placeholder points at one.
fn save_originals(
    t: &Transcript,
    source: &Path,
    old_id: &str,
    (targets, inputs): (&[String], &[Input]),
    replacement: impl Fn(&str, &Path) -> String,
) -> Result<Saved, ForkError> {
    let dir = saved_dir(source, old_id);
    let texts = Results::new(t);
    let mut replace = Replace::default();
    let mut folded = Vec::new();
    let mut batch = Batch::default();
    crate::durable::remove_dead_temps(&dir);
    let shown = source.display().to_string();
    for id in targets {
        // One original decoded at a time: only its placeholder is kept.
        let Some(text) = texts.text(id) else { return Err(ForkError::NoText(shown, id.clone())) };
        let saved = save_original(&dir, id, &text, &mut batch).map_err(|e| match e {
            SaveError::File(e) => ForkError::File(e),
            e => ForkError::Unsaved(shown.clone(), id.clone(), e),
        })?;
        replace.results.insert(id.clone(), js_string(&replacement(&text, &saved)).into());
        folded.push((id.clone(), saved));
    }
    for input in inputs {
        let saved = save_input(&dir, &input.call, &input.original, &mut batch).map_err(|e| match e {
            SaveError::File(e) => ForkError::File(e),
            e => ForkError::Unsaved(shown.clone(), input.call.clone(), e),
        })?;
        replace.inputs.insert(input.call.clone(), input.new.clone().into());
        folded.push((input.row.clone(), saved));
    }
    // Every original on disk before the caller writes a placeholder pointing at one.
    batch.sync()?;
    Ok((replace, folded))
}

/// Writes a copy of `source` (read as `t`) under session id `new_id` with the content of each
/// result in `restored` (by `tool_use_id`, JSON strings) in place of its own, saving nothing: how
/// an undo puts the originals back. The same undo is the same session, written once: a file
/// there with those very bytes is taken as it is (`true`: reused); one holding only their start
/// (cut by a kill of a shake that wrote at the final name) is written again; another is never
/// overwritten. Returns the file.
pub fn restore(
    t: &Transcript,
    source: &Path,
    restored: &Replace<'_>,
    new_id: &str,
) -> Result<(PathBuf, bool), ForkError> {
    let old_id = checked_source(t, source)?;
    let path = match write_fork(t, source, &old_id, new_id, restored) {
        Err(ForkError::Exists(path)) => PathBuf::from(path),
        written => return Ok((written?, false)),
    };
    let there = std::fs::metadata(&path).map_err(FileError::at(&path, "read"))?.len();
    let mut whole = blake3::Hasher::new();
    let mut start = PrefixHash { out: &mut whole, left: there, hasher: blake3::Hasher::new() };
    write_fork_bytes(t, &old_id, new_id, restored, &mut start).map_err(FileError::at(source, "read"))?;
    let (left, start) = (start.left, start.hasher.finalize());
    let now = hash_file(&path).map_err(FileError::at(&path, "read"))?;
    if now == whole.finalize() {
        return Ok((path, true));
    }
    if left > 0 || there == whole.count() || now != start {
        return Err(ForkError::Exists(path.display().to_string()));
    }
    std::fs::remove_file(&path).map_err(FileError::at(&path, "remove the cut"))?;
    Ok((write_fork(t, source, &old_id, new_id, restored)?, false))
}

/// A writer that hashes the first `left` bytes written through it.
pub(super) struct PrefixHash<'w> {
    pub(super) out: &'w mut dyn Write,
    pub(super) left: u64,
    pub(super) hasher: blake3::Hasher,
}

impl Write for PrefixHash<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(buf)?;
        let hashed = n.min(usize::try_from(self.left).unwrap_or(usize::MAX));
        self.hasher.update(&buf[..hashed]);
        self.left -= hashed as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// The source's session id, when the source may be forked (no write in progress) and its id is a
/// uuid: the id names the originals' folder and is a word of the resume command, so a
/// transcript may not choose it freely (`../..`, an absolute path, `x;touch y`).
pub(super) fn checked_source(t: &Transcript, source: &Path) -> Result<String, ForkError> {
    let shown = source.display().to_string();
    let old_id = t.session_id().ok_or_else(|| ForkError::NoSessionId(shown.clone()))?.to_string();
    if super::paths::session_id_of_file(&format!("{old_id}.jsonl")).is_none() {
        return Err(ForkError::BadSessionId(shown, format!("{old_id:?}")));
    }
    match t.torn {
        Some(_) => Err(ForkError::Torn(shown)),
        None => Ok(old_id),
    }
}

/// Writes `<dir of source>/<new_id>.jsonl` from `t` with `replace` applied; the source is
/// hashed before and after, and a fork made while it changed is removed.
fn write_fork(
    t: &Transcript,
    source: &Path,
    old_id: &str,
    new_id: &str,
    replace: &Replace<'_>,
) -> Result<PathBuf, ForkError> {
    let shown = source.display().to_string();
    let before = blake3::hash(t.file.raw());
    let dir = source.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let path = dir.join(format!("{new_id}.jsonl"));
    if std::fs::symlink_metadata(&path).is_ok() {
        return Err(ForkError::Exists(path.display().to_string()));
    }
    // Through a hidden temp file renamed into place: a kill leaves no partial `<uuid>.jsonl`
    // that Claude Code would list as a session.
    crate::durable::remove_dead_temps(dir);
    crate::durable::write_new_hidden(&path, |out| write_fork_bytes(t, old_id, new_id, replace, out).map(drop))
        .map_err(|e| match e.source.kind() {
            std::io::ErrorKind::AlreadyExists => ForkError::Exists(path.display().to_string()),
            _ => ForkError::File(e),
        })?;
    let after = hash_file(source).map_err(FileError::at(source, "read"))?;
    if after != before {
        let _ = std::fs::remove_file(&path);
        return Err(ForkError::SourceChanged(shown, path.display().to_string()));
    }
    Ok(path)
}

/// The blake3 hash of the file at `path`, read in pieces (never held whole).
pub(super) fn hash_file(path: &Path) -> std::io::Result<blake3::Hash> {
    Ok(blake3::Hasher::new().update_reader(std::fs::File::open(path)?)?.finalize())
}

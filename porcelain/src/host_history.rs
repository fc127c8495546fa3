//! A host's rewrites of its own files as the store saw them (`docs/omp.md`): `shake log` on a
//! session of a host that rewrites its files (oh-my-pi's `/shake`, its pruning) lists each
//! imported version that rewrote the file, by the host or by `shake restore`, and `shake diff
//! SESSION@N SESSION@M` shows what changed between two versions, entry by entry with the
//! placeholder the host put in. Both compare versions with the host's [`History`], counting as
//! the host counts for the session's model.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use shake_plumbing::host::error::HostError;
use shake_plumbing::host::own::{Change, ChangeKind, Compared, History, Rewrite};
use shake_plumbing::host::{Host, SessionFile};
use shake_plumbing::hosts::{short_path, HOSTS};
use shake_plumbing::id::ObjectId;
use shake_plumbing::output::{answer, json_or, table, write_json, write_record, RecordArgs};
use shake_plumbing::rev::{Rev, RevArgs, RevError};
use shake_plumbing::store::{Store, StoreError};
use shake_plumbing::{Context, Result};

use crate::render::{plural, thousands, Paint};

/// Why versions cannot be listed or compared (the store's and the hosts' errors pass through
/// as theirs). The commands give the exit code and the hints (`cmd/command_error.rs`).
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The session has no version `n`.
    #[error("{}: no version {n} (it has {have})", path.display())]
    NoVersion {
        /// The session file.
        path: PathBuf,
        /// The version asked for (1-based).
        n: usize,
        /// How many there are.
        have: usize,
    },
    /// Version `n` is not a session of a host that rewrites its files.
    #[error("{} version {n} is not a session of a host that rewrites its own files ({rewriters}): versions are compared for such rewrites", path.display())]
    NotRewriter {
        /// The session file.
        path: PathBuf,
        /// The version.
        n: usize,
        /// The hosts that do, by title.
        rewriters: String,
    },
    /// A log of a host's rewrites was asked for at one leaf.
    #[error("an {title} log lists the file's rewrites; a leaf cannot be chosen")]
    LeafChosen {
        /// The host's title.
        title: &'static str,
    },
    /// The session named does not resolve.
    #[error(transparent)]
    Rev(#[from] RevError),
    /// The store does not answer.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The host does not compare the versions.
    #[error(transparent)]
    Host(#[from] HostError),
}

/// The imported versions of one session file, oldest first (version 1 is the first import).
struct Versions {
    store: Store,
    path: PathBuf,
    chain: Vec<ObjectId>,
    times: HashMap<ObjectId, u64>,
}

impl Versions {
    /// The versions of the session `session` names (`None`: the default session here; a file
    /// that is gone is found by the path or id the store recorded). What is at the path now is
    /// imported first, so it is the latest version.
    fn of(ctx: &Context, session: Option<&str>) -> Result<Versions, HistoryError> {
        let path = match session {
            None => shake_plumbing::rev::default_session(ctx)?,
            Some(s) if Path::new(s).is_file() => PathBuf::from(s),
            Some(s) => match (Rev { session: Some(s.to_string()), entry: None }).session_path(ctx) {
                Ok(path) => path,
                // A file that is gone: the store knows its path and id.
                Err(_) => Store::open(ctx)?.find_session(ctx, s)?.path,
            },
        };
        if path.is_file() {
            shake_plumbing::store::touch::import(ctx, &path);
        }
        let store = Store::open(ctx)?;
        let info = match store.session(&path) {
            Ok(Some(info)) => info,
            // A damaged store is said, never taken for "not imported".
            Err(e) if e.is_damage() => return Err(e.into()),
            Ok(None) | Err(_) => store.find_session(ctx, &path.to_string_lossy())?,
        };
        let chain = store.version_chain(&info.version)?;
        let times = store.import_times(&info.path)?;
        Ok(Versions { store, path: info.path, chain, times })
    }

    /// The id of version `n` (1-based), or an error saying how many there are.
    fn id(&self, n: usize) -> Result<ObjectId, HistoryError> {
        let have = self.chain.len();
        let found = n.checked_sub(1).and_then(|i| self.chain.get(i)).copied();
        found.ok_or_else(|| HistoryError::NoVersion { path: self.path.clone(), n, have })
    }

    /// Version `n`'s bytes, as a file at the session's path.
    fn file(&self, n: usize) -> Result<SessionFile, HistoryError> {
        Ok(SessionFile::from_bytes(self.path.clone(), self.store.version_bytes(&self.id(n)?)?))
    }

    /// The host of version `n` (`file`) and its history; a version whose host does not
    /// rewrite its files is refused.
    fn host(&self, n: usize, file: &SessionFile) -> Result<(&'static dyn Host, &'static dyn History), HistoryError> {
        let host = shake_plumbing::hosts::detect(file, None).ok();
        match host.and_then(|h| Some((h, h.history()?))) {
            Some(found) => Ok(found),
            None => {
                let rewriters: Vec<&str> =
                    HOSTS.iter().filter(|h| h.history().is_some()).map(|h| h.kind().title()).collect();
                Err(HistoryError::NotRewriter { path: self.path.clone(), n, rewriters: rewriters.join(", ") })
            }
        }
    }

    /// Versions `a` and `b` compared by the host of `a`.
    fn compare(
        &self,
        ctx: &Context,
        (a, old): (usize, &SessionFile),
        (b, new): (usize, &SessionFile),
    ) -> Result<Compared, HistoryError> {
        let (_, history) = self.host(a, old)?;
        self.host(b, new)?;
        Ok(history.compare(ctx, (&format!("version {a}"), old), (&format!("version {b}"), new))?)
    }

    /// How version `n` came from the one before (`first`, `appended`, `rewritten`).
    fn how(&self, n: usize) -> Result<&'static str, HistoryError> {
        Ok(self.store.version(&self.id(n)?)?.how())
    }

    /// When version `n` was imported (ISO 8601), if the store recorded it.
    fn imported_at(&self, n: usize) -> Option<String> {
        let id = self.id(n).ok()?;
        self.times.get(&id).map(|&ms| shake_plumbing::time::iso(ms))
    }

    /// `{"number","version","bytes","importedAt"}` for version `n`.
    fn side_json(&self, n: usize, bytes: usize) -> Value {
        json!({
            "file": self.path.to_string_lossy(),
            "number": n,
            "version": self.id(n).map(|id| id.to_hex()).ok(),
            "bytes": bytes,
            "importedAt": self.imported_at(n),
        })
    }
}

/// `{"id","change","oldLine","newLine","tokensBefore","tokensAfter","placeholders"}`.
fn change_json(c: &Change) -> Value {
    json!({
        "id": c.id,
        "change": c.kind.as_str(),
        "oldLine": c.old_line,
        "newLine": c.new_line,
        "tokensBefore": c.tokens_before,
        "tokensAfter": c.tokens_after,
        "placeholders": c.placeholders,
    })
}

/// The rewrite in words: `13 entries changed (12 shaken, 1 edited); ~5,432 tokens left the
/// context (bytes/4)`.
fn summary(r: &Rewrite, tokenizer: &str) -> String {
    let kinds = [ChangeKind::Shaken, ChangeKind::Edited, ChangeKind::Added, ChangeKind::Removed];
    let parts: Vec<String> = kinds
        .iter()
        .map(|&k| (k, r.changes.iter().filter(|c| c.kind == k).count()))
        .filter(|&(_, n)| n > 0)
        .map(|(k, n)| format!("{n} {}", k.as_str()))
        .collect();
    let title = if r.title_changed { ", the title changed" } else { "" };
    let what = match parts.is_empty() {
        true if r.title_changed => "only the title changed".to_string(),
        true => "no entry changed".to_string(),
        false => format!("{} changed ({}){title}", plural(r.changes.len(), "entry"), parts.join(", ")),
    };
    format!("{what}; ~{} tokens left the context ({tokenizer})", thousands(r.tokens_removed()))
}

/// One row of the table of changed entries.
fn change_row(c: &Change) -> Vec<String> {
    let line = |l: Option<usize>| l.map_or("-".to_string(), |l| l.to_string());
    let mut put: String = c.placeholders.join(" ").chars().take(120).collect();
    if put.len() < c.placeholders.join(" ").len() {
        put.push('…');
    }
    vec![
        c.id.clone(),
        c.kind.as_str().to_string(),
        line(c.old_line),
        line(c.new_line),
        format!("~{}", thousands(c.tokens_before)),
        format!("~{}", thousands(c.tokens_after)),
        put,
    ]
}

const CHANGE_HEADER: [&str; 7] = ["ID", "CHANGE", "LINE A", "LINE B", "TOKENS A", "TOKENS B", "PUT IN"];

/// One rewrite of the file: version `n` replaced version `n - 1`.
struct Rewritten {
    n: usize,
    compared: Compared,
    /// Version `n` is an earlier version's bytes again, written back by `shake restore` (its
    /// number), not a rewrite by the host.
    restored: Option<usize>,
}

/// `shake log` on a session whose host rewrites its files: each version that rewrote the file,
/// newest first, by the host (the entries it changed and the tokens that left) or by `shake
/// restore` (an earlier version's bytes again, and the tokens that came back); `--json`: an
/// array of those.
pub fn log(ctx: &Context, rev: &RevArgs, host: &dyn Host, as_json: bool, out: &mut dyn Write) -> Result {
    let r = rev.rev();
    let title = host.kind().title();
    if r.entry.is_some() {
        return Err(HistoryError::LeafChosen { title }.into());
    }
    let v = Versions::of(ctx, r.session.as_deref())?;
    // Each version's bytes by their hash, the first version that had them: a rewrite to bytes an
    // earlier version had is a restore (shake writes them back whole; the host never does).
    let mut first_with: HashMap<blake3::Hash, usize> = HashMap::new();
    let mut rewrites = Vec::new();
    let mut old = None;
    let rewritten: Vec<bool> =
        (1..=v.chain.len()).map(|n| Ok(v.how(n)? == "rewritten")).collect::<Result<_, HistoryError>>()?;
    // Versions after the last rewrite are not read (none at all for a file never rewritten).
    let last = rewritten.iter().rposition(|&r| r).map_or(0, |i| i + 1);
    for n in 1..=last {
        let new = v.file(n)?;
        let hash = blake3::hash(new.raw());
        let earlier = first_with.get(&hash).copied();
        first_with.entry(hash).or_insert(n);
        if let Some(old) = old.as_ref().filter(|_| rewritten[n - 1]) {
            let compared = v.compare(ctx, (n - 1, old), (n, &new))?;
            rewrites.push(Rewritten { n, compared, restored: earlier });
        }
        old = Some(new);
    }
    rewrites.reverse();
    if as_json {
        let items: Vec<Value> = rewrites
            .iter()
            .map(|w| {
                let (n, r) = (w.n, &w.compared.rewrite);
                json!({
                    "from": n - 1,
                    "to": n,
                    "fromVersion": v.id(n - 1).map(|id| id.to_hex()).ok(),
                    "toVersion": v.id(n).map(|id| id.to_hex()).ok(),
                    "importedAt": v.imported_at(n),
                    "by": if w.restored.is_some() { "shake" } else { host.kind().as_str() },
                    "restored": w.restored,
                    "titleChanged": r.title_changed,
                    "shaken": r.shaken(),
                    "tokensRemoved": r.tokens_removed(),
                    "tokensRestored": r.tokens_restored(),
                    "tokenizer": w.compared.tokenizer,
                    "exact": w.compared.exact,
                    "changes": r.changes.iter().map(change_json).collect::<Vec<_>>(),
                })
            })
            .collect();
        write_json(out, &items)?;
        return Ok(0);
    }
    let paint = Paint::new(ctx);
    crate::render::write_session_line(out, ctx, &r, &v.path)?;
    let restores = rewrites.iter().filter(|w| w.restored.is_some()).count();
    let by_host = match rewrites.len() - restores {
        0 => "no rewrite".to_string(),
        k => plural(k, "rewrite"),
    };
    let by_shake = match restores {
        0 => String::new(),
        k => format!(", {} by shake", plural(k, "restore")),
    };
    writeln!(out, "{} imported; {by_host} by {title}{by_shake}.", plural(v.chain.len(), "version"))?;
    for w in &rewrites {
        let (n, r) = (w.n, &w.compared.rewrite);
        let when = paint.dim(&v.imported_at(n).unwrap_or_else(|| "time unknown".to_string())).to_string();
        match w.restored {
            Some(k) => writeln!(
                out,
                "{when} version {} → {n}: version {k} restored by shake; ~{} tokens came back to the context ({}).",
                n - 1,
                thousands(r.tokens_restored()),
                w.compared.tokenizer
            )?,
            None => writeln!(
                out,
                "{when} version {} → {n}: {}. Undo: shake restore --version {}",
                n - 1,
                summary(r, &w.compared.tokenizer),
                n - 1
            )?,
        }
        let rows: Vec<Vec<String>> = r.changes.iter().map(change_row).collect();
        if !rows.is_empty() {
            let mut text = Vec::new();
            table(&mut text, &CHANGE_HEADER, &rows, &[])?;
            for line in String::from_utf8_lossy(&text).lines() {
                writeln!(out, "    {line}")?;
            }
        }
    }
    Ok(0)
}

/// `shake diff SESSION@N SESSION@M`: what changed between two versions of a file its host
/// rewrites. Exit 0
/// when the versions are the same file, 1 when they differ.
pub fn diff(
    ctx: &Context,
    (a, na): (Option<&str>, usize),
    (b, nb): (Option<&str>, usize),
    how: &RecordArgs,
    out: &mut dyn Write,
) -> Result {
    let (va, vb) = (Versions::of(ctx, a)?, Versions::of(ctx, b)?);
    let (old, new) = (va.file(na)?, vb.file(nb)?);
    let (_, history) = va.host(na, &old)?;
    vb.host(nb, &new)?;
    let compared = history.compare(ctx, (&format!("version {na}"), &old), (&format!("version {nb}"), &new))?;
    let (r, tokenizer) = (&compared.rewrite, &compared.tokenizer);
    let same = old.raw() == new.raw();
    if how.for_people() {
        let mut text = Vec::new();
        for (name, v, n, file) in [("A", &va, na, &old), ("B", &vb, nb, &new)] {
            let when = v.imported_at(n).map_or(String::new(), |t| format!(", imported {t}"));
            writeln!(
                text,
                "{name}  {} version {n} of {} ({} bytes{when})",
                short_path(ctx, &v.path),
                v.chain.len(),
                thousands(file.raw().len() as u64)
            )?;
        }
        let line = if same {
            "Same file: nothing changed.".to_string()
        } else if r.appended {
            format!("B is A plus {} (an append, not a rewrite).", plural(r.changes.len(), "entry"))
        } else {
            format!("Rewritten: {}.", summary(r, tokenizer))
        };
        if !r.changes.is_empty() && !r.appended {
            table(&mut text, &CHANGE_HEADER, &r.changes.iter().map(change_row).collect::<Vec<_>>(), &[])?;
        }
        writeln!(text, "{}", Paint::new(ctx).strong(&line))?;
        return answer(Ok(u8::from(!same)), out.write_all(&text));
    }
    let written = json_or(
        out,
        how.json,
        || {
            json!({
                "a": va.side_json(na, old.raw().len()),
                "b": vb.side_json(nb, new.raw().len()),
                "appended": r.appended,
                "titleChanged": r.title_changed,
                "tokenizer": tokenizer,
                "exact": compared.exact,
                "tokensRemoved": r.tokens_removed(),
                "changes": r.changes.iter().map(change_json).collect::<Vec<_>>(),
                "same": same,
            })
        },
        |out| {
            let yes = |b: bool| if b { "yes" } else { "no" };
            let removed = r.tokens_removed().to_string();
            let (na, nb) = (na.to_string(), nb.to_string());
            write_record(
                out,
                &["versions", &na, &nb, yes(r.appended), yes(r.title_changed), &removed, tokenizer],
                how.nul,
            )?;
            let line = |l: Option<usize>| l.map_or("-".to_string(), |l| l.to_string());
            for c in &r.changes {
                let (before, after) = (c.tokens_before.to_string(), c.tokens_after.to_string());
                let fields = [c.kind.as_str(), &c.id, &line(c.old_line), &line(c.new_line), &before, &after];
                write_record(out, &fields, how.nul)?;
                for p in &c.placeholders {
                    write_record(out, &["put", &c.id, p], how.nul)?;
                }
            }
            Ok(())
        },
    );
    answer(Ok(u8::from(!same)), written)
}

//! Revisions: how a command line names a session and a leaf in it (`docs/revisions.md`).
//!
//! `REV` is a session file path, or a session id (or a unique prefix of one), or
//! `<machine>/<session id>` for a session fetched from another machine, optionally followed
//! by `:<entry-id>` (an entry id or a unique prefix). No suffix means pi's own leaf, the last entry
//! in file order. No `REV` at all means a host's own choice for the current directory (pi's
//! `--continue`; [`default_choice`] says which host's).

use std::path::{Path, PathBuf};

use crate::durable::FileError;
use crate::fork_record::RecordError;
use crate::host::error::HostError;
use crate::host::{Cycle, HostKind, Session, SessionFile};
use crate::store::StoreError;
use crate::Context;

/// Why a revision names no session or no leaf. The CLI's exit code and hints for each are the
/// command boundary's (`command_error.rs`).
#[derive(Debug, thiserror::Error)]
pub enum RevError {
    /// The session names a folder.
    #[error("{} is a directory, not a session file", path.display())]
    Folder {
        /// As the command line gave it.
        path: PathBuf,
    },
    /// The session names a FIFO, a device, a socket or a symlink loop.
    #[error("{}: not a regular file ({what}); a session file is one", path.display())]
    NotRegular {
        /// As the command line gave it.
        path: PathBuf,
        /// What it is.
        what: &'static str,
    },
    /// The session is a path (it has a `/` or ends in `.jsonl`) that names nothing.
    #[error("no such session file: {}", path.display())]
    NoFile {
        /// As the command line gave it.
        path: PathBuf,
    },
    /// A session id no session has.
    #[error("no session file or session id {id:?}")]
    NoSession {
        /// The id (prefix) given.
        id: String,
        /// Whether it is an entry of the session a command opens here without `REV`.
        entry_here: bool,
    },
    /// A session id prefix several sessions have.
    #[error("session id prefix {id:?} matches {} sessions: {}", files.len(), candidates(&shown(files)))]
    AmbiguousSession {
        /// The id (prefix) given.
        id: String,
        /// The session files that have it, sorted.
        files: Vec<PathBuf>,
        /// Whether each has the whole id (a copy, a session moved between projects).
        whole: bool,
    },
    /// No session here for a command without `REV`: the first host's refusal, after every
    /// other host had none either.
    #[error("{source}")]
    NoDefault {
        /// The first choice's error.
        source: HostError,
        /// The other hosts looked at, by title.
        others: Vec<&'static str>,
    },
    /// A session without entries has no leaf.
    #[error("{}: the session has no entries, so no leaf", crate::output::path(path))]
    NoLeaf {
        /// The session file.
        path: PathBuf,
    },
    /// The parent links loop on the way to the leaf.
    #[error("{}: {cycle}", crate::output::path(path))]
    Cycle {
        /// The session file.
        path: PathBuf,
        /// Where they loop.
        #[source]
        cycle: Cycle,
    },
    /// No entry has that id (prefix).
    #[error("{}: no entry {prefix:?}", crate::output::path(path))]
    NoEntry {
        /// The session file.
        path: PathBuf,
        /// The id (prefix) given.
        prefix: String,
    },
    /// Several entries have that id prefix.
    #[error("{}: entry prefix {prefix:?} is ambiguous: {}", crate::output::path(path), candidates(ids))]
    AmbiguousEntry {
        /// The session file.
        path: PathBuf,
        /// The id prefix given.
        prefix: String,
        /// The ids that have it, in file order.
        ids: Vec<String>,
    },
    /// The file's host refused it, or the default session's.
    #[error(transparent)]
    Host(#[from] HostError),
    /// The file could not be read.
    #[error(transparent)]
    File(#[from] FileError),
    /// The store, resolving `<machine>/<session>`.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The fork records of the file.
    #[error(transparent)]
    Record(#[from] RecordError),
}

/// What a revision's operation returns.
pub type Result<T, E = RevError> = std::result::Result<T, E>;

/// The `[REV]` and `--leaf` arguments every command that reads a leaf takes.
#[derive(Clone, Debug, Default)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct RevArgs {
    /// Session file, or session id (prefix), optionally `:<entry-id>`; default: the current session here (pi's, else oh-my-pi's)
    #[cfg_attr(feature = "cli", arg(value_name = "REV"))]
    pub rev: Option<String>,
    /// Leaf entry id (or unique prefix) to act on, e.g. pi's in-memory leaf after /tree
    #[cfg_attr(feature = "cli", arg(long, value_name = "ID"))]
    pub leaf: Option<String>,
}

/// A revision split into its session part and its entry part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rev {
    /// The session: a path or an id; `None` for pi's default session here.
    pub session: Option<String>,
    /// The entry id (prefix) naming the leaf; `None` for pi's leaf on load.
    pub entry: Option<String>,
}

impl RevArgs {
    /// Returns the revision these arguments name (`--leaf` wins over a `:` suffix).
    pub fn rev(&self) -> Rev {
        let mut rev = self.rev.as_deref().map(Rev::parse).unwrap_or(Rev { session: None, entry: None });
        if let Some(leaf) = &self.leaf {
            rev.entry = Some(leaf.clone());
        }
        rev
    }

    /// Finds and reads the session file these arguments name and, when a host accepts it,
    /// imports it into the store (incrementally; a store failure only warns). A file no host
    /// accepts is an error, and nothing of it is stored.
    ///
    /// A file of a host that appends (pi, oh-my-pi) whose last line is a shake batch cut short
    /// (a killed fold or undo) has that line ended first, and is read again: pi, still running,
    /// would otherwise write its next entry onto it (`append::end_torn_line`).
    pub fn load(&self, ctx: &Context) -> Result<(SessionFile, Rev)> {
        self.load_repairing(ctx, true)
    }

    /// [`RevArgs::load`] that never writes the file (a dry run's): a torn last line stays.
    pub fn load_as_is(&self, ctx: &Context) -> Result<(SessionFile, Rev)> {
        self.load_repairing(ctx, false)
    }

    fn load_repairing(&self, ctx: &Context, repair: bool) -> Result<(SessionFile, Rev)> {
        let rev = self.rev();
        let path = rev.session_path(ctx)?;
        let mut file = crate::hosts::read(&path).map_err(FileError::at(&path, "read"))?;
        let host = crate::hosts::detect(&file, ctx.host)?;
        if repair && matches!(host.writer(), crate::host::Writer::Append) {
            let snapshot = crate::append::Snapshot::of(file.raw());
            // Busy: the shake writing it now ends the line itself; Changed: someone wrote after it.
            if let Ok(true) = crate::append::end_torn_line(&path, &snapshot) {
                ctx.warn(format_args!(
                    "{}: the last line was a shake batch cut short (a killed write); shake ended it, so the entry pi appends next starts a line of its own (the next fold or undo completes the batch)",
                    crate::output::path(&path)
                ));
                file = crate::hosts::read(&path).map_err(FileError::at(&path, "read"))?;
            }
        }
        crate::store::touch::import_read(ctx, &file);
        Ok((file, rev))
    }
}

impl Rev {
    /// Splits `session[:entry]`. A string that is an existing file is all session: paths may
    /// hold `:`.
    pub fn parse(s: &str) -> Rev {
        if Path::new(s).is_file() {
            return Rev { session: Some(s.to_string()), entry: None };
        }
        match s.rsplit_once(':') {
            Some((session, entry)) if !entry.contains('/') => Rev {
                session: (!session.is_empty()).then(|| session.to_string()),
                entry: (!entry.is_empty()).then(|| entry.to_string()),
            },
            _ => Rev { session: Some(s.to_string()), entry: None },
        }
    }

    /// Returns the session file this revision names.
    pub fn session_path(&self, ctx: &Context) -> Result<PathBuf> {
        // `<machine>/<session>`: a session fetched from another machine (`docs/remotes.md`),
        // unless a file or folder here has that name.
        if let Some(s) = self.session.as_deref().filter(|s| s.contains('/') && !Path::new(s).exists()) {
            if let Some(path) = crate::remote::resolve(ctx, s)? {
                return Ok(path);
            }
        }
        match &self.session {
            None => default_session(ctx),
            Some(s) if Path::new(s).is_file() => Ok(PathBuf::from(s)),
            Some(s) if Path::new(s).is_dir() => Err(RevError::Folder { path: s.into() }),
            Some(s) if not_regular(Path::new(s)).is_some() => {
                let what = not_regular(Path::new(s)).unwrap_or_default();
                Err(RevError::NotRegular { path: s.into(), what })
            }
            Some(s) if s.contains('/') || s.ends_with(".jsonl") => Err(RevError::NoFile { path: s.into() }),
            Some(id) => session_by_id(ctx, id),
        }
    }

    /// Opens the revision in `file` (as [`RevArgs::load`] read it): loads it with its host
    /// (`--host`, else detection), prints its warnings, and resolves the leaf.
    pub fn open<'a>(&self, ctx: &Context, file: &'a SessionFile) -> Result<(Session<'a>, Option<usize>)> {
        let mut session = crate::hosts::load(file, ctx.host)?;
        session.choose_model(ctx.model.as_deref());
        crate::fork_record::attach(ctx, &mut session)?;
        session.warn(ctx);
        let leaf = self.leaf(&session)?;
        Ok((session, leaf))
    }

    /// Resolves the entry part to a leaf index in `session` (pi's leaf on load when absent).
    pub fn leaf(&self, session: &Session<'_>) -> Result<Option<usize>> {
        match &self.entry {
            None => Ok(session.default_leaf()),
            Some(prefix) => resolve_entry(session, prefix).map(Some),
        }
    }
}

/// What the path names when it is there but is neither a regular file nor a folder: a FIFO
/// (whose open would wait for a writer), a device, a socket, a symlink loop. `None` otherwise.
fn not_regular(path: &Path) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let kind = match std::fs::metadata(path) {
        Ok(meta) => meta.file_type(),
        Err(e) => return (e.raw_os_error() == Some(libc::ELOOP)).then_some("a symlink loop"),
    };
    Some(match () {
        _ if kind.is_fifo() => "a FIFO",
        _ if kind.is_char_device() => "a character device",
        _ if kind.is_block_device() => "a block device",
        _ if kind.is_socket() => "a socket",
        _ => return None,
    })
}

/// Splits `SESSION@N` (version N of a session file, numbered as `shake sessions --versions`
/// and `shake restore --version` number them; `@N` alone: the default session's). `None` when
/// the argument names no version: no `@` followed by digits only, or an existing file.
pub fn split_version(arg: &str) -> Option<(Option<&str>, usize)> {
    if Path::new(arg).is_file() {
        return None;
    }
    let (session, n) = arg.rsplit_once('@')?;
    let n = n.parse().ok().filter(|_| n.bytes().all(|b| b.is_ascii_digit()))?;
    Some(((!session.is_empty()).then_some(session), n))
}

/// Resolves a revision to its leaf and the root→leaf path; fails on an empty session or a cycle.
pub fn leaf_path(session: &Session<'_>, rev: &Rev) -> Result<(usize, Vec<usize>)> {
    let leaf = rev.leaf(session)?.ok_or_else(|| RevError::NoLeaf { path: session.file.path.clone() })?;
    Ok((leaf, path_of(session, leaf)?))
}

/// Returns the root→leaf path, or an error naming the entry and line where `parentId` loops.
pub fn path_of(session: &Session<'_>, leaf: usize) -> Result<Vec<usize>> {
    session.path(leaf).map_err(|cycle| RevError::Cycle { path: session.file.path.clone(), cycle })
}

/// Resolves an entry id or unique prefix to an entry index.
pub fn resolve_entry(session: &Session<'_>, prefix: &str) -> Result<usize> {
    if let Some(i) = session.index_of(prefix) {
        return Ok(i);
    }
    let mut hits = session.entries.iter().enumerate().filter(|(_, e)| e.id().starts_with(prefix));
    match (hits.next(), hits.next()) {
        (Some((i, _)), None) => Ok(i),
        (None, _) => Err(RevError::NoEntry { path: session.file.path.clone(), prefix: prefix.to_string() }),
        (Some(first), Some(second)) => {
            let rest: Vec<String> = hits.map(|(_, e)| e.id().to_string()).collect();
            let ids = [first.1.id().to_string(), second.1.id().to_string()].into_iter().chain(rest).collect::<Vec<_>>();
            Err(RevError::AmbiguousEntry { path: session.file.path.clone(), prefix: prefix.to_string(), ids })
        }
    }
}

/// The first few of several candidates, and how many more: `a1, a2, a3, a4, a5 and 3 more`.
fn candidates(all: &[String]) -> String {
    const SHOWN: usize = 5;
    let shown = all[..all.len().min(SHOWN)].join(", ");
    match all.len().saturating_sub(SHOWN) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}

/// Each path as a user reads it.
fn shown(paths: &[PathBuf]) -> Vec<String> {
    paths.iter().map(|p| crate::output::path(p).into_owned()).collect()
}

/// The error for a session id that names no session, and whether it is an entry of the default
/// session here (`shake show c38a1047`, as git would take it: the hint says how to name that).
fn no_session(ctx: &Context, id: &str) -> RevError {
    let default = default_session(ctx).ok();
    let entry_here = default.and_then(|path| crate::hosts::read(&path).ok()).is_some_and(|file| {
        crate::hosts::load(&file, ctx.host).is_ok_and(|s| s.entries.iter().any(|e| e.id().starts_with(id)))
    });
    RevError::NoSession { id: id.to_string(), entry_here }
}

/// The session a command without `REV` opens (`docs/revisions.md`, "Choosing the host").
pub fn default_session(ctx: &Context) -> Result<PathBuf> {
    default_choice(ctx).map(|(path, _)| path)
}

/// The session a command without `REV` opens, and the host whose choice it is: `--host`'s own
/// choice for this directory; else pi's when pi has a session here; else, among the other
/// hosts that have one here, the session modified last. With none anywhere, pi's error, with
/// a hint naming the other hosts looked at.
pub fn default_choice(ctx: &Context) -> Result<(PathBuf, HostKind)> {
    if let Some(kind) = ctx.host {
        return Ok((crate::hosts::of(kind)?.default_session(ctx)?, kind));
    }
    let first = crate::hosts::FIRST_CHOICE;
    let no_pi = match first.default_session(ctx) {
        Ok(path) => return Ok((path, first.kind())),
        Err(e) => e,
    };
    // A host that keeps no sessions folder (the tests' toy one) has no session here to look at.
    let others = crate::hosts::HOSTS.iter().filter(|h| h.kind() != first.kind() && !h.session_roots(ctx).is_empty());
    let newest = others
        .clone()
        .filter_map(|h| h.default_session(ctx).ok().map(|path| (path, h.kind())))
        .filter_map(|(path, kind)| Some((path.metadata().and_then(|m| m.modified()).ok()?, path, kind)))
        .max_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    match newest {
        Some((_, path, kind)) => Ok((path, kind)),
        None => Err(RevError::NoDefault { source: no_pi, others: others.map(|h| h.kind().title()).collect() }),
    }
}

/// Finds a session file by session id or unique prefix: among the store's imported sessions
/// whose file still exists, and under every host's session folders. A store that cannot be read is
/// skipped here (`shake fsck` reports it), so a damaged store never hides a session file.
fn session_by_id(ctx: &Context, id: &str) -> Result<PathBuf> {
    let imported = crate::store::Store::open(ctx).and_then(|store| store.sessions()).unwrap_or_default();
    let mut hits: Vec<PathBuf> = imported
        .into_iter()
        .filter(|s| s.session_id.as_deref().is_some_and(|sid| sid.starts_with(id)) && s.path.is_file())
        .map(|s| s.path)
        .collect();
    for host in crate::hosts::HOSTS.iter().filter(|h| ctx.host.is_none_or(|k| k == h.kind())) {
        for root in host.session_roots(ctx) {
            for entry in walkdir::WalkDir::new(&root).max_depth(2).into_iter().filter_map(|e| e.ok()) {
                let name = entry.file_name().to_string_lossy();
                if host.session_id_of_file(&name).is_some_and(|sid| sid.starts_with(id)) {
                    hits.push(std::fs::canonicalize(entry.path()).unwrap_or(entry.into_path()));
                }
            }
        }
    }
    hits.sort();
    hits.dedup();
    match hits.len() {
        1 => Ok(hits.remove(0)),
        0 => Err(no_session(ctx, id)),
        _ => {
            // A whole id in two files (a copy, a session moved between projects): more of
            // the id cannot pick one, its path can.
            let whole = hits.iter().all(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| crate::hosts::HOSTS.iter().any(|h| h.session_id_of_file(n).as_deref() == Some(id)))
            });
            Err(RevError::AmbiguousSession { id: id.to_string(), files: hits, whole })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_entry_suffix() {
        assert_eq!(Rev::parse("abc:12ef"), Rev { session: Some("abc".into()), entry: Some("12ef".into()) });
        assert_eq!(Rev::parse(":12ef"), Rev { session: None, entry: Some("12ef".into()) });
        assert_eq!(Rev::parse("abc"), Rev { session: Some("abc".into()), entry: None });
        assert_eq!(Rev::parse("./x:y/z.jsonl"), Rev { session: Some("./x:y/z.jsonl".into()), entry: None });
    }

    #[test]
    fn splits_version_suffix() {
        assert_eq!(split_version("a/b.jsonl@3"), Some((Some("a/b.jsonl"), 3)));
        assert_eq!(split_version("@12"), Some((None, 12)));
        assert_eq!(split_version("0194f5a0@1"), Some((Some("0194f5a0"), 1)));
        for no in ["a/b.jsonl", "x@", "x@+1", "x@1a", "abc:12ef"] {
            assert_eq!(split_version(no), None, "{no}");
        }
    }
}

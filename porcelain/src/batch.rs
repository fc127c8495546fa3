//! Writing a fold or undo back: the checks before planning, and one batch (the log entry first,
//! listing the edit ids it announces, then the edits, chained) appended by the safe writer.
//!
//! The log entry comes first so a batch cut short at any byte is recognisable: a log entry whose
//! announced edits are missing from the path (see [`crate::wall::Torn`]), or a torn last line.

use std::collections::HashMap;
use std::path::PathBuf;

use shake_plumbing::append::{self, ending, recently_written, AppendError, Ending, Snapshot};
use shake_plumbing::durable::FileError;
use shake_plumbing::fork_record::RecordError;
use shake_plumbing::host::error::HostError;
use shake_plumbing::host::{Appender, Session, SessionFile, View, Writer};
use shake_plumbing::output::path as shown;
use shake_plumbing::rev::{Rev, RevArgs, RevError};
use shake_plumbing::Context;

use crate::log_entry::{self, LogData, CUSTOM_TYPE};
use crate::overlay::{self, AfterWrite, Landed};
use crate::plan::TargetEdit;
use crate::render::Paint;
use crate::wall::{Appended, Wall};

/// Why a fold or undo is not written (the hosts', the store's records' and the safe writer's
/// errors pass through as theirs). The commands give the exit code and the hints
/// (`cmd/command_error.rs`).
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// `--in-place` on a host that always writes in place, by appending.
    #[error("{}: --in-place is for the sessions a fold writes anew ({forks}); a {title} session is always written in place, by appending", shown(path))]
    InPlaceAppends {
        /// The session file.
        path: PathBuf,
        /// The hosts whose folds are new sessions, by title.
        forks: String,
        /// The session's host, by title.
        title: &'static str,
    },
    /// `--in-place` without `--force`.
    #[error("{}: --in-place rewrites the {word} itself, and nobody can tell from outside whether a running {title} has it open: one that has keeps sending the originals it holds in memory, and may write the file again over the fold", shown(path))]
    InPlaceUnforced {
        /// The session file.
        path: PathBuf,
        /// What the host calls its file.
        word: &'static str,
        /// The session's host, by title.
        title: &'static str,
    },
    /// The session has no entry to write after.
    #[error("{}: the session has no entries", shown(path))]
    NoEntries {
        /// The session file.
        path: PathBuf,
    },
    /// The view has no leaf to write after.
    #[error("{}: no leaf to write after", shown(path))]
    NoLeaf {
        /// The session file.
        path: PathBuf,
    },
    /// A session fetched from another machine.
    #[error("{}: fetched from machine {machine}, read-only here", shown(path))]
    Fetched {
        /// The session file.
        path: PathBuf,
        /// The machine it is from.
        machine: String,
    },
    /// A session of a format version its host rewrites on open.
    #[error(
        "{}: a version {version} session; pi migrates and rewrites such a file (with new entry ids) when it opens it",
        shown(path)
    )]
    NeedsMigration {
        /// The session file.
        path: PathBuf,
        /// Its format version.
        version: u64,
    },
    /// Another program wrote the file moments ago.
    #[error("{} was written {secs}s ago by another program: if {title} has this session open, its next message would put this change on a side branch", shown(path))]
    Live {
        /// The session file.
        path: PathBuf,
        /// How long ago, in seconds.
        secs: u64,
        /// The session's host, by title.
        title: &'static str,
    },
    /// The write would move the host's resume point to another branch.
    #[error("{}: writing after {leaf} moves {title}'s resume point: {title} resumes a session at its last entry, which would be this batch, on the branch ending at {leaf} instead of {resume}", shown(path))]
    MovesResumePoint {
        /// The session file.
        path: PathBuf,
        /// The session's host, by title.
        title: &'static str,
        /// The entry written after.
        leaf: String,
        /// The entry the host resumes at now.
        resume: String,
    },
    /// The host appended again after the batch was written anew.
    #[error(
        "{}: pi keeps appending to this session; the batch was not applied (pi's entries are all on its branch)",
        shown(path)
    )]
    KeepsAppending {
        /// The session file.
        path: PathBuf,
    },
    /// The host appended after every copy of the batch.
    #[error(
        "{}: pi kept appending while shake wrote; the batch is on a side branch, pi's entries on its own",
        shown(path)
    )]
    KeptAppending {
        /// The session file.
        path: PathBuf,
    },
    /// The log entry does not encode as JSON.
    #[error("cannot encode the log entry: {0}")]
    Encode(serde_json::Error),
    /// The session named does not resolve or read.
    #[error(transparent)]
    Rev(#[from] RevError),
    /// The host refuses, or does not read the session.
    #[error(transparent)]
    Host(#[from] HostError),
    /// The store's records of a fork do not read.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The safe writer refused or failed.
    #[error(transparent)]
    Append(#[from] AppendError),
    /// The system refused a step.
    #[error(transparent)]
    File(#[from] FileError),
}

type Result<T, E = BatchError> = std::result::Result<T, E>;

/// The arguments every command that appends takes.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct WriteArgs {
    /// Session file, or session id (prefix), optionally `:<entry-id>`; default: the current session here (pi's, else oh-my-pi's or Claude Code's)
    #[arg(value_name = "REV")]
    pub rev: Option<String>,
    /// Act on the branch ending at this entry (id or prefix) instead of pi's leaf, e.g. pi's in-memory leaf; pi then resumes that branch
    #[arg(long, visible_alias = "leaf", value_name = "REV")]
    pub branch: Option<String>,
    /// Print what would happen, prefixed "[dry-run]", and change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Print the batch for a host to append with its own writer (JSON: edits, log, tokens, message; docs/pi.md), and change nothing
    #[arg(long, conflicts_with = "dry_run")]
    pub plan: bool,
    /// Print JSON instead of a sentence
    #[arg(long)]
    pub json: bool,
    /// Write although another program wrote the file in the last 30 s (pi may have it open), or the write moves pi's resume point to another branch; with --in-place, rewrite a transcript a running Claude Code may have open
    #[arg(long)]
    pub force: bool,
}

impl WriteArgs {
    /// Reads the session file these arguments name.
    pub fn load(&self, ctx: &Context) -> Result<(SessionFile, Rev), RevError> {
        let leaf = self.branch.as_deref().map(|b| b.rsplit(':').next().unwrap_or(b).to_string());
        let rev = RevArgs { rev: self.rev.clone(), leaf };
        // A dry run changes nothing, not even a torn line's end (it says the real run repairs it).
        Ok(match self.dry_run {
            true => rev.load_as_is(ctx)?,
            false => rev.load(ctx)?,
        })
    }
}

/// `--in-place --force`: write a fold or undo of a Claude Code transcript into the transcript
/// itself rather than into a new session.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct InPlaceArgs {
    /// Claude Code: rewrite the transcript itself (temporary file, rename) instead of writing a new session; needs --force
    #[arg(long)]
    pub in_place: bool,
}

impl InPlaceArgs {
    /// Whether to write into `session`'s file itself; refuses `--in-place` on a host that
    /// appends, and without `force` unless nothing is written (`dry_run`).
    pub fn check(&self, session: &Session<'_>, force: bool, dry_run: bool) -> Result<bool> {
        if !self.in_place {
            return Ok(false);
        }
        let (path, title) = (session.file.path.clone(), session.kind.title());
        let writer = session.host().writer();
        if let Some(refused) = writer.refusal(session) {
            return Err(refused.into());
        }
        let word = match writer {
            Writer::Fork(forks) => forks.file_word(),
            // Refused above.
            Writer::ReadOnly { .. } => "session file",
            Writer::Append => {
                let forks: Vec<&str> = (shake_plumbing::hosts::HOSTS.iter())
                    .filter(|h| matches!(h.writer(), Writer::Fork(_)))
                    .map(|h| h.kind().title())
                    .collect();
                return Err(BatchError::InPlaceAppends { path, forks: forks.join(", "), title });
            }
        };
        if !force && !dry_run {
            return Err(BatchError::InPlaceUnforced { path, word, title });
        }
        Ok(true)
    }
}

/// Loads the session a fold or undo writes, with the store's records attached: the session, the
/// leaf it writes after ([`write_leaf`]) and whether it writes into the file itself
/// ([`InPlaceArgs::check`]).
pub fn open<'a>(
    ctx: &Context,
    file: &'a SessionFile,
    rev: &Rev,
    write: &WriteArgs,
    in_place: &InPlaceArgs,
) -> Result<(Session<'a>, usize, bool)> {
    let mut session = shake_plumbing::hosts::load(file, ctx.host)?;
    session.choose_model(ctx.model.as_deref());
    shake_plumbing::fork_record::attach(ctx, &mut session)?;
    let no_write = write.dry_run || write.plan;
    let leaf = write_leaf(ctx, &session, rev, no_write)?;
    let in_place = in_place.check(&session, write.force, no_write)?;
    Ok((session, leaf, in_place))
}

/// Returns the leaf a write acts on, after telling the session's warnings and refusing files
/// shake must not append to. A leaf named on the command line (`--branch X`, `:X`) stands for
/// its branch: when shake already wrote batches after it, the write acts at their end
/// ([`after_batches`]), so folding the same branch twice folds nothing the second time.
pub fn write_leaf(ctx: &Context, session: &Session<'_>, rev: &Rev, dry_run: bool) -> Result<usize> {
    session.warn(ctx);
    check_writable(ctx, session, dry_run)?;
    let leaf = rev.leaf(session)?.ok_or_else(|| BatchError::NoEntries { path: session.file.path.clone() })?;
    Ok(if rev.entry.is_some() { after_batches(session, leaf) } else { leaf })
}

/// Follows the shake batches written after entry `leaf`: the latest log entry whose parent it
/// is, then that log's own edits, chained; again from their end, until no batch follows.
/// Returns `leaf` itself when no shake batch was written after it.
pub fn after_batches(session: &Session<'_>, mut leaf: usize) -> usize {
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); session.entries.len()];
    for i in 0..session.entries.len() {
        if let Some(p) = session.parent_of(i).filter(|&p| p != i) {
            children[p].push(i);
        }
    }
    // Each step moves to a later entry in file order, so the walk ends.
    while let Some((log, data)) =
        children[leaf].iter().rev().find_map(|&c| log_entry::parse(session, c).map(|d| (c, d)))
    {
        let edits = data.edit_ids();
        leaf = log;
        while let Some(&next) = children[leaf].iter().rev().find(|&&c| edits.contains(&session.entries[c].id())) {
            leaf = next;
        }
    }
    leaf
}

/// What a write did.
#[derive(Debug, Default)]
pub struct Outcome {
    /// What the store has still to learn of the batch appended (none for a dry run or when
    /// nothing was written): left for [`write_then_store`] to store once the session is let go,
    /// so the import never holds its memory on top of the session's.
    pub after: Option<AfterWrite>,
    /// Ids appended, log entry first (empty for a dry run or when there was nothing to do).
    pub appended: Vec<String>,
    /// A half-written batch was (or, in a dry run, would be) repaired.
    pub repaired: bool,
    /// The leaf was not pi's leaf on load, so pi now resumes this branch.
    pub moved: bool,
}

/// Writes a fold or undo batch unless it is a dry run: `edits`, and the log entry `data`
/// builds (from the view, and the ids of the half-written batches it repairs). With no edits it
/// writes only when there is something to repair. `projection` is the command's view at the
/// leaf written after, `wall` its wall; the overlay at the batch's end is derived from them, not
/// projected again, and left with the import in [`Outcome::after`] for the caller to store.
/// Both are let go before the batch's bytes are made: an undo's batch carries every restored
/// content, as large again as the view and the wall.
pub fn commit<'d>(
    ctx: &Context,
    projection: View<'_, '_>,
    args: &WriteArgs,
    wall: Wall,
    edits: &[TargetEdit],
    data: impl FnOnce(&View<'_, '_>, Vec<String>) -> LogData<'d>,
) -> Result<Outcome> {
    let session = projection.session;
    let leaf = projection.leaf.ok_or_else(|| BatchError::NoLeaf { path: session.file.path.clone() })?;
    let repairs: Vec<String> = wall.torn.iter().map(|t| t.log.clone()).collect();
    let repaired = !repairs.is_empty() || torn_last_line(session.file);
    let writes = !edits.is_empty() || repaired;
    // pi's resume point moves only when a batch is (or, in a dry run, would be) appended.
    let moved = writes && session.default_leaf() != Some(leaf);
    let mut outcome = Outcome { after: None, appended: Vec::new(), repaired, moved };
    if writes {
        // A session fetched from another machine is that machine's to change: a fold here would
        // be overwritten by the next fetch (`docs/remotes.md`).
        if let Some(machine) = shake_plumbing::remote::machine_of(&ctx.store_dir, &session.file.path) {
            return Err(BatchError::Fetched { path: session.file.path.clone(), machine });
        }
        // A dry run says what the real run does: a host that never writes (oh-my-pi) refuses
        // both, in its own words.
        if let Some(refused) = session.host().writer().refusal(session) {
            return Err(refused.into());
        }
        // Decided before anything is written, and the same in a dry run: the real run refuses.
        if !args.force {
            refuse_live(ctx, session)?;
            if moved {
                return Err(moves_resume_point(session, leaf));
            }
        }
    }
    if !args.dry_run && writes {
        let batch = Prepared::new(session, data(&projection, repairs), edits)?;
        // The overlay at the batch's end, for a batch that lands right after the last line read,
        // as it does unless another writer comes in between (then it is not used). The file ends
        // with a newline, so the log entry's line is the one after its last.
        let overlay = (ending(session.file.raw()) == Ending::Clean)
            .then(|| {
                let log = Appended { log: &batch.ids[0], line: session.file.lines.len() + 1, data: &batch.data };
                overlay::after_batch(&projection, &wall, &log, &batch.ids)
            })
            .flatten();
        drop((projection, wall));
        let written = write(ctx, session, leaf, batch, edits)?;
        outcome.appended = written.ids.clone();
        let landed = written.batch.zip(overlay);
        outcome.after = Some(AfterWrite::new(session.file.path.clone(), landed, written.ids));
    }
    Ok(outcome)
}

/// What a write leaves for the store to learn once the command has let go of what it read.
pub enum Leftover {
    /// Nothing (a dry run, a plan for a host, nothing to write).
    Nothing,
    /// A batch appended to the session file ([`Outcome::after`]; boxed: it is large, the
    /// others are not).
    Appended(Option<Box<AfterWrite>>),
    /// A new session file written (a fork host's fold or undo), to import.
    Written(Option<PathBuf>),
}

/// Runs a fold's or undo's `work` on the session file read, then stores what it left. `work`
/// makes the session, view, wall and plan as its own locals: they are let go when it returns
/// (the last made first, each before what it borrows), then the file, and only then is the
/// write imported, so the import's memory never adds to theirs and the command never maps two
/// files. `work` says what it wrote in its `Leftover` as soon as it has written it: whatever it
/// returns after (a report that failed to print), the write is stored.
pub fn write_then_store<T>(ctx: &Context, file: SessionFile, work: impl FnOnce(&SessionFile, &mut Leftover) -> T) -> T {
    let mut leftover = Leftover::Nothing;
    let result = work(&file, &mut leftover);
    drop(file);
    match leftover {
        Leftover::Nothing | Leftover::Appended(None) | Leftover::Written(None) => {}
        Leftover::Appended(Some(after)) => after.store(ctx),
        Leftover::Written(Some(path)) => {
            shake_plumbing::store::touch::import(ctx, &path);
        }
    }
    result
}

/// Refuses files shake must not append to: v1/v2 sessions (pi rewrites them on open) and files
/// ending in a partial line shake did not write. A dry run only warns about the latter.
pub fn check_writable(ctx: &Context, session: &Session<'_>, dry_run: bool) -> Result<()> {
    if session.needs_migration() {
        let version = session.version().unwrap_or_default();
        return Err(BatchError::NeedsMigration { path: session.file.path.clone(), version });
    }
    if ending(session.file.raw()) == Ending::Partial {
        let err = append::partial_line(&session.file.path);
        if !dry_run {
            return Err(err.into());
        }
        ctx.warn(shake_plumbing::output::chain(&err));
    }
    Ok(())
}

/// Refuses a write into a file another program wrote in the last [`append::LIVE_WINDOW`]: pi
/// may have it open, and its next message would put the batch on a side branch. shake's own
/// last write does not count (recorded, or a batch a kill cut short: the file then ends in a
/// shake line). Decided before writing, as git refuses with `index.lock`.
fn refuse_live(ctx: &Context, session: &Session<'_>) -> Result<()> {
    let path = &session.file.path;
    let title = session.kind.title();
    let shakes = || shake_plumbing::own_write::is_last(ctx, path) || append::last_line_is_shakes(session.file.raw());
    match recently_written(path).filter(|_| !shakes()) {
        None => Ok(()),
        Some(age) => Err(BatchError::Live { path: path.clone(), secs: age.as_secs(), title }),
    }
}

/// The refusal of a write at a leaf that is not the host's leaf on load: a host that appends
/// resumes a session at its last entry, and the batch would become that, on another branch.
fn moves_resume_point(session: &Session<'_>, leaf: usize) -> BatchError {
    let resume = session.default_leaf().map(|i| session.entries[i].id()).unwrap_or_default();
    BatchError::MovesResumePoint {
        path: session.file.path.clone(),
        title: session.kind.title(),
        leaf: session.entries[leaf].id().to_string(),
        resume: resume.to_string(),
    }
}

/// Tells whether the file ends in a line a shake batch left half-written.
pub fn torn_last_line(file: &SessionFile) -> bool {
    ending(file.raw()) == Ending::TornShakeLine
}

/// What [`write()`] appended.
struct Written {
    /// Ids appended, log entry first.
    ids: Vec<String>,
    /// The batch, when it landed right after the bytes the command read, chained from its leaf
    /// (no other writer in between): the overlay at its end is derived from it.
    batch: Option<Landed>,
}

/// How often a batch that landed off the branch of a concurrent writer's entries is written again.
const RECHAIN_ATTEMPTS: usize = 5;

/// Appends one batch after entry `leaf`: the log entry (its targets' `edit` fields filled in
/// with fresh ids), then one `context_edit` per `(target id, content)`. Returns the ids
/// appended, log entry first.
///
/// pi takes no lock: if it appended entries between the writer's check and its write, the
/// batch lands after them but chains from `leaf`, and pi would resume at shake's last edit
/// without its own new messages. Then the batch is written again, chained from pi's last
/// entry, so pi's entries stay on the branch; the first copy stays behind on a side branch.
/// After each copy the file is read again and pi's last entry looked for anew: pi may append
/// right after a copy as well as before it.
/// The store remembers the write as shake's own (no "pi may have it open" warning next time).
fn write(ctx: &Context, session: &Session<'_>, leaf: usize, batch: Prepared, edits: &[TargetEdit]) -> Result<Written> {
    let written = append_batch(ctx, session, leaf, batch, edits)?;
    shake_plumbing::own_write::record(ctx, &session.file.path);
    Ok(written)
}

/// [`write()`]'s append, re-chained after a concurrent writer's entries.
fn append_batch(
    ctx: &Context,
    session: &Session<'_>,
    leaf: usize,
    batch: Prepared,
    edits: &[TargetEdit],
) -> Result<Written> {
    let path = &session.file.path;
    let leaf_id = session.entries[leaf].id().to_string();
    let bytes = batch.bytes(&leaf_id, edits)?;
    let mut landed = append::append(path, &Snapshot::of_file(session.file), &bytes)?;
    let Prepared { ids, data: logged, .. } = batch;
    if landed.foreign.is_none() && ending(session.file.raw()) == Ending::Clean {
        let lines = bytes.into();
        return Ok(Written { ids, batch: Some(Landed { lines, parent: leaf_id, append: landed }) });
    }
    let written = |ids| Ok(Written { ids, batch: None });
    let (mut ids, mut logged) = (ids, logged);
    // Where the plan was made, and the bytes of every copy of the batch written since: any
    // other entry after that point is pi's, wherever it landed (before a copy or after it).
    let planned = session.file.raw().len() as u64;
    let first = landed.len - bytes.len() as u64..landed.len;
    let mut ours = vec![first];
    for attempt in 0..=RECHAIN_ATTEMPTS {
        let file = shake_plumbing::hosts::read(path).map_err(FileError::at(path, "re-read"))?;
        let now = session.host().load(&file)?;
        let starts = |e: &shake_plumbing::host::Node<'_>| file.lines[e.line() - 1].raw.start as u64;
        let theirs = |e: &shake_plumbing::host::Node<'_>| {
            let at = starts(e);
            at >= planned && !ours.iter().any(|r| r.contains(&at))
        };
        let Some(last) = now.entries.iter().rposition(theirs) else {
            // Only blank or unreadable lines came in between: the branch is what was planned.
            return written(ids);
        };
        let on_branch = now.path(last).is_ok_and(|p| p.iter().any(|&i| now.entries[i].id() == leaf_id));
        if !on_branch {
            ctx.warn(format_args!(
                "{}: another program appended entries on another branch while shake was writing; pi now resumes shake's branch",
                shake_plumbing::output::path(path)
            ));
            return written(ids);
        }
        // Done when pi resumes at the batch's end (the file's last entry) with its own last
        // entry on that branch; pi may have appended after a copy as well as before it.
        let end = now.entries.len() - 1;
        let resumed = now.entries[end].id() == ids[ids.len() - 1] && now.path(end).is_ok_and(|p| p.contains(&last));
        if resumed {
            return written(ids);
        }
        if attempt == RECHAIN_ATTEMPTS {
            break;
        }
        let pi_leaf = now.entries[last].id().to_string();
        ctx.warn(format_args!(
            "{}: pi appended entries while shake was writing; the batch is written again after {pi_leaf} so they stay on the branch",
            shake_plumbing::output::path(path)
        ));
        let batch = Prepared::new(&now, logged, edits)?;
        let again = batch.bytes(&pi_leaf, edits)?;
        (ids, logged) = (batch.ids, batch.data);
        landed = match append::append(path, &Snapshot::of(file.raw()), &again) {
            Ok(landed) => landed,
            // pi wrote again after the re-read: its newest entries are the file's last, so they
            // are on the branch pi resumes; shake's batch is on a side branch, not applied.
            Err(AppendError::Changed { .. }) => return Err(BatchError::KeepsAppending { path: path.clone() }),
            Err(e) => return Err(e.into()),
        };
        ours.push(landed.len - again.len() as u64..landed.len);
    }
    Err(BatchError::KeptAppending { path: path.clone() })
}

/// A batch before its bytes are made: its ids, fresh in the session it is appended to (the log
/// entry's first), and the log entry's data with each target's `edit` filled in.
struct Prepared<'d> {
    writer: Box<dyn Appender>,
    ids: Vec<String>,
    data: LogData<'d>,
}

impl<'d> Prepared<'d> {
    /// The ids and log data of a batch of `edits` for `session`.
    fn new(session: &Session<'_>, mut data: LogData<'d>, edits: &[TargetEdit]) -> Result<Prepared<'d>> {
        let mut writer = session.appender()?;
        let mut ids = Vec::with_capacity(edits.len() + 1);
        ids.push(writer.fresh_id(session));
        ids.extend(edits.iter().map(|_| writer.fresh_id(session)));
        let edit_ids: HashMap<&str, &str, foldhash::fast::RandomState> =
            edits.iter().zip(&ids[1..]).map(|(e, id)| (&*e.target, id.as_str())).collect();
        for t in &mut data.targets {
            t.edit = edit_ids.get(&*t.id).map_or_else(String::new, |id| id.to_string()).into();
        }
        Ok(Prepared { writer, ids, data })
    }

    /// The batch's bytes chained from `parent`: the log entry, then the edits, a line each.
    fn bytes(&self, parent: &str, edits: &[TargetEdit]) -> Result<Vec<u8>> {
        // Serialised straight from the data (no `Value` tree of every target).
        let json = serde_json::value::to_raw_value(&self.data).map_err(BatchError::Encode)?;
        // One buffer for the batch, each line written into it as it is made.
        let contents: usize = edits.iter().map(|e| e.content.get().len() + 160).sum();
        let mut bytes = Vec::with_capacity(json.get().len() + 160 + contents);
        let ids = &self.ids;
        self.writer.log_line(&mut bytes, &ids[0], Some(parent), CUSTOM_TYPE, &json);
        bytes.push(b'\n');
        for (k, e) in edits.iter().enumerate() {
            self.writer.edit_line(&mut bytes, &ids[k + 1], Some(&ids[k]), &e.target, &e.content);
            bytes.push(b'\n');
        }
        Ok(bytes)
    }
}

/// Prints the lines that follow a fold's or undo's sentence: a repair, a moved resume point.
pub fn notices(
    out: &mut dyn std::io::Write,
    paint: Paint,
    outcome: &Outcome,
    dry_run: bool,
    leaf: &str,
) -> std::io::Result<()> {
    if outcome.repaired && !dry_run {
        writeln!(out, "Repaired a half-written shake batch (see `shake status`).")?;
    } else if outcome.repaired {
        writeln!(out, "A half-written shake batch is on this branch; the real run repairs it.")?;
    }
    if outcome.moved {
        writeln!(out, "{}", paint.warn(&resume_notice(dry_run, leaf)))?;
    }
    Ok(())
}

/// The sentence for a write at a leaf that is not pi's leaf on load.
fn resume_notice(dry_run: bool, leaf: &str) -> String {
    let verb = if dry_run { "would resume" } else { "will now resume" };
    format!(
        "pi {verb} this branch (after {leaf}) the next time it opens the session: the appended entries become the file's last entries."
    )
}

//! `shake audit fork`: did a fork carry the folds it should? For each fold on the source path
//! up to the fork point and each fold made in the fork: carried, changed, dropped or new; and
//! whether each folded target's original is still in the fork's file (`docs/plumbing.md`).
//! Between Claude Code transcripts the folds are the fork records in the store and an original
//! is the file a fork's placeholder points at ([`forked_verdicts`]).

use std::collections::HashSet;
use std::io::Write;

use serde_json::{json, Value};
use shake_plumbing::host::{Session, Writer};
use shake_plumbing::output::{answer, json_or, write_record};
use shake_plumbing::{Context, Error, Result};

use super::fold_of;
use crate::leaf::{id_of, with_two_leaves, LeafView, Shared};
use crate::log_entry::{self, LogData, Op};

/// Check that a fork carried the source's folds and that every folded original is recoverable in it
#[derive(clap::Args, Debug)]
pub struct ForkArgs {
    /// The source leaf: SESSION[:ENTRY] (default entry: the agent's leaf on load)
    #[arg(value_name = "SOURCE_REV")]
    pub source: String,
    /// The fork's leaf: SESSION[:ENTRY], in another session or the same one
    #[arg(value_name = "FORK_REV")]
    pub fork: String,
    /// Print JSON: {"source","fork","shared","forkPoint","folds":[{"log","status","sourceLine","forkLine","targets"}],"consistent"}
    #[arg(long, conflicts_with = "nul")]
    pub json: bool,
    /// End every field with NUL and print ids verbatim
    #[arg(short = 'z', id = "nul")]
    pub nul: bool,
}

/// What became of one fold in the fork.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// On both paths, with the same log data and the same edits.
    Carried,
    /// On both paths, but its log data or one of its edits differs.
    Changed,
    /// On the source path at or before the fork point, missing from the fork's path.
    Dropped,
    /// On the source path after the fork point: made after the fork, not expected in it.
    Later,
    /// Only on the fork's path.
    New,
}

impl Status {
    /// The word used in output.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Carried => "carried",
            Status::Changed => "changed",
            Status::Dropped => "dropped",
            Status::Later => "later",
            Status::New => "new",
        }
    }
}

/// Whether one folded target's original content is in the fork's file.
struct Original {
    id: String,
    /// Why it is not recoverable; `None` when it is.
    problem: Option<&'static str>,
    /// The fork's line for the target is byte-identical to the source's.
    same_line: bool,
}

/// One fold's verdict.
struct Verdict {
    log: String,
    status: Status,
    source_line: Option<usize>,
    fork_line: Option<usize>,
    targets: Vec<Original>,
}

impl Verdict {
    fn is_difference(&self) -> bool {
        matches!(self.status, Status::Changed | Status::Dropped) || self.targets.iter().any(|t| t.problem.is_some())
    }
}

/// Runs `shake audit fork`.
pub fn run(ctx: &Context, args: &ForkArgs, out: &mut dyn Write) -> Result {
    with_two_leaves(ctx, &args.source, &args.fork, |source, fork| report(source, fork, args, out))
}

fn report(source: &LeafView<'_, '_>, fork: &LeafView<'_, '_>, args: &ForkArgs, out: &mut dyn Write) -> Result {
    let fork_point = fork_point(source, fork);
    if fork_point.is_none() {
        return Err(Error::user(format!(
            "{} is not a fork of {}: no entry of the source path is on the fork's path",
            fork.session().file.display(),
            source.session().file.display()
        )));
    }
    let forks = [source.session().host(), fork.session().host()].iter().all(|h| matches!(h.writer(), Writer::Fork(_)));
    let verdicts = match forks {
        true => forked_verdicts(source, fork),
        false => verdicts(source, fork, fork_point),
    };
    let consistent = !verdicts.iter().any(Verdict::is_difference);
    let shared = Shared::of(source, fork);
    let json = || {
        json!({
            "source": source.describe(),
            "fork": fork.describe(),
            "shared": shared.json(),
            "forkPoint": fork_point.map(|p| id_of(source.session(), source.path()[p])),
            "folds": verdicts.iter().map(verdict_json).collect::<Vec<_>>(),
            "consistent": consistent,
        })
    };
    let records = |out: &mut dyn Write| {
        shared.write_record(out, args.nul)?;
        for v in &verdicts {
            let lost = v.targets.iter().filter(|t| t.problem.is_some()).count();
            write_record(out, &[v.status.as_str(), &v.log, &v.targets.len().to_string(), &lost.to_string()], args.nul)?;
            for t in &v.targets {
                if let Some(problem) = t.problem {
                    write_record(out, &["!", &v.log, &t.id, problem], args.nul)?;
                }
            }
        }
        Ok(())
    };
    answer(Ok(u8::from(!consistent)), json_or(out, args.json, json, records))
}

/// The position on the source path of the last entry whose id is on the fork's path: where the
/// fork left the source (pi's forks keep entry ids, even where they re-chain around labels).
fn fork_point(source: &LeafView<'_, '_>, fork: &LeafView<'_, '_>) -> Option<usize> {
    let in_fork = fork.path_ids();
    source.path().iter().rposition(|&i| in_fork.contains(id_of(source.session(), i)))
}

/// Every fold on the source path (in path order), then every fold only on the fork's path.
fn verdicts(source: &LeafView<'_, '_>, fork: &LeafView<'_, '_>, fork_point: Option<usize>) -> Vec<Verdict> {
    let (ss, fs) = (source.session(), fork.session());
    let (in_source, in_fork) = (source.path_ids(), fork.path_ids());
    let mut out = Vec::new();
    for (pos, &i) in source.path().iter().enumerate() {
        let Some(data) = fold_of(ss, i) else { continue };
        let id = id_of(ss, i);
        let forked = in_fork.contains(id).then(|| fs.index_of(id)).flatten();
        let status = match forked {
            Some(j) if fold_of(fs, j).as_ref() == Some(&data) && same_edits(&data, source, fork) => Status::Carried,
            Some(_) => Status::Changed,
            None if fork_point.is_some_and(|p| pos <= p) => Status::Dropped,
            None => Status::Later,
        };
        let targets = if status == Status::Later { Vec::new() } else { originals(&data, ss, fs) };
        let (source_line, fork_line) = (Some(ss.entries[i].line()), forked.map(|j| fs.entries[j].line()));
        out.push(Verdict { log: id.to_string(), status, source_line, fork_line, targets });
    }
    for &j in fork.path() {
        let id = id_of(fs, j);
        let Some(data) = fold_of(fs, j).filter(|_| !in_source.contains(id)) else { continue };
        let targets = originals(&data, ss, fs);
        let fork_line = Some(fs.entries[j].line());
        out.push(Verdict { log: id.to_string(), status: Status::New, source_line: None, fork_line, targets });
    }
    out
}

/// The verdicts between two sessions whose folds are fork records (Claude Code): a fork's
/// records start with its source's, so the source's k-th fold is carried when the fork's k-th
/// record is the same fold at the same row, changed when it differs, dropped when the fork has
/// fewer; the fork's further records are new. A fold's log id is the row it was planned at.
fn forked_verdicts(source: &LeafView<'_, '_>, fork: &LeafView<'_, '_>) -> Vec<Verdict> {
    let (ss, fs) = (source.session(), fork.session());
    let (mut theirs, mut ours) = (log_entry::stored(ss), log_entry::stored(fs));
    let fold = |(_, d): &(usize, LogData<'_>)| d.op() == Some(Op::Fold);
    theirs.retain(fold);
    ours.retain(fold);
    let mut out = Vec::new();
    for (k, (i, data)) in theirs.iter().enumerate() {
        let mine = ours.get(k);
        let status = match mine {
            Some((j, d)) if d == data && id_of(fs, *j) == id_of(ss, *i) => Status::Carried,
            Some(_) => Status::Changed,
            None => Status::Dropped,
        };
        let (source_line, fork_line) = (Some(ss.entries[*i].line()), mine.map(|(j, _)| fs.entries[*j].line()));
        let targets = saved_originals(data, fork);
        out.push(Verdict { log: id_of(ss, *i).to_string(), status, source_line, fork_line, targets });
    }
    for (j, data) in ours.iter().skip(theirs.len()) {
        let (log, fork_line) = (id_of(fs, *j).to_string(), Some(fs.entries[*j].line()));
        let targets = saved_originals(data, fork);
        out.push(Verdict { log, status: Status::New, source_line: None, fork_line, targets });
    }
    out
}

/// Checks, for each target (`tool_use_id`) of a fold written as a fork, that its original can
/// be had back from the fork: its result is in the fork's context, and it is either the full
/// text still or a placeholder whose saved file is there and makes exactly that placeholder
/// (what `shake undo` puts back).
fn saved_originals(data: &LogData, fork: &LeafView<'_, '_>) -> Vec<Original> {
    let mut out: Vec<Original> = Vec::new();
    for t in &data.targets {
        if out.iter().any(|o| o.id == t.id) {
            continue;
        }
        let unit = fork.projection.units.iter().find(|u| u.target.as_deref() == Some(&*t.id));
        let problem = match unit {
            None => Some("missing"),
            Some(u) if u.tombstone && fork.projection.original(u.index).is_none() => Some("original not saved"),
            Some(_) => None,
        };
        out.push(Original { id: t.id.to_string(), problem, same_line: false });
    }
    out
}

/// Tells whether every edit a fold announces is on both paths with the same `replacement` bytes.
fn same_edits(data: &LogData, source: &LeafView<'_, '_>, fork: &LeafView<'_, '_>) -> bool {
    let replacement = |side: &LeafView<'_, '_>, on_path: &HashSet<&str>, id: &str| {
        let session = side.session();
        let entry = on_path.contains(id).then(|| session.index_of(id)).flatten();
        entry.and_then(|i| session.edit_raw(i)).map(|r| r.get().to_string())
    };
    let (in_source, in_fork) = (source.path_ids(), fork.path_ids());
    data.edit_ids().into_iter().all(|id| replacement(source, &in_source, id) == replacement(fork, &in_fork, id))
}

/// Checks, for each target of a fold, that the fork's file still holds its original content:
/// the entry is there, its own content equals the source's byte for byte, and it does not hold
/// one of the fold's placeholders (another tool folded it in place).
fn originals(data: &LogData, source: &Session<'_>, fork: &Session<'_>) -> Vec<Original> {
    let mut out: Vec<Original> = Vec::new();
    for t in &data.targets {
        if out.iter().any(|o| o.id == t.id) {
            continue;
        }
        let placeholders: Vec<String> =
            data.targets.iter().filter(|x| x.id == t.id).filter_map(|x| x.placeholder()).collect();
        let (se, fe) = (source.index_of(&t.id), fork.index_of(&t.id));
        let problem = match fe.map(|fe| (fe, content(fork, fe))) {
            None => Some("missing"),
            Some((_, None)) => Some("no content"),
            Some((_, Some(c))) if se.is_some_and(|se| content(source, se) != Some(c)) => Some("content differs"),
            Some((fe, Some(_))) => {
                let text = fork.host().parse_content(fork.own_content(fe)).joined_text();
                placeholders.iter().any(|p| text.contains(p.as_str())).then_some("folded in place")
            }
        };
        let same_line = matches!((se, fe), (Some(se), Some(fe)) if source.entries[se].raw() == fork.entries[fe].raw());
        out.push(Original { id: t.id.to_string(), problem, same_line });
    }
    out
}

/// An entry's own content as raw JSON text; `None` when absent or `null`.
fn content<'a>(session: &Session<'a>, index: usize) -> Option<&'a str> {
    session.own_content(index).map(|c| c.get()).filter(|c| *c != "null")
}

fn verdict_json(v: &Verdict) -> Value {
    let targets: Vec<Value> = v
        .targets
        .iter()
        .map(|t| json!({"id": t.id, "recoverable": t.problem.is_none(), "problem": t.problem, "sameLine": t.same_line}))
        .collect();
    json!({"log": v.log, "status": v.status.as_str(), "sourceLine": v.source_line, "forkLine": v.fork_line, "targets": targets})
}

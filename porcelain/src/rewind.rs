//! What a rewind does to folds: the folds it strands ([`stranded`]: in force on another branch of
//! the session, not at the current leaf), whatever the host's writer, and the check of a fork
//! host's fold records (`audit rewind`).
//!
//! On a host that appends a fold as log entries (pi) a fold is in force only below its log
//! entry, so a rewind to before the log entry strands it. On a host that writes a fold into the
//! rows themselves (Claude Code: a fork, or the transcript in place, with the fold's record in
//! the store) a rewind (Claude Code's `/rewind`, or a resume from an earlier message) starts a
//! new branch by `parentUuid` and changes no row. A fold's placeholders are in its target rows,
//! so a fold stays in force on every branch whose context still reaches its rows, whichever
//! branch its record was made at; it is stranded only where the current context no longer
//! reaches a target row that another leaf's context does.

use std::collections::{BTreeMap, HashSet};

use shake_plumbing::host::{Session, View, Writer};

use crate::leaf::{LeafView, Seen};
use crate::log_entry::{self, Op};
use crate::wall::Wall;

/// Folds that apply on another branch of the session but not at this leaf.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stranded {
    /// The shake log entry that folded them.
    pub log: String,
    /// Regions it keeps folded on its branch.
    pub regions: usize,
    /// Branch tips where they apply.
    pub leaves: Vec<String>,
    /// The current path left their branch through shake's own entries only (a fold or undo
    /// written with `--branch` elsewhere), not through pi continuing from an earlier entry.
    pub by_shake: bool,
}

/// Finds folds in force at other leaves whose log entries are not on `current`'s path. Only
/// branches that hold a shake log entry below their fork from the current path are projected,
/// as shared views ([`View::shared`]: each entry is read once for them all).
pub fn stranded<'a>(session: &Session<'a>, current: &View<'_, 'a>) -> Vec<Stranded> {
    if let Writer::Fork(_) = session.host().writer() {
        return stranded_in_rows(session, current);
    }
    let on_path: HashSet<usize> = current.path.iter().copied().collect();
    let off_path_log = |i: usize| !on_path.contains(&i) && log_entry::parse(session, i).is_some();
    let mut by_log: BTreeMap<usize, Stranded> = BTreeMap::new();
    for leaf in session.leaves() {
        let mut branch = Some(leaf);
        let mut holds_log = false;
        let mut steps = 0;
        while let Some(i) = branch.filter(|i| !on_path.contains(i) && steps <= session.entries.len()) {
            holds_log |= off_path_log(i);
            branch = session.parent_of(i);
            steps += 1;
        }
        if !holds_log {
            continue;
        }
        let Ok(projection) = View::shared(session, Some(leaf)) else { continue };
        let leaf_id = session.entries[leaf].id().to_string();
        for item in &Wall::at(&projection).items {
            let Some(log) = session.index_of(item.log).filter(|i| !on_path.contains(i)) else { continue };
            let s = by_log.entry(log).or_insert_with(|| Stranded {
                log: item.log.to_string(),
                regions: 0,
                leaves: Vec::new(),
                by_shake: left_by_shake(session, current, log),
            });
            if !s.leaves.contains(&leaf_id) {
                s.leaves.push(leaf_id.clone());
            }
            if s.leaves.len() == 1 {
                s.regions += 1;
            }
        }
    }
    by_log.into_values().collect()
}

/// Tells whether the current path, after the entry where it leaves log entry `log`'s branch,
/// holds only shake's own entries (log entries and `context_edit`s) among those written after
/// `log`: then a later shake write moved pi's resume point, not pi continuing on its own.
fn left_by_shake(session: &Session<'_>, current: &View<'_, '_>, log: usize) -> bool {
    let mut at = Some(log);
    let mut steps = 0;
    let fork = loop {
        match at {
            Some(i) if steps <= session.entries.len() => match current.path.iter().position(|&p| p == i) {
                Some(pos) => break pos,
                None => (at, steps) = (session.parent_of(i), steps + 1),
            },
            _ => return false,
        }
    };
    current.path[fork + 1..]
        .iter()
        .filter(|&&i| i > log)
        .all(|&i| session.is_edit(i) || log_entry::parse(session, i).is_some())
}

/// [`stranded`] on a host whose folds are in their target rows: the folds in force at other
/// leaves and not at `current`, by the record that made them. Only leaves whose branch below
/// the current path holds a target row out of the current context are projected.
fn stranded_in_rows(session: &Session<'_>, current: &View<'_, '_>) -> Vec<Stranded> {
    let records = log_entry::stored(session);
    // Each fold's target rows out of the current context, found in the context at the fold's
    // own row (which reaches every target by construction): (row, the record's row id).
    let mut off: Vec<(usize, String)> = Vec::new();
    for (at, data) in records.iter().filter(|(_, d)| d.op() == Some(Op::Fold)) {
        let Ok(view) = View::at(session, Some(*at)) else { continue };
        for t in &data.targets {
            let unit = view.units.iter().find(|u| u.target.as_deref() == Some(&*t.id));
            if let Some(u) = unit.filter(|u| u.tombstone && current.position(u.index).is_none()) {
                if !off.iter().any(|(row, _)| *row == u.index) {
                    off.push((u.index, session.entries[*at].id().to_string()));
                }
            }
        }
    }
    let mut out: Vec<Stranded> = Vec::new();
    if off.is_empty() {
        return out;
    }
    let on_path: std::collections::HashSet<usize> = current.path.iter().copied().collect();
    for leaf in session.leaves() {
        // The branch below the current path: does it hold a target row out of the context?
        let (mut at, mut steps, mut holds) = (Some(leaf), 0, false);
        while let Some(i) = at.filter(|i| !on_path.contains(i) && steps <= session.entries.len()) {
            holds |= off.iter().any(|(row, _)| *row == i);
            (at, steps) = (session.parent_of(i), steps + 1);
        }
        let Some(view) = holds.then(|| View::at(session, Some(leaf)).ok()).flatten() else { continue };
        let wall = Wall::at(&view);
        let leaf_id = session.entries[leaf].id().to_string();
        for (row, log) in &off {
            if !wall.items.iter().any(|it| it.index == *row) {
                continue;
            }
            let s = match out.iter().position(|s| s.log == *log) {
                Some(n) => &mut out[n],
                None => {
                    out.push(Stranded { log: log.clone(), regions: 0, leaves: Vec::new(), by_shake: false });
                    out.last_mut().expect("just pushed")
                }
            };
            if !s.leaves.contains(&leaf_id) {
                s.leaves.push(leaf_id.clone());
            }
            if s.leaves.len() == 1 {
                s.regions += 1;
            }
        }
    }
    out
}

/// One fold record checked at the row it was made at.
pub struct RecordCheck {
    /// The row the record is attached to (the leaf the fold was planned at).
    pub at: usize,
    /// Each target: what the context at that row shows of it, and why that is wrong, if it is.
    pub targets: Vec<(String, Seen, Option<&'static str>)>,
}

/// Checks every fold record of the session at its own row: each target is in the context there
/// and shows folded (its row holds a placeholder the record puts on the wall), unless a later
/// undo record put it back, when it must show unfolded.
pub fn checks(session: &Session<'_>) -> Result<Vec<RecordCheck>, crate::leaf::LeafError> {
    let records = log_entry::stored(session);
    let mut out = Vec::new();
    for (n, (at, data)) in records.iter().enumerate().filter(|(_, (_, d))| d.op() == Some(Op::Fold)) {
        let view = LeafView::at(session, Some(*at))?;
        // Put back when the last later record naming the target is an undo.
        let undone = |id: &str| {
            let last = records[n + 1..].iter().rev().find(|(_, d)| d.targets.iter().any(|t| t.id == id));
            last.is_some_and(|(_, d)| d.op() == Some(Op::Undo))
        };
        let mut targets: Vec<(String, Seen, Option<&'static str>)> = Vec::new();
        for t in &data.targets {
            if targets.iter().any(|(id, ..)| *id == t.id) {
                continue;
            }
            let unit = view.projection.units.iter().find(|u| u.target.as_deref() == Some(&*t.id));
            let (seen, problem) = match unit {
                None => (Seen::Absent, Some("absent")),
                Some(u) => match (view.seen(u.index), undone(&t.id)) {
                    (Seen::Folded, false) => (Seen::Folded, None),
                    (seen, false) => (seen, Some("not folded")),
                    (_, true) if u.tombstone => (Seen::Folded, Some("folded after its undo")),
                    (_, true) => (Seen::Restored, None),
                },
            };
            targets.push((t.id.to_string(), seen, problem));
        }
        out.push(RecordCheck { at: *at, targets });
    }
    Ok(out)
}

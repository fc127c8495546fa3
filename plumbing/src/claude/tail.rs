//! The meter's append shortcut for Claude Code transcripts: what is kept of a measured chain's
//! end ([`ClaudeTail`]) and the reading of rows appended after it alone ([`ClaudeTail::follow`]).
//!
//! Claude Code's loader and projection join rows across turns (split messages, results found
//! off the chain, rows hung under the leaf), so a row cannot be judged alone as pi's entries
//! are. What is proven instead (see `loader::open_end`, `loader::answerable`): when the chain's
//! end is open and the new rows hang one after the other from its last row with new ids (or,
//! tool results, from a row of the message the chain ends with), the longer file's chain is the
//! old one followed by the new rows. Each position's tokens and gains are then those of
//! its own row and its tool's call, so the old positions keep theirs and the new ones are
//! measured from the new rows plus the few calls of the old context still waiting for a result.

use std::collections::HashSet;

use serde_json::value::RawValue;
use serde_json::Value;

use super::host::{Claude, ClaudeSession, ClaudeView, Follows};
use super::loader::{size_gate, LoadOptions, SIZE_GATE};
use crate::host::{self, Call, Followed, HostData, Role, SessionFile, View};

/// The most calls waiting for a result that a tail keeps (a result answering one not kept is
/// measured with the whole file).
const MAX_PENDING: usize = 64;
/// The most bytes of those calls' arguments a tail keeps.
const MAX_PENDING_BYTES: usize = 256 << 10;

/// What the meter keeps of a chain's open end to read rows appended after it: a few ids and the
/// calls still waiting for a result, whatever the transcript's length.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClaudeTail {
    /// The file's length then (the size gate looks at the whole file's).
    len: u64,
    /// `CLAUDE_CODE_DISABLE_PRECOMPACT_SKIP` was set (no size gate).
    no_size_gate: bool,
    /// The file holds a compaction boundary the size gate cuts at (`loader::size_gate`): the
    /// file's chain changes when it grows past 5 MiB. Without one, the gate keeps every row.
    gated: bool,
    /// The leaf's uuid (Claude Code's leaf: the last main message).
    leaf: String,
    /// The latest timestamp of a row the walk looked for a stand-in parent for: a new row must
    /// be later (or have none), so that it stands in for nothing (`loader::Chain::looked`).
    looked: Option<i64>,
    /// The chain's last row (the tip; new rows hang from it).
    tip: String,
    /// When rows are hung under the leaf (the tip is not the leaf): the last one's timestamp.
    hung: Option<Option<String>>,
    /// The API message whose rows end the chain, followed only by results under them
    /// (`loader::answerable`): new results may hang from any of its rows, and while none does,
    /// new rows may carry on it.
    open: Option<Open>,
    /// The session id the rows carry.
    session_id: Option<String>,
    /// The context's calls no result in it answers.
    pending: Vec<Pending>,
}

/// The most rows of one API message a tail keeps (results answering a longer one are measured
/// with the whole file).
const MAX_OPEN_ROWS: usize = 64;

/// The API message a chain ends with (`loader::answerable`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Open {
    /// Its `message.id`.
    id: String,
    /// Its rows' uuids, in order.
    rows: Vec<String>,
    /// A result under them follows them (no row may carry on the message now).
    answered: bool,
}

impl Open {
    /// The open message `id` of these rows (`None` past [`MAX_OPEN_ROWS`] of them).
    fn of(id: &str, rows: Vec<String>, answered: bool) -> Option<Open> {
        (rows.len() <= MAX_OPEN_ROWS).then(|| Open { id: id.to_string(), rows, answered })
    }
}

/// A call waiting for a result: id, tool name, arguments (raw JSON).
type Pending = (String, String, Option<String>);

/// Adds `call` to the calls waiting for a result (a later call of the same id is the one a
/// result finds).
fn wait(pending: &mut Vec<Pending>, call: &Call<'_>) {
    pending.retain(|(id, ..)| id != call.id.as_ref());
    pending.push((call.id.to_string(), call.name.to_string(), call.arguments.map(|a| a.get().to_string())));
}

impl ClaudeTail {
    /// The tail of a whole file's view at Claude Code's own leaf, when its chain's end is open;
    /// `ids` is given every uuid and parent uuid of the file, every uuid a boundary's anchors
    /// name, every message id, and the context's call and result ids.
    pub(super) fn of(v: &ClaudeView<'_, '_>, view: &View<'_, '_>, ids: &mut dyn FnMut(&str)) -> Option<ClaudeTail> {
        let host = v.host;
        if host.follows.is_some() || !v.chain.open {
            return None;
        }
        let t = &host.t;
        let (leaf, tip) = (&t.rows[v.chain.leaf?], &t.rows[*v.chain.rows.last()?]);
        for row in &t.rows {
            row.uuid().into_iter().chain(row.parent_uuid()).chain(row.message_id()).for_each(&mut *ids);
            if let Some(meta) = row.compact_metadata() {
                strings(meta, ids);
            }
        }
        let mut answered = HashSet::new();
        for unit in view.units.iter().filter(|u| u.role == Role::ToolResult) {
            if let Some(target) = &unit.target {
                ids(target);
                answered.insert(target.as_ref());
            }
        }
        view.calls.iter().for_each(|c| ids(&c.id));
        // The context's last call of each id is the one a result finds (later ones win).
        let mut pending = Vec::new();
        for call in view.calls.iter().filter(|c| !answered.contains(c.id.as_ref())) {
            wait(&mut pending, call);
        }
        Some(ClaudeTail {
            len: t.file.raw().len() as u64,
            no_size_gate: host.options.no_size_gate,
            gated: size_gate(t) != 0,
            looked: v.chain.looked,
            leaf: leaf.uuid()?.to_string(),
            tip: tip.uuid()?.to_string(),
            hung: (tip.uuid() != leaf.uuid()).then(|| tip.timestamp().map(str::to_string)),
            open: v.chain.answerable.clone().and_then(|range| {
                let rows = &v.chain.rows;
                let id = t.rows[rows[range.end - 1]].message_id()?;
                let uuids = rows[range.clone()].iter().map(|&r| t.rows[r].uuid().map(str::to_string));
                Open::of(id, uuids.collect::<Option<_>>()?, range.end < rows.len())
            }),
            session_id: t.session_id().map(str::to_string),
            pending: bounded(pending),
        })
    }

    /// The leaf's uuid.
    pub(crate) fn leaf_id(&self) -> &str {
        &self.leaf
    }

    /// Reads `appended` as rows continuing the chain's open end: every conversation row hangs
    /// from the one before it (the first from the tip), or is a tool result hanging from a row of
    /// the open message (the chain's last rows are that message's and results under them:
    /// `loader::answerable`); none is a compaction boundary, summary or side-chain row, nor as
    /// old as a row whose parent the walk had to stand in for; when it is hung under the leaf
    /// (no user or assistant row; Claude Code sorts those by time), its timestamp is not before
    /// the row hung before it; the size gate says what it said (the file stays on the same side
    /// of 5 MiB, or holds no boundary the gate would cut at: the new rows are no boundaries).
    /// The first rows may carry on the open message while no result follows it; every other
    /// message id is new (in `fresh`), and once a result has answered a row before the tip, new
    /// to the rows before it too. `None` when they do not.
    pub(crate) fn follow<'a>(&self, appended: &'a SessionFile) -> Option<Followed<'a>> {
        let options = LoadOptions::from_env();
        let len = self.len.checked_add(appended.raw().len() as u64)?;
        let gate = |len: u64| !options.no_size_gate && len > SIZE_GATE as u64;
        if options.no_size_gate != self.no_size_gate || self.gated && gate(self.len) != gate(len) {
            return None;
        }
        let mut data = ClaudeSession::read(appended);
        if data.t.torn.is_some() {
            return None;
        }
        let mut fresh = Vec::new();
        let mut uuids = HashSet::new();
        let mut messages = HashSet::new();
        let mut parent = self.tip.as_str();
        let mut hung = self.hung.as_ref().map(Option::as_deref);
        let mut open = self.open.clone();
        // A result answered a row before the tip: the rows after it are read as continuing the
        // file up to it, so their message ids must be new to its rows too.
        let mut off_tip = false;
        for n in 0..data.nodes.len() {
            let row = data.row(n);
            let uuid = row.uuid()?;
            let early = self.looked.is_some_and(|l| row.time_ms().is_some_and(|at| at <= l));
            let bad = early || row.is_sidechain() || row.is_compact_boundary() || row.is_compact_summary();
            let answers = row.kind() == "user"
                && row.has_tool_result()
                && open.as_ref().is_some_and(|o| o.rows.iter().any(|r| row.parent_uuid() == Some(r)));
            let next = row.parent_uuid() == Some(parent);
            if bad || !(next || answers) || !uuids.insert(uuid) {
                return None;
            }
            off_tip |= !next;
            hung = match row.kind() {
                "user" | "assistant" => None,
                _ if hung.is_some_and(|before| row.timestamp() < before) => return None,
                _ => Some(row.timestamp()),
            };
            fresh.push(uuid.to_string());
            let message = row.message_id().filter(|_| row.kind() == "assistant");
            let repeat = message.is_some_and(|id| !messages.insert(id));
            open = match (open, message) {
                (Some(o), _) if answers => Some(Open { answered: true, ..o }),
                // More of the open message (it ends the chain: the row hangs from its last).
                (Some(mut o), Some(id)) if id == o.id && !o.answered => {
                    o.rows.push(uuid.to_string());
                    Open::of(id, o.rows, false)
                }
                // A message's row after results under it.
                (Some(o), Some(id)) if id == o.id => return None,
                (_, Some(_)) if repeat && off_tip => return None,
                (_, Some(id)) => {
                    fresh.push(id.to_string());
                    // A message whose rows came apart is not answered off the tip.
                    Open::of(id, vec![uuid.to_string()], false).filter(|_| !repeat)
                }
                (_, None) => None,
            };
            parent = uuid;
        }
        let (tip, hung) = (parent.to_string(), hung.map(|t| t.map(str::to_string)));
        let leaf = match data.last_main() {
            Some(n) => data.row(n).uuid()?.to_string(),
            None => self.leaf.clone(),
        };
        let calls: Vec<_> = (0..data.nodes.len()).flat_map(|n| data.calls_of(n)).collect();
        fresh.extend(calls.iter().map(|c| c.id.to_string()));
        let made: HashSet<&str> = calls.iter().map(|c| c.id.as_ref()).collect();
        let mut answered = HashSet::new();
        for result in data.nodes.iter().filter_map(|node| node.result.as_ref()) {
            let id = result.call_id.as_ref();
            // A result of an old call that is not kept (or of no call) must be of no old id.
            if !made.contains(id) && !self.pending.iter().any(|(p, ..)| p == id) {
                fresh.push(id.to_string());
            }
            answered.insert(id.to_string());
        }
        let mut pending: Vec<_> = self.pending.iter().filter(|(id, ..)| !answered.contains(id)).cloned().collect();
        for call in calls.iter().filter(|c| !answered.contains(c.id.as_ref())) {
            wait(&mut pending, call);
        }
        let tail = ClaudeTail {
            len,
            no_size_gate: self.no_size_gate,
            gated: self.gated,
            looked: self.looked,
            leaf,
            tip,
            hung,
            open,
            session_id: self.session_id.clone(),
            pending: bounded(pending),
        };
        let lent = self.pending.iter().map(|(id, name, arguments)| {
            let arguments = arguments.as_ref().and_then(|a| RawValue::from_string(a.clone()).ok());
            (id.clone(), name.clone(), arguments)
        });
        data.follows = Some(Follows { session_id: self.session_id.clone(), pending: lent.collect() });
        // A row past 4 GiB: the whole load refuses it by line.
        let (header, nodes) = (data.header(appended), data.nodes(appended).ok()?);
        let session = host::Session::new(&Claude, appended, header, nodes, HostData::Claude(data));
        Some(Followed { session, fresh, tail: host::Tail::Claude(tail) })
    }
}

/// The newest pending calls that fit [`MAX_PENDING`] and [`MAX_PENDING_BYTES`].
fn bounded(mut pending: Vec<Pending>) -> Vec<Pending> {
    let size = |(id, name, arguments): &Pending| id.len() + name.len() + arguments.as_ref().map_or(0, String::len);
    let mut bytes = 0;
    let keep = pending.iter().rev().take_while(|c| {
        bytes += size(c);
        bytes <= MAX_PENDING_BYTES
    });
    let keep = keep.count().min(MAX_PENDING);
    pending.drain(..pending.len() - keep);
    pending
}

/// Gives every string in a JSON value to `each` (a boundary's anchors and listed uuids).
fn strings(value: &Value, each: &mut dyn FnMut(&str)) {
    match value {
        Value::String(s) => each(s),
        Value::Array(items) => items.iter().for_each(|v| strings(v, each)),
        Value::Object(map) => map.values().for_each(|v| strings(v, each)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_calls_are_bounded_newest_kept() {
        let call = |i: usize, args: usize| (format!("c{i}"), "Bash".to_string(), Some("x".repeat(args)));
        let many: Vec<_> = (0..100).map(|i| call(i, 10)).collect();
        let kept = bounded(many);
        assert_eq!(kept.len(), MAX_PENDING);
        assert_eq!(kept.last().unwrap().0, "c99");
        let big = vec![call(0, 10), call(1, MAX_PENDING_BYTES), call(2, 10)];
        assert_eq!(bounded(big).iter().map(|c| c.0.as_str()).collect::<Vec<_>>(), ["c2"]);
    }

    #[test]
    fn strings_are_found_at_any_depth() {
        let meta: Value =
            serde_json::json!({"preservedSegment": {"headUuid": "h", "anchorUuid": "a"}, "n": 3, "l": ["x"]});
        let mut seen = Vec::new();
        strings(&meta, &mut |s| seen.push(s.to_string()));
        seen.sort();
        assert_eq!(seen, ["a", "h", "x"]);
    }
}

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
//!
//! A compaction restarts the chain instead ([`ClaudeTail::restart`]): the relink drops every
//! row before the last boundary but the preserved ones, so the longer file loads as a file of
//! the few old rows that survive (kept by byte range: the chain's last rows, which a boundary
//! may preserve, and every row of the map when they are few) followed by the new rows. That
//! file is measured whole, and the meter's tally restarts with it.

use std::cell::OnceCell;
use std::collections::HashSet;
use std::io::{Read, Seek, SeekFrom};

use serde_json::value::RawValue;
use serde_json::Value;

use super::host::{Claude, ClaudeSession, Follows, Part};
use super::loader::{cuts, is_anchored, load_at, size_gate, LoadOptions, MAX_SURVIVORS, SIZE_GATE};
use super::transcript::{Row, Transcript};
use super::view::ClaudeView;
use crate::host::{self, Call, Followed, Role, SessionFile, View};

/// The most calls waiting for a result that a tail keeps (a result answering one not kept is
/// measured with the whole file).
const MAX_PENDING: usize = 64;
/// The most bytes of those calls' arguments a tail keeps.
const MAX_PENDING_BYTES: usize = 256 << 10;
/// The most rows of the chain's end a tail keeps the place of (a boundary preserving older
/// rows is measured with the whole file).
const MAX_RECENT: usize = 64;
/// The most bytes of surviving rows a restart reads again.
const MAX_SURVIVOR_BYTES: u64 = 4 << 20;

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
    /// The uuid map held a boundary with anchors (`loader::Chain::anchored`).
    anchored: bool,
    /// The chain's end is open (`loader::open_end`): rows hanging from it are followed alone.
    /// Else only a restart reads new rows.
    ends_open: bool,
    /// The relink's anchor while no row has it (a new row that does is a restart).
    anchor: Option<String>,
    /// Where the chain's last rows are (at most [`MAX_RECENT`]), in file order: an appended
    /// boundary may preserve them. `None` when no row may be read again (fold records of the
    /// store apply to the file's rows, which a restart would not see).
    recent: Option<Vec<Kept>>,
    /// Where every row of the uuid map is (`loader::Chain::survivors`), in file order, when
    /// they are few: what a restart reads before the new rows.
    survivors: Option<Vec<Kept>>,
    /// The leaf's uuid (Claude Code's leaf: the last main message).
    leaf: Option<String>,
    /// The latest timestamp of a row the walk looked for a stand-in parent for: a new row must
    /// be later (or have none), so that it stands in for nothing (`loader::Chain::looked`).
    looked: Option<i64>,
    /// The chain's last row (the tip; new rows hang from it).
    tip: Option<String>,
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

/// Where a row of the file is.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Kept {
    /// Its uuid (the row read again must have it).
    uuid: String,
    /// Its line's first byte in the file, and length (no newline).
    at: u64,
    len: u64,
}

impl Kept {
    /// The place of `row` (of a file whose byte 0 is the whole file's byte `base`).
    fn of(row: &Row, base: u64) -> Option<Kept> {
        Some(Kept { uuid: row.uuid()?.to_string(), at: base + row.raw.start as u64, len: row.raw.len() as u64 })
    }
}

/// Where the rows of a file read for a restart are in the whole file, and its figures.
pub(super) struct Whole {
    /// The whole file's length.
    len: u64,
    /// The options it is loaded with (the file read is loaded without the size gate).
    no_size_gate: bool,
    /// [`ClaudeTail::gated`] and [`ClaudeTail::anchored`] of the whole file.
    gated: bool,
    anchored: bool,
    /// A compaction dropped rows of the whole file (else its survivors are all of its rows:
    /// reading them again would be measuring it whole).
    compacted: bool,
    /// The old rows, first in the file read (by row index).
    old: Vec<Kept>,
    /// Where the new rows start in the file read, and the whole file's byte there.
    start: usize,
    base: u64,
}

impl Whole {
    /// The place of row `r` of `t` (the file read) in the whole file.
    fn place(&self, t: &Transcript, r: usize) -> Option<Kept> {
        let row = &t.rows[r];
        match row.raw.start >= self.start {
            true => Kept::of(row, self.base.checked_sub(self.start as u64)?),
            false => self.old.get(r).cloned(),
        }
    }
}

/// `survivors` followed by `new`, when that stays within [`MAX_SURVIVORS`] and
/// [`MAX_SURVIVOR_BYTES`].
fn survive(survivors: Option<Vec<Kept>>, new: &[Kept]) -> Option<Vec<Kept>> {
    let mut all = survivors?;
    all.extend_from_slice(new);
    let bytes: u64 = all.iter().map(|k| k.len).sum();
    (all.len() <= MAX_SURVIVORS && bytes <= MAX_SURVIVOR_BYTES).then_some(all)
}

/// `recent` followed by `new`, the last [`MAX_RECENT`] kept.
fn recent(recent: Option<Vec<Kept>>, new: &[Kept]) -> Option<Vec<Kept>> {
    let mut recent = recent?;
    recent.extend_from_slice(new);
    recent.drain(..recent.len().saturating_sub(MAX_RECENT));
    Some(recent)
}

/// Adds `call` to the calls waiting for a result (a later call of the same id is the one a
/// result finds).
fn wait(pending: &mut Vec<Pending>, call: &Call<'_>) {
    pending.retain(|(id, ..)| id != call.id.as_ref());
    pending.push((call.id.to_string(), call.name.to_string(), call.arguments.map(|a| a.get().to_string())));
}

impl ClaudeTail {
    /// The tail of a whole file's view at Claude Code's own leaf (or of the file a restart read,
    /// [`ClaudeTail::restart`]), when its chain's end is open or it may restart; `ids` is given every uuid and parent uuid of the file, every uuid a boundary's anchors
    /// name, every message id, and the context's call and result ids.
    pub(super) fn of(v: &ClaudeView<'_, '_>, view: &View<'_, '_>, ids: &mut dyn FnMut(&str)) -> Option<ClaudeTail> {
        let host = v.host;
        if host.follows.is_some() {
            return None;
        }
        let t = &host.t;
        t.rows.iter().for_each(|row| row_ids(row, ids));
        let results = view.units.iter().filter(|u| u.role == Role::ToolResult);
        results.filter_map(|u| u.target.as_deref()).for_each(&mut *ids);
        view.calls.iter().for_each(|c| ids(&c.id));
        let whole = Whole {
            len: t.file.raw().len() as u64,
            no_size_gate: host.options.no_size_gate,
            gated: size_gate(t) != 0,
            anchored: v.chain.anchored,
            compacted: v.chain.relinked || v.chain.gate_start > 0,
            old: Vec::new(),
            start: 0,
            base: 0,
        };
        let whole = host.part_of.as_ref().and_then(|p| p.whole.as_ref()).unwrap_or(&whole);
        ClaudeTail::made(v, view, whole)
    }

    /// The tail of a view at Claude Code's own leaf (of the whole file, or of the rows a restart
    /// read); `None` when its end is not open and it cannot restart either.
    fn made(v: &ClaudeView<'_, '_>, view: &View<'_, '_>, whole: &Whole) -> Option<ClaudeTail> {
        let (t, chain) = (&v.host.t, &v.chain);
        let (leaf, tip) = (chain.leaf.map(|r| &t.rows[r]), chain.rows.last().map(|&r| &t.rows[r]));
        let place = |rows: &[usize]| rows.iter().map(|&r| whole.place(t, r)).collect::<Option<Vec<_>>>();
        // Fold records of the store apply to the whole file's rows: not read again.
        let restartable = view.session.stored.is_empty();
        let survivors = chain.survivors.as_deref().filter(|_| restartable && whole.compacted);
        let survivors = survivors.and_then(|rows| survive(place(rows), &[]));
        if !chain.open && survivors.is_none() {
            return None;
        }
        let answered: HashSet<&str> =
            view.units.iter().filter(|u| u.role == Role::ToolResult).filter_map(|u| u.target.as_deref()).collect();
        // The context's last call of each id is the one a result finds (later ones win).
        let mut pending = Vec::new();
        for call in view.calls.iter().filter(|c| !answered.contains(c.id.as_ref())) {
            wait(&mut pending, call);
        }
        let mut recent = place(&chain.rows[chain.rows.len().saturating_sub(MAX_RECENT)..])?;
        recent.sort_by_key(|k| k.at);
        Some(ClaudeTail {
            len: whole.len,
            no_size_gate: whole.no_size_gate,
            gated: whole.gated,
            anchored: whole.anchored,
            ends_open: chain.open,
            anchor: chain.anchor.clone().filter(|a| chain.loose.contains(a)),
            // In file order, a reused uuid's row would not be at its place in the map.
            recent: (restartable && !chain.reused).then_some(recent),
            survivors,
            looked: chain.looked,
            leaf: leaf.and_then(Row::uuid).map(str::to_string),
            tip: tip.and_then(Row::uuid).map(str::to_string),
            hung: tip
                .filter(|tip| tip.uuid() != leaf.and_then(Row::uuid))
                .map(|tip| tip.timestamp().map(str::to_string)),
            open: chain.answerable.clone().and_then(|range| {
                let rows = &chain.rows;
                let id = t.rows[rows[range.end - 1]].message_id()?;
                let uuids = rows[range.clone()].iter().map(|&r| t.rows[r].uuid().map(str::to_string));
                Open::of(id, uuids.collect::<Option<_>>()?, range.end < rows.len())
            }),
            session_id: v.host.session_id().map(str::to_string),
            pending: bounded(pending),
        })
    }

    /// The engine's opaque [`host::Tail`] holding this one (bincode, read back by
    /// [`ClaudeTail::of_tail`]).
    pub(crate) fn into_tail(self) -> host::Tail {
        let state = bincode::serde::encode_to_vec(&self, bincode::config::standard()).unwrap_or_default();
        host::Tail::new(super::host::KIND, self.leaf.clone(), state)
    }

    /// The tail [`ClaudeTail::into_tail`] put in `tail`, or `None` when it holds no such tail
    /// (another host's, or bytes that do not decode: the whole file is measured then).
    pub(crate) fn of_tail(tail: &host::Tail) -> Option<ClaudeTail> {
        if tail.host() != super::host::KIND.as_str() {
            return None;
        }
        let config = bincode::config::standard().with_limit::<{ 1 << 20 }>();
        bincode::serde::decode_from_slice(tail.state(), config).ok().map(|(t, _)| t)
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
    /// to the rows before it too. Else, the rows may restart the chain ([`ClaudeTail::restart`]).
    /// `None` when they do neither.
    pub(crate) fn follow<'a>(
        &self,
        appended: &'a SessionFile,
        room: &'a OnceCell<SessionFile>,
    ) -> Option<Followed<'a>> {
        self.append(appended).or_else(|| self.restart(appended, room))
    }

    /// The longer file's length and whether the size gate applies to it, when the load's
    /// options are those the tail was made with and, in a file the gate cuts, the file stays on
    /// its side of 5 MiB (else the chain may change in ways neither growth follows).
    fn grown(&self, appended: &SessionFile) -> Option<(u64, bool)> {
        let options = LoadOptions::from_env();
        let len = self.len.checked_add(appended.raw().len() as u64)?;
        let gate = |len: u64| !options.no_size_gate && len > SIZE_GATE as u64;
        if options.no_size_gate != self.no_size_gate || self.gated && gate(self.len) != gate(len) {
            return None;
        }
        Some((len, gate(len)))
    }

    /// [`ClaudeTail::follow`]'s rows continuing the chain's open end.
    fn append<'a>(&self, appended: &'a SessionFile) -> Option<Followed<'a>> {
        if !self.ends_open {
            return None;
        }
        let (len, _) = self.grown(appended)?;
        let mut data = ClaudeSession::read(appended);
        if data.t.torn.is_some() {
            return None;
        }
        let mut fresh = Vec::new();
        let mut uuids = HashSet::new();
        let mut messages = HashSet::new();
        let mut parent = self.tip.as_deref()?;
        let mut hung = self.hung.as_ref().map(Option::as_deref);
        let mut open = self.open.clone();
        // A result answered a row before the tip: the rows after it are read as continuing the
        // file up to it, so their message ids must be new to its rows too.
        let mut off_tip = false;
        for n in 0..data.nodes.len() {
            let row = data.row(n);
            // A row taking the relink's anchor is hung under the preserved rows: a restart.
            let uuid = row.uuid().filter(|u| Some(*u) != self.anchor.as_deref())?;
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
        let (tip, hung) = (Some(parent.to_string()), hung.map(|t| t.map(str::to_string)));
        let leaf = match data.last_main() {
            Some(n) => Some(data.row(n).uuid()?.to_string()),
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
        let new: Vec<Kept> = (0..data.nodes.len()).map(|n| Kept::of(data.row(n), self.len)).collect::<Option<_>>()?;
        let tail = ClaudeTail {
            len,
            no_size_gate: self.no_size_gate,
            gated: self.gated,
            anchored: self.anchored,
            ends_open: true,
            anchor: self.anchor.clone(),
            recent: recent(self.recent.clone(), &new),
            survivors: survive(self.survivors.clone(), &new),
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
        data.follows = Some(Follows { pending: lent.collect() });
        data.part_of = Some(Box::new(Part { session_id: self.session_id.clone(), whole: None }));
        // A row past 4 GiB: the whole load refuses it by line.
        let (header, nodes) = (data.header(appended), data.nodes(appended).ok()?);
        let session = host::Session::new(&Claude, appended, header, nodes, Box::new(data));
        Some(Followed { session, restart: false, fresh, known: Vec::new(), tail: tail.into_tail() })
    }

    /// [`ClaudeTail::follow`]'s rows restarting the chain: the longer file's uuid map, after the
    /// size gate and the relink, is that of a file of a few old rows, read again by their
    /// places, followed by the new rows (all of them, or from the boundary on), so its chain is
    /// that file's (loaded without the gate, which the places already passed). The new rows'
    /// uuids must be new (the map keeps every old row where it was), and so must the parents,
    /// missing from that file, of its user and assistant rows (a dropped row there would make
    /// them orphans, hung from the preserved rows). The old rows are:
    /// - with no boundary among the new rows: every row of the map ([`Chain::survivors`]: the
    ///   relink and the gate drop the same rows as before, the new ones at none's place);
    /// - with one boundary with anchors: the chain's last rows it names (the preserved ones,
    ///   the rest dropped in both files); its relink must hang them (all present);
    /// - with one boundary without anchors, when the map held one with anchors (the relink then
    ///   drops every row before it) or the size gate cuts at it: none, and the new rows from it.
    ///
    /// Every row before the boundary, old or new, is then dropped alike, or kept alike.
    ///
    /// [`Chain::survivors`]: super::loader::Chain::survivors
    pub(crate) fn restart<'a>(&self, appended: &SessionFile, room: &'a OnceCell<SessionFile>) -> Option<Followed<'a>> {
        let (len, gated_now) = self.grown(appended)?;
        let new = Transcript::parse(appended.share());
        if new.torn.is_some() {
            return None;
        }
        let boundaries: Vec<&Row> =
            new.rows.iter().filter(|r| r.is_conversation() && r.is_compact_boundary()).collect();
        let (old, skip, gated, anchored) = match boundaries[..] {
            [] => (self.survivors.clone()?, 0, self.gated, self.anchored),
            [b] if is_anchored(b) => {
                let raw = new.raw(b);
                let named = |k: &&Kept| memchr::memmem::find(raw, format!("\"{}\"", k.uuid).as_bytes()).is_some();
                (self.recent.as_ref()?.iter().filter(named).cloned().collect(), 0, self.gated, true)
            }
            [b] => {
                let cut = gated_now && cuts(&new, b);
                if !cut && !self.anchored {
                    return None;
                }
                (Vec::new(), b.raw.start, self.gated || cuts(&new, b), !cut)
            }
            _ => return None,
        };
        let mut bytes = Vec::new();
        let mut file = std::fs::File::open(&appended.path).ok()?;
        for k in &old {
            file.seek(SeekFrom::Start(k.at)).ok()?;
            (&mut file).take(k.len).read_to_end(&mut bytes).ok()?;
            bytes.push(b'\n');
        }
        let start = bytes.len();
        bytes.extend_from_slice(&appended.raw()[skip..]);
        let file = room.get_or_init(|| SessionFile::from_bytes(appended.path.clone(), bytes));
        let mut data = ClaudeSession::read(file);
        data.options = LoadOptions { no_size_gate: true };
        // The old rows must be read as they were kept.
        let read = data.t.rows.iter().take(old.len()).map(Row::uuid);
        if data.t.rows.len() < old.len() || !read.eq(old.iter().map(|k| Some(k.uuid.as_str()))) {
            return None;
        }
        let chain = load_at(&data.t, data.options, None);
        if matches!(boundaries[..], [b] if is_anchored(b)) && !chain.relinked {
            return None;
        }
        let mut fresh = Vec::new();
        let mut uuids = HashSet::new();
        for row in data.t.rows.iter().filter(|r| r.raw.start >= start && r.is_conversation()) {
            let uuid = row.uuid()?;
            if !uuids.insert(uuid) {
                return None;
            }
            // The anchor is no row's but named: no old row has it.
            if Some(uuid) != self.anchor.as_deref() {
                fresh.push(uuid.to_string());
            }
        }
        fresh.extend(chain.loose.iter().filter(|p| !uuids.contains(p.as_str())).cloned());
        let (no_size_gate, base) = (self.no_size_gate, self.len + skip as u64);
        let whole = Whole { len, no_size_gate, gated, anchored, compacted: true, old, start, base };
        data.part_of = Some(Box::new(Part { session_id: self.session_id.clone(), whole: Some(whole) }));
        let (header, nodes) = (data.header(file), data.nodes(file).ok()?);
        let session = host::Session::new(&Claude, file, header, nodes, Box::new(data));
        let mut known = Vec::new();
        let tail = View::at(&session, session.default_leaf()).ok()?.tail(&mut |id| known.push(id.to_string()))?;
        Some(Followed { session, restart: true, fresh, known, tail })
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

/// Gives `each` a row's uuid, parent uuid and message id, and every string of its
/// `compactMetadata` (a boundary's anchors and listed uuids).
fn row_ids(row: &Row, each: &mut dyn FnMut(&str)) {
    row.uuid().into_iter().chain(row.parent_uuid()).chain(row.message_id()).for_each(&mut *each);
    if let Some(meta) = row.compact_metadata() {
        strings(meta, each);
    }
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
    fn places_are_bounded() {
        let kept = |i: usize, len: u64| Kept { uuid: format!("u{i}"), at: i as u64, len };
        let many: Vec<Kept> = (0..100).map(|i| kept(i, 10)).collect();
        let last = recent(Some(many[..10].to_vec()), &many[10..]).unwrap();
        assert_eq!((last.len(), last[0].uuid.as_str()), (MAX_RECENT, "u36"));
        assert_eq!(recent(None, &many), None, "no places where rows may not be read again");
        assert_eq!(survive(Some(many[..50].to_vec()), &many[50..]).map(|s| s.len()), Some(100));
        assert_eq!(survive(Some(many.clone()), &many[..MAX_SURVIVORS - 99]), None, "too many rows");
        assert_eq!(survive(Some(vec![kept(0, MAX_SURVIVOR_BYTES)]), &[kept(1, 1)]), None, "too many bytes");
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

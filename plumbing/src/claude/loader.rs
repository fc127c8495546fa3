//! Claude Code 2.1.328's loader: which rows of a transcript make the conversation it resumes.
//!
//! Mirrors, step by step, what the binary does on `--resume` (read from its bundled code; see
//! docs/claude-code.md): the 5 MiB size gate, the uuid map, the relink of a compaction's
//! preserved segment, the chain walk from the leaf with its timestamp fallback, the recovery of
//! rows split by `message.id` (parallel tool calls) and of their tool results, and the rows hung
//! under the leaf. The result is a list of row indices in conversation order; the relink may give
//! rows other parents, so the chain also carries the parents it used.

use std::collections::{HashMap, HashSet, VecDeque};
use std::ops::Range;

use super::transcript::{Row, Transcript};

/// Files above this size are read by Claude Code's byte scanner, which drops everything before
/// the last compaction boundary that has no preserved segment (`SKIP_PRECOMPACT_THRESHOLD`).
pub const SIZE_GATE: usize = 5 * 1024 * 1024;

/// How far back (ms) the chain walk looks for a stand-in when a parent is missing.
const FALLBACK_WINDOW_MS: i64 = 5000;

/// The most rows [`Chain::survivors`] lists (a restart reads them all again).
pub const MAX_SURVIVORS: usize = 128;

/// How the loader is run.
#[derive(Clone, Copy, Debug, Default)]
pub struct LoadOptions {
    /// `CLAUDE_CODE_DISABLE_PRECOMPACT_SKIP` is set: no size gate.
    pub no_size_gate: bool,
}

impl LoadOptions {
    /// The options Claude Code would use in this process's environment.
    pub fn from_env() -> LoadOptions {
        LoadOptions { no_size_gate: std::env::var_os("CLAUDE_CODE_DISABLE_PRECOMPACT_SKIP").is_some() }
    }
}

/// The conversation Claude Code loads: rows (indices into [`Transcript::rows`]) in order.
#[derive(Debug)]
pub struct Chain {
    /// The rows, oldest first.
    pub rows: Vec<usize>,
    /// The leaf the walk started from (the last non-sidechain user or assistant row).
    pub leaf: Option<usize>,
    /// The first row index the size gate kept (0 when the gate did not apply).
    pub gate_start: usize,
    /// Whether a preserved segment was relinked.
    pub relinked: bool,
    /// The latest timestamp (ms) of a row whose parent the walk looked for a stand-in for (it
    /// was missing; a stand-in is never later than the row): rows appended with later
    /// timestamps, or none, leave every stand-in as it was ([`open_end`]).
    pub looked: Option<i64>,
    /// The chain's end is open: rows appended to the file that hang one after the other from its
    /// last row (the tip) make the chain this one followed by them ([`open_end`]).
    pub open: bool,
    /// The chain's end is open at its leaf and is the whole of one API message's rows followed
    /// only by tool results under them: appended results may hang from any of those rows, and
    /// when no result follows them yet, appended rows may carry on that message
    /// ([`answerable`]). The positions in `rows` of the message's rows.
    pub answerable: Option<Range<usize>>,
    /// The uuid map (after the size gate) held a compaction boundary with anchors: an appended
    /// boundary without them then drops every row before it.
    pub anchored: bool,
    /// The anchor the preserved rows were hung from, when they were.
    pub anchor: Option<String>,
    /// A uuid was written twice (the map keeps the later row at the first one's place, so the
    /// rows' order in the file is not the map's).
    pub reused: bool,
    /// Every row of the uuid map after the size gate and the relink, in file order, when there
    /// are at most [`MAX_SURVIVORS`] and the relink hung no row whose parent it dropped from the
    /// preserved rows: the rows a file made of them followed by rows appended (no boundary
    /// among them, each user or assistant row hanging from one of them or from none) loads as
    /// the longer file does (the same map, the same parents, the rest dropped in both).
    pub survivors: Option<Vec<usize>>,
    /// With [`Chain::survivors`]: the parents, missing from the rows the map was given, of
    /// user and assistant rows among them. Missing from the whole file too, they leave those
    /// rows where they are; a dropped row there would have made them orphans.
    pub loose: Vec<String>,
}

/// The uuid map: Claude Code's `Map<uuid, row>`, in first-insertion order (a duplicate uuid keeps
/// its first position and takes the later row, as `Map.set` does).
struct UuidMap<'t> {
    order: Vec<&'t str>,
    rows: HashMap<&'t str, usize>,
    parent: HashMap<&'t str, Option<&'t str>>,
    position: HashMap<&'t str, usize>,
}

impl<'t> UuidMap<'t> {
    fn row<'a>(&self, t: &'a Transcript, uuid: &str) -> Option<&'a Row> {
        self.rows.get(uuid).map(|&i| &t.rows[i])
    }

    fn parent(&self, uuid: &str) -> Option<&'t str> {
        self.parent.get(uuid).copied().flatten()
    }

    fn live(&self) -> impl Iterator<Item = &'t str> + '_ {
        self.order.iter().copied().filter(|u| self.rows.contains_key(u))
    }
}

/// Claude Code's bridge over `progress` rows (hook and tool progress, written inside the
/// `parentUuid` chain by 2.1.x before 2.1.100 or so): they never enter the uuid map, and a row
/// whose parent is one takes, as it is read, that row's own parent instead (through any run of
/// progress rows read before it; a progress root gives no parent).
#[derive(Default)]
struct ProgressBridge<'t> {
    parents: HashMap<&'t str, Option<&'t str>>,
}

impl<'t> ProgressBridge<'t> {
    /// Records `row` when it is a progress row with a uuid (then it is nothing else).
    fn take(&mut self, row: &'t Row) -> bool {
        let Some(uuid) = row.uuid().filter(|_| row.kind() == "progress") else { return false };
        let parent = self.parent(row);
        self.parents.insert(uuid, parent);
        true
    }

    /// The parent `row` is read with: its own, or what stands for a progress parent.
    fn parent(&self, row: &'t Row) -> Option<&'t str> {
        let parent = row.parent_uuid()?;
        self.parents.get(parent).copied().unwrap_or(Some(parent))
    }
}

/// Loads the conversation as Claude Code does on `--resume`.
#[cfg(any(test, feature = "fixture-host"))]
pub fn load(t: &Transcript, options: LoadOptions) -> Chain {
    load_at(t, options, None)
}

/// Loads the conversation ending at row `leaf` (an index into [`Transcript::rows`]) instead of
/// Claude Code's own leaf: the same uuid map, relink, walk and recovery, as if that row were the
/// last message. A row the uuid map does not hold (not a conversation row, before the size
/// gate's boundary, or dropped by the relink) gives an empty chain.
pub fn load_at(t: &Transcript, options: LoadOptions, leaf: Option<usize>) -> Chain {
    let gate_start = if options.no_size_gate || t.file.raw().len() <= SIZE_GATE { 0 } else { size_gate(t) };
    let mut map = UuidMap { order: Vec::new(), rows: HashMap::new(), parent: HashMap::new(), position: HashMap::new() };
    let mut reused = false;
    let mut bridge = ProgressBridge::default();
    for (i, row) in t.rows.iter().enumerate().skip(gate_start) {
        if bridge.take(row) || !row.is_conversation() {
            continue;
        }
        let uuid = row.uuid().expect("conversation rows have a uuid");
        if map.rows.contains_key(uuid) {
            reused = true;
        } else {
            map.position.insert(uuid, map.order.len());
            map.order.push(uuid);
        }
        map.rows.insert(uuid, i);
        map.parent.insert(uuid, bridge.parent(row));
    }
    let relink = relink(t, &mut map);
    let relinked = relink.done;
    let (survivors, loose) = survivors(t, &map, &relink).unzip();
    let (anchored, anchor) = (relink.anchored, relinked.flatten().map(str::to_string));
    let leaf = match leaf {
        None => map.live().filter(|u| is_main_message(&t.rows[map.rows[u]])).last(),
        Some(row) => t.rows.get(row).and_then(Row::uuid).filter(|u| map.rows.contains_key(u)),
    };
    let Some(leaf) = leaf else {
        return Chain {
            rows: Vec::new(),
            leaf: None,
            gate_start,
            relinked: relinked.is_some(),
            looked: None,
            open: false,
            answerable: None,
            anchored,
            anchor,
            reused,
            survivors,
            loose: loose.unwrap_or_default(),
        };
    };
    let (walk, looked) = walk(t, &map, leaf);
    let mut seen: HashSet<&str> = walk.iter().copied().collect();
    let mut chain = recover(t, &map, walk, &mut seen);
    hang_under_leaf(t, &map, leaf, &mut seen, &mut chain);
    let open = open_end(t, &map, leaf, &chain, relinked.flatten());
    let answerable = open.then(|| answerable(t, &map, &chain, relinked.flatten(), looked)).flatten();
    Chain {
        rows: chain.iter().map(|u| map.rows[u]).collect(),
        leaf: Some(map.rows[leaf]),
        gate_start,
        relinked: relinked.is_some(),
        looked,
        open,
        answerable,
        anchored,
        anchor,
        reused,
        survivors,
        loose: loose.unwrap_or_default(),
    }
}

/// [`Chain::survivors`] and [`Chain::loose`]; `None` past [`MAX_SURVIVORS`] rows or when the
/// relink hung orphans from the preserved rows. Only the map's rows are looked at, not every
/// row the map was given.
fn survivors(t: &Transcript, map: &UuidMap<'_>, relink: &Relink<'_>) -> Option<(Vec<usize>, Vec<String>)> {
    if relink.orphans || map.rows.len() > MAX_SURVIVORS {
        return None;
    }
    let mut kept: Vec<(&str, usize)> = map.rows.iter().map(|(u, &i)| (*u, i)).collect();
    kept.sort_by_key(|(u, _)| map.position[u]);
    let main = kept.iter().filter(|(_, i)| matches!(t.rows[*i].kind(), "user" | "assistant"));
    let mut loose: Vec<String> = Vec::new();
    for p in main.filter_map(|(u, _)| map.parent(u)).filter(|p| !map.position.contains_key(p)) {
        if !loose.iter().any(|l| l == p) {
            loose.push(p.to_string());
        }
    }
    Some((kept.into_iter().map(|(_, i)| i).collect(), loose))
}

/// The positions in `chain` of an API message's rows when, the chain's end being open, appended
/// rows may also carry on that message or answer its calls out of order: the chain ends at the
/// leaf with the message's rows G (all the live rows of its `message.id`, assistant rows, each
/// the child of the one before, none the relink's anchor) followed only by tool-result user rows
/// Rs on no side chain, each the child of a row of G; the rows of G and Rs are in file order,
/// later than [`Chain::looked`] (or with no timestamp), and every row whose parent is one of
/// them is one of them.
///
/// New rows may then carry on the message (the first new rows, while no result follows G: the
/// recovery's group for that message is G and the new rows, all on the walk, with nothing under
/// them off it, so it recovers nothing, and the splice it makes holds no row it could move or
/// hang a run under). And a new tool-result row X (a user row, on no side chain, with a new
/// uuid) hanging from any row A of G, not only from the tip, makes the chain this one followed
/// by X, still answerable: the uuid map keeps every old row and parent (X is no boundary, does
/// not hang from the anchor and is not before the last boundary); X is the new leaf; the walk
/// goes up from X to A, up G to its first row and on as before (G a path, no row before G a
/// child of G or Rs; where a parent is missing, the rows that may stand in for it are the old
/// walk's but rows of G and Rs, none of which can be one, being later); the recovery finds the same groups and runs for the
/// messages before G (none of their rows is of G, Rs or X, which are no meta rows, and the only
/// one of them a meta row can be the parent of is G's first, on both walks), and for G's message
/// recovers the rest of G and Rs (X is on the walk, and nothing else hangs from G or Rs), which
/// it merges in file order before X, the last row; nothing is hung under X.
fn answerable(
    t: &Transcript,
    map: &UuidMap<'_>,
    chain: &[&str],
    anchor: Option<&str>,
    looked: Option<i64>,
) -> Option<Range<usize>> {
    let row = |u: &str| &t.rows[map.rows[u]];
    let result = |u: &str| row(u).kind() == "user" && row(u).has_tool_result() && !row(u).is_sidechain();
    let end = chain.len() - chain.iter().rev().take_while(|u| result(u)).count();
    let last = row(chain[..end].last()?);
    let id = last.message_id().filter(|_| last.kind() == "assistant")?;
    let of_message = |u: &str| row(u).kind() == "assistant" && row(u).message_id() == Some(id);
    let group: Vec<&str> = map.live().filter(|u| of_message(u)).collect();
    let start = end.checked_sub(group.len())?;
    let rows: HashSet<&str> = chain[start..].iter().copied().collect();
    let linked = group.windows(2).all(|w| map.parent(w[1]) == Some(w[0]));
    let answers = chain[end..].iter().all(|u| map.parent(u).is_some_and(|p| group.contains(&p)));
    let ordered = chain[start..].windows(2).all(|w| map.position[w[0]] < map.position[w[1]]);
    let closed = map.live().all(|u| map.parent(u).is_none_or(|p| !rows.contains(p) || rows.contains(u)));
    let unanchored = anchor.is_none_or(|a| !group.contains(&a));
    // Rows of G and Rs off the new walk may stand in for no missing parent.
    let later = chain[start..].iter().all(|u| row(u).time_ms().is_none_or(|at| looked.is_none_or(|l| at > l)));
    let fits = linked && answers && ordered && closed && unanchored && later;
    (chain[start..end] == group[..] && fits).then_some(start..end)
}

/// Tells whether rows appended after the chain's last row (the tip), each the child of the one
/// before, the first the tip's, with new uuids (no row of the file names them, not even as a
/// parent or in a boundary's anchors), new `message.id`s (but the leaf's, first, when
/// [`answerable`]), no boundary, summary or side-chain row among them, the rows hung under the
/// leaf (no user or assistant row) in time order, and each timestamp later than
/// [`Chain::looked`] (or none), give the chain of the longer file as this chain followed by
/// them. It is so when the map's rows under the leaf are exactly the chain's rows after it, one
/// path from the leaf to the tip (each the only child of the one before, the tip childless; none
/// a main message, a boundary or on a side chain) and the tip is not the relink's anchor. Then,
/// step by step:
/// - the uuid map keeps every old row as it was (new uuids), the size gate and the relink find
///   the same boundaries (none is new) and give the same parents (no new row hangs from the
///   anchor, the dropped rows or a row the old ones name);
/// - the leaf is the last new main message (the map keeps file order for new uuids), else the
///   old leaf; the walk from it goes up the new rows to the tip, then up the path to the old
///   leaf and on as before: where a parent is missing, the rows that may stand in for it are
///   the old walk's but the path's (none of them was one: a row on the walk before the leaf
///   under it would not leave the path alone) and no new row (each later than any such parent's
///   child, or with no timestamp), so the same stand-in is found, or none again;
/// - the recovery of split messages finds the same groups (new message ids) and the same
///   results under them (a new result is on the walk); the only rows it can newly take are the
///   new rows after the new leaf (hanging from it), which it puts at the end in file order;
/// - what is hung under the leaf is the rest of the path, at the end, in timestamp order: file
///   order, as those rows' timestamps do not go back.
fn open_end(t: &Transcript, map: &UuidMap<'_>, leaf: &str, chain: &[&str], anchor: Option<&str>) -> bool {
    let Some(at) = chain.iter().rposition(|u| *u == leaf) else { return false };
    let end = &chain[at..];
    let tip = *end.last().expect("the leaf is in it");
    let plain = |u: &str| {
        let r = &t.rows[map.rows[u]];
        matches!(r.kind(), "attachment" | "system") && !r.is_compact_boundary() && !r.is_sidechain()
    };
    Some(tip) != anchor && end[1..].iter().all(|u| plain(u)) && is_path(map, end)
}

/// Tells whether `rows` are one path in the map: each the only child of the one before, the
/// last childless.
fn is_path(map: &UuidMap<'_>, rows: &[&str]) -> bool {
    let next: HashMap<&str, Option<&str>> =
        rows.iter().enumerate().map(|(i, u)| (*u, rows.get(i + 1).copied())).collect();
    rows.windows(2).all(|w| map.parent(w[1]) == Some(w[0]))
        && map.live().all(|u| map.parent(u).and_then(|p| next.get(p)).is_none_or(|n| *n == Some(u)))
}

fn is_main_message(row: &Row) -> bool {
    matches!(row.kind(), "user" | "assistant") && !row.is_sidechain()
}

/// The index of the first row the byte scanner keeps: the line of the last compaction boundary
/// without anchors whose first 256 bytes name `"compact_boundary"` (0 when there is none).
pub(super) fn size_gate(t: &Transcript) -> usize {
    let mut start = 0;
    for (i, row) in t.rows.iter().enumerate() {
        if cuts(t, row) {
            start = i;
        }
    }
    start
}

/// Tells whether the size gate may cut at `row`: a compaction boundary without anchors whose
/// first 256 bytes name `"compact_boundary"`.
pub(super) fn cuts(t: &Transcript, row: &Row) -> bool {
    let raw = t.raw(row);
    let head = &raw[..raw.len().min(256)];
    let named = memchr::memmem::find(head, b"\"compact_boundary\"").is_some();
    named && row.is_compact_boundary() && !is_anchored(row)
}

/// Tells whether a compaction boundary carries a preserved segment (its anchors).
pub(super) fn is_anchored(row: &Row) -> bool {
    let meta = row.compact_metadata();
    meta.is_some_and(|m| m.get("preservedSegment").is_some() || m.get("preservedMessages").is_some())
}

/// What [`relink`] did.
struct Relink<'t> {
    /// `None` when nothing was relinked, else the anchor the preserved rows were hung from
    /// (`None` when rows were only dropped).
    done: Option<Option<&'t str>>,
    /// The map held a boundary with anchors.
    anchored: bool,
    /// Rows whose parent was dropped were hung from the preserved rows' last.
    orphans: bool,
}

/// `applyPreservedSegmentRelinks`: when a boundary carries a preserved segment, gives the listed
/// rows their new parents and drops the unlisted rows before the last boundary.
fn relink<'t>(t: &'t Transcript, map: &mut UuidMap<'t>) -> Relink<'t> {
    let mut anchored = false;
    let done = relink_rows(t, map, &mut anchored);
    Relink { done: done.map(|(anchor, _)| anchor), anchored, orphans: done.is_some_and(|(_, o)| o) }
}

/// [`relink`]'s work: the anchor (as [`Relink::done`]) and whether orphans were hung; sets
/// `anchored` when the map holds a boundary with anchors.
fn relink_rows<'t>(t: &'t Transcript, map: &mut UuidMap<'t>, anchored: &mut bool) -> Option<(Option<&'t str>, bool)> {
    let mut last_boundary = None;
    let mut last_anchored = None;
    for (k, u) in map.live().enumerate() {
        let row = &t.rows[map.rows[u]];
        if row.is_compact_boundary() {
            last_boundary = Some(k);
            if is_anchored(row) {
                last_anchored = Some((k, u));
            }
        }
    }
    *anchored = last_anchored.is_some();
    let (Some(h), Some((g, anchored_uuid))) = (last_boundary, last_anchored) else {
        return None;
    };
    let positions: HashMap<&str, usize> = map.live().enumerate().map(|(k, u)| (u, k)).collect();
    let mut preserved: Option<(&'t str, Vec<&'t str>)> = None;
    if g == h {
        let meta = t.rows[map.rows[anchored_uuid]].compact_metadata()?;
        match preserved_rows(t, map, meta) {
            None => return None,
            Some((anchor, uuids)) if !uuids.is_empty() => preserved = Some((anchor, uuids)),
            Some(_) => {}
        }
    }
    if let Some((_, uuids)) = &preserved {
        if uuids.iter().any(|u| !map.rows.contains_key(u)) {
            return None;
        }
    }
    let listed: HashSet<&str> = preserved.iter().flat_map(|(_, u)| u.iter().copied()).collect();
    if let Some((anchor, uuids)) = &preserved {
        let mut previous = *anchor;
        for u in uuids {
            map.parent.insert(u, Some(previous));
            previous = u;
        }
        let tail = *uuids.last().expect("non-empty");
        let others: Vec<&str> = map.live().filter(|u| map.parent(u) == Some(*anchor) && *u != uuids[0]).collect();
        for u in others {
            map.parent.insert(u, Some(tail));
        }
    }
    let dropped: Vec<&str> = map.live().filter(|u| positions[u] < h && !listed.contains(u)).collect();
    for u in &dropped {
        map.rows.remove(u);
    }
    let mut hung = false;
    if let Some((_, uuids)) = &preserved {
        if !dropped.is_empty() {
            let tail = *uuids.last().expect("non-empty");
            let gone: HashSet<&str> = dropped.iter().copied().collect();
            let orphans: Vec<&str> = map
                .live()
                .filter(|u| matches!(t.rows[map.rows[u]].kind(), "user" | "assistant"))
                .filter(|u| map.parent(u).is_some_and(|p| gone.contains(p)))
                .collect();
            hung = !orphans.is_empty();
            for u in orphans {
                map.parent.insert(u, Some(tail));
            }
        }
    }
    (preserved.is_some() || !dropped.is_empty()).then(|| (preserved.map(|(anchor, _)| anchor), hung))
}

/// The anchor and the preserved rows of a boundary: `preservedMessages` as listed, else the
/// `preservedSegment` walked from its tail to its head (`None` when that walk breaks).
fn preserved_rows<'t>(
    t: &'t Transcript,
    map: &UuidMap<'t>,
    meta: &'t serde_json::Value,
) -> Option<(&'t str, Vec<&'t str>)> {
    if let Some(list) = meta.get("preservedMessages") {
        let anchor = list.get("anchorUuid").and_then(|v| v.as_str()).unwrap_or("");
        let uuids = list.get("uuids").and_then(|v| v.as_array()).into_iter().flatten().filter_map(|v| v.as_str());
        return Some((anchor, uuids.collect()));
    }
    let segment = meta.get("preservedSegment")?;
    let field = |k: &str| segment.get(k).and_then(|v| v.as_str());
    let (head, anchor) = (field("headUuid")?, field("anchorUuid").unwrap_or(""));
    let mut seen = HashSet::new();
    let mut uuids = Vec::new();
    let mut at = field("tailUuid").and_then(|u| map.row(t, u));
    while let Some(row) = at {
        let uuid = row.uuid()?;
        if !seen.insert(uuid) {
            break;
        }
        uuids.push(uuid);
        if uuid == head {
            uuids.reverse();
            return Some((anchor, uuids));
        }
        at = map.parent(uuid).and_then(|p| map.row(t, p));
    }
    None
}

/// The walk from the leaf to a root; a missing parent (or a cycle) is stood in for by the newest
/// row on the same side at most 5 s older, as Claude Code's timestamp fallback does.
/// Also returns the latest timestamp of a row whose parent was looked for a stand-in (only a row
/// no later than it can be one).
fn walk<'t>(t: &'t Transcript, map: &UuidMap<'t>, leaf: &'t str) -> (Vec<&'t str>, Option<i64>) {
    let mut chain = Vec::new();
    let mut seen = HashSet::new();
    let mut looked = None;
    let mut at = Some(leaf);
    while let Some(u) = at {
        if !seen.insert(u) {
            break;
        }
        chain.push(u);
        let Some(parent) = map.parent(u) else { break };
        at = match map.rows.contains_key(parent) && !seen.contains(parent) {
            true => Some(parent),
            false => {
                looked = looked.max(t.rows[map.rows[u]].time_ms());
                stand_in(t, map, u, &seen)
            }
        };
    }
    chain.reverse();
    (chain, looked)
}

fn stand_in<'t>(t: &Transcript, map: &UuidMap<'t>, child: &str, seen: &HashSet<&str>) -> Option<&'t str> {
    let row = &t.rows[map.rows[child]];
    let time = row.time_ms()?;
    let side = row.is_sidechain();
    // Among equal times the earliest row in file order wins (Claude Code sorts a reversed list).
    let mut best: Option<(i64, &str)> = None;
    for u in map.live() {
        let r = &t.rows[map.rows[u]];
        if seen.contains(u)
            || r.is_sidechain() != side
            || (r.kind() == "system" && r.subtype() == Some("file_snapshot"))
        {
            continue;
        }
        let Some(at) = r.time_ms() else { continue };
        if at <= time && best.is_none_or(|(b, _)| at > b) {
            best = Some((at, u));
        }
    }
    best.filter(|(at, _)| time - at <= FALLBACK_WINDOW_MS).map(|(_, u)| u)
}

/// Rows that continue a split API message: the other rows sharing a `message.id` with an
/// assistant row on the chain, and the tool results under them, put back in file order right
/// after that message's rows (Claude Code's parallel tool-result recovery).
fn recover<'t>(t: &'t Transcript, map: &UuidMap<'t>, chain: Vec<&'t str>, seen: &mut HashSet<&'t str>) -> Vec<&'t str> {
    let row = |u: &str| &t.rows[map.rows[u]];
    if !chain.iter().any(|u| row(u).kind() == "assistant") {
        return chain;
    }
    let mut by_id: HashMap<&str, Vec<&str>> = HashMap::new();
    let mut results_under: HashMap<&str, Vec<&str>> = HashMap::new();
    let mut children: HashMap<&str, Vec<&str>> = HashMap::new();
    for u in map.live() {
        let r = row(u);
        if r.kind() == "assistant" {
            if let Some(id) = r.message_id() {
                by_id.entry(id).or_default().push(u);
            }
        } else if r.kind() == "user" && r.has_tool_result() {
            if let Some(p) = map.parent(u) {
                results_under.entry(p).or_default().push(u);
            }
        }
        if let Some(p) = map.parent(u) {
            children.entry(p).or_default().push(u);
        }
    }
    let index: HashMap<&str, usize> = chain.iter().enumerate().map(|(i, u)| (*u, i)).collect();
    let file_pos = |u: &str| map.position[u];
    struct Splice<'t> {
        start: usize,
        end: usize,
        recovered: Vec<&'t str>,
        anchored: HashMap<&'t str, Vec<&'t str>>,
    }
    let mut splices: Vec<Splice> = Vec::new();
    let mut done_ids = HashSet::new();
    for &u in chain.iter().filter(|u| row(u).kind() == "assistant") {
        let Some(id) = row(u).message_id() else { continue };
        if !done_ids.insert(id) {
            continue;
        }
        let group: Vec<&str> = by_id.get(id).cloned().unwrap_or_else(|| vec![u]);
        let mut recovered: Vec<&str> = group.iter().copied().filter(|g| !seen.contains(g)).collect();
        let mut taken = HashSet::new();
        for g in &group {
            for &r in results_under.get(g).into_iter().flatten() {
                if !seen.contains(r) && taken.insert(r) {
                    recovered.push(r);
                }
            }
        }
        for r in &recovered {
            seen.insert(r);
        }
        let start = index[u];
        let mut end = start + 1;
        for g in &group {
            if let Some(&i) = index.get(g) {
                end = end.max(i + 1);
            }
        }
        while end < chain.len() && continues_message(row(chain[end]), id) {
            end += 1;
        }
        // Linear runs of attachment/meta rows hanging under the message's rows come along.
        let mut anchored = HashMap::new();
        if group.iter().any(|g| row(g).has_tool_use()) {
            let mut owners: Vec<&str> = group.clone();
            for g in &group {
                for &r in results_under.get(g).into_iter().flatten() {
                    if seen.contains(r) && !owners.contains(&r) {
                        owners.push(r);
                    }
                }
            }
            for owner in owners {
                for run in hanging_runs(t, map, &children, owner, seen) {
                    seen.extend(run.iter().copied());
                    recovered.extend(run);
                }
            }
            for &c in &chain[start + 1..end] {
                if !is_meta_row(row(c)) {
                    continue;
                }
                let mut found = Vec::new();
                for run in hanging_runs(t, map, &children, c, seen) {
                    seen.extend(run.iter().copied());
                    found.extend(run);
                }
                if !found.is_empty() {
                    anchored.insert(c, found);
                }
            }
        }
        if recovered.is_empty() && anchored.is_empty() {
            continue;
        }
        recovered.sort_by_key(|r| file_pos(r));
        splices.push(Splice { start, end, recovered, anchored });
    }
    if splices.is_empty() {
        return chain;
    }
    splices.sort_by_key(|s| s.start);
    let mut merged: Vec<Splice> = Vec::new();
    for s in splices {
        match merged.last_mut() {
            Some(m) if s.start < m.end => {
                m.end = m.end.max(s.end);
                m.recovered.extend(s.recovered);
                m.recovered.sort_by_key(|r| file_pos(r));
                for (k, v) in s.anchored {
                    m.anchored.entry(k).or_default().extend(v);
                }
            }
            _ => merged.push(s),
        }
    }
    let mut out = Vec::with_capacity(chain.len());
    let mut from = 0;
    for s in merged {
        out.extend_from_slice(&chain[from..=s.start]);
        let mut next = 0;
        for &c in &chain[s.start + 1..s.end] {
            while next < s.recovered.len() && file_pos(s.recovered[next]) < file_pos(c) {
                out.push(s.recovered[next]);
                next += 1;
            }
            out.push(c);
            out.extend(s.anchored.get(c).into_iter().flatten().copied());
        }
        out.extend_from_slice(&s.recovered[next..]);
        from = s.end;
    }
    out.extend_from_slice(&chain[from..]);
    out
}

/// Rows that may follow a split message's rows before the next turn: more rows of the same
/// message, meta or tool-result user rows, attachments, system rows other than a boundary.
fn continues_message(row: &Row, id: &str) -> bool {
    match row.kind() {
        "assistant" => row.message_id() == Some(id),
        "user" => row.is_meta() || row.has_tool_result(),
        "attachment" => true,
        "system" => !row.is_compact_boundary(),
        _ => false,
    }
}

/// Attachment rows, system rows other than a boundary, and meta user rows without results.
fn is_meta_row(row: &Row) -> bool {
    match row.kind() {
        "attachment" => true,
        "system" => !row.is_compact_boundary(),
        "user" => row.is_meta() && !row.has_tool_result(),
        _ => false,
    }
}

/// For each unseen child of `owner`: the linear run of meta rows starting there (empty when the
/// run branches or reaches a row that is not meta), as Claude Code's `VAe` collects them.
fn hanging_runs<'t>(
    t: &Transcript,
    map: &UuidMap<'t>,
    children: &HashMap<&'t str, Vec<&'t str>>,
    owner: &str,
    seen: &HashSet<&str>,
) -> Vec<Vec<&'t str>> {
    let side = t.rows[map.rows[owner]].is_sidechain();
    let mut runs = Vec::new();
    for &first in children.get(owner).into_iter().flatten() {
        let mut run = Vec::new();
        let mut at = Some(first);
        while let Some(u) = at {
            let r = &t.rows[map.rows[u]];
            if seen.contains(u) || r.is_sidechain() != side || !is_meta_row(r) {
                run.clear();
                break;
            }
            run.push(u);
            let next: Vec<&str> =
                children.get(u).into_iter().flatten().copied().filter(|c| !seen.contains(c)).collect();
            if next.len() > 1 {
                run.clear();
                break;
            }
            at = next.first().copied();
        }
        if !run.is_empty() {
            runs.push(run);
        }
    }
    runs
}

/// Rows that are not user or assistant rows, hung (at any depth) under the leaf, appended in
/// timestamp order (what Claude Code adds after the walk).
fn hang_under_leaf<'t>(
    t: &Transcript,
    map: &UuidMap<'t>,
    leaf: &'t str,
    seen: &mut HashSet<&'t str>,
    chain: &mut Vec<&'t str>,
) {
    let mut under: HashMap<&str, Vec<&str>> = HashMap::new();
    for u in map.live() {
        let r = &t.rows[map.rows[u]];
        if let Some(p) = map.parent(u) {
            if !matches!(r.kind(), "user" | "assistant") {
                under.entry(p).or_default().push(u);
            }
        }
    }
    let mut found = Vec::new();
    let mut queue = VecDeque::from([leaf]);
    while let Some(u) = queue.pop_front() {
        for &c in under.get(u).into_iter().flatten() {
            if seen.insert(c) {
                found.push(c);
                queue.push_back(c);
            }
        }
    }
    found.sort_by(|a, b| t.rows[map.rows[a]].timestamp().cmp(&t.rows[map.rows[b]].timestamp()));
    chain.extend(found);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::SessionFile;

    /// `compact` cut after its boundary, after its summary (the relink's anchor), and whole: the
    /// rows left in the uuid map are the preserved row and the rows from the boundary on; while
    /// no row has the anchor, it is the one missing parent of a user or assistant row among them.
    #[test]
    fn a_compaction_leaves_the_preserved_rows_and_those_from_its_boundary() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/claude/compact/transcript.jsonl");
        let bytes = std::fs::read(path).unwrap();
        let lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
        let boundary = lines.iter().position(|l| memchr::memmem::find(l, b"\"compact_boundary\"").is_some()).unwrap();
        for cut in [boundary + 1, boundary + 2, lines.len()] {
            let t = Transcript::parse(SessionFile::from_bytes("t.jsonl".into(), lines[..cut].concat()));
            let chain = load(&t, LoadOptions::default());
            let b = t.rows.iter().position(Row::is_compact_boundary).unwrap();
            let meta = t.rows[b].compact_metadata().unwrap();
            let field = |k: &str| meta["preservedSegment"][k].as_str().unwrap();
            let preserved = t.rows.iter().position(|r| r.uuid() == Some(field("headUuid"))).unwrap();
            let after = (b..t.rows.len()).filter(|&i| t.rows[i].is_conversation());
            let expected: Vec<usize> = std::iter::once(preserved).chain(after).collect();
            assert_eq!(chain.survivors.as_deref(), Some(&expected[..]), "cut after line {cut}");
            let anchor = field("anchorUuid");
            let loose: &[&str] = if cut == boundary + 1 { &[anchor] } else { &[] };
            assert_eq!(chain.loose, loose, "cut after line {cut}");
            assert_eq!(chain.anchor.as_deref(), Some(anchor));
            assert!(chain.relinked && chain.anchored && !chain.reused);
        }
    }
}

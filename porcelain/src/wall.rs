//! The wall: which regions are folded at a leaf, derived from the shake log entries on its path
//! (never from the raw edit rows), plus what the content was before any shake edit.
//!
//! Everything here is a pure function of the projection, so the store can keep the result as a
//! per-leaf overlay ([`Wall::overlay`]) and recompute it to check.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::hash::BuildHasher;

use hashbrown::hash_table::{Entry, HashTable};

/// The hasher of the wall's maps and sets (ids, not keys an attacker picks to collide).
type Fast = foldhash::fast::RandomState;

use crate::scope::placeholder;
#[cfg(test)]
use serde::Serialize;
use serde_json::value::RawValue;
use shake_plumbing::host::{View, Writer};
use shake_plumbing::js::write_string;
use shake_plumbing::regions::{Region, RegionKind};

use crate::log_entry::{self, LogData, LogHead, LogTarget, Op, Targets};

/// One folded region at a leaf. Its strings are borrowed from the session (its log entry's
/// line) where they can be: a wall holds an item per folded region, and their own copies were
/// 2.6 MiB of a `status` on 100,000 tiny entries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item<'w> {
    /// The target entry's id (Claude Code: the tool_use_id).
    pub target: Cow<'w, str>,
    /// The target's index in the session's entries.
    pub index: usize,
    /// What was folded.
    pub kind: RegionKind,
    /// Tool name, fence info string, XML tag or image type.
    pub label: Cow<'w, str>,
    /// The region's size as logged, in the log entry's tokenizer.
    pub tokens: u64,
    /// The content block holding the region (`None` for string content or a whole tool result).
    pub block: Option<usize>,
    /// A block region's byte range in that text.
    pub at: Option<(usize, usize)>,
    /// The log entry that folded it (empty for a region a plan is about to fold).
    pub log: &'w str,
    /// For a tool input, how the model gets it back when the host keeps it itself (Claude
    /// Code's saved file: [`View::input_way_back`]); `None`: `shake show`.
    pub way_back: Option<Box<str>>,
}

impl<'w> Item<'w> {
    /// Places a region of entry `index` (id `target`) folded by log entry `log`.
    pub fn new(target: Cow<'w, str>, index: usize, r: Region, log: &'w str) -> Item<'w> {
        let label = Cow::Owned(r.label);
        Item { target, index, kind: r.kind, label, tokens: r.tokens, block: r.block, at: r.at, log, way_back: None }
    }

    /// The item a fold log's target names, at entry `index`, folded by log entry `log` (`None`
    /// for a kind this shake does not know).
    fn logged(t: &LogTarget<'w>, index: usize, log: &'w str) -> Option<Item<'w>> {
        Some(Item {
            target: t.id.clone(),
            index,
            kind: RegionKind::parse(&t.kind)?,
            label: t.label.clone(),
            tokens: t.tokens,
            block: t.block,
            at: t.at.map(|[a, b]| (a, b)),
            log,
            way_back: None,
        })
    }

    /// The item with the host's way back for a tool input of entry `index` in `view` (none for
    /// another kind).
    pub fn in_view(mut self, view: &View<'_, '_>) -> Item<'w> {
        if let (RegionKind::ToolInput, Some(block)) = (self.kind, self.block) {
            self.way_back = view.input_way_back(self.index, block).map(String::into_boxed_str);
        }
        self
    }

    /// The identity of a region inside its target: a region is folded at most once.
    pub fn key(&self) -> ItemKey {
        (self.kind, self.block, self.at)
    }

    /// The text the model sees instead of the region; `None` for a dropped thinking block.
    pub fn placeholder(&self) -> Option<String> {
        match self.kind {
            RegionKind::Thinking => None,
            RegionKind::ToolInput => {
                Some(crate::scope::input_placeholder(&self.label, self.tokens, &self.target, self.way_back.as_deref()))
            }
            kind => Some(placeholder(kind, &self.label, self.tokens)),
        }
    }
}

/// What identifies a region inside its target ([`Item::key`]): kind, block, byte range.
pub type ItemKey = (RegionKind, Option<usize>, Option<(usize, usize)>);

/// A log entry whose batch was cut short: it announces edits that were never written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Torn {
    /// The log entry's id.
    pub log: String,
    /// Its line in the file.
    pub line: usize,
    /// Edits it announces.
    pub listed: usize,
    /// Edits of those present on the path.
    pub written: usize,
}

/// A shake batch just appended after a leaf, as [`Wall::after_batch`] reads it.
#[derive(Debug)]
pub struct Appended<'d> {
    /// The log entry's id.
    pub log: &'d str,
    /// Its 1-based line in the file.
    pub line: usize,
    /// What it logs, each target's `edit` filled in with the id of the edit that follows it.
    pub data: &'d LogData<'d>,
}

/// The folds in force at one leaf, borrowing the session it was derived from.
#[derive(Clone, Debug, Default)]
pub struct Wall<'w> {
    /// Folded regions, in context order.
    pub items: Vec<Item<'w>>,
    /// Targets shake folded whose winning edit is now another tool's (so they are not folded).
    pub superseded: Vec<String>,
    /// Half-written batches on the path that no later log entry repaired.
    pub torn: Vec<Torn>,
    /// The shake log entries on the path, oldest first, as entry indexes (their data is read to
    /// derive the items, and let go: on 100,000 folded entries it was 4.5 MiB of a status).
    pub logs: Vec<usize>,
    /// Every edit id a shake log on the path announced, with the number (in `logs`) of the last
    /// log that announced it (so a log's distinct ids are counted as its targets are read).
    shake_edits: HashMap<Cow<'w, str>, usize, Fast>,
    /// Target id → its items (contiguous, as items are in context order): the ranges, hashed
    /// by their target id and found by their first item's (the ids are not copied: on 100,000
    /// folded entries a map keyed by a copy of each was 1.5 MB).
    by_target: HashTable<std::ops::Range<usize>>,
    /// The hasher of `by_target`.
    hasher: Fast,
    /// Target id → index of the latest non-shake edit for it in the context.
    foreign_edits: HashMap<String, usize, Fast>,
    /// Entry ids of `logs` and of the `foreign_edits` values (the overlay names entries by id:
    /// indexes differ between a session and its forks).
    ids: HashMap<usize, &'w str, Fast>,
}

impl<'w> Wall<'w> {
    /// Derives the wall at a projection's leaf.
    pub fn at(projection: &View<'w, '_>) -> Wall<'w> {
        Wall::derive(projection, None)
    }

    /// The overlay ([`Wall::overlay`]) of the wall at the last entry of a shake batch appended
    /// after the projection's leaf, from this wall (the wall at that leaf, [`Wall::at`]) and the
    /// batch, without the batch in the session, given to `write`: the log entry is placed after
    /// the session's entries (index `entries.len()`) and its edits win for their targets, as
    /// they do in pi's projection (the newest edit of a target in the context wins).
    ///
    /// Only the batch's targets change ([`Wall::items_after`]), so the cost is the batch's and
    /// the wall's, not the path's; where that shortcut could differ from the walk, the wall is
    /// derived again.
    pub fn after_batch<T>(
        &self,
        projection: &View<'_, '_>,
        batch: &Appended<'_>,
        write: impl FnOnce(&Overlay<'_>) -> T,
    ) -> T {
        let Some(items) = self.items_after(projection, batch) else {
            return write(&Wall::derive(projection, Some(batch)).overlay());
        };
        let mut overlay = self.overlay_of(items);
        overlay.torn.retain(|t| !batch.data.repairs.iter().any(|r| r == t.log));
        overlay.logs.push(batch.log);
        write(&overlay)
    }

    /// The items of [`Wall::after_batch`]'s overlay, in context order: the batch's targets'
    /// items updated as the path's walk would update them ([`Wall::derive`]), the others kept as
    /// they are (the path's logs are not parsed again, no item is copied). `None` where that
    /// shortcut could differ from the walk: a target of the batch superseded on this wall, so its
    /// folded items are not all on it; an edit id of the batch announced on the path already, or
    /// a foreign edit's; a target without an edit. What it uses to update them is let go before
    /// the overlay is written (1.7 MiB of a fold's peak on 25,000 targets).
    fn items_after<'o>(&'o self, projection: &View<'_, '_>, batch: &Appended<'o>) -> Option<Vec<Folded<'o>>> {
        let session = projection.session;
        let data = batch.data;
        let op = data.op();
        // Few ids, against which each of the batch's targets is checked (sets of the batch's
        // targets and edit ids were 1.3 MiB of an undo's peak on 25,000 targets).
        let foreign: HashSet<&str, Fast> =
            self.foreign_edits.values().filter_map(|i| self.ids.get(i).copied()).collect();
        let superseded: HashSet<&str, Fast> = self.superseded.iter().map(String::as_str).collect();
        let shortcut = |t: &LogTarget| {
            let edit = &*t.edit;
            !edit.is_empty()
                && !self.shake_edits.contains_key(edit)
                && !foreign.contains(edit)
                && !superseded.contains(&*t.id)
        };
        if !matches!(session.host().writer(), Writer::Append) || !data.targets.iter().all(shortcut) {
            return None;
        }
        // The wall's items of the batch's targets (each target's are contiguous: same entry).
        let mut touched = vec![false; self.items.len()];
        for t in &data.targets {
            touched[self.range_of(&t.id)].fill(true);
        }
        // An undo of every fold of its targets keeps none of their items: none is held.
        let clears = op == Some(Op::Undo) && data.undoes.is_none();
        // Room for the items kept (at most all the wall has) and those the batch folds.
        let kept = if clears { touched.iter().filter(|&&t| !t).count() } else { self.items.len() };
        let folds = if op == Some(Op::Fold) { data.targets.len() } else { 0 };
        // One list: the untouched items, then each touched target's in turn, updated at the
        // list's end as the walk updates them (a list per target held each item twice over).
        let mut items: Vec<Folded<'_>> = Vec::with_capacity(kept + folds);
        let untouched = self.items.iter().zip(&touched).filter(|(_, &t)| !t);
        items.extend(untouched.map(|(it, _)| Folded::Held(it)));
        // The batch's targets by entry, each entry's in the batch's order (the wall's items of
        // one target are a stable sort of their order folded, and ties are within one target).
        // A target that is no entry of the session has no items, and folds none.
        let mut order: Vec<(usize, usize)> =
            (data.targets.iter().enumerate()).filter_map(|(j, t)| Some((session.index_of(&t.id)?, j))).collect();
        order.sort_unstable();
        for group in order.chunk_by(|a, b| a.0 == b.0) {
            let (index, start) = (group[0].0, items.len());
            if !clears {
                let target = &*data.targets[group[0].1].id;
                items.extend(self.items_of(target).iter().filter(|it| it.target == target).map(Folded::Held));
            }
            for t in group.iter().map(|&(_, j)| &data.targets[j]) {
                match op {
                    Some(Op::Undo) => match &data.undoes {
                        Some(log) => retain_from(&mut items, start, |it| it.log() != log),
                        None => items.truncate(start),
                    },
                    Some(Op::Fold) => {
                        if RegionKind::parse(&t.kind).is_none() {
                            continue;
                        }
                        let new = Folded::Logged { target: t, index, log: batch.log };
                        retain_from(&mut items, start, |it| it.key() != new.key());
                        items.push(new);
                    }
                    None => {}
                }
            }
            // An item whose entry a compaction summarised away is inert (as in the walk).
            retain_from(&mut items, start, |it| projection.position(it.index()).is_some());
        }
        // Kept items are sorted already, the batch's by entry (in order too when the batch folds
        // what follows them, as a first fold does).
        sort_in_context(&mut items, |it| {
            let (_, block, at) = it.key();
            (projection.position(it.index()), block, at)
        });
        Some(items)
    }

    fn derive<'s: 'w>(projection: &View<'s, '_>, batch: Option<&Appended<'w>>) -> Wall<'w> {
        let session = projection.session;
        if let Writer::Fork(_) = session.host().writer() {
            return Wall::of_forks(projection);
        }
        let mut on_path: HashSet<&str, Fast> =
            projection.path.iter().filter(|&&i| session.is_edit(i)).map(|&i| session.entries[i].id()).collect();
        if let Some(b) = batch {
            on_path.extend(b.data.targets.iter().map(|t| &*t.edit).filter(|e| !e.is_empty()));
        }
        let appended = session.entries.len();
        // The log entry's id and line; the batch's log is not in the session.
        let entry = |i: usize| match batch.filter(|_| i == appended) {
            Some(b) => (b.log, b.line),
            None => (session.entries[i].id(), session.entries[i].line()),
        };
        let mut wall = Wall::default();
        // The path's logs, each read whole once (to check every target, and count them) before
        // any is applied, so that `folded` is made once with room for every fold's targets:
        // grown by doubling, its room to spare was 1 MiB at a status's peak on 25,000 items.
        let read: Vec<(usize, LogHead, usize)> = (projection.path.iter())
            .filter_map(|&i| log_entry::read(session, i).map(|(data, targets)| (i, data, targets)))
            .collect();
        let folds = |op: Option<Op>, targets: usize| if op == Some(Op::Fold) { targets } else { 0 };
        let room = read.iter().map(|(_, data, targets)| folds(data.op(), *targets)).sum::<usize>()
            + batch.map_or(0, |b| folds(b.data.op(), b.data.targets.len()));
        // Folded items in the order folded; an item is marked gone when an undo or a refold
        // replaces it, found through its target's chain (`Slot::last`, then each item's `prev`),
        // so each log costs its own targets only. The wall keeps what is left of this very list
        // (a second list of the items kept was a fifth of a status's wall on 100,000 folded
        // entries).
        let mut folded: Vec<Item> = Vec::with_capacity(room);
        let (mut gone, mut prev): (Vec<bool>, Vec<usize>) = (Vec::with_capacity(room), Vec::with_capacity(room));
        let mut slots: HashMap<usize, Slot, Fast> = HashMap::default();
        // Logs a later log repairs are not torn; known only once every log is read.
        let mut repaired: HashSet<String, Fast> = HashSet::default();
        let mut logs = Vec::new();
        // Each log is applied as its targets are read, one at a time, and let go: the wall holds
        // no list of a log's targets (one of 25,000 was the peak of a status on 100,000 tiny
        // entries), let alone every fold's of a long session.
        let mut apply =
            |i: usize, (op, undoes, repairs): (Option<Op>, Option<&str>, &[String]), targets: &dyn Targets<'w>| {
                let (log_id, line) = entry(i);
                let number = logs.len();
                logs.push(i);
                repaired.extend(repairs.iter().cloned());
                // The distinct edit ids the log announces, and of those the ones on the path.
                let (mut listed, mut written) = (0, 0);
                targets.each(&mut |t| {
                    let edit = &*t.edit;
                    let first = match wall.shake_edits.get_mut(edit) {
                        Some(last) => std::mem::replace(last, number) != number,
                        None => wall.shake_edits.insert(t.edit.clone(), number).is_none(),
                    };
                    if first {
                        listed += 1;
                        written += usize::from(on_path.contains(edit));
                    }
                    let Some(&edit) = on_path.get(edit) else { return };
                    let Some(index) = session.index_of(&t.id) else { return };
                    let slot = slots.entry(index).or_insert(Slot { last: NONE, edit });
                    slot.edit = edit;
                    match op {
                        Some(Op::Undo) => match undoes {
                            // `undo --last`: only the regions that one fold folded.
                            Some(log) => unfold(slot.last, &prev, &mut gone, |at| folded[at].log == log),
                            None => {
                                unfold(slot.last, &prev, &mut gone, |_| true);
                                slot.last = NONE;
                            }
                        },
                        Some(Op::Fold) => {
                            let Some(item) = Item::logged(t, index, log_id) else { return };
                            unfold(slot.last, &prev, &mut gone, |at| folded[at].key() == item.key());
                            prev.push(slot.last);
                            slot.last = folded.len();
                            folded.push(item);
                            gone.push(false);
                        }
                        None => {}
                    }
                });
                if written < listed {
                    wall.torn.push(Torn { log: log_id.to_string(), line, listed, written });
                }
            };
        for (i, data, _) in &read {
            apply(*i, (data.op(), data.undoes.as_deref(), &data.repairs), &data.targets);
        }
        if let Some(b) = batch {
            let data = b.data;
            apply(appended, (data.op(), data.undoes.as_deref(), &data.repairs), &data.targets);
        }
        wall.torn.retain(|t| !repaired.contains(&t.log));
        for &i in &projection.context {
            let e = &session.entries[i];
            if let Some(target) = projection.edit_target(i).filter(|_| !wall.shake_edits.contains_key(e.id())) {
                wall.foreign_edits.insert(target.into_owned(), i);
                wall.ids.insert(i, e.id());
            }
        }
        let batch_edits: HashMap<&str, &str, Fast> = batch
            .iter()
            .flat_map(|b| b.data.targets.iter().filter(|t| !t.edit.is_empty()).map(|t| (&*t.id, &*t.edit)))
            .collect();
        let winner = |index: usize| match batch_edits.get(session.entries[index].id()) {
            Some(&edit) => Some(edit),
            None => projection.edit_of(index).map(|e| session.entries[e].id()),
        };
        drop(prev);
        let (mut at, superseded) = (0, &mut wall.superseded);
        folded.retain(|item| {
            at += 1;
            if gone[at - 1] || projection.position(item.index).is_none() {
                return false; // undone, refolded, or summarised away by a later compaction: inert
            }
            if winner(item.index) != slots.get(&item.index).map(|s| s.edit) {
                if !superseded.iter().any(|t| *t == item.target) {
                    superseded.push(item.target.to_string());
                }
                return false;
            }
            true
        });
        // Made with room for every item folded on the path, some gone now; the wall is held until
        // the command is done.
        folded.shrink_to_fit();
        wall.items = folded;
        wall.finish(projection, logs, |i| entry(i).0)
    }

    /// The wall of a file a fork wrote (Claude Code): the regions its stored fold records name
    /// whose result in the context is still a placeholder (a turn that rewrote one, or a row the
    /// loader no longer reaches, leaves it out).
    fn of_forks(projection: &View<'w, '_>) -> Wall<'w> {
        let session = projection.session;
        let logs = log_entry::stored(session);
        let mut wall = Wall::default();
        for (i, data) in &logs {
            for t in data.targets.iter().filter(|_| data.op() == Some(Op::Fold)) {
                let unit = projection.units.iter().find(|u| u.target.as_deref() == Some(&*t.id));
                let item =
                    unit.filter(|u| u.tombstone).and_then(|u| Item::logged(t, u.index, session.entries[*i].id()));
                let Some(item) = item.map(|it| it.in_view(projection)) else {
                    continue;
                };
                wall.items.retain(|it| it.target != t.id);
                wall.items.push(item);
            }
        }
        wall.finish(projection, logs.iter().map(|(i, _)| *i).collect(), |i| session.entries[i].id())
    }

    /// Orders the items as the context, indexes them, and keeps the logs they came from (the
    /// entry indexes `logs`). `log_id` names the log entry at an index of `logs`.
    fn finish(mut self, projection: &View<'_, '_>, logs: Vec<usize>, log_id: impl Fn(usize) -> &'w str) -> Wall<'w> {
        sort_in_context(&mut self.items, |it| (projection.position(it.index), it.block, it.at));
        self.index_targets();
        self.logs = logs;
        self.ids.extend(self.logs.iter().map(|&i| (i, log_id(i))));
        self
    }

    fn index_targets(&mut self) {
        let Wall { items, by_target, hasher, .. } = self;
        let first = |r: &std::ops::Range<usize>| &*items[r.start].target;
        for (n, it) in items.iter().enumerate() {
            let hash = hasher.hash_one(&*it.target);
            match by_target.entry(hash, |r| first(r) == it.target, |r| hasher.hash_one(first(r))) {
                Entry::Occupied(mut range) => range.get_mut().end = n + 1,
                Entry::Vacant(slot) => {
                    slot.insert(n..n + 1);
                }
            }
        }
    }

    /// Tells whether no region is folded.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Returns the folded regions of one target.
    pub fn items_of(&self, target: &str) -> &[Item<'w>] {
        &self.items[self.range_of(target)]
    }

    /// Where the folded regions of one target are in `items` (an empty range for none).
    fn range_of(&self, target: &str) -> std::ops::Range<usize> {
        let hash = self.hasher.hash_one(target);
        self.by_target.find(hash, |r| self.items[r.start].target == target).map_or(0..0, |r| r.clone())
    }

    /// Returns the folded targets as entry indexes, in context order, each once.
    pub fn targets(&self) -> Vec<usize> {
        let mut out: Vec<usize> = self.items.iter().map(|it| it.index).collect();
        out.dedup();
        out
    }

    /// Tells whether an edit id was written by shake (fold or undo).
    pub fn is_shake_edit(&self, id: &str) -> bool {
        self.shake_edits.contains_key(id)
    }

    /// Returns a target's content as projected before any shake edit: the latest other
    /// tool's edit, else the entry's own content. `None` when that edit omits the target or has
    /// no content.
    pub fn base_content<'s>(&self, projection: &View<'s, '_>, index: usize) -> Option<&'s RawValue> {
        match self.foreign_edits.get(projection.session.entries[index].id()) {
            None => projection.own_content(index),
            Some(&e) => projection.replacement(e),
        }
    }

    /// The wall as a serialisable overlay:
    /// `{"items":[…],"superseded":[…],"torn":[…],"logs":[…],"foreign":[[target,edit]…]}`,
    /// borrowing the wall (serialised straight to bytes, no `Value` tree of every item).
    pub fn overlay(&self) -> Overlay<'_> {
        self.overlay_of(self.items.iter().map(Folded::Held).collect())
    }

    /// [`Wall::overlay`] with these items.
    fn overlay_of<'o>(&'o self, items: Vec<Folded<'o>>) -> Overlay<'o> {
        let id = |i: &usize| self.ids.get(i).copied().unwrap_or("");
        let mut foreign: Vec<[&str; 2]> = self.foreign_edits.iter().map(|(t, i)| [t.as_str(), id(i)]).collect();
        foreign.sort_unstable();
        Overlay {
            items,
            superseded: &self.superseded,
            torn: self.torn.iter().map(OverlayTorn::of).collect(),
            logs: self.logs.iter().map(id).collect(),
            foreign,
        }
    }
}

/// A target entry as the path's walk ([`Wall::derive`]) knows it: its newest folded item in the
/// walk's list (or [`NONE`]), and the edit id of its newest target in a log (an id on the path).
/// One map of these, and a `prev` link per item to the target's item folded before it, hold
/// what a map of each target's items and one of its edits held (2 MiB on 25,000 targets).
struct Slot<'e> {
    last: usize,
    edit: &'e str,
}

/// No item: the end of a target's chain.
const NONE: usize = usize::MAX;

/// Marks gone the items of a target's chain (newest first from `at`, then each one's `prev`)
/// that are not gone yet and that `undone` picks.
fn unfold(mut at: usize, prev: &[usize], gone: &mut [bool], mut undone: impl FnMut(usize) -> bool) {
    while at != NONE {
        if !gone[at] && undone(at) {
            gone[at] = true;
        }
        at = prev[at];
    }
}

/// Sorts `v` stably by `key` (an item's place in the context) unless it is in order already, as
/// the items of folds that each fold what follows the last are. A stable sort's scratch is a
/// copy of the list (3 MiB of a status on 25,000 folded regions); a sort by cached keys holds a
/// key and an index an item instead, and looks each key up once.
fn sort_in_context<T, K: Ord>(v: &mut [T], key: impl Fn(&T) -> K) {
    if !v.is_sorted_by_key(&key) {
        v.sort_by_cached_key(key);
    }
}

/// Keeps the elements of `v` from `start` on that `keep` keeps, in order (`Vec::retain` on a
/// tail of the list).
fn retain_from<T>(v: &mut Vec<T>, start: usize, mut keep: impl FnMut(&T) -> bool) {
    let mut kept = start;
    for i in start..v.len() {
        if keep(&v[i]) {
            v.swap(kept, i);
            kept += 1;
        }
    }
    v.truncate(kept);
}

/// A wall as its stored overlay spells it ([`Wall::overlay`]); the fields in this order.
/// [`Overlay::write_json`] spells it as serde_json would (the tests compare the two).
#[derive(Debug, PartialEq)]
#[cfg_attr(test, derive(Serialize))]
pub struct Overlay<'w> {
    items: Vec<Folded<'w>>,
    superseded: &'w [String],
    torn: Vec<OverlayTorn<'w>>,
    logs: Vec<&'w str>,
    foreign: Vec<[&'w str; 2]>,
}

/// An item of an [`Overlay`]: one the wall holds, or a target of the batch just appended
/// ([`Wall::after_batch`]) at its entry `index`, logged by `log`; spelt ([`OverlayItem`]) only as
/// the overlay is written (a list of every item spelt was 2.9 MiB of a fold's peak on 100,000
/// tiny entries).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Folded<'o> {
    Held(&'o Item<'o>),
    Logged { target: &'o LogTarget<'o>, index: usize, log: &'o str },
}

impl<'o> Folded<'o> {
    /// The target's entry.
    fn index(self) -> usize {
        match self {
            Folded::Held(it) => it.index,
            Folded::Logged { index, .. } => index,
        }
    }

    /// The log entry that folded it.
    fn log(self) -> &'o str {
        match self {
            Folded::Held(it) => it.log,
            Folded::Logged { log, .. } => log,
        }
    }

    /// Its identity inside its target ([`Item::key`], the kind spelt).
    fn key(self) -> (&'o str, Option<usize>, Option<(usize, usize)>) {
        let it = self.spelt();
        (it.kind, it.block, it.at.map(|[a, b]| (a, b)))
    }

    /// Its spelling in the overlay.
    fn spelt(self) -> OverlayItem<'o> {
        match self {
            Folded::Held(it) => OverlayItem {
                target: &it.target,
                kind: it.kind.as_str(),
                label: &it.label,
                tokens: it.tokens,
                block: it.block,
                at: it.at.map(|(a, b)| [a, b]),
                log: it.log,
            },
            // The kind was checked when the item was made: a known one, spelt as its own.
            Folded::Logged { target: t, log, .. } => OverlayItem {
                target: &t.id,
                kind: &t.kind,
                label: &t.label,
                tokens: t.tokens,
                block: t.block,
                at: t.at,
                log,
            },
        }
    }
}

#[cfg(test)]
impl Serialize for Folded<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.spelt().serialize(s)
    }
}

/// One folded item of an [`Overlay`], as it is spelt.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(Serialize))]
struct OverlayItem<'w> {
    target: &'w str,
    kind: &'w str,
    label: &'w str,
    tokens: u64,
    block: Option<usize>,
    at: Option<[usize; 2]>,
    log: &'w str,
}

impl Overlay<'_> {
    /// Adds the overlay's JSON to `out`, as serde_json spells the struct (keys in field order,
    /// `null` for an absent `block` or `at`, strings escaped as `JSON.stringify` and serde_json
    /// both escape them), written directly: a batch's overlay has an item per folded region.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        fn list<T>(out: &mut Vec<u8>, all: &[T], mut each: impl FnMut(&mut Vec<u8>, &T)) {
            out.push(b'[');
            for (i, x) in all.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                each(out, x);
            }
            out.push(b']');
        }
        fn string(out: &mut Vec<u8>, s: &str) {
            write_string(out, s.as_bytes());
        }
        fn number(out: &mut Vec<u8>, n: impl std::fmt::Display) {
            use std::io::Write;
            let _ = write!(out, "{n}");
        }
        /// `"key":` after a `,`, but for an object's first key (keys need no escaping).
        fn key(out: &mut Vec<u8>, key: &str) {
            if out.last() != Some(&b'{') {
                out.push(b',');
            }
            out.push(b'"');
            out.extend_from_slice(key.as_bytes());
            out.extend_from_slice(b"\":");
        }
        fn maybe(out: &mut Vec<u8>, n: Option<impl std::fmt::Display>) {
            match n {
                Some(n) => number(out, n),
                None => out.extend_from_slice(b"null"),
            }
        }
        // Room for the whole overlay at once (it has an item per folded region: grown by doubling,
        // its bytes would be copied as they grow, and could take twice their size). Its strings
        // and what is around them: an item's keys and figures take 93 bytes, 106 with a block and
        // range (figures of up to 6 digits); escapes and longer figures grow the bytes further.
        let items: usize = (self.items.iter())
            .map(|it| {
                let it = it.spelt();
                let around = if it.block.is_some() || it.at.is_some() { 106 } else { 93 };
                around + it.target.len() + it.label.len() + it.log.len()
            })
            .sum();
        let superseded: usize = self.superseded.iter().map(|t| t.len() + 3).sum();
        let torn: usize = self.torn.iter().map(|t| t.log.len() + 58).sum();
        let logs: usize = self.logs.iter().map(|l| l.len() + 3).sum();
        let foreign: usize = self.foreign.iter().map(|[t, e]| t.len() + e.len() + 8).sum();
        out.reserve(61 + items + superseded + torn + logs + foreign);
        out.push(b'{');
        key(out, "items");
        list(out, &self.items, |out, it| {
            let it = it.spelt();
            out.push(b'{');
            for (k, v) in [("target", it.target), ("kind", it.kind), ("label", it.label)] {
                key(out, k);
                string(out, v);
            }
            key(out, "tokens");
            number(out, it.tokens);
            key(out, "block");
            maybe(out, it.block);
            key(out, "at");
            match it.at {
                Some(at) => list(out, &at, |out, n| number(out, n)),
                None => out.extend_from_slice(b"null"),
            }
            key(out, "log");
            string(out, it.log);
            out.push(b'}');
        });
        key(out, "superseded");
        list(out, self.superseded, |out, t| string(out, t));
        key(out, "torn");
        list(out, &self.torn, |out, t| {
            out.push(b'{');
            key(out, "log");
            string(out, t.log);
            for (k, n) in [("line", t.line), ("listed", t.listed), ("written", t.written)] {
                key(out, k);
                number(out, n);
            }
            out.push(b'}');
        });
        key(out, "logs");
        list(out, &self.logs, |out, l| string(out, l));
        key(out, "foreign");
        list(out, &self.foreign, |out, pair| list(out, pair, |out, s| string(out, s)));
        out.push(b'}');
    }
}

/// One torn batch of an [`Overlay`].
#[derive(Debug, PartialEq)]
#[cfg_attr(test, derive(Serialize))]
struct OverlayTorn<'w> {
    log: &'w str,
    line: usize,
    listed: usize,
    written: usize,
}

impl<'w> OverlayTorn<'w> {
    fn of(t: &'w Torn) -> OverlayTorn<'w> {
        OverlayTorn { log: &t.log, line: t.line, listed: t.listed, written: t.written }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shake_plumbing::host::SessionFile;

    /// A pi session header and one tool result, `m1`.
    const SESSION: &str = include_str!("testdata/wall-session.jsonl");

    fn log(id: &str, parent: &str, op: &str, edit: &str) -> String {
        format!(
            r#"{{"type":"custom","customType":"shake","data":{{"v":1,"op":"{op}","tokenizer":"pi","tokens":1,"targets":[{{"id":"m1","kind":"{}","label":"bash","tokens":1,"edit":"{edit}"}}]}},"id":"{id}","parentId":"{parent}","timestamp":"t"}}"#,
            if op == "fold" { RegionKind::ToolResult.as_str() } else { "restore" }
        )
    }

    fn edit(id: &str, parent: &str, text: &str) -> String {
        format!(
            r#"{{"type":"context_edit","id":"{id}","parentId":"{parent}","timestamp":"t","targetId":"m1","replacement":{{"content":[{{"type":"text","text":"{text}"}}]}}}}"#
        )
    }

    /// The wall at the leaf of the test session followed by `lines` (the wall borrows the session
    /// made here: what the tests read of it): its item count, torn batches, superseded targets,
    /// and the base content of `m1`.
    fn wall_of(lines: &[String]) -> (usize, Vec<Torn>, Vec<String>, String) {
        let text = format!("{SESSION}{}\n", lines.join("\n"));
        let file = SessionFile::from_bytes("t.jsonl".into(), text.into_bytes());
        let session = shake_plumbing::hosts::load(&file, None).unwrap();
        let p = View::at(&session, session.default_leaf()).unwrap();
        let wall = Wall::at(&p);
        let base = wall.base_content(&p, 0).map(|c| c.get().to_string()).unwrap_or_default();
        (wall.items.len(), wall.torn, wall.superseded, base)
    }

    /// A tool result `m2` after `m1`, with its line feed (a pi line: kept out of the source by the seam).
    const M2: &str = include_str!("testdata/wall-second-result.jsonl");

    /// A shake log `id` after `parent` with one target per `(target, edit)`, then `extra`
    /// (more `data` members, each with its leading comma).
    fn batch_log(id: &str, parent: &str, op: &str, targets: &[(&str, &str)], extra: &str) -> String {
        let kind = if op == "fold" { RegionKind::ToolResult.as_str() } else { "restore" };
        let targets: Vec<String> = targets
            .iter()
            .map(|(t, e)| format!(r#"{{"id":"{t}","kind":"{kind}","label":"bash","tokens":1,"edit":"{e}"}}"#))
            .collect();
        format!(
            r#"{{"type":"custom","customType":"shake","data":{{"v":1,"op":"{op}","tokenizer":"pi","tokens":1,"targets":[{}]{extra}}},"id":"{id}","parentId":"{parent}","timestamp":"t"}}"#,
            targets.join(",")
        )
    }

    fn edit_of(id: &str, parent: &str, target: &str, text: &str) -> String {
        edit(id, parent, text).replace(r#""targetId":"m1""#, &format!(r#""targetId":"{target}""#))
    }

    /// The wall after the batch `batch` (its log first) appended to the session of `before`,
    /// derived from the wall before ([`Wall::after_batch`]) and from the whole file: the same.
    fn same_after_batch(before: &[String], batch: &[String]) {
        let lines = |extra: &[String]| {
            let text =
                format!("{SESSION}{M2}{}", before.iter().chain(extra).map(|l| format!("{l}\n")).collect::<String>());
            SessionFile::from_bytes("t.jsonl".into(), text.into_bytes())
        };
        let (old, new) = (lines(&[]), lines(batch));
        let log: serde_json::Value = serde_json::from_str(&batch[0]).unwrap();
        let data = <LogData as serde::Deserialize>::deserialize(&log["data"]).unwrap();
        let appended = Appended { log: log["id"].as_str().unwrap(), line: old.lines.len() + 1, data: &data };
        let session = shake_plumbing::hosts::load(&old, None).unwrap();
        let view = View::at(&session, session.default_leaf()).unwrap();
        let after = Wall::at(&view).after_batch(&view, &appended, |o| {
            // Written by hand as serde_json writes it.
            let mut bytes = Vec::new();
            o.write_json(&mut bytes);
            assert_eq!(String::from_utf8(bytes).unwrap(), serde_json::to_string(o).unwrap());
            serde_json::to_value(o).unwrap()
        });
        let session = shake_plumbing::hosts::load(&new, None).unwrap();
        let view = View::at(&session, session.default_leaf()).unwrap();
        assert_eq!(after, serde_json::to_value(Wall::at(&view).overlay()).unwrap());
    }

    #[test]
    fn the_wall_after_a_batch_is_the_wall_the_whole_path_gives() {
        let fold = |id: &str, parent: &str, targets: &[(&str, &str)], extra: &str| {
            let mut out = vec![batch_log(id, parent, "fold", targets, extra)];
            let mut last = id.to_string();
            for (t, e) in targets {
                out.push(edit_of(e, &last, t, "[ph]"));
                last = e.to_string();
            }
            out
        };
        let undo = |id: &str, parent: &str, targets: &[(&str, &str)], extra: &str| {
            let mut out = fold(id, parent, targets, extra);
            out[0] = batch_log(id, parent, "undo", targets, extra);
            out
        };
        // A first fold; a fold of another target; a refold of the same region.
        same_after_batch(&[], &fold("l1", "m2", &[("m1", "e1"), ("m2", "e2")], ""));
        let one = fold("l1", "m2", &[("m1", "e1")], "");
        same_after_batch(&one, &fold("l2", "e1", &[("m2", "e2")], ""));
        same_after_batch(&one, &fold("l2", "e1", &[("m1", "e2")], ""));
        // Undo of everything; undo --last of the second of two folds.
        let both = fold("l1", "m2", &[("m1", "e1"), ("m2", "e2")], "");
        same_after_batch(&both, &undo("l2", "e2", &[("m1", "e3"), ("m2", "e4")], ""));
        let two = [one.clone(), fold("l2", "e1", &[("m2", "e2")], "")].concat();
        same_after_batch(&two, &undo("l3", "e2", &[("m2", "e3")], r#","undoes":"l2""#));
        // A torn batch repaired by the next.
        let torn = vec![batch_log("l1", "m2", "fold", &[("m1", "e1")], "")];
        same_after_batch(&torn, &fold("l2", "l1", &[("m1", "e2")], r#","repairs":["l1"]"#));
        same_after_batch(&torn, &fold("l2", "l1", &[("m2", "e2")], ""));
        // Another tool's edit superseded the fold: the wall is derived again.
        let superseded = [one.clone(), vec![edit("x1", "e1", "theirs")]].concat();
        same_after_batch(&superseded, &fold("l2", "x1", &[("m1", "e2")], ""));
        same_after_batch(&superseded, &fold("l2", "x1", &[("m2", "e2")], ""));
        // An edit id a torn log announced already.
        same_after_batch(&torn, &fold("l2", "l1", &[("m2", "e1")], ""));
    }

    #[test]
    fn fold_then_undo_then_torn() {
        let folded = [log("l1", "m1", "fold", "e1"), edit("e1", "l1", "[ph]")];
        let (items, _, _, base) = wall_of(&folded);
        assert_eq!(items, 1);
        assert_eq!(base, r#"[{"type":"text","text":"long"}]"#);
        let undone = [folded[0].clone(), folded[1].clone(), log("l2", "e1", "undo", "e2"), edit("e2", "l2", "long")];
        assert_eq!(wall_of(&undone).0, 0);
        // A fold whose edit was never written: nothing folded, a torn batch.
        let (items, torn, _, _) = wall_of(&[log("l1", "m1", "fold", "e1")]);
        assert_eq!(items, 0);
        assert_eq!(torn, [Torn { log: "l1".into(), line: 3, listed: 1, written: 0 }]);
    }

    #[test]
    fn another_tools_later_edit_supersedes_and_becomes_the_base() {
        let lines = [log("l1", "m1", "fold", "e1"), edit("e1", "l1", "[ph]"), edit("x1", "e1", "theirs")];
        let (items, _, superseded, base) = wall_of(&lines);
        assert_eq!(items, 0);
        assert_eq!(superseded, ["m1"]);
        assert_eq!(base, r#"[{"type":"text","text":"theirs"}]"#);
    }
}

//! The meter's append shortcut: a file that only grew by lines continuing the measured context
//! (pi's plain entries, or rows a host's [`Tail`] follows: Claude Code's) is measured from its
//! new bytes alone ([`Growth`], kept in the memo).

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use crate::price::LastTurn;
use crate::profile::Profile;
use crate::rules::Rules;
use crate::scope::Scope;
use shake_plumbing::host::{self, Role, SessionFile, Tail, View};
use shake_plumbing::regions::rules::{read_files, touched};
use shake_plumbing::regions::{is_skill_path, tail_start};
use shake_plumbing::tokens::{context_tokens, named_default, Tokenizer};

use super::stamp::{FileState, Seen};
use super::{reading_of, Measured};
use crate::fingerprint::Bloom;
use crate::plan::{gains, FoldOptions, Gain};
use crate::wall::Wall;

impl Growth {
    /// Measures the file from the bytes appended since the reading `seen` measured (at the
    /// leaf `leaf_id`), when they are whole lines that continue its context as this growth
    /// follows it, and the leaf asked for is the one they end at (the host's leaf on load, by
    /// no `:LEAF` or by its id); `None` means: measure it all. `tok` is the tokenizer that
    /// reading counted with; `by_model` says it was the session's own, so new lines naming a
    /// model that gives another are measured whole.
    pub(super) fn grow(
        &self,
        (seen, leaf_id): (&Seen, Option<&str>),
        state: &FileState,
        leaf: Option<&str>,
        (profile, rules): (Profile, &Rules),
        tok: Tokenizer,
        by_model: bool,
    ) -> Option<Measured> {
        if state.inode != seen.inode || state.len <= seen.len {
            return None;
        }
        let last_from = seen.len.checked_sub(self.last_bytes.len() as u64)?;
        let from = last_from.min(seen.proof.resume_at());
        let mut file = std::fs::File::open(&state.path).ok()?;
        file.seek(SeekFrom::Start(from)).ok()?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).ok()?;
        let old = usize::try_from(seen.len - from).ok()?;
        let (before, new) = bytes.split_at_checked(old)?;
        if !before.ends_with(&self.last_bytes) || new.last() != Some(&b'\n') {
            return None;
        }
        let options = FoldOptions { scope: Scope::Elide, profile, tokenizer: tok, rules: rules.clone() };
        let mut next = self.clone();
        let newer;
        let last = match &mut next.follow {
            Follow::Entries(e) => {
                let mut mini = format!("{}\n", e.header).into_bytes();
                mini.extend_from_slice(new);
                let mini = SessionFile::from_bytes(state.path.clone(), mini);
                let session = shake_plumbing::hosts::load(&mini, None).ok()?;
                let last = session.entries.last().map(|e| e.id().to_string());
                if leaf.is_some_and(|id| last.as_deref() != Some(id)) {
                    return None;
                }
                if by_model && changes_tokenizer(&session, tok) {
                    return None;
                }
                let projection = View::at(&session, session.default_leaf()).ok()?;
                let maybe = e.continued_by(&projection, leaf_id?)?;
                // A filter's "maybe" is checked in the old bytes: far cheaper than measuring them.
                let unseen = maybe.is_empty() || e.exact && occurs_in(&state.path, seen.len, &maybe) == Some(false);
                if !unseen {
                    return None;
                }
                e.note(&projection)?;
                newer = LastTurn::of(&projection);
                next.reads.supersede(&projection, &options)?;
                next.tally.extend(&projection, &options);
                last
            }
            Follow::Host { tail, ids } => {
                let mini = SessionFile::from_bytes(state.path.clone(), new.to_vec());
                let room = std::cell::OnceCell::new();
                let followed = shake_plumbing::hosts::named(tail.host())?.follow(tail, &mini, &room)?;
                let last = followed.tail.leaf_id().map(str::to_string);
                // A filter's "maybe" is not looked for: the host's ids need not be written as
                // they read, and one turn's few ids seldom meet one.
                if leaf.is_some_and(|id| Some(id) != last.as_deref())
                    || followed.fresh.iter().any(|id| ids.may_contain(id))
                {
                    return None;
                }
                if by_model && changes_tokenizer(&followed.session, tok) {
                    return None;
                }
                followed.fresh.iter().chain(&followed.known).for_each(|id| ids.insert(id));
                *tail = followed.tail;
                let projection = View::at(&followed.session, followed.session.default_leaf()).ok()?;
                // A restart's view is the whole context: nothing of the old figures holds.
                if followed.restart {
                    next.tally = Tally::default();
                    next.reads = Reads::new(0);
                    next.turn = LastTurn::default();
                }
                newer = LastTurn::of(&projection);
                next.reads.supersede(&projection, &options)?;
                next.tally.extend(&projection, &options);
                last
            }
        };
        next.last_bytes = bytes[bytes.len().saturating_sub(LAST_BYTES)..].to_vec();
        let sum = next.tally.settle(&options);
        next.turn = std::mem::take(&mut next.turn).then(newer);
        let proof = seen.proof.extended(&bytes[usize::try_from(seen.proof.resume_at() - from).ok()?..]);
        let reading = reading_of(state, tok.name, profile, sum, last, next.turn.clone());
        Some(Measured { reading, at_last: true, growth: Some(next), proof })
    }
}

/// Tells whether the new lines (loaded as `new`) name a model whose default tokenizer is not
/// `tok` (a pi session switched to Claude, or from one Claude family to another).
fn changes_tokenizer(new: &host::Session<'_>, tok: Tokenizer) -> bool {
    named_default(new, new.default_leaf(), None).is_some_and(|named| named != tok.name)
}

/// How many bytes before the measured length must still be there for an append to be trusted.
const LAST_BYTES: usize = 4096;

/// Tells whether any of `needles` occurs in the file's first `len` bytes (`None`: unreadable),
/// read in pieces of 1 MiB (so the meter's memory stays small) that overlap by a needle's length.
fn occurs_in(path: &Path, len: u64, needles: &[String]) -> Option<bool> {
    let finders: Vec<_> = needles.iter().map(memchr::memmem::Finder::new).collect();
    let overlap = needles.iter().map(String::len).max().unwrap_or(0).saturating_sub(1);
    let mut file = std::fs::File::open(path).ok()?.take(len);
    let mut buf = vec![0; (1 << 20) + overlap];
    let mut kept = 0;
    loop {
        let n = file.read(&mut buf[kept..]).ok()?;
        if n == 0 {
            return Some(false);
        }
        let filled = kept + n;
        if finders.iter().any(|f| f.find(&buf[..filled]).is_some()) {
            return Some(true);
        }
        kept = overlap.min(filled);
        buf.copy_within(filled - kept..filled, 0);
    }
}

/// Tells whether `text` is borrowed from `raw` (so the file holds it as written, no escapes).
fn verbatim(text: &str, raw: &[u8]) -> bool {
    let (r, t) = (raw.as_ptr_range(), text.as_bytes().as_ptr_range());
    r.start <= t.start && t.end <= r.end
}

/// What measuring an appended file from its new bytes alone needs. When the new lines continue
/// the measured context without changing it (see [`Follow`]), the old context is unchanged and
/// each old position's gain too, so the new plan is the new tail (found from the tokens) and
/// the sum of the gains before it: the full plan's figures.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub struct Growth {
    /// How new lines are read and judged.
    follow: Follow,
    /// The file's last bytes when measured.
    last_bytes: Vec<u8>,
    /// The plan's figures per position.
    tally: Tally,
    /// The files the measured context reads (a later result touching one supersedes a read).
    reads: Reads,
    /// The newest turn's facts (the new lines' newest over the old).
    turn: LastTurn,
}

/// The files read in the measured context, as a filter: new lines that touch one of them
/// (read it again, write it, edit it) may supersede an old read, so the old figures no longer
/// hold and the file is measured whole.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct Reads(Bloom);

impl Reads {
    /// An empty filter with room for `files`.
    fn new(files: usize) -> Reads {
        Reads(Bloom::with_capacity(2 * files + 256))
    }

    /// `None` when the superseded rule is on and the new context touches a file read before,
    /// or a file whose call is in the old lines (which file is not known from the new ones);
    /// else notes the files it reads.
    fn supersede(&mut self, new: &View<'_, '_>, options: &FoldOptions) -> Option<()> {
        if !options.rules.superseded_reads {
            return Some(());
        }
        if touched(new)?.iter().any(|f| self.0.may_contain(f)) {
            return None;
        }
        read_files(new).iter().for_each(|f| self.0.insert(f));
        Some(())
    }
}

/// How a growth reads the new lines and knows they continue the measured context.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
enum Follow {
    /// Entries each judged alone ([`host::HostSession::is_plain`]; pi and oh-my-pi), loaded
    /// after the header.
    Entries(Entries),
    /// The host's own rule for the rows after a view's end ([`Tail::follow`]; Claude Code),
    /// with a filter of the old file's ids that a new row must not reuse.
    Host { tail: Tail, ids: Bloom },
}

/// What [`Follow::Entries`] keeps: plain entries continuing the leaf (messages and entries pi
/// keeps out of the context; no edit, compaction or branch summary) leave every old position
/// as it was, unless they reuse an id of the path or a call.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct Entries {
    /// The session header line (the new lines are parsed after it).
    header: String,
    /// Every id in `path_ids` and `calls` is in the file as written (no escapes), so a filter's
    /// "maybe" can be checked exactly by looking for it, quoted, in the old bytes.
    exact: bool,
    /// Ids on the leaf's path (a new entry reusing one would change the path).
    path_ids: Bloom,
    /// Tool-call ids in the context, and those whose `path` is a `skill://` (the skip rules).
    calls: Bloom,
    skill_calls: Bloom,
}

/// The plan's figures of the positions measured. The tail only moves forward as positions are
/// added, so positions before it are kept as one sum and only the tail's positions one by one:
/// the size is that of the tail, not of the session.
#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
struct Tally {
    /// The tokens of every position measured (what a floor's share is of).
    used: u64,
    /// The tokens of the positions moved into `before` ahead of the first folded one, and
    /// whether a folded one was moved (then the first folded position is among them).
    unfolded: u64,
    found: bool,
    /// The gains of the positions before the tail, summed.
    before: Gain,
    /// Per context position from the tail's start: tokens, and the gain of folding it.
    tokens: Vec<u64>,
    gains: Vec<Gain>,
}

impl Growth {
    /// The growth of a measured projection and the plan's figures (tokens freed, tool results
    /// and blocks folded), or `None` when an append to it cannot be followed (a file not ending
    /// in a newline, a host without a way to read new lines alone, a view not at the host's leaf
    /// for a host that follows its own rows, no leaf).
    pub(super) fn of(
        projection: &View<'_, '_>,
        wall: &Wall,
        options: &FoldOptions,
        at_last: bool,
        turn: &LastTurn,
    ) -> Option<(Growth, (u64, usize, usize, u64))> {
        let session = projection.session;
        let raw = session.file.raw();
        // claude-shake's window and floor are not a token tail: its plan is made whole each time;
        // so is one that folds tool inputs (a call's gain depends on where its result is).
        if !session.file.ends_with_newline()
            || options.profile == Profile::ClaudeShake
            || options.rules.fold_tool_inputs
        {
            return None;
        }
        let mut old = Vec::new();
        let follow = match at_last.then(|| projection.tail(&mut |id| old.push(id.to_string()))).flatten() {
            Some(tail) => {
                // Room for the file's ids to double before the filter fills.
                let mut ids = Bloom::with_capacity(2 * old.len());
                old.iter().for_each(|id| ids.insert(id));
                Follow::Host { tail, ids }
            }
            None => Follow::Entries(Entries::of(projection)?),
        };
        let read = match options.rules.superseded_reads {
            true => read_files(projection),
            false => Vec::new(),
        };
        let mut g = Growth {
            follow,
            last_bytes: raw[raw.len().saturating_sub(LAST_BYTES)..].to_vec(),
            tally: Tally::default(),
            reads: Reads::new(read.len()),
            turn: turn.clone(),
        };
        read.iter().for_each(|f| g.reads.0.insert(f));
        if let Follow::Entries(e) = &mut g.follow {
            e.note(projection)?;
        }
        g.tally.extend_with(projection, wall, options);
        let figures = g.tally.settle(options);
        Some((g, figures))
    }
}

impl Tally {
    /// Appends a projection's positions (all of them: the whole context, or the new ones alone),
    /// with the wall of the new positions alone (they hold no fold of their own).
    fn extend(&mut self, projection: &View<'_, '_>, options: &FoldOptions) {
        self.extend_with(projection, &Wall::at(projection), options);
    }

    /// Appends a projection's positions, planned with `wall`.
    fn extend_with(&mut self, projection: &View<'_, '_>, wall: &Wall, options: &FoldOptions) {
        let tokens = context_tokens(projection, &options.tokenizer);
        self.gains.extend(gains(projection, wall, options, &tokens));
        self.used += tokens.iter().sum::<u64>();
        self.tokens.extend(tokens);
    }

    /// Moves the positions now before the tail (the token tail, or the last tool uses kept when
    /// they reach further back) into `before` and returns the plan's figures: tokens freed, tool
    /// results and blocks folded (the superseded reads in the tail too; nothing under the floor).
    fn settle(&mut self, options: &FoldOptions) -> (u64, usize, usize, u64) {
        let keep = options.rules.keep_tool_uses;
        // Fewer kept tool uses than asked among the tail's positions: the older ones left the
        // tail when it was further back, so all of these are kept.
        let kept = match keep {
            0 => self.gains.len(),
            n => self.gains.iter().enumerate().rev().filter(|(_, g)| g.tool_use).nth(n - 1).map_or(0, |(p, _)| p),
        };
        let start = tail_start(&self.tokens, options.profile.tail()).min(kept);
        for (g, t) in self.gains.drain(..start).zip(self.tokens.drain(..start)) {
            add(&mut self.before, &g);
            self.found |= folds(&g);
            if !self.found {
                self.unfolded += t;
            }
        }
        let mut sum = self.before;
        self.gains.iter().filter(|g| g.superseded).for_each(|g| add(&mut sum, g));
        // The first folded position: among those moved, else the first superseded read left.
        let suffix = match self.found {
            true => self.used - self.unfolded,
            false => match self.gains.iter().position(|g| g.superseded && folds(g)) {
                Some(first) => self.tokens[first..].iter().sum(),
                None => 0,
            },
        };
        match options.rules.floor {
            Some(floor) if !floor.passes(sum.tokens, self.used) => (0, 0, 0, 0),
            _ => (sum.tokens, sum.tool_results, sum.blocks, suffix),
        }
    }
}

/// Tells whether a position's fold has regions (the plan edits it).
fn folds(g: &Gain) -> bool {
    g.tool_results + g.blocks > 0
}

/// Adds a position's gain to a sum.
fn add(sum: &mut Gain, g: &Gain) {
    sum.tokens += g.tokens;
    sum.tool_results += g.tool_results;
    sum.blocks += g.blocks;
}

impl Entries {
    /// The empty filters and the header of a pi session's projection (`None`: no header to
    /// load new lines after, or no leaf).
    fn of(projection: &View<'_, '_>) -> Option<Entries> {
        let session = projection.session;
        let header = String::from_utf8(session.append_prefix()?.to_vec()).ok()?;
        // Room for the path to double before the filter fills.
        let path = session.path(projection.leaf?).ok()?.len();
        Some(Entries {
            header,
            exact: true,
            path_ids: Bloom::with_capacity(2 * path),
            calls: Bloom::with_capacity(2 * projection.calls.len()),
            skill_calls: Bloom::with_capacity(0),
        })
    }

    /// Adds a projection's ids (its calls and its leaf's path) to the filters.
    fn note(&mut self, projection: &View<'_, '_>) -> Option<()> {
        let session = projection.session;
        let raw = session.file.raw();
        for call in &projection.calls {
            if is_skill_path(host::model::call_path(call.arguments).as_deref()) {
                self.skill_calls.insert(&call.id);
            }
            self.calls.insert(&call.id);
            self.exact &= verbatim(&call.id, raw);
        }
        for i in session.path(projection.leaf?).ok()? {
            self.path_ids.insert(session.entries[i].id());
            self.exact &= verbatim(session.entries[i].id(), raw);
        }
        Some(())
    }

    /// Tells whether `new` (the appended lines parsed alone) is a chain of plain entries from
    /// `leaf` that leaves every old position's figures as they were: `None` when it is not,
    /// else the new ids the path's or the calls' filter says "maybe" of, quoted as JSON writes
    /// them (it is, when none of them is in the old bytes). A skill call's "maybe" is a no.
    fn continued_by(&self, new: &View<'_, '_>, leaf: &str) -> Option<Vec<String>> {
        let session = new.session;
        // The one warning expected: the first new entry's parent is not in the new lines.
        if session.warnings.len() != 1 || session.entries.is_empty() {
            return None;
        }
        let mut ids = std::collections::HashSet::new();
        let mut maybe = Vec::new();
        let mut parent = leaf;
        for (i, e) in session.entries.iter().enumerate() {
            if e.parent_id() != Some(parent) || !ids.insert(e.id()) || !session.is_plain(i) {
                return None;
            }
            let result = new.unit(i).filter(|u| u.role == Role::ToolResult).and_then(|u| u.tool.as_ref());
            if result.and_then(|t| t.call_id.as_deref()).is_some_and(|c| self.skill_calls.may_contain(c)) {
                return None;
            }
            if self.path_ids.may_contain(e.id()) {
                maybe.push(format!("\"{}\"", e.id()));
            }
            parent = e.id();
        }
        let calls = new.calls.iter().filter(|call| self.calls.may_contain(&call.id));
        maybe.extend(calls.map(|call| format!("\"{}\"", call.id)));
        Some(maybe)
    }
}

#[cfg(test)]
mod tests;

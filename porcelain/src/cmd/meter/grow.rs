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
        // claude-shake's window and floor are not a token tail: its plan is made whole each time.
        if !session.file.ends_with_newline() || options.profile == Profile::ClaudeShake {
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
mod tests {
    use std::path::PathBuf;

    use shake_plumbing::regions::RegionKind;
    use shake_plumbing::tokens::TokenizerName;

    use super::*;
    use crate::cmd::meter::memo::MemoEntry;
    use crate::fingerprint::{Bloom, Proof};
    use crate::plan::plan_with_wall;

    /// The full plan of a session's bytes: tokens freed, tool results, blocks, and the tokens
    /// from the first folded entry on.
    fn planned(bytes: &[u8], fold: &FoldOptions) -> (u64, usize, usize, u64) {
        let whole = SessionFile::from_bytes(PathBuf::from("w.jsonl"), bytes.to_vec());
        let session = shake_plumbing::hosts::load(&whole, None).unwrap();
        let view = View::at(&session, session.default_leaf()).unwrap();
        plan_of(&view, fold)
    }

    fn plan_of(projection: &View<'_, '_>, fold: &FoldOptions) -> (u64, usize, usize, u64) {
        let tokens = shake_plumbing::tokens::context_tokens(projection, &fold.tokenizer);
        let plan = plan_with_wall(projection, &Wall::at(projection), fold, &tokens);
        let suffix = crate::price::suffix_of(projection, &plan, &tokens);
        (plan.tokens_freed, plan.tool_results(), plan.count(RegionKind::Block), suffix)
    }

    /// The pi part of a growth.
    fn entries(g: &mut Growth) -> &mut Entries {
        match &mut g.follow {
            Follow::Entries(e) => e,
            Follow::Host { .. } => panic!("a pi session is followed entry by entry"),
        }
    }

    /// What measuring the whole file gives and the memo keeps.
    fn measured(state: &FileState, bytes: &[u8], fold: &FoldOptions) -> Measured {
        try_measured(state, bytes, fold).expect("a session")
    }

    /// [`measured`], `None` when the bytes are no session yet.
    fn try_measured(state: &FileState, bytes: &[u8], fold: &FoldOptions) -> Option<Measured> {
        let whole = SessionFile::from_bytes(state.path.clone(), bytes.to_vec());
        let session = shake_plumbing::hosts::load(&whole, None).ok()?;
        let projection = View::at(&session, session.default_leaf()).unwrap();
        let leaf = session.default_leaf().map(|l| session.entries[l].id().to_string());
        let turn = LastTurn::of(&projection);
        Some(Measured {
            reading: reading_of(
                state,
                fold.tokenizer.name,
                fold.profile,
                plan_of(&projection, fold),
                leaf,
                turn.clone(),
            ),
            at_last: true,
            growth: Growth::of(&projection, &Wall::at(&projection), fold, true, &turn).map(|(g, _)| g),
            proof: Proof::of(bytes),
        })
    }

    const HEADER: &str = r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#;

    /// A pi message line.
    fn message(id: &str, parent: &str, message: &str) -> String {
        format!(
            r#"{{"type":"message","id":"{id}","parentId":"{parent}","timestamp":"2026-01-01T00:00:00.000Z","message":{message}}}"#
        )
    }

    /// An assistant message calling tools by these ids.
    fn calling(ids: impl Iterator<Item = String>) -> String {
        let calls: Vec<String> =
            ids.map(|id| format!(r#"{{"type":"toolCall","id":"{id}","name":"bash","arguments":{{}}}}"#)).collect();
        format!(r#"{{"role":"assistant","content":[{}],"stopReason":"toolUse","timestamp":1}}"#, calls.join(","))
    }

    /// A tool result of a call (a pi message: its template is kept out of the source by the seam).
    fn result(call: &str, text: &str) -> String {
        include_str!("../../testdata/tool-result-message.json").trim_end().replace("CALL", call).replace("TEXT", text)
    }

    /// Grows a memo of `bytes` (at `path`) by `lines`, one at a time, on disk.
    fn grow_by(path: &Path, memo: MemoEntry, lines: &[String], fold: &FoldOptions) -> Vec<Option<MemoEntry>> {
        let mut memo = Some(memo);
        let mut out = Vec::new();
        for line in lines {
            let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
            std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes()).unwrap();
            let len = std::fs::metadata(path).unwrap().len();
            let state = FileState { path: path.to_path_buf(), len, mtime_ns: 0, inode: 1 };
            let grown =
                memo.as_ref().and_then(|m| m.grow(&state, None, (fold.profile, &fold.rules), fold.tokenizer, false));
            memo = grown.map(|m| MemoEntry::new("k", &state, &m));
            out.push(memo.clone());
        }
        out
    }

    /// A session with more ids than the old 128 KiB filters held (450,000 tool calls): those
    /// said "maybe" of about one new id in five, and such an append was measured whole (here
    /// the 16th). Each of 40 appends calling a new tool is measured from its new bytes, with the
    /// full plan's figures.
    #[test]
    fn a_session_of_many_ids_keeps_the_shortcut() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let fold = pi_fold();
        let calls = calling((0..450_000).map(|i| format!("c{i:07}")));
        let mut lines = vec![HEADER.to_string(), message("a0", "", r#"{"role":"user","content":"go","timestamp":1}"#)];
        lines.push(message("a1", "a0", &calls));
        lines.push(message("a2", "a1", &result("c0000000", "done")));
        let bytes = format!("{}\n", lines.join("\n")).into_bytes();
        std::fs::write(&path, &bytes).unwrap();
        let state = FileState { path: path.clone(), len: bytes.len() as u64, mtime_ns: 0, inode: 1 };
        let mut memo = MemoEntry::new("k", &state, &measured(&state, &bytes, &fold));
        let g = entries(memo.growth.as_mut().expect("a growth"));
        assert!(g.exact && g.calls.len_bytes() <= Bloom::MAX_BYTES);
        let mut new = Vec::new();
        let mut parent = "a2".to_string();
        for turn in 0..40 {
            let (call, answer) = (format!("n{turn:07}"), format!("b{turn}"));
            new.push(message(&answer, &parent, &calling([call].into_iter())));
            parent = answer;
        }
        let grown = grow_by(&path, memo, &new, &fold);
        assert!(
            grown.iter().all(Option::is_some),
            "measured whole after {:?} appends",
            grown.iter().position(Option::is_none)
        );
        let last = grown.last().unwrap().as_ref().unwrap();
        assert_eq!(
            (last.tokens, last.tool_results, last.blocks, last.suffix),
            planned(&std::fs::read(&path).unwrap(), &fold)
        );
    }

    /// A filter saying "maybe" of everything: a new id is looked for in the old bytes, so an
    /// append of new ids keeps the shortcut and one reusing an old id (on the path, or a call's)
    /// does not; nor does anything when an old id is written with an escape (not findable).
    #[test]
    fn a_maybe_is_checked_in_the_old_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let fold = pi_fold();
        let start = |name: &str, first_id: &str| {
            let path = dir.path().join(name);
            let lines = [
                HEADER.to_string(),
                message(first_id, "", r#"{"role":"user","content":"go","timestamp":1}"#),
                message("a1", "a0", &calling(["c1".to_string()].into_iter())),
                message("a2", "a1", &result("c1", "done")),
            ];
            let bytes = format!("{}\n", lines.join("\n")).into_bytes();
            std::fs::write(&path, &bytes).unwrap();
            let state = FileState { path: path.clone(), len: bytes.len() as u64, mtime_ns: 0, inode: 1 };
            let mut memo = MemoEntry::new("k", &state, &measured(&state, &bytes, &fold));
            let g = entries(memo.growth.as_mut().unwrap());
            (g.path_ids, g.calls) = (g.path_ids.saturated(), g.calls.saturated());
            (path, memo)
        };
        let user = r#"{"role":"user","content":"more","timestamp":1}"#;
        let fresh = [message("b1", "a2", user), message("b2", "b1", &calling(["c2".to_string()].into_iter()))];
        let (path, memo) = start("fresh.jsonl", "a0");
        let grown = grow_by(&path, memo, &fresh, &fold);
        assert!(grown.iter().all(Option::is_some));
        let last = grown[1].as_ref().unwrap();
        assert_eq!(
            (last.tokens, last.tool_results, last.blocks, last.suffix),
            planned(&std::fs::read(&path).unwrap(), &fold)
        );
        for reused in [message("a0", "a2", user), message("b1", "a2", &calling(["c1".to_string()].into_iter()))] {
            let (path, memo) = start("reused.jsonl", "a0");
            assert!(grow_by(&path, memo, std::slice::from_ref(&reused), &fold)[0].is_none(), "{reused}");
        }
        let (path, memo) = start("escaped.jsonl", r"\u0061\u0030");
        let mut memo = memo;
        assert!(!entries(memo.growth.as_mut().unwrap()).exact);
        assert!(grow_by(&path, memo, &fresh[..1], &fold)[0].is_none());
    }

    /// The shortcut against the full plan: each generated session is measured at a prefix cut at
    /// a line, then grown by the lines after it, again and again from the grown memo (so the tail
    /// kept one position at a time moves on); where the shortcut is taken (plain entries) its
    /// figures are the plan of the file as it is then, and it is taken on most cuts. A memo whose
    /// file was rewritten (not only grown) is never grown.
    #[test]
    fn growing_a_prefix_equals_planning_the_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mut taken = 0;
        for seed in 1..=10u64 {
            let options = shake_plumbing::hosts::generate::Options {
                seed,
                limit: shake_plumbing::hosts::generate::Limit::Default,
                cwd: None,
            };
            let bytes = shake_plumbing::hosts::generate::generate(&options);
            let ends: Vec<usize> = bytes.iter().enumerate().filter(|(_, &b)| b == b'\n').map(|(i, _)| i + 1).collect();
            let profile = [Profile::Default, Profile::Aggressive, Profile::Conservative][seed as usize % 3];
            let tok = Tokenizer::new(TokenizerName::Pi);
            let mut fold = FoldOptions::new(Scope::Elide, profile, tok);
            // The rules besides the tail, in turn (issue 31): the growth follows each.
            match seed % 4 {
                1 => fold.rules.keep_tool_uses = 3,
                2 => fold.rules.floor = Some(crate::rules::Floor::Tokens(2_000)),
                3 => fold.rules.exclude_tools = vec!["bash".into()],
                _ => fold.rules.superseded_reads = false,
            }
            let path = dir.path().join(format!("s{seed}.jsonl"));
            let state_at = |cut: usize| {
                std::fs::write(&path, &bytes[..cut]).unwrap();
                FileState { path: path.clone(), len: cut as u64, mtime_ns: 0, inode: 1 }
            };
            let mut memo: Option<MemoEntry> = None;
            for &cut in ends.iter().skip(3).step_by(7) {
                let state = state_at(cut);
                let grown = memo.as_ref().and_then(|m| m.grow(&state, None, (profile, &fold.rules), tok, false));
                if let Some(m) = &grown {
                    taken += 1;
                    let r = &m.reading;
                    assert_eq!(
                        (r.tokens, r.tool_results, r.blocks, r.suffix),
                        planned(&bytes[..cut], &fold),
                        "seed {seed} cut {cut}"
                    );
                    assert_eq!(m.proof, Proof::of(&bytes[..cut]));
                }
                let m = grown.unwrap_or_else(|| measured(&state, &bytes[..cut], &fold));
                let mut m = m;
                if let Some(g) = &mut m.growth {
                    let kept = g.tally.tokens.len();
                    assert!(kept <= 400, "the memo keeps the tail only: {kept} positions");
                    assert!(entries(g).exact, "seed {seed}: pi's ids are in the file as written");
                }
                memo = Some(MemoEntry::new("k", &state, &m));
            }
            // The same length but other bytes before the end: no growth, and no recall.
            let last = memo.unwrap();
            let cut = last.seen.len as usize;
            let mut other = bytes[..cut].to_vec();
            other[cut / 2] ^= 0x20;
            std::fs::write(&path, &other).unwrap();
            let state = FileState { path: path.clone(), len: cut as u64, mtime_ns: 1, inode: 1 };
            assert!(last.recall(&state, None, profile).is_none());
            std::fs::write(&path, &bytes[..cut]).unwrap();
            let (_, proven) = last.recall(&state, None, profile).expect("same bytes, touched");
            assert!(proven);
        }
        assert!(taken >= 20, "the shortcut was taken {taken} times");
    }

    /// The Claude Code fixtures' transcripts.
    fn claude_fixtures() -> Vec<(String, Vec<u8>)> {
        let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/claude"));
        let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| {
                let path = e.ok()?.path().join("transcript.jsonl");
                let name = path.parent()?.file_name()?.to_string_lossy().into_owned();
                Some((name, std::fs::read(&path).ok()?))
            })
            .collect();
        out.sort();
        out
    }

    /// A fixture's lines, and each parsed (every line of `missing-parent` and `parallel` is JSON).
    fn fixture_rows(name: &str) -> (Vec<Vec<u8>>, Vec<serde_json::Value>) {
        let (_, bytes) = claude_fixtures().into_iter().find(|(n, _)| n == name).unwrap();
        let lines: Vec<Vec<u8>> = bytes.split_inclusive(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
        let rows = lines.iter().map(|l| serde_json::from_slice(l).unwrap()).collect();
        (lines, rows)
    }

    /// The default profile, counted as pi does.
    fn pi_fold() -> FoldOptions {
        FoldOptions::new(Scope::Elide, Profile::Default, Tokenizer::new(TokenizerName::Pi))
    }

    /// The byte offsets just after each line.
    fn line_ends(bytes: &[u8]) -> Vec<usize> {
        bytes.iter().enumerate().filter(|(_, &b)| b == b'\n').map(|(i, _)| i + 1).collect()
    }

    /// Replays `bytes` cut at `cuts` (in order) at `path`: each cut is measured by growing the
    /// memo of the cut before (kept as the meter keeps it: grown, else measured whole) and, when
    /// the shortcut is taken, checked against a whole measure of the same bytes. Returns how many
    /// cuts were grown, and the cuts measured whole (not those before the transcript's first row).
    fn replay(path: &Path, bytes: &[u8], cuts: &[usize], fold: &FoldOptions, name: &str) -> (usize, Vec<usize>) {
        let state_at = |cut: usize| {
            std::fs::write(path, &bytes[..cut]).unwrap();
            FileState { path: path.to_path_buf(), len: cut as u64, mtime_ns: 0, inode: 1 }
        };
        let (mut grown, mut whole) = (0, Vec::new());
        let mut memo: Option<MemoEntry> = None;
        for &cut in cuts {
            let state = state_at(cut);
            let m = match memo
                .as_ref()
                .and_then(|m| m.grow(&state, None, (fold.profile, &fold.rules), fold.tokenizer, false))
            {
                Some(m) => {
                    grown += 1;
                    let fresh = measured(&state, &bytes[..cut], fold);
                    assert_eq!(m.reading, fresh.reading, "{name}: grown to byte {cut} ({:?})", fold.profile);
                    assert_eq!(m.proof, fresh.proof);
                    m
                }
                None => {
                    let Some(m) = try_measured(&state, &bytes[..cut], fold) else { continue };
                    whole.push(cut);
                    m
                }
            };
            if let Some(g) = &m.growth {
                let size = bincode::serde::encode_to_vec(g, bincode::config::standard()).unwrap().len();
                assert!(size <= 2 * Bloom::MAX_BYTES, "{name}: a growth of {size} bytes");
            }
            memo = Some(MemoEntry::new("k", &state, &m));
        }
        (grown, whole)
    }

    /// Every Claude Code fixture, cut after every line (the big ones in their last 300 lines) and
    /// grown line by line, then again two, three and five lines at a time, each cut with a
    /// profile of its own: every grown reading is the whole measure's (tokens, results, blocks,
    /// leaf) and the proof of the same bytes. The transcripts that only grow turn by turn
    /// (`thinking`'s messages carried on over rows, `parallel`'s results hanging from each of
    /// their message's rows, not only the last) and the compactions (`compact`, `big-*`: their
    /// boundary, summary and first row under the anchor restart the chain from the rows that
    /// survive them) are measured whole only the first time; the rows that join old ones are
    /// measured whole (each `duplicate-uuids` row after the first copy reuses a uuid), and so is
    /// the row whose parent is missing (`missing-parent`'s walk stands in for it).
    #[test]
    fn claude_transcripts_grown_line_by_line_are_measured_whole() {
        let dir = tempfile::tempdir().unwrap();
        let profiles = [Profile::Default, Profile::Aggressive, Profile::Conservative];
        for (k, (name, bytes)) in claude_fixtures().into_iter().enumerate() {
            let ends = line_ends(&bytes);
            let ends = &ends[if bytes.len() > 4 << 20 { ends.len().saturating_sub(300) } else { 0 }..];
            for (j, lines) in [1, 2, 3, 5].into_iter().enumerate() {
                let cuts: Vec<usize> = ends.iter().copied().step_by(lines).collect();
                let fold = FoldOptions::new(Scope::Elide, profiles[(k + j) % 3], Tokenizer::new(TokenizerName::Pi));
                let path = dir.path().join(format!("{name}-{lines}.jsonl"));
                let (grown, whole) = replay(&path, &bytes, &cuts, &fold, &name);
                assert!(grown > 0, "{name}: never grown");
                let at = format!("{name}, {lines} lines at a time: measured whole at {whole:?}");
                match name.as_str() {
                    // Reused uuids: measured whole where they come.
                    "duplicate-uuids" => {}
                    // The row whose parent is missing (its walk stands in for it), then no more.
                    "missing-parent" => assert!(whole.len() <= 2, "{at}"),
                    // A compaction's rows restart the chain from the rows that survive it.
                    _ => assert_eq!(whole.len(), 1, "{at}"),
                }
            }
        }
    }

    /// Transcripts grown turn by turn (the rows up to the next assistant row, as Claude Code
    /// runs the status line after a message; `parallel`'s turns hold results answering every row
    /// of their message), counted with o200k: the same readings, measured whole only the first
    /// time.
    #[test]
    fn claude_turns_counted_with_o200k_are_measured_whole() {
        let dir = tempfile::tempdir().unwrap();
        let fixtures = claude_fixtures().into_iter().filter(|(n, _)| n == "bash-read" || n == "parallel");
        for (name, bytes) in fixtures {
            claude_turns_with_o200k(dir.path(), &name, &bytes);
        }
    }

    fn claude_turns_with_o200k(dir: &Path, name: &str, bytes: &[u8]) {
        let ends = line_ends(bytes);
        let starts = std::iter::once(0).chain(ends.iter().copied());
        let kind =
            |line: &[u8]| serde_json::from_slice::<serde_json::Value>(line).ok()?["type"].as_str().map(str::to_string);
        let cuts: Vec<usize> = starts
            .zip(&ends)
            .filter(|&(a, &b)| kind(&bytes[a..b]).as_deref() == Some("assistant"))
            .map(|(_, &b)| b)
            .collect();
        let fold = FoldOptions::new(Scope::Elide, Profile::Default, Tokenizer::new(TokenizerName::O200k));
        let (grown, whole) = replay(&dir.join(format!("{name}.jsonl")), bytes, &cuts, &fold, name);
        assert!(cuts.len() >= 8 && whole == cuts[..1], "{name}: {grown} grown; measured whole at {whole:?}");
    }

    /// `old` measured whole, then grown by `append` alone: the grown measure, checked against a
    /// whole measure of the longer file (`None`: it is measured whole).
    fn grown_by(path: &Path, old: &[u8], append: &[u8], fold: &FoldOptions) -> Option<Measured> {
        std::fs::write(path, old).unwrap();
        let state = FileState { path: path.to_path_buf(), len: old.len() as u64, mtime_ns: 0, inode: 1 };
        let memo = MemoEntry::new("k", &state, &measured(&state, old, fold));
        let all = [old, append].concat();
        std::fs::write(path, &all).unwrap();
        let state = FileState { path: path.to_path_buf(), len: all.len() as u64, mtime_ns: 0, inode: 1 };
        let grown = memo.grow(&state, None, (fold.profile, &fold.rules), fold.tokenizer, false);
        grown.inspect(|m| assert_eq!(m.reading, measured(&state, &all, fold).reading))
    }

    /// A transcript growing past 5 MiB by one row: followed when it holds no compaction boundary
    /// the size gate cuts at (`bash-read`; `compact`, whose boundary has anchors: the whole
    /// measure's reading), measured whole when it does (`big-unanchored` without its padding:
    /// the gate then drops the rows before it).
    #[test]
    fn claude_growing_past_5_mib_is_followed_unless_the_gate_cuts() {
        use serde_json::{json, Value};
        let dir = tempfile::tempdir().unwrap();
        let fixtures = claude_fixtures();
        let fixture = |name: &str| fixtures.iter().find(|(n, _)| n == name).unwrap().1.clone();
        let unpadded: Vec<u8> = fixture("big-unanchored")
            .split_inclusive(|&b| b == b'\n')
            .filter(|l| !l.starts_with(br#"{"type":"x-shake-padding""#))
            .flatten()
            .copied()
            .collect();
        let fold = pi_fold();
        let path = dir.path().join("t.jsonl");
        for (old, gated) in [(fixture("bash-read"), false), (fixture("compact"), false), (unpadded, true)] {
            assert!(old.len() < 5 << 20);
            let rows: Vec<Value> = old.split(|&b| b == b'\n').filter_map(|l| serde_json::from_slice(l).ok()).collect();
            let last = rows.iter().rev().find(|r| r["type"] == "assistant").unwrap();
            let user = |text: String| {
                let mut r = rows.iter().rev().find(|r| r["type"] == "user").unwrap().clone();
                r["uuid"] = json!("0000aaaa-0000-4000-8000-000000000001");
                r["parentUuid"] = last["uuid"].clone();
                r["message"] = json!({"role": "user", "content": text});
                format!("{r}\n").into_bytes()
            };
            assert!(grown_by(&path, &old, &user("more".to_string()), &fold).is_some(), "gated {gated}: a row");
            let past = grown_by(&path, &old, &user("x".repeat(6 << 20)), &fold);
            assert_eq!(past.is_none(), gated, "gated {gated}: a row past 5 MiB");
        }
    }

    /// `missing-parent` cut after its row whose parent is missing (the walk stands in for it),
    /// grown by a row hanging from the tip: followed when it is later than that row, measured
    /// whole when it is as old (a row no later could stand in for the missing parent).
    #[test]
    fn claude_rows_as_old_as_a_stood_in_parent_are_measured_whole() {
        use serde_json::{json, Value};
        let dir = tempfile::tempdir().unwrap();
        let (lines, rows) = fixture_rows("missing-parent");
        let uuids: Vec<&Value> = rows.iter().map(|r| &r["uuid"]).collect();
        let orphan =
            rows.iter().position(|r| r["parentUuid"].is_string() && !uuids.contains(&&r["parentUuid"])).unwrap();
        let at = (orphan + 1..rows.len()).find(|&i| rows[i]["type"] == "assistant").unwrap();
        let fold = pi_fold();
        let path = dir.path().join("t.jsonl");
        let user = |timestamp: &Value| {
            let mut r = rows[..at].iter().rev().find(|r| r["type"] == "user").unwrap().clone();
            r["uuid"] = json!("0000aaaa-0000-4000-8000-000000000001");
            r["parentUuid"] = rows[at]["uuid"].clone();
            r["timestamp"] = timestamp.clone();
            r["message"] = json!({"role": "user", "content": "more"});
            format!("{r}\n").into_bytes()
        };
        let old = lines[..=at].concat();
        assert!(grown_by(&path, &old, &user(&rows[at]["timestamp"]), &fold).is_some(), "a later row");
        assert!(grown_by(&path, &old, &user(&rows[orphan]["timestamp"]), &fold).is_none(), "as old as the orphan");
    }

    /// `compact` grown across its compaction: the boundary, the summary (the relink's anchor)
    /// and the row under it restart the chain from the rows that survive (the preserved row, and
    /// those from the boundary on), with the whole measure's reading; appends whose restart the
    /// rows read again could not prove are measured whole.
    #[test]
    fn claude_compactions_restart_unless_other_rows_would_survive() {
        use serde_json::{json, Value};
        let dir = tempfile::tempdir().unwrap();
        let (lines, rows) = fixture_rows("compact");
        let boundary = rows.iter().position(|r| r["subtype"] == "compact_boundary").unwrap();
        let summary = boundary + 1;
        assert_eq!(rows[summary]["isCompactSummary"], true);
        assert_eq!(rows[boundary]["compactMetadata"]["preservedSegment"]["anchorUuid"], rows[summary]["uuid"]);
        let fold = pi_fold();
        let path = dir.path().join("t.jsonl");
        let cut = |at: usize| lines[..at].concat();
        let grow = |at: usize, append: &[u8]| grown_by(&path, &cut(at), append, &fold);
        // Cut before the boundary, after it, after the summary: grown by each next row, or all
        // of them up to the next assistant row.
        let next = (summary + 1..rows.len()).find(|&i| rows[i]["type"] == "assistant").unwrap();
        for at in [boundary, summary, summary + 1] {
            assert!(grow(at, &lines[at]).is_some(), "cut before line {}: the next row", at + 1);
            assert!(grow(at, &lines[at..=next].concat()).is_some(), "cut before line {}: a turn", at + 1);
        }
        let line = |r: &Value| format!("{r}\n").into_bytes();
        let edited = |i: usize, edit: &dyn Fn(&mut Value)| {
            let mut r = rows[i].clone();
            edit(&mut r);
            line(&r)
        };
        let first = rows.iter().find(|r| r["type"] == "user").unwrap()["uuid"].clone();
        let dropped = rows[..boundary].iter().rev().find(|r| r["type"] == "user").unwrap()["uuid"].clone();
        let unlisted = |r: &mut Value| {
            r["compactMetadata"]["preservedMessages"]["uuids"] = json!(["0000aaaa-0000-4000-8000-000000000009"]);
            r["compactMetadata"]["preservedSegment"]["tailUuid"] = json!("0000aaaa-0000-4000-8000-000000000009");
        };
        let unanchored = |r: &mut Value| {
            let meta = r["compactMetadata"].as_object_mut().unwrap();
            meta.remove("preservedSegment");
            meta.remove("preservedMessages");
        };
        let fresh = |r: &mut Value| r["uuid"] = json!("0000aaaa-0000-4000-8000-000000000001");
        let cases: [(&str, usize, Vec<u8>); 4] = [
            ("a boundary preserving a row no file has (no relink)", boundary, edited(boundary, &unlisted)),
            (
                "a boundary without anchors under 5 MiB, no boundary with them before",
                boundary,
                edited(boundary, &unanchored),
            ),
            (
                "a row after the boundary taking an old uuid",
                boundary,
                [lines[boundary].clone(), lines[summary].clone(), edited(summary + 1, &|r| r["uuid"] = first.clone())]
                    .concat(),
            ),
            (
                "a row hanging from a dropped row (the relink moves it under the preserved rows)",
                summary + 1,
                edited(summary + 1, &|r| (fresh(r), r["parentUuid"] = dropped.clone()).1),
            ),
        ];
        for (what, at, append) in cases {
            assert!(grow(at, &append).is_none(), "{what}: grown");
        }
    }

    /// `parallel` cut inside its second message (local_41: a text row, then two tool calls, then
    /// their results, the second call's first): results may hang from any row of the message the
    /// chain ends with, the rows Claude Code writes take the shortcut, and rows that would make
    /// the chain other than the old one followed by them are measured whole.
    #[test]
    fn claude_results_answer_only_the_open_message() {
        use serde_json::{json, Value};
        let dir = tempfile::tempdir().unwrap();
        let (lines, rows) = fixture_rows("parallel");
        let message = |i: usize| rows[i]["message"]["id"].as_str().unwrap_or("");
        // The message's rows (44-46: text, call, call) and its results (47 under 46, 48 under 45).
        let first = (0..rows.len()).find(|&i| message(i) == "msg_local_41").unwrap();
        let (text, call, last) = (first, first + 1, first + 2);
        let (late, early) = (last + 1, last + 2);
        assert_eq!(rows[late]["parentUuid"], rows[last]["uuid"]);
        assert_eq!(rows[early]["parentUuid"], rows[call]["uuid"]);
        let fold = pi_fold();
        let path = dir.path().join("t.jsonl");
        let cut = |at: usize| lines[..=at].concat();
        let grow = |at: usize, append: &[u8]| grown_by(&path, &cut(at), append, &fold);
        // The real rows, cut after each row of the message.
        for at in [text, call, last, late] {
            for end in at + 1..lines.len() {
                assert!(grow(at, &lines[at + 1..=end].concat()).is_some(), "cut at {at}, grown to {end}");
            }
        }
        assert!(grow(last, &lines[early]).is_some(), "the first call's result alone");
        let edited = |i: usize, n: u8, edit: &dyn Fn(&mut Value)| {
            let mut r = rows[i].clone();
            r["uuid"] = json!(format!("0000aaaa-0000-4000-8000-00000000000{n}"));
            edit(&mut r);
            format!("{r}\n").into_bytes()
        };
        let older = (0..first).rev().find(|&i| rows[i]["type"] == "assistant").unwrap();
        let rows = &rows;
        let under = |parent: usize| move |r: &mut Value| r["parentUuid"] = rows[parent]["uuid"].clone();
        let more = |r: &mut Value| {
            r["parentUuid"] = rows[late]["uuid"].clone();
            r["message"]["content"] = json!([{"type": "text", "text": "and so on"}]);
        };
        let cases: [(&str, usize, Vec<u8>); 4] = [
            ("a result under an older message's row", last, edited(early, 1, &under(older))),
            ("an attachment under a row before the tip", last, edited(early + 1, 1, &under(call))),
            ("a row of the message after a result under it", late, edited(last, 1, &more)),
            (
                "a result under the message after a row that ends it",
                late,
                [edited(early + 1, 1, &under(late)), edited(early, 2, &|_| {})].concat(),
            ),
        ];
        for (what, at, append) in cases {
            assert!(grow(at, &append).is_none(), "{what}: grown");
        }
    }

    /// `bash-read` cut after its second tool call (the first answered, the second not), grown by
    /// one append each: the real rows that follow (the pending call's result, then the next
    /// assistant row), a result of the pending call and a row carrying on the tip's message take
    /// the shortcut with the whole measure's reading; every append that may change how old rows
    /// load or count is measured whole.
    #[test]
    fn claude_appends_that_may_change_old_rows_are_measured_whole() {
        use serde_json::{json, Value};
        let dir = tempfile::tempdir().unwrap();
        let (_, bytes) = claude_fixtures().into_iter().find(|(n, _)| n == "bash-read").unwrap();
        let lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
        let rows: Vec<Option<Value>> = lines.iter().map(|l| serde_json::from_slice(l).ok()).collect();
        let uses_tool = |r: &Value| r["type"] == "assistant" && r["message"]["content"][0]["type"] == "tool_use";
        let at = rows.iter().enumerate().filter(|(_, r)| r.as_ref().is_some_and(uses_tool)).nth(1).unwrap().0;
        let (call, answered) = (&rows[at].as_ref().unwrap()["message"]["content"][0]["id"], "toolu_local_1");
        let tip = rows[at].as_ref().unwrap().clone();
        let result = rows.iter().skip(at).flatten().find(|r| r["type"] == "user").unwrap().clone();
        assert_eq!(&result["message"]["content"][0]["tool_use_id"], call);
        let old: Vec<u8> = lines[..=at].concat();
        let fold = pi_fold();
        let path = dir.path().join("t.jsonl");
        let grow = |append: &[u8]| grown_by(&path, &old, append, &fold);
        // The real rows: the pending call's result (and what Claude Code writes around it), then
        // up to the next assistant row.
        let next = (at + 1..lines.len()).find(|&i| rows[i].as_ref().is_some_and(|r| r["type"] == "assistant")).unwrap();
        assert!(grow(&lines[at + 1..next].concat()).is_some(), "the pending call's result");
        assert!(grow(&lines[at + 1..=next].concat()).is_some(), "a turn");
        let row = |template: &Value, edit: &dyn Fn(&mut Value)| {
            let mut r = template.clone();
            r["uuid"] = json!("0000aaaa-0000-4000-8000-000000000001");
            r["parentUuid"] = tip["uuid"].clone();
            edit(&mut r);
            format!("{r}\n").into_bytes()
        };
        assert!(grow(&row(&result, &|_| {})).is_some(), "a result of the pending call");
        let text = json!([{"type": "text", "text": "and so on"}]);
        assert!(grow(&row(&tip, &|r| r["message"]["content"] = text.clone())).is_some(), "more of the tip's message");
        let older = rows[..at].iter().flatten().find(|r| r["type"] == "assistant").unwrap()["message"]["id"].clone();
        let first = rows.iter().flatten().find(|r| r["uuid"].is_string()).unwrap()["uuid"].clone();
        let cases: [(&str, Vec<u8>); 8] = [
            (
                "a row of an older message",
                row(&tip, &|r| (r["message"]["id"], r["message"]["content"]) = (older.clone(), text.clone())),
            ),
            (
                "a result of an answered call",
                row(&result, &|r| r["message"]["content"][0]["tool_use_id"] = json!(answered)),
            ),
            (
                "a compaction boundary",
                row(
                    &tip,
                    &|r| *r = json!({"type": "system", "subtype": "compact_boundary", "uuid": r["uuid"], "parentUuid": r["parentUuid"], "sessionId": r["sessionId"]}),
                ),
            ),
            ("a summary", row(&result, &|r| r["isCompactSummary"] = json!(true))),
            ("a branch off an older row", row(&result, &|r| r["parentUuid"] = first.clone())),
            ("an old uuid again", row(&result, &|r| r["uuid"] = first.clone())),
            ("a side-chain row", row(&result, &|r| r["isSidechain"] = json!(true))),
            ("a new call with an old id", row(&tip, &|r| r["message"]["id"] = json!("msg_new"))),
        ];
        for (what, append) in cases {
            assert!(grow(&append).is_none(), "{what}: grown");
        }
    }
}

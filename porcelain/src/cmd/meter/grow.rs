//! The meter's append shortcut: a file that only grew by plain entries continuing the measured
//! leaf is measured from its new bytes alone ([`Growth`], kept in the memo).

use std::io::{Read, Seek, SeekFrom};

use crate::profile::Profile;
use crate::scope::Scope;
use shake_plumbing::host::{self, Role, SessionFile, View};
use shake_plumbing::regions::{is_skill_path, tail_start_by};
use shake_plumbing::tokens::{context_tokens, Tokenizer};

use super::memo::{reading_of, MemoEntry};
use super::watch::FileState;
use super::Measured;
use crate::fingerprint::Bloom;
use crate::plan::{gains, FoldOptions, Gain};
use crate::wall::Wall;

impl MemoEntry {
    /// Measures the file from the bytes appended since this reading, when they are whole lines of
    /// plain entries continuing its leaf and the leaf asked for is pi's (the last new entry, by
    /// no `:LEAF` or by its id; see [`Growth`]); `None` means: measure it all.
    pub(super) fn grow(
        &self,
        state: &FileState,
        leaf: Option<&str>,
        profile: Profile,
        tok: Tokenizer,
    ) -> Option<Measured> {
        let g = self.growth.as_ref()?;
        if state.inode != self.inode || state.len <= self.len {
            return None;
        }
        let last_from = self.len.checked_sub(g.last_bytes.len() as u64)?;
        let from = last_from.min(self.proof.resume_at());
        let mut file = std::fs::File::open(&state.path).ok()?;
        file.seek(SeekFrom::Start(from)).ok()?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).ok()?;
        let old = usize::try_from(self.len - from).ok()?;
        let (before, new) = bytes.split_at_checked(old)?;
        if !before.ends_with(&g.last_bytes) || new.last() != Some(&b'\n') {
            return None;
        }
        let mut mini = format!("{}\n", g.header).into_bytes();
        mini.extend_from_slice(new);
        let mini = SessionFile::from_bytes(state.path.clone(), mini);
        let session = host::load(&mini, None).ok()?;
        let last = session.entries.last().map(|e| e.id.to_string());
        if leaf.is_some_and(|id| last.as_deref() != Some(id)) {
            return None;
        }
        let projection = View::at(&session, session.default_leaf()).ok()?;
        if !g.continued_by(&projection, self.leaf_id.as_deref()?) {
            return None;
        }
        tok.prefetch(&projection);
        let options = FoldOptions { scope: Scope::Elide, profile, tokenizer: tok };
        let mut next = g.clone();
        next.extend(&projection, &Wall::at(&projection), &options)?;
        next.last_bytes = bytes[bytes.len().saturating_sub(LAST_BYTES)..].to_vec();
        let sum = next.settle(profile);
        let proof = self.proof.extended(&bytes[usize::try_from(self.proof.resume_at() - from).ok()?..]);
        let reading = reading_of(state, tok.name, profile, sum, last);
        Some(Measured { reading, at_last: true, growth: Some(next), proof })
    }
}

/// How many bytes before the measured length must still be there for an append to be trusted.
const LAST_BYTES: usize = 4096;

/// What measuring an appended file from its new bytes alone needs. When the new lines are plain
/// entries continuing the leaf (messages and entries pi keeps out of the context; no edit,
/// compaction or branch summary), the old context is unchanged and each old position's gain
/// too, so the new plan is the new tail (found from the tokens) and the sum of the gains before
/// it: the full plan's figures. The tail only moves forward as entries are added, so positions
/// before it are kept as one sum and only the tail's positions one by one: the size is that of
/// the tail, not of the session.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub struct Growth {
    /// The session header line (the new lines are parsed after it).
    header: String,
    /// The file's last bytes when measured.
    last_bytes: Vec<u8>,
    /// Ids on the leaf's path (a new entry reusing one would change the path).
    path_ids: Bloom,
    /// Tool-call ids in the context, and those whose `path` is a `skill://` (the skip rules).
    calls: Bloom,
    skill_calls: Bloom,
    /// The gains of the positions before the tail, summed.
    before: Gain,
    /// Per context position from the tail's start: tokens, and the gain of folding it.
    tokens: Vec<u64>,
    gains: Vec<Gain>,
}

impl Growth {
    /// The growth of a measured projection, or `None` when an append to it cannot be followed
    /// (a session pi would migrate, a file not ending in a newline, no leaf).
    pub(super) fn of(projection: &View<'_, '_>, wall: &Wall, options: &FoldOptions) -> Option<Growth> {
        let session = projection.session;
        let raw = session.file.raw();
        // claude-shake's window and floor are not a token tail: its plan is made whole each time.
        if !session.file.ends_with_newline() || options.profile == Profile::ClaudeShake {
            return None;
        }
        let header = String::from_utf8(session.append_prefix()?.to_vec()).ok()?;
        let leaf = projection.leaf?;
        // Room for the path to double before the filter fills.
        let path = session.path(leaf).ok()?.len();
        let calls = projection.calls.len();
        let mut g = Growth {
            header,
            last_bytes: raw[raw.len().saturating_sub(LAST_BYTES)..].to_vec(),
            path_ids: Bloom::with_capacity(2 * path),
            calls: Bloom::with_capacity(2 * calls),
            skill_calls: Bloom::with_capacity(0),
            before: Gain::default(),
            tokens: Vec::new(),
            gains: Vec::new(),
        };
        g.extend(projection, wall, options)?;
        g.settle(options.profile);
        Some(g)
    }

    /// Appends a projection's positions (all of them: the whole context, or the new entries alone).
    fn extend(&mut self, projection: &View<'_, '_>, wall: &Wall, options: &FoldOptions) -> Option<()> {
        for call in &projection.calls {
            if is_skill_path(host::model::call_path(call.arguments).as_deref()) {
                self.skill_calls.insert(&call.id);
            }
            self.calls.insert(&call.id);
        }
        self.tokens.extend(context_tokens(projection, &options.tokenizer));
        self.gains.extend(gains(projection, wall, options));
        let session = projection.session;
        session.path(projection.leaf?).ok()?.iter().for_each(|&i| self.path_ids.insert(&session.entries[i].id));
        Some(())
    }

    /// Moves the positions now before the tail into `before` and returns the plan's figures:
    /// tokens freed, tool results and blocks folded.
    fn settle(&mut self, profile: Profile) -> (u64, usize, usize) {
        let start = tail_start_by(self.tokens.len(), profile.tail(), |pos| self.tokens[pos]);
        for g in self.gains.drain(..start) {
            self.before.tokens += g.tokens;
            self.before.tool_results += g.tool_results;
            self.before.blocks += g.blocks;
        }
        self.tokens.drain(..start);
        (self.before.tokens, self.before.tool_results, self.before.blocks)
    }

    /// Tells whether `new` (the appended lines parsed alone) is a chain of plain entries from
    /// `leaf` that leaves every old position's figures as they were (a "maybe" of a filter is a no).
    fn continued_by(&self, new: &View<'_, '_>, leaf: &str) -> bool {
        let session = new.session;
        // The one warning expected: the first new entry's parent is not in the new lines.
        if session.warnings.len() != 1 || session.entries.is_empty() {
            return false;
        }
        let mut ids = std::collections::HashSet::new();
        let mut parent = leaf;
        for (i, e) in session.entries.iter().enumerate() {
            let reused = self.path_ids.may_contain(&e.id) || !ids.insert(&e.id);
            if e.parent_id.as_deref() != Some(parent) || reused || !session.is_plain(i) {
                return false;
            }
            let result = new.unit(i).filter(|u| u.role == Role::ToolResult).and_then(|u| u.tool.as_ref());
            if result.and_then(|t| t.call_id.as_deref()).is_some_and(|c| self.skill_calls.may_contain(c)) {
                return false;
            }
            parent = &e.id;
        }
        new.calls.iter().all(|call| !self.calls.may_contain(&call.id))
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use shake_plumbing::regions::RegionKind;
    use shake_plumbing::tokens::TokenizerName;

    use super::*;
    use crate::fingerprint::Proof;
    use crate::plan::plan_with_wall;

    /// The full plan of a session's bytes: tokens freed, tool results, blocks.
    fn planned(bytes: &[u8], fold: &FoldOptions) -> (u64, usize, usize) {
        let whole = SessionFile::from_bytes(PathBuf::from("w.jsonl"), bytes.to_vec());
        let session = host::load(&whole, None).unwrap();
        let projection = View::at(&session, session.default_leaf()).unwrap();
        let plan = plan_with_wall(&projection, &Wall::at(&projection), fold);
        (plan.tokens_freed, plan.count(RegionKind::ToolResult), plan.count(RegionKind::Block))
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
            let options = shake_plumbing::host::generate::Options {
                seed,
                limit: shake_plumbing::host::generate::Limit::Default,
                cwd: None,
            };
            let bytes = shake_plumbing::host::generate::generate(&options);
            let ends: Vec<usize> = bytes.iter().enumerate().filter(|(_, &b)| b == b'\n').map(|(i, _)| i + 1).collect();
            let profile = [Profile::Default, Profile::Aggressive, Profile::Conservative][seed as usize % 3];
            let tok = Tokenizer::new(TokenizerName::Pi);
            let fold = FoldOptions { scope: Scope::Elide, profile, tokenizer: tok };
            let path = dir.path().join(format!("s{seed}.jsonl"));
            let state_at = |cut: usize| {
                std::fs::write(&path, &bytes[..cut]).unwrap();
                FileState { path: path.clone(), len: cut as u64, mtime_ns: 0, inode: 1 }
            };
            let mut memo: Option<MemoEntry> = None;
            for &cut in ends.iter().skip(3).step_by(7) {
                let state = state_at(cut);
                let grown = memo.as_ref().and_then(|m| m.grow(&state, None, profile, tok));
                if let Some(m) = &grown {
                    taken += 1;
                    let r = &m.reading;
                    assert_eq!(
                        (r.tokens, r.tool_results, r.blocks),
                        planned(&bytes[..cut], &fold),
                        "seed {seed} cut {cut}"
                    );
                    assert_eq!(m.proof, Proof::of(&bytes[..cut]));
                }
                let m = grown.unwrap_or_else(|| {
                    let prefix = SessionFile::from_bytes(PathBuf::from("p.jsonl"), bytes[..cut].to_vec());
                    let session = host::load(&prefix, None).unwrap();
                    let projection = View::at(&session, session.default_leaf()).unwrap();
                    let f = planned(&bytes[..cut], &fold);
                    Measured {
                        reading: reading_of(
                            &state,
                            tok.name,
                            profile,
                            f,
                            session.entries.last().map(|e| e.id.to_string()),
                        ),
                        at_last: true,
                        growth: Growth::of(&projection, &Wall::at(&projection), &fold),
                        proof: Proof::of(&bytes[..cut]),
                    }
                });
                if let Some(g) = &m.growth {
                    assert!(g.tokens.len() <= 400, "the memo keeps the tail only: {} positions", g.tokens.len());
                }
                memo = Some(MemoEntry::new("k", &state, &m));
            }
            // The same length but other bytes before the end: no growth, and no recall.
            let last = memo.unwrap();
            let cut = last.len as usize;
            let mut other = bytes[..cut].to_vec();
            other[cut / 2] ^= 0x20;
            std::fs::write(&path, &other).unwrap();
            let state = FileState { path: path.clone(), len: cut as u64, mtime_ns: 1, inode: 1 };
            assert!(last.recall(&state, None, tok.name, profile).is_none());
            std::fs::write(&path, &bytes[..cut]).unwrap();
            let (_, proven) = last.recall(&state, None, tok.name, profile).expect("same bytes, touched");
            assert!(proven);
        }
        assert!(taken >= 20, "the shortcut was taken {taken} times");
    }
}

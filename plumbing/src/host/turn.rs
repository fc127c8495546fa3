//! The newest turn's facts a priced meter needs ([`LastTurn`]): when the last request was, its
//! model, the cache lifetime its usage shows and the prices its recorded cost shows. Read from a
//! host's context ([`LastTurn::of`]) or, by a host's own meter that never builds one, from the
//! replies it reads on its own pass ([`LastTurn::gather`]), so both read them alike.
//!
//! The facts are the newest [`REPLIES`] replies' alone: a session whose provider never shows a
//! fact (no cache writes, no recorded cost) is not read back to its first turn on every meter
//! and dry run (on 100,000 entries that walk was a fifth of a fold), and a fact older than that
//! no longer describes the requests the session makes now.

use super::{Reply, Role, View};
use crate::time::parse_iso_millis;

/// How many of the newest replies the facts are read from.
pub const REPLIES: u32 = 64;

/// What the meter keeps of the session's newest turns (the meters' memos keep it). Each fact is
/// the newest reply's that shows it among the newest [`REPLIES`], so a stretch of newer lines
/// updates them with [`LastTurn::then`] as reading the whole path would.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct LastTurn {
    /// The last reply's time, Unix milliseconds: the newest assistant entry's of the context.
    pub at_ms: Option<u64>,
    /// Its model.
    pub model: Option<String>,
    /// Whether the newest turn that wrote the cache wrote it with the 1-hour lifetime.
    pub long_cache: Option<bool>,
    /// The cache-read price the newest turn with a recorded cost of reading paid, $ per million.
    pub read_price: Option<f64>,
    /// The cache-write price the newest turn with a recorded cost of writing paid.
    pub write_price: Option<f64>,
    /// How far back each fact was found, and how many replies were read: what a newer stretch
    /// needs to tell whether an older fact is still among the newest [`REPLIES`] (opaque).
    pub depth: Depth,
}

/// Replies counted back from the newest (0: the newest reply), for [`LastTurn`]'s facts.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Depth {
    model: u32,
    long_cache: u32,
    read_price: u32,
    write_price: u32,
    /// Replies read: every one of the stretch's, or (at most [`REPLIES`]) until each fact was
    /// found.
    replies: u32,
}

/// Two readings are the same when their facts are; how far back each was found is how they were
/// read (a reading that stopped once every fact was found read fewer replies).
impl PartialEq for LastTurn {
    fn eq(&self, other: &LastTurn) -> bool {
        (self.at_ms, &self.model, self.long_cache, self.read_price, self.write_price)
            == (other.at_ms, &other.model, other.long_cache, other.read_price, other.write_price)
    }
}

/// Whether the view's path is what [`crate::host::Session::path`] walks from `leaf`, told by ids
/// alone: each entry names the one before as its parent and the first names none the session
/// holds. Only when no id repeats (then the entry an id names is the one that has it); Claude
/// Code's view holds its context there, which can differ.
fn holds_the_chain(view: &View<'_, '_>, leaf: usize) -> bool {
    let (s, path) = (view.session, &view.path);
    !s.ids_repeat()
        && path.last() == Some(&leaf)
        && path.first().is_some_and(|&root| s.parent_of(root).is_none())
        && path.windows(2).all(|w| s.entries[w[1]].parent_id() == Some(s.entries[w[0]].id()))
}

impl LastTurn {
    /// The newest turn's facts in a context: its leaf's path walked from the leaf back.
    pub fn of(view: &View<'_, '_>) -> LastTurn {
        let session = view.session;
        // The newest assistant entry: the last request's answer (a later entry of another kind,
        // shake's own log entry among them, reached no provider).
        let newest = view.units.iter().rev().find(|u| u.role == Role::Assistant);
        let at = newest.and_then(|u| session.timestamp(u.index));
        // The view's path when it is the leaf's parent chain (pi's and OMP's are), else the walk
        // again: 100,000 lookups by id on a tiny session's dry run.
        let walked;
        let path = match view.leaf {
            Some(leaf) if holds_the_chain(view, leaf) => &view.path,
            Some(leaf) => match session.path(leaf) {
                Ok(path) => {
                    walked = path;
                    &walked
                }
                Err(_) => return LastTurn::gather(at.as_deref(), std::iter::empty()),
            },
            None => return LastTurn::gather(at.as_deref(), std::iter::empty()),
        };
        LastTurn::gather(at.as_deref(), path.iter().rev().filter_map(|&index| session.reply(index)))
    }

    /// The facts of `replies`, newest first (read only as far as every fact is found, and no
    /// further than [`REPLIES`]), the last reply written at `at` (its ISO 8601 timestamp).
    pub fn gather<'a>(at: Option<&str>, replies: impl Iterator<Item = Reply<'a>>) -> LastTurn {
        let mut turn = LastTurn {
            at_ms: at.and_then(parse_iso_millis).and_then(|t| u64::try_from(t).ok()),
            ..LastTurn::default()
        };
        for (back, reply) in (0..REPLIES).zip(replies) {
            let d = &mut turn.depth;
            d.replies = back + 1;
            if turn.model.is_none() && reply.model.is_some() {
                turn.model = reply.model.map(|m| m.into_owned());
                d.model = back;
            }
            if let Some(cache) = reply.cache {
                if turn.long_cache.is_none() && cache.cache_write > 0 {
                    turn.long_cache = Some(cache.cache_write_1h > 0);
                    d.long_cache = back;
                }
                let cost = cache.cost.unwrap_or_default();
                if let (None, Some(price)) = (turn.read_price, per_million(cost.cache_read, cache.cache_read)) {
                    turn.read_price = Some(price);
                    d.read_price = back;
                }
                if let (None, Some(price)) = (turn.write_price, per_million(cost.cache_write, cache.cache_write)) {
                    turn.write_price = Some(price);
                    d.write_price = back;
                }
            }
            if turn.complete() {
                break;
            }
        }
        turn
    }

    /// Every fact a reply can show is known.
    fn complete(&self) -> bool {
        self.model.is_some() && self.long_cache.is_some() && self.read_price.is_some() && self.write_price.is_some()
    }

    /// These facts updated by a newer stretch's (`newer`): each fact the newer one shows wins,
    /// and an older one stays while it is still among the newest [`REPLIES`] replies.
    pub fn then(self, newer: LastTurn) -> LastTurn {
        let shift = newer.depth.replies;
        let (old, new) = (self.depth, newer.depth);
        // An older fact found `d` replies back is `shift + d` back now.
        fn pick<T>(new: (Option<T>, u32), old: (Option<T>, u32), shift: u32) -> (Option<T>, u32) {
            match new {
                (Some(v), d) => (Some(v), d),
                (None, _) => match old {
                    (Some(v), d) if shift.saturating_add(d) < REPLIES => (Some(v), shift + d),
                    _ => (None, 0),
                },
            }
        }
        let (model, model_d) = pick((newer.model, new.model), (self.model, old.model), shift);
        let (long_cache, long_d) = pick((newer.long_cache, new.long_cache), (self.long_cache, old.long_cache), shift);
        let (read_price, read_d) = pick((newer.read_price, new.read_price), (self.read_price, old.read_price), shift);
        let (write_price, write_d) =
            pick((newer.write_price, new.write_price), (self.write_price, old.write_price), shift);
        LastTurn {
            at_ms: newer.at_ms.or(self.at_ms),
            model,
            long_cache,
            read_price,
            write_price,
            depth: Depth {
                model: model_d,
                long_cache: long_d,
                read_price: read_d,
                write_price: write_d,
                replies: shift.saturating_add(old.replies).min(REPLIES),
            },
        }
    }

    /// Whether the cache in use has the 1-hour lifetime.
    pub fn long(&self) -> bool {
        self.long_cache == Some(true)
    }
}

/// Dollars for `tokens` as dollars per million, when both are there and positive.
fn per_million(dollars: f64, tokens: u64) -> Option<f64> {
    (dollars.is_finite() && dollars > 0.0 && tokens > 0).then(|| dollars * 1e6 / tokens as f64)
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;
    use crate::host::{CacheCost, CacheUse};

    /// A reply showing what `shows` says: bit 0 a model, bit 1 a cache write (1-hour when bit 2),
    /// bit 3 the recorded cost of reading and writing.
    fn reply(i: usize, shows: u32) -> Reply<'static> {
        let cost = (shows & 8 != 0).then_some(CacheCost { input: 0.0, cache_read: 0.3 * i as f64, cache_write: 3.75 });
        Reply {
            provider: None,
            model: (shows & 1 != 0).then(|| Cow::Owned(format!("model-{i}"))),
            prompt_tokens: Some(1000),
            cache: Some(CacheUse {
                input: 10,
                cache_read: 1000,
                cache_write: if shows & 2 != 0 { 1_000_000 } else { 0 },
                cache_write_1h: if shows & 4 != 0 { 1_000_000 } else { 0 },
                cost,
            }),
        }
    }

    /// A session whose replies stopped showing a fact long ago (a provider that never writes the
    /// cache, say) has no such fact now, and is not read back to its first reply for it.
    #[test]
    fn the_facts_are_the_newest_replies_alone() {
        let replies = |shown_at: usize| (0..200).map(move |i| reply(i, if i == shown_at { 15 } else { 0 }));
        let far = LastTurn::gather(None, replies(REPLIES as usize));
        assert_eq!((far.model, far.long_cache, far.read_price, far.write_price), (None, None, None, None));
        assert_eq!(far.depth.replies, REPLIES);
        let near = LastTurn::gather(None, replies(REPLIES as usize - 1));
        assert_eq!(near.model.as_deref(), Some("model-63"));
        assert_eq!((near.long_cache, near.write_price), (Some(true), Some(3.75)));
    }

    /// Whatever stretch of newer replies a meter grows by, its facts are the whole reading's, at
    /// the edge of the newest replies too.
    #[test]
    fn a_newer_stretch_updates_the_facts_as_the_whole_reading_would() {
        for n in [1usize, 2, 40, 63, 64, 65, 100, 140] {
            for pattern in 0u32..6 {
                // Newest first; each fact shown now and then, each on its own rhythm.
                let shows = |i: usize| {
                    let every = |k: usize, bit: u32| if (i + pattern as usize) % k == k - 1 { bit } else { 0 };
                    every(23 + pattern as usize, 1) | every(37, 2) | every(50, 4) | every(61 + 3 * pattern as usize, 8)
                };
                let whole = LastTurn::gather(None, (0..n).map(|i| reply(i, shows(i))));
                for k in 0..=n {
                    let newer = LastTurn::gather(None, (0..k).map(|i| reply(i, shows(i))));
                    let older = LastTurn::gather(None, (k..n).map(|i| reply(i, shows(i))));
                    assert_eq!(
                        older.clone().then(newer.clone()),
                        whole,
                        "{n} replies, pattern {pattern}, the newest {k} newer"
                    );
                    // Grown twice: the older stretch itself grown from two.
                    let j = (k + n) / 2;
                    let oldest = LastTurn::gather(None, (j..n).map(|i| reply(i, shows(i))));
                    let middle = LastTurn::gather(None, (k..j).map(|i| reply(i, shows(i))));
                    assert_eq!(
                        oldest.then(middle).then(newer),
                        whole,
                        "{n} replies, pattern {pattern}, split {k}, {j}"
                    );
                }
            }
        }
    }
}

//! The newest turn's facts a priced meter needs ([`LastTurn`]): when the last request was, its
//! model, the cache lifetime its usage shows and the prices its recorded cost shows. Read from a
//! host's context ([`LastTurn::of`]) or, by a host's own meter that never builds one, from the
//! replies it reads on its own pass ([`LastTurn::gather`]), so both read them alike.

use super::{Reply, Role, View};
use crate::time::parse_iso_millis;

/// What the meter keeps of the session's newest turns (the meters' memos keep it). Each fact is
/// the newest reply's that shows it, so a stretch of newer lines updates them with
/// [`LastTurn::then`] as reading the whole path would.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
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
}

impl LastTurn {
    /// The newest turn's facts in a context: its leaf's path walked from the leaf back.
    pub fn of(view: &View<'_, '_>) -> LastTurn {
        let session = view.session;
        // The newest assistant entry: the last request's answer (a later entry of another kind,
        // shake's own log entry among them, reached no provider).
        let newest = view.units.iter().rev().find(|u| u.role == Role::Assistant);
        let at = newest.and_then(|u| session.timestamp(u.index));
        let Some(path) = view.leaf.and_then(|leaf| session.path(leaf).ok()) else {
            return LastTurn::gather(at.as_deref(), std::iter::empty());
        };
        LastTurn::gather(at.as_deref(), path.iter().rev().filter_map(|&index| session.reply(index)))
    }

    /// The facts of `replies`, newest first (read only as far as every fact is found), the last
    /// reply written at `at` (its ISO 8601 timestamp).
    pub fn gather<'a>(at: Option<&str>, replies: impl Iterator<Item = Reply<'a>>) -> LastTurn {
        let mut turn = LastTurn {
            at_ms: at.and_then(parse_iso_millis).and_then(|t| u64::try_from(t).ok()),
            ..LastTurn::default()
        };
        for reply in replies {
            if turn.model.is_none() {
                turn.model = reply.model.map(|m| m.into_owned());
            }
            if let Some(cache) = reply.cache {
                if turn.long_cache.is_none() && cache.cache_write > 0 {
                    turn.long_cache = Some(cache.cache_write_1h > 0);
                }
                let cost = cache.cost.unwrap_or_default();
                turn.read_price = turn.read_price.or_else(|| per_million(cost.cache_read, cache.cache_read));
                turn.write_price = turn.write_price.or_else(|| per_million(cost.cache_write, cache.cache_write));
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

    /// These facts updated by a newer stretch's (`newer`): each fact the newer one shows wins.
    pub fn then(self, newer: LastTurn) -> LastTurn {
        LastTurn {
            at_ms: newer.at_ms.or(self.at_ms),
            model: newer.model.or(self.model),
            long_cache: newer.long_cache.or(self.long_cache),
            read_price: newer.read_price.or(self.read_price),
            write_price: newer.write_price.or(self.write_price),
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

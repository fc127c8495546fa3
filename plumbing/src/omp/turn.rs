//! The newest turn's facts on the branch OMP's `/shake` reads ([`LastTurn`]), from the file the
//! meter already read: the priced OMP meter reads no second copy of the session (issue 31).
//!
//! Only the branch's message lines are looked at, newest first, and only as far as every fact is
//! found: each is scanned for its `message` and `timestamp` and the message read as pi reads it
//! ([`crate::pi::Message::reply`]), so the facts are those pi's reader of the whole file gives.

use super::file::OmpEntry;
use super::OmpFile;
use crate::host::turn::LastTurn;
use crate::pi::entry::as_str;
use crate::pi::message::Message;

/// The facts of the branch `branch` (root first) of `file`, whose newest compaction keeps the
/// entries from `first_kept` on ([`super::shake::boundary`]).
pub fn last_turn<'f>(file: &'f OmpFile, branch: &[&'f OmpEntry], first_kept: Option<&str>) -> LastTurn {
    // The line as OMP decodes it (`OmpFile::raw`: U+FFFD where it is not UTF-8).
    let fields = |e: &'f OmpEntry| {
        let [message, timestamp] = crate::js::json::members(file.raw(e).get(), &["message", "timestamp"])?;
        Some((message?, timestamp))
    };
    // The replies on the branch, newest first, each with its entry's position and timestamp.
    let mut replies = branch.iter().enumerate().rev().filter(|(_, e)| e.kind() == "message").filter_map(|(at, e)| {
        let (message, timestamp) = fields(e)?;
        Some((at, as_str(timestamp), Message::parse(message)?.reply()?))
    });
    // The last request's time is the newest reply's when it is in the context (pi's context
    // after the newest compaction starts at its kept entry: a newer reply would be in it too);
    // the other facts come from the whole branch, as pi's reader walks the whole path.
    let newest = replies.next();
    let from = context_start(branch, first_kept);
    let at = newest.as_ref().filter(|(at, ..)| *at >= from).and_then(|(_, t, _)| t.clone());
    LastTurn::gather(at.as_deref(), newest.into_iter().chain(replies).map(|(_, _, reply)| reply))
}

/// The first branch position pi's context keeps: the newest compaction's kept entry (the
/// compaction itself when it is not on the branch before it), 0 without a compaction.
fn context_start(branch: &[&OmpEntry], first_kept: Option<&str>) -> usize {
    let Some(compaction) = branch.iter().rposition(|e| e.kind() == "compaction") else { return 0 };
    let kept = first_kept.and_then(|id| branch[..compaction].iter().position(|e| e.id() == Some(id)));
    kept.unwrap_or(compaction)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{Host, SessionFile, View};
    use crate::omp::generate::{self, Options};
    use crate::pi::generate::Limit;

    /// The facts pi's reader gives for the file's default leaf: what the meter read before.
    fn by_pi_reader(path: &str, bytes: Vec<u8>) -> LastTurn {
        let file = SessionFile::from_bytes(path.into(), bytes);
        let session = crate::omp::host::Omp.load(&file).unwrap();
        let view = View::at(&session, session.default_leaf()).unwrap();
        LastTurn::of(&view)
    }

    /// The facts OMP's own reading gives, from its one parse.
    fn by_reading(path: &str, bytes: Vec<u8>) -> LastTurn {
        let file = OmpFile::parse(path.into(), bytes).unwrap();
        let tok = crate::omp::OmpTokenizer::new(None, false);
        crate::omp::reading(&file, &crate::omp::shake::AGGRESSIVE, None, tok).turn
    }

    #[test]
    fn the_reading_gives_the_turn_pis_reader_gives() {
        // The real file: usage with recorded cost on every turn.
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/omp/omp-large-session.jsonl");
        let bytes = std::fs::read(path).unwrap();
        let want = by_pi_reader(path, bytes.clone());
        assert!(want.at_ms.is_some() && want.read_price.is_some() && want.write_price.is_some(), "{want:?}");
        assert_eq!(by_reading(path, bytes), want);
        // Generated ones, with compactions (no usage: the time and model decide).
        for seed in 1..=12 {
            let options = Options {
                seed,
                limit: Limit::Entries(300),
                model: "anthropic/claude-sonnet-4-5".into(),
                title: "t".into(),
            };
            let bytes = generate::generate(&options);
            assert_eq!(by_reading("g.jsonl", bytes.clone()), by_pi_reader("g.jsonl", bytes), "seed {seed}");
        }
    }
}

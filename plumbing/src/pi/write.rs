//! How shake writes pi entries: the exact key order, fresh 8-hex ids, ISO timestamps, and
//! `JSON.stringify`-identical bytes (`spec/pi-session-format.md` §1.5).

use std::collections::HashSet;
use std::hash::BuildHasher;

use foldhash::fast::RandomState;
use serde_json::value::RawValue;

use crate::host::{Appender, Session};
use crate::js::write_string;

/// How much of the file's start and end seeds the ids (with its length and the timestamp).
const SEED_BYTES: usize = 64 << 10;

/// Makes entry lines for one batch appended to a session.
pub struct EntryWriter {
    /// Hashes of the ids in the file and in this batch: an id whose hash is here is not taken
    /// (a collision only skips a fresh id), so the file's ids are not copied.
    taken: HashSet<u64, RandomState>,
    hasher: RandomState,
    seed: blake3::Hash,
    counter: u64,
    timestamp: String,
}

impl EntryWriter {
    /// Prepares to write into `session`: ids are fresh against every id in the file, the
    /// timestamp is now (or `$SHAKE_TIMESTAMP`, for reproducible runs).
    pub fn new(session: &Session<'_>) -> EntryWriter {
        let timestamp = super::ids::iso(super::ids::now_millis());
        let raw = session.file.raw();
        // The file's length, first and last bytes stand for it (hashing a 1 GiB file whole for
        // a seed would cost a second; fresh ids are checked against the file's anyway).
        let mut seed = blake3::Hasher::new();
        seed.update(&(raw.len() as u64).to_le_bytes());
        seed.update(&raw[..raw.len().min(SEED_BYTES)]);
        seed.update(&raw[raw.len().saturating_sub(SEED_BYTES)..]);
        seed.update(timestamp.as_bytes());
        let hasher = RandomState::default();
        EntryWriter {
            taken: session.entries.iter().map(|e| hasher.hash_one(e.id())).collect(),
            hasher,
            seed: seed.finalize(),
            counter: 0,
            timestamp,
        }
    }

    /// The timestamp every entry of this batch carries.
    pub fn timestamp(&self) -> &str {
        &self.timestamp
    }

    /// Returns a fresh 8-hex id, unique in the file and in this batch. Ids derive from the
    /// file's bytes and the timestamp, so a run with `$SHAKE_TIMESTAMP` set is reproducible
    /// (the same ids, unless a hash collision skips one: then still fresh ones).
    pub fn fresh_id(&mut self) -> String {
        loop {
            // blake3 of the seed and the counter, hashed in one call (a hasher's set-up costs
            // more than the 40 bytes, once per entry of a batch).
            let mut input = [0u8; 40];
            input[..32].copy_from_slice(self.seed.as_bytes());
            input[32..].copy_from_slice(&self.counter.to_le_bytes());
            self.counter += 1;
            // The first 8 hex digits of the hash: its first 4 bytes.
            const HEX: &[u8; 16] = b"0123456789abcdef";
            let mut id = String::with_capacity(8);
            for b in &blake3::hash(&input).as_bytes()[..4] {
                id.push(char::from(HEX[usize::from(b >> 4)]));
                id.push(char::from(HEX[usize::from(b & 15)]));
            }
            if self.taken.insert(self.hasher.hash_one(id.as_str())) {
                return id;
            }
        }
    }

    /// Adds a `context_edit` line replacing `target`'s content with `content` (raw JSON) to
    /// `out`, without the trailing newline. Key order: type, id, parentId, timestamp, targetId,
    /// replacement.
    pub fn context_edit(&self, out: &mut Vec<u8>, id: &str, parent: Option<&str>, target: &str, content: &RawValue) {
        out.extend_from_slice(br#"{"type":"context_edit","id":"#);
        write_string(out, id.as_bytes());
        self.parent_and_time(out, parent);
        out.extend_from_slice(br#","targetId":"#);
        write_string(out, target.as_bytes());
        out.extend_from_slice(br#","replacement":{"content":"#);
        out.extend_from_slice(content.get().as_bytes());
        out.extend_from_slice(b"}}");
    }

    /// Adds a `custom` line to `out`, without the trailing newline. Key order: type,
    /// customType, data, id, parentId, timestamp. `data` is JSON as `JSON.stringify` spells it
    /// (integers and strings only: serde_json's spelling).
    pub fn custom(&self, out: &mut Vec<u8>, id: &str, parent: Option<&str>, custom_type: &str, data: &RawValue) {
        out.extend_from_slice(br#"{"type":"custom","customType":"#);
        write_string(out, custom_type.as_bytes());
        out.extend_from_slice(br#","data":"#);
        out.extend_from_slice(data.get().as_bytes());
        out.extend_from_slice(br#","id":"#);
        write_string(out, id.as_bytes());
        self.parent_and_time(out, parent);
        out.push(b'}');
    }

    /// `,"parentId":…,"timestamp":…`.
    fn parent_and_time(&self, out: &mut Vec<u8>, parent: Option<&str>) {
        out.extend_from_slice(br#","parentId":"#);
        match parent {
            Some(p) => write_string(out, p.as_bytes()),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(br#","timestamp":"#);
        write_string(out, self.timestamp.as_bytes());
    }
}

impl Appender for EntryWriter {
    fn fresh_id(&mut self) -> String {
        EntryWriter::fresh_id(self)
    }

    fn log_line(&self, out: &mut Vec<u8>, id: &str, parent: Option<&str>, record_type: &str, data: &RawValue) {
        self.custom(out, id, parent, record_type, data)
    }

    fn edit_line(&self, out: &mut Vec<u8>, id: &str, parent: Option<&str>, target: &str, content: &RawValue) {
        self.context_edit(out, id, parent, target, content)
    }
}

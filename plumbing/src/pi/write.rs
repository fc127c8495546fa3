//! How shake writes pi entries: the exact key order, fresh 8-hex ids, ISO timestamps, and
//! `JSON.stringify`-identical bytes (`spec/pi-session-format.md` §1.5).

use std::collections::HashSet;

use foldhash::fast::RandomState;
use serde_json::value::RawValue;

use crate::host::{Appender, Session};
use crate::js::write_string;

/// How much of the file's start and end seeds the ids (with its length and the timestamp).
const SEED_BYTES: usize = 64 << 10;

/// Makes entry lines for one batch appended to a session.
#[cfg_attr(test, derive(Clone))]
pub struct EntryWriter {
    /// The ids handed out, as the 4 bytes their hex spells (the file's are looked up in the
    /// session's own id table: a set of them all was 2.3 MiB of an undo on 100,000 entries).
    handed: HashSet<[u8; 4], RandomState>,
    seed: blake3::Hash,
    counter: u64,
    timestamp: String,
}

impl EntryWriter {
    /// Prepares to write into `session`: ids are seeded by the file (and made fresh against it
    /// by [`EntryWriter::fresh_id`]), the timestamp is now (or `$SHAKE_TIMESTAMP`, for
    /// reproducible runs).
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
        EntryWriter { handed: HashSet::default(), seed: seed.finalize(), counter: 0, timestamp }
    }

    /// Returns a fresh 8-hex id, unique in `session` (the one this writer was made for) and in
    /// this batch. Ids derive from the file's bytes and the timestamp, so a run with
    /// `$SHAKE_TIMESTAMP` set is reproducible.
    pub fn fresh_id(&mut self, session: &Session<'_>) -> String {
        loop {
            // blake3 of the seed and the counter, hashed in one call (a hasher's set-up costs
            // more than the 40 bytes, once per entry of a batch).
            let mut input = [0u8; 40];
            input[..32].copy_from_slice(self.seed.as_bytes());
            input[32..].copy_from_slice(&self.counter.to_le_bytes());
            self.counter += 1;
            // The first 8 hex digits of the hash: its first 4 bytes.
            const HEX: &[u8; 16] = b"0123456789abcdef";
            let bytes: [u8; 4] = blake3::hash(&input).as_bytes()[..4].try_into().expect("4 bytes");
            let mut id = String::with_capacity(8);
            for b in bytes {
                id.push(char::from(HEX[usize::from(b >> 4)]));
                id.push(char::from(HEX[usize::from(b & 15)]));
            }
            if session.index_of(&id).is_none() && self.handed.insert(bytes) {
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
    fn fresh_id(&mut self, session: &Session<'_>) -> String {
        EntryWriter::fresh_id(self, session)
    }

    fn log_line(&self, out: &mut Vec<u8>, id: &str, parent: Option<&str>, record_type: &str, data: &RawValue) {
        self.custom(out, id, parent, record_type, data)
    }

    fn edit_line(&self, out: &mut Vec<u8>, id: &str, parent: Option<&str>, target: &str, content: &RawValue) {
        self.context_edit(out, id, parent, target, content)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::SessionFile;

    fn session_file(ids: &[&str]) -> SessionFile {
        let mut text = String::from(
            r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#,
        );
        let mut parent = "null".to_string();
        for id in ids {
            text.push_str(&format!("\n{{\"type\":\"label\",\"id\":\"{id}\",\"parentId\":{parent}}}"));
            parent = format!("\"{id}\"");
        }
        SessionFile::from_bytes("t.jsonl".into(), format!("{text}\n").into_bytes())
    }

    #[test]
    fn fresh_ids_skip_the_sessions_ids_and_their_own() {
        let file = session_file(&["a1"]);
        let session = crate::pi::session::load(&file).unwrap();
        let mut writer = EntryWriter::new(&session);
        let next: Vec<String> = {
            let mut peek = writer.clone();
            (0..3).map(|_| peek.fresh_id(&session)).collect()
        };
        assert_eq!(next.iter().collect::<HashSet<_>>().len(), 3);
        // A session holding the first two ids this writer would hand out: it hands out the third.
        let holding = session_file(&[&next[0], &next[1]]);
        let holding = crate::pi::session::load(&holding).unwrap();
        assert_eq!(writer.fresh_id(&holding), next[2]);
        // Never the same id twice in a batch: from the start again, the ids handed out are skipped.
        writer.counter = 0;
        assert_eq!(writer.fresh_id(&session), next[0]);
        writer.counter = 0;
        assert_eq!(writer.fresh_id(&session), next[1]);
    }
}

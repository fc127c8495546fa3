//! Row objects: a session line stored with the file's session id taken out, for hosts that
//! write that id into every row (Claude Code's `"sessionId"`). A fork of such a file (the same
//! rows under a new id) then shares its rows, and their nodes, with its source: importing it
//! adds the version and the rows that really changed.
//!
//! A row object's bytes are the line with every `"sessionId":"<id>"` written
//! `"sessionId":"\u0000"` (an id Claude Code never writes); the version that lists it names the
//! id once (`session <id>`), and rebuilding the file writes it back. A line that already holds
//! that mark, or no `"sessionId":"<id>"` at all, stays an entry object, so putting the id back
//! always gives the exact line (`docs/format.md`, "row").

use memchr::memmem;

/// What a row object holds where the session id was.
pub const MARK: &[u8] = b"\"sessionId\":\"\\u0000\"";

/// Whether `id` may name a version's session (and so be taken out of rows): 1 to 100 ASCII
/// letters, digits, `-` or `_` (a uuid is), so it needs no escaping in a line or a version.
pub fn safe(id: &str) -> bool {
    (1..=100).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The row object for `line` with session id `id` taken out, or `None` when the line is stored
/// as an entry (it names the id nowhere, or already holds [`MARK`], or `id` is not [`safe`]).
pub fn take_out(line: &[u8], id: &str) -> Option<Vec<u8>> {
    if !safe(id) || memmem::find(line, MARK).is_some() {
        return None;
    }
    let key = format!("\"sessionId\":\"{id}\"");
    replace(line, key.as_bytes(), MARK)
}

/// The line a row object stands for in a file whose session id is `id`.
pub fn put_back(row: &[u8], id: &str) -> Vec<u8> {
    let key = format!("\"sessionId\":\"{id}\"");
    replace(row, MARK, key.as_bytes()).unwrap_or_else(|| row.to_vec())
}

/// `bytes` with every `from` replaced by `to`; `None` when there is none.
fn replace(bytes: &[u8], from: &[u8], to: &[u8]) -> Option<Vec<u8>> {
    let mut hits = memmem::find_iter(bytes, from).peekable();
    hits.peek()?;
    let mut out = Vec::with_capacity(bytes.len() + to.len());
    let mut at = 0;
    for hit in hits {
        out.extend_from_slice(&bytes[at..hit]);
        out.extend_from_slice(to);
        at = hit + from.len();
    }
    out.extend_from_slice(&bytes[at..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_comes_out_and_goes_back_exactly() {
        let line = br#"{"a":{"sessionId":"s-1"},"sessionId":"s-1","x":"\"sessionId\":\"s-1\""}"#;
        let row = take_out(line, "s-1").unwrap();
        assert_eq!(row, br#"{"a":{"sessionId":"\u0000"},"sessionId":"\u0000","x":"\"sessionId\":\"s-1\""}"#);
        assert_eq!(put_back(&row, "s-1"), line);
        // The same row under another id is the same object.
        let fork = put_back(&row, "t-2");
        assert_eq!(take_out(&fork, "t-2").unwrap(), row);
        // Lines that cannot be rows stay entries.
        assert_eq!(take_out(br#"{"sessionId":"other"}"#, "s-1"), None);
        assert_eq!(take_out(&row, "s-1"), None, "a line holding the mark");
        assert_eq!(take_out(br#"{"sessionId":"a b"}"#, "a b"), None, "an id that needs quoting");
        assert!(!safe("") && safe("3f2a-B_9") && !safe("a\"b"));
    }
}

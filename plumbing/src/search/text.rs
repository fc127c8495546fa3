//! The text a person reads in a session line, without its JSON: every string value, unescaped
//! (`\n` a line break, `\"` a quote, `\u00e9` an é), one after another, each ended by a line
//! break. Object keys are not text; nor are the values of the keys in [`SKIPPED`] (ids, times,
//! type tags and base64 payloads: an image, a thinking signature), which no person reads and
//! which would match patterns by chance. `docs/search.md` says what is searched and why.
//!
//! Host-neutral on purpose: every host writes JSON lines whose message text, tool input and
//! tool output are string values. It reads what it can of a line that is not JSON (the search
//! reads every stored line, malformed ones too) and never fails.

use memchr::memchr2;

/// Keys whose string values are not text a person reads: ids and links between entries, times,
/// type and role tags, and base64 payloads. Their values are left out of the text.
pub const SKIPPED: &[&[u8]] = &[
    b"id",
    b"parentId",
    b"uuid",
    b"parentUuid",
    b"leafUuid",
    b"sessionId",
    b"messageId",
    b"requestId",
    b"promptId",
    b"toolCallId",
    b"tool_use_id",
    b"timestamp",
    b"type",
    b"role",
    b"data",
    b"signature",
    b"thinkingSignature",
    b"textSignature",
    b"encrypted_content",
];

/// Appends the readable text of one line (its bytes without the `\n`) to `out`. Returns how many
/// string values it appended.
pub fn append(line: &[u8], out: &mut Vec<u8>) -> usize {
    let mut values = 0;
    let mut i = 0;
    // The last key read, as its raw bytes (keys are short and seldom escaped): a value right
    // after it is skipped when the key is in SKIPPED.
    let mut key: (usize, usize) = (0, 0);
    while let Some(q) = memchr::memchr(b'"', &line[i..]) {
        let start = i + q + 1;
        let mark = out.len();
        let end = unescape(line, start, out);
        // A key is a string followed by `:` (after blanks).
        let after = line[end..].iter().position(|b| !b.is_ascii_whitespace()).map(|p| end + p);
        let is_key = after.is_some_and(|a| line[a] == b':');
        if is_key {
            out.truncate(mark);
            key = (start, end.saturating_sub(1).max(start));
        } else if value_of_skipped(line, key, start) {
            out.truncate(mark);
        } else {
            out.push(b'\n');
            values += 1;
        }
        i = end;
        if i >= line.len() {
            break;
        }
    }
    values
}

/// Tells whether the string starting at `start` is the value of the skipped key `key` (only
/// blanks and the colon between them).
fn value_of_skipped(line: &[u8], key: (usize, usize), start: usize) -> bool {
    let (k0, k1) = key;
    if k1 <= k0 || k1 + 1 >= start {
        return false;
    }
    let between = &line[k1 + 1..start - 1];
    between.iter().all(|b| *b == b':' || b.is_ascii_whitespace()) && SKIPPED.contains(&&line[k0..k1])
}

/// Unescapes the JSON string whose body starts at `start` into `out`; returns the index just
/// past its closing quote (the line's end when it has none).
fn unescape(line: &[u8], start: usize, out: &mut Vec<u8>) -> usize {
    let mut i = start;
    loop {
        let Some(p) = memchr2(b'"', b'\\', &line[i..]) else {
            out.extend_from_slice(&line[i..]);
            return line.len();
        };
        out.extend_from_slice(&line[i..i + p]);
        i += p;
        if line[i] == b'"' {
            return i + 1;
        }
        // A backslash: the escape after it.
        let Some(&e) = line.get(i + 1) else {
            return line.len();
        };
        i += 2;
        match e {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'b' => out.push(0x08),
            b'f' => out.push(0x0c),
            b'u' => i = unicode(line, i, out),
            other => out.push(other),
        }
    }
}

/// Decodes the `XXXX` of a `\uXXXX` escape at `i` (and the low half of a surrogate pair after
/// it) into `out` as UTF-8; returns the index after what it read. A lone surrogate or bad hex
/// becomes U+FFFD, as a reader would see it.
fn unicode(line: &[u8], i: usize, out: &mut Vec<u8>) -> usize {
    let hex = |at: usize| -> Option<u32> {
        let s = std::str::from_utf8(line.get(at..at + 4)?).ok()?;
        u32::from_str_radix(s, 16).ok()
    };
    let Some(high) = hex(i) else {
        out.extend_from_slice("\u{fffd}".as_bytes());
        return i;
    };
    let (code, next) = if (0xD800..0xDC00).contains(&high) && line.get(i + 4..i + 6) == Some(b"\\u") {
        match hex(i + 6).filter(|low| (0xDC00..0xE000).contains(low)) {
            Some(low) => (0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00), i + 10),
            None => (0xFFFD, i + 4),
        }
    } else {
        (high, i + 4)
    };
    let c = char::from_u32(code).unwrap_or('\u{fffd}');
    out.extend_from_slice(c.encode_utf8(&mut [0u8; 4]).as_bytes());
    next
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(line: &str) -> String {
        let mut out = Vec::new();
        append(line.as_bytes(), &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn values_unescaped_keys_and_ids_left_out() {
        let line = r#"{"type":"message","id":"ab12","message":{"role":"tool","content":[{"type":"text","text":"line one\nsaid \"hi\" caf\u00e9 \ud83d\ude00\\"}]}}"#;
        assert_eq!(text(line), "line one\nsaid \"hi\" café 😀\\\n");
        // Tool input: the arguments' string values.
        let call = r#"{"type":"toolCall","name":"bash","arguments":{"command":"ls -la\n"}}"#;
        assert_eq!(text(call), "bash\nls -la\n\n");
        // An image's base64 is not text.
        assert_eq!(text(r#"{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}"#), "image/png\n");
    }

    #[test]
    fn a_line_that_is_not_json_never_fails() {
        assert_eq!(text("not json"), "");
        assert_eq!(text(r#"{"a":"cut short"#), "cut short\n");
        assert_eq!(text(r#"{"a":"bad \u12"}"#), "bad \u{fffd}12\n");
        assert_eq!(text(r#"{"a":"trailing \"#), "trailing \n");
    }
}

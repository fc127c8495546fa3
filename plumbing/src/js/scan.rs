//! Scanning JSON text without building values: where a string's plain run stops, the end of
//! a string known to be valid, the next structural byte, and the one-pass check of a value as
//! serde_json checks it (the fast path of reading a line whose every byte must be checked).

/// Tells whether a string in `b` (JSON serde_json accepted) holds a raw control character
/// (below 0x20). serde_json lets one through in an object key read as bytes ([`WtfKey`]: its
/// `deserialize_bytes` does not check), where `JSON.parse` refuses the whole line (one flipped
/// bit of `I` is a TAB): a reader that takes keys so checks the line with this.
pub fn raw_control_in_string(b: &[u8]) -> bool {
    let mut i = 0;
    // Outside strings, valid JSON has no quote: each one found opens a string.
    while let Some(q) = memchr::memchr(b'"', &b[i..]) {
        let mut j = i + q + 1;
        loop {
            j = string_stop(b, j);
            match b.get(j) {
                Some(b'"') => break,
                Some(b'\\') => j += 2,
                Some(_) => return true,
                None => return false,
            }
        }
        i = j + 1;
    }
    false
}

/// The first index from `i` of a byte that ends the plain run of a JSON string: `"`, `\\` or a
/// control character (below 0x20); `b.len()` when there is none.
pub fn string_stop(b: &[u8], i: usize) -> usize {
    first_of(b, i, b"\"\\", true)
}

/// The first index from `i` of a quote; `b.len()` when there is none: what finding the end of
/// a string already known to be valid JSON needs (its escapes need no stop, only the quote
/// they escape, [`trusted_string_end`]).
pub fn quote_stop(b: &[u8], i: usize) -> usize {
    first_of(b, i, b"\"", false)
}

/// The end (past its closing quote) of the string whose opening quote is at `i`, in text known
/// to be valid JSON: the first quote after it not escaped, that is not after an odd run of
/// backslashes. One stop a quote, not one an escape (a tool's output has an `\\n` a line).
pub fn trusted_string_end(b: &[u8], mut i: usize) -> usize {
    i += 1;
    loop {
        i = quote_stop(b, i);
        if i >= b.len() {
            return b.len();
        }
        // The run stops at the opening quote at the latest.
        let run = b[..i].iter().rev().take_while(|&&c| c == b'\\').count();
        if run % 2 == 0 {
            return i + 1;
        }
        i += 1;
    }
}

/// The first index from `i` of a quote or a bracket (`"`, `{`, `}`, `[`, `]`) in JSON text;
/// `b.len()` when there is none: what walking over a nested value stops at.
pub fn structural_stop(b: &[u8], i: usize) -> usize {
    first_of(b, i, b"\"{}[]", false)
}

/// The first index from `i` of a byte of `set` (or below 0x20 when `low`), sixteen bytes a step
/// (SSE2, which every x86-64 has): scanning every string of every line is most of reading a
/// session, and most of its strings are too short for `memchr`'s setup to pay.
#[inline(always)]
fn first_of(b: &[u8], mut i: usize, set: &[u8], low: bool) -> usize {
    #[cfg(target_arch = "x86_64")]
    while i + 16 <= b.len() {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of x86-64; the load reads `b[i..i + 16]`, in bounds as checked.
        let mask = unsafe {
            let x = _mm_loadu_si128(b.as_ptr().add(i).cast());
            let mut hit = match low {
                true => _mm_cmpeq_epi8(_mm_max_epu8(x, _mm_set1_epi8(0x1f)), _mm_set1_epi8(0x1f)),
                false => _mm_setzero_si128(),
            };
            for &c in set {
                hit = _mm_or_si128(hit, _mm_cmpeq_epi8(x, _mm_set1_epi8(c as i8)));
            }
            _mm_movemask_epi8(hit)
        };
        if mask != 0 {
            return i + mask.trailing_zeros() as usize;
        }
        i += 16;
    }
    while b.get(i).is_some_and(|c| !(set.contains(c) || low && *c < 0x20)) {
        i += 1;
    }
    i
}

/// JSON's whitespace (as `JSON.parse` and serde_json skip it) from `i`.
pub fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// Checks one JSON string literal whose opening quote is at `i` as serde_json checks it (escapes
/// from JSON's list, `\\u` with four hex digits, no raw control character); the index past its
/// closing quote.
pub fn check_string(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        j = string_stop(b, j);
        match *b.get(j)? {
            b'"' => return Some(j + 1),
            b'\\' => match *b.get(j + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => j += 2,
                b'u' if b.get(j + 2..j + 6)?.iter().all(u8::is_ascii_hexdigit) => j += 6,
                _ => return None,
            },
            _ => return None,
        }
    }
}

/// Checks a JSON number at `i` by JSON's grammar; the index past it.
fn check_number(b: &[u8], mut i: usize) -> Option<usize> {
    let digits = |b: &[u8], i: usize| i + b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    i = match *b.get(i)? {
        b'0' => i + 1,
        b'1'..=b'9' => digits(b, i + 1),
        _ => return None,
    };
    if b.get(i) == Some(&b'.') {
        let end = digits(b, i + 1);
        (end > i + 1).then_some(())?;
        i = end;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let end = digits(b, i);
        (end > i).then_some(())?;
        i = end;
    }
    // A digit right after is serde_json's "invalid number" (`01`); anything else is for the
    // caller to judge.
    (!b.get(i).is_some_and(u8::is_ascii_digit)).then_some(i)
}

/// How deep [`check_value`] follows nesting before it gives up (and the caller asks serde_json).
const CHECK_DEPTH: u32 = 128;

/// Checks the JSON value starting at `i` (no whitespace before it) as serde_json checks a value
/// it skips, and returns the index past it; `None` when it is not valid JSON, or nested deeper
/// than [`CHECK_DEPTH`] (the caller then lets serde_json decide). One pass, no allocation: the
/// fast path of reading a line whose every byte must be checked.
pub fn check_value(b: &[u8], mut i: usize) -> Option<usize> {
    // One bit per open container, 1 for an object.
    let (mut stack, mut depth) = (0u128, 0u32);
    loop {
        // A value at `i`.
        match *b.get(i)? {
            b'"' => i = check_string(b, i)?,
            open @ (b'{' | b'[') => {
                let close = if open == b'{' { b'}' } else { b']' };
                i = skip_ws(b, i + 1);
                if b.get(i) == Some(&close) {
                    i += 1;
                } else {
                    if depth == CHECK_DEPTH {
                        return None;
                    }
                    stack = stack << 1 | u128::from(open == b'{');
                    depth += 1;
                    if open == b'{' {
                        i = check_key(b, i)?;
                    }
                    continue;
                }
            }
            b't' => i = check_word(b, i, b"true")?,
            b'f' => i = check_word(b, i, b"false")?,
            b'n' => i = check_word(b, i, b"null")?,
            b'-' | b'0'..=b'9' => i = check_number(b, i)?,
            _ => return None,
        }
        // After a value: commas and closing brackets.
        loop {
            if depth == 0 {
                return Some(i);
            }
            let object = stack & 1 == 1;
            i = skip_ws(b, i);
            match *b.get(i)? {
                b',' => {
                    i = skip_ws(b, i + 1);
                    if object {
                        i = check_key(b, i)?;
                    }
                    break;
                }
                b'}' if object => {}
                b']' if !object => {}
                _ => return None,
            }
            i += 1;
            stack >>= 1;
            depth -= 1;
        }
    }
}

/// Checks `text` as one JSON object, as serde_json checks it, in one pass ([`check_value`] for
/// each value), handing each member's key (between its quotes) and its value's range to
/// `member`, in order; `None` for a text it leaves to serde_json: not valid JSON, not one object
/// (whitespace around it is JSON's), a key with an escape, or a value nested past the check's
/// depth. A reader of a few fields of many lines takes this path and asks serde_json only when
/// it answers `None`: going through serde_json's visitor was most of such a read.
pub fn check_object<'a>(text: &'a str, mut member: impl FnMut(&'a str, std::ops::Range<usize>)) -> Option<()> {
    let b = text.as_bytes();
    let mut i = skip_ws(b, 0);
    (b.get(i) == Some(&b'{')).then_some(())?;
    i = skip_ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        i += 1;
    } else {
        loop {
            (b.get(i) == Some(&b'"')).then_some(())?;
            let key_end = check_string(b, i)?;
            // Cut at two quotes of a `str`: on its character boundaries.
            let key = &text[i + 1..key_end - 1];
            if key.contains('\\') {
                return None;
            }
            i = skip_ws(b, key_end);
            (b.get(i) == Some(&b':')).then_some(())?;
            let start = skip_ws(b, i + 1);
            let end = check_value(b, start)?;
            member(key, start..end);
            i = skip_ws(b, end);
            match *b.get(i)? {
                b',' => i = skip_ws(b, i + 1),
                b'}' => {
                    i += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    (skip_ws(b, i) == b.len()).then_some(())
}

/// A key at `i`, its colon and the whitespace after it: the index of the member's value.
fn check_key(b: &[u8], i: usize) -> Option<usize> {
    (b.get(i) == Some(&b'"')).then_some(())?;
    let i = skip_ws(b, check_string(b, i)?);
    (b.get(i) == Some(&b':')).then(|| skip_ws(b, i + 1))
}

fn check_word(b: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    b[i..].starts_with(word).then_some(i + word.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_value_agrees_with_serde() {
        let texts = [
            r#"{"a":[1,-2.5e+3,0,-0,1E9,true,false,null,"x\"\\\/\b\f\n\r\t\u00aF",{}],"b":{"c":[[]]}}"#,
            " [ 1 , { \"a\" : \"b\" } ] ",
            "\"\"",
            "01",
            "1.",
            ".5",
            "1e",
            "1e+",
            "-",
            "--1",
            "[1,]",
            "{\"a\":1,}",
            "{\"a\" 1}",
            "{1:2}",
            "[1 2]",
            r#""a\u12""#,
            r#""a\x""#,
            "\"tab\there\"",
            "\"raw\u{1}\"",
            "tru",
            "nul",
            "[",
            "{\"a\":",
            "[1]]",
            "{}}",
            "\"unterminated",
            r#""\ud800""#,
            "[1e400]",
            "\"long string without anything special in it at all, past eight bytes\"",
            "\"long string with a quote \\\" after a while\"",
        ];
        for text in texts {
            let b = text.as_bytes();
            let ours = check_value(b, skip_ws(b, 0)).is_some_and(|end| skip_ws(b, end) == b.len());
            let serde = serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok();
            assert_eq!(ours, serde, "{text}");
        }
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert_eq!(check_value(deep.as_bytes(), 0), None, "left to serde_json");
        let fine = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert_eq!(check_value(fine.as_bytes(), 0), Some(200));
        let long = "0123456789abcdef0123456789";
        for (text, stop) in [("abc", 3), ("abcdefghij\"", 10), ("abcdefgh\\", 8), ("ab\u{1f}", 2), ("é\u{7f}x", 4)] {
            assert_eq!(string_stop(text.as_bytes(), 0), stop, "{text:?}");
            // The same past the first sixteen bytes, and from an offset.
            let wrapped = format!("{long}{text}{long}");
            let at = if stop < text.len() { long.len() + stop } else { wrapped.len() };
            assert_eq!(string_stop(wrapped.as_bytes(), 0), at, "{wrapped:?}");
            assert_eq!(string_stop(wrapped.as_bytes(), 3), at, "{wrapped:?}");
        }
        let nested = r#"0123456789abcdef0123456789 : 1, "a"#;
        assert_eq!(structural_stop(nested.as_bytes(), 0), nested.len() - 2);
        assert_eq!(structural_stop(b"ab]", 0), 2);
        assert_eq!(structural_stop(b"0123456789abcdef0123456789", 0), 26);
        // A string's end, found from its quotes alone, is where checking it ends.
        for text in [r#""""#, r#""a\"b""#, r#""a\\"x"#, r#""\\\"\\""#, r#""x\n0123456789abcdef\\\"0123\"" 1"#] {
            let b = text.as_bytes();
            assert_eq!(Some(trusted_string_end(b, 0)), check_string(b, 0), "{text}");
        }
        let unterminated = b"\"ab\\\"";
        assert_eq!(trusted_string_end(unterminated, 0), unterminated.len(), "the end of the text");
    }
}

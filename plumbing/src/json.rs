//! JSON as shake reads and writes it (every host's format is JavaScript's JSON): the one-pass
//! check of a line, the trusted readers of values already checked ([`trusted`]), and exact
//! writing: objects rebuilt key by key from raw values, so every value shake does not change
//! keeps its bytes, and the result equals `JSON.stringify`'s.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

/// A JSON object's members in order, values kept raw.
#[derive(Debug, Default)]
pub struct RawObject<'a> {
    /// `(key, value)` in source order; keys as WTF-8, so a key with a lone surrogate escape
    /// (which `JSON.parse` takes) is kept and written back as it was ([`crate::js`]).
    pub members: Vec<(Cow<'a, [u8]>, Cow<'a, RawValue>)>,
}

impl<'a> RawObject<'a> {
    /// Parses a JSON object; `None` if the text is not one.
    pub fn parse(text: &'a str) -> Option<RawObject<'a>> {
        serde_json::from_str(text).ok()
    }

    /// Returns a member's raw value.
    pub fn get(&self, key: &str) -> Option<&RawValue> {
        self.members.iter().find(|(k, _)| k.as_ref() == key.as_bytes()).map(|(_, v)| v.as_ref())
    }

    /// Returns a member's raw value as borrowed from the parsed text (`None` when absent, or
    /// set since).
    pub fn raw(&self, key: &str) -> Option<&'a RawValue> {
        match self.members.iter().find(|(k, _)| k.as_ref() == key.as_bytes()).map(|(_, v)| v) {
            Some(Cow::Borrowed(v)) => Some(v),
            _ => None,
        }
    }

    /// Reads a member as serde reads an `Option<Cow<str>>` field: absent or `null` is
    /// `Ok(None)`, a string `Ok(Some)` (a lone surrogate as U+FFFD), anything else `Err`.
    pub fn opt_str(&self, key: &str) -> Result<Option<Cow<'a, str>>, WrongType> {
        match self.raw(key) {
            None => Ok(None),
            Some(v) if v.get() == "null" => Ok(None),
            Some(v) => crate::js::string_text(v.get()).map(Some).ok_or(WrongType),
        }
    }

    /// Replaces a member's value in place, or appends the member (as `{...o, key}` does in JS).
    pub fn set(&mut self, key: &str, value: Box<RawValue>) {
        let value = Cow::Owned(value);
        match self.members.iter_mut().find(|(k, _)| k.as_ref() == key.as_bytes()) {
            Some(member) => member.1 = value,
            None => self.members.push((Cow::Owned(key.as_bytes().to_vec()), value)),
        }
    }

    /// Writes the object compactly, as `JSON.stringify` would for the same members.
    pub fn to_json(&self) -> String {
        let mut out = String::from("{");
        for (i, (key, value)) in self.members.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&crate::js::string_json(key));
            out.push(':');
            out.push_str(value.get());
        }
        out.push('}');
        out
    }
}

/// The part `range` of `text` as a raw value, without checking it again: for a range that is one
/// whole value inside JSON already read (a member or item of a [`RawValue`], a line's field).
/// Nothing unsafe follows from a wrong range, only a raw value that is not JSON.
pub fn raw_within(text: &str, range: std::ops::Range<usize>) -> &RawValue {
    let part: &str = &text[range];
    // SAFETY: serde_json's `RawValue` is `#[repr(transparent)]` over `str` (its own
    // `RawValue::from_borrowed` casts the same way), so the two references have one layout.
    unsafe { &*(part as *const str as *const RawValue) }
}

/// Returns a raw JSON value for a string.
pub fn raw_string(s: &str) -> Box<RawValue> {
    raw(js_string(s))
}

/// Wraps JSON text known to be valid as a raw value.
pub fn raw(json: String) -> Box<RawValue> {
    // Box<RawValue>'s default is `null`, which only an invalid caller would ever see.
    RawValue::from_string(json).unwrap_or_default()
}

impl<'de: 'a, 'a> Deserialize<'de> for RawObject<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> Visitor<'de> for Members {
            type Value = RawObject<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut members = Vec::new();
                while let Some(WtfKey(key)) = map.next_key()? {
                    let value: &'de RawValue = map.next_value()?;
                    // JSON.parse keeps the last of duplicate keys, at the first key's position.
                    match members.iter_mut().find(|(k, _): &&mut (Cow<'de, [u8]>, Cow<'de, RawValue>)| *k == key) {
                        Some(m) => m.1 = Cow::Borrowed(value),
                        None => members.push((key, Cow::Borrowed(value))),
                    }
                }
                Ok(RawObject { members })
            }
        }
        d.deserialize_map(Members)
    }
}

/// The members named in `keys` of the JSON object `text`, raw and borrowed from it, in the
/// order of `keys` (a key given twice takes its last value, as `JSON.parse` does); `None` when
/// `text` is not one JSON object. Every other member is checked and skipped, never built: a
/// field scan without a `Value` tree.
pub fn members<'a, const N: usize>(text: &'a str, keys: &[&str; N]) -> Option<[Option<&'a RawValue>; N]> {
    struct Slots<'k, const N: usize>(&'k [&'k str; N]);
    impl<'de, const N: usize> DeserializeSeed<'de> for Slots<'_, N> {
        type Value = [Option<&'de RawValue>; N];
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_map(self)
        }
    }
    impl<'de, const N: usize> Visitor<'de> for Slots<'_, N> {
        type Value = [Option<&'de RawValue>; N];
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
            let mut out = [None; N];
            while let Some(WtfKey(key)) = map.next_key()? {
                let value: &'de RawValue = map.next_value()?;
                if let Some(i) = self.0.iter().position(|k| k.as_bytes() == key.as_ref()) {
                    out[i] = Some(value);
                }
            }
            Ok(out)
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let out = Slots(keys).deserialize(&mut de).ok()?;
    de.end().ok()?;
    (!raw_control_in_string(text.as_bytes())).then_some(out)
}

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

/// A key at `i`, its colon and the whitespace after it: the index of the member's value.
fn check_key(b: &[u8], i: usize) -> Option<usize> {
    (b.get(i) == Some(&b'"')).then_some(())?;
    let i = skip_ws(b, check_string(b, i)?);
    (b.get(i) == Some(&b':')).then(|| skip_ws(b, i + 1))
}

fn check_word(b: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    b[i..].starts_with(word).then_some(i + word.len())
}

/// A member that is there but not of the type asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WrongType;

/// An object key as WTF-8: serde_json decodes keys into bytes without refusing lone surrogates.
pub struct WtfKey<'de>(pub Cow<'de, [u8]>);

impl<'de> Deserialize<'de> for WtfKey<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_bytes(crate::js::Wtf8Visitor).map(WtfKey)
    }
}

/// A string as `JSON.stringify` writes it (the one writer, [`crate::js::string_json`], which
/// also takes lone surrogates).
pub fn js_string(s: &str) -> String {
    crate::js::string_json(s.as_bytes())
}

/// Reading the parts of a value already known to be JSON (a [`RawValue`] is: serde_json
/// checked it when it was read), without checking it again: each member or item is found by
/// skipping over strings (to their first unescaped quote) and counting brackets. Most of a command's reading of many
/// small entries was serde_json checking the same bytes again for each reader.
pub mod trusted {
    use super::skip_ws as ws;
    use serde_json::value::RawValue;

    /// The members of an object as (key, value), or `None` when `raw` is not an object; an item
    /// is `None` where a key holds an escape (the caller decodes those otherwise).
    pub fn members(raw: &RawValue) -> Option<impl Iterator<Item = Option<(&[u8], &RawValue)>>> {
        let b = raw.get().as_bytes();
        let open = ws(b, 0);
        (b.get(open) == Some(&b'{')).then(|| Members { raw, i: ws(b, open + 1) })
    }

    struct Members<'a> {
        raw: &'a RawValue,
        i: usize,
    }

    impl<'a> Iterator for Members<'a> {
        type Item = Option<(&'a [u8], &'a RawValue)>;

        fn next(&mut self) -> Option<Self::Item> {
            let b = self.raw.get().as_bytes();
            if b.get(self.i) != Some(&b'"') {
                return None;
            }
            let (plain, key, start) = key_at(b, self.i);
            let end = value_end(b, start);
            self.i = after(b, end);
            Some(plain.then(|| (key, sub(self.raw, start, end))))
        }
    }

    /// The member whose key's quote is at `i`: whether the key is plain (no escape), its bytes
    /// between the quotes, and where its value starts.
    fn key_at(b: &[u8], i: usize) -> (bool, &[u8], usize) {
        // A key ends at its first quote unless it holds an escape.
        let stop = super::string_stop(b, i + 1);
        let plain = b.get(stop) == Some(&b'"');
        let key_end = if plain { stop + 1 } else { super::trusted_string_end(b, i) };
        (plain, &b[i + 1..key_end - 1], ws(b, ws(b, key_end) + 1))
    }

    /// Walks the object whose `{` is at `open` in `text`, handing each member's key and the
    /// index its value starts at to `read`, which returns the index past the value (the
    /// [`value_end`] of one it has no use for): a reader may read a value as it finds its end,
    /// not walk it twice. The index past the object; `None` at a key with an escape (the walk
    /// stops there: the caller decodes such an object otherwise).
    #[inline]
    pub fn walk<'a>(text: &'a str, open: usize, mut read: impl FnMut(&'a [u8], usize) -> usize) -> Option<usize> {
        let b = text.as_bytes();
        let mut i = ws(b, open + 1);
        while b.get(i) == Some(&b'"') {
            let (plain, key, start) = key_at(b, i);
            if !plain {
                return None;
            }
            i = after(b, read(key, start));
        }
        Some((i + 1).min(b.len()))
    }

    /// The start of the next member or item after a value ending at `end` (past its comma), or
    /// the closing bracket.
    pub fn after(b: &[u8], end: usize) -> usize {
        let i = ws(b, end);
        match b.get(i) {
            Some(b',') => ws(b, i + 1),
            _ => i,
        }
    }

    /// The end of the value that starts at `i`.
    pub fn value_end(b: &[u8], i: usize) -> usize {
        match b.get(i) {
            Some(b'"') => super::trusted_string_end(b, i),
            Some(b'{' | b'[') => {
                let (mut depth, mut j) = (0usize, i);
                loop {
                    j = super::structural_stop(b, j);
                    let Some(&c) = b.get(j) else { break };
                    match c {
                        b'"' => {
                            j = super::trusted_string_end(b, j);
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                return j + 1;
                            }
                        }
                        _ => {}
                    }
                    j += 1;
                }
                b.len()
            }
            // A literal of valid JSON is whole; a number ends at its first byte that no number
            // has (no need to look for what may follow it).
            Some(b't' | b'n') => (i + 4).min(b.len()),
            Some(b'f') => (i + 5).min(b.len()),
            _ => i + b[i..].iter().take_while(|c| matches!(c, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')).count(),
        }
    }

    /// The value at `start..end` of `raw`: one whole JSON value inside a valid one, so valid too.
    fn sub(raw: &RawValue, start: usize, end: usize) -> &RawValue {
        super::raw_within(raw.get(), start..end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_pi_lines_byte_for_byte() {
        let line =
            r#"{"type":"message","id":"a1","parentId":null,"message":{"role":"user","content":"é \n","n":1.5e-7}}"#;
        let o = RawObject::parse(line).unwrap();
        assert_eq!(o.to_json(), line);
    }

    #[test]
    fn set_replaces_in_place_or_appends() {
        let mut o = RawObject::parse(r#"{"a":1,"parentId":"x","b":2}"#).unwrap();
        o.set("parentId", raw_string("y"));
        o.set("c", raw("null".into()));
        assert_eq!(o.to_json(), r#"{"a":1,"parentId":"y","b":2,"c":null}"#);
    }

    #[test]
    fn members_take_the_last_of_duplicate_keys_and_refuse_non_objects() {
        let [a, b, c] = members(r#"{"a":1,"x":{"a":9},"b":"s","a":[2]}"#, &["a", "b", "c"]).unwrap();
        assert_eq!((a.map(RawValue::get), b.map(RawValue::get), c.is_none()), (Some("[2]"), Some("\"s\""), true));
        assert!(members("[1]", &["a"]).is_none() && members(r#"{"a":1} x"#, &["a"]).is_none());
        assert!(members(r#"{"a":tru}"#, &["b"]).is_none());
    }

    /// The check takes exactly what serde_json takes, on valid and broken texts alike.
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

    #[test]
    fn strings_escape_like_javascript() {
        assert_eq!(js_string("a\"\\\n\u{1}\u{7f}é/\u{2028}"), "\"a\\\"\\\\\\n\\u0001\u{7f}é/\u{2028}\"");
    }
}

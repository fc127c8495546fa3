//! Strings and numbers as JavaScript reads and writes them: WTF-8 (UTF-8 that may also hold
//! lone surrogates) decoded from and written as JSON literals, read as text (a surrogate as
//! U+FFFD), and doubles as `Number.prototype.toString` writes them.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserializer, Visitor};

use super::scan::string_stop;

/// A string's length in UTF-16 code units (JavaScript's `.length`): what pi's estimate and
/// Claude Code's and oh-my-pi's size limits count.
pub fn utf16_len(s: &str) -> usize {
    match s.is_ascii() {
        true => s.len(),
        false => s.chars().map(char::len_utf16).sum(),
    }
}

/// Writes a WTF-8 string as `JSON.stringify` does: `"`, `\`, and control characters escaped
/// (`\n`, `\u001f`, …), lone surrogates as `\udxxx`, everything else as is.
pub fn write_string(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            0..0x20 => out.extend_from_slice(format!("\\u{c:04x}").as_bytes()),
            0xED if surrogate_at(s, i) => {
                let unit = 0xD000 | ((s[i + 1] as u32 & 0x3F) << 6) | (s[i + 2] as u32 & 0x3F);
                out.extend_from_slice(format!("\\u{unit:04x}").as_bytes());
                i += 3;
                continue;
            }
            _ => out.push(c),
        }
        i += 1;
    }
    out.push(b'"');
}

/// Returns `JSON.stringify(s)` for a WTF-8 string.
pub fn string_json(s: &[u8]) -> String {
    let mut out = Vec::with_capacity(s.len() + 2);
    write_string(&mut out, s);
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Tells whether a surrogate code point (ED A0..BF xx in WTF-8) starts at `s[i]`.
fn surrogate_at(s: &[u8], i: usize) -> bool {
    s[i] == 0xED && s.get(i + 1).is_some_and(|b| (0xA0..=0xBF).contains(b)) && s.get(i + 2).is_some()
}

/// Reads WTF-8 as text: each surrogate becomes U+FFFD, which is as long in bytes (3) and in
/// UTF-16 units (1), so byte offsets into the text are offsets into the WTF-8 too.
pub fn lossy(s: &[u8]) -> Cow<'_, str> {
    if let Ok(text) = std::str::from_utf8(s) {
        return Cow::Borrowed(text);
    }
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if surrogate_at(s, i) {
            out.extend_from_slice("\u{FFFD}".as_bytes());
            i += 3;
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_or_else(|e| Cow::Owned(String::from_utf8_lossy(e.as_bytes()).into_owned()), Cow::Owned)
}

/// Decodes a JSON string literal to WTF-8 (`None` when it is not a string); borrowed when it
/// holds no escape.
pub fn string_wtf8(raw: &str) -> Option<Cow<'_, [u8]>> {
    if !raw.starts_with('"') {
        return None;
    }
    if let Some(plain) = plain_string(raw) {
        return Some(Cow::Borrowed(plain.as_bytes()));
    }
    let mut de = serde_json::Deserializer::from_str(raw);
    let bytes = de.deserialize_bytes(Wtf8Visitor).ok()?;
    de.end().ok()?;
    Some(bytes)
}

/// The text of a string literal that holds no escape (most of them): nothing to decode, so no
/// deserializer is needed. `None` for anything else (escapes, or not one whole literal).
fn plain_string(raw: &str) -> Option<&str> {
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    (string_stop(inner.as_bytes(), 0) == inner.len()).then_some(inner)
}

/// Decodes a JSON string literal as text, lone surrogates as U+FFFD ([`lossy`]).
pub fn string_text(raw: &str) -> Option<Cow<'_, str>> {
    if let Some(plain) = plain_string(raw) {
        return Some(Cow::Borrowed(plain));
    }
    if let Some(text) = unescape(raw) {
        return Some(Cow::Owned(text));
    }
    Some(match string_wtf8(raw)? {
        Cow::Borrowed(b) => lossy(b),
        Cow::Owned(v) => Cow::Owned(lossy(&v).into_owned()),
    })
}

/// Decodes a string literal straight into text when none of its escapes is a surrogate's
/// (`None` for those and for anything but one valid literal, which the deserializer then reads):
/// one pass and one copy, where the deserializer's way scanned the text three times and copied
/// it twice (a tool result's text with line breaks is decoded once per view).
fn unescape(raw: &str) -> Option<String> {
    let b = raw.as_bytes();
    (b.first() == Some(&b'"')).then_some(())?;
    let mut out = String::with_capacity(b.len());
    let mut i = 1;
    loop {
        // `i` and the stop are at character boundaries: after a quote or an escape, and at an
        // ASCII byte (or the end).
        let stop = string_stop(b, i);
        out.push_str(raw.get(i..stop)?);
        match *b.get(stop)? {
            b'"' => return (stop + 1 == b.len()).then_some(out),
            b'\\' => {}
            _ => return None,
        }
        let (c, len) = match *b.get(stop + 1)? {
            b'"' => ('"', 2),
            b'\\' => ('\\', 2),
            b'/' => ('/', 2),
            b'b' => ('\u{8}', 2),
            b'f' => ('\u{c}', 2),
            b'n' => ('\n', 2),
            b'r' => ('\r', 2),
            b't' => ('\t', 2),
            b'u' => {
                let hex = b.get(stop + 2..stop + 6)?;
                hex.iter().all(u8::is_ascii_hexdigit).then_some(())?;
                let unit = hex.iter().fold(0u32, |n, &h| n * 16 + (h as char).to_digit(16).unwrap_or(0));
                // A surrogate (paired or lone) is the deserializer's to join or to replace.
                (char::from_u32(unit)?, 6)
            }
            _ => return None,
        };
        out.push(c);
        i = stop + len;
    }
}

/// serde_json decodes strings into bytes without refusing lone surrogates (as WTF-8).
pub struct Wtf8Visitor;

impl<'de> Visitor<'de> for Wtf8Visitor {
    type Value = Cow<'de, [u8]>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_bytes<E>(self, v: &'de [u8]) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_bytes<E>(self, v: &[u8]) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_vec()))
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v.as_bytes()))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.as_bytes().to_vec()))
    }
}

/// Formats a double as JavaScript's `Number.prototype.toString` does (ECMA-262 `Number::toString`).
pub fn js_number(x: f64) -> String {
    if !x.is_finite() {
        return "null".into();
    }
    if x == 0.0 {
        return "0".into();
    }
    // Integers below 2^53 (timestamps, counts: most numbers in a session) print as integers.
    if x.fract() == 0.0 && x.abs() < 9_007_199_254_740_992.0 {
        return (x as i64).to_string();
    }
    let sign = if x < 0.0 { "-" } else { "" };
    // Rust's `{:e}` gives the shortest round-trip digits: "d.ddde±x".
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let k = digits.len() as i64;
    let n = exp.parse::<i64>().unwrap_or(0) + 1;
    let body = if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let e = n - 1;
        let e = if e >= 0 { format!("+{e}") } else { e.to_string() };
        match digits.split_at(1) {
            (d, "") => format!("{d}e{e}"),
            (d, rest) => format!("{d}.{rest}e{e}"),
        }
    };
    format!("{sign}{body}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_units() {
        assert_eq!(utf16_len("é😀"), 3);
        assert_eq!(utf16_len("abc"), 3);
    }

    #[test]
    fn string_literals_decode_without_refusing_surrogates() {
        assert_eq!(string_text(r#""a\ud800""#).unwrap(), "a\u{FFFD}");
        assert!(matches!(string_text(r#""plain""#), Some(Cow::Borrowed("plain"))));
        assert_eq!(string_wtf8(r#""\udc00""#).unwrap().as_ref(), b"\xED\xB0\x80");
        assert!(string_text("[1]").is_none());
        // The escape-free fast path borrows; anything it cannot vouch for goes to the parser.
        assert!(matches!(string_wtf8(r#""é x""#), Some(Cow::Borrowed(b)) if b == "é x".as_bytes()));
        assert_eq!(string_text(r#""a\"b""#).unwrap(), "a\"b");
        assert!(string_text(r#""a"b""#).is_none());
        assert!(string_text("\"a").is_none());
        assert_eq!(string_json(b"\xED\xB0\x80\n"), "\"\\udc00\\n\"");
        // The direct decoder reads what the deserializer reads, or leaves it to it.
        let texts = [
            r#""a\nb\t\"\\\/\b\f\r""#,
            r#""\u00e9\u20AC x \u0001""#,
            r#""line one\nline two, long enough to pass sixteen bytes\n""#,
            r#""\ud83d\ude00""#,
            r#""\ud800 lone""#,
            r#""bad \x escape""#,
            r#""\u12g4""#,
            r#""\u+123""#,
            r#""cut\"#,
            r#""a\n" "#,
            r#""a\n"b""#,
            "\"raw \u{1} control\\n\"",
        ];
        for text in texts {
            let serde = string_wtf8(text).map(|b| lossy(&b).into_owned());
            if let Some(direct) = unescape(text) {
                assert_eq!(Some(&direct), serde.as_ref(), "{text}");
            }
            assert_eq!(string_text(text).map(Cow::into_owned), serde, "{text}");
        }
        assert!(unescape(texts[0]).is_some() && unescape(texts[3]).is_none());
    }
}

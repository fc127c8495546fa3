//! JSON as JavaScript reads and writes it (`JSON.parse`, `JSON.stringify`), for the lines pi
//! reads that serde_json refuses: strings with lone UTF-16 surrogates (`"\ud800"`), numbers
//! outside a double's range (`1e400` is `Infinity`), and nesting deeper than serde's 128.
//!
//! Strings are kept as WTF-8 (UTF-8 that may also hold surrogate code points, three bytes each),
//! so every string round-trips to the bytes `JSON.stringify` writes. Where the engine needs text
//! (`&str`), a lone surrogate reads as U+FFFD: also three bytes and one UTF-16 unit, so offsets
//! and pi's `.length` hold, and it is what JavaScript's `TextEncoder` (and so a BPE tokenizer fed
//! from JavaScript) makes of it.
//!
//! The value and its parser; the strings and numbers it reads and writes are [`super::string`]'s.

use std::borrow::Cow;

use serde_json::value::RawValue;
use serde_json::Value;

use super::scan::string_stop;
use super::string::{js_number, lossy, write_string};

/// How deep [`parse`] nests arrays and objects. pi's `JSON.parse` has no limit, but its
/// `JSON.stringify` (every request pi sends) overflows V8's stack at about 4,000 levels on
/// Node 20; shake reads up to this depth and warns beyond it (`docs/reliability.md`).
pub const MAX_DEPTH: usize = 1000;

/// A JSON value as `JSON.parse` gives it.
#[derive(Clone, Debug, PartialEq)]
pub enum Js {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A double; `±Infinity` for a literal out of range.
    Number(f64),
    /// A string, as WTF-8.
    String(Vec<u8>),
    /// An array.
    Array(Vec<Js>),
    /// An object's members in insertion order, each key once (a repeated key keeps its first
    /// place and takes its last value, as `JSON.parse` does).
    Object(Vec<(Vec<u8>, Js)>),
}

/// Why [`parse`] refused a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Not JSON.
    Invalid,
    /// Nested deeper than [`MAX_DEPTH`].
    TooDeep,
}

/// Parses JSON text as `JSON.parse` does (up to [`MAX_DEPTH`] levels).
pub fn parse(text: &str) -> Result<Js, Refused> {
    let mut p = Parser { b: text.as_bytes(), i: 0 };
    let value = p.value(0)?;
    p.ws();
    match p.i == p.b.len() {
        true => Ok(value),
        false => Err(Refused::Invalid),
    }
}

/// JSON text as a serde_json value, read as `JSON.parse` reads it where serde_json refuses it
/// (a lone surrogate as U+FFFD, `1e400` as `null`: [`Js::to_value`]); `None` when it is not JSON.
pub fn value(text: &str) -> Option<Value> {
    serde_json::from_str(text).ok().or_else(|| Some(parse(text).ok()?.to_value()))
}

/// Returns how deep arrays and objects nest in JSON text (0 for a scalar), counting brackets
/// outside strings; a cheap test for [`MAX_DEPTH`] that needs no parse.
pub fn depth(text: &str) -> usize {
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &c in text.as_bytes() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

impl Js {
    /// Returns an object's member.
    pub fn get(&self, key: &str) -> Option<&Js> {
        match self {
            Js::Object(members) => members.iter().find(|(k, _)| k == key.as_bytes()).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Returns a string value as text (lone surrogates as U+FFFD).
    pub fn as_str(&self) -> Option<Cow<'_, str>> {
        match self {
            Js::String(s) => Some(lossy(s)),
            _ => None,
        }
    }

    /// Sets an object's member as JavaScript's `o[key] = value` does: in place, or appended.
    pub fn set(&mut self, key: &str, value: Js) {
        if let Js::Object(members) = self {
            match members.iter_mut().find(|(k, _)| k == key.as_bytes()) {
                Some(m) => m.1 = value,
                None => members.push((key.as_bytes().to_vec(), value)),
            }
        }
    }

    /// Removes an object's member (`delete o[key]`).
    pub fn remove(&mut self, key: &str) {
        if let Js::Object(members) = self {
            members.retain(|(k, _)| k != key.as_bytes());
        }
    }

    /// Returns an object's members in JavaScript's order (`Object.entries`): integer-like keys
    /// first, ascending, then the rest as inserted; nothing for other values.
    pub fn members(&self) -> Vec<&(Vec<u8>, Js)> {
        let Js::Object(members) = self else { return Vec::new() };
        let mut order: Vec<&(Vec<u8>, Js)> = members.iter().collect();
        order.sort_by_key(|(k, _)| array_index(k).map_or((1, 0), |i| (0, i)));
        order
    }

    /// Returns `JSON.stringify(self)`.
    pub fn to_json(&self) -> String {
        let mut out = Vec::new();
        self.write(&mut out);
        // Only whole UTF-8 sequences are copied and surrogates are escaped: the bytes are UTF-8.
        String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }

    /// Appends `JSON.stringify(self)` to `out` (bytes as [`Js::to_json`] gives them).
    pub fn write(&self, out: &mut Vec<u8>) {
        match self {
            Js::Null => out.extend_from_slice(b"null"),
            Js::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            Js::Number(n) => out.extend_from_slice(js_number(*n).as_bytes()),
            Js::String(s) => write_string(out, s),
            Js::Array(items) => {
                out.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    item.write(out);
                }
                out.push(b']');
            }
            Js::Object(members) => {
                out.push(b'{');
                let mut write = |i: usize, (key, value): &(Vec<u8>, Js)| {
                    if i > 0 {
                        out.push(b',');
                    }
                    write_string(out, key);
                    out.push(b':');
                    value.write(out);
                };
                // Most objects have no integer-like key: their order is as inserted.
                match members.iter().any(|(k, _)| array_index(k).is_some()) {
                    true => self.members().into_iter().enumerate().for_each(|(i, m)| write(i, m)),
                    false => members.iter().enumerate().for_each(|(i, m)| write(i, m)),
                }
                out.push(b'}');
            }
        }
    }

    /// The value as serde_json holds it, for callers that need one: lone surrogates become
    /// U+FFFD and `±Infinity` `null` (as `JSON.stringify` prints it); integers stay integers.
    pub fn to_value(&self) -> Value {
        match self {
            Js::Null => Value::Null,
            Js::Bool(b) => Value::Bool(*b),
            Js::Number(n) if n.fract() == 0.0 && n.abs() <= (1u64 << 53) as f64 => {
                if *n == 0.0 {
                    Value::from(0)
                } else {
                    Value::from(*n as i64)
                }
            }
            Js::Number(n) => serde_json::Number::from_f64(*n).map_or(Value::Null, Value::Number),
            Js::String(s) => Value::String(lossy(s).into_owned()),
            Js::Array(items) => Value::Array(items.iter().map(Js::to_value).collect()),
            Js::Object(members) => {
                Value::Object(members.iter().map(|(k, v)| (lossy(k).into_owned(), v.to_value())).collect())
            }
        }
    }

    /// A serde_json value as JavaScript holds it.
    pub fn from_value(value: &Value) -> Js {
        match value {
            Value::Null => Js::Null,
            Value::Bool(b) => Js::Bool(*b),
            Value::Number(n) => Js::Number(n.as_f64().unwrap_or(f64::NAN)),
            Value::String(s) => Js::String(s.as_bytes().to_vec()),
            Value::Array(items) => Js::Array(items.iter().map(Js::from_value).collect()),
            Value::Object(map) => {
                Js::Object(map.iter().map(|(k, v)| (k.as_bytes().to_vec(), Js::from_value(v))).collect())
            }
        }
    }
}

/// Tells whether JSON text is already what `JSON.stringify(JSON.parse(text))` writes (so a
/// writer may copy it instead of parsing and writing it again): no whitespace between tokens,
/// strings escaped as [`write_string`] escapes them, numbers as JavaScript prints them, no
/// object with an integer-like or a repeated key (JavaScript moves or merges those), nesting
/// within [`MAX_DEPTH`]. `false` is always safe: it only means "parse it".
pub fn is_stringified(text: &str) -> bool {
    let mut c = Canonical { b: text.as_bytes(), i: 0, watch: b"", found: None };
    c.value(0) && c.i == c.b.len()
}

/// [`is_stringified`] of an object's text, with the text of its member `key` when it has one
/// (the one walk that checks the text finds it: looking it up apart walked the text again);
/// `None` when the text is not what `JSON.stringify` writes.
pub fn stringified_member<'t>(text: &'t str, key: &str) -> Option<Option<&'t str>> {
    let mut c = Canonical { b: text.as_bytes(), i: 0, watch: key.as_bytes(), found: None };
    (c.value(0) && c.i == c.b.len()).then(|| c.found.map(|span| &text[span]))
}

/// The most keys an object [`is_stringified`] takes may have.
const OBJECT_KEYS: usize = 24;

/// The checker of [`is_stringified`]: a cursor that walks the text once.
struct Canonical<'t> {
    b: &'t [u8],
    i: usize,
    /// A key of the outermost object whose value's place is noted in `found` (empty: none).
    watch: &'t [u8],
    found: Option<std::ops::Range<usize>>,
}

impl<'t> Canonical<'t> {
    fn value(&mut self, depth: usize) -> bool {
        let Some(&c) = self.b.get(self.i) else { return false };
        match c {
            b'"' => self.string().is_some(),
            b'-' | b'0'..=b'9' => self.number(),
            b'n' => self.word(b"null"),
            b't' => self.word(b"true"),
            b'f' => self.word(b"false"),
            b'[' if depth < MAX_DEPTH => {
                self.i += 1;
                if self.b.get(self.i) == Some(&b']') {
                    self.i += 1;
                    return true;
                }
                loop {
                    if !self.value(depth + 1) {
                        return false;
                    }
                    match self.b.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return true;
                        }
                        _ => return false,
                    }
                }
            }
            b'{' if depth < MAX_DEPTH => {
                self.i += 1;
                if self.b.get(self.i) == Some(&b'}') {
                    self.i += 1;
                    return true;
                }
                // Keys compare as written: canonical escapes spell each string one way only.
                // Objects are small; a bigger one is left to the parser rather than compared key
                // by key (and the keys seen stay on the stack).
                let mut keys: [&'t [u8]; OBJECT_KEYS] = [&[]; OBJECT_KEYS];
                let mut n = 0;
                loop {
                    let Some(key) = self.string() else { return false };
                    let repeated = keys[..n].contains(&key);
                    if key.first().is_some_and(u8::is_ascii_digit) || repeated || n == OBJECT_KEYS {
                        return false;
                    }
                    keys[n] = key;
                    n += 1;
                    if self.b.get(self.i) != Some(&b':') {
                        return false;
                    }
                    self.i += 1;
                    let start = self.i;
                    if !self.value(depth + 1) {
                        return false;
                    }
                    if depth == 0 && key == self.watch {
                        self.found = Some(start..self.i);
                    }
                    match self.b.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            return true;
                        }
                        _ => return false,
                    }
                }
            }
            _ => false,
        }
    }

    fn word(&mut self, word: &[u8]) -> bool {
        let ok = self.b[self.i..].starts_with(word);
        self.i += word.len();
        ok
    }

    /// A string literal (at its quote) whose escapes are the ones [`write_string`] writes; its
    /// bytes between the quotes.
    fn string(&mut self) -> Option<&'t [u8]> {
        let b = self.b;
        if b.get(self.i) != Some(&b'"') {
            return None;
        }
        let start = self.i + 1;
        let mut i = start;
        loop {
            i = string_stop(b, i);
            match *b.get(i)? {
                b'"' => break,
                b'\\' => {}
                // A raw control character is not JSON; the parser refuses it.
                _ => return None,
            }
            match self.b.get(i + 1)? {
                b'"' | b'\\' | b'n' | b'r' | b't' | b'b' | b'f' => i += 2,
                b'u' => {
                    // Only control characters without a short form are written as `\u00xx`.
                    let hex = self.b.get(i + 2..i + 6)?;
                    let lower = hex.iter().all(|h| matches!(h, b'0'..=b'9' | b'a'..=b'f'));
                    let unit = u32::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?;
                    if !lower || unit >= 0x20 || matches!(unit, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d) {
                        return None;
                    }
                    i += 6;
                }
                _ => return None,
            }
        }
        self.i = i + 1;
        Some(&b[start..i])
    }

    /// A number as JavaScript prints it back (`1`, `-5`, `0.25`, `1e+21`; not `1.0`, `-0`, `1E2`).
    fn number(&mut self) -> bool {
        let start = self.i;
        while self.b.get(self.i).is_some_and(|c| matches!(c, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')) {
            self.i += 1;
        }
        let text = &self.b[start..self.i];
        let digits = text.strip_prefix(b"-").unwrap_or(text);
        // Integers of up to 15 digits are exact doubles and print as written (but `-0` is `0`).
        if digits.iter().all(u8::is_ascii_digit) && !digits.is_empty() && digits.len() <= 15 {
            return (digits[0] != b'0' || digits.len() == 1) && text != b"-0";
        }
        let Ok(text) = std::str::from_utf8(text) else { return false };
        text.parse::<f64>().is_ok_and(|n| n.is_finite() && n != 0.0 && js_number(n) == text)
    }
}

/// A key JavaScript treats as an array index (`"0"`, `"17"`, not `"07"`).
fn array_index(key: &[u8]) -> Option<u64> {
    if !key.first().is_some_and(u8::is_ascii_digit) {
        return None;
    }
    let key = std::str::from_utf8(key).ok()?;
    let n: u64 = key.parse().ok()?;
    (n < u32::MAX as u64 && n.to_string() == key).then_some(n)
}

/// Tells whether a raw JSON value holds a lone surrogate escape in any of its strings.
pub fn has_lone_surrogate(raw: &RawValue) -> bool {
    let text = raw.get();
    // Only a `\u` escape can make one; parsing the rest would be wasted.
    memchr::memmem::find(text.as_bytes(), b"\\u").is_some() && parse(text).is_ok_and(|v| holds_surrogate(&v))
}

fn holds_surrogate(v: &Js) -> bool {
    match v {
        Js::String(s) => std::str::from_utf8(s).is_err(),
        Js::Array(items) => items.iter().any(holds_surrogate),
        Js::Object(members) => members.iter().any(|(k, v)| std::str::from_utf8(k).is_err() || holds_surrogate(v)),
        _ => false,
    }
}

struct Parser<'t> {
    b: &'t [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.b.get(self.i).is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn peek(&self) -> Result<u8, Refused> {
        self.b.get(self.i).copied().ok_or(Refused::Invalid)
    }

    fn eat(&mut self, c: u8) -> Result<(), Refused> {
        self.ws();
        match self.peek()? == c {
            true => {
                self.i += 1;
                Ok(())
            }
            false => Err(Refused::Invalid),
        }
    }

    fn literal(&mut self, word: &[u8], value: Js) -> Result<Js, Refused> {
        match self.b[self.i..].starts_with(word) {
            true => {
                self.i += word.len();
                Ok(value)
            }
            false => Err(Refused::Invalid),
        }
    }

    fn value(&mut self, depth: usize) -> Result<Js, Refused> {
        self.ws();
        match self.peek()? {
            b'n' => self.literal(b"null", Js::Null),
            b't' => self.literal(b"true", Js::Bool(true)),
            b'f' => self.literal(b"false", Js::Bool(false)),
            b'"' => self.string().map(Js::String),
            b'-' | b'0'..=b'9' => self.number(),
            open @ (b'[' | b'{') => {
                if depth >= MAX_DEPTH {
                    return Err(Refused::TooDeep);
                }
                self.i += 1;
                let close = if open == b'[' { b']' } else { b'}' };
                let mut items = Vec::new();
                let mut members: Vec<(Vec<u8>, Js)> = Vec::new();
                self.ws();
                if self.peek()? == close {
                    self.i += 1;
                } else {
                    loop {
                        if open == b'[' {
                            items.push(self.value(depth + 1)?);
                        } else {
                            self.ws();
                            if self.peek()? != b'"' {
                                return Err(Refused::Invalid);
                            }
                            let key = self.string()?;
                            self.eat(b':')?;
                            let value = self.value(depth + 1)?;
                            match members.iter_mut().find(|(k, _)| *k == key) {
                                Some(m) => m.1 = value,
                                None => members.push((key, value)),
                            }
                        }
                        self.ws();
                        match self.peek()? {
                            b',' => self.i += 1,
                            c if c == close => {
                                self.i += 1;
                                break;
                            }
                            _ => return Err(Refused::Invalid),
                        }
                    }
                }
                Ok(if open == b'[' { Js::Array(items) } else { Js::Object(members) })
            }
            _ => Err(Refused::Invalid),
        }
    }

    /// A number by JSON's grammar, read as the nearest double (as JavaScript reads it).
    fn number(&mut self) -> Result<Js, Refused> {
        let start = self.i;
        let digits = |p: &mut Self| {
            let from = p.i;
            while p.b.get(p.i).is_some_and(u8::is_ascii_digit) {
                p.i += 1;
            }
            p.i > from
        };
        if self.b[self.i] == b'-' {
            self.i += 1;
        }
        match self.b.get(self.i) {
            Some(b'0') => self.i += 1,
            _ if digits(self) => {}
            _ => return Err(Refused::Invalid),
        }
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            if !digits(self) {
                return Err(Refused::Invalid);
            }
        }
        if matches!(self.b.get(self.i), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.b.get(self.i), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if !digits(self) {
                return Err(Refused::Invalid);
            }
        }
        let text = std::str::from_utf8(&self.b[start..self.i]).map_err(|_| Refused::Invalid)?;
        text.parse::<f64>().map(Js::Number).map_err(|_| Refused::Invalid)
    }

    /// A string (at its opening quote) as WTF-8: a surrogate pair escape is one character, an
    /// unpaired one stays a surrogate.
    fn string(&mut self) -> Result<Vec<u8>, Refused> {
        self.i += 1;
        let mut out = Vec::new();
        loop {
            let rest = &self.b[self.i..];
            let stop = rest.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20).ok_or(Refused::Invalid)?;
            out.extend_from_slice(&rest[..stop]);
            self.i += stop;
            match self.b[self.i] {
                b'"' => {
                    self.i += 1;
                    return Ok(out);
                }
                b'\\' => {
                    self.i += 1;
                    let c = self.peek()?;
                    self.i += 1;
                    match c {
                        b'"' | b'\\' | b'/' => out.push(c),
                        b'b' => out.push(0x08),
                        b'f' => out.push(0x0c),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'u' => {
                            let unit = self.hex4()?;
                            let pair = (0xD800..0xDC00).contains(&unit) && self.b[self.i..].starts_with(b"\\u");
                            let low = match pair {
                                true => self.peek_hex4_at(self.i + 2).filter(|l| (0xDC00..0xE000).contains(l)),
                                false => None,
                            };
                            let code = match low {
                                Some(low) => {
                                    self.i += 6;
                                    0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                                }
                                None => unit,
                            };
                            push_wtf8(&mut out, code);
                        }
                        _ => return Err(Refused::Invalid),
                    }
                }
                _ => return Err(Refused::Invalid),
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, Refused> {
        let v = self.peek_hex4_at(self.i).ok_or(Refused::Invalid)?;
        self.i += 4;
        Ok(v)
    }

    fn peek_hex4_at(&self, at: usize) -> Option<u32> {
        let hex = self.b.get(at..at + 4)?;
        u32::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok().filter(|_| hex.iter().all(u8::is_ascii_hexdigit))
    }
}

/// Appends a code point (a surrogate included) as WTF-8.
fn push_wtf8(out: &mut Vec<u8>, code: u32) {
    match code {
        0..0x80 => out.push(code as u8),
        0x80..0x800 => out.extend_from_slice(&[0xC0 | (code >> 6) as u8, 0x80 | (code & 0x3F) as u8]),
        0x800..0x10000 => out.extend_from_slice(&[
            0xE0 | (code >> 12) as u8,
            0x80 | ((code >> 6) & 0x3F) as u8,
            0x80 | (code & 0x3F) as u8,
        ]),
        _ => out.extend_from_slice(&[
            0xF0 | (code >> 18) as u8,
            0x80 | ((code >> 12) & 0x3F) as u8,
            0x80 | ((code >> 6) & 0x3F) as u8,
            0x80 | (code & 0x3F) as u8,
        ]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(text: &str) -> String {
        parse(text).unwrap().to_json()
    }

    #[test]
    fn lone_surrogates_round_trip_and_pairs_join() {
        assert_eq!(
            round(r#"["\ud800","a\uDC00b","\ud83d\ude00","\ud83d","\ude00"]"#),
            "[\"\\ud800\",\"a\\udc00b\",\"😀\",\"\\ud83d\",\"\\ude00\"]"
        );
        // A high surrogate ending a key and a low one starting its value stay apart.
        assert_eq!(round(r#"{"k\ud83d":"\ude00v"}"#), r#"{"k\ud83d":"\ude00v"}"#);
        // Two highs, then a pair: the first stays lone.
        assert_eq!(round(r#""\ud800\ud83d\ude00""#), "\"\\ud800😀\"");
        let v = parse(r#""x\ud800y""#).unwrap();
        assert_eq!(v.as_str().unwrap(), "x\u{FFFD}y");
        assert_eq!(lossy(b"x\xED\xA0\x80y").len(), 5);
    }

    #[test]
    fn numbers_read_as_doubles() {
        assert_eq!(
            round("[1e400,-1e400,1e-400,-0,1.0,12345678901234567890,1E2]"),
            "[null,null,0,0,1,12345678901234567000,100]"
        );
        assert_eq!(parse("1e400").unwrap(), Js::Number(f64::INFINITY));
        for bad in ["01", "1.", ".5", "-", "1e", "+1", "NaN", "[1,]", "{\"a\"}", "\"\\x\"", "\"\n\"", "[1] x"] {
            assert_eq!(parse(bad), Err(Refused::Invalid), "{bad}");
        }
    }

    #[test]
    fn depth_is_limited_by_our_guard_not_serdes() {
        let nest = |d: usize| format!("{}{}", "[".repeat(d), "]".repeat(d));
        // At the limit, every recursive step (parse, write, conversion, drop) fits a test thread.
        let deepest = parse(&nest(MAX_DEPTH)).unwrap();
        assert_eq!(deepest.to_json(), nest(MAX_DEPTH));
        assert_eq!(deepest.to_value().to_string(), nest(MAX_DEPTH));
        assert_eq!(parse(&nest(MAX_DEPTH + 1)), Err(Refused::TooDeep));
        assert_eq!(depth(&nest(300)), 300);
        assert_eq!(depth(r#"{"a":"[[[\"]]]","b":[{}]}"#), 3);
    }

    #[test]
    fn objects_as_javascript_keeps_them() {
        assert_eq!(round(r#"{"b":1,"10":2,"2":3,"01":4,"b":5}"#), r#"{"2":3,"10":2,"b":5,"01":4}"#);
        assert_eq!(round(r#" { "a" : [ 1 , "\u00e9\/\u0001" ] } "#), "{\"a\":[1,\"é/\\u0001\"]}");
        let mut v = parse(r#"{"role":"x","n":1}"#).unwrap();
        v.set("role", Js::String(b"custom".to_vec()));
        v.set("content", Js::Array(vec![]));
        v.remove("n");
        assert_eq!(v.to_json(), r#"{"role":"custom","content":[]}"#);
        assert_eq!(v.to_value(), serde_json::json!({"role": "custom", "content": []}));
    }

    #[test]
    fn stringified_text_is_told_apart() {
        let as_is = [
            r#"{"role":"user","content":"a\"b\\c\nd\u0001\u001f","n":[1,-5,0,0.25,1.5e-7,1e+21,true,false,null]}"#,
            r#"{"a":{},"b":[],"c":{"a":1},"":"é😀/"}"#,
            "123456789012345",
            "\"\u{7f}\"",
        ];
        let not = [
            r#"{"a":1, "b":2}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"1":1}"#,
            r#""\u0041""#,
            r#""\u000a""#,
            r#""\u001F""#,
            r#""\/""#,
            r#""\ud800""#,
            r#""\ud83d\ude00""#,
            "[1.0]",
            "[-0]",
            "[1E2]",
            "[1e21]",
            "[1e400]",
            "[0.0]",
            "1234567890123456789",
            "[1,]",
            "{\"a\"}",
            "\"a\nb\"",
            "[1] ",
            "nul",
        ];
        for text in as_is {
            assert!(is_stringified(text), "{text}");
            assert_eq!(round(text), text);
        }
        // The member noted on the way is the outermost object's own, as a parser reads it.
        for text in as_is.iter().chain(&not).chain(&[r#"{"a":{"content":1}}"#, r#"{"content":null,"x":[]}"#]) {
            let member = stringified_member(text, "content");
            assert_eq!(member.is_some(), is_stringified(text), "{text}");
            if let Some(member) = member {
                let parsed: Option<serde_json::Value> = serde_json::from_str::<serde_json::Value>(text).ok();
                let content = parsed.as_ref().and_then(|v| v.get("content")).map(|v| v.to_string());
                assert_eq!(member.map(str::to_string), content, "{text}");
            }
        }
        for text in not {
            assert!(!is_stringified(text), "{text}");
        }
        let nest = |d: usize| format!("{}{}", "[".repeat(d), "]".repeat(d));
        assert!(is_stringified(&nest(MAX_DEPTH)));
        assert!(!is_stringified(&nest(MAX_DEPTH + 1)));
    }

    #[test]
    fn a_lone_surrogate_escape_is_found_in_any_string() {
        let raw: &RawValue = serde_json::from_str(r#"{"a":["\ud800"]}"#).unwrap();
        assert!(has_lone_surrogate(raw));
        let raw: &RawValue = serde_json::from_str(r#"{"a":["\ud83d\ude00"]}"#).unwrap();
        assert!(!has_lone_surrogate(raw));
    }
}

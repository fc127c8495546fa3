//! JSON as shake reads and writes it (every host's format is JavaScript's JSON): the one-pass
//! check of a line, the trusted readers of values already checked ([`trusted`]), and exact
//! writing: objects rebuilt key by key from raw values, so every value shake does not change
//! keeps its bytes, and the result equals `JSON.stringify`'s.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::scan::{check_object, raw_control_in_string};
use super::string::{string_json, string_text, Wtf8Visitor};

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
            Some(v) => string_text(v.get()).map(Some).ok_or(WrongType),
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
            out.push_str(&string_json(key));
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
/// field scan without a `Value` tree, in one pass ([`check_object`]) unless the text is one that
/// pass leaves to serde_json (an escaped key, an error to name).
pub fn members<'a, const N: usize>(text: &'a str, keys: &[&str; N]) -> Option<[Option<&'a RawValue>; N]> {
    let mut out = [None; N];
    let checked = check_object(text, |key, value| {
        if let Some(i) = keys.iter().position(|k| *k == key) {
            out[i] = Some(raw_within(text, value));
        }
    });
    match checked {
        Some(()) => Some(out),
        None => members_by_serde(text, keys),
    }
}

/// [`members`] as serde_json reads them: keys decoded (as WTF-8), every value checked.
fn members_by_serde<'a, const N: usize>(text: &'a str, keys: &[&str; N]) -> Option<[Option<&'a RawValue>; N]> {
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
/// A member that is there but not of the type asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WrongType;

/// An object key as WTF-8: serde_json decodes keys into bytes without refusing lone surrogates.
pub struct WtfKey<'de>(pub Cow<'de, [u8]>);

impl<'de> Deserialize<'de> for WtfKey<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_bytes(Wtf8Visitor).map(WtfKey)
    }
}

/// A string as `JSON.stringify` writes it (the one writer, [`string_json`], which
/// also takes lone surrogates).
pub fn js_string(s: &str) -> String {
    string_json(s.as_bytes())
}

/// Reading the parts of a value already known to be JSON (a [`RawValue`] is: serde_json
/// checked it when it was read), without checking it again: each member or item is found by
/// skipping over strings (to their first unescaped quote) and counting brackets. Most of a command's reading of many
/// small entries was serde_json checking the same bytes again for each reader.
pub mod trusted {
    use super::super::scan::{self, skip_ws as ws};
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
        let stop = scan::string_stop(b, i + 1);
        let plain = b.get(stop) == Some(&b'"');
        let key_end = if plain { stop + 1 } else { scan::trusted_string_end(b, i) };
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
            Some(b'"') => scan::trusted_string_end(b, i),
            Some(b'{' | b'[') => {
                let (mut depth, mut j) = (0usize, i);
                loop {
                    j = scan::structural_stop(b, j);
                    let Some(&c) = b.get(j) else { break };
                    match c {
                        b'"' => {
                            j = scan::trusted_string_end(b, j);
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

    /// A checked object's members, found in one walk and then looked up by key as `JSON.parse`'s
    /// object answers: the last of duplicate keys wins, and an escaped key is decoded (the object
    /// is parsed for that, rarely). Nothing is built but the list of members: a reader that
    /// wants a few fields of a big entry decodes only those.
    #[derive(Debug, Default)]
    pub struct Object<'a> {
        members: Vec<(std::borrow::Cow<'a, [u8]>, &'a RawValue)>,
    }

    impl<'a> Object<'a> {
        /// The object `raw` is, or `None` when it is another kind of value.
        pub fn of(raw: &'a RawValue) -> Option<Object<'a>> {
            // Room for a message's or a block's members: no regrowth (reallocations were 2%
            // of a cold OMP meter).
            let mut members = Vec::with_capacity(16);
            for member in self::members(raw)? {
                let Some((key, value)) = member else { return Self::decoded(raw) };
                members.push((key.into(), value));
            }
            Some(Object { members })
        }

        /// An object with an escaped key, read by the checking parser (its values are borrowed).
        fn decoded(raw: &'a RawValue) -> Option<Object<'a>> {
            let parsed = super::RawObject::parse(raw.get())?;
            let members = parsed.members.into_iter().filter_map(|(key, value)| match value {
                std::borrow::Cow::Borrowed(value) => Some((key, value)),
                std::borrow::Cow::Owned(_) => None,
            });
            Some(Object { members: members.collect() })
        }

        /// A member's value (the last one of that key).
        pub fn get(&self, key: &str) -> Option<&'a RawValue> {
            self.members.iter().rev().find(|(k, _)| k.as_ref() == key.as_bytes()).map(|(_, v)| *v)
        }
    }

    /// The items of `raw` when it is an array; none for any other value.
    pub fn items(raw: &RawValue) -> impl Iterator<Item = &RawValue> {
        let b = raw.get().as_bytes();
        let open = ws(b, 0);
        let mut i = if b.get(open) == Some(&b'[') { ws(b, open + 1) } else { b.len() };
        std::iter::from_fn(move || {
            if matches!(b.get(i), None | Some(b']')) {
                return None;
            }
            let (start, end) = (i, value_end(b, i));
            i = after(b, end);
            Some(sub(raw, start, end))
        })
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

    /// The one-pass read of a line's members answers as serde_json's did, line for line: the
    /// same values, the same refusals (bad JSON, a raw control character in a key or a value,
    /// another value than an object, trailing bytes), and keys serde_json decodes.
    #[test]
    fn members_in_one_pass_answer_as_serde_json() {
        let texts = [
            r#"{"type":"message","id":"a1","parentId":null,"message":{"role":"user","content":"é \n"}}"#,
            " { \"type\" : \"x\" , \"id\" : [1, {\"id\": 2}] } \n",
            "{}",
            " {} ",
            r#"{"id":"a","id":"b","type":1}"#,
            r#"{"\u0069d":"escaped key","type":"t"}"#,
            r#"{"i\"d":"quote in key","id":"x"}"#,
            "{\"i\td\":1,\"id\":2}",
            "{\"id\":\"raw\ttab\"}",
            r#"{"id":"\ud800","type":"lone surrogate"}"#,
            r#"{"id":1,}"#,
            r#"{"id" 1}"#,
            r#"{"id":1} x"#,
            r#"{"id":01}"#,
            r#"[{"id":1}]"#,
            r#""id""#,
            "",
            "{",
            r#"{"id":"unterminated}"#,
            r#"{"type":"x","parentId":-1.5e+3,"n":true,"m":false,"o":null}"#,
        ];
        let deep = format!("{{\"id\":{}1{},\"type\":\"deep\"}}", "[".repeat(200), "]".repeat(200));
        for text in texts.iter().copied().chain([deep.as_str()]) {
            let keys = ["type", "id", "parentId"];
            let get = |found: Option<[Option<&RawValue>; 3]>| found.map(|f| f.map(|v| v.map(|v| v.get().to_string())));
            assert_eq!(get(members(text, &keys)), get(members_by_serde(text, &keys)), "{text:?}");
        }
    }

    /// A checked object read member by member answers as the parsed object does: the last of
    /// duplicate keys, escaped keys decoded, items of arrays only.
    #[test]
    fn trusted_objects_answer_as_parsed_ones() {
        let line = r#" {"a":1,"\u0074ype":"x","b":[1,{"c":"]"},"s"],"a":[2]} "#;
        let raw: &RawValue = serde_json::from_str(line).unwrap();
        let parsed: serde_json::Map<String, serde_json::Value> = serde_json::from_str(line).unwrap();
        let object = trusted::Object::of(raw).unwrap();
        for key in ["a", "type", "b", "c"] {
            let ours = object.get(key).map(|v| serde_json::from_str::<serde_json::Value>(v.get()).unwrap());
            assert_eq!(ours.as_ref(), parsed.get(key), "{key}");
        }
        let plain = trusted::Object::of(object.get("b").and_then(|b| trusted::items(b).nth(1)).unwrap()).unwrap();
        assert_eq!(plain.get("c").map(RawValue::get), Some(r#""]""#));
        let items: Vec<&str> = trusted::items(object.get("b").unwrap()).map(RawValue::get).collect();
        assert_eq!(items, ["1", r#"{"c":"]"}"#, r#""s""#]);
        assert_eq!(trusted::items(object.get("type").unwrap()).count(), 0);
        assert!(trusted::Object::of(object.get("b").unwrap()).is_none());
    }

    /// The check takes exactly what serde_json takes, on valid and broken texts alike.
    #[test]
    fn strings_escape_like_javascript() {
        assert_eq!(js_string("a\"\\\n\u{1}\u{7f}é/\u{2028}"), "\"a\\\"\\\\\\n\\u0001\u{7f}é/\u{2028}\"");
    }
}

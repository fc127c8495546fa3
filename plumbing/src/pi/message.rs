//! pi's message JSON: the parts of a `message` the engine reads, and its string-or-blocks
//! `content` parsed into the neutral model ([`crate::host::model`]).

use std::borrow::Cow;

use serde_json::value::RawValue;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, Visitor};

use crate::host::{Block, BlockKind, Call, Content};
use crate::js::json::{trusted, WrongType, WtfKey};

/// Parses a raw pi `content` value; anything unexpected becomes [`Content::Other`] or
/// [`BlockKind::Other`] rather than an error, as pi does not validate content either.
pub fn parse_content(raw: Option<&RawValue>) -> Content<'_> {
    let Some(raw) = raw else { return Content::Other };
    let text = raw.get();
    if text.starts_with('"') {
        return crate::js::string_text(text).map_or(Content::Other, Content::Text);
    }
    if !text.starts_with('[') {
        return Content::Other;
    }
    Content::Blocks(blocks_at(text, 0).0)
}

/// The blocks of the array whose `[` is at `open` in `text` (trusted JSON), and the index past
/// it: each block read as its end is found, in one walk.
fn blocks_at(text: &str, open: usize) -> (Vec<Block<'_>>, usize) {
    // Most content is one block: room for one, not the four a collect starts with.
    let mut blocks = Vec::with_capacity(1);
    let end = each_block(text, open, |raw, o| {
        blocks.push(Block { raw, kind: o.and_then(block_kind).unwrap_or(BlockKind::Other) });
    });
    (blocks, end)
}

/// The tool calls (with an id) of the array whose `[` is at `open` in `text` (trusted JSON),
/// and the index past it: the calls [`blocks_at`] gives, no other block's strings decoded and
/// no list of blocks made (a view reads every entry's calls, its text only as it is used).
fn calls_at(text: &str, open: usize) -> (Vec<Call<'_>>, usize) {
    let mut calls = Vec::new();
    let end = each_block(text, open, |_, o| calls.extend(o.and_then(tool_call)));
    (calls, end)
}

/// The tool calls (with an id) of a raw pi `content` value: those of [`parse_content`]'s blocks.
pub fn calls_of(raw: Option<&RawValue>) -> Vec<Call<'_>> {
    match raw.map(RawValue::get) {
        Some(text) if text.starts_with('[') => calls_at(text, 0).0,
        _ => Vec::new(),
    }
}

/// Walks the array whose `[` is at `open` in `text` (trusted JSON), giving `each` every
/// element's raw bytes and, for an object that decodes, its [`BLOCK_KEYS`] slots; returns the
/// index past the array.
fn each_block<'a>(text: &'a str, open: usize, mut each: impl FnMut(&'a RawValue, Option<&Slots<'a, '_>>)) -> usize {
    let b = text.as_bytes();
    let mut i = crate::js::scan::skip_ws(b, open + 1);
    while !matches!(b.get(i), None | Some(b']')) {
        let read = (b[i] == b'{').then(|| Slots::read_at(text, i, &BLOCK_KEYS, |_, _| None)).flatten();
        let end = match &read {
            Some((_, end)) => *end,
            None => trusted::value_end(b, i),
        };
        each(crate::js::json::raw_within(text, i..end), read.as_ref().map(|(o, _)| o));
        i = trusted::after(b, end);
    }
    (i + 1).min(b.len())
}

const BLOCK_KEYS: [&str; 7] = ["type", "text", "thinking", "mimeType", "id", "name", "arguments"];

/// The tool call a block is, when [`block_kind`] reads it as one with an id: only its type, id
/// and name are decoded; the other strings [`block_kind`] reads are checked for their type.
fn tool_call<'a>(o: &Slots<'a, '_>) -> Option<Call<'a>> {
    (o.opt_str(0).ok()?.as_deref() == Some("toolCall")).then_some(())?;
    // text, thinking, mimeType: in the order of BLOCK_KEYS.
    (1..=3).all(|i| o.is_str_or_null(i)).then_some(())?;
    match call_kind(o)? {
        BlockKind::ToolCall { id: Some(id), name, arguments } => Some(Call { id, name, arguments }),
        _ => None,
    }
}

/// A block's kind from its [`BLOCK_KEYS`]; `None` when a field pi reads has the wrong type.
fn block_kind<'a>(o: &Slots<'a, '_>) -> Option<BlockKind<'a>> {
    let s = |i| o.opt_str(i).ok();
    // In the order of BLOCK_KEYS.
    let (kind, text, thinking, mime) = (s(0)?, s(1)?, s(2)?, s(3)?);
    let call = call_kind(o)?;
    Some(match kind.as_deref() {
        Some("text") => BlockKind::Text(text.unwrap_or_default()),
        Some("thinking") => BlockKind::Thinking(thinking.unwrap_or_default()),
        Some("image") => BlockKind::Image { mime },
        Some("toolCall") => call,
        _ => BlockKind::Other,
    })
}

/// The tool call a block of type `toolCall` is: its id, its name (empty when absent) and its
/// arguments (`null` as none); `None` when the id or name is not a string.
fn call_kind<'a>(o: &Slots<'a, '_>) -> Option<BlockKind<'a>> {
    let (id, name) = (o.opt_str(4).ok()?, o.opt_str(5).ok()?);
    Some(BlockKind::ToolCall { id, name: name.unwrap_or_default(), arguments: o.raw(6).filter(|a| a.get() != "null") })
}

/// The parts of a message the engine reads, borrowed from the entry's `message` value.
// Every field pi checks is parsed (a wrong type refuses the line, as pi does), read or not.
#[allow(dead_code)]
#[derive(Default, Debug, Clone)]
pub struct Message<'a> {
    pub role: Option<Cow<'a, str>>,
    /// `content` when the key is there (`null` included).
    pub content: Option<&'a RawValue>,
    pub tool_name: Option<Cow<'a, str>>,
    pub tool_call_id: Option<Cow<'a, str>>,
    pub custom_type: Option<Cow<'a, str>>,
    pub command: Option<Cow<'a, str>>,
    pub output: Option<Cow<'a, str>>,
    pub summary: Option<Cow<'a, str>>,
    pub provider: Option<Cow<'a, str>>,
    pub model: Option<Cow<'a, str>>,
    pub stop_reason: Option<Cow<'a, str>>,
    pub usage: Option<Usage>,
    pub sections: Option<&'a RawValue>,
    pub tools_added: Option<&'a RawValue>,
    pub is_error: Option<bool>,
}

/// A provider's token usage on an assistant message.
#[derive(Default, Debug, Clone, Copy, PartialEq)]
pub struct Usage {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    pub total_tokens: f64,
    /// `usage.cost` in US dollars (input, cache read, cache write), when it is an object of
    /// numbers (pi records it; it decides nothing of pi's own, so a bad one is only absent).
    pub cost: Option<[f64; 3]>,
}

impl Usage {
    /// Reads `usage` as pi holds it: absent fields are 0, a number out of a double's range is
    /// `±Infinity` (which pi's rule for trusting usage then refuses); `None` when a field is not
    /// a number or `usage` not an object. `cost` is read only when asked: it never refuses a
    /// line, and a view's check of every message does not use it (its float parse and its
    /// object were a tenth of what a view reads of a tiny session's messages).
    fn parse(raw: &RawValue, with_cost: bool) -> Option<Usage> {
        let o = Slots::parse(raw, &["input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost"])?;
        let n = |i| o.raw(i).map_or(Some(0.0), |v| number(v.get()));
        let cost = o.raw(5).filter(|_| with_cost).and_then(|c| {
            let c = Slots::parse(c, &["input", "cacheRead", "cacheWrite"])?;
            let n = |i| c.raw(i).map_or(Some(0.0), |v| number(v.get()).filter(|x| x.is_finite()));
            Some([n(0)?, n(1)?, n(2)?])
        });
        Some(Usage { input: n(0)?, output: n(1)?, cache_read: n(2)?, cache_write: n(3)?, total_tokens: n(4)?, cost })
    }
}

/// A JSON number's text read as JavaScript reads it (the nearest double, `±Infinity` out of
/// range); `None` for any other JSON value, a number to neither.
fn number(v: &str) -> Option<f64> {
    match v {
        // Most counts are small integers: exact as doubles, no float parser needed.
        v if (1..=15).contains(&v.len()) && v.bytes().all(|c| c.is_ascii_digit()) => {
            Some(v.bytes().fold(0u64, |n, c| n * 10 + u64::from(c - b'0')) as f64)
        }
        v => v.trim().parse::<f64>().ok(),
    }
}

impl<'a> Message<'a> {
    /// Parses a raw `message` value; `None` when it is not an object or a field the engine
    /// reads has the wrong type. Keys and strings with lone surrogate escapes are read
    /// ([`crate::js`]), as pi's `JSON.parse` reads them.
    pub fn parse(raw: &'a RawValue) -> Option<Message<'a>> {
        let o = Slots::parse(raw, &MESSAGE_KEYS)?;
        let Head { role, content, tool_name, tool_call_id } = Head::of(&o)?;
        let s = |i| o.opt_str(i).ok();
        let some = |i| o.raw(i).filter(|v| v.get() != "null");
        let (usage, is_error) = o.checked(true)?;
        Some(Message {
            role,
            content,
            tool_name,
            tool_call_id,
            custom_type: s(m::CUSTOM_TYPE)?,
            command: s(m::COMMAND)?,
            output: s(m::OUTPUT)?,
            summary: s(m::SUMMARY)?,
            provider: s(m::PROVIDER)?,
            model: s(m::MODEL)?,
            stop_reason: s(m::STOP_REASON)?,
            usage,
            sections: some(m::SECTIONS),
            tools_added: some(m::TOOLS_ADDED),
            is_error,
        })
    }

    /// Returns the parsed content.
    pub fn content(&self) -> Content<'a> {
        parse_content(self.content)
    }

    /// What the provider said an assistant message's request cost ([`crate::host::Reply`]);
    /// `None` for any other role. pi's reader and oh-my-pi's own meter read replies by it.
    pub fn reply(self) -> Option<crate::host::Reply<'a>> {
        if self.role.as_deref() != Some("assistant") {
            return None;
        }
        let prompt_tokens = super::estimate::request_tokens(&self);
        let whole = |x: f64| if x.is_finite() && x > 0.0 { x as u64 } else { 0 };
        let cache = prompt_tokens.and(self.usage).map(|u| crate::host::CacheUse {
            input: whole(u.input),
            cache_read: whole(u.cache_read),
            cache_write: whole(u.cache_write),
            cache_write_1h: 0,
            cost: u.cost.map(|[input, cache_read, cache_write]| crate::host::CacheCost {
                input,
                cache_read,
                cache_write,
            }),
        });
        Some(crate::host::Reply { provider: self.provider, model: self.model, prompt_tokens, cache })
    }
}

/// The fields of a message every view reads (its role, its content, the tool it answers), for
/// the same messages [`Message::parse`] reads: the others are checked for their types, not
/// decoded.
#[derive(Debug, Clone)]
pub struct Head<'a> {
    pub role: Option<Cow<'a, str>>,
    /// `content` when the key is there (`null` included).
    pub content: Option<&'a RawValue>,
    pub tool_name: Option<Cow<'a, str>>,
    pub tool_call_id: Option<Cow<'a, str>>,
}

impl<'a> Head<'a> {
    /// Parses a raw `message` value; `None` exactly where [`Message::parse`] gives `None`.
    pub fn parse(raw: &'a RawValue) -> Option<Head<'a>> {
        Head::checked(&Slots::parse(raw, &MESSAGE_KEYS)?)
    }

    /// [`Head::parse`] with the tool calls of its content ([`calls_of`]) read on the way, as
    /// the walk over the message finds the content's end (reading the message, then its
    /// content, walked the content twice).
    pub fn parse_with_calls(raw: &'a RawValue) -> Option<(Head<'a>, Vec<Call<'a>>)> {
        let text = raw.get();
        let open = crate::js::scan::skip_ws(text.as_bytes(), 0);
        (text.as_bytes().get(open) == Some(&b'{')).then_some(())?;
        let mut read: Option<(usize, Vec<Call<'a>>)> = None;
        let (o, _) = Slots::read_at(text, open, &MESSAGE_KEYS, |slot, start| {
            (slot == m::CONTENT && text.as_bytes()[start] == b'[').then(|| {
                let (calls, end) = calls_at(text, start);
                read = Some((start, calls));
                end
            })
        })?;
        let head = Head::checked(&o)?;
        let calls = match (head.content, read) {
            // The calls read on the way, when they are those of the `content` kept (the last).
            (Some(c), Some((start, calls))) if std::ptr::eq(c.get().as_ptr(), text[start..].as_ptr()) => calls,
            (c, _) => calls_of(c),
        };
        Some((head, calls))
    }

    /// The head of a message's slots, when the members it does not decode have their types.
    fn checked(o: &Slots<'a, '_>) -> Option<Head<'a>> {
        o.checked(false)?;
        // customType to stopReason: the string members Head does not decode.
        (m::CUSTOM_TYPE..=m::STOP_REASON).all(|i| o.is_str_or_null(i)).then_some(())?;
        Head::of(o)
    }

    fn of(o: &Slots<'a, '_>) -> Option<Head<'a>> {
        let s = |i| o.opt_str(i).ok();
        Some(Head {
            role: s(m::ROLE)?,
            content: o.raw(m::CONTENT),
            tool_name: s(m::TOOL_NAME)?,
            tool_call_id: s(m::TOOL_CALL_ID)?,
        })
    }
}

/// The places of [`MESSAGE_KEYS`] in a message's [`Slots`].
mod m {
    pub const ROLE: usize = 0;
    pub const CONTENT: usize = 1;
    pub const TOOL_NAME: usize = 2;
    pub const TOOL_CALL_ID: usize = 3;
    pub const CUSTOM_TYPE: usize = 4;
    pub const COMMAND: usize = 5;
    pub const OUTPUT: usize = 6;
    pub const SUMMARY: usize = 7;
    pub const PROVIDER: usize = 8;
    pub const MODEL: usize = 9;
    pub const STOP_REASON: usize = 10;
    pub const USAGE: usize = 11;
    pub const SECTIONS: usize = 12;
    pub const TOOLS_ADDED: usize = 13;
    pub const IS_ERROR: usize = 14;
}

const MESSAGE_KEYS: [&str; 15] = [
    "role",
    "content",
    "toolName",
    "toolCallId",
    "customType",
    "command",
    "output",
    "summary",
    "provider",
    "model",
    "stopReason",
    "usage",
    "sections",
    "toolsAdded",
    "isError",
];

/// A message's `role`, read alone (pi's migrations and the context list need only that).
pub fn role_of(message: &RawValue) -> Option<Cow<'_, str>> {
    Slots::parse(message, &["role"])?.opt_str(0).ok()?
}

/// The members of a JSON object that one reader wants, each the raw value of the last time its
/// key appears (as `JSON.parse` keeps it), the others skipped: one pass, no list of members.
struct Slots<'a, 'k> {
    keys: &'k [&'k str],
    values: [Option<&'a RawValue>; 16],
}

impl<'a, 'k> Slots<'a, 'k> {
    /// Reads `raw` (`None` when it is not an object) for at most 16 `keys`.
    fn parse(raw: &'a RawValue, keys: &'k [&'k str]) -> Option<Slots<'a, 'k>> {
        let open = crate::js::scan::skip_ws(raw.get().as_bytes(), 0);
        (raw.get().as_bytes().get(open) == Some(&b'{')).then_some(())?;
        Some(Self::read_at(raw.get(), open, keys, |_, _| None)?.0)
    }

    /// Reads the object whose `{` is at `open` in `text` (trusted JSON) for `keys`: the slots and
    /// the index past the object. `read` may read the value of slot `i` starting at `start`
    /// itself, giving the index past it (`None`: skipped as any other). `None` when the object
    /// does not decode.
    fn read_at(
        text: &'a str,
        open: usize,
        keys: &'k [&'k str],
        mut read: impl FnMut(usize, usize) -> Option<usize>,
    ) -> Option<(Slots<'a, 'k>, usize)> {
        let b = text.as_bytes();
        let mut slots = Slots { keys, values: [None; 16] };
        let walked = trusted::walk(text, open, |key, start| {
            let slot = keys.iter().position(|k| k.as_bytes() == key);
            let end = slot.and_then(|i| read(i, start)).unwrap_or_else(|| trusted::value_end(b, start));
            if let Some(i) = slot {
                slots.values[i] = Some(crate::js::json::raw_within(text, start..end));
            }
            end
        });
        match walked {
            Some(end) => Some((slots, end)),
            // A key with an escape is decoded by serde (a lone surrogate included).
            None => {
                let end = trusted::value_end(b, open);
                Some((Self::parse_escaped(crate::js::json::raw_within(text, open..end), keys)?, end))
            }
        }
    }

    /// [`Slots::parse`] through serde_json, which decodes escaped keys.
    fn parse_escaped(raw: &'a RawValue, keys: &'k [&'k str]) -> Option<Slots<'a, 'k>> {
        let mut de = serde_json::Deserializer::from_str(raw.get());
        Slots { keys, values: [None; 16] }.deserialize(&mut de).ok()
    }

    /// A message's `usage` and `isError` as [`Message`] reads them; `None` when either has the
    /// wrong type (serde's reading of an `Option<&RawValue>`: `null` is absent); the usage's
    /// cost read `with_cost`.
    fn checked(&self, with_cost: bool) -> Option<(Option<Usage>, Option<bool>)> {
        let some = |i| self.raw(i).filter(|v| v.get() != "null");
        let usage = match some(m::USAGE) {
            Some(u) => Some(Usage::parse(u, with_cost)?),
            None => None,
        };
        let is_error = match some(m::IS_ERROR).map(|v| v.get()) {
            None => None,
            Some("true") => Some(true),
            Some("false") => Some(false),
            Some(_) => return None,
        };
        Some((usage, is_error))
    }

    /// The raw value of the member named by `keys[i]`.
    fn raw(&self, i: usize) -> Option<&'a RawValue> {
        self.values[i]
    }

    /// Tells whether the member named by `keys[i]` is absent, `null` or a string: what
    /// [`Slots::opt_str`] reads without an error, told without decoding it (a string member of
    /// a valid JSON value always decodes: its first byte tells its type).
    fn is_str_or_null(&self, i: usize) -> bool {
        self.raw(i).is_none_or(|v| v.get() == "null" || v.get().starts_with('"'))
    }

    /// A member as serde reads an `Option<Cow<str>>` field ([`crate::js::json::RawObject::opt_str`]).
    fn opt_str(&self, i: usize) -> Result<Option<Cow<'a, str>>, WrongType> {
        match self.raw(i) {
            None => Ok(None),
            Some(v) if v.get() == "null" => Ok(None),
            Some(v) => crate::js::string_text(v.get()).map(Some).ok_or(WrongType),
        }
    }
}

impl<'de, 'k> DeserializeSeed<'de> for Slots<'de, 'k> {
    type Value = Slots<'de, 'k>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, 'k> Visitor<'de> for Slots<'de, 'k> {
    type Value = Slots<'de, 'k>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<M: MapAccess<'de>>(mut self, mut map: M) -> Result<Self::Value, M::Error> {
        while let Some(WtfKey(key)) = map.next_key()? {
            let value: &'de RawValue = map.next_value()?;
            if let Some(i) = self.keys.iter().position(|k| k.as_bytes() == key.as_ref()) {
                self.values[i] = Some(value);
            }
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_blocks_and_keeps_raw() {
        let raw: &RawValue = serde_json::from_str(
            r#"[{"type":"text","text":"a\nb"},{"type":"image","data":"QUJD","mimeType":"image/png"},{"type":"toolCall","id":"t1","name":"read","arguments":{"path":"x"}},{"type":"weird"}]"#,
        )
        .unwrap();
        let Content::Blocks(blocks) = parse_content(Some(raw)) else { panic!("blocks") };
        assert!(matches!(&blocks[0].kind, BlockKind::Text(t) if t == "a\nb"));
        assert!(matches!(&blocks[1].kind, BlockKind::Image { .. }));
        assert!(matches!(&blocks[2].kind, BlockKind::ToolCall { name, .. } if name == "read"));
        assert!(matches!(&blocks[3].kind, BlockKind::Other));
        assert_eq!(blocks[0].raw.get(), r#"{"type":"text","text":"a\nb"}"#);
    }

    #[test]
    fn trusted_reading_finds_what_serde_finds() {
        let texts = [
            r#"{"a":"x\"}","b":[1,{"c":"]"}],"a":{"d":null},"e":-1.5e3,"f":true}"#,
            r#" { "a" : [ 1 , 2 ] , "b" : "\\" , "c" : { } } "#,
            r#"{"k\u0061":1,"b":2}"#,
            "{}",
            "[1,2]",
            r#""{\"a\":1}""#,
        ];
        for text in texts {
            let raw: &RawValue = serde_json::from_str(text).unwrap();
            let ours = trusted::members(raw).map(|m| m.collect::<Vec<_>>());
            // serde keeps the last value of a repeated key, as a reader taking each in turn does.
            let serde = serde_json::from_str::<std::collections::BTreeMap<String, &RawValue>>(text)
                .ok()
                .map(|m| m.into_iter().map(|(k, v)| (k, v.get())).collect::<Vec<_>>());
            match (ours, serde) {
                (None, None) => {}
                (Some(ours), Some(serde)) if ours.iter().all(Option::is_some) => {
                    let mut got: Vec<(String, &str)> = ours
                        .into_iter()
                        .flatten()
                        .map(|(k, v)| (String::from_utf8(k.to_vec()).unwrap(), v.get()))
                        .collect();
                    got.reverse();
                    got.sort_by(|a, b| a.0.cmp(&b.0));
                    got.dedup_by(|a, b| a.0 == b.0);
                    assert_eq!(got, serde, "{text}");
                }
                (Some(ours), Some(_)) => assert!(text.contains("\\u0061") && ours[0].is_none(), "{text}"),
                (ours, serde) => panic!("{text}: {ours:?} vs {serde:?}"),
            }
        }
        let blocks = |text| match parse_content(Some(serde_json::from_str(text).unwrap())) {
            Content::Blocks(blocks) => blocks.iter().map(|b| b.raw.get().to_string()).collect::<Vec<_>>(),
            _ => panic!("{text}: not blocks"),
        };
        assert_eq!(blocks(r#"[ "a,]" , [1,[2]] ,{"b":"}"}, 3 ]"#), [r#""a,]""#, "[1,[2]]", r#"{"b":"}"}"#, "3"]);
        assert_eq!(blocks(r#"[{"t\u0079pe":"text","text":"x"} ,{}]"#), [r#"{"t\u0079pe":"text","text":"x"}"#, "{}"]);
        assert!(blocks("[]").is_empty());
        let escaped: &RawValue = serde_json::from_str(r#"{"r\u006fle":"user"}"#).unwrap();
        assert_eq!(role_of(escaped).as_deref(), Some("user"));
    }

    #[test]
    fn the_places_name_the_keys() {
        let named = [
            (m::ROLE, "role"),
            (m::CONTENT, "content"),
            (m::TOOL_NAME, "toolName"),
            (m::TOOL_CALL_ID, "toolCallId"),
            (m::CUSTOM_TYPE, "customType"),
            (m::STOP_REASON, "stopReason"),
            (m::USAGE, "usage"),
            (m::SECTIONS, "sections"),
            (m::TOOLS_ADDED, "toolsAdded"),
            (m::IS_ERROR, "isError"),
        ];
        for (i, key) in named {
            assert_eq!(MESSAGE_KEYS[i], key);
        }
        assert_eq!(m::STOP_REASON - m::CUSTOM_TYPE, 6);
    }

    #[test]
    fn head_reads_what_the_whole_message_reads() {
        let texts = [
            r#"{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[],"isError":false,"usage":{"input":1}}"#,
            r#"{"role":"user","content":"x","model":7}"#,
            r#"{"role":"user","content":"x","stopReason":null,"usage":null,"isError":null}"#,
            r#"{"role":"assistant","usage":{"input":"1"}}"#,
            r#"{"role":"assistant","usage":[1]}"#,
            r#"{"role":"assistant","isError":0}"#,
            r#"{"role":1}"#,
            r#"{"role":"user","summary":{"a":1}}"#,
            r#"{"role":"user","provider":"p","usage":{"input":1e400}}"#,
            r#"[1]"#,
        ];
        for text in texts {
            let raw: &RawValue = serde_json::from_str(text).unwrap();
            let (m, h) = (Message::parse(raw), Head::parse(raw));
            assert_eq!(m.is_some(), h.is_some(), "{text}");
            if let (Some(m), Some(h)) = (m, h) {
                assert_eq!((m.role, m.tool_name, m.tool_call_id), (h.role, h.tool_name, h.tool_call_id), "{text}");
                assert_eq!(m.content.map(RawValue::get), h.content.map(RawValue::get), "{text}");
            }
        }
    }

    /// The tool calls read with a message are those of its content read apart ([`calls_of`]),
    /// which are those of its blocks parsed ([`parse_content`]): a call whose other strings
    /// have the wrong type is no call, an escaped id is decoded, a call without an id is left.
    #[test]
    fn the_calls_read_on_the_way_are_the_contents_calls() {
        let texts = [
            r#"{"role":"assistant","content":[{"type":"text","text":"a\"b"},{"type":"toolCall","id":"c","name":"x","arguments":{"p":1}}]}"#,
            r#"{"role":"user","content":"hi"}"#,
            r#"{"role":"user","content":[{"type":"toolCall","id":"old"}],"content":[{"type":"toolCall","id":"new","name":"n"}]}"#,
            r#"{"content":[{"type":"toolCall","id":"e"}],"r\u006fle":"assistant"}"#,
            r#"{"content":[{"t\u0079pe":"toolCall","id":"k"}],"role":"assistant"}"#,
            r#"{"role":"assistant","content":[{"type":"toolCall","id":"c\u0031","name":"x","arguments":null}]}"#,
            r#"{"role":"assistant","content":[{"type":"toolCall","id":"t","text":5},{"type":"toolCall","id":"m","mimeType":[]}]}"#,
            r#"{"role":"assistant","content":[{"type":"toolCall","name":"no id"},{"type":"toolCall","id":7}]}"#,
            r#"{"role":"toolResult","content":null}"#,
            r#"{"role":"user","content":[1,"x",[{}]],"isError":1}"#,
            r#"{ "role" : "assistant" , "content" : [ { "type" : "toolCall" , "id" : "s" } ] }"#,
        ];
        let calls = |c: &Content<'_>| -> Vec<String> {
            c.blocks()
                .iter()
                .filter_map(|b| match &b.kind {
                    BlockKind::ToolCall { id: Some(id), name, arguments } => {
                        Some(format!("{id}/{name}/{:?}", arguments.map(RawValue::get)))
                    }
                    _ => None,
                })
                .collect()
        };
        let listed = |c: Vec<Call<'_>>| -> Vec<String> {
            c.iter().map(|c| format!("{}/{}/{:?}", c.id, c.name, c.arguments.map(RawValue::get))).collect()
        };
        let mut seen = 0;
        for text in texts {
            let raw: &RawValue = serde_json::from_str(text).unwrap();
            let fused = Head::parse_with_calls(raw).map(|(h, c)| (format!("{h:?}"), listed(c)));
            let apart = Head::parse(raw).map(|h| (format!("{h:?}"), calls(&parse_content(h.content))));
            assert_eq!(fused, apart, "{text}");
            let content = Head::parse(raw).and_then(|h| h.content);
            assert_eq!(listed(calls_of(content)), calls(&parse_content(content)), "{text}");
            seen += fused.map_or(0, |(_, c)| c.len());
        }
        assert_eq!(seen, 6, "the calls c, new, e, k, c1 and s");
    }

    #[test]
    fn string_and_odd_content() {
        let s: &RawValue = serde_json::from_str(r#""hi""#).unwrap();
        assert!(matches!(parse_content(Some(s)), Content::Text(t) if t == "hi"));
        let n: &RawValue = serde_json::from_str("null").unwrap();
        assert!(matches!(parse_content(Some(n)), Content::Other));
        assert!(matches!(parse_content(None), Content::Other));
    }
}

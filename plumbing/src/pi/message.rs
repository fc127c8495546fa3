//! pi's message JSON: the parts of a `message` the engine reads, and its string-or-blocks
//! `content` parsed into the neutral model ([`crate::host::model`]).

use std::borrow::Cow;

use serde_json::value::RawValue;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, Visitor};

use crate::host::{Block, BlockKind, Content};
use crate::json::{WrongType, WtfKey};

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
    let Ok(items) = serde_json::from_str::<Vec<&RawValue>>(text) else { return Content::Other };
    Content::Blocks(items.into_iter().map(parse_block).collect())
}

fn parse_block(raw: &RawValue) -> Block<'_> {
    let kind = block_kind(raw).unwrap_or(BlockKind::Other);
    Block { raw, kind }
}

const BLOCK_KEYS: [&str; 7] = ["type", "text", "thinking", "mimeType", "id", "name", "arguments"];

/// A block's kind; `None` when it is not an object or a field pi reads has the wrong type.
fn block_kind(raw: &RawValue) -> Option<BlockKind<'_>> {
    let o = Slots::parse(raw, &BLOCK_KEYS)?;
    let s = |key| o.opt_str(key).ok();
    let kind = s("type")?;
    let (text, thinking, mime, id, name) = (s("text")?, s("thinking")?, s("mimeType")?, s("id")?, s("name")?);
    Some(match kind.as_deref() {
        Some("text") => BlockKind::Text(text.unwrap_or_default()),
        Some("thinking") => BlockKind::Thinking(thinking.unwrap_or_default()),
        Some("image") => BlockKind::Image { mime },
        Some("toolCall") => BlockKind::ToolCall {
            id,
            name: name.unwrap_or_default(),
            arguments: o.raw("arguments").filter(|a| a.get() != "null"),
        },
        _ => BlockKind::Other,
    })
}

/// The parts of a message the engine reads, borrowed from the entry's `message` value.
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
}

impl Usage {
    /// Reads `usage` as pi holds it: absent fields are 0, a number out of a double's range is
    /// `±Infinity` (which pi's rule for trusting usage then refuses); `None` when a field is not
    /// a number or `usage` not an object.
    fn parse(raw: &RawValue) -> Option<Usage> {
        let o = Slots::parse(raw, &["input", "output", "cacheRead", "cacheWrite", "totalTokens"])?;
        let n = |key| match o.raw(key) {
            None => Some(0.0),
            Some(v) => match crate::js::parse(v.get()) {
                Ok(crate::js::Js::Number(n)) => Some(n),
                _ => None,
            },
        };
        Some(Usage {
            input: n("input")?,
            output: n("output")?,
            cache_read: n("cacheRead")?,
            cache_write: n("cacheWrite")?,
            total_tokens: n("totalTokens")?,
        })
    }
}

impl<'a> Message<'a> {
    /// Parses a raw `message` value; `None` when it is not an object or a field the engine
    /// reads has the wrong type. Keys and strings with lone surrogate escapes are read
    /// ([`crate::js`]), as pi's `JSON.parse` reads them.
    pub fn parse(raw: &'a RawValue) -> Option<Message<'a>> {
        let o = Slots::parse(raw, &MESSAGE_KEYS)?;
        let s = |key| o.opt_str(key).ok();
        // serde's reading of an `Option<&RawValue>`: `null` is absent.
        let some = |key| o.raw(key).filter(|v| v.get() != "null");
        let usage = match some("usage") {
            Some(u) => Some(Usage::parse(u)?),
            None => None,
        };
        let is_error = match some("isError").map(|v| v.get()) {
            None => None,
            Some("true") => Some(true),
            Some("false") => Some(false),
            Some(_) => return None,
        };
        Some(Message {
            role: s("role")?,
            content: o.raw("content"),
            tool_name: s("toolName")?,
            tool_call_id: s("toolCallId")?,
            custom_type: s("customType")?,
            command: s("command")?,
            output: s("output")?,
            summary: s("summary")?,
            provider: s("provider")?,
            model: s("model")?,
            stop_reason: s("stopReason")?,
            usage,
            sections: some("sections"),
            tools_added: some("toolsAdded"),
            is_error,
        })
    }

    /// Returns the parsed content.
    pub fn content(&self) -> Content<'a> {
        parse_content(self.content)
    }
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
    Slots::parse(message, &["role"])?.opt_str("role").ok()?
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
        let mut de = serde_json::Deserializer::from_str(raw.get());
        Slots { keys, values: [None; 16] }.deserialize(&mut de).ok()
    }

    /// A member's raw value.
    fn raw(&self, key: &str) -> Option<&'a RawValue> {
        self.keys.iter().position(|k| *k == key).and_then(|i| self.values[i])
    }

    /// A member as serde reads an `Option<Cow<str>>` field ([`crate::json::RawObject::opt_str`]).
    fn opt_str(&self, key: &str) -> Result<Option<Cow<'a, str>>, WrongType> {
        match self.raw(key) {
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
    fn string_and_odd_content() {
        let s: &RawValue = serde_json::from_str(r#""hi""#).unwrap();
        assert!(matches!(parse_content(Some(s)), Content::Text(t) if t == "hi"));
        let n: &RawValue = serde_json::from_str("null").unwrap();
        assert!(matches!(parse_content(Some(n)), Content::Other));
        assert!(matches!(parse_content(None), Content::Other));
    }
}

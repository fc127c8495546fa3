//! pi's message JSON: the parts of a `message` the engine reads, and its string-or-blocks
//! `content` parsed into the neutral model ([`crate::host::model`]).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::host::{Block, BlockKind, Content};

#[derive(Deserialize)]
struct BlockHead<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    thinking: Option<Cow<'a, str>>,
    #[serde(borrow, default, rename = "mimeType")]
    mime_type: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
}

/// Parses a raw pi `content` value; anything unexpected becomes [`Content::Other`] or
/// [`BlockKind::Other`] rather than an error, as pi does not validate content either.
pub fn parse_content(raw: Option<&RawValue>) -> Content<'_> {
    let Some(raw) = raw else { return Content::Other };
    let text = raw.get();
    if text.starts_with('"') {
        return serde_json::from_str::<Cow<'_, str>>(text).map_or(Content::Other, Content::Text);
    }
    if !text.starts_with('[') {
        return Content::Other;
    }
    let Ok(items) = serde_json::from_str::<Vec<&RawValue>>(text) else { return Content::Other };
    Content::Blocks(items.into_iter().map(parse_block).collect())
}

fn parse_block(raw: &RawValue) -> Block<'_> {
    let kind = match serde_json::from_str::<BlockHead<'_>>(raw.get()) {
        Ok(h) => match h.kind.as_deref() {
            Some("text") => BlockKind::Text(h.text.unwrap_or_default()),
            Some("thinking") => BlockKind::Thinking(h.thinking.unwrap_or_default()),
            Some("image") => BlockKind::Image { mime: h.mime_type },
            Some("toolCall") => {
                BlockKind::ToolCall { id: h.id, name: h.name.unwrap_or_default(), arguments: h.arguments }
            }
            _ => BlockKind::Other,
        },
        Err(_) => BlockKind::Other,
    };
    Block { raw, kind }
}

/// The parts of a message the engine reads, borrowed from the entry's `message` value.
#[derive(Deserialize, Default, Debug)]
#[serde(rename_all = "camelCase")]
pub struct Message<'a> {
    #[serde(borrow, default)]
    pub role: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub tool_name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub tool_call_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub custom_type: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub command: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub output: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub summary: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub provider: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub stop_reason: Option<Cow<'a, str>>,
    #[serde(default)]
    pub usage: Option<Usage>,
    #[serde(borrow, default)]
    pub sections: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub tools_added: Option<&'a RawValue>,
    #[serde(default)]
    pub is_error: Option<bool>,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&'de RawValue>::deserialize(d).map(Some)
}

/// A provider's token usage on an assistant message.
#[derive(Deserialize, Default, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct Usage {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    pub total_tokens: f64,
}

impl<'a> Message<'a> {
    /// Parses a raw `message` value; `None` when it is not an object.
    pub fn parse(raw: &'a RawValue) -> Option<Message<'a>> {
        serde_json::from_str(raw.get()).ok()
    }

    /// Returns the parsed content.
    pub fn content(&self) -> Content<'a> {
        parse_content(self.content)
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

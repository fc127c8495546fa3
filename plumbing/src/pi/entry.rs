//! Borrowed, typed views of one session entry: the fields the engine reads, the rest left raw.
//!
//! Fields are `&RawValue` slices of the line (so `null` and "absent" stay distinct, as they are
//! for pi) and are decoded only where used. Nothing here re-serialises a line.

use std::borrow::Cow;

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::message::Message;
use crate::json::WtfKey;
use serde_json::value::RawValue;

/// The fields of an entry line that pi's session code reads, borrowed from the line.
///
/// Each is the raw JSON of the key when present (so `null` and "absent" stay distinct, as they are
/// for pi). A key given twice takes its last value, as `JSON.parse` does.
#[derive(Default, Debug)]
pub struct Fields<'a> {
    pub kind: Option<&'a RawValue>,
    pub id: Option<&'a RawValue>,
    pub parent_id: Option<&'a RawValue>,
    pub timestamp: Option<&'a RawValue>,
    pub version: Option<&'a RawValue>,
    pub message: Option<&'a RawValue>,
    pub target_id: Option<&'a RawValue>,
    pub replacement: Option<&'a RawValue>,
    pub first_kept_entry_id: Option<&'a RawValue>,
    pub first_kept_entry_index: Option<&'a RawValue>,
    pub summary: Option<&'a RawValue>,
    pub tokens_before: Option<&'a RawValue>,
    pub system_message: Option<&'a RawValue>,
    pub from_id: Option<&'a RawValue>,
    pub custom_type: Option<&'a RawValue>,
    pub content: Option<&'a RawValue>,
    pub display: Option<&'a RawValue>,
    pub details: Option<&'a RawValue>,
    pub data: Option<&'a RawValue>,
    pub thinking_level: Option<&'a RawValue>,
    pub provider: Option<&'a RawValue>,
    pub model_id: Option<&'a RawValue>,
    pub label: Option<&'a RawValue>,
    pub cwd: Option<&'a RawValue>,
    pub parent_session: Option<&'a RawValue>,
}

impl<'a> Fields<'a> {
    /// Returns the slot for a top-level key pi reads, or `None` for any other key.
    fn slot(&mut self, key: &str) -> Option<&mut Option<&'a RawValue>> {
        Some(match key {
            "type" => &mut self.kind,
            "id" => &mut self.id,
            "parentId" => &mut self.parent_id,
            "timestamp" => &mut self.timestamp,
            "version" => &mut self.version,
            "message" => &mut self.message,
            "targetId" => &mut self.target_id,
            "replacement" => &mut self.replacement,
            "firstKeptEntryId" => &mut self.first_kept_entry_id,
            "firstKeptEntryIndex" => &mut self.first_kept_entry_index,
            "summary" => &mut self.summary,
            "tokensBefore" => &mut self.tokens_before,
            "systemMessage" => &mut self.system_message,
            "fromId" => &mut self.from_id,
            "customType" => &mut self.custom_type,
            "content" => &mut self.content,
            "display" => &mut self.display,
            "details" => &mut self.details,
            "data" => &mut self.data,
            "thinkingLevel" => &mut self.thinking_level,
            "provider" => &mut self.provider,
            "modelId" => &mut self.model_id,
            "label" => &mut self.label,
            "cwd" => &mut self.cwd,
            "parentSession" => &mut self.parent_session,
            _ => return None,
        })
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Fields<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct FieldsVisitor;
        impl<'de> Visitor<'de> for FieldsVisitor {
            type Value = Fields<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields<'de>, A::Error> {
                let mut fields = Fields::default();
                while let Some(WtfKey(key)) = map.next_key()? {
                    let value: &'de RawValue = map.next_value()?;
                    // A key that is not UTF-8 (a lone surrogate escape) is none pi reads.
                    if let Some(slot) = std::str::from_utf8(&key).ok().and_then(|k| fields.slot(k)) {
                        *slot = Some(value);
                    }
                }
                Ok(fields)
            }
        }
        d.deserialize_map(FieldsVisitor)
    }
}

/// Decodes a raw JSON value as a string; `None` when absent or not a string. A lone surrogate
/// escape reads as U+FFFD ([`crate::js`]).
pub fn as_str<'a>(raw: Option<&'a RawValue>) -> Option<Cow<'a, str>> {
    crate::js::string_text(raw?.get())
}

/// Tells whether a raw value is JSON `null`.
pub fn is_null(raw: &RawValue) -> bool {
    raw.get() == "null"
}

/// Tells whether a present value is truthy the way JavaScript sees it.
pub fn is_truthy(raw: Option<&RawValue>) -> bool {
    match raw.map(|r| r.get()) {
        None | Some("null" | "false" | "0" | "\"\"" | "-0") => false,
        Some(s) => !(s.starts_with('0') && s.parse::<f64>() == Ok(0.0)),
    }
}

/// One non-header entry of a session, in file order.
#[derive(Debug)]
pub struct Entry<'a> {
    /// 1-based physical line in the file.
    pub line: usize,
    /// The line's exact bytes (what the store hashes).
    pub raw: &'a [u8],
    /// The entry type (`message`, `context_edit`, …); empty when the line has none.
    pub kind: Cow<'a, str>,
    /// pi's entry id (after an in-memory v1 migration, a synthetic one).
    pub id: Cow<'a, str>,
    /// The parent's entry id; `None` at a root (`null`, absent or empty, all falsy for pi).
    pub parent_id: Option<Cow<'a, str>>,
    /// For a v1 compaction, the entry id its `firstKeptEntryIndex` resolved to.
    pub migrated_first_kept: Option<Cow<'a, str>>,
    /// True for a v1/v2 message whose role `hookMessage` pi renames to `custom`.
    pub hook_message_role: bool,
    /// Everything else pi reads, borrowed from the line.
    pub fields: Fields<'a>,
}

impl<'a> Entry<'a> {
    /// An entry of a parsed line (no migration applied yet).
    pub fn new(line: usize, raw: &'a [u8], kind: Cow<'a, str>, id: Cow<'a, str>, fields: Fields<'a>) -> Entry<'a> {
        let parent_id = as_str(fields.parent_id).filter(|p| !p.is_empty());
        Entry { line, raw, kind, id, parent_id, migrated_first_kept: None, hook_message_role: false, fields }
    }

    /// Parses the line's `message` as the engine reads it ([`Message::parse`]); `None` when
    /// absent, not an object, or a field it reads has the wrong type. A [`Projection`] parses
    /// each of its entries' once ([`Projection::message`]); prefer that where there is one.
    ///
    /// [`Projection`]: super::project::Projection
    /// [`Projection::message`]: super::project::Projection::message
    pub fn message(&self) -> Option<Message<'a>> {
        self.fields.message.and_then(Message::parse)
    }

    /// Returns the target id of a `context_edit` or `label`.
    pub fn target_id(&self) -> Option<Cow<'a, str>> {
        as_str(self.fields.target_id)
    }

    /// Returns a compaction's `firstKeptEntryId` (after migration, where there was one).
    pub fn first_kept_entry_id(&self) -> Option<Cow<'a, str>> {
        self.migrated_first_kept.clone().or_else(|| as_str(self.fields.first_kept_entry_id))
    }

    /// Returns the message's role for a `message` entry.
    pub fn role(&self) -> Option<Cow<'a, str>> {
        if self.kind != "message" {
            return None;
        }
        if self.hook_message_role {
            return Some(Cow::Borrowed("custom"));
        }
        super::message::role_of(self.fields.message?)
    }

    /// Returns the `customType` of a `custom` or `custom_message` entry.
    pub fn custom_type(&self) -> Option<Cow<'a, str>> {
        as_str(self.fields.custom_type)
    }

    /// Tells whether pi's projection can give this entry model content that a context edit
    /// may replace, and pi's `appendContextEdit` would accept it as a target.
    pub fn is_editable(&self) -> bool {
        match self.kind.as_ref() {
            "custom_message" => true,
            "message" => {
                !self.hook_message_role && matches!(self.role().as_deref(), Some("user" | "assistant" | "toolResult"))
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_and_absent_stay_distinct() {
        let f: Fields = serde_json::from_str(r#"{"type":"context_edit","replacement":null}"#).unwrap();
        assert_eq!(f.replacement.map(|r| r.get()), Some("null"));
        assert!(f.target_id.is_none());
        assert_eq!(as_str(f.kind).as_deref(), Some("context_edit"));
    }

    #[test]
    fn repeated_keys_take_the_last_value() {
        let f: Fields = serde_json::from_str(r#"{"id":"a","\u0069d":"b","other":{"id":"c"},"parentId":null}"#).unwrap();
        assert_eq!(as_str(f.id).as_deref(), Some("b"));
        assert_eq!(f.parent_id.map(|r| r.get()), Some("null"));
        assert!(serde_json::from_str::<Fields>("[1]").is_err());
    }

    #[test]
    fn strings_with_escapes_decode() {
        let f: Fields = serde_json::from_str(r#"{"id":"a\"b","parentId":7}"#).unwrap();
        assert_eq!(as_str(f.id).as_deref(), Some("a\"b"));
        assert_eq!(as_str(f.parent_id), None);
    }

    #[test]
    fn truthiness_matches_javascript() {
        fn v(s: &str) -> &RawValue {
            serde_json::from_str(s).unwrap()
        }
        for falsy in ["null", "false", "0", "\"\"", "0.0"] {
            assert!(!is_truthy(Some(v(falsy))), "{falsy}");
        }
        for truthy in ["\"x\"", "1", "[]", "{}", "true"] {
            assert!(is_truthy(Some(v(truthy))), "{truthy}");
        }
        assert!(!is_truthy(None));
    }
}

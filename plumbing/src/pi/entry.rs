//! Borrowed, typed views of one session entry: the fields the engine reads, the rest left raw.
//!
//! Fields are `&RawValue` slices of the line (so `null` and "absent" stay distinct, as they are
//! for pi) and are decoded only where used. Nothing here re-serialises a line.

use std::borrow::Cow;

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

/// The fields of an entry line that pi's session code reads, borrowed from the line.
#[derive(Deserialize, Default, Debug)]
#[serde(rename_all = "camelCase")]
pub struct Fields<'a> {
    #[serde(rename = "type", borrow, default, deserialize_with = "present")]
    pub kind: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub parent_id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub timestamp: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub version: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub message: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub target_id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub replacement: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub first_kept_entry_id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub first_kept_entry_index: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub summary: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub tokens_before: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub system_message: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub from_id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub custom_type: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub content: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub display: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub details: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub data: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub thinking_level: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub provider: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub model_id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub label: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub cwd: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub parent_session: Option<&'a RawValue>,
}

/// Keeps a present field as its raw JSON, `null` included (serde would turn `null` into `None`).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&'de RawValue>::deserialize(d).map(Some)
}

/// Decodes a raw JSON value as a string; `None` when absent or not a string.
pub fn as_str<'a>(raw: Option<&'a RawValue>) -> Option<Cow<'a, str>> {
    let raw = raw?;
    if !raw.get().starts_with('"') {
        return None;
    }
    serde_json::from_str::<Cow<'a, str>>(raw.get()).ok()
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
        let message = self.fields.message?;
        #[derive(Deserialize)]
        struct Role<'b> {
            #[serde(borrow)]
            role: Option<Cow<'b, str>>,
        }
        serde_json::from_str::<Role<'a>>(message.get()).ok()?.role
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
            "message" => !self.hook_message_role
                && matches!(self.role().as_deref(), Some("user" | "assistant" | "toolResult")),
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

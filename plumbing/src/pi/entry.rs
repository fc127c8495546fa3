//! Borrowed, typed views of one session entry: the fields the engine reads, the rest left raw.
//!
//! Fields are `&RawValue` slices of the line (so `null` and "absent" stay distinct, as they are
//! for pi) and are decoded only where used. Nothing here re-serialises a line.

use std::borrow::Cow;

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::message::{Head, Message};
use crate::js::json::WtfKey;
use crate::js::scan;
use serde_json::value::RawValue;

/// The top-level keys pi's session code reads, with the name of each one's accessor on
/// [`Fields`]: one list, so the slots, the key match and the accessors cannot drift apart.
macro_rules! pi_fields {
    ($($name:ident $key:literal),* $(,)?) => {
        /// Slot numbers, in the list's order.
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy)]
        enum Slot { $($name),* }

        /// How many keys there are.
        const SLOTS: usize = [$($key),*].len();
        // One bit a key in [`Fields::present`].
        const _: () = assert!(SLOTS <= 32);

        /// Every slot, in order.
        #[cfg(test)]
        const ALL: [Slot; SLOTS] = [$(Slot::$name),*];

        /// The slot of a top-level key pi reads, or `None` for any other key.
        fn slot(key: &str) -> Option<Slot> {
            Some(match key {
                $($key => Slot::$name,)*
                _ => return None,
            })
        }

        // Every key pi reads has its accessor, whether the engine reads it yet or not, named
        // after the key (`fromId` is `from_id`, no conversion).
        #[allow(dead_code, clippy::wrong_self_convention)]
        impl<'a> Fields<'a> {
            $(
                #[doc = concat!("The raw value of `", $key, "`, when the line has it.")]
                pub fn $name(&self) -> Option<&'a RawValue> {
                    self.get(Slot::$name)
                }
            )*
        }
    };
}

// The first [`HOT`] are the keys of a message or an edit line, which most lines are.
pi_fields! {
    kind "type",
    id "id",
    parent_id "parentId",
    timestamp "timestamp",
    message "message",
    target_id "targetId",
    replacement "replacement",
    version "version",
    first_kept_entry_id "firstKeptEntryId",
    first_kept_entry_index "firstKeptEntryIndex",
    summary "summary",
    tokens_before "tokensBefore",
    system_message "systemMessage",
    from_id "fromId",
    custom_type "customType",
    content "content",
    display "display",
    details "details",
    data "data",
    thinking_level "thinkingLevel",
    provider "provider",
    model_id "modelId",
    label "label",
    cwd "cwd",
    parent_session "parentSession",
}

/// The hot keys: the first slots, those of a message or an edit line, which most lines are.
const HOT: usize = 7;

/// How many of the hot keys a line has [`Fields`] keeps a place for: a message line has five,
/// an edit line six.
const PLACES: usize = 6;

/// The bits of the hot keys in [`Fields::present`].
const HOT_BITS: u32 = (1 << HOT) - 1;

/// The longest line whose hot spans [`Fields`] keeps in 16 bits.
const SHORT: usize = u16::MAX as usize;

/// Spans of a line as (start, length), 32 bits each.
type Spans = Box<[(u32, u32)]>;

/// The fields of an entry line that pi's session code reads, borrowed from the line.
///
/// Each is the raw JSON of the key when present (so `null` and "absent" stay distinct, as they are
/// for pi). A key given twice takes its last value, as `JSON.parse` does. Kept as spans of the
/// line: in a line shorter than 64 KiB (nearly all) a 16-bit place for each of the first
/// [`PLACES`] [`HOT`] keys it has, and on the heap the others, only those the line has; the
/// line as a slice. A session keeps one of these per entry: a 32-bit span
/// for each of the 25 keys was 200 of the 344 bytes an entry held, for the 7 hot keys 56 of 104.
#[derive(Clone)]
pub struct Fields<'a> {
    /// The line the spans are in (`parse` refuses a line past 4 GiB).
    text: &'a str,
    /// Bit `slot` is set when the line has that key.
    present: u32,
    /// The values of the first [`PLACES`] hot keys the line has, in slot order, as (start,
    /// length) in the line, when it is [`SHORT`] at most.
    hot: [(u16, u16); PLACES],
    /// The other present keys' values, in slot order: the cold keys' (and a seventh hot one's),
    /// and in a longer line every key's (`None`: there are none). Boxed twice, so the rare line
    /// with one costs a thin pointer in each entry and not a slice's two words.
    rest: Option<Box<Spans>>,
}

impl std::fmt::Debug for Fields<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fields").field("text", &self.text()).field("present", &self.present).finish()
    }
}

/// The set bits of `mask`, lowest first.
fn bits(mut mask: u32) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        let bit = (mask != 0).then(|| mask.trailing_zeros() as usize)?;
        mask &= mask - 1;
        Some(bit)
    })
}

/// Of the hot keys in `present`, those with a place in [`Fields::hot`]: the first [`PLACES`].
fn placed(present: u32) -> u32 {
    let hot = present & HOT_BITS;
    let mut past = hot;
    for _ in 0..PLACES {
        past &= past.wrapping_sub(1);
    }
    hot & !past
}

impl<'a> Fields<'a> {
    /// Reads a line: its fields, or why it is not a JSON object (a line past 4 GiB is refused
    /// too: no JavaScript string holds one, so pi cannot read it either).
    pub fn parse(text: &'a str) -> Result<Fields<'a>, serde_json::Error> {
        use serde::de::Error;
        // Every span then fits 32 bits, and so does the line's node (`host::Node::new`).
        if u32::try_from(text.len()).is_err() {
            return Err(serde_json::Error::custom("a line longer than 4 GiB"));
        }
        if let Some((spans, present)) = Self::scan(text) {
            return Ok(Fields::of(text, &spans, present));
        }
        // serde_json decides what the scan does not take (and names the fault).
        let values: Values<'a> = serde_json::from_str(text)?;
        // Its keys are read as bytes, which serde_json does not check for control characters.
        if scan::raw_control_in_string(text.as_bytes()) {
            return Err(serde_json::Error::custom("control character (\\u0000-\\u001F) found while parsing a string"));
        }
        let base = text.as_ptr() as usize;
        let (mut spans, mut present) = ([(0u32, 0u32); SLOTS], 0u32);
        for (slot, (span, value)) in spans.iter_mut().zip(values.0).enumerate() {
            if let Some(v) = value {
                *span = ((v.get().as_ptr() as usize - base) as u32, v.get().len() as u32);
                present |= 1 << slot;
            }
        }
        Ok(Fields::of(text, &spans, present))
    }

    /// The fields of `text` (at most 4 GiB) from a span for every slot, those `present` has a
    /// bit for set.
    fn of(text: &'a str, all: &[(u32, u32); SLOTS], present: u32) -> Fields<'a> {
        let short = text.len() <= SHORT;
        let in_hot = if short { placed(present) } else { 0 };
        let mut hot = [(0, 0); PLACES];
        // Within a line of `SHORT` bytes every start and length fits 16 bits.
        for (h, slot) in hot.iter_mut().zip(bits(in_hot)) {
            *h = (all[slot].0 as u16, all[slot].1 as u16);
        }
        let kept = present & !in_hot;
        let rest = (kept != 0).then(|| Box::new(bits(kept).map(|slot| all[slot]).collect()));
        Fields { text, present, hot, rest }
    }

    /// The line the fields are in.
    #[inline]
    fn text(&self) -> &'a str {
        self.text
    }

    /// Reads a line in one pass that checks every byte as serde_json would ([`scan::check_value`])
    /// and notes the spans of the keys pi reads, and a bit for each key there; `None` for a line
    /// it leaves to serde_json: not valid JSON, not an object, a key with an escape, or nested
    /// past the check's depth (`parse` refused a line past 4 GiB). (Going through serde_json's
    /// visitor, with a key decoded and a raw value made for each member, was most of a load's
    /// time on many small entries.)
    fn scan(text: &str) -> Option<([(u32, u32); SLOTS], u32)> {
        let (mut spans, mut present) = ([(0u32, 0u32); SLOTS], 0u32);
        scan::check_object(text, |key, value| {
            if let Some(slot) = slot(key) {
                spans[slot as usize] = (value.start as u32, value.len() as u32);
                present |= 1 << slot as usize;
            }
        })?;
        Some((spans, present))
    }

    #[inline]
    fn get(&self, slot: Slot) -> Option<&'a RawValue> {
        let bit = 1u32 << slot as usize;
        if self.present & bit == 0 {
            return None;
        }
        let short = self.text.len() <= SHORT;
        let below = bit - 1;
        let rank = (self.present & HOT_BITS & below).count_ones() as usize;
        let (start, len) = match self.hot.get(rank).filter(|_| short && bit & HOT_BITS != 0) {
            Some(&(start, len)) => (start.into(), len.into()),
            None => {
                // The present keys kept in `rest` before this one give its place there.
                let kept = if short { self.present & !placed(self.present) } else { self.present };
                self.rest.as_ref()?[(kept & below).count_ones() as usize]
            }
        };
        Some(crate::js::json::raw_within(self.text(), start as usize..(start + len) as usize))
    }
}

/// A line's fields as serde reads them: each slot the raw value of its key's last occurrence.
struct Values<'a>([Option<&'a RawValue>; SLOTS]);

impl<'de: 'a, 'a> Deserialize<'de> for Values<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ValuesVisitor;
        impl<'de> Visitor<'de> for ValuesVisitor {
            type Value = Values<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Values<'de>, A::Error> {
                let mut values = Values([None; SLOTS]);
                while let Some(WtfKey(key)) = map.next_key()? {
                    let value: &'de RawValue = map.next_value()?;
                    // A key that is not UTF-8 (a lone surrogate escape) is none pi reads.
                    if let Some(slot) = std::str::from_utf8(&key).ok().and_then(slot) {
                        values.0[slot as usize] = Some(value);
                    }
                }
                Ok(values)
            }
        }
        d.deserialize_map(ValuesVisitor)
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

/// pi's entry types, one list: the type of each entry is kept as one byte, not as its name.
macro_rules! entry_types {
    ($($name:ident $key:literal),* $(,)?) => {
        /// An entry's `type`: one of those pi 1.6.0 writes, or [`EntryType::Other`] (any other
        /// name, or none; [`Entry::kind_name`] reads it again from the line).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum EntryType {
            $(#[doc = concat!("`", $key, "`")] $name,)*
            /// A type pi does not write (it loads, takes part in the tree, and projects to
            /// nothing), or none.
            Other,
        }

        impl EntryType {
            /// The type of an entry whose `type` reads `name`.
            pub fn of(name: &str) -> EntryType {
                match name {
                    $($key => EntryType::$name,)*
                    _ => EntryType::Other,
                }
            }

            /// The type's name; `None` for [`EntryType::Other`].
            pub fn name(self) -> Option<&'static str> {
                match self {
                    $(EntryType::$name => Some($key),)*
                    EntryType::Other => None,
                }
            }
        }
    };
}

entry_types! {
    Message "message",
    ThinkingLevelChange "thinking_level_change",
    ModelChange "model_change",
    Usage "usage",
    Compaction "compaction",
    BranchSummary "branch_summary",
    Custom "custom",
    CustomMessage "custom_message",
    ContextEdit "context_edit",
    Label "label",
    SessionInfo "session_info",
}

/// pi's reading of one non-header entry, in file order, beside the tree's [`Node`] of the same
/// index (which holds its line, bytes, type name, id and parent: not kept twice).
///
/// [`Node`]: crate::host::Node
#[derive(Debug)]
pub struct Entry<'a> {
    /// The entry type, as one byte.
    pub kind: EntryType,
    /// True for a v1/v2 message whose role `hookMessage` pi renames to `custom`.
    pub hook_message_role: bool,
    /// Everything pi reads, borrowed from the line.
    pub fields: Fields<'a>,
}

// A session holds one per entry beside its `Node` (100,000 tiny entries: 6.4 MB at 64 bytes;
// they were 224 with the node's fields repeated, 104 with 32-bit hot spans). Not to grow
// unnoticed.
const _: () = assert!(std::mem::size_of::<Entry>() <= 64);

impl<'a> Entry<'a> {
    /// An entry of a parsed line whose `type` reads `kind` (no migration applied yet).
    pub fn new(kind: &str, fields: Fields<'a>) -> Entry<'a> {
        Entry { kind: EntryType::of(kind), hook_message_role: false, fields }
    }

    /// The entry's `type` as written (decoded; empty when the line has none): the name the
    /// tree's node holds.
    pub fn kind_name(&self) -> Cow<'a, str> {
        match self.kind.name() {
            Some(name) => Cow::Borrowed(name),
            None => as_str(self.fields.kind()).unwrap_or_default(),
        }
    }

    /// Parses the line's `message` as the engine reads it ([`Message::parse`]); `None` when
    /// absent, not an object, or a field it reads has the wrong type. Where the role, content
    /// and tool are enough, [`Entry::message_head`] reads them at a fraction of the cost.
    pub fn message(&self) -> Option<Message<'a>> {
        self.fields.message().and_then(Message::parse)
    }

    /// The role, content and tool of the line's `message` ([`Head`]): `None` where
    /// [`Entry::message`] is, at a fraction of its cost.
    pub fn message_head(&self) -> Option<Head<'a>> {
        self.fields.message().and_then(Head::parse)
    }

    /// Returns the target id of a `context_edit` or `label`.
    pub fn target_id(&self) -> Option<Cow<'a, str>> {
        as_str(self.fields.target_id())
    }

    /// Returns the message's role for a `message` entry.
    pub fn role(&self) -> Option<Cow<'a, str>> {
        if self.kind != EntryType::Message {
            return None;
        }
        if self.hook_message_role {
            return Some(Cow::Borrowed("custom"));
        }
        super::message::role_of(self.fields.message()?)
    }

    /// Returns the `customType` of a `custom` or `custom_message` entry.
    pub fn custom_type(&self) -> Option<Cow<'a, str>> {
        as_str(self.fields.custom_type())
    }

    /// Tells whether pi's projection can give this entry model content that a context edit
    /// may replace, and pi's `appendContextEdit` would accept it as a target.
    pub fn is_editable(&self) -> bool {
        match self.kind {
            EntryType::CustomMessage => true,
            EntryType::Message => {
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
        let f = Fields::parse(r#"{"type":"context_edit","replacement":null}"#).unwrap();
        assert_eq!(f.replacement().map(|r| r.get()), Some("null"));
        assert!(f.target_id().is_none());
        assert_eq!(as_str(f.kind()).as_deref(), Some("context_edit"));
    }

    #[test]
    fn repeated_keys_take_the_last_value() {
        let f = Fields::parse(r#"{"id":"a","\u0069d":"b","other":{"id":"c"},"parentId":null}"#).unwrap();
        assert_eq!(as_str(f.id()).as_deref(), Some("b"));
        assert_eq!(f.parent_id().map(|r| r.get()), Some("null"));
        assert!(Fields::parse("[1]").is_err());
    }

    /// A bit for each span that is there (no JSON value is empty).
    fn bits_of(spans: &[(u32, u32); SLOTS]) -> u32 {
        (0..SLOTS).filter(|&i| spans[i].1 > 0).map(|i| 1 << i).sum()
    }

    /// The one-pass scan reads a line as serde_json does, or leaves it to serde_json.
    #[test]
    fn the_scan_finds_what_serde_finds() {
        let lines = [
            r#"{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":[{"type":"text","text":"x"}]}}"#,
            r#" { "id" : "a" , "x" : [ 1 , 2 ] , "id" : "b" } "#,
            r#"{"parentSession":"p","message":{},"cwd":"/","type":"x","label":"l","id":"a","version":3}"#,
            r#"{"parentSession":"p","message":{},"type":"x","id":"a","version":3}"#,
            r#"{"type":"label","label":"\u00e9\"","other":{"id":"c"}}"#,
            "{}",
            r#"{"\u0069d":"a"}"#,
            r#"{"id":"a",}"#,
            r#"{"id":01}"#,
            r#"{"id":"a"} x"#,
            "[1]",
            r#"{"a":"\ud800"}"#,
        ];
        for line in lines {
            let serde = serde_json::from_str::<Values>(line).ok().map(|v| v.0.map(|r| r.map(RawValue::get)));
            if let Some((spans, present)) = Fields::scan(line) {
                assert_eq!(present, bits_of(&spans), "{line}");
                let got: Vec<_> =
                    spans.iter().map(|&(s, n)| (n > 0).then(|| &line[s as usize..(s + n) as usize])).collect();
                assert_eq!(Some(got), serde.map(|v| v.to_vec()), "{line}");
            }
            assert_eq!(Fields::parse(line).is_ok(), serde.is_some(), "{line}");
            // The kept spans give each key's value as the whole list did.
            if let (Ok(f), Some(all)) = (Fields::parse(line), serde) {
                let got: Vec<_> = ALL.iter().map(|&slot| f.get(slot).map(RawValue::get)).collect();
                assert_eq!(got, all.to_vec(), "{line}");
            }
        }
        assert!(Fields::scan(r#"{"\u0069d":"a"}"#).is_none(), "an escaped key is serde's");
        assert!(Fields::scan(lines[0]).is_some() && Fields::scan(lines[1]).is_some());
    }

    /// A line past 64 KiB keeps every span in 32 bits; a short one its first six hot spans in
    /// 16, a seventh hot one and the cold ones beside: each key reads back as serde_json reads
    /// it, absent keys as absent.
    #[test]
    fn long_and_short_lines_keep_every_span() {
        let long = format!(r#"{{"type":"x","label":"l","message":"{}","id":"a","cwd":"/"}}"#, "m".repeat(70_000));
        let short = r#"{"type":"x","label":"l","message":"m","id":"a","cwd":"/"}"#;
        let all_hot = r#"{"replacement":"r","type":"x","id":"a","parentId":"p","timestamp":"t","message":"m","targetId":"g","label":"l"}"#;
        for (line, n) in [(long.as_str(), 70_000), (short, 1), (all_hot, 1)] {
            let f = Fields::parse(line).unwrap();
            let all = serde_json::from_str::<Values>(line).unwrap().0.map(|r| r.map(RawValue::get));
            let got: Vec<_> = ALL.iter().map(|&slot| f.get(slot).map(RawValue::get)).collect();
            assert_eq!(got, all.to_vec());
            assert_eq!(f.message().unwrap().get(), format!("\"{}\"", "m".repeat(n)));
            assert_eq!(as_str(f.label()).as_deref(), Some("l"));
            assert!(f.rest.is_some());
        }
        let f = Fields::parse(all_hot).unwrap();
        assert_eq!((f.rest.as_ref().unwrap().len(), as_str(f.replacement()).as_deref()), (2, Some("r")));
        assert!(Fields::parse(r#"{"type":"x","id":"a"}"#).unwrap().rest.is_none(), "no cold key, no box");
    }

    #[test]
    fn strings_with_escapes_decode() {
        let f = Fields::parse(r#"{"id":"a\"b","parentId":7}"#).unwrap();
        assert_eq!(as_str(f.id()).as_deref(), Some("a\"b"));
        assert_eq!(as_str(f.parent_id()), None);
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

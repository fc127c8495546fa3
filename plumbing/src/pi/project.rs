//! The projection: what pi 1.6.0 sends the model for a leaf (`buildSessionProjection`).
//!
//! [`Projection`] holds the compaction-aware context list and the winning edit per target, as
//! entry indexes; [`Projection::to_json`] renders the exact JSON pi's own code returns.

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::entry::{as_str, is_null, is_truthy, Entry};
use super::message::Content;
use super::session::{Cycle, Session};

/// Why a leaf cannot be projected.
#[derive(Debug, thiserror::Error)]
pub enum ProjectError {
    /// The path loops.
    #[error("{path}: {cycle}")]
    Cycle { path: String, cycle: Cycle },
    /// A winning `context_edit` has no `replacement` key: pi throws when it projects it.
    #[error("{path}:{line}: context_edit {id} has no \"replacement\"; pi cannot build context for this branch")]
    EditWithoutReplacement { path: String, line: usize, id: String },
}

/// The model-visible content of one context entry after edits.
#[derive(Debug)]
pub enum Projected<'a> {
    /// No edit applies: the entry's own content.
    Raw,
    /// A `replacement: null` edit removes the entry from the context.
    Omitted,
    /// A replacement's `content` (raw JSON; `None` when the replacement has no usable content).
    Replaced(Option<&'a RawValue>),
}

/// The projection of one leaf.
pub struct Projection<'s, 'a> {
    /// The session projected.
    pub session: &'s Session<'a>,
    /// The leaf (index into entries); `None` for an empty session.
    pub leaf: Option<usize>,
    /// The root→leaf path.
    pub path: Vec<usize>,
    /// The compaction-aware context list (`buildContextEntries`).
    pub context: Vec<usize>,
    /// For each edited target id, the index of the edit that wins (the latest in `context`).
    pub edits: HashMap<Cow<'a, str>, usize>,
}

impl<'s, 'a> Projection<'s, 'a> {
    /// Projects `leaf` (an entry index; `None` projects nothing, like pi's `null` leaf).
    pub fn at(session: &'s Session<'a>, leaf: Option<usize>) -> Result<Projection<'s, 'a>, ProjectError> {
        let path = match leaf {
            Some(l) => session
                .path(l)
                .map_err(|cycle| ProjectError::Cycle { path: session.file.display().into_owned(), cycle })?,
            None => Vec::new(),
        };
        let context = context_entries(session, &path);
        let mut edits = HashMap::new();
        for &i in &context {
            let e = &session.entries[i];
            if e.kind == "context_edit" {
                if let Some(target) = e.target_id() {
                    edits.insert(target, i);
                }
            }
        }
        let projection = Projection { session, leaf, path, context, edits };
        projection.check_edits()?;
        Ok(projection)
    }

    fn check_edits(&self) -> Result<(), ProjectError> {
        for (pos, &i) in self.context.iter().enumerate() {
            if let Some(edit) = self.edit_of(i) {
                if edit.fields.replacement.is_none() && self.has_editable_message(pos) {
                    return Err(ProjectError::EditWithoutReplacement {
                        path: self.session.file.display().into_owned(),
                        line: edit.line,
                        id: edit.id.to_string(),
                    });
                }
            }
        }
        Ok(())
    }

    /// Tells whether entry `pos` of the context gives a message whose content an edit replaces
    /// (pi reads `replacement.content` only for those, and throws when `replacement` is absent).
    fn has_editable_message(&self, pos: usize) -> bool {
        let e = &self.session.entries[self.context[pos]];
        base_messages(e, pos).iter().any(|m| {
            matches!(m.get("role").and_then(Value::as_str), Some("user" | "assistant" | "toolResult" | "custom"))
        })
    }

    /// Returns the edit that wins for entry `index`, if any.
    pub fn edit_of(&self, index: usize) -> Option<&'s Entry<'a>> {
        let id = self.session.entries[index].id.as_ref();
        self.edits.get(id).map(|&e| &self.session.entries[e])
    }

    /// Returns what the model sees of entry `index` (which must be in the context list).
    pub fn projected(&self, index: usize) -> Projected<'s> {
        match self.edit_of(index) {
            None => Projected::Raw,
            Some(edit) => match edit.fields.replacement {
                Some(r) if is_null(r) => Projected::Omitted,
                Some(r) => Projected::Replaced(replacement_content(r)),
                None => Projected::Replaced(None),
            },
        }
    }

    /// Returns the content the model sees for an editable entry: the replacement's when an edit
    /// wins, else the entry's own.
    pub fn content(&self, index: usize) -> Option<Content<'s>> {
        match self.projected(index) {
            Projected::Omitted => None,
            Projected::Replaced(raw) => Some(Content::parse(raw)),
            Projected::Raw => Some(Content::parse(own_content(&self.session.entries[index]))),
        }
    }

    /// Renders `{"leafId","entries":[{"id","type","messages"}],"messages"}` as pi's code does.
    pub fn to_json(&self) -> Value {
        let mut all = Vec::new();
        let entries: Vec<Value> = self
            .context
            .iter()
            .enumerate()
            .map(|(pos, &i)| {
                let e = &self.session.entries[i];
                let messages = self.entry_json(pos, i);
                all.extend(messages.iter().cloned());
                json!({"id": e.id, "type": e.kind, "messages": messages})
            })
            .collect();
        let leaf = self.leaf.map(|l| Value::from(self.session.entries[l].id.as_ref()));
        json!({"leafId": leaf, "entries": entries, "messages": all})
    }

    /// Returns the messages one context entry contributes (`projectContextEntry`).
    pub fn entry_json(&self, pos: usize, index: usize) -> Vec<Value> {
        let e = &self.session.entries[index];
        let messages = base_messages(e, pos);
        match self.projected(index) {
            Projected::Raw => messages,
            Projected::Omitted => Vec::new(),
            Projected::Replaced(content) => messages.into_iter().map(|m| replace_content(m, content)).collect(),
        }
    }
}

fn replacement_content(replacement: &RawValue) -> Option<&RawValue> {
    #[derive(serde::Deserialize)]
    struct Replacement<'b> {
        #[serde(borrow, default, deserialize_with = "present")]
        content: Option<&'b RawValue>,
    }
    fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
        <&'de RawValue as serde::Deserialize>::deserialize(d).map(Some)
    }
    if !replacement.get().starts_with('{') {
        return None;
    }
    serde_json::from_str::<Replacement>(replacement.get()).ok()?.content
}

/// Returns an editable entry's own content: a message's `content`, a custom_message's `content`.
pub fn own_content<'a>(e: &Entry<'a>) -> Option<&'a RawValue> {
    match e.kind.as_ref() {
        "custom_message" => e.fields.content,
        "message" => e.fields.message.and_then(super::message::Message::parse).and_then(|m| m.content),
        _ => None,
    }
}

/// `buildContextEntries`: the whole path, or from the latest compaction's kept boundary. Unlike
/// [`Projection::at`] it never fails on an edit without `replacement` (pi's own function does not).
pub fn context_entries(session: &Session<'_>, path: &[usize]) -> Vec<usize> {
    let Some(cpos) = path.iter().rposition(|&i| session.entries[i].kind == "compaction") else {
        return path.to_vec();
    };
    let compaction = &session.entries[path[cpos]];
    let first_kept = compaction.first_kept_entry_id();
    let mut context = vec![path[cpos]];
    let mut found = false;
    for &i in &path[..cpos] {
        let e = &session.entries[i];
        if first_kept.as_deref() == Some(e.id.as_ref()) {
            found = true;
        }
        if found && !(e.kind == "message" && e.role().as_deref() == Some("system")) {
            context.push(i);
        }
    }
    context.extend_from_slice(&path[cpos + 1..]);
    context
}

/// `sessionEntryToContextMessages`, with "only the compaction at index 0 contributes".
fn base_messages(e: &Entry<'_>, pos: usize) -> Vec<Value> {
    let f = &e.fields;
    match e.kind.as_ref() {
        "message" => {
            let Some(raw) = f.message else { return Vec::new() };
            let Ok(Value::Object(mut m)) = serde_json::from_str::<Value>(raw.get()) else { return Vec::new() };
            if e.hook_message_role {
                m.insert("role".into(), "custom".into());
            }
            let role = m.get("role").and_then(Value::as_str).unwrap_or_default().to_string();
            let missing = m.get("content").is_none_or(Value::is_null);
            if missing && role == "system" {
                m.insert("content".into(), "".into());
            } else if missing && matches!(role.as_str(), "user" | "assistant" | "toolResult") {
                m.insert("content".into(), json!([]));
            }
            vec![Value::Object(m)]
        }
        "custom_message" => {
            let mut m = Map::new();
            m.insert("role".into(), "custom".into());
            put(&mut m, "customType", f.custom_type);
            let content = f.content.filter(|c| !is_null(c)).map_or(json!([]), value_of);
            m.insert("content".into(), content);
            put(&mut m, "display", f.display);
            put(&mut m, "details", f.details);
            m.insert("timestamp".into(), js_time(f.timestamp));
            vec![Value::Object(m)]
        }
        "branch_summary" if is_truthy(f.summary) => {
            let mut m = Map::new();
            m.insert("role".into(), "branchSummary".into());
            put(&mut m, "summary", f.summary);
            put(&mut m, "fromId", f.from_id);
            m.insert("timestamp".into(), js_time(f.timestamp));
            vec![Value::Object(m)]
        }
        "compaction" if pos == 0 => {
            let mut m = Map::new();
            m.insert("role".into(), "compactionSummary".into());
            put(&mut m, "summary", f.summary);
            put(&mut m, "tokensBefore", f.tokens_before);
            m.insert("timestamp".into(), js_time(f.timestamp));
            let summary = Value::Object(m);
            match f.system_message.filter(|s| is_truthy(Some(s))) {
                Some(system) => vec![value_of(system), summary],
                None => vec![summary],
            }
        }
        _ => Vec::new(),
    }
}

/// `{...message, content}` for the roles an edit may replace.
fn replace_content(message: Value, content: Option<&RawValue>) -> Value {
    let Value::Object(mut m) = message else { return message };
    let role = m.get("role").and_then(Value::as_str).unwrap_or_default().to_string();
    if !matches!(role.as_str(), "user" | "assistant" | "toolResult" | "custom") {
        return Value::Object(m);
    }
    match content.map(value_of) {
        // `content: undefined` vanishes from JSON, as in pi.
        None => {
            m.shift_remove("content");
        }
        Some(Value::String(text)) if role == "assistant" || role == "toolResult" => {
            m.insert("content".into(), json!([{"type": "text", "text": text}]));
        }
        Some(v) => {
            m.insert("content".into(), v);
        }
    }
    Value::Object(m)
}

fn put(m: &mut Map<String, Value>, key: &str, raw: Option<&RawValue>) {
    if let Some(raw) = raw {
        m.insert(key.into(), value_of(raw));
    }
}

fn value_of(raw: &RawValue) -> Value {
    serde_json::from_str(raw.get()).unwrap_or(Value::Null)
}

/// `new Date(timestamp).getTime()`: milliseconds for an ISO-8601 string or a number, else `null`
/// (JavaScript's `NaN`, which JSON prints as `null`).
pub fn js_time(raw: Option<&RawValue>) -> Value {
    let Some(raw) = raw else { return Value::Null };
    if let Ok(n) = raw.get().parse::<f64>() {
        return if n.is_finite() { json!(n as i64) } else { Value::Null };
    }
    as_str(Some(raw)).and_then(|s| parse_iso_millis(&s)).map_or(Value::Null, Value::from)
}

/// Parses the ISO-8601 forms JavaScript's `Date` accepts (`YYYY-MM-DD[THH:MM[:SS[.sss]]][Z|±HH:MM]`).
pub fn parse_iso_millis(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = s.get(r)?;
        part.bytes().all(|c| c.is_ascii_digit()).then(|| part.parse().ok())?
    };
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    if !(1..=12).contains(&month) || !(1..=days_in_month(year, month)).contains(&day) {
        return None;
    }
    let mut millis = days_from_civil(year, month, day) * 86_400_000;
    if b.len() == 10 {
        return Some(millis);
    }
    if b[10] != b'T' || b.len() < 16 || b[13] != b':' {
        return None;
    }
    let (hour, minute) = (num(11..13)?, num(14..16)?);
    let mut i = 16;
    let mut second = 0;
    let mut ms = 0;
    if b.get(i) == Some(&b':') {
        second = num(i + 1..i + 3)?;
        i += 3;
        if b.get(i) == Some(&b'.') {
            let start = i + 1;
            let mut end = start;
            while end < b.len() && b[end].is_ascii_digit() {
                end += 1;
            }
            if end == start {
                return None;
            }
            let digits = &s[start..end.min(start + 3)];
            ms = digits.parse::<i64>().ok()? * 10_i64.pow(3 - digits.len() as u32);
            i = end;
        }
    }
    if hour > 24 || minute > 59 || second > 59 || (hour == 24 && (minute, second, ms) != (0, 0, 0)) {
        return None;
    }
    millis += ((hour * 60 + minute) * 60 + second) * 1000 + ms;
    // `get`, not an index: a byte offset past the ASCII part may fall inside a character.
    match s.get(i..)? {
        "Z" => Some(millis),
        // Without an offset JavaScript reads a date-time as local time; shake runs in UTC terms.
        "" => Some(millis),
        rest if rest.len() == 6 && (rest.starts_with('+') || rest.starts_with('-')) && rest.get(3..4) == Some(":") => {
            let offset = (num(i + 1..i + 3)? * 60 + num(i + 4..i + 6)?) * 60_000;
            Some(if rest.starts_with('+') { millis - offset } else { millis + offset })
        }
        _ => None,
    }
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_dates_match_javascript() {
        assert_eq!(parse_iso_millis("1970-01-01T00:00:00.000Z"), Some(0));
        assert_eq!(parse_iso_millis("2026-11-21T09:00:35.000Z"), Some(1_795_251_635_000));
        assert_eq!(parse_iso_millis("2025-12-24T11:06:53.530Z"), Some(1_766_574_413_530));
        assert_eq!(parse_iso_millis("2026-11-21T10:00:35.000+01:00"), Some(1_795_251_635_000));
        assert_eq!(parse_iso_millis("2024-02-29"), Some(1_709_164_800_000));
        assert_eq!(parse_iso_millis("2023-02-29"), None);
        assert_eq!(parse_iso_millis("yesterday"), None);
    }
}

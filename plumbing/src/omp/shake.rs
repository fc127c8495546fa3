//! OMP's `/shake` rules (`@oh-my-pi/pi-agent-core` 18.2.11 `compaction/shake.ts`,
//! `spec/peer-rules.md` §2): the branch and its boundary, `collectShakeRegions` with OMP's
//! presets, the meter's figure, and the in-place rewrite `/shake` performs (for simulating one).
//!
//! Text is scanned with JavaScript's rules, not pi's (`crate::regions::find_spans`): a `\r`
//! before the newline defeats an XML tag line, and `trimStart` trims JavaScript's whitespace set
//! (U+FEFF yes, U+0085 no). Offsets are reported in UTF-16 code units, as OMP's are.

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::value::RawValue;
#[cfg(any(test, feature = "fixture-host"))]
use serde_json::Map;
use serde_json::Value;

use super::file::{OmpEntry, OmpFile};
use super::tokenizer::{OmpTokenizer, IMAGE_TOKENS};
use crate::js::json::trusted::{self, Object};
use crate::js::string::string_text;
use crate::js::{stringify, utf16_len};

/// A `ShakeConfig` preset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// The most recent context kept intact, in tokens.
    pub protect_tokens: u64,
    /// Below this total saving (regions at 16 tokens of placeholder each) nothing is shaken.
    pub min_savings: u64,
    /// The smallest fenced/XML block worth a region.
    pub fence_min_tokens: u64,
    /// Whether reads of `artifact://` recoveries are protected too.
    pub protect_artifact_reads: bool,
}

/// `AGGRESSIVE_SHAKE_CONFIG`: the manual `/shake`.
pub const AGGRESSIVE: Config =
    Config { protect_tokens: 4_000, min_savings: 0, fence_min_tokens: 400, protect_artifact_reads: false };

/// `DEFAULT_SHAKE_CONFIG`: the automatic shake (`--profile omp-auto`).
pub const AUTO: Config =
    Config { protect_tokens: 16_000, min_savings: 4_000, fence_min_tokens: 400, protect_artifact_reads: true };

/// The placeholder cost the savings gate assumes (`PLACEHOLDER_TOKEN_ESTIMATE`).
const GATE_PLACEHOLDER: u64 = 16;

/// shake-meter-omp's sample placeholder, whose count stands for each region's placeholder.
pub const SAMPLE_PLACEHOLDER: &str = "[shaken ~1234 tokens — recover: artifact://62 (region 12)]";

/// What a region is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A whole tool result's text blocks.
    ToolResult,
    /// A fenced or top-level XML block inside one text.
    Block,
}

impl Kind {
    /// OMP's name for it.
    #[cfg(feature = "fixture-host")]
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::ToolResult => "toolResult",
            Kind::Block => "block",
        }
    }
}

/// One region OMP's `/shake` would replace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    /// Tool result or block.
    pub kind: Kind,
    /// The index on the branch of the entry it is in.
    pub pos: usize,
    /// That entry's id.
    pub entry_id: String,
    /// For a block: the content index, or -1 for string content.
    pub block_index: Option<i64>,
    /// For a block: the range in the text, in bytes.
    pub bytes: Option<std::ops::Range<usize>>,
    /// For a block: the range in the text, in UTF-16 code units (OMP's offsets).
    pub utf16: Option<std::ops::Range<usize>>,
    /// OMP's count of the region's text.
    pub tokens: u64,
    /// The tool name, or the role / customType of a block's message.
    pub label: String,
}

/// The current branch: from the last entry back to the root through `parentId` (a later entry
/// with a repeated id wins, as in a JavaScript `Map`); a cycle ends the walk.
pub fn branch(file: &OmpFile) -> Vec<&OmpEntry> {
    // Hashed by foldhash: SipHash was most of this walk, made twice a reading.
    let hasher = foldhash::fast::RandomState::default();
    let mut by_id: HashMap<&str, &OmpEntry, _> = HashMap::with_capacity_and_hasher(file.entries.len(), hasher.clone());
    for e in &file.entries {
        if let Some(id) = e.id() {
            by_id.insert(id, e);
        }
    }
    let mut path = Vec::new();
    let mut seen = std::collections::HashSet::with_hasher(hasher);
    let mut cur = file.entries.last();
    while let Some(e) = cur {
        if !seen.insert(e.line) {
            break;
        }
        path.push(e);
        cur = e.parent_id().and_then(|p| by_id.get(p).copied());
    }
    path.reverse();
    path
}

/// The boundary `/shake` passes: the newest compaction's `firstKeptEntryId` on the branch
/// (reset boundaries are ignored, as OMP ignores them).
pub fn boundary(file: &OmpFile, branch: &[&OmpEntry]) -> Option<String> {
    let compaction = branch.iter().rev().find(|e| e.kind() == "compaction")?;
    file.value(compaction).get("firstKeptEntryId")?.as_str().map(str::to_string)
}

/// What one entry of the branch may give, read in the one pass over the branch that counts its
/// tokens: the entry's parsed value is let go as soon as this is known.
enum Candidate {
    /// A tool result with text: what its region would be, and what decides whether it is one.
    Result { useless: bool, pruned: bool, name: String, call_id: Option<String>, artifact: bool, tokens: u64 },
    /// The fenced and XML blocks of its texts big enough to be regions.
    Blocks(Vec<Region>),
}

/// A tool call's name and, for a read, its path (what `isProtectedToolResult` looks at).
struct CallInfo {
    name: Option<String>,
    path: Option<String>,
}

/// `collectShakeRegions(branch, tokenizer, {...config, keepBoundaryId})`, and the branch's
/// tokens (OMP's `entryTokens`) from the first region's entry to the end: what replacing them
/// makes the provider's cache write again (0 without regions).
pub fn collect(
    file: &OmpFile,
    branch: &[&OmpEntry],
    tok: &OmpTokenizer,
    config: &Config,
    keep: Option<&str>,
) -> (Vec<Region>, u64) {
    let bytes: usize = branch.iter().map(|e| e.raw.len()).sum();
    let threads = match bytes < PARALLEL_BYTES {
        true => 1,
        false => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    collect_on(file, branch, tok, config, keep, threads)
}

/// [`collect`], the branch read in `threads` parts at once.
fn collect_on(
    file: &OmpFile,
    branch: &[&OmpEntry],
    tok: &OmpTokenizer,
    config: &Config,
    keep: Option<&str>,
    threads: usize,
) -> (Vec<Region>, u64) {
    let n = branch.len();
    let start = keep.map_or(0, |id| branch.iter().position(|e| e.id() == Some(id)).unwrap_or(0));
    let mut tokens = Vec::with_capacity(n);
    let mut calls: HashMap<String, CallInfo> = HashMap::new();
    let mut candidates: Vec<(usize, Candidate)> = Vec::new();
    for part in read_parts(file, branch, start, tok, config, threads) {
        tokens.extend(part.tokens);
        // A later part's call replaces an earlier one's of the same id, as a later insert does.
        calls.extend(part.calls);
        candidates.extend(part.candidates);
    }
    let mut after = vec![0u64; n];
    let mut acc = 0;
    for i in (0..n).rev() {
        after[i] = acc;
        acc += tokens[i];
    }
    let mut regions = Vec::new();
    for (i, candidate) in candidates {
        match candidate {
            Candidate::Result { useless, pruned, name, call_id, artifact, tokens } => {
                if (!useless && after[i] < config.protect_tokens) || pruned {
                    continue;
                }
                let call = call_id.as_deref().and_then(|id| calls.get(id));
                if protected(&name, call, artifact, config) {
                    continue;
                }
                regions.push(Region {
                    kind: Kind::ToolResult,
                    pos: i,
                    entry_id: branch[i].id().unwrap_or_default().to_string(),
                    block_index: None,
                    bytes: None,
                    utf16: None,
                    tokens,
                    label: name,
                });
            }
            Candidate::Blocks(found) if after[i] >= config.protect_tokens => regions.extend(found),
            Candidate::Blocks(_) => {}
        }
    }
    let savings: u64 = regions.iter().map(|r| r.tokens.saturating_sub(GATE_PLACEHOLDER)).sum();
    if savings < config.min_savings {
        return (Vec::new(), 0);
    }
    let suffix = regions.iter().map(|r| r.pos).min().map_or(0, |first| tokens[first..].iter().sum());
    (regions, suffix)
}

/// What reading a stretch of the branch gave ([`read_part`]).
struct Part {
    /// Each entry's `entryTokens`, in order.
    tokens: Vec<u64>,
    calls: HashMap<String, CallInfo>,
    candidates: Vec<(usize, Candidate)>,
}

/// A branch this long (its lines' bytes) or more is read on every core.
const PARALLEL_BYTES: usize = 1 << 20;

/// Reads the branch in `threads` contiguous parts of near-equal bytes at once, and returns them
/// in order. Each entry is read on its own (parsed, counted: most of a cold meter is Claude's
/// count of its texts); only the calls map and the order join entries, and [`collect`] joins the
/// parts in order, so the regions are the ones one pass finds.
fn read_parts(
    file: &OmpFile,
    branch: &[&OmpEntry],
    start: usize,
    tok: &OmpTokenizer,
    config: &Config,
    threads: usize,
) -> Vec<Part> {
    let bytes: usize = branch.iter().map(|e| e.raw.len()).sum();
    let mut ranges = Vec::new();
    let (mut from, mut filled) = (0, 0);
    for (i, e) in branch.iter().enumerate() {
        filled += e.raw.len();
        if ranges.len() + 1 < threads && filled * threads >= bytes * (ranges.len() + 1) {
            ranges.push(from..i + 1);
            from = i + 1;
        }
    }
    ranges.push(from..branch.len());
    if ranges.len() == 1 {
        return vec![read_part(file, branch, 0..branch.len(), start, tok, config)];
    }
    std::thread::scope(|s| {
        let parts: Vec<_> =
            ranges.into_iter().map(|r| s.spawn(move || read_part(file, branch, r, start, tok, config))).collect();
        parts.into_iter().map(|p| p.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
    })
}

/// Reads the entries `range` of the branch: each one's tokens, the tool calls it makes, and the
/// regions it may give (from `start`, the kept boundary, on).
fn read_part(
    file: &OmpFile,
    branch: &[&OmpEntry],
    range: std::ops::Range<usize>,
    start: usize,
    tok: &OmpTokenizer,
    config: &Config,
) -> Part {
    let mut tokens = Vec::with_capacity(range.len());
    let mut calls: HashMap<String, CallInfo> = HashMap::new();
    let mut candidates: Vec<(usize, Candidate)> = Vec::new();
    for (i, entry) in branch.iter().enumerate().take(range.end).skip(range.start) {
        // The line read once (the scan checked it): only the fields read are decoded.
        let value = Object::of(file.raw(entry)).unwrap_or_default();
        let message = message(&value);
        let (texts_tokens, extra) = entry_token_parts(&value, message.as_ref(), tok);
        tokens.push(texts_tokens + extra);
        let role = message.as_ref().and_then(|m| text(m.get("role")));
        if role.as_deref() == Some("assistant") {
            for b in blocks(message.as_ref().and_then(|m| m.get("content"))) {
                if let (true, Some(id)) = (is_type(&b, "toolCall"), text(b.get("id"))) {
                    let path = object(b.get("arguments")).and_then(|a| text(a.get("path")));
                    let name = text(b.get("name")).map(Cow::into_owned);
                    calls.insert(id.into_owned(), CallInfo { name, path: path.map(Cow::into_owned) });
                }
            }
        }
        if i < start {
            continue;
        }
        let result = message.as_ref().filter(|_| role.as_deref() == Some("toolResult"));
        if let Some(m) = result {
            // A string is empty only as `""`: any escape is a character.
            let mut texts = blocks(m.get("content")).filter(|b| is_type(b, "text")).filter_map(|b| b.get("text"));
            if !texts.any(|t| t.get().starts_with('"') && t.get().len() > 2) {
                continue;
            }
            let meta = object(m.get("details")).and_then(|d| object(d.get("meta")));
            let source = meta.and_then(|meta| object(meta.get("source")));
            let artifact = source.is_some_and(|s| {
                text(s.get("type")).as_deref() == Some("internal")
                    && text(s.get("value")).is_some_and(|v| v.starts_with("artifact://"))
            });
            let is_true = |key| m.get(key).is_some_and(|v| v.get() == "true");
            candidates.push((
                i,
                Candidate::Result {
                    useless: is_true("useless") && !is_true("isError"),
                    pruned: m.get("prunedAt").is_some(),
                    name: str_field(m, "toolName").into_owned(),
                    call_id: text(m.get("toolCallId")).map(Cow::into_owned),
                    artifact,
                    // The region is the result's non-empty text blocks (its content is an
                    // array, or it had none): what `entryTokens` counted of it, without images.
                    tokens: texts_tokens,
                },
            ));
            continue;
        }
        let mut found = Vec::new();
        for (block_index, label, text) in block_texts(&value, message.as_ref()) {
            let text = &*text;
            for range in scan_blocks(text) {
                let slice = &text[range.clone()];
                if slice.is_empty() {
                    continue;
                }
                let count = tok.count(slice);
                if count < config.fence_min_tokens {
                    continue;
                }
                let u16_start = utf16_len(&text[..range.start]);
                found.push(Region {
                    kind: Kind::Block,
                    pos: i,
                    entry_id: entry.id().unwrap_or_default().to_string(),
                    block_index: Some(block_index),
                    utf16: Some(u16_start..u16_start + utf16_len(slice)),
                    bytes: Some(range),
                    tokens: count,
                    label: label.to_string(),
                });
            }
        }
        if !found.is_empty() {
            candidates.push((i, Candidate::Blocks(found)));
        }
    }
    Part { tokens, calls, candidates }
}

/// The meter's figure: Σ max(0, region − P), P the count of [`SAMPLE_PLACEHOLDER`]
/// (shake-meter-omp's `preview.ts`).
pub fn freed(regions: &[Region], tok: &OmpTokenizer) -> u64 {
    let p = tok.count(SAMPLE_PLACEHOLDER);
    regions.iter().map(|r| r.tokens.saturating_sub(p)).sum()
}

/// The placeholder `/shake` writes for region `k` (1-based) with artifact `artifact`.
#[cfg(any(test, feature = "fixture-host"))]
pub fn placeholder(region: &Region, k: usize, artifact: Option<u64>) -> String {
    match artifact {
        Some(a) => format!("[shaken ~{} tokens — recover: artifact://{a} (region {k})]", region.tokens),
        None => format!("[shaken ~{} tokens]", region.tokens),
    }
}

/// What OMP's `/shake` writes: the file with `regions` replaced by their placeholders
/// (`applyShakeRegions`), `prunedAt` stamped on the tool results, every entry line re-written
/// with `JSON.stringify` (`rewriteEntries`), the title slot kept. Also returns the freed figure
/// `/shake` reports: max(0, Σ region − Σ placeholder).
#[cfg(any(test, feature = "fixture-host"))]
pub fn rewrite(file: &OmpFile, regions: &[Region], artifact: Option<u64>, now_ms: u64) -> (Vec<u8>, u64) {
    let branch = branch(file);
    let mut edited: HashMap<usize, Map<String, Value>> = HashMap::new();
    let mut placeholders = 0;
    let tok_free = regions.iter().map(|r| r.tokens).sum::<u64>();
    // Highest start first within one text, so earlier offsets stay valid.
    let mut order: Vec<(usize, &Region)> = regions.iter().enumerate().collect();
    order.sort_by_key(|(_, r)| std::cmp::Reverse(r.bytes.as_ref().map_or(0, |b| b.start + 1)));
    for (k, region) in order {
        let text = placeholder(region, k + 1, artifact);
        placeholders += region_placeholder_tokens(&text);
        let line = branch[region.pos].line;
        let value = edited.entry(line).or_insert_with(|| file.value(branch[region.pos]));
        apply(value, region, &text, now_ms);
    }
    let mut out = file.bytes[..file.header_end()].to_vec();
    for e in &file.entries {
        match edited.get(&e.line) {
            Some(v) => out.extend_from_slice(stringify::stringify_value(&Value::Object(v.clone())).as_bytes()),
            None => out.extend_from_slice(file.line_bytes(e)),
        }
        out.push(b'\n');
    }
    (out, tok_free.saturating_sub(placeholders))
}

/// A placeholder's cost as `/shake` counts it for its report: bytes/4 (the simulation's
/// tokenizer; a family count would need OMP's vocabulary).
#[cfg(any(test, feature = "fixture-host"))]
fn region_placeholder_tokens(text: &str) -> u64 {
    (text.len() as u64 + 3) >> 2
}

/// `applyShakeRegion`: a tool result keeps its non-text blocks and its first non-empty text
/// block, which becomes the placeholder; a block region is spliced out of its text.
#[cfg(any(test, feature = "fixture-host"))]
fn apply(entry: &mut Map<String, Value>, region: &Region, replacement: &str, now_ms: u64) {
    let target = match entry.get("type").and_then(Value::as_str) {
        Some("message") => entry.get_mut("message").and_then(Value::as_object_mut),
        _ => Some(&mut *entry),
    };
    let Some(target) = target else { return };
    match region.kind {
        Kind::ToolResult => {
            let Some(Value::Array(content)) = target.get_mut("content") else { return };
            let is_text = |b: &Value| b.get("type").and_then(Value::as_str) == Some("text");
            let first = content
                .iter()
                .position(|b| is_text(b) && b.get("text").and_then(Value::as_str).is_some_and(|t| !t.is_empty()));
            let Some(first) = first else { return };
            let kept: Vec<Value> = content
                .drain(..)
                .enumerate()
                .filter_map(|(i, b)| match i == first {
                    true => Some(serde_json::json!({"type": "text", "text": replacement})),
                    false => (!is_text(&b)).then_some(b),
                })
                .collect();
            *content = kept;
            target.insert("prunedAt".into(), Value::from(now_ms));
        }
        Kind::Block => {
            let (Some(index), Some(range)) = (region.block_index, region.bytes.clone()) else { return };
            let slot = match (index, target.get_mut("content")) {
                (-1, Some(v @ Value::String(_))) => Some(v),
                (i, Some(Value::Array(blocks))) if i >= 0 => blocks.get_mut(i as usize).and_then(|b| b.get_mut("text")),
                _ => None,
            };
            if let Some(Value::String(text)) = slot {
                text.replace_range(range, replacement);
            }
        }
    }
}

/// `entryTokens` of an entry's line: a message's `countMessage`, a custom message's text, 0
/// for anything else.
pub(crate) fn entry_tokens(line: &RawValue, tok: &OmpTokenizer) -> u64 {
    let entry = Object::of(line).unwrap_or_default();
    let (texts, extra) = entry_token_parts(&entry, message(&entry).as_ref(), tok);
    texts + extra
}

/// [`entry_tokens`] in two parts: the count of its texts, and the flat charges (images, frames);
/// `message` is the entry's [`message`]. A tool result's texts are its non-empty text blocks,
/// so their count is its region's too.
fn entry_token_parts(entry: &Object<'_>, message: Option<&Object<'_>>, tok: &OmpTokenizer) -> (u64, u64) {
    match text(entry.get("type")).as_deref().unwrap_or("") {
        "message" => message.map_or((0, 0), |m| message_tokens(m, tok)),
        "custom_message" => match entry.get("content").filter(|c| c.get().starts_with('"')) {
            Some(s) => (tok.count(&text(Some(s)).unwrap_or_default()), 0),
            None => {
                let texts: Vec<Cow<'_, str>> = blocks(entry.get("content"))
                    .filter(|b| is_type(b, "text"))
                    .filter_map(|b| text(b.get("text")))
                    .collect();
                let texts: Vec<&str> = texts.iter().map(|t| t.as_ref()).collect();
                (tok.count_all(&texts), 0)
            }
        },
        _ => (0, 0),
    }
}

/// `Tokenizer.countMessage` (`tokenizer.ts` `#measureMessage`), encrypted reasoning included:
/// the count of its texts, and its flat charges.
fn message_tokens(m: &Object<'_>, tok: &OmpTokenizer) -> (u64, u64) {
    let mut texts: Vec<Cow<'_, str>> = Vec::new();
    let mut extra = 0;
    let content = m.get("content");
    let mut text_and_images = |texts: &mut Vec<_>| match content.filter(|c| c.get().starts_with('"')) {
        Some(s) => texts.extend(text(Some(s))),
        None => {
            for b in blocks(content) {
                match text(b.get("type")).as_deref() {
                    Some("text") => {
                        if let Some(t) = text(b.get("text")).filter(|t| !t.is_empty()) {
                            texts.push(t)
                        }
                    }
                    Some("image") => extra += IMAGE_TOKENS,
                    _ => {}
                }
            }
        }
    };
    match text(m.get("role")).as_deref().unwrap_or("") {
        "bashExecution" => {
            for key in ["command", "output"] {
                texts.extend(text(m.get(key)));
            }
        }
        "user" | "developer" | "custom" | "hookMessage" | "toolResult" => text_and_images(&mut texts),
        "assistant" => {
            for b in blocks(content) {
                let field = |k: &str| text(b.get(k)).unwrap_or_default();
                match text(b.get("type")).as_deref() {
                    Some("text") => texts.push(field("text")),
                    Some("thinking") => {
                        texts.push(field("thinking"));
                        let signature = field("thinkingSignature");
                        if !signature.is_empty() {
                            texts.push(signature);
                        }
                    }
                    Some("toolCall") => {
                        texts.push(field("name"));
                        texts.push(json_text(b.get("arguments")).into());
                    }
                    Some("redactedThinking") => texts.push(field("data")),
                    Some("anthropicServerTool") => texts.push(json_text(b.get("block")).into()),
                    _ => {}
                }
            }
        }
        "branchSummary" | "compactionSummary" => {
            texts.push(str_field(m, "summary"));
            for b in blocks(m.get("blocks")) {
                match text(b.get("text")).filter(|_| is_type(&b, "text")) {
                    Some(t) => texts.push(t),
                    None => extra += FRAME_TOKENS,
                }
            }
        }
        _ => return (0, 0),
    }
    let texts: Vec<&str> = texts.iter().map(|t| t.as_ref()).collect();
    (tok.count_all(&texts), extra)
}

/// snapcompact's charge for one rendered frame (`FRAME_TOKEN_ESTIMATE`).
const FRAME_TOKENS: u64 = 5_024;

/// `stringifyJson(value) ?? "null"`, of the value as `serde_json` parses it (as the whole
/// entry's parse gave it before: the same numbers, the same keys).
fn json_text(value: Option<&RawValue>) -> String {
    match value.map(|v| serde_json::from_str::<Value>(v.get())) {
        Some(Ok(v)) => stringify::stringify_value(&v),
        _ => "null".to_string(),
    }
}

/// `isProtectedToolResult` with the preset's matchers: `skill`, reads of `skill://` (and of
/// `artifact://` recoveries for the automatic preset). `call` is the branch's tool call the
/// result answers (a later one with the same id wins); `artifact` tells whether the result's
/// `details.meta.source` is an internal `artifact://` one.
fn protected(name: &str, call: Option<&CallInfo>, artifact: bool, config: &Config) -> bool {
    if name == "skill" {
        return true;
    }
    let read_path =
        call.filter(|c| name == "read" && c.name.as_deref() == Some("read")).and_then(|c| c.path.as_deref());
    if read_path.is_some_and(|p| p.starts_with("skill://")) {
        return true;
    }
    if !config.protect_artifact_reads {
        return false;
    }
    read_path.is_some_and(|p| p.starts_with("artifact://")) || artifact
}

/// The texts `collectBlockRegions` scans in an entry's value: (content index or -1, label,
/// text); `message` is the entry's [`message`].
fn block_texts<'a>(entry: &Object<'a>, message: Option<&Object<'a>>) -> Vec<(i64, Cow<'a, str>, Cow<'a, str>)> {
    let (content, label) = match (text(entry.get("type")).as_deref().unwrap_or(""), message) {
        ("message", Some(m)) => {
            let role = str_field(m, "role");
            if role == "assistant" {
                return blocks(m.get("content"))
                    .enumerate()
                    .filter(|(_, b)| is_type(b, "text"))
                    .filter_map(|(i, b)| Some((i as i64, "assistant".into(), text(b.get("text"))?)))
                    .collect();
            }
            if role != "user" && role != "developer" {
                return Vec::new();
            }
            (m.get("content"), role)
        }
        ("custom_message", _) => (entry.get("content"), str_field(entry, "customType")),
        _ => return Vec::new(),
    };
    match content.filter(|c| c.get().starts_with('"')) {
        Some(s) => text(Some(s)).map(|s| (-1, label, s)).into_iter().collect(),
        None => blocks(content)
            .enumerate()
            .filter(|(_, b)| is_type(b, "text"))
            .filter_map(|(i, b)| Some((i as i64, label.clone(), text(b.get("text"))?)))
            .collect(),
    }
}

/// `scanTextForBlockRanges`: fenced blocks and top-level XML spans, byte ranges, outermost kept.
pub fn scan_blocks(text: &str) -> Vec<std::ops::Range<usize>> {
    let mut ranges = Vec::new();
    let mut fence: Option<usize> = None;
    let mut tags: Vec<&str> = Vec::new();
    let mut xml_start: Option<usize> = None;
    let mut start = 0;
    for line in text.split('\n') {
        let end = start + line.len();
        let trimmed = line.trim_start_matches(js_whitespace);
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            match fence.take() {
                Some(open) => ranges.push(open..end),
                None => fence = Some(start),
            }
        } else if fence.is_none() {
            if let Some(tag) = (line.len() == trimmed.len()).then(|| xml_open(trimmed)).flatten() {
                if tags.is_empty() {
                    xml_start = Some(start);
                }
                tags.push(tag);
            } else if let Some(tag) = xml_close(trimmed) {
                if tags.last() == Some(&tag) {
                    tags.pop();
                    if let (true, Some(open)) = (tags.is_empty(), xml_start) {
                        ranges.push(open..end);
                        xml_start = None;
                    }
                }
            }
        }
        start = end + 1;
    }
    ranges.sort_by_key(|r| r.start);
    let mut kept: Vec<std::ops::Range<usize>> = Vec::new();
    for r in ranges {
        if kept.last().is_none_or(|k| r.start >= k.end) {
            kept.push(r);
        }
    }
    kept
}

/// JavaScript's whitespace (`trimStart`, `\s`): Unicode White_Space without U+0085, plus U+FEFF.
fn js_whitespace(c: char) -> bool {
    (c.is_whitespace() && c != '\u{85}') || c == '\u{feff}'
}

fn tag_name(s: &str) -> usize {
    s.bytes().take_while(|b| b.is_ascii_lowercase() || *b == b'_' || *b == b'-').count()
}

/// `^<([a-z_-]+)(?:\s+[^>]*)?>$`.
fn xml_open(line: &str) -> Option<&str> {
    let inner = line.strip_prefix('<')?.strip_suffix('>')?;
    let n = tag_name(inner);
    let rest = &inner[n..];
    let attrs = rest.is_empty() || (rest.starts_with(js_whitespace) && !rest.contains('>'));
    (n > 0 && attrs).then(|| &inner[..n])
}

/// `^<\/([a-z_-]+)>$`.
fn xml_close(line: &str) -> Option<&str> {
    let inner = line.strip_prefix("</")?.strip_suffix('>')?;
    (tag_name(inner) == inner.len() && !inner.is_empty()).then_some(inner)
}

/// The message of a `message` entry.
fn message<'a>(entry: &Object<'a>) -> Option<Object<'a>> {
    match text(entry.get("type")).as_deref() {
        Some("message") => object(entry.get("message")),
        _ => None,
    }
}

/// A value as an object (`None` for any other value).
fn object(value: Option<&RawValue>) -> Option<Object<'_>> {
    value.and_then(Object::of)
}

/// A value as a string (`Value::as_str`: `None` for any other value).
fn text(value: Option<&RawValue>) -> Option<Cow<'_, str>> {
    value.filter(|v| v.get().starts_with('"')).and_then(|v| string_text(v.get()))
}

/// The items of an array, each as an object (an item of another kind has no members); none
/// for another value.
fn blocks(content: Option<&RawValue>) -> impl Iterator<Item = Object<'_>> {
    content.into_iter().flat_map(trusted::items).map(|b| Object::of(b).unwrap_or_default())
}

fn is_type(block: &Object<'_>, kind: &str) -> bool {
    text(block.get("type")).as_deref() == Some(kind)
}

fn str_field<'a>(m: &Object<'a>, key: &str) -> Cow<'a, str> {
    text(m.get(key)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The branch read in parts on several threads gives the regions one pass gives, for every
    /// part count and a kept boundary in any part (the counts of Claude's encoding, whose texts
    /// are split across the parts).
    #[test]
    fn reading_in_parts_finds_what_one_pass_finds() {
        use crate::omp::generate::{generate, Options};
        use crate::pi::generate::Limit;
        let dir = tempfile::tempdir().unwrap();
        for (seed, model) in [(3, "anthropic/claude-sonnet-4-5"), (4, "openai/gpt-5.1-codex")] {
            let options = Options { seed, limit: Limit::Bytes(300_000), model: model.into(), title: "t".into() };
            let path = dir.path().join(format!("{seed}.jsonl"));
            std::fs::write(&path, generate(&options)).unwrap();
            let file = OmpFile::read(&path).unwrap();
            let branch = branch(&file);
            let family = crate::tokens::family::Family::of("", model);
            let tok = OmpTokenizer::new(family, false);
            let keeps = [None, branch.get(branch.len() / 3).and_then(|e| e.id())];
            for (keep, config) in keeps.into_iter().zip([&AGGRESSIVE, &AUTO]) {
                let whole = collect_on(&file, &branch, &tok, config, keep, 1);
                assert!(!whole.0.is_empty(), "{model}: no region to compare");
                for threads in [2, 3, 7] {
                    assert_eq!(collect_on(&file, &branch, &tok, config, keep, threads), whole, "{model}, {threads}");
                }
            }
        }
    }

    #[test]
    fn scans_like_javascript() {
        let text = "a\n```rs\nx\n```\n<note>\n<b>\n</b>\n</note>\n<x>\r\n</x>\r\n```\nopen";
        let got: Vec<&str> = scan_blocks(text).into_iter().map(|r| &text[r]).collect();
        assert_eq!(got, ["```rs\nx\n```", "<note>\n<b>\n</b>\n</note>"]);
        let spans = |t: &'static str| scan_blocks(t).into_iter().map(|r| &t[r]).collect::<Vec<_>>();
        assert_eq!(spans("\u{feff}```\nx\n```"), ["\u{feff}```\nx\n```"]);
        assert!(spans(" <a>\n</a>").is_empty());
        assert_eq!(spans("<a x=\"1\">\n  </a>"), ["<a x=\"1\">\n  </a>"]);
    }
}

//! A seeded generator of oh-my-pi sessions: pi's generator (`crate::generate`) played as OMP
//! writes a file (`spec/pi-extensions.md` §3, `pi-session-format.md` §8).
//!
//! The pi session is rewritten entry by entry into OMP's layout: the 256-byte title slot first;
//! `model_change` with `model: "provider/id"`; every assistant on the one model asked for (so a
//! session has one tokenizer family); no `context_edit`, `usage` or `session_info` (children are
//! re-parented past them); pi's `label` entries become `reset_boundary`; system messages become
//! `developer` ones; images become `blob:sha256:` references; some tool results are `useless`,
//! some already shaken (`prunedAt`, OMP's placeholder), some reads target `skill://` or
//! `artifact://`, some results are `skill`'s; compactions carry OMP's extra fields; the file
//! ends with OMP's `session_exit`. Lines are `JSON.stringify`'d. Equal options, equal bytes.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::file::TITLE_SLOT_BYTES;
use crate::js::stringify::stringify_value;
use crate::pi::generate::text::Rng;
use crate::pi::generate::{self, Limit};

/// What to generate.
#[derive(Clone, Debug)]
pub struct Options {
    /// The seed: equal options give equal bytes.
    pub seed: u64,
    /// When to stop (as for pi's generator).
    pub limit: Limit,
    /// The model every assistant message names, `provider/id`.
    pub model: String,
    /// The session title in the title slot.
    pub title: String,
}

/// One model per tokenizer family OMP knows, plus models without one (GPT: bytes/4).
#[cfg(feature = "fixture-host")]
pub const FAMILY_MODELS: &[&str] = &[
    "openai/gpt-5.1-codex",
    "google/gemini-2.5-pro",
    "anthropic/claude-sonnet-4-5",
    "anthropic/claude-opus-4-7",
    "amazon-bedrock/anthropic.claude-opus-5",
    "amazon-bedrock/anthropic.claude-sonnet-5",
    "aimlapi/qwen3.5-plus",
    "aimlapi/deepseek-chat",
    "aimlapi/moonshot/kimi-k2-preview",
    "aimlapi/glm-5.1",
];

/// Generates one OMP session file's bytes.
pub fn generate(options: &Options) -> Vec<u8> {
    let pi = generate::generate(&generate::Options { seed: options.seed, limit: options.limit, cwd: None });
    let mut rng = Rng::new(options.seed ^ 0x0a1b_2c3d);
    let (provider, model_id) = options.model.split_once('/').unwrap_or(("unknown", options.model.as_str()));
    let mut out = String::new();
    // Dropped entries' ids, mapped to the parent their children get instead.
    let mut reparent: HashMap<String, Value> = HashMap::new();
    let mut last_id = Value::Null;
    let mut last_ts = String::new();
    let mut artifacts = 0u64;
    let mut renamed: Vec<String> = Vec::new();
    for (n, line) in std::str::from_utf8(&pi).unwrap_or_default().lines().enumerate() {
        let Ok(Value::Object(mut e)) = serde_json::from_str::<Value>(line) else { continue };
        let kind = e.get("type").and_then(Value::as_str).unwrap_or_default().to_string();
        if n == 0 {
            let ts = e.get("timestamp").and_then(Value::as_str).unwrap_or_default().to_string();
            out.push_str(&title_slot(&options.title, &ts));
            out.push_str(&stringify_value(&Value::Object(e)));
            out.push('\n');
            continue;
        }
        if let Some(Value::String(p)) = e.get("parentId") {
            if let Some(to) = reparent.get(p) {
                e.insert("parentId".into(), to.clone());
            }
        }
        let id = e.get("id").and_then(Value::as_str).unwrap_or_default().to_string();
        match kind.as_str() {
            "context_edit" | "usage" | "session_info" => {
                reparent.insert(id, e.get("parentId").cloned().unwrap_or(Value::Null));
                continue;
            }
            "label" => {
                e.retain(|k, _| matches!(k.as_str(), "type" | "id" | "parentId" | "timestamp"));
                e.insert("type".into(), "reset_boundary".into());
            }
            "model_change" => {
                e.retain(|k, _| matches!(k.as_str(), "type" | "id" | "parentId" | "timestamp"));
                e.insert("model".into(), options.model.clone().into());
            }
            "compaction" => {
                e.insert("shortSummary".into(), "Work so far".into());
                e.insert("tokensAfter".into(), rng.range(2_000, 30_000).into());
            }
            "message" => message(&mut e, &mut rng, provider, model_id, &mut artifacts, &mut renamed),
            _ => {}
        }
        last_id = e.get("id").cloned().unwrap_or(Value::Null);
        last_ts = e.get("timestamp").and_then(Value::as_str).unwrap_or_default().to_string();
        out.push_str(&stringify_value(&Value::Object(e)));
        out.push('\n');
    }
    let exit = json!({
        "type": "custom", "customType": "session_exit",
        "data": {"reason": "sighup", "kind": "signal", "recordedAt": last_ts},
        "id": format!("{:08x}", rng.next() as u32), "parentId": last_id, "timestamp": last_ts,
    });
    out.push_str(&stringify_value(&exit));
    out.push('\n');
    out.into_bytes()
}

/// OMP's fixed-width first line.
fn title_slot(title: &str, updated_at: &str) -> String {
    let head = stringify_value(&json!({"type": "title", "v": 1, "title": title, "updatedAt": updated_at}));
    let mut slot = format!("{},\"pad\":\"", &head[..head.len() - 1]);
    let pad = TITLE_SLOT_BYTES.saturating_sub(slot.len() + 3);
    slot.push_str(&" ".repeat(pad));
    slot.push_str("\"}\n");
    slot
}

fn message(
    e: &mut Map<String, Value>,
    rng: &mut Rng,
    provider: &str,
    model: &str,
    artifacts: &mut u64,
    renamed: &mut Vec<String>,
) {
    let Some(Value::Object(m)) = e.get_mut("message") else { return };
    blob_images(m);
    match m.get("role").and_then(Value::as_str).unwrap_or_default() {
        "system" => {
            m.insert("role".into(), "developer".into());
            m.retain(|k, _| matches!(k.as_str(), "role" | "content" | "timestamp"));
        }
        "assistant" => {
            m.insert("provider".into(), provider.into());
            m.insert("model".into(), model.into());
            let Some(Value::Array(blocks)) = m.get_mut("content") else { return };
            for b in blocks.iter_mut().filter(|b| b.get("type").and_then(Value::as_str) == Some("toolCall")) {
                let name = b.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
                let id = b.get("id").and_then(Value::as_str).unwrap_or_default().to_string();
                match (name.as_str(), rng.below(12)) {
                    ("read", 0) => b["arguments"]["path"] = format!("skill://skill-{}/SKILL.md", rng.below(9)).into(),
                    ("read", 1) => b["arguments"]["path"] = format!("artifact://{}", rng.below(40)).into(),
                    ("bash", 2) => {
                        b["name"] = "skill".into();
                        renamed.push(id);
                    }
                    _ => {}
                }
            }
        }
        "toolResult" => {
            let call = m.get("toolCallId").and_then(Value::as_str).unwrap_or_default().to_string();
            if let Some(i) = renamed.iter().position(|c| *c == call) {
                renamed.swap_remove(i);
                m.insert("toolName".into(), "skill".into());
            }
            match rng.below(20) {
                0 => {
                    m.insert("useless".into(), true.into());
                }
                1 | 2 => {
                    *artifacts += 1;
                    let Some(Value::Array(blocks)) = m.get_mut("content") else { return };
                    let text = format!(
                        "[shaken ~{} tokens — recover: artifact://{artifacts} (region 1)]",
                        rng.range(50, 3_000)
                    );
                    blocks.retain(|b| b.get("type").and_then(Value::as_str) != Some("text"));
                    blocks.insert(0, json!({"type": "text", "text": text}));
                    let ts = m.get("timestamp").and_then(Value::as_u64).unwrap_or_default();
                    m.insert("prunedAt".into(), (ts + 60_000).into());
                }
                _ => {}
            }
        }
        _ => {}
    }
}

/// OMP's blob store: an image's `data` becomes `blob:sha256:<hash>` (the hash here is blake3's,
/// a stand-in: nothing reads the blob).
fn blob_images(m: &mut Map<String, Value>) {
    let Some(Value::Array(blocks)) = m.get_mut("content") else { return };
    for b in blocks.iter_mut().filter(|b| b.get("type").and_then(Value::as_str) == Some("image")) {
        if let Some(Value::String(data)) = b.get_mut("data") {
            *data = format!("blob:sha256:{}", blake3::hash(data.as_bytes()).to_hex());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::omp::OmpFile;

    #[test]
    fn generates_omp_files_deterministically() {
        let opts =
            Options { seed: 3, limit: Limit::Default, model: "anthropic/claude-opus-4-7".into(), title: "T".into() };
        let bytes = generate(&opts);
        assert_eq!(bytes, generate(&opts));
        assert_eq!(bytes.iter().position(|b| *b == b'\n'), Some(TITLE_SLOT_BYTES - 1));
        let f = OmpFile::parse("g.jsonl".into(), bytes).unwrap();
        assert!(f.malformed.is_empty());
        assert!(f.entries.iter().all(|e| !matches!(e.kind(), "context_edit" | "usage" | "label")));
        assert_eq!(f.entries.last().map(|e| f.value(e)["customType"].clone()), Some("session_exit".into()));
        // Every parent is an entry of the file: nothing dangles after the dropped entries.
        let ids: std::collections::HashSet<_> = f.entries.iter().filter_map(|e| e.id()).collect();
        assert!(f.entries.iter().filter_map(|e| e.parent_id()).all(|p| ids.contains(p)));
    }
}

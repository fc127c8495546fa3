//! Which model an OMP session talks to (its tokenizer family is OMP's catalog's:
//! [`crate::tokens::family`]).

use serde_json::Value;

use super::file::{message, role, OmpEntry, OmpFile};

/// The session's model as `(provider, id)`: the newest on the branch of a default-role
/// `model_change` (`model: "provider/id"`, or pi's `provider`/`modelId`) or an assistant
/// message's `provider`/`model`; else the header's `provider`/`modelId`.
pub fn session_model(file: &OmpFile, branch: &[&OmpEntry]) -> Option<(String, String)> {
    let str_of = |v: &serde_json::Map<String, Value>, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let pair = |v: &serde_json::Map<String, Value>, p: &str, m: &str| Some((str_of(v, p)?, str_of(v, m)?));
    branch
        .iter()
        .rev()
        .filter(|e| matches!(e.kind(), "model_change" | "message"))
        .find_map(|e| {
            // Parsed one at a time from the newest: the walk stops at the first that names one.
            let value = file.value(e);
            match e.kind() {
                "model_change" => {
                    let role = value.get("role").and_then(Value::as_str);
                    if role.is_some_and(|r| r != "default") {
                        return None;
                    }
                    match value.get("model").and_then(Value::as_str) {
                        Some(m) => m.split_once('/').map(|(p, id)| (p.to_string(), id.to_string())),
                        None => pair(&value, "provider", "modelId"),
                    }
                }
                _ if role(&value) == Some("assistant") => pair(message(&value)?, "provider", "model"),
                _ => None,
            }
        })
        .or_else(|| pair(&file.header_value, "provider", "modelId"))
}

//! Families of sessions for `diff` and `audit` tests: a generated session folded at its leaf,
//! forked and rewound with pi's own code, and helpers to read what pi and the file say.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::env::{Oracle, TestEnv};

/// A generated session with one shake fold at pi's leaf.
pub struct Folded {
    /// The session file.
    pub path: PathBuf,
    /// pi's leaf before the fold: the entry just before the fold's log entry.
    pub before: String,
    /// The fold's log entry id.
    pub log: String,
    /// pi's leaf after the fold (the batch's last edit).
    pub leaf: String,
    /// `shake fold --json` output.
    pub fold: Value,
}

impl Folded {
    /// The path as a command-line argument.
    pub fn p(&self) -> &str {
        self.path.to_str().unwrap()
    }

    /// The folded target ids, each once.
    pub fn targets(&self) -> Vec<String> {
        let mut ids: Vec<String> = Vec::new();
        for t in self.fold["targets"].as_array().unwrap() {
            let id = t["id"].as_str().unwrap().to_string();
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        ids
    }
}

/// Runs `shake ARGS…` and returns stdout as JSON with the exit code.
pub fn json_exit(env: &TestEnv, args: &[&str]) -> (Value, i32) {
    let out = env.run(args);
    let code = out.status.code().unwrap();
    let value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("shake {args:?} ({code}): {e}\n{}", String::from_utf8_lossy(&out.stderr)));
    (value, code)
}

/// Generates session `seed` as `name` and folds it at pi's leaf; `None` when nothing folds.
pub fn folded(env: &TestEnv, seed: u64, name: &str) -> Option<Folded> {
    let path = env.dir.path().join(name);
    let p = path.to_str().unwrap();
    env.ok(&["generate-session", "--seed", &seed.to_string(), "-o", p]);
    let before = env.ok(&["rev-parse", p]).trim_end().split_once(' ').unwrap().1.to_string();
    let fold: Value = serde_json::from_str(&env.ok(&["fold", p, "--json"])).unwrap();
    let appended = fold["appended"].as_array().unwrap();
    let log = appended.first()?.as_str().unwrap().to_string();
    let leaf = appended.last().unwrap().as_str().unwrap().to_string();
    Some(Folded { path, before, log, leaf, fold })
}

/// Forks `path` at `leaf` with pi's `createBranchedSession` (`branched`) or the whole file with
/// `forkFrom` (`from`, leaf ignored); returns the new file.
pub fn pi_fork(env: &TestEnv, mode: &str, path: &Path, leaf: &str, dir: &str) -> PathBuf {
    let out = env.dir.path().join(dir);
    let (p, o) = (path.to_str().unwrap(), out.to_str().unwrap());
    let args: Vec<&str> = if mode == "branched" { vec!["branched", p, leaf, o] } else { vec!["from", p, o] };
    PathBuf::from(Oracle::run("fork.mjs", &args)["file"].as_str().unwrap())
}

/// Continues `path` from entry `from` with pi's own code (a rewind); returns the new leaf id.
pub fn pi_rewind(path: &Path, from: &str) -> String {
    Oracle::run("rewind.mjs", &[path.to_str().unwrap(), from, "let us try another way"])["leafId"]
        .as_str()
        .unwrap()
        .to_string()
}

/// pi's projection at every tip of a file: leaf id → (entry id → messages).
pub fn pi_tips(path: &Path) -> HashMap<String, HashMap<String, Value>> {
    tips_of(&Oracle::run("project-all.mjs", &["--no-flat", path.to_str().unwrap()]))
}

/// The same from `project-all.mjs` output already in hand.
pub fn tips_of(all: &Value) -> HashMap<String, HashMap<String, Value>> {
    all["leaves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["leafId"].as_str().unwrap().to_string(), by_id(&l["entries"])))
        .collect()
}

/// pi's projection at one entry: entry id → messages.
pub fn pi_at(path: &Path, leaf: &str) -> HashMap<String, Value> {
    by_id(&Oracle::run("project.mjs", &[path.to_str().unwrap(), leaf, "--compact"])["entries"])
}

fn by_id(entries: &Value) -> HashMap<String, Value> {
    entries.as_array().unwrap().iter().map(|e| (e["id"].as_str().unwrap().to_string(), e["messages"].clone())).collect()
}

/// The text of the first message of an entry in a projection (what the model reads of it).
pub fn text_of(messages: &Value) -> String {
    match &messages[0]["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join("\n"),
        _ => String::new(),
    }
}

/// The parsed line of entry `id` in a file.
pub fn line_of(path: &Path, id: &str) -> Value {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .rfind(|v| v["type"] != "session" && v["id"] == id)
        .unwrap_or_else(|| panic!("no entry {id} in {}", path.display()))
}

/// An entry's own content as in the file (a message's or a custom_message's).
pub fn raw_content(path: &Path, id: &str) -> Value {
    let line = line_of(path, id);
    if line["type"] == "message" {
        line["message"]["content"].clone()
    } else {
        line["content"].clone()
    }
}

/// Rewrites entry `id` in place with `content` as its own content (what a destructive tool does).
pub fn rewrite_content(path: &Path, id: &str, content: &Value) {
    let text = std::fs::read_to_string(path).unwrap();
    let rewritten: Vec<String> = text
        .lines()
        .map(|l| match serde_json::from_str::<Value>(l) {
            Ok(mut v) if v["type"] == "message" && v["id"] == id => {
                v["message"]["content"] = content.clone();
                serde_json::to_string(&v).unwrap()
            }
            _ => l.to_string(),
        })
        .collect();
    std::fs::write(path, rewritten.join("\n") + "\n").unwrap();
}

/// The content a fold's edit for `target` gives it.
pub fn folded_content(path: &Path, log: &Value, target: &str) -> Value {
    let edit = log["targets"].as_array().unwrap().iter().find(|t| t["id"] == target).unwrap()["edit"]
        .as_str()
        .unwrap()
        .to_string();
    line_of(path, &edit)["replacement"]["content"].clone()
}

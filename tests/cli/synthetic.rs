//! Builds pi v3 session files for tests: every kind of foldable and skipped content, in pi's own
//! key order, without depending on a generator.

use serde_json::{json, Map, Value};

/// Appends entries one by one, each a child of the previous (or of the entry set with `at`).
pub struct Builder {
    lines: Vec<String>,
    parent: Option<String>,
    n: u32,
}

impl Builder {
    /// Starts a session with a header and a `model_change` root.
    pub fn new() -> Builder {
        let header = r#"{"type":"session","version":3,"id":"synthetic-1","timestamp":"2026-11-21T09:00:00.000Z","cwd":"/home/dev/proj"}"#;
        let mut b = Builder { lines: vec![header.to_string()], parent: None, n: 0 };
        b.entry("model_change", json!({"provider": "anthropic", "modelId": "claude-sonnet-4-5"}));
        b
    }

    /// Makes the next entry a child of `id` (a branch).
    pub fn at(&mut self, id: &str) {
        self.parent = Some(id.to_string());
    }

    /// Appends an entry of `kind` with `fields` after the base keys; returns its id.
    pub fn entry(&mut self, kind: &str, fields: Value) -> String {
        self.n += 1;
        let id = format!("e{:07x}", self.n);
        let mut m = Map::new();
        m.insert("type".into(), kind.into());
        m.insert("id".into(), id.clone().into());
        m.insert("parentId".into(), self.parent.clone().map_or(Value::Null, Value::from));
        m.insert("timestamp".into(), format!("2026-11-21T09:{:02}:{:02}.000Z", self.n / 60 % 60, self.n % 60).into());
        if let Value::Object(f) = fields {
            m.extend(f);
        }
        self.lines.push(serde_json::to_string(&m).unwrap());
        self.parent = Some(id.clone());
        id
    }

    /// Appends a message entry.
    pub fn message(&mut self, message: Value) -> String {
        self.entry("message", json!({"message": message}))
    }

    /// A user message.
    pub fn user(&mut self, content: Value) -> String {
        self.message(json!({"role": "user", "content": content, "timestamp": 1795251600000u64 + self.n as u64}))
    }

    /// An assistant message.
    pub fn assistant(&mut self, content: Value) -> String {
        self.message(
            json!({"role": "assistant", "content": content, "api": "anthropic-messages", "provider": "anthropic",
            "model": "claude-sonnet-4-5", "stopReason": "toolUse", "timestamp": 1795251600000u64 + self.n as u64}),
        )
    }

    /// An assistant tool call followed by its result; returns the result's id.
    pub fn tool(&mut self, name: &str, args: Value, content: Value) -> String {
        let call = format!("call{}", self.n);
        self.assistant(json!([{"type": "toolCall", "id": call, "name": name, "arguments": args}]));
        self.message(json!({"role": "toolResult", "toolCallId": call, "toolName": name, "content": content,
            "isError": false, "timestamp": 1795251600000u64 + self.n as u64}))
    }

    /// The file's text.
    pub fn text(&self) -> String {
        let mut s = self.lines.join("\n");
        s.push('\n');
        s
    }
}

/// Text of about `chars` characters with non-ASCII, escapes and surrogate pairs in it.
pub fn filler(seed: &str, chars: usize) -> String {
    let mut s = String::new();
    let mut i = 0;
    while s.chars().count() < chars {
        s.push_str(&format!("{seed} {i}: tab\there \"quoted\" é 😀 \u{2028} back\\slash\n"));
        i += 1;
    }
    s
}

fn fenced(lang: &str, chars: usize) -> String {
    format!("```{lang}\n{}```", filler(lang, chars))
}

/// A text block.
pub fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

/// An image block.
pub fn image() -> Value {
    json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"})
}

/// The ids of interest in [`rich`].
pub struct Rich {
    pub text: String,
    /// Tool results the default fold takes.
    pub folded_results: Vec<String>,
    /// The skill result and the skill:// read (never folded).
    pub skill: Vec<String>,
    /// A string-content tool result (skipped), a null-omitted one, a tiny one.
    pub skipped: Vec<String>,
    /// A tool result another tool edited (folded from that edit's content).
    pub foreign: String,
    /// The tip of a side branch.
    pub side_leaf: String,
}

/// A session with every kind of region and skip case, then a long tail.
pub fn rich() -> Rich {
    let mut b = Builder::new();
    let intro = format!(
        "Look at this:\n{}\nand\n<context>\n{}</context>\nsmall:\n```\nx\n```\n",
        fenced("python", 2400),
        filler("ctx", 2400)
    );
    b.user(json!(intro));
    let big = filler("read", 6000);
    b.assistant(json!([
        {"type": "thinking", "thinking": filler("think", 900), "thinkingSignature": "sig=="},
        {"type": "text", "text": format!("Plan:\n{}\n", fenced("rust", 2000)), "textSignature": "t1"},
    ]));
    let r1 = b.tool("read", json!({"path": "src/main.rs"}), json!([text(&big), image(), text("tail note")]));
    let s1 = b.tool("skill", json!({"name": "x"}), json!([text(&filler("skill", 4000))]));
    let s2 = b.tool("read", json!({"path": "skill://writer/SKILL.md"}), json!([text(&filler("skillread", 4000))]));
    let odd = b.tool("bash", json!({"command": "ls"}), json!(filler("string", 4000)));
    let foreign = b.tool("bash", json!({"command": "make"}), json!([text(&filler("make", 4000))]));
    b.entry(
        "context_edit",
        json!({"targetId": foreign, "replacement": {"content": [text(&filler("foreign summary", 3000))]}}),
    );
    let omitted = b.tool("bash", json!({"command": "rm"}), json!([text(&filler("omit", 4000))]));
    b.entry("context_edit", json!({"targetId": omitted, "replacement": null}));
    b.entry("custom_message", json!({"customType": "note", "content": format!("Note\n{}\n", fenced("", 2400).replacen("```", "~~~", 2)), "display": true}));
    let shot = b.user(json!([text("here is a screenshot"), image()]));
    let tiny = b.tool("bash", json!({"command": "true"}), json!([text("ok")]));
    let r2 = b.tool("grep", json!({"pattern": "x"}), json!([text(&filler("grep", 3000))]));
    b.at(&shot);
    let side_leaf = b.user(json!("a side branch"));
    b.at(&r2);
    for i in 0..10 {
        b.user(json!(format!("question {i}: {}", filler("q", 600))));
        b.assistant(json!([text(&filler("answer", 1400))]));
    }
    Rich {
        text: b.text(),
        folded_results: vec![r1, foreign.clone(), r2],
        skill: vec![s1, s2],
        skipped: vec![odd, omitted, tiny],
        foreign,
        side_leaf,
    }
}

//! A seeded generator of realistic pi v3 sessions, for property-style tests and benchmarks
//! (`shake generate-session`, `docs/generate-session.md`).
//!
//! It plays pi: each entry is what pi 1.6.0 would append (same key order, `JSON.stringify`
//! formatting, 8-hex ids, ISO timestamps with milliseconds), chained to an in-memory leaf that
//! moves the way `/tree` moves it. Context edits obey `appendContextEdit`'s rules. The same seed
//! and limit always give the same bytes.

pub mod json;
pub mod text;

use std::collections::HashSet;

use crate::pi::ids::iso;
use json::Json;
use text::{Lang, Rng};

/// How much to generate. Generation stops at the first event boundary at or past the limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// A small session whose entry count (roughly 40 to 200) comes from the seed.
    Default,
    /// At least this many bytes.
    Bytes(u64),
    /// At least this many entries (header excluded).
    Entries(u64),
}

/// What to generate.
#[derive(Clone, Debug)]
pub struct Options {
    /// The seed: equal options give equal bytes.
    pub seed: u64,
    /// When to stop.
    pub limit: Limit,
    /// The header's `cwd` (default `/home/dev/proj`).
    pub cwd: Option<String>,
}

/// Generates one session file's bytes.
pub fn generate(options: &Options) -> Vec<u8> {
    let mut g = Generator::new(options);
    g.header(options.cwd.as_deref().unwrap_or("/home/dev/proj"));
    g.model_change();
    g.thinking_level_change();
    g.system_message(true);
    let (entries, bytes) = match options.limit {
        Limit::Default => (g.rng.range(40, 200), u64::MAX),
        Limit::Bytes(n) => (u64::MAX, n),
        Limit::Entries(n) => (n, u64::MAX),
    };
    while (g.nodes.len() as u64) < entries && (g.out.len() as u64) < bytes {
        g.event();
    }
    g.out.into_bytes()
}

/// What an entry is, as far as later entries (edits, compactions, navigation) care.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    User,
    Assistant,
    ToolResult,
    CustomMessage,
    Other,
}

impl Kind {
    /// pi's `appendContextEdit` accepts these targets.
    fn editable(self) -> bool {
        matches!(self, Kind::User | Kind::Assistant | Kind::ToolResult | Kind::CustomMessage)
    }
}

struct Node {
    id: String,
    kind: Kind,
    /// For an assistant message: its toolCall blocks, serialised, comma-separated.
    tool_calls: String,
}

const MODELS: &[(&str, &str, &str)] = &[
    ("anthropic", "claude-sonnet-4-5", "anthropic-messages"),
    ("openai", "gpt-5.1-codex", "openai-responses"),
    ("google", "gemini-2.5-pro", "google-generative-ai"),
];
const LEVELS: &[&str] = &["off", "minimal", "low", "medium", "high", "xhigh"];
const SYSTEM_PROMPT: &str = "You are an expert coding assistant operating inside pi, a coding agent harness.";

struct Generator {
    rng: Rng,
    out: String,
    nodes: Vec<Node>,
    ids: HashSet<u32>,
    /// Node indexes from the root to pi's in-memory leaf.
    path: Vec<usize>,
    /// The clock, in Unix milliseconds.
    now: u64,
    /// The cap for one big tool output or pasted file, in bytes.
    big: u64,
    model: usize,
    cwd: String,
    /// Node indexes of compaction entries.
    compactions: HashSet<usize>,
}

impl Generator {
    fn new(options: &Options) -> Generator {
        let mut rng = Rng::new(options.seed);
        // 2026-01-01 plus up to ~300 days, so timestamps differ between seeds.
        let now = 1_767_225_600_000 + rng.below(300 * 86_400_000);
        let big = match options.limit {
            Limit::Default => 4_000,
            Limit::Entries(_) => 64_000,
            Limit::Bytes(_) => 256_000,
        };
        Generator {
            rng,
            out: String::new(),
            nodes: Vec::new(),
            ids: HashSet::new(),
            path: Vec::new(),
            now,
            big,
            model: 0,
            cwd: String::new(),
            compactions: HashSet::new(),
        }
    }

    /// Appends one event: usually a whole turn, sometimes navigation, an edit batch, a compaction…
    fn event(&mut self) {
        match self.rng.below(100) {
            0..=57 => self.turn(),
            58..=64 => self.edit_batch(),
            65..=68 => self.compaction(),
            69..=74 => self.navigate(),
            75..=77 => self.label(),
            78..=80 => self.custom(),
            81..=84 => self.custom_message(),
            85..=86 => {
                self.model = self.rng.below(MODELS.len() as u64) as usize;
                self.model_change();
            }
            87..=88 => self.thinking_level_change(),
            89..=90 => self.system_message(false),
            91..=92 => self.usage_entry(),
            93 => self.session_info(),
            _ => self.bash_execution(),
        }
    }

    // ----- plumbing: ids, time, entry heads --------------------------------------------------

    fn new_id(&mut self) -> String {
        loop {
            let id = self.rng.next() as u32;
            if self.ids.insert(id) {
                return format!("{id:08x}");
            }
        }
    }

    fn tick(&mut self, max_ms: u64) -> u64 {
        self.now += self.rng.range(1, max_ms);
        self.now
    }

    /// Writes `"id","parentId","timestamp"` for a new entry and returns its id.
    fn head(&mut self, j: &mut Json) -> String {
        let id = self.new_id();
        j.kv("id", &id).key("parentId");
        match self.path.last() {
            Some(&p) => j.str(&self.nodes[p].id),
            None => j.null(),
        };
        let ts = iso(self.tick(4000));
        j.kv("timestamp", &ts);
        id
    }

    /// Starts an entry of `kind` written with pi's usual key order.
    fn begin(&mut self, kind: &str) -> (Json, String) {
        let mut j = Json::with_capacity(512);
        j.obj().kv("type", kind);
        let id = self.head(&mut j);
        (j, id)
    }

    /// Ends the entry, appends its line and makes it the leaf.
    fn finish(&mut self, mut j: Json, id: String, kind: Kind, tool_calls: String) {
        j.end();
        self.out.push_str(&j.buf);
        self.out.push('\n');
        self.nodes.push(Node { id, kind, tool_calls });
        self.path.push(self.nodes.len() - 1);
    }

    fn header(&mut self, cwd: &str) {
        let mut j = Json::default();
        let ms = self.now;
        let (a, b) = (self.rng.next(), self.rng.next());
        // uuidv7: 48 bits of milliseconds, version 7, variant 10, random bits.
        let id = format!(
            "{:08x}-{:04x}-7{:03x}-{:04x}-{:012x}",
            ms >> 16,
            ms & 0xffff,
            a & 0xfff,
            0x8000 | ((a >> 12) & 0x3fff),
            b & 0xffff_ffff_ffff
        );
        j.obj().kv("type", "session").kn("version", 3).kv("id", &id).kv("timestamp", &iso(ms)).kv("cwd", cwd);
        if self.rng.chance(15) {
            // A fork or clone names the file it came from.
            let from = format!(
                "/home/dev/.pi/agent/sessions/--home-dev-proj--/{}_{}.jsonl",
                iso(ms - 86_400_000).replace([':', '.'], "-"),
                id
            );
            j.kv("parentSession", &from);
        }
        j.end();
        self.cwd = cwd.to_string();
        self.out.push_str(&j.buf);
        self.out.push('\n');
    }

    // ----- settings entries -------------------------------------------------------------------

    fn model_change(&mut self) {
        let (provider, model, _) = MODELS[self.model];
        let (mut j, id) = self.begin("model_change");
        j.kv("provider", provider).kv("modelId", model);
        self.finish(j, id, Kind::Other, String::new());
    }

    fn thinking_level_change(&mut self) {
        let level = *self.rng.pick(LEVELS);
        let (mut j, id) = self.begin("thinking_level_change");
        j.kv("thinkingLevel", level);
        self.finish(j, id, Kind::Other, String::new());
    }

    fn session_info(&mut self) {
        let mut name = String::new();
        text::prose(&mut self.rng, &mut name, 4);
        let (mut j, id) = self.begin("session_info");
        j.kv("name", name.trim_end_matches('.'));
        self.finish(j, id, Kind::Other, String::new());
    }

    fn label(&mut self) {
        let target = self.nodes[*self.rng.pick(&self.path)].id.clone();
        let (mut j, id) = self.begin("label");
        j.kv("targetId", &target);
        // A cleared label has no `label` key (JSON.stringify drops undefined).
        if self.rng.chance(85) {
            j.kv("label", &format!("checkpoint-{}", self.rng.below(100)));
        }
        self.finish(j, id, Kind::Other, String::new());
    }

    fn usage_entry(&mut self) {
        let (provider, model, _) = MODELS[self.model];
        let (mut j, id) = self.begin("usage");
        j.kv("kind", "cache_warm").kv("provider", provider).kv("model", model).key("usage");
        let read = self.rng.range(1000, 60_000);
        usage(&mut j, 0, 0, read, 0);
        if self.rng.chance(30) {
            j.kv("note", "keep-alive before idle timeout");
        }
        self.finish(j, id, Kind::Other, String::new());
    }

    // ----- messages ---------------------------------------------------------------------------

    /// Starts a `message` entry and its `message` object with the role.
    fn begin_message(&mut self, role: &str) -> (Json, String) {
        let (mut j, id) = self.begin("message");
        j.key("message").obj().kv("role", role);
        (j, id)
    }

    /// Closes the message object and the entry.
    fn finish_message(&mut self, mut j: Json, id: String, kind: Kind, tool_calls: String) {
        j.end();
        self.finish(j, id, kind, tool_calls)
    }

    fn tools(&self, j: &mut Json) {
        j.key("toolsAdded").arr();
        for (name, description) in [
            ("read", "Read the contents of a file."),
            ("bash", "Execute a bash command."),
            ("edit", "Replace exact text in a file."),
        ] {
            j.obj().kv("name", name).kv("description", description).key("parameters");
            j.raw(r#"{"type":"object","properties":{"path":{"type":"string","description":"Path to the file"}},"required":["path"]}"#);
            j.end();
        }
        j.end_arr();
    }

    fn system_message(&mut self, first: bool) {
        let (mut j, id) = self.begin_message("system");
        let cwd = format!("<cwd>{}</cwd>", self.cwd);
        if first {
            j.kv("content", SYSTEM_PROMPT).key("sections").obj();
            j.kv("tools", "<tools>\n- read: Read the contents of a file.\n- bash: Execute a bash command.\n</tools>")
                .kv("cwd", &cwd)
                .end();
            self.tools(&mut j);
        } else {
            j.kv("content", "Project instructions changed.").key("sections").obj();
            if self.rng.chance(50) {
                j.key("agents").null();
            } else {
                j.kv("agents", "<agents>Run `cargo test` before committing.</agents>");
            }
            j.end();
            if self.rng.chance(50) {
                j.key("toolsRemoved").arr().obj().kv("name", "edit").end().end_arr();
            }
        }
        j.kn("timestamp", self.now);
        self.finish_message(j, id, Kind::Other, String::new());
    }

    fn user(&mut self) {
        let mut body = String::new();
        let words = self.rng.range(5, 60);
        text::prose(&mut self.rng, &mut body, words);
        if self.rng.chance(15) {
            // A pasted file as an XML span: a fold candidate in user text.
            let lang = *self.rng.pick(&Lang::ALL);
            let path = text::file_path(&mut self.rng, lang);
            body.push_str(&format!("\n\n<file path=\"{path}\">\n"));
            let lines = self.rng.skewed(30, self.big / 60);
            text::code(&mut self.rng, &mut body, lang, lines);
            body.push_str("</file>");
        }
        let image = self.rng.chance(6);
        let (mut j, id) = self.begin_message("user");
        j.key("content");
        if image || self.rng.chance(20) {
            j.arr().obj().kv("type", "text").kv("text", &body).end();
            if image {
                self.image(&mut j);
            }
            j.end_arr();
        } else {
            j.str(&body);
        }
        j.kn("timestamp", self.now);
        self.finish_message(j, id, Kind::User, String::new());
    }

    fn image(&mut self, j: &mut Json) {
        let mut data = String::from("iVBORw0KGgoAAAANSUhEUgAA");
        let len = self.rng.skewed(2_000, self.big) as usize;
        text::base64(&mut self.rng, &mut data, len);
        j.obj().kv("type", "image").kv("data", &data).kv("mimeType", "image/png").end();
    }

    /// One user prompt, zero or more tool rounds, and a final answer.
    fn turn(&mut self) {
        self.user();
        let rounds = *self.rng.pick(&[0, 1, 1, 2, 3, 5]);
        for _ in 0..rounds {
            let calls = self.assistant(true);
            for (call_id, tool) in calls {
                self.tool_result(&call_id, tool);
            }
        }
        self.assistant(false);
    }

    /// Appends an assistant message; with `tools`, it calls 1 to 3 tools and returns them.
    fn assistant(&mut self, tools: bool) -> Vec<(String, &'static str)> {
        let (provider, model, api) = MODELS[self.model];
        let started = self.now;
        let mut blocks = Json::default();
        blocks.arr();
        if self.rng.chance(45) {
            self.thinking(&mut blocks);
        }
        if !tools || self.rng.chance(40) {
            let mut body = String::new();
            let words = self.rng.range(5, 80);
            text::prose(&mut self.rng, &mut body, words);
            if !tools && self.rng.chance(30) {
                let lang = *self.rng.pick(&Lang::ALL);
                body.push_str(&format!("\n\n```{}\n", lang.names().0));
                let lines = self.rng.skewed(20, self.big / 80);
                text::code(&mut self.rng, &mut body, lang, lines);
                body.push_str("```\n\nThat should fix it.");
            }
            blocks.obj().kv("type", "text").kv("text", &body);
            if self.rng.chance(10) {
                blocks.kv("textSignature", r#"{"v":1,"id":"msg_01","phase":"final_answer"}"#);
            }
            blocks.end();
        }
        let mut calls = Vec::new();
        let mut call_json = Json::default();
        call_json.arr();
        if tools {
            for _ in 0..self.rng.range(1, 3) {
                let call = self.tool_call(&mut call_json);
                calls.push(call);
            }
        }
        call_json.end_arr();
        let call_blocks = call_json.buf[1..call_json.buf.len() - 1].to_string();
        if !call_blocks.is_empty() {
            blocks.raw(&call_blocks);
        }
        blocks.end_arr();

        let (stop, error) = match (tools, self.rng.below(100)) {
            (true, _) => ("toolUse", None),
            (false, 0..=2) => ("error", Some("529 overloaded_error: Overloaded")),
            (false, 3..=4) => ("aborted", Some("Request was aborted")),
            (false, 5) => ("length", None),
            _ => ("stop", None),
        };
        let (mut j, id) = self.begin_message("assistant");
        j.key("content").raw(&blocks.buf);
        j.kv("api", api).kv("provider", provider).kv("model", model);
        if self.rng.chance(50) {
            let mut response = String::from("msg_01");
            text::alnum(&mut self.rng, &mut response, 22);
            j.kv("responseId", &response);
        }
        j.key("usage");
        let input = self.rng.range(1, 4000);
        let output = self.rng.range(1, 3000);
        let cache_read = self.rng.skewed(20_000, 150_000);
        let cache_write = if self.rng.chance(30) { self.rng.range(100, 8000) } else { 0 };
        usage(&mut j, input, output, cache_read, cache_write);
        j.kv("stopReason", stop);
        if let Some(error) = error {
            j.kv("errorMessage", error);
        }
        j.kn("timestamp", started);
        if self.rng.chance(30) {
            j.kn("durationMs", self.now - started + self.rng.below(900));
        }
        if self.rng.chance(20) {
            j.kv("thinkingLevel", self.rng.pick::<&str>(LEVELS));
        }
        self.finish_message(j, id, Kind::Assistant, call_blocks);
        calls
    }

    fn thinking(&mut self, blocks: &mut Json) {
        let mut sig = String::from("Ep");
        let len = self.rng.range(40, 400) as usize;
        text::base64(&mut self.rng, &mut sig, len);
        if self.rng.chance(10) {
            blocks
                .obj()
                .kv("type", "thinking")
                .kv("thinking", "")
                .kv("thinkingSignature", &sig)
                .key("redacted")
                .bool(true)
                .end();
            return;
        }
        let mut thought = String::new();
        let words = self.rng.skewed(60, self.big / 6);
        text::prose(&mut self.rng, &mut thought, words);
        blocks.obj().kv("type", "thinking").kv("thinking", &thought);
        if self.rng.chance(80) {
            blocks.kv("thinkingSignature", &sig);
        }
        blocks.end();
    }

    fn tool_call(&mut self, blocks: &mut Json) -> (String, &'static str) {
        let mut call_id = String::from("toolu_01");
        text::alnum(&mut self.rng, &mut call_id, 20);
        let lang = *self.rng.pick(&Lang::ALL);
        let path = text::file_path(&mut self.rng, lang);
        let tool = *self.rng.pick(&["read", "read", "bash", "bash", "bash", "edit"]);
        blocks.obj().kv("type", "toolCall").kv("id", &call_id).kv("name", tool).key("arguments").obj();
        match tool {
            "read" => {
                blocks.kv("path", &path);
            }
            "bash" => {
                let command = *self.rng.pick(&[
                    "cargo test 2>&1 | tail -50",
                    "ls -la",
                    "git status --short",
                    "npm test",
                    "rg -n \"parentId\" src",
                ]);
                blocks.kv("command", command);
                if self.rng.chance(20) {
                    blocks.kn("timeout", 120);
                }
            }
            _ => {
                blocks.kv("path", &path);
                blocks.kv("oldText", "let x = 1;").kv("newText", "let x = 2;\n");
            }
        }
        blocks.end().end();
        (call_id, tool)
    }

    fn tool_result(&mut self, call_id: &str, tool: &'static str) {
        let mut out = String::new();
        let lang = *self.rng.pick(&Lang::ALL);
        let lines = self.rng.skewed(40, self.big / 50);
        let mut details = None;
        match tool {
            "read" => text::numbered_code(&mut self.rng, &mut out, lang, lines),
            "bash" => {
                text::shell_output(&mut self.rng, &mut out, lines);
                if self.rng.chance(30) {
                    out.push_str("```\nfenced in tool output\n```\n");
                }
                details = Some(r#"{"truncation":null,"fullOutputPath":null}"#);
            }
            _ => {
                out.push_str("Successfully replaced text.");
                details = Some(r#"{"diff":"-let x = 1;\n+let x = 2;","firstChangedLine":12}"#);
            }
        }
        let is_error = self.rng.chance(5);
        let image = tool == "read" && self.rng.chance(4);
        self.tick(30_000);
        let (mut j, id) = self.begin_message("toolResult");
        j.kv("toolCallId", call_id).kv("toolName", tool).key("content").arr();
        j.obj().kv("type", "text").kv("text", &out).end();
        if image {
            self.image(&mut j);
        }
        j.end_arr();
        if let Some(details) = details {
            j.key("details").raw(details);
        }
        j.key("isError").bool(is_error).kn("timestamp", self.now);
        self.finish_message(j, id, Kind::ToolResult, String::new());
    }

    fn bash_execution(&mut self) {
        let mut output = String::new();
        let lines = self.rng.skewed(10, self.big / 60);
        text::shell_output(&mut self.rng, &mut output, lines);
        let (mut j, id) = self.begin_message("bashExecution");
        j.kv("command", "git log --oneline -5").kv("output", &output);
        if self.rng.chance(90) {
            j.kn("exitCode", self.rng.below(2));
        }
        j.key("cancelled").bool(false).key("truncated").bool(false);
        if self.rng.chance(20) {
            j.key("excludeFromContext").bool(true);
        }
        j.kn("timestamp", self.now);
        self.finish_message(j, id, Kind::Other, String::new());
    }

    // ----- extension entries ------------------------------------------------------------------

    fn custom(&mut self) {
        let custom_type = *self.rng.pick(&["pi.virtual-model-state", "codemode-store", "todo-ext"]);
        let mut j = Json::default();
        j.obj().kv("type", "custom").kv("customType", custom_type).key("data");
        // Integer-like keys first and ascending: JavaScript objects order them that way.
        j.obj().kn("7", self.rng.below(10)).kn("42", self.rng.below(10)).kv("state", "active").key("items").arr();
        for _ in 0..self.rng.below(4) {
            j.int(self.rng.below(1000));
        }
        j.end_arr().end();
        let id = self.head(&mut j);
        self.finish(j, id, Kind::Other, String::new());
    }

    fn custom_message(&mut self) {
        let mut body = String::new();
        let words = self.rng.range(3, 40);
        text::prose(&mut self.rng, &mut body, words);
        let mut j = Json::default();
        j.obj().kv("type", "custom_message").kv("customType", "todo-reminder").key("content");
        if self.rng.chance(60) {
            j.str(&body);
        } else {
            j.arr().obj().kv("type", "text").kv("text", &body).end();
            if self.rng.chance(20) {
                self.image(&mut j);
            }
            j.end_arr();
        }
        j.key("display").bool(self.rng.chance(50));
        if self.rng.chance(60) {
            // Integer-like keys first: JavaScript objects order them that way.
            j.key("details").obj().kn("12", 1).kv("source", "todo-ext").end();
        }
        let id = self.head(&mut j);
        self.finish(j, id, Kind::CustomMessage, String::new());
    }

    /// Appends 1 to 4 context edits on the active branch, as pi's `appendContextEdit` writes
    /// them, sometimes followed by a `custom` log entry like shake's.
    fn edit_batch(&mut self) {
        let editable: Vec<usize> = self.path.iter().copied().filter(|&i| self.nodes[i].kind.editable()).collect();
        if editable.is_empty() {
            return self.turn();
        }
        let mut targets = Vec::new();
        for _ in 0..self.rng.range(1, 4) {
            let i = *self.rng.pick(&editable);
            let target = &self.nodes[i];
            let (id, kind, calls) = (target.id.clone(), target.kind, target.tool_calls.clone());
            let (mut j, edit_id) = self.begin("context_edit");
            j.kv("targetId", &id).key("replacement");
            let mut placeholder = String::from("[output omitted (~");
            placeholder.push_str(&self.rng.range(100, 20_000).to_string());
            placeholder.push_str(" tokens)]");
            match self.rng.below(10) {
                0..=1 => {
                    j.null();
                }
                2..=4 if matches!(kind, Kind::User | Kind::CustomMessage) => {
                    j.obj().kv("content", &placeholder).end();
                }
                _ => {
                    // String replacements of assistant/toolResult content are stored as one text
                    // block (pi normalises them); arrays keep an assistant's tool calls.
                    j.obj().key("content").arr().obj().kv("type", "text").kv("text", &placeholder).end();
                    if !calls.is_empty() {
                        j.raw(&calls);
                    }
                    j.end_arr().end();
                }
            }
            self.finish(j, edit_id, Kind::Other, String::new());
            targets.push(id);
        }
        if self.rng.chance(60) {
            let mut j = Json::default();
            j.obj()
                .kv("type", "custom")
                .kv("customType", "shake")
                .key("data")
                .obj()
                .kn("v", 1)
                .kv("op", "fold")
                .key("targets")
                .arr();
            for t in &targets {
                j.str(t);
            }
            j.end_arr().kn("tokens", self.rng.range(100, 50_000)).end();
            let id = self.head(&mut j);
            self.finish(j, id, Kind::Other, String::new());
        }
    }

    /// Appends a compaction keeping the path from a recent message (or nothing).
    fn compaction(&mut self) {
        let start = self.path.iter().rposition(|i| self.compactions.contains(i)).map_or(0, |p| p + 1);
        let kept: Vec<usize> = self.path[start..]
            .iter()
            .copied()
            .filter(|&i| matches!(self.nodes[i].kind, Kind::User | Kind::Assistant))
            .collect();
        if kept.len() < 4 {
            return self.turn();
        }
        let first_kept = self.nodes[kept[kept.len() / 2 + self.rng.below((kept.len() / 2) as u64) as usize]].id.clone();
        let mut summary = String::from("## Goal\n");
        let words = self.rng.range(20, 200);
        text::prose(&mut self.rng, &mut summary, words);
        summary.push_str("\n\n## Next Steps\n1. Run the tests");
        let (mut j, id) = self.begin("compaction");
        let retain_none = self.rng.chance(10);
        j.kv("summary", &summary).kv("firstKeptEntryId", if retain_none { &id } else { &first_kept });
        j.kn("tokensBefore", self.rng.range(20_000, 180_000));
        j.key("details").raw(r#"{"readFiles":["src/main.rs","src/session.rs"],"modifiedFiles":["src/main.rs"]}"#);
        if self.rng.chance(70) {
            j.key("usage");
            let (input, output) = (self.rng.range(5000, 90_000), self.rng.range(300, 3000));
            usage(&mut j, input, output, 0, 0);
        }
        if self.rng.chance(10) {
            j.key("fromHook").bool(true);
        }
        if self.rng.chance(75) {
            j.key("systemMessage").obj().kv("role", "system").kv("content", SYSTEM_PROMPT).key("sections").obj();
            j.kv("cwd", &format!("<cwd>{}</cwd>", self.cwd)).end();
            self.tools(&mut j);
            j.kn("timestamp", self.now).end();
        }
        self.compactions.insert(self.nodes.len());
        self.finish(j, id, Kind::Other, String::new());
    }

    /// Moves the leaf like `/tree`: to an earlier entry (to the parent of a user message or
    /// custom message, whose text goes back to the editor), persisting a branch summary and a
    /// label sometimes; without them nothing is written and the next entry just branches.
    fn navigate(&mut self) {
        if self.path.len() < 6 {
            return self.turn();
        }
        let old_leaf = self.nodes[*self.path.last().unwrap_or(&0)].id.clone();
        // People go back a few turns, now and then half the way: paths keep growing, as in real sessions.
        let len = self.path.len() as u64;
        let far = if self.rng.chance(97) { 30 } else { len / 2 };
        let back = self.rng.range(1, far.min(len - 2));
        let mut pos = (len - 1 - back) as usize;
        let target = self.path[pos];
        if matches!(self.nodes[target].kind, Kind::User | Kind::CustomMessage) {
            pos -= 1;
        }
        self.path.truncate(pos + 1);
        if self.rng.chance(50) {
            let mut summary = String::new();
            if self.rng.chance(90) {
                let words = self.rng.range(10, 120);
                text::prose(&mut self.rng, &mut summary, words);
            }
            let (mut j, id) = self.begin("branch_summary");
            j.kv("fromId", &old_leaf).kv("summary", &summary);
            j.key("details").raw(r#"{"readFiles":[],"modifiedFiles":[]}"#);
            self.finish(j, id, Kind::Other, String::new());
        }
        if self.rng.chance(20) {
            self.label();
        }
    }
}

/// Writes a `Usage` object with costs at Anthropic-like prices (floats printed as JavaScript).
fn usage(j: &mut Json, input: u64, output: u64, cache_read: u64, cache_write: u64) {
    let price = |tokens: u64, per_million: f64| tokens as f64 * per_million / 1e6;
    let cost = [price(input, 3.0), price(output, 15.0), price(cache_read, 0.3), price(cache_write, 3.75)];
    j.obj().kn("input", input).kn("output", output).kn("cacheRead", cache_read).kn("cacheWrite", cache_write);
    j.kn("totalTokens", input + output + cache_read + cache_write).key("cost").obj();
    for (key, value) in ["input", "output", "cacheRead", "cacheWrite"].iter().zip(cost) {
        j.key(key).num(value);
    }
    j.key("total").num(cost.iter().sum()).end().end();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_seed_dependent() {
        let opts = |seed| Options { seed, limit: Limit::Entries(300), cwd: None };
        let a = generate(&opts(1));
        assert_eq!(a, generate(&opts(1)));
        assert_ne!(a, generate(&opts(2)));
    }

    #[test]
    fn every_line_is_valid_json_with_unique_ids() {
        let bytes = generate(&Options { seed: 3, limit: Limit::Entries(2000), cwd: None });
        let text = String::from_utf8(bytes).unwrap();
        let mut ids = HashSet::new();
        let mut kinds = HashSet::new();
        for line in text.lines().skip(1) {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert!(ids.insert(v["id"].as_str().unwrap().to_string()));
            assert_eq!(v["id"].as_str().unwrap().len(), 8);
            kinds.insert(v["type"].as_str().unwrap().to_string());
        }
        for kind in
            ["message", "compaction", "branch_summary", "label", "custom", "custom_message", "context_edit", "usage"]
        {
            assert!(kinds.contains(kind), "{kind}");
        }
    }

    #[test]
    fn byte_limit_is_reached() {
        let bytes = generate(&Options { seed: 0, limit: Limit::Bytes(2_000_000), cwd: None });
        assert!(bytes.len() >= 2_000_000);
    }
}

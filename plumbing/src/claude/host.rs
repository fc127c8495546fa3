//! The Claude Code host behind the seam (`docs/architecture.md`, `docs/claude-code.md`).
//!
//! A transcript loads into the neutral [`host::Session`] with one node per conversation row
//! (`user`, `assistant`, `attachment`, `system` rows with a `uuid`), keyed by `uuid` and chained
//! by `parentUuid`; every other row (`queue-operation`, `api-request`, unknown types) stays in the
//! file's lines, byte-exact, and outside the tree. The view at a leaf is Claude Code's own: the
//! loader's chain ([`super::loader`]) and the messages it sends ([`super::project`](mod@super::project)). Each row
//! holding one `tool_result` is a foldable unit whose target is the `tool_use_id` (what
//! [`super::fork::fork`] takes); its content, as the regions see it, is the result's text. A
//! result that is already a placeholder (`[shaken:`, `<persisted-output>`, `<truncated-output>`)
//! is a tombstone: never folded or counted again. A fold is written as a fork
//! ([`WriteBack::Fork`]): nothing is ever appended to a transcript.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::loader::{load_at, Chain, LoadOptions};
use super::transcript::{as_str, Row, Transcript};
use super::{paths, unresumable, write};
use crate::host::error::{HostError, Result};
use crate::host::view::{Positions, Target, NO_EDIT};
use crate::host::{
    self, Block, BlockKind, Call, Content, ForkWrite, Header, Host, HostKind, HostSession, Node, Refusal, Reply, Role,
    SessionFile, Tool, TreeLine, Unit, View, Warning, Writer,
};
use crate::js::json::members;
use crate::output::shell_word;
use crate::Context;

/// The conversation row types (the rows with `uuid`/`parentUuid` that form the tree).
const CONVERSATION: [&str; 4] = ["user", "assistant", "attachment", "system"];

/// The Claude Code host (Claude Code 2.1.x).
pub struct Claude;

/// Claude Code's kind: `--host claude`.
pub const KIND: HostKind = HostKind::new("claude", "Claude Code");

/// The few fields of a row that detection and the store's import read.
#[derive(Deserialize)]
struct RowHead<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    uuid: Option<Cow<'a, str>>,
    #[serde(rename = "parentUuid", borrow, default)]
    parent_uuid: Option<Cow<'a, str>>,
    #[serde(rename = "sessionId", borrow, default)]
    session_id: Option<Cow<'a, str>>,
}

impl RowHead<'_> {
    fn is_conversation(&self) -> bool {
        self.uuid.is_some() && self.kind.as_deref().is_some_and(|k| CONVERSATION.contains(&k))
    }
}

impl Host for Claude {
    fn kind(&self) -> HostKind {
        KIND
    }

    fn accepts(&self, file: &SessionFile) -> std::result::Result<(), Refusal> {
        let refuse =
            |line, reason: &str| Err(Refusal { line, reason: format!("not a Claude Code transcript: {reason}") });
        let mut first_json = true;
        for (number, line) in (1..).zip(&file.lines) {
            let text = file.line_text(line);
            if text.trim().is_empty() {
                continue;
            }
            // Only lines that name a parentUuid can decide; the rest are skipped unparsed, except
            // the first, which tells a pi header (pi's files are never Claude Code's).
            let names_parent = memchr::memmem::find(text.as_bytes(), b"\"parentUuid\"").is_some();
            if !first_json && !names_parent {
                continue;
            }
            let Ok(head) = serde_json::from_str::<RowHead<'_>>(text) else { continue };
            if first_json && head.kind.as_deref() == Some("session") {
                return refuse(number, "its first row is a pi session header");
            }
            first_json = false;
            if names_parent && head.is_conversation() && head.session_id.is_some() {
                return Ok(());
            }
        }
        match unresumable::summary_only(file) {
            // Claude Code's, though it does not resume it: `load` says so.
            Some(_) => Ok(()),
            None => refuse(0, "no conversation row with uuid, parentUuid and sessionId"),
        }
    }

    fn load<'a>(&self, file: &'a SessionFile) -> Result<host::Session<'a>> {
        // `--host claude` skips detection: a file with no conversation row is still refused.
        if let Err(r) = self.accepts(file) {
            let at = match r.line {
                0 => file.display().into_owned(),
                n => format!("{}:{n}", file.display()),
            };
            return Err(HostError::refused(format!("{at}: {}", r.reason)));
        }
        host::file::check_lines(&file.path, file.lines.len())?;
        let data = ClaudeSession::read(file);
        if let Some(refused) = unresumable::refusal(file, &data.t) {
            return Err(refused);
        }
        let header = data.header(file);
        let nodes = data.nodes(file)?;
        let mut warnings: Vec<Warning> = data
            .t
            .bad_lines
            .iter()
            .map(|&line| Warning { line, message: "not a JSON row; Claude Code skips this line".into() })
            .collect();
        if let Some(line) = data.t.torn {
            warnings.push(Warning {
                line,
                message: "incomplete last line (Claude Code may be writing it); Claude Code skips it".into(),
            });
        }
        let mut session = host::Session::new(&Claude, file, header, nodes, Box::new(data));
        session.warnings = warnings;
        Ok(session)
    }

    fn tree_line(&self, text: &str, header: Option<u64>) -> TreeLine {
        if text.trim().is_empty() {
            return TreeLine::Skip;
        }
        let Ok(head) = serde_json::from_str::<RowHead<'_>>(text) else {
            return TreeLine::Warn("not a JSON row; Claude Code skips this line".into());
        };
        if head.is_conversation() {
            let id = head.uuid.map(Cow::into_owned);
            return TreeLine::Entry { id, parent: head.parent_uuid.map(Cow::into_owned) };
        }
        // Claude Code has no header line: the first other row naming the session stands for one,
        // so the store knows the session id.
        match (header, head.session_id) {
            (None, Some(id)) => TreeLine::Header { id: id.into_owned(), version: 0 },
            _ => TreeLine::Skip,
        }
    }

    fn default_session(&self, ctx: &Context) -> Result<PathBuf> {
        let projects = paths::projects_dir(|k| std::env::var(k).ok(), &ctx.home);
        let cwd = ctx.cwd.to_string_lossy();
        let newest =
            paths::project_dir(&projects, &cwd).and_then(|dir| paths::sessions_newest_first(&dir).into_iter().next());
        newest.ok_or_else(|| {
            HostError::refused(format!(
                "no Claude Code session for {} (looked in {})",
                ctx.cwd.display(),
                projects.join(paths::encode_cwd(&cwd)).display()
            ))
            .hint("name a transcript file, or run claude here first")
        })
    }

    fn session_roots(&self, ctx: &Context) -> Vec<PathBuf> {
        vec![paths::projects_dir(|k| std::env::var(k).ok(), &ctx.home)]
    }

    fn session_id_of_file(&self, file_name: &str) -> Option<String> {
        paths::session_id_of_file(file_name)
    }

    fn writer(&self) -> Writer {
        Writer::Fork(&Claude)
    }

    fn follow<'a>(
        &self,
        tail: &host::Tail,
        appended: &'a SessionFile,
        room: &'a std::cell::OnceCell<SessionFile>,
    ) -> Option<host::Followed<'a>> {
        super::tail::ClaudeTail::of_tail(tail)?.follow(appended, room)
    }

    fn parse_content<'r>(&self, raw: Option<&'r RawValue>) -> Content<'r> {
        parse_content(raw)
    }

    fn foldable_content(&self, role: Role, content: &Content<'_>) -> bool {
        // The fork replaces string results only (`claude::fork`): a string parses to one text
        // block whose raw JSON is the string itself.
        role == Role::ToolResult
            && matches!(content, Content::Blocks(b) if b.len() == 1 && b[0].raw.get().starts_with('"'))
    }

    fn foldable_inputs(&self, role: Role, content: &Content<'_>) -> bool {
        // The fork splices a `tool_use` block's `input` in an assistant row (`claude::write`).
        role == Role::Assistant && matches!(content, Content::Blocks(_))
    }
}

impl host::Forks for Claude {
    /// `cd <cwd> && claude --resume <id>`, each word quoted for a POSIX shell when it needs it
    /// (the id is a uuid, checked before anything was written; quoted all the same, as a word
    /// printed for a shell).
    fn resume_command(&self, f: &host::Forked) -> String {
        let cwd = f.cwd.as_deref().unwrap_or(".");
        format!("cd {} && claude --resume {}", shell_word(cwd), shell_word(&f.session_id))
    }

    fn file_word(&self) -> &'static str {
        "transcript"
    }

    fn row_session_id(&self, text: &str) -> Option<String> {
        serde_json::from_str::<RowHead<'_>>(text).ok()?.session_id.map(Cow::into_owned)
    }
}

/// Parses a Claude Code `content` value: a string becomes one text block (its raw JSON the
/// string), blocks keep their raw bytes; `tool_result` blocks name the call they answer.
pub fn parse_content(raw: Option<&RawValue>) -> Content<'_> {
    let Some(raw) = raw else { return Content::Other };
    let text = raw.get();
    if text.starts_with('"') {
        return match serde_json::from_str::<Cow<'_, str>>(text) {
            Ok(s) => Content::Blocks(vec![Block { raw, kind: BlockKind::Text(s) }]),
            Err(_) => Content::Other,
        };
    }
    if !text.starts_with('[') {
        return Content::Other;
    }
    let Ok(items) = serde_json::from_str::<Vec<&RawValue>>(text) else { return Content::Other };
    Content::Blocks(items.into_iter().map(parse_block).collect())
}

#[derive(Deserialize)]
struct BlockHead<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    thinking: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tool_use_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    source: Option<ImageSource<'a>>,
}

#[derive(Deserialize)]
struct ImageSource<'a> {
    #[serde(borrow, default)]
    media_type: Option<Cow<'a, str>>,
}

fn parse_block(raw: &RawValue) -> Block<'_> {
    let kind = match serde_json::from_str::<BlockHead<'_>>(raw.get()) {
        Ok(h) => match h.kind.as_deref() {
            Some("text") => BlockKind::Text(h.text.unwrap_or_default()),
            Some("thinking") => BlockKind::Thinking(h.thinking.unwrap_or_default()),
            Some("image") => BlockKind::Image { mime: h.source.and_then(|s| s.media_type) },
            Some("tool_use") => BlockKind::ToolCall { id: h.id, name: h.name.unwrap_or_default(), arguments: h.input },
            Some("tool_result") => BlockKind::ToolResult { call_id: h.tool_use_id },
            _ => BlockKind::Other,
        },
        Err(_) => BlockKind::Other,
    };
    Block { raw, kind }
}

/// A row's `message` as text, borrowed from the file (`None` when it is not an object).
fn message_of<'a>(file: &'a SessionFile, row: &Row) -> Option<&'a str> {
    row.message_in(file.line_text(&file.lines[row.line - 1]))
}

/// A `tool_result` block's fields that the view reads.
#[derive(Deserialize)]
pub(super) struct ResultHead<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    tool_use_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) content: Option<&'a RawValue>,
}

/// The one `tool_result` a user row holds: the call it answers and its content, as written.
pub(super) struct ResultRef<'a> {
    pub(super) call_id: Cow<'a, str>,
    pub(super) content: Option<&'a RawValue>,
}

/// One conversation row's parts the seam hands out, borrowed from the file.
pub(super) struct NodeData<'a> {
    /// `message.content`, as written.
    pub(super) content: Option<&'a RawValue>,
    /// The row's tool result, when it holds exactly one.
    pub(super) result: Option<ResultRef<'a>>,
}

/// A loaded transcript: the rows as the loader reads them, and each node's parts.
pub struct ClaudeSession<'a> {
    /// The transcript (a copy of the file's bytes, parsed) the loader and projection read.
    pub(super) t: Transcript,
    /// Node index → row index.
    pub(super) rows: Vec<usize>,
    /// Row index → node index, for conversation rows.
    node_of_row: Vec<Option<usize>>,
    /// Per node, the parts borrowed from the file.
    pub(super) nodes: Vec<NodeData<'a>>,
    /// Nodes that are the first row of their API message (where its usage is reported once).
    first_of_message: HashSet<usize>,
    pub(super) options: LoadOptions,
    /// When the file is rows appended after a measured view ([`super::tail`]): what that view's
    /// end lends them. Its view is then every row, in file order (the new context positions).
    pub(super) follows: Option<Follows>,
    /// When the rows are part of a longer file ([`super::tail`]).
    pub(super) part_of: Option<Box<Part>>,
}

/// What rows that are part of a longer file know of it ([`ClaudeSession::part_of`]).
pub(super) struct Part {
    /// The file's session id (Claude Code's placeholder names it).
    pub(super) session_id: Option<String>,
    /// For rows a restart read (`super::tail::ClaudeTail::restart`): the file's figures, and
    /// where the rows are in it.
    pub(super) whole: Option<super::tail::Whole>,
}

/// What rows appended after a measured view take from the old rows ([`ClaudeSession::follows`]).
pub(super) struct Follows {
    /// The old context's calls a new result may answer: id, tool name, arguments.
    pub(super) pending: Vec<(String, String, Option<Box<RawValue>>)>,
}

impl<'a> ClaudeSession<'a> {
    pub(super) fn read(file: &'a SessionFile) -> ClaudeSession<'a> {
        let t = Transcript::parse(file.share());
        let mut rows = Vec::new();
        let mut node_of_row = vec![None; t.rows.len()];
        let mut nodes = Vec::new();
        let mut first_of_message = HashSet::new();
        // A message's first row by uuid: a row written again under the same uuid (the loader
        // takes the later copy) reports the usage as the first did.
        let mut first_uuid: HashMap<&str, Option<&str>> = HashMap::new();
        for (i, row) in t.rows.iter().enumerate() {
            if !row.is_conversation() {
                continue;
            }
            let node = rows.len();
            node_of_row[i] = Some(node);
            rows.push(i);
            let uuid = row.uuid();
            let first = row.message_id().is_none_or(|id| *first_uuid.entry(id).or_insert(uuid) == uuid);
            if row.kind() == "assistant" && first {
                first_of_message.insert(node);
            }
            let content = message_of(file, row).and_then(|m| members(m, &["content"])?[0]);
            let result = match row.kind() == "user" && row.has_tool_result() {
                true => only_result(content),
                false => None,
            };
            nodes.push(NodeData { content, result });
        }
        let options = LoadOptions::from_env();
        ClaudeSession { t, rows, node_of_row, nodes, first_of_message, options, follows: None, part_of: None }
    }

    /// The session id the rows carry (rows of a longer file: the whole file's).
    pub(super) fn session_id(&self) -> Option<&str> {
        match &self.part_of {
            Some(part) => part.session_id.as_deref(),
            None => self.t.session_id(),
        }
    }

    pub(super) fn header(&self, file: &'a SessionFile) -> Option<Header<'a>> {
        let row = self.t.rows.iter().find(|r| r.session_id().is_some())?;
        Some(Header {
            line: row.line,
            raw: file.line_raw(&file.lines[row.line - 1]),
            id: Cow::Owned(row.session_id()?.to_string()),
            cwd: self.t.cwd().map(|c| Cow::Owned(c.to_string())),
            parent_session: None,
        })
    }

    /// The tree's nodes, one a conversation row; refused by line when a row is past 4 GiB.
    pub(super) fn nodes(&self, file: &'a SessionFile) -> Result<Vec<Node<'a>>> {
        self.rows
            .iter()
            .map(|&i| {
                let row = &self.t.rows[i];
                // Loading refused a file of more than `MAX_LINES` lines: the number fits 32 bits.
                Node::new(
                    row.line as u32,
                    file.line_raw(&file.lines[row.line - 1]),
                    row.kind(),
                    row.uuid().unwrap_or_default(),
                    row.parent_uuid(),
                )
                .ok_or_else(|| HostError::refused(format!("{}:{}: a row longer than 4 GiB", file.display(), row.line)))
            })
            .collect()
    }

    pub(super) fn row(&self, node: usize) -> &Row {
        &self.t.rows[self.rows[node]]
    }

    /// The loader's chain at `leaf` (a node; `None`: Claude Code's own leaf).
    fn chain(&self, leaf: Option<usize>) -> Chain {
        load_at(&self.t, self.options, leaf.map(|n| self.rows[n]))
    }

    /// The chain's rows as nodes.
    fn chain_nodes(&self, chain: &Chain) -> Vec<usize> {
        chain.rows.iter().filter_map(|&r| self.node_of_row[r]).collect()
    }

    /// The view of `context` (the chain's rows as nodes): a tool result's tool is the call of
    /// its id among the context's calls, after those of `before` (calls made before the context:
    /// a followed file's old calls).
    fn view_of<'s>(
        &'s self,
        session: &'s host::Session<'a>,
        chain: Chain,
        context: Vec<usize>,
        before: Vec<Call<'s>>,
    ) -> View<'s, 'a> {
        let mut calls: Vec<Call<'s>> = Vec::new();
        // The assistant rows holding calls: a fold of their inputs names the row (its uuid).
        // Per context position, whether its row holds calls.
        let callers: Vec<bool> = context
            .iter()
            .map(|&n| {
                let before = calls.len();
                calls.extend(self.calls_of(n));
                calls.len() > before
            })
            .collect();
        let by_id: HashMap<&str, &Call<'s>> = before.iter().chain(&calls).map(|c| (c.id.as_ref(), c)).collect();
        let units = context
            .iter()
            .zip(callers)
            .map(|(&n, caller)| {
                let role = self.role(n);
                let result = self.nodes[n].result.as_ref().filter(|_| role == Role::ToolResult);
                let tool = result.map(|r| {
                    let call = by_id.get(r.call_id.as_ref());
                    Tool {
                        name: call.map(|c| c.name.clone()).unwrap_or_default(),
                        call_id: Some(r.call_id.clone()),
                        arguments: call.and_then(|c| c.arguments),
                    }
                });
                let caller = caller.then(|| self.row(n).uuid()).flatten();
                let tombstone = match (result, caller) {
                    (Some(r), _) => crate::regions::claude_shake::is_tombstone(&text_of(&parse_content(r.content))),
                    // A row whose call's input a fold replaced is never folded again.
                    (None, Some(_)) => self.nodes[n].content.is_some_and(|c| write::holds_folded_input(c.get())),
                    (None, None) => false,
                };
                Unit {
                    index: n,
                    role,
                    target: result.map(|r| Target(&r.call_id)).or(caller.map(Target)),
                    tool: tool.map(Box::new),
                    tombstone,
                    omitted: false,
                    edit: NO_EDIT,
                }
            })
            .collect();
        let path = context.clone();
        let leaf = chain.leaf.and_then(|r| self.node_of_row[r]);
        let view =
            super::view::ClaudeView { host: self, chain, positions: Positions::new(&context, session.entries.len()) };
        View::new(session, leaf, path, context, units, calls, Box::new(view))
    }

    /// The last user or assistant node: a followed file's leaf, when it has one (its rows are
    /// on no side chain).
    pub(super) fn last_main(&self) -> Option<usize> {
        (0..self.nodes.len()).rev().find(|&n| matches!(self.row(n).kind(), "user" | "assistant"))
    }

    /// The tool calls of node `n` (none unless it is an assistant row).
    pub(super) fn calls_of(&self, n: usize) -> Vec<Call<'a>> {
        if self.row(n).kind() != "assistant" {
            return Vec::new();
        }
        let Content::Blocks(blocks) = parse_content(self.nodes[n].content) else { return Vec::new() };
        let calls = blocks.into_iter().filter_map(|block| match block.kind {
            BlockKind::ToolCall { id: Some(id), name, arguments } => Some(Call { id, name, arguments }),
            _ => None,
        });
        calls.collect()
    }

    /// The neutral role of what node `n` gives the model.
    fn role(&self, n: usize) -> Role {
        let row = self.row(n);
        match row.kind() {
            "user" if row.has_tool_result() => Role::ToolResult,
            "user" if row.is_compact_summary() => Role::Summary,
            "user" if row.is_meta() => Role::Custom,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "attachment" => Role::Custom,
            "system" => Role::System,
            _ => Role::Other,
        }
    }

    /// The content a fold sees for node `n`: a tool result's own content, else the message's.
    pub(super) fn own(&self, n: usize) -> Option<&'a RawValue> {
        let node = &self.nodes[n];
        match &node.result {
            Some(r) => r.content,
            None => node.content,
        }
    }
}

/// The one `tool_result` of a row's content, when there is exactly one.
fn only_result(content: Option<&RawValue>) -> Option<ResultRef<'_>> {
    let blocks = serde_json::from_str::<Vec<ResultHead<'_>>>(content?.get()).ok()?;
    let mut results = blocks.into_iter().filter(|b| b.kind.as_deref() == Some("tool_result"));
    let one = results.next()?;
    if results.next().is_some() {
        return None;
    }
    Some(ResultRef { call_id: one.tool_use_id?, content: one.content })
}

/// The text of a content value (a string, or its text blocks joined with newlines).
fn text_of(content: &Content<'_>) -> String {
    content.joined_text()
}

impl<'a> HostSession<'a> for ClaudeSession<'a> {
    fn choose_model(&mut self, model: &str) {
        self.t.model = Some(model.to_string());
    }

    fn view<'s>(&'s self, session: &'s host::Session<'a>, leaf: Option<usize>) -> Result<View<'s, 'a>> {
        if let Some(follows) = &self.follows {
            let leaf = self.last_main();
            let chain = Chain {
                rows: self.rows.clone(),
                leaf: leaf.map(|n| self.rows[n]),
                gate_start: 0,
                relinked: false,
                looked: None,
                open: true,
                answerable: None,
                anchored: false,
                anchor: None,
                reused: false,
                survivors: None,
                loose: Vec::new(),
            };
            let pending = follows.pending.iter().map(|(id, name, arguments)| Call {
                id: Cow::Borrowed(id.as_str()),
                name: Cow::Borrowed(name.as_str()),
                arguments: arguments.as_deref(),
            });
            return Ok(self.view_of(session, chain, (0..self.nodes.len()).collect(), pending.collect()));
        }
        let chain = self.chain(leaf);
        if leaf.is_some() && chain.leaf.is_none() {
            let n = leaf.unwrap_or_default();
            return Err(HostError::refused(format!(
                "{}:{}: row {} is not part of what Claude Code loads (it is before the last compaction of a file over 5 MiB, or dropped by a compaction's relink)",
                session.file.display(),
                session.entries[n].line(),
                session.entries[n].id()
            )));
        }
        let context = self.chain_nodes(&chain);
        Ok(self.view_of(session, chain, context, Vec::new()))
    }

    fn context(&self, path: &[usize]) -> Vec<usize> {
        match path.last() {
            Some(&leaf) => self.chain_nodes(&self.chain(Some(leaf))),
            None => Vec::new(),
        }
    }

    fn default_leaf(&self, _session: &host::Session<'a>) -> Option<usize> {
        match self.follows {
            Some(_) => self.last_main(),
            None => self.chain(None).leaf.and_then(|r| self.node_of_row[r]),
        }
    }

    fn timestamp(&self, index: usize) -> Option<Cow<'a, str>> {
        self.row(index).timestamp().map(|t| Cow::Owned(t.to_string()))
    }

    fn own_content(&self, index: usize) -> Option<&'a RawValue> {
        self.own(index)
    }

    fn reply(&self, index: usize) -> Option<Reply<'a>> {
        let row = self.row(index);
        if row.kind() != "assistant" || !self.first_of_message.contains(&index) {
            return None;
        }
        let [model, usage] = members(self.t.message(row)?, &["model", "usage"])?;
        let model = as_str(model).filter(|m| m != "<synthetic>")?;
        // A row without usage still names its model (the default tokenizer is the model's).
        let usage = usage.and_then(|u| {
            members(
                u.get(),
                &["input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "cache_creation"],
            )
        });
        let n = |raw: Option<&RawValue>| raw.and_then(|r| serde_json::from_str::<u64>(r.get()).ok()).unwrap_or(0);
        let [input, write, read, split] = usage.unwrap_or_default();
        let prompt = n(input) + n(write) + n(read);
        let long = split.and_then(|s| members(s.get(), &["ephemeral_1h_input_tokens"])).map_or(0, |[l]| n(l));
        let cache = host::CacheUse {
            input: n(input),
            cache_read: n(read),
            cache_write: n(write),
            cache_write_1h: long,
            cost: None,
        };
        Some(Reply {
            provider: Some(Cow::Borrowed("anthropic")),
            model: Some(Cow::Owned(model.into_owned())),
            prompt_tokens: (prompt > 0).then_some(prompt),
            cache: (prompt > 0).then_some(cache),
        })
    }

    fn speaker(&self, index: usize) -> Option<Role> {
        Some(self.role(index))
    }

    fn role_label(&self, index: usize) -> String {
        match self.role(index) {
            Role::ToolResult => "tool_result".to_string(),
            Role::Summary => "compact_summary".to_string(),
            _ => self.row(index).kind().to_string(),
        }
    }

    fn entry_label(&self, index: usize) -> String {
        self.role_label(index)
    }

    fn is_plain(&self, _index: usize) -> bool {
        // An appended attachment can join the tool result before it, and an assistant row can
        // join an earlier message: no row is known to leave what came before unchanged.
        false
    }

    fn write_fork(
        &self,
        session: &host::Session<'a>,
        edits: &[(String, &RawValue)],
        how: ForkWrite,
    ) -> Result<host::Forked> {
        super::write_back::write_fork(self, session, edits, how)
    }

    fn export(&self, _ctx: &Context, session: &host::Session<'a>, _leaf: usize) -> Result<host::Export<'a>> {
        Err(HostError::refused(format!("{}: shake does not export Claude Code sessions", session.file.display()))
            .hint("Claude Code forks a session itself: claude --resume <id> --fork-session"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> SessionFile {
        SessionFile::from_bytes("t.jsonl".into(), text.as_bytes().to_vec())
    }

    const ROWS: &str = concat!(
        "{\"type\":\"queue-operation\",\"sessionId\":\"s1\"}\n",
        "{\"parentUuid\":null,\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"hi\"},\"uuid\":\"u1\",\"sessionId\":\"s1\",\"cwd\":\"/w\"}\n",
        "{\"parentUuid\":\"u1\",\"type\":\"assistant\",\"message\":{\"id\":\"m1\",\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"Bash\",\"input\":{\"command\":\"ls\"}}]},\"uuid\":\"a1\",\"sessionId\":\"s1\"}\n",
        "{\"parentUuid\":\"a1\",\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":[{\"tool_use_id\":\"t1\",\"type\":\"tool_result\",\"content\":\"out\\nput\"}]},\"uuid\":\"u2\",\"sessionId\":\"s1\"}\n",
        "{\"type\":\"mystery\",\"sessionId\":\"s1\"}\n",
        "{\"parentUuid\":\"u2\",\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"to",
    );

    #[test]
    fn detects_transcripts_by_their_rows_and_refuses_pi_files() {
        assert!(Claude.accepts(&file(ROWS)).is_ok());
        let pi = "{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n{\"parentUuid\":null,\"type\":\"user\",\"uuid\":\"u\",\"sessionId\":\"s\"}\n";
        assert_eq!(Claude.accepts(&file(pi)).unwrap_err().line, 1);
        assert!(Claude.accepts(&file("{\"type\":\"queue-operation\",\"sessionId\":\"s\"}\n")).is_err());
    }

    #[test]
    fn loads_rows_as_nodes_with_a_tool_result_unit() {
        let f = file(ROWS);
        let s = Claude.load(&f).unwrap();
        let ids: Vec<&str> = s.entries.iter().map(|e| e.id()).collect();
        assert_eq!(ids, ["u1", "a1", "u2"]);
        assert_eq!(s.header.as_ref().map(|h| h.id.as_ref()), Some("s1"));
        assert_eq!(s.warnings.len(), 1, "the torn last line");
        assert_eq!(s.default_leaf(), Some(2));
        let v = View::at(&s, s.default_leaf()).unwrap();
        assert_eq!(v.context, [0, 1, 2]);
        let unit = &v.units[2];
        assert_eq!((unit.role, unit.target.as_deref()), (Role::ToolResult, Some("t1")));
        assert_eq!(unit.tool.as_ref().map(|t| t.name.as_ref()), Some("Bash"));
        let content = v.content(2).unwrap();
        assert_eq!(content.joined_text(), "out\nput");
        assert!(Claude.foldable_content(Role::ToolResult, &content));
        assert_eq!(v.to_json()["messages"].as_array().map(Vec::len), Some(3));
        let lines: Vec<TreeLine> = ROWS.lines().take(5).map(|l| Claude.tree_line(l, None)).collect();
        assert_eq!(lines[0], TreeLine::Header { id: "s1".into(), version: 0 });
        assert_eq!(lines[2], TreeLine::Entry { id: Some("a1".into()), parent: Some("u1".into()) });
        assert_eq!(Claude.tree_line("{\"type\":\"mystery\",\"sessionId\":\"s1\"}", Some(0)), TreeLine::Skip);
    }

    #[test]
    fn placeholders_are_tombstones() {
        let text = ROWS.replace("out\\nput", "<persisted-output>\\nOutput too large");
        let f = file(&text);
        let s = Claude.load(&f).unwrap();
        let v = View::at(&s, Some(2)).unwrap();
        assert!(v.units[2].tombstone);
    }

    /// Finding 28.11: every word of the printed command is one shell word, whatever it holds.
    #[test]
    fn the_resume_command_quotes_each_word_for_a_shell() {
        use host::Forks;
        let forked = |cwd: &str, id: &str| host::Forked {
            session_id: id.to_string(),
            path: "p".into(),
            cwd: Some(cwd.to_string()),
            saved: Vec::new(),
            reused: false,
            in_place: false,
            carried: 0,
        };
        let plain = forked("/home/u/proj", "2ae52f18-adcf-4b1a-8aef-d430e953f9b2");
        let resume = |f| Claude.resume_command(&f);
        assert_eq!(resume(plain), "cd /home/u/proj && claude --resume 2ae52f18-adcf-4b1a-8aef-d430e953f9b2");
        let crafted = forked("/it's here", "x;touch PWNED;#");
        assert_eq!(resume(crafted), "cd '/it'\\''s here' && claude --resume 'x;touch PWNED;#'");
    }
}

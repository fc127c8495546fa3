//! A toy host, compiled only for the tests (feature `fixture-host`): the smallest host that
//! implements the seam, to prove a host is one module and one line in the registry
//! (`docs/architecture.md`, "Adding a host"). Its format is JSON lines:
//!
//! ```text
//! {"toy":1,"session":"s1","cwd":"/p"}                          the header, first
//! {"id":"a","parent":null,"role":"user","content":"hi"}        a message (user, assistant, tool)
//! {"id":"b","parent":"a","role":"tool","tool":"bash","content":[{"type":"text","text":"…"}]}
//! {"id":"e","parent":"b","edit":"b","content":[…]}             an edit shake appends
//! {"id":"l","parent":"b","log":"shake","data":{…}}             a log record shake appends
//! ```
//!
//! The context at a leaf is the messages of its path, each with its latest edit's content.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::host::error::{HostError, Result};
use crate::host::view::{Positions, Target, NO_EDIT};
use crate::host::Pieces;
use crate::host::{
    self, Appender, Block, BlockKind, Content, Header, Host, HostKind, HostSession, HostView, Node, Projected, Refusal,
    Reply, Role, Session, SessionFile, Tool, TreeLine, Unit, View, Writer,
};
use crate::Context;

/// The toy host.
pub struct Toy;

/// The toy host's kind: `--host toy`.
const KIND: HostKind = HostKind::new("toy", "the toy agent");

/// One line of a toy file, as read.
#[derive(Deserialize)]
struct Row<'a> {
    toy: Option<u64>,
    #[serde(borrow)]
    session: Option<Cow<'a, str>>,
    #[serde(borrow)]
    cwd: Option<Cow<'a, str>>,
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    parent: Option<Cow<'a, str>>,
    #[serde(borrow)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow)]
    tool: Option<Cow<'a, str>>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    #[serde(borrow)]
    edit: Option<Cow<'a, str>>,
    #[serde(borrow)]
    log: Option<Cow<'a, str>>,
    #[serde(borrow)]
    data: Option<&'a RawValue>,
}

/// A content block: `{"type":"text","text":…}`, or another type, kept as it is.
#[derive(Deserialize)]
struct TextBlock<'a> {
    #[serde(borrow, rename = "type")]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
}

impl Row<'_> {
    fn role(&self) -> Option<Role> {
        Some(match self.role.as_deref()? {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::ToolResult,
            _ => Role::Other,
        })
    }
}

impl Host for Toy {
    fn kind(&self) -> HostKind {
        KIND
    }

    fn accepts(&self, file: &SessionFile) -> std::result::Result<(), Refusal> {
        let first = file.lines.first().map(|l| file.line_text(l)).unwrap_or_default();
        match serde_json::from_str::<Row<'_>>(first) {
            Ok(row) if row.toy.is_some() => Ok(()),
            _ => Err(Refusal { line: 1, reason: "not a toy session: no toy header".into() }),
        }
    }

    fn load<'a>(&self, file: &'a SessionFile) -> Result<Session<'a>> {
        let mut header = None;
        let (mut nodes, mut rows) = (Vec::new(), Vec::new());
        for (n, line) in (1..).zip(&file.lines) {
            let (text, raw) = (file.line_text(line), file.line_raw(line));
            let row: Row<'a> = serde_json::from_str(text)
                .map_err(|e| HostError::refused(format!("{}:{n}: not a toy line: {e}", file.display())).caused_by(e))?;
            if row.toy.is_some() {
                let id = row.session.clone().unwrap_or_default();
                header = Some(Header { line: n as usize, raw, id, cwd: row.cwd.clone(), parent_session: None });
                continue;
            }
            let kind = if row.edit.is_some() {
                "edit"
            } else if row.log.is_some() {
                "log"
            } else {
                "message"
            };
            let id = row.id.as_deref().unwrap_or_default();
            let node = Node::new(n, raw, kind, id, row.parent.as_deref())
                .ok_or_else(|| HostError::refused(format!("{}:{n}: line too long", file.display())))?;
            nodes.push(node);
            rows.push(row);
        }
        Ok(Session::new(&Toy, file, header, nodes, Box::new(ToySession { rows })))
    }

    fn tree_line(&self, text: &str, header: Option<u64>) -> TreeLine {
        if text.trim().is_empty() {
            return TreeLine::Skip;
        }
        match serde_json::from_str::<Row<'_>>(text) {
            Ok(Row { toy: Some(v), session, .. }) if header.is_none() => {
                TreeLine::Header { id: session.unwrap_or_default().into_owned(), version: v }
            }
            Ok(Row { id: Some(id), parent, .. }) => {
                TreeLine::Entry { id: Some(id.into_owned()), parent: parent.map(Cow::into_owned) }
            }
            _ => TreeLine::Warn("not a toy line".into()),
        }
    }

    fn default_session(&self, _ctx: &Context) -> Result<PathBuf> {
        Err(HostError::refused("the toy agent keeps no sessions folder").hint("name a toy session file"))
    }

    fn session_roots(&self, _ctx: &Context) -> Vec<PathBuf> {
        Vec::new()
    }

    fn session_id_of_file(&self, _file_name: &str) -> Option<String> {
        None
    }

    fn writer(&self) -> Writer {
        Writer::Append
    }

    fn parse_content<'r>(&self, raw: Option<&'r RawValue>) -> Content<'r> {
        let Some(raw) = raw else { return Content::Other };
        if let Ok(text) = serde_json::from_str::<Cow<'r, str>>(raw.get()) {
            return Content::Text(text);
        }
        let Ok(blocks) = serde_json::from_str::<Vec<&'r RawValue>>(raw.get()) else { return Content::Other };
        let block = |raw: &'r RawValue| {
            let kind = match serde_json::from_str::<TextBlock<'r>>(raw.get()) {
                Ok(TextBlock { kind, text: Some(text) }) if kind == "text" => BlockKind::Text(text),
                _ => BlockKind::Other,
            };
            Block { raw, kind }
        };
        Content::Blocks(blocks.into_iter().map(block).collect())
    }

    fn foldable_content(&self, _role: Role, content: &Content<'_>) -> bool {
        !matches!(content, Content::Other)
    }
}

/// A loaded toy file: each entry's row, by entry index.
struct ToySession<'a> {
    rows: Vec<Row<'a>>,
}

impl<'a> HostSession<'a> for ToySession<'a> {
    fn view<'s>(&'s self, session: &'s Session<'a>, leaf: Option<usize>) -> Result<View<'s, 'a>> {
        let path = match leaf {
            Some(leaf) => session
                .path(leaf)
                .map_err(|e| HostError::refused(format!("{}: {e}", session.file.display())).caused_by(e))?,
            None => Vec::new(),
        };
        let context = self.context(&path);
        // Each target's latest edit on the path wins.
        let mut edits: HashMap<&str, usize> = HashMap::new();
        for &i in &path {
            if let Some(target) = self.rows[i].edit.as_deref() {
                edits.insert(target, i);
            }
        }
        let units = context
            .iter()
            .map(|&i| {
                let (row, id) = (&self.rows[i], session.entries[i].id());
                let tool = row
                    .tool
                    .as_deref()
                    .map(|name| Box::new(Tool { name: Cow::Borrowed(name), call_id: None, arguments: None }));
                let edit = edits.get(id).map_or(NO_EDIT, |&e| e as u32);
                let role = row.role().unwrap_or(Role::Other);
                Unit { index: i, role, target: Some(Target(id)), tool, tombstone: false, omitted: false, edit }
            })
            .collect();
        let edit_of: HashMap<usize, usize> =
            context.iter().filter_map(|&i| Some((i, *edits.get(session.entries[i].id())?))).collect();
        let data = ToyView { rows: &self.rows, positions: Positions::new(&context, self.rows.len()), edit_of };
        Ok(View::new(session, leaf, path, context, units, Vec::new(), Box::new(data)))
    }

    fn context(&self, path: &[usize]) -> Vec<usize> {
        path.iter().copied().filter(|&i| self.rows[i].role.is_some()).collect()
    }

    fn record(&self, index: usize, record_type: &str) -> Option<&'a RawValue> {
        let row = &self.rows[index];
        row.data.filter(|_| row.log.as_deref() == Some(record_type))
    }

    fn timestamp(&self, _index: usize) -> Option<Cow<'a, str>> {
        None
    }

    fn own_content(&self, index: usize) -> Option<&'a RawValue> {
        self.rows[index].content.filter(|_| self.rows[index].role.is_some())
    }

    fn is_edit(&self, index: usize) -> bool {
        self.rows[index].edit.is_some()
    }

    fn edit_raw(&self, index: usize) -> Option<&'a RawValue> {
        self.rows[index].content.filter(|_| self.is_edit(index))
    }

    fn reply(&self, _index: usize) -> Option<Reply<'a>> {
        None
    }

    fn role_label(&self, index: usize) -> String {
        self.rows[index].role.as_deref().unwrap_or("none").to_string()
    }

    fn entry_label(&self, index: usize) -> String {
        self.role_label(index)
    }

    fn appender(&self, _session: &Session<'a>) -> Result<Box<dyn Appender>> {
        Ok(Box::new(ToyAppender { next: 0 }))
    }

    fn export(&self, _ctx: &Context, session: &Session<'a>, _leaf: usize) -> Result<host::Export<'a>> {
        Err(HostError::refused(format!("{}: the toy agent has no fork to export to", session.file.display())))
    }
}

/// Writes the lines of one toy batch.
struct ToyAppender {
    next: u64,
}

impl ToyAppender {
    fn line(out: &mut Vec<u8>, id: &str, parent: Option<&str>, field: (&str, &str), payload: (&str, &RawValue)) {
        let value = json!({"id": id, "parent": parent, field.0: field.1});
        let head = value.to_string();
        out.extend_from_slice(&head.as_bytes()[..head.len() - 1]);
        out.extend_from_slice(format!(",\"{}\":{}}}", payload.0, payload.1.get()).as_bytes());
    }
}

impl Appender for ToyAppender {
    fn fresh_id(&mut self, session: &Session<'_>) -> String {
        loop {
            self.next += 1;
            let id = format!("toy{}", self.next);
            if session.index_of(&id).is_none() {
                return id;
            }
        }
    }

    fn log_line(&self, out: &mut Vec<u8>, id: &str, parent: Option<&str>, record_type: &str, data: &RawValue) {
        ToyAppender::line(out, id, parent, ("log", record_type), ("data", data));
    }

    fn edit_line(&self, out: &mut Vec<u8>, id: &str, parent: Option<&str>, target: &str, content: &RawValue) {
        ToyAppender::line(out, id, parent, ("edit", target), ("content", content));
    }
}

/// One leaf's context of a toy file.
struct ToyView<'s, 'a> {
    rows: &'s [Row<'a>],
    positions: Positions,
    /// Context entry → the edit that wins for it.
    edit_of: HashMap<usize, usize>,
}

impl<'s> ToyView<'s, '_> {
    fn raw(&self, index: usize) -> Option<&'s RawValue> {
        let from = self.edit_of.get(&index).copied().unwrap_or(index);
        self.rows[from].content
    }
}

impl<'s> HostView<'s> for ToyView<'s, '_> {
    fn projected(&self, index: usize) -> Projected<'s> {
        match self.edit_of.get(&index) {
            Some(&e) => Projected::Replaced(self.rows[e].content),
            None => Projected::Raw,
        }
    }

    fn content(&self, index: usize) -> Option<Content<'s>> {
        Some(Toy.parse_content(self.raw(index)))
    }

    fn edit_target(&self, index: usize) -> Option<Cow<'s, str>> {
        self.rows[index].edit.as_deref().map(Cow::Borrowed)
    }

    fn replacement(&self, edit: usize) -> Option<&'s RawValue> {
        self.rows[edit].content
    }

    fn positions(&self) -> &Positions {
        &self.positions
    }

    fn pieces(&self, _pos: usize, index: usize, sink: &mut dyn Pieces) {
        sink.text(&Toy.parse_content(self.raw(index)).joined_text());
        sink.end_message();
    }

    fn pieces_with(&self, _index: usize, content: &Content<'_>, sink: &mut dyn Pieces) {
        sink.text(&content.joined_text());
        sink.end_message();
    }

    fn messages_json(&self, _pos: usize, index: usize) -> Vec<Value> {
        let content: Value = self.raw(index).and_then(|r| serde_json::from_str(r.get()).ok()).unwrap_or(Value::Null);
        vec![json!({"role": self.rows[index].role, "content": content})]
    }

    fn to_json(&self, context: &[usize]) -> Value {
        Value::Array(context.iter().enumerate().flat_map(|(pos, &i)| self.messages_json(pos, i)).collect())
    }
}

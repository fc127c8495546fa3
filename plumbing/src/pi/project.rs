//! The projection: what pi 1.6.0 sends the model for a leaf (`buildSessionProjection`).
//!
//! [`Projection`] holds the compaction-aware context list and the winning edit per target, as
//! entry indexes, and is the pi side of a neutral [`View`]; [`Projection::to_json`] renders the
//! exact JSON pi's own code returns.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{self, Write};
use std::ops::Range;

use serde_json::value::RawValue;
use serde_json::Value;

use super::entry::{as_str, is_null, is_truthy, Entry, EntryType};
use super::message::{calls_of, parse_content, Head};
use super::session::Session;
use crate::host::view::{Positions, Target, NO_EDIT};
use crate::host::{self, Call, Content, Cycle, Projected, Role, Tool, Unit, View};
use crate::js::{self, Js};
use crate::time::parse_iso_millis;

/// About how many bytes of `entries` [`Projection::write_json`] gathers before it writes them.
const CHUNK: usize = 64 << 10;

/// One message of `project --json`'s output: borrowed from the file as its line writes it, or a
/// range of the bytes built for it.
enum Part<'a> {
    Raw(&'a str),
    Built(Range<usize>),
}

impl Part<'_> {
    fn bytes<'b>(&'b self, built: &'b [u8]) -> &'b [u8] {
        match self {
            Part::Raw(raw) => raw.as_bytes(),
            Part::Built(range) => &built[range.clone()],
        }
    }
}

/// Appends `bytes` to `head`, flushing it at [`CHUNK`]; a message bigger than that (a 100 MB
/// line) goes out as it is, without a second copy.
fn emit(head: &mut Vec<u8>, out: &mut dyn Write, bytes: &[u8]) -> io::Result<()> {
    if bytes.len() < CHUNK {
        head.extend_from_slice(bytes);
    } else {
        out.write_all(head)?;
        head.clear();
        out.write_all(bytes)?;
    }
    if head.len() >= CHUNK {
        out.write_all(head)?;
        head.clear();
    }
    Ok(())
}

/// Why a leaf cannot be projected.
#[derive(Debug, thiserror::Error)]
pub enum ProjectError {
    /// The path loops.
    #[error("{path}: {cycle}")]
    Cycle { path: String, cycle: Cycle },
    /// A winning `context_edit` has no `replacement` key: pi throws when it projects it.
    #[error("{path}:{line}: context_edit {id} has no \"replacement\"; pi cannot build context for this branch")]
    EditWithoutReplacement { path: String, line: usize, id: String },
    /// A `message` entry on the path has no `message` (or `null`): pi throws reading its role.
    #[error("{path}:{line}: message entry {id} has no \"message\"; pi cannot build context for this branch")]
    MessageWithoutMessage { path: String, line: usize, id: String },
}

/// The projection of one leaf.
pub struct Projection<'s, 'a> {
    /// The session projected.
    pub session: &'s host::Session<'a>,
    /// pi's reading of its entries.
    pub pi: &'s Session<'a>,
    /// The leaf (index into entries); `None` for an empty session.
    pub leaf: Option<usize>,
    /// The root→leaf path (moved into the view by [`Projection::into_view`]).
    pub path: Vec<usize>,
    /// The compaction-aware context list (`buildContextEntries`). Moved into the view by
    /// [`Projection::into_view`] too: the view hands it to what reads it ([`HostView`]).
    ///
    /// [`HostView`]: host::HostView
    pub context: Vec<usize>,
    /// For each edited target, the edit that wins (the latest in `context`), both as entry
    /// indexes: the target as the session's id table finds its id ([`Projection::edit_by_id`];
    /// an id no entry has is no target). Keyed by the id, each key was 24 bytes of 32: a
    /// megabyte on a session of 25,000 edits.
    edits: HashMap<u32, u32, foldhash::fast::RandomState>,
    /// Content a host built on pi's format sends in place of an entry's own (entry index → the
    /// content JSON; OMP: a pruned tool result's text joined). An edit still wins over it.
    pub rewrites: Option<&'s HashMap<usize, Box<RawValue>>>,
    /// What each context position gives, read once when the projection becomes a view (the
    /// units, the estimate, the plan and the JSON each read it; reading the message again at
    /// every use was most of a command's time on many small entries). Empty before: read at
    /// each use.
    parsed: Vec<Parsed<'s>>,
    /// Entry index → its position in `context`, made with `parsed` (the view reads it here).
    positions: Positions,
}

/// One context position, parsed: a view keeps one for each, so what is small is kept small
/// (24 bytes: the role, the edit and what is seen in a few bytes, not as handed out, and one
/// content). Not the content parsed: its blocks and decoded strings were a third of a status's
/// view and a fifth of a dry run's memory on 100,000 tiny entries, where a status reads a tenth
/// of them and a dry run each once; [`Projection::content`] parses the raw content each time.
struct Parsed<'s> {
    /// The content the model is given: for [`Seen::Replaced`] the edit's or the rewrite's in
    /// its place, else its own ([`own_content`]). A replaced entry's own content, which only a
    /// fold of an already folded entry asks for, is read again from its entry: keeping both was
    /// 16 bytes a position.
    content: Option<&'s RawValue>,
    /// The edit that wins for it (an entry index; [`NO_EDIT`]: none).
    edit: u32,
    /// Its message's role ([`Facts::role_said`]).
    said: Said,
    /// What the model sees of it: [`Projected`]'s variant (`content` holds a replacement's).
    seen: Seen,
}

const _: () = assert!(std::mem::size_of::<Parsed>() <= 24);

/// [`Projected`]'s variant.
#[derive(Clone, Copy)]
enum Seen {
    Raw,
    Omitted,
    Replaced,
}

impl<'s> Parsed<'s> {
    fn projected(&self) -> Projected<'s> {
        match self.seen {
            Seen::Raw => Projected::Raw,
            Seen::Omitted => Projected::Omitted,
            Seen::Replaced => Projected::Replaced(self.content),
        }
    }

    /// Its own content, when it is the one kept ([`Parsed::content`]).
    fn own(&self) -> Option<Option<&'s RawValue>> {
        (!matches!(self.seen, Seen::Replaced)).then_some(self.content)
    }

    fn edit(&self) -> Option<usize> {
        (self.edit != NO_EDIT).then_some(self.edit as usize)
    }
}

/// The roles a context position keeps by name ([`Said::Named`]).
const ROLES: [&str; 4] = ["user", "assistant", "toolResult", "custom"];

/// A [`RoleSaid`] in two bytes: the roles most messages have by their place in [`ROLES`]; any
/// other is read again from the message when asked (a rare one: a system prompt, a summary).
#[derive(Clone, Copy)]
enum Said {
    Unparsed,
    NoRole,
    Named(u8),
    Other,
}

impl Said {
    fn of(said: &RoleSaid<'_>) -> Said {
        match said {
            None => Said::Unparsed,
            Some(None) => Said::NoRole,
            Some(Some(role)) => ROLES.iter().position(|r| r == role).map_or(Said::Other, |i| Said::Named(i as u8)),
        }
    }
}

/// The role an entry's `message` says: `None` when the message does not parse
/// ([`Head::parse`]), `Some(None)` when it has no role. (All a context position keeps of what its
/// message says: a whole [`Message`] would hold ~350 bytes for each entry, its [`Head`] 72; the
/// estimate parses the message again for the rare roles that need more.)
///
/// [`Message`]: super::message::Message
pub type RoleSaid<'a> = Option<Option<Cow<'a, str>>>;

impl<'s, 'a> Projection<'s, 'a> {
    /// Projects `leaf` (an entry index; `None` projects nothing, like pi's `null` leaf).
    pub fn at(
        session: &'s host::Session<'a>,
        pi: &'s Session<'a>,
        leaf: Option<usize>,
    ) -> Result<Projection<'s, 'a>, ProjectError> {
        Projection::rewritten(session, pi, leaf, None)
    }

    /// Projects `leaf` with `rewrites` in place of those entries' own content (see the field).
    pub fn rewritten(
        session: &'s host::Session<'a>,
        pi: &'s Session<'a>,
        leaf: Option<usize>,
        rewrites: Option<&'s HashMap<usize, Box<RawValue>>>,
    ) -> Result<Projection<'s, 'a>, ProjectError> {
        let path = match leaf {
            Some(l) => session
                .path(l)
                .map_err(|cycle| ProjectError::Cycle { path: session.file.display().into_owned(), cycle })?,
            None => Vec::new(),
        };
        // pi reads `message.role` of every message entry on the path (the model in use), and
        // throws on one without a `message`: that branch has no context for pi.
        let bare = path.iter().find(|&&i| {
            pi.entries[i].kind == EntryType::Message && pi.entries[i].fields.message().is_none_or(|m| m.get() == "null")
        });
        if let Some(&i) = bare {
            let node = &session.entries[i];
            let (line, id) = (node.line(), node.id().to_string());
            return Err(ProjectError::MessageWithoutMessage { path: session.file.display().into_owned(), line, id });
        }
        let context = context_entries(pi, &path);
        let mut edits = HashMap::default();
        for &i in &context {
            let e = &pi.entries[i];
            if e.kind == EntryType::ContextEdit {
                // Entry indexes fit 32 bits (MAX_LINES).
                if let Some(target) = e.target_id().and_then(|t| session.index_of(&t)) {
                    edits.insert(target as u32, i as u32);
                }
            }
        }
        let (parsed, positions) = (Vec::new(), Positions::new(&[], 0));
        let projection = Projection { session, pi, leaf, path, context, edits, rewrites, parsed, positions };
        projection.check_edits()?;
        Ok(projection)
    }

    /// Context position `index` from what is read of its entry alone (`facts`).
    fn parse(&self, index: usize, facts: &Facts<'a>) -> Parsed<'s> {
        let edit = self.edit_by_id(index);
        let projected = self.projected_with(index, edit);
        let (seen, content) = match projected {
            Projected::Raw => (Seen::Raw, facts.own),
            Projected::Omitted => (Seen::Omitted, facts.own),
            Projected::Replaced(raw) => (Seen::Replaced, raw),
        };
        // Below NO_EDIT: an entry index (MAX_LINES).
        let edit = edit.map_or(NO_EDIT, |e| e as u32);
        Parsed { content, edit, said: Said::of(&facts.role_said), seen }
    }

    fn parsed(&self, index: usize) -> Option<&Parsed<'s>> {
        self.parsed.get(self.positions.get(index)?)
    }

    /// Returns the role the `message` of entry `index` says ([`RoleSaid`]), parsed once for an
    /// entry of the context.
    pub fn role_said(&self, index: usize) -> RoleSaid<'a> {
        match self.parsed(index).map(|p| p.said) {
            Some(Said::Unparsed) => None,
            Some(Said::NoRole) => Some(None),
            Some(Said::Named(i)) => Some(Some(Cow::Borrowed(ROLES[usize::from(i)]))),
            Some(Said::Other) | None => self.pi.entries[index].message_head().map(|m| m.role),
        }
    }

    fn check_edits(&self) -> Result<(), ProjectError> {
        for (pos, &i) in self.context.iter().enumerate() {
            if let Some(edit) = self.edit_index(i) {
                if self.pi.entries[edit].fields.replacement().is_none() && self.has_editable_message(pos) {
                    let node = &self.session.entries[edit];
                    return Err(ProjectError::EditWithoutReplacement {
                        path: self.session.file.display().into_owned(),
                        line: node.line(),
                        id: node.id().to_string(),
                    });
                }
            }
        }
        Ok(())
    }

    /// Tells whether entry `pos` of the context gives a message whose content an edit replaces
    /// (pi reads `replacement.content` only for those, and throws when `replacement` is absent).
    fn has_editable_message(&self, pos: usize) -> bool {
        let e = &self.pi.entries[self.context[pos]];
        base_messages(e, pos).iter().any(|m| {
            matches!(
                m.get("role").and_then(Js::as_str).as_deref(),
                Some("user" | "assistant" | "toolResult" | "custom")
            )
        })
    }

    /// Returns the index of the edit that wins for entry `index`, if any.
    pub fn edit_index(&self, index: usize) -> Option<usize> {
        match self.parsed(index) {
            Some(p) => p.edit(),
            None => self.edit_by_id(index),
        }
    }

    /// The edit that wins for entry `index`'s id: the one whose target the id table finds for
    /// it (the later entry when ids repeat, as for an edit's target). That is `index` itself
    /// unless its id repeats: only then is the id looked up (per context position, that was a
    /// percent of a status after a fold).
    fn edit_by_id(&self, index: usize) -> Option<usize> {
        let found = |target: usize| self.edits.get(&(target as u32)).map(|&e| e as usize);
        match found(index) {
            None if self.session.ids_repeat() => found(self.session.index_of(self.session.entries[index].id())?),
            edit => edit,
        }
    }

    /// Returns what the model sees of entry `index` (which must be in the context list).
    pub fn projected(&self, index: usize) -> Projected<'s> {
        match self.parsed(index) {
            Some(p) => p.projected(),
            None => self.projected_with(index, self.edit_index(index)),
        }
    }

    fn projected_with(&self, index: usize, edit: Option<usize>) -> Projected<'s> {
        match edit.map(|e| &self.pi.entries[e]) {
            None => match self.rewrites.and_then(|r| r.get(&index)) {
                Some(content) => Projected::Replaced(Some(content)),
                None => Projected::Raw,
            },
            Some(edit) => match edit.fields.replacement() {
                Some(r) if is_null(r) => Projected::Omitted,
                Some(r) => Projected::Replaced(replacement_content(r)),
                None => Projected::Replaced(None),
            },
        }
    }

    /// Returns the content the model sees for an editable entry: the replacement's when an edit
    /// wins, else the entry's own (parsed at each call: [`Parsed`]).
    pub fn content(&self, index: usize) -> Option<Content<'s>> {
        match self.projected(index) {
            Projected::Omitted => None,
            Projected::Replaced(raw) => Some(parse_content(raw)),
            Projected::Raw => Some(parse_content(match self.parsed(index) {
                Some(p) => p.content,
                None => own_content(&self.pi.entries[index]),
            })),
        }
    }

    /// Returns `{"leafId","entries":[{"id","type","messages"}],"messages"}` as pi's code does,
    /// for `context` (the projection's, or its view's once moved there).
    pub fn to_js(&self, context: &[usize]) -> Js {
        let mut all = Vec::new();
        let entries: Vec<Js> = context
            .iter()
            .enumerate()
            .map(|(pos, &i)| {
                let node = &self.session.entries[i];
                let messages = self.entry_js(pos, i);
                all.extend(messages.iter().cloned());
                object([("id", js_str(node.id())), ("type", js_str(node.kind())), ("messages", Js::Array(messages))])
            })
            .collect();
        let leaf = self.leaf.map_or(Js::Null, |l| js_str(self.session.entries[l].id()));
        object([("leafId", leaf), ("entries", Js::Array(entries)), ("messages", Js::Array(all))])
    }

    /// Writes [`Projection::to_js`] as `JSON.stringify` writes it, one message at a time: no
    /// tree of the whole context is held, and at most one copy of the messages' text (on a
    /// 1,000,000-entry chain the whole text is twice the file). A message pi sends as its line
    /// writes it ([`Projection::written_as_is`]) is borrowed from the file, not copied; any other
    /// is written once into `built` and kept until the end. Each message's bytes are streamed
    /// into `entries` as they come (building each message again instead would cost a third more
    /// CPU), then every message again, in order, into `messages`.
    pub fn write_json(&self, context: &[usize], out: &mut dyn Write) -> io::Result<()> {
        let mut head = Vec::with_capacity(CHUNK + 1024);
        head.extend_from_slice(b"{\"leafId\":");
        match self.leaf {
            Some(l) => js::write_string(&mut head, self.session.entries[l].id().as_bytes()),
            None => head.extend_from_slice(b"null"),
        }
        head.extend_from_slice(b",\"entries\":[");
        let mut built = Vec::new();
        // Most entries give one message: room for one each, not doubled as it fills.
        let mut parts: Vec<Part<'a>> = Vec::with_capacity(context.len());
        for (pos, &i) in context.iter().enumerate() {
            let node = &self.session.entries[i];
            if pos > 0 {
                head.push(b',');
            }
            head.extend_from_slice(b"{\"id\":");
            js::write_string(&mut head, node.id().as_bytes());
            head.extend_from_slice(b",\"type\":");
            js::write_string(&mut head, node.kind().as_bytes());
            head.extend_from_slice(b",\"messages\":[");
            let first = parts.len();
            match self.written_as_is(i) {
                Some(raw) => parts.push(Part::Raw(raw)),
                None => {
                    for m in self.entry_js(pos, i) {
                        let start = built.len();
                        m.write(&mut built);
                        parts.push(Part::Built(start..built.len()));
                    }
                }
            }
            for (n, part) in parts[first..].iter().enumerate() {
                if n > 0 {
                    head.push(b',');
                }
                emit(&mut head, out, part.bytes(&built))?;
            }
            head.extend_from_slice(b"]}");
        }
        head.extend_from_slice(b"],\"messages\":[");
        for (n, part) in parts.iter().enumerate() {
            if n > 0 {
                head.push(b',');
            }
            emit(&mut head, out, part.bytes(&built))?;
        }
        head.extend_from_slice(b"]}");
        out.write_all(&head)
    }

    /// The one message entry `index` gives, when pi would send its `message` exactly as the
    /// line writes it: seen as is (no edit, no rewrite), its role not renamed, its `content`
    /// there and not `null` (pi fills in a missing one), and the text already what
    /// `JSON.stringify` writes ([`js::is_stringified`]). Most messages are: copying them is
    /// most of `project --json` saved on many small entries.
    fn written_as_is(&self, index: usize) -> Option<&'a str> {
        let e = &self.pi.entries[index];
        if e.kind != EntryType::Message || e.hook_message_role || !matches!(self.projected(index), Projected::Raw) {
            return None;
        }
        let raw = e.fields.message()?.get();
        if !raw.starts_with('{') {
            return None;
        }
        match self.parsed(index) {
            Some(p) => {
                // Seen as is: the content kept is its own.
                p.content.filter(|c| !is_null(c))?;
                js::is_stringified(raw).then_some(raw)
            }
            // Without a view the content is found by the walk that checks the text (a message
            // whose other fields have odd types gives the same bytes through `entry_js`). Its text
            // being what `JSON.stringify` writes, its one `content` key is spelt plainly.
            None => js::stringified_member(raw, "content")?.filter(|c| *c != "null").map(|_| raw),
        }
    }

    /// [`Projection::to_js`] as serde_json holds it (lone surrogates as U+FFFD).
    pub fn to_json(&self, context: &[usize]) -> Value {
        self.to_js(context).to_value()
    }

    /// The messages one context entry contributes, as serde_json holds them.
    pub fn entry_json(&self, pos: usize, index: usize) -> Vec<Value> {
        self.entry_js(pos, index).iter().map(Js::to_value).collect()
    }

    /// Returns the messages one context entry contributes (`projectContextEntry`).
    pub fn entry_js(&self, pos: usize, index: usize) -> Vec<Js> {
        let e = &self.pi.entries[index];
        let messages = base_messages(e, pos);
        match self.projected(index) {
            Projected::Raw => messages,
            Projected::Omitted => Vec::new(),
            Projected::Replaced(content) => messages.into_iter().map(|m| replace_content(m, content)).collect(),
        }
    }
}

impl<'s, 'a> Projection<'s, 'a> {
    /// Hands the projection to the engine as a neutral [`View`], reading each entry's own
    /// message through `memo` when views of the session share one.
    pub fn into_view(mut self, memo: Option<&FactsMemo<'a>>) -> View<'s, 'a> {
        let n = self.context.len();
        let (mut parsed, mut units, mut calls) = (Vec::with_capacity(n), Vec::with_capacity(n), Vec::new());
        // One position at a time: what is read of an entry for this view alone is dropped as soon
        // as its parts are taken (a list of them all was a tenth of a dry run's memory).
        for &i in &self.context {
            let mut f = match memo {
                Some(memo) => Cow::Borrowed(memo.cells[i].get_or_init(|| Facts::of(&self.pi.entries[i]))),
                None => Cow::Owned(Facts::of(&self.pi.entries[i])),
            };
            let p = self.parse(i, &f);
            match (p.projected(), &mut f) {
                (Projected::Raw, Cow::Owned(f)) => calls.extend(std::mem::take(&mut f.calls)),
                (Projected::Raw, Cow::Borrowed(f)) => calls.extend(f.calls.iter().cloned()),
                (Projected::Replaced(raw), _) => calls.extend(calls_of(raw)),
                (Projected::Omitted, _) => {}
            }
            units.push(self.unit(i, &mut f, &p));
            parsed.push(p);
        }
        self.parsed = parsed;
        self.positions = Positions::new(&self.context, self.pi.entries.len());
        answer(&mut units, &calls);
        // Grown by doubling: up to half of it was room for calls the context does not have.
        calls.shrink_to_fit();
        // The path and the context are the view's: the projection reads them there.
        let (session, leaf, path, context) =
            (self.session, self.leaf, std::mem::take(&mut self.path), std::mem::take(&mut self.context));
        View::new(session, leaf, path, context, units, calls, Box::new(self))
    }

    /// The unit of entry `index` (the arguments of the call it answers are found later, in
    /// [`answer`]). Its tool moves out of `facts` read for this view alone.
    fn unit(&self, index: usize, facts: &mut Cow<'_, Facts<'a>>, p: &Parsed<'s>) -> Unit<'s> {
        let (role, editable) = (facts.role, facts.editable);
        let tool = match facts {
            Cow::Owned(f) => f.tool.take(),
            Cow::Borrowed(f) => f.tool.clone(),
        };
        Unit {
            index,
            role,
            target: editable.then(|| Target(self.session.entries[index].id())),
            tool: tool.map(|(name, call_id)| Box::new(Tool { name, call_id, arguments: None })),
            tombstone: false,
            omitted: matches!(p.seen, Seen::Omitted),
            edit: p.edit,
        }
    }
}

/// Gives each tool result's unit the arguments of the call it answers among the context's
/// `calls`: the last with its id, preferring one with a `path` (whose arguments are read only
/// when the id came before: most ids come once).
fn answer<'s>(units: &mut [Unit<'s>], calls: &[Call<'s>]) {
    let mut by_id: HashMap<&str, &Call<'s>, foldhash::fast::RandomState> = HashMap::default();
    for call in calls {
        if !by_id.contains_key(call.id.as_ref()) || host::model::call_path(call.arguments).is_some() {
            by_id.insert(call.id.as_ref(), call);
        }
    }
    for tool in units.iter_mut().filter_map(|u| u.tool.as_mut()) {
        tool.arguments = tool.call_id.as_deref().and_then(|id| by_id.get(id)).and_then(|c| c.arguments);
    }
}

/// What a view reads of one entry's own message: the same at every leaf.
#[derive(Clone)]
struct Facts<'a> {
    role: Role,
    /// Whether a fold may replace its content ([`Entry::is_editable`]).
    editable: bool,
    /// For a tool result: the tool's name (empty when absent) and the call's id.
    tool: Option<(Cow<'a, str>, Option<Cow<'a, str>>)>,
    /// The tool calls in its own content.
    calls: Vec<Call<'a>>,
    /// What its message says of its role.
    role_said: RoleSaid<'a>,
    /// Its own content ([`own_content`]).
    own: Option<&'a RawValue>,
}

impl<'a> Facts<'a> {
    fn of(e: &Entry<'a>) -> Facts<'a> {
        // A message's calls are read with it, in one walk.
        let (message, calls) = match e.kind == EntryType::Message {
            true => match e.fields.message().and_then(Head::parse_with_calls) {
                Some((head, calls)) => (Some(head), Some(calls)),
                None => (None, None),
            },
            false => (e.message_head(), None),
        };
        let own = own_of(e, message.as_ref());
        let calls = calls.unwrap_or_else(|| calls_of(own));
        let m = message.as_ref().filter(|_| e.kind == EntryType::Message);
        let role = role_of(e, m);
        let tool = m
            .filter(|_| role == Role::ToolResult)
            .map(|m| (m.tool_name.clone().unwrap_or_default(), m.tool_call_id.clone()));
        let editable = editable(e, m);
        Facts { role, editable, tool, calls, role_said: message.map(|m| m.role), own }
    }
}

/// What views read of each entry's own message, kept across the shared views of one session
/// ([`crate::host::View::shared`], [`super::Session::memo`]): an audit that projects every leaf then reads each entry once,
/// not once per leaf.
pub struct FactsMemo<'a> {
    cells: Vec<std::cell::OnceCell<Facts<'a>>>,
}

impl FactsMemo<'_> {
    /// An empty memo for a session of `entries` entries.
    pub fn new(entries: usize) -> Self {
        FactsMemo { cells: (0..entries).map(|_| std::cell::OnceCell::new()).collect() }
    }
}

/// The neutral role of what an entry gives the model, its message read for it.
pub fn entry_role(e: &Entry<'_>) -> Role {
    role_of(e, e.message_head().as_ref())
}

/// The neutral role of what an entry gives the model.
fn role_of(e: &Entry<'_>, message: Option<&Head<'_>>) -> Role {
    match e.kind {
        EntryType::Message if e.hook_message_role => Role::Custom,
        EntryType::Message => match message.and_then(|m| m.role.as_deref()) {
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            Some("toolResult") => Role::ToolResult,
            Some("system") => Role::System,
            Some("custom") => Role::Custom,
            Some("branchSummary" | "compactionSummary") => Role::Summary,
            _ => Role::Other,
        },
        EntryType::CustomMessage => Role::Custom,
        EntryType::BranchSummary | EntryType::Compaction => Role::Summary,
        _ => Role::Other,
    }
}

impl<'s> host::HostView<'s> for Projection<'s, '_> {
    fn projected(&self, index: usize) -> Projected<'s> {
        Projection::projected(self, index)
    }

    fn content(&self, index: usize) -> Option<Content<'s>> {
        Projection::content(self, index)
    }

    fn own_content(&self, index: usize) -> Option<Option<&'s RawValue>> {
        self.parsed(index).and_then(Parsed::own)
    }

    fn edit_target(&self, index: usize) -> Option<Cow<'s, str>> {
        let e = &self.pi.entries[index];
        (e.kind == EntryType::ContextEdit).then(|| e.target_id()).flatten()
    }

    fn replacement(&self, edit: usize) -> Option<&'s RawValue> {
        let r = self.pi.entries[edit].fields.replacement()?;
        replacement_content(r).filter(|c| c.get() != "null")
    }

    fn positions(&self) -> &Positions {
        &self.positions
    }

    fn pieces(&self, pos: usize, index: usize, sink: &mut dyn crate::host::Pieces) {
        super::estimate::visit_entry(self, pos, index, sink)
    }

    fn pieces_with(&self, index: usize, content: &Content<'_>, sink: &mut dyn crate::host::Pieces) {
        super::estimate::visit_with(self, index, content, sink)
    }

    fn messages_json(&self, pos: usize, index: usize) -> Vec<Value> {
        self.entry_json(pos, index)
    }

    fn to_json(&self, context: &[usize]) -> Value {
        Projection::to_json(self, context)
    }

    fn write_json_text(&self, context: &[usize], out: &mut dyn Write) -> io::Result<()> {
        self.write_json(context, out)
    }
}

/// The `content` of a `replacement` object, present (`null` included) or not.
pub fn replacement_content(replacement: &RawValue) -> Option<&RawValue> {
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
    own_of(e, e.message_head().as_ref())
}

/// [`own_content`] with the entry's message already parsed.
fn own_of<'a>(e: &Entry<'a>, message: Option<&Head<'a>>) -> Option<&'a RawValue> {
    match e.kind {
        EntryType::CustomMessage => e.fields.content(),
        EntryType::Message => message.and_then(|m| m.content),
        _ => None,
    }
}

/// [`Entry::is_editable`] with the entry's message already parsed (the role as
/// [`Entry::role`] reads it: a message whose other fields [`Message::parse`](super::message::Message::parse) refuses is read
/// again for its role alone).
fn editable(e: &Entry<'_>, message: Option<&Head<'_>>) -> bool {
    match (e.kind, message) {
        (EntryType::Message, Some(m)) if !e.hook_message_role => {
            matches!(m.role.as_deref(), Some("user" | "assistant" | "toolResult"))
        }
        _ => e.is_editable(),
    }
}

/// `buildContextEntries`: the whole path, or from the latest compaction's kept boundary. Unlike
/// [`Projection::at`] it never fails on an edit without `replacement` (pi's own function does not).
pub fn context_entries(session: &Session<'_>, path: &[usize]) -> Vec<usize> {
    let Some(cpos) = path.iter().rposition(|&i| session.entries[i].kind == EntryType::Compaction) else {
        return path.to_vec();
    };
    let first_kept = session.first_kept_entry_id(path[cpos]);
    let mut context = vec![path[cpos]];
    let mut found = false;
    for &i in &path[..cpos] {
        let e = &session.entries[i];
        if !found && first_kept.is_some() && first_kept == Some(session.id(i)) {
            found = true;
        }
        if found && !(e.kind == EntryType::Message && e.role().as_deref() == Some("system")) {
            context.push(i);
        }
    }
    context.extend_from_slice(&path[cpos + 1..]);
    context
}

/// `sessionEntryToContextMessages`, with "only the compaction at index 0 contributes".
fn base_messages(e: &Entry<'_>, pos: usize) -> Vec<Js> {
    let f = &e.fields;
    match e.kind {
        EntryType::Message => {
            let Some(raw) = f.message() else { return Vec::new() };
            let Ok(mut m @ Js::Object(_)) = js::parse(raw.get()) else { return Vec::new() };
            if e.hook_message_role {
                m.set("role", js_str("custom"));
            }
            let role = m.get("role").and_then(Js::as_str).unwrap_or_default().into_owned();
            let missing = matches!(m.get("content"), None | Some(Js::Null));
            if missing && role == "system" {
                m.set("content", js_str(""));
            } else if missing && matches!(role.as_str(), "user" | "assistant" | "toolResult") {
                m.set("content", Js::Array(Vec::new()));
            }
            vec![m]
        }
        EntryType::CustomMessage => {
            let mut m = object([("role", js_str("custom"))]);
            put(&mut m, "customType", f.custom_type());
            let content = f.content().filter(|c| !is_null(c)).map_or(Js::Array(Vec::new()), value_of);
            m.set("content", content);
            put(&mut m, "display", f.display());
            put(&mut m, "details", f.details());
            m.set("timestamp", js_time(f.timestamp()));
            vec![m]
        }
        EntryType::BranchSummary if is_truthy(f.summary()) => {
            let mut m = object([("role", js_str("branchSummary"))]);
            put(&mut m, "summary", f.summary());
            put(&mut m, "fromId", f.from_id());
            m.set("timestamp", js_time(f.timestamp()));
            vec![m]
        }
        EntryType::Compaction if pos == 0 => {
            let mut summary = object([("role", js_str("compactionSummary"))]);
            put(&mut summary, "summary", f.summary());
            put(&mut summary, "tokensBefore", f.tokens_before());
            summary.set("timestamp", js_time(f.timestamp()));
            match f.system_message().filter(|s| is_truthy(Some(s))) {
                Some(system) => vec![value_of(system), summary],
                None => vec![summary],
            }
        }
        _ => Vec::new(),
    }
}

/// `{...message, content}` for the roles an edit may replace.
fn replace_content(mut m: Js, content: Option<&RawValue>) -> Js {
    let role = m.get("role").and_then(Js::as_str).unwrap_or_default().into_owned();
    if !matches!(m, Js::Object(_)) || !matches!(role.as_str(), "user" | "assistant" | "toolResult" | "custom") {
        return m;
    }
    match content.map(value_of) {
        // `content: undefined` vanishes from JSON, as in pi.
        None => m.remove("content"),
        Some(Js::String(text)) if role == "assistant" || role == "toolResult" => {
            m.set("content", Js::Array(vec![object([("type", js_str("text")), ("text", Js::String(text))])]));
        }
        Some(v) => m.set("content", v),
    }
    m
}

fn put(m: &mut Js, key: &str, raw: Option<&RawValue>) {
    if let Some(raw) = raw {
        m.set(key, value_of(raw));
    }
}

/// A raw value as pi's `JSON.parse` holds it (`null` past [`js::MAX_DEPTH`], which the file's
/// warnings name).
fn value_of(raw: &RawValue) -> Js {
    js::parse(raw.get()).unwrap_or(Js::Null)
}

fn js_str(s: &str) -> Js {
    Js::String(s.as_bytes().to_vec())
}

fn object<const N: usize>(members: [(&str, Js); N]) -> Js {
    Js::Object(members.into_iter().map(|(k, v)| (k.as_bytes().to_vec(), v)).collect())
}

/// `new Date(timestamp).getTime()`: milliseconds for an ISO-8601 string or a number, else `null`
/// (JavaScript's `NaN`, which JSON prints as `null`).
pub fn js_time(raw: Option<&RawValue>) -> Js {
    let Some(raw) = raw else { return Js::Null };
    if let Ok(n) = raw.get().parse::<f64>() {
        return if n.is_finite() { Js::Number(n.trunc()) } else { Js::Null };
    }
    as_str(Some(raw)).and_then(|s| parse_iso_millis(&s)).map_or(Js::Null, |ms| Js::Number(ms as f64))
}

#[cfg(test)]
mod tests {
    use crate::host::{Projected, SessionFile, View};

    /// An edit wins for every entry with its target's id, found through the id table: here the
    /// leaf is the earlier of two entries with one id (the table finds the later, off the path).
    #[test]
    fn an_edit_wins_for_an_entry_whose_id_repeats() {
        let text = [
            r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#,
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"one"}}"#,
            r#"{"type":"context_edit","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:00.000Z","targetId":"x","replacement":{"content":"gone"}}"#,
            r#"{"type":"message","id":"x","parentId":"b","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"two"}}"#,
            r#"{"type":"message","id":"x","parentId":"a","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"three"}}"#,
        ];
        let file = SessionFile::from_bytes("t.jsonl".into(), format!("{}\n", text.join("\n")).into_bytes());
        let session = crate::pi::session::load(&file).unwrap();
        assert_eq!(session.index_of("x"), Some(3));
        let view = View::at(&session, Some(2)).unwrap();
        assert_eq!(view.context, [0, 1, 2]);
        assert!(matches!(view.projected(2), Projected::Replaced(Some(c)) if c.get() == r#""gone""#));
        assert_eq!(view.edit_of(2), Some(1));
        // The later one's branch has no edit.
        let view = View::at(&session, Some(3)).unwrap();
        assert!(matches!(view.projected(3), Projected::Raw));
    }
}

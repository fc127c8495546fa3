//! What Claude Code 2.1.328 sends the model for a loaded conversation: the `messages` of its
//! Messages API request, built from the loader's chain (`normalizeMessagesForAPI`, reduced to
//! what a transcript on disk can hold; docs/claude-code.md lists what is left out).
//!
//! The steps, as the binary does them:
//! 1. rows become messages: user rows as they are, assistant rows with their `message.id`,
//!    attachment rows as the parts Claude Code rendered when it wrote them (`rendered`), or, when
//!    the row has none, as Claude Code renders them afresh (`attachment.rs`); system rows not at
//!    all;
//! 2. attachments bubble up past plain user messages until they meet an assistant message or a
//!    tool-result message;
//! 3. an assistant message joins an earlier one with the same `message.id` (walking back over
//!    assistant and tool-result messages); a user message joins a user message just before it
//!    (text at the seam gets a `\n`); attachment parts join the user message before them, going
//!    into its last `tool_result` when it ends with one, else each part is a message of its own.

use serde_json::{json, Map, Value};

use super::attachment;
use super::loader::Chain;
use super::model;
use super::normalize;
use super::system_turns;
use super::toolsearch;
use super::transcript::{has_block, Row, Transcript};

/// One message on its way to the API.
enum Msg {
    /// A user message; `content` is a string or blocks.
    User(Value),
    /// An assistant message's blocks and its API message id.
    Assistant { id: Option<String>, content: Vec<Value> },
    /// An attachment's rendered parts (each a string or text blocks).
    Attachment(Vec<Value>),
    /// An attachment's text for the next system message ([`system_turns`]).
    Pending(String),
    /// A system message (`role: "system"`), for the models that take them.
    System(String),
}

impl Msg {
    fn stops_attachments(&self) -> bool {
        match self {
            Msg::Assistant { .. } => true,
            Msg::User(content) => has_block(Some(content), "tool_result"),
            Msg::Attachment(_) | Msg::Pending(_) | Msg::System(_) => false,
        }
    }
}

/// The messages Claude Code sends for `chain`, in the Messages API shape
/// (`{"role", "content"}`, content a string or blocks), to the model of [`model::target`].
pub fn project(t: &Transcript, chain: &Chain) -> Vec<Value> {
    project_for(t, chain, model::target(t, chain).as_deref())
}

/// [`project`] for the model `target` (`None`: no model told apart).
pub fn project_for(t: &Transcript, chain: &Chain, target: Option<&str>) -> Vec<Value> {
    let mut all = Vec::new();
    each_message_for(t, chain, target, |m| all.push(m));
    all
}

/// Gives [`project`]'s messages to `emit` one at a time, in order, each as soon as no later row
/// can change it: a message is held while a later assistant message may still join it, that is
/// up to the next plain user message (and attachments up to the next assistant or tool-result
/// message), so what is held is one stretch of tool calls, not the whole conversation.
pub fn each_message(t: &Transcript, chain: &Chain, emit: impl FnMut(Value)) {
    each_message_for(t, chain, model::target(t, chain).as_deref(), emit)
}

/// [`each_message`] for the model `target`.
pub fn each_message_for(t: &Transcript, chain: &Chain, target: Option<&str>, mut sink: impl FnMut(Value)) {
    let mut pairing = normalize::Pairing::default();
    let mut emit = |m: Value| pairing.pass(m, &mut sink);
    let plan = normalize::Plan::of(t, chain);
    let mut bubble = Bubble::default();
    let mut out: Vec<Msg> = Vec::new();
    let rows = chain.rows.iter().map(|&i| &t.rows[i]).filter(|row| !plan.drops(row));
    let interrupted = plan.interrupted_results().map(Msg::User);
    let mut pending = Vec::new();
    for msg in rows.filter_map(|row| to_msg(t, row, target)).chain(interrupted) {
        for m in bubble.add(msg) {
            join_or_hold(&mut out, &mut pending, m, target, &mut emit);
        }
    }
    for m in bubble.finish() {
        join_or_hold(&mut out, &mut pending, m, target, &mut emit);
    }
    flush(&mut out, &mut pending, target, &mut emit);
    out.into_iter().for_each(|m| emit(m.into_json()));
    pairing.finish(&mut sink);
}

/// Holds a system text until the next assistant message, before which the texts held go
/// ([`flush`]); joins every other message.
fn join_or_hold(
    out: &mut Vec<Msg>,
    pending: &mut Vec<String>,
    msg: Msg,
    target: Option<&str>,
    emit: &mut impl FnMut(Value),
) {
    match msg {
        Msg::Pending(text) => pending.push(text),
        msg => {
            if matches!(msg, Msg::Assistant { .. }) {
                flush(out, pending, target, emit);
            }
            join(out, msg, emit);
        }
    }
}

/// The system texts held, as one system message after the user message before them (joined to
/// a system message there), or, after an assistant message or at the start, as user text.
fn flush(out: &mut Vec<Msg>, pending: &mut Vec<String>, target: Option<&str>, emit: &mut impl FnMut(Value)) {
    if pending.is_empty() {
        return;
    }
    let text = std::mem::take(pending).join("\n\n");
    match out.last_mut() {
        Some(Msg::System(last)) => {
            last.push_str("\n\n");
            last.push_str(&text);
        }
        Some(Msg::User(_)) => push(out, Msg::System(text), emit),
        _ => {
            let tagged = target.is_some_and(system_turns::keeps_tags);
            let content = if tagged { text } else { attachment::reminder(&text) };
            join(out, Msg::User(Value::String(content)), emit);
        }
    }
}

/// Joins the next message into the ones `out` holds (see the module doc, step 3).
fn join(out: &mut Vec<Msg>, msg: Msg, emit: &mut impl FnMut(Value)) {
    match msg {
        Msg::User(content) => match out.last_mut() {
            Some(Msg::User(last)) => *last = join_user(last.take(), content),
            _ => push(out, Msg::User(content), emit),
        },
        Msg::Attachment(parts) => match out.last_mut() {
            Some(Msg::User(last)) => {
                for part in parts {
                    *last = join_part(last.take(), part);
                }
            }
            _ => parts.into_iter().for_each(|part| push(out, Msg::User(part), emit)),
        },
        Msg::Assistant { id, content } => {
            let same = out.iter_mut().rev().take_while(|m| m.stops_attachments()).find_map(|m| match m {
                Msg::Assistant { id: Some(i), content: c } if id.as_deref() == Some(i.as_str()) => Some(c),
                _ => None,
            });
            match same {
                Some(earlier) => earlier.extend(content),
                None => push(out, Msg::Assistant { id, content }, emit),
            }
        }
        other @ (Msg::Pending(_) | Msg::System(_)) => push(out, other, emit),
    }
}

/// Adds a message after the last one held. The last one is then final (only the last takes a
/// join), and when it is a plain user message no assistant message looks back past it: every
/// message held is final and is given to `emit`.
fn push(out: &mut Vec<Msg>, msg: Msg, emit: &mut impl FnMut(Value)) {
    if out.last().is_some_and(|m| !m.stops_attachments()) {
        out.drain(..).for_each(|m| emit(m.into_json()));
    }
    out.push(msg);
}

impl Msg {
    fn into_json(self) -> Value {
        match self {
            Msg::User(content) => json!({"role": "user", "content": content}),
            Msg::Assistant { content, .. } => json!({"role": "assistant", "content": content}),
            Msg::System(content) => json!({"role": "system", "content": content}),
            Msg::Attachment(_) | Msg::Pending(_) => unreachable!("attachments are joined or turned into messages"),
        }
    }
}

fn to_msg(t: &Transcript, row: &Row, target: Option<&str>) -> Option<Msg> {
    match row.kind() {
        "user" => {
            let mut content = t.content(row)?;
            toolsearch::resolve(&mut content);
            normalize::user_content(t, row, content).map(Msg::User)
        }
        "assistant" if normalize::is_synthetic_api_error(t, row) => None,
        "assistant" => {
            let mut content = match t.content(row)? {
                Value::Array(blocks) => blocks,
                other => vec![other],
            };
            if target.is_some_and(|m| model::is_foreign(model::row_model(t, row).as_deref(), m)) {
                model::drop_signed_thinking(&mut content);
            }
            let content = normalize::assistant_blocks(content);
            Some(Msg::Assistant { id: row.message_id().map(str::to_owned), content })
        }
        "attachment" => {
            let parts = rendered_parts_for(t, row, target)?;
            let system = target.filter(|_| system_turns::takes_system(target));
            match system.and_then(|m| system_turns::promoted(t, row, &parts, m)) {
                Some(text) => Some(Msg::Pending(text)),
                None => Some(Msg::Attachment(parts)),
            }
        }
        "system" => normalize::local_command(t, row).map(Msg::User),
        _ => None,
    }
}

/// The parts Claude Code sends for an attachment row: its `rendered` parts when they are what
/// Claude Code accepts, else the attachment rendered afresh from its type ([`attachment`]);
/// `None` when it sends nothing.
///
/// For the token figures: the model is the one chosen (`--model`) or none, never the
/// transcript's last one, so that a row's pieces do not change when later rows come from
/// another model (the meter measures appended rows alone, `tail.rs`).
pub(crate) fn rendered_parts(t: &Transcript, row: &Row) -> Option<Vec<Value>> {
    rendered_parts_for(t, row, t.model.as_deref())
}

/// [`rendered_parts`] when Claude Code sends to the model `target`.
fn rendered_parts_for(t: &Transcript, row: &Row, target: Option<&str>) -> Option<Vec<Value>> {
    recorded_parts(t, row).or_else(|| {
        let value = crate::js::value(t.member(row, "attachment")?.get())?;
        Some(attachment::render(&value, target)).filter(|parts| !parts.is_empty())
    })
}

/// An attachment's `rendered` parts when they are what Claude Code accepts (each `content` a
/// non-empty string or a non-empty list of non-empty text blocks).
fn recorded_parts(t: &Transcript, row: &Row) -> Option<Vec<Value>> {
    let Value::Array(parts) = crate::js::value(t.member(row, "rendered")?.get())? else { return None };
    let valid = |c: &Value| match c {
        Value::String(s) => !s.is_empty(),
        Value::Array(blocks) => {
            !blocks.is_empty()
                && blocks.iter().all(|b| {
                    b.get("type").and_then(Value::as_str) == Some("text")
                        && b.get("text").and_then(Value::as_str).is_some_and(|s| !s.is_empty())
                })
        }
        _ => false,
    };
    let total = parts.len();
    let contents: Vec<Value> = parts.into_iter().filter_map(|mut p| p.get_mut("content").map(Value::take)).collect();
    (!contents.is_empty() && contents.len() == total && contents.iter().all(valid)).then_some(contents)
}

/// Moves each attachment up past plain user messages, to just after the nearest assistant or
/// tool-result message before it (or to the start), keeping the attachments' order: the
/// messages since the last such message are held, attachments apart, until the next one.
#[derive(Default)]
struct Bubble {
    attachments: Vec<Msg>,
    users: Vec<Msg>,
}

impl Bubble {
    /// The next message; returns the messages now in their place, in order.
    fn add(&mut self, msg: Msg) -> Vec<Msg> {
        if matches!(msg, Msg::Attachment(_)) {
            self.attachments.push(msg);
        } else if msg.stops_attachments() {
            let mut ready = self.finish();
            ready.push(msg);
            return ready;
        } else {
            self.users.push(msg);
        }
        Vec::new()
    }

    /// The messages held, in their place (at the end of the chain).
    fn finish(&mut self) -> Vec<Msg> {
        let mut ready = std::mem::take(&mut self.attachments);
        ready.append(&mut self.users);
        ready
    }
}

fn blocks(content: Value) -> Vec<Value> {
    match content {
        Value::Array(blocks) => blocks,
        Value::String(text) => vec![text_block(text)],
        other => vec![other],
    }
}

fn text_block(text: String) -> Value {
    let mut block = Map::new();
    block.insert("type".into(), "text".into());
    block.insert("text".into(), text.into());
    Value::Object(block)
}

fn is_text(block: &Value) -> bool {
    block.get("type").and_then(Value::as_str) == Some("text")
}

/// Ends a text block's text with `\n` (the seam between two joined texts).
fn seam(block: &mut Value) {
    if let Some(Value::String(text)) = block.get_mut("text") {
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
}

/// Two user messages in a row become one: blocks concatenated, a `\n` at a text–text seam
/// (always, even after a text ending with one: Claude Code's `PVo`; a `/context` output ending
/// in `\n\n` showed it), tool results first.
fn join_user(a: Value, b: Value) -> Value {
    let mut a = blocks(a);
    let b = blocks(b);
    if let (Some(last), Some(first)) = (a.last_mut(), b.first()) {
        if let (Some(Value::String(text)), true) = (last.get_mut("text"), is_text(first)) {
            text.push('\n');
        }
    }
    a.extend(b);
    let (mut results, rest): (Vec<Value>, Vec<Value>) =
        a.into_iter().partition(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"));
    results.extend(rest);
    Value::Array(results)
}

/// An attachment part joins the user message before it: into its last block when that is a
/// `tool_result` (a string result is trimmed and gets `\n\n` and the text; a block result gets
/// text blocks),
/// else as further blocks.
fn join_part(a: Value, part: Value) -> Value {
    let mut a = blocks(a);
    let part = blocks(part);
    let Some(result) = a.last_mut().filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result")) else {
        a.extend(part);
        return Value::Array(a);
    };
    let Some(obj) = result.as_object_mut() else { unreachable!("a tool_result block is an object") };
    for block in part {
        let text = block.get("text").and_then(Value::as_str).unwrap_or_default().to_owned();
        match obj.get_mut("content") {
            Some(Value::Array(inner)) => {
                if let Some(last) = inner.last_mut().filter(|b| is_text(b)) {
                    seam(last);
                }
                inner.push(text_block(text));
            }
            Some(Value::String(s)) => {
                // Trimmed at both ends, as Claude Code 2.1.328 does (a Read result's first line
                // number loses its padding: checked on a real transcript, bdcc4d2c).
                *s = format!("{}\n\n{text}", s.trim());
            }
            _ => {
                obj.insert("content".into(), Value::String(text));
            }
        }
    }
    Value::Array(a)
}

//! The format-neutral model of what the model sees: roles, content and its blocks, the tool a
//! result answers. Every host parses its own JSON into these; the engine reads nothing else.
//!
//! Blocks keep their raw JSON, so a fold can re-emit untouched blocks byte for byte.

use std::borrow::Cow;

use serde_json::value::RawValue;

/// Who speaks in a message the model sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// The user's turn (text, images).
    User,
    /// The model's own turn (text, thinking, tool calls).
    Assistant,
    /// The output of one tool call, sent back to the model.
    ToolResult,
    /// The system prompt or a system notice.
    System,
    /// Content an extension or the host injects as a message (pi's `custom_message`).
    Custom,
    /// A summary the host wrote in place of older history (compaction, branch summary).
    Summary,
    /// Anything else the host sends (e.g. a shell run shown to the model).
    Other,
}

/// A message's content: a string, or an array of blocks.
#[derive(Clone, Debug)]
pub enum Content<'a> {
    /// String content.
    Text(Cow<'a, str>),
    /// Block content.
    Blocks(Vec<Block<'a>>),
    /// Absent, `null`, or some other JSON value.
    Other,
}

/// One content block, with its raw bytes kept for exact re-emission.
#[derive(Clone, Debug)]
pub struct Block<'a> {
    /// The block exactly as in the line.
    pub raw: &'a RawValue,
    /// What the block is.
    pub kind: BlockKind<'a>,
}

/// The kinds of content block the engine tells apart.
#[derive(Clone, Debug)]
pub enum BlockKind<'a> {
    /// Text.
    Text(Cow<'a, str>),
    /// The model's thinking.
    Thinking(Cow<'a, str>),
    /// An image, with its media type when given.
    Image { mime: Option<Cow<'a, str>> },
    /// A tool call: its id, the tool's name, and its raw arguments.
    ToolCall { id: Option<Cow<'a, str>>, name: Cow<'a, str>, arguments: Option<&'a RawValue> },
    /// A tool result carried as a block inside a message (Claude Code's `tool_result`): the id of
    /// the call it answers.
    ToolResult { call_id: Option<Cow<'a, str>> },
    /// Any other block type.
    Other,
}

impl Content<'_> {
    /// Returns the text blocks (or the string) joined with newlines.
    pub fn joined_text(&self) -> String {
        match self {
            Content::Text(t) => t.to_string(),
            Content::Blocks(blocks) => blocks
                .iter()
                .filter_map(|b| match &b.kind {
                    BlockKind::Text(t) => Some(t.as_ref()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n"),
            Content::Other => String::new(),
        }
    }

    /// Counts image blocks.
    pub fn images(&self) -> usize {
        self.blocks().iter().filter(|b| matches!(b.kind, BlockKind::Image { .. })).count()
    }

    /// Returns the blocks (none for string or odd content).
    pub fn blocks(&self) -> &[Block<'_>] {
        match self {
            Content::Blocks(b) => b,
            _ => &[],
        }
    }
}

/// The tool a tool result answers: the tool's name, the call's id, and the call's arguments
/// (found in the context's tool calls; `None` when the call is not in the context).
#[derive(Clone, Debug)]
pub struct Tool<'a> {
    /// The tool's name (empty when the host does not say).
    pub name: Cow<'a, str>,
    /// The id of the call this result answers.
    pub call_id: Option<Cow<'a, str>>,
    /// The call's raw arguments.
    pub arguments: Option<&'a RawValue>,
}

impl Tool<'_> {
    /// Returns the call's `path` argument, if it has a string one.
    pub fn path(&self) -> Option<String> {
        call_path(self.arguments)
    }
}

/// Returns the `path` argument of a tool call's raw arguments, if it is a string.
pub fn call_path(arguments: Option<&RawValue>) -> Option<String> {
    let args: serde_json::Value = serde_json::from_str(arguments?.get()).ok()?;
    args.get("path").and_then(|p| p.as_str().map(str::to_string))
}

/// Receives the pieces messages are counted from, in the host's order.
pub trait Pieces {
    /// One piece of text.
    fn text(&mut self, text: &str);
    /// One image.
    fn image(&mut self);
    /// Ends one message (an estimate may round per message).
    fn end_message(&mut self) {}
}

//! Token counting: pi's own estimate and real BPE counts, behind one interface.
//!
//! Every number shake prints says which tokenizer made it. `pi` is pi 1.6.0's `estimateTokens`
//! exactly: per message `ceil(chars / 4)` in UTF-16 code units, images 4,800 chars (1,200 tokens),
//! tool calls as name + JSON arguments, signatures not counted. `o200k` and `cl100k` count the same
//! pieces with tiktoken's BPE (images 1,200 tokens); their tables load lazily, on first use only.

use std::fmt;
use std::str::FromStr;

use serde_json::value::RawValue;

use crate::pi::entry::as_str;
use crate::pi::message::{BlockKind, Content, Message};
use crate::pi::{Entry, Projection};

/// pi's fixed estimate for one image, in characters (`ESTIMATED_IMAGE_CHARS`).
const IMAGE_CHARS: u64 = 4_800;
/// An image's cost in tokens for every tokenizer (pi's 4,800 chars / 4).
pub const IMAGE_TOKENS: u64 = IMAGE_CHARS / 4;

/// The tokenizers shake knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum TokenizerName {
    /// pi's own estimate: ceil(UTF-16 chars / 4) per message
    Pi,
    /// OpenAI o200k_base BPE (tiktoken)
    O200k,
    /// OpenAI cl100k_base BPE (tiktoken)
    Cl100k,
}

impl TokenizerName {
    /// Returns the name as printed and accepted on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenizerName::Pi => "pi",
            TokenizerName::O200k => "o200k",
            TokenizerName::Cl100k => "cl100k",
        }
    }
}

impl fmt::Display for TokenizerName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for TokenizerName {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "pi" => Ok(TokenizerName::Pi),
            "o200k" => Ok(TokenizerName::O200k),
            "cl100k" => Ok(TokenizerName::Cl100k),
            _ => Err(format!("unknown tokenizer {s:?} (pi, o200k, cl100k)")),
        }
    }
}

/// A tokenizer, ready to count.
#[derive(Clone, Copy, Debug)]
pub struct Tokenizer {
    /// Which one.
    pub name: TokenizerName,
}

impl Tokenizer {
    /// Returns the tokenizer; BPE tables load on the first count, not here.
    pub fn new(name: TokenizerName) -> Tokenizer {
        Tokenizer { name }
    }

    /// Starts a tally for one message (pi rounds once per message, not per piece).
    pub fn tally(&self) -> Tally {
        Tally { tokenizer: *self, chars: 0, tokens: 0 }
    }

    /// Counts one piece of text on its own (a region, a placeholder).
    pub fn count(&self, text: &str) -> u64 {
        let mut t = self.tally();
        t.text(text);
        t.total()
    }

    fn bpe(&self, text: &str) -> u64 {
        match self.name {
            TokenizerName::Pi => 0,
            TokenizerName::O200k => tiktoken_rs::o200k_base_singleton().count_ordinary(text) as u64,
            TokenizerName::Cl100k => tiktoken_rs::cl100k_base_singleton().count_ordinary(text) as u64,
        }
    }
}

/// A running count for one message.
#[derive(Clone, Copy, Debug)]
pub struct Tally {
    tokenizer: Tokenizer,
    chars: u64,
    tokens: u64,
}

impl Tally {
    /// Adds a piece of text.
    pub fn text(&mut self, text: &str) {
        match self.tokenizer.name {
            TokenizerName::Pi => self.chars += utf16_len(text),
            _ => self.tokens += self.tokenizer.bpe(text),
        }
    }

    /// Adds one image.
    pub fn image(&mut self) {
        match self.tokenizer.name {
            TokenizerName::Pi => self.chars += IMAGE_CHARS,
            _ => self.tokens += IMAGE_TOKENS,
        }
    }

    /// Returns the count: `ceil(chars / 4)` for pi, the BPE sum otherwise.
    pub fn total(&self) -> u64 {
        self.tokens + self.chars.div_ceil(4)
    }
}

/// Returns a string's length in UTF-16 code units (JavaScript's `.length`).
pub fn utf16_len(s: &str) -> u64 {
    if s.is_ascii() {
        return s.len() as u64;
    }
    s.chars().map(|c| c.len_utf16() as u64).sum()
}

/// Counts what the model sees of context entry `index` (pi's `estimateTokens` over the
/// messages the entry projects to, after edits). `pos` is its position in the context list.
pub fn entry_tokens(projection: &Projection<'_, '_>, pos: usize, tok: &Tokenizer) -> u64 {
    let index = projection.context[pos];
    let e = &projection.session.entries[index];
    let content = || projection.content(index);
    match e.kind.as_ref() {
        "message" => {
            let Some(m) = e.fields.message.and_then(Message::parse) else { return 0 };
            let role = if e.hook_message_role { "custom" } else { m.role.as_deref().unwrap_or_default() };
            match content() {
                Some(c) if is_content_role(role) => message_tokens(role, &m, &c, tok),
                // Omitted by an edit: contributes nothing.
                None if is_content_role(role) => 0,
                _ => message_tokens(role, &m, &m.content(), tok),
            }
        }
        "custom_message" => content().map_or(0, |c| content_tokens(&c, tok)),
        "branch_summary" => summary_tokens(e, tok),
        "compaction" if pos == 0 => {
            if matches!(projection.projected(index), crate::pi::Projected::Omitted) {
                return 0;
            }
            let system = e.fields.system_message.and_then(Message::parse);
            summary_tokens(e, tok) + system.map_or(0, |m| message_tokens("system", &m, &m.content(), tok))
        }
        _ => 0,
    }
}

fn is_content_role(role: &str) -> bool {
    matches!(role, "user" | "assistant" | "toolResult" | "custom")
}

fn summary_tokens(e: &Entry<'_>, tok: &Tokenizer) -> u64 {
    match as_str(e.fields.summary) {
        Some(s) if !s.is_empty() => tok.count(&s),
        _ => 0,
    }
}

/// pi's `estimateTokens(message)` for one message with the given (projected) content.
pub fn message_tokens(role: &str, m: &Message<'_>, content: &Content<'_>, tok: &Tokenizer) -> u64 {
    let mut t = tok.tally();
    match role {
        "system" => {
            add_content(&mut t, content);
            add_sections(&mut t, m.sections);
            if let Some(tools) = m.tools_added {
                t.text(tools.get());
            }
        }
        "user" | "custom" | "toolResult" => add_content(&mut t, content),
        "assistant" => {
            if let Content::Text(s) = content {
                t.text(s);
            }
            for block in blocks(content) {
                match &block.kind {
                    BlockKind::Text(s) | BlockKind::Thinking(s) => t.text(s),
                    BlockKind::ToolCall { name, arguments, .. } => {
                        t.text(name);
                        t.text(arguments.map_or("undefined", |a| a.get()));
                    }
                    _ => {}
                }
            }
        }
        "bashExecution" => {
            t.text(m.command.as_deref().unwrap_or_default());
            t.text(m.output.as_deref().unwrap_or_default());
        }
        "branchSummary" | "compactionSummary" => t.text(m.summary.as_deref().unwrap_or_default()),
        _ => {}
    }
    t.total()
}

/// Counts a content value on its own (text blocks and images), as for user/custom/toolResult.
pub fn content_tokens(content: &Content<'_>, tok: &Tokenizer) -> u64 {
    let mut t = tok.tally();
    add_content(&mut t, content);
    t.total()
}

fn add_content(t: &mut Tally, content: &Content<'_>) {
    match content {
        Content::Text(s) => t.text(s),
        Content::Blocks(blocks) => {
            for block in blocks {
                match &block.kind {
                    BlockKind::Text(s) => t.text(s),
                    BlockKind::Image { .. } => t.image(),
                    _ => {}
                }
            }
        }
        Content::Other => {}
    }
}

fn blocks<'c, 'a>(content: &'c Content<'a>) -> &'c [crate::pi::Block<'a>] {
    match content {
        Content::Blocks(b) => b,
        _ => &[],
    }
}

fn add_sections(t: &mut Tally, sections: Option<&RawValue>) {
    let Some(raw) = sections else { return };
    let Ok(map) = serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(raw.get()) else { return };
    for value in map.values() {
        if let Some(s) = value.as_str() {
            t.text(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pi_rounds_per_message_in_utf16_units() {
        let pi = Tokenizer::new(TokenizerName::Pi);
        let mut t = pi.tally();
        t.text("abc");
        t.text("de");
        assert_eq!(t.total(), 2); // ceil(5/4), not ceil(3/4)+ceil(2/4)
        assert_eq!(pi.count("😀"), 1); // 2 UTF-16 units
        assert_eq!(utf16_len("é😀"), 3);
        let mut img = pi.tally();
        img.image();
        img.text("x");
        assert_eq!(img.total(), 1201);
    }

    #[test]
    fn bpe_counts_real_tokens() {
        let o = Tokenizer::new(TokenizerName::O200k);
        assert_eq!(o.count("hello world"), 2);
        assert_eq!(o.count(""), 0);
    }
}

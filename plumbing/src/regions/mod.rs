//! Regions: what a fold may replace in a neutral context ([`View`]) (a [`Region`] of a
//! [`RegionKind`]), and the rules that say which entries are in play (`docs/folding.md`): the skip
//! rules, the tail (`spec/peer-rules.md` §2(b)). The span finder for fenced and XML blocks is
//! [`spans`]. Which regions a fold takes (scopes, profiles) and the placeholder that replaces
//! one are fold policy and live in the porcelain (`shake_porcelain::{scope, profile}`).

pub mod claude_shake;
pub mod rules;
pub mod spans;

pub use spans::{find_spans, Span};

use crate::host::{Content, Role, Tool, Unit, View};

/// What one region is. Its name, as logged and printed, is the variant in camelCase, as serde
/// writes it (`toolResult`, `block`, `thinking`, `image`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RegionKind {
    /// A whole tool result's text (images stay).
    ToolResult,
    /// A fenced or top-level XML block inside a text.
    Block,
    /// One thinking block of an assistant message.
    Thinking,
    /// One image block.
    Image,
    /// A whole tool result of a read whose file was read again, written or edited later
    /// ([`rules::superseded`]): folded even inside the tail, and its placeholder says why.
    SupersededRead,
    /// A tool call's arguments (its id and name stay), when its result is folded or its file was
    /// changed or read whole later ([`rules::stale_changes`]): opt-in.
    ToolInput,
}

impl RegionKind {
    /// Every kind, in the order reports list them.
    pub const ALL: [RegionKind; 6] = [
        RegionKind::ToolResult,
        RegionKind::Block,
        RegionKind::Thinking,
        RegionKind::Image,
        RegionKind::SupersededRead,
        RegionKind::ToolInput,
    ];

    /// Returns the kind's name as logged and printed.
    pub fn as_str(self) -> &'static str {
        static NAMES: std::sync::OnceLock<[String; 6]> = std::sync::OnceLock::new();
        let names = NAMES.get_or_init(|| {
            RegionKind::ALL
                .map(|k| serde_json::to_value(k).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default())
        });
        &names[self as usize]
    }

    /// Tells whether the region is a whole tool result's text (the host's own placeholder, where
    /// it has one, replaces it).
    pub fn is_whole(self) -> bool {
        matches!(self, RegionKind::ToolResult | RegionKind::SupersededRead)
    }

    /// Parses a logged kind.
    pub fn parse(s: &str) -> Option<RegionKind> {
        RegionKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// Formats a count with thousands separators: `27838` → `27,838`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// One region a fold may replace inside one entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    /// What it is.
    pub kind: RegionKind,
    /// Tool name, fence info string, XML tag or image type.
    pub label: String,
    /// Its own size.
    pub tokens: u64,
    /// The content block holding it (`None` for string content or a whole tool result).
    pub block: Option<usize>,
    /// A block region's UTF-8 byte range in that text.
    pub at: Option<(usize, usize)>,
}

impl Region {
    /// The identity of a region inside its entry.
    pub fn key(&self) -> (RegionKind, Option<usize>, Option<(usize, usize)>) {
        (self.kind, self.block, self.at)
    }
}

/// Why an entry of the context is not in play for a fold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Skip {
    /// The host would refuse an edit of it (pi's `appendContextEdit` takes user, assistant and
    /// tool-result messages and custom messages only).
    NotEditable,
    /// The host omitted it (pi: a `replacement: null` edit wins).
    Omitted,
    /// Already a placeholder the host wrote: never folded again.
    Tombstone,
    /// A `skill` result or a read of a `skill://` path: instructions the model keeps using.
    Skill,
    /// Its content is not something a fold can rewrite and the host take back exactly (absent,
    /// or, for pi, a string on an assistant or tool-result message).
    OddContent,
}

/// Tells why context entry `unit` is not in play for a fold whose base content is `base`, or
/// `None` when it is.
pub fn skip(view: &View<'_, '_>, unit: &Unit<'_>, base: Option<&Content<'_>>) -> Option<Skip> {
    if unit.target.is_none() {
        return Some(Skip::NotEditable);
    }
    if unit.omitted {
        return Some(Skip::Omitted);
    }
    if unit.tombstone {
        return Some(Skip::Tombstone);
    }
    if unit.role == Role::ToolResult && unit.tool.as_deref().is_some_and(is_skill) {
        return Some(Skip::Skill);
    }
    match base {
        Some(content) if view.host().foldable_content(unit.role, content) => None,
        _ => Some(Skip::OddContent),
    }
}

/// Tells whether a tool result holds skill instructions: the `skill` tool, or a `read` of a
/// `skill://` path (the rule peers share, `spec/peer-rules.md`).
pub fn is_skill(tool: &Tool<'_>) -> bool {
    tool.name == "skill" || (tool.name == "read" && is_skill_path(tool.path().as_deref()))
}

/// Tells whether a tool call's `path` argument names a skill.
pub fn is_skill_path(path: Option<&str>) -> bool {
    path.is_some_and(|p| p.starts_with("skill://"))
}

/// Returns the first context position inside the tail: positions from it on are protected.
/// An entry is protected while the tokens of the entries strictly newer than it are below `tail`.
/// `tokens` are the context's counts, in context order ([`crate::tokens::context_tokens`]).
pub fn tail_start(tokens: &[u64], tail: u64) -> usize {
    let mut newer = 0;
    let mut start = tokens.len();
    for (pos, &n) in tokens.iter().enumerate().rev() {
        if newer >= tail {
            break;
        }
        start = pos;
        newer += n;
    }
    start
}

/// A tool call's argument big enough to fold ([`RegionKind::ToolInput`]): a string member whose
/// JSON takes at least this many bytes (a whole file written, an edit's long old or new text);
/// the others (a path, an offset) stay, so the model still sees what the call did. A folded
/// call's arguments are its own with exactly these members turned into one placeholder.
pub const BIG_ARGUMENT_BYTES: usize = 200;

/// Whether an argument's JSON is a string of at least [`BIG_ARGUMENT_BYTES`].
pub fn is_big_string(value: &serde_json::value::RawValue) -> bool {
    let v = value.get();
    v.starts_with('"') && v.len() >= BIG_ARGUMENT_BYTES
}

/// Returns the label of a tool result: its tool's name, else `tool`.
pub fn tool_label(tool: Option<&Tool<'_>>) -> String {
    tool.map(|t| t.name.to_string()).filter(|t| !t.is_empty()).unwrap_or_else(|| "tool".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_separated() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn region_kinds_are_named_in_camel_case() {
        for k in RegionKind::ALL {
            assert_eq!(serde_json::to_string(&k).unwrap(), format!("\"{}\"", k.as_str()));
            assert_eq!(RegionKind::parse(k.as_str()), Some(k));
        }
        assert_eq!((RegionKind::Block.as_str(), RegionKind::Image.as_str()), ("block", "image"));
        assert_eq!(RegionKind::ToolInput.as_str(), "toolInput");
    }
}

#[cfg(test)]
mod tail_tests {
    use super::*;
    use crate::host::SessionFile;
    use crate::tokens::{Tokenizer, TokenizerName};

    /// A linear session of user messages with these sizes in characters (pi: 4 chars a token).
    fn session(sizes: &[usize]) -> SessionFile {
        let mut text =
            String::from("{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n");
        for (i, n) in sizes.iter().enumerate() {
            let parent = if i == 0 { "null".to_string() } else { format!("\"e{}\"", i - 1) };
            text.push_str(&format!(
                "{{\"type\":\"message\",\"id\":\"e{i}\",\"parentId\":{parent},\"timestamp\":\"t\",\"message\":{{\"role\":\"user\",\"content\":\"{}\"}}}}\n",
                "x".repeat(*n)
            ));
        }
        SessionFile::from_bytes("t.jsonl".into(), text.into_bytes())
    }

    #[test]
    fn the_entry_straddling_the_tail_is_protected() {
        let file = session(&[400, 400, 400, 400]); // 100 tokens each
        let s = crate::hosts::load(&file, None).unwrap();
        let p = View::at(&s, s.default_leaf()).unwrap();
        let tokens = crate::tokens::context_tokens(&p, &Tokenizer::new(TokenizerName::Pi));
        // Newer than e3: 0; e2: 100; e1: 200; e0: 300.
        assert_eq!(tail_start(&tokens, 150), 2); // e3 and e2 (100 < 150) protected, e1 (200) not
        assert_eq!(tail_start(&tokens, 200), 2);
        assert_eq!(tail_start(&tokens, 201), 1);
        assert_eq!(tail_start(&tokens, 0), 4);
        assert_eq!(tail_start(&tokens, 10_000), 0);
    }
}

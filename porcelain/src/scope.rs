//! Fold policy, part one: what each scope folds in one entry ([`regions`]), and the placeholder
//! that replaces a folded region (DESIGN §3: profiles, scopes and placeholders are the
//! porcelain's; the engine's [`shake_plumbing::regions`] says only what a region is and which
//! entries are in play). Profiles are in [`crate::profile`].

use std::fmt;

use shake_plumbing::host::{BlockKind, Content, Role, Unit};
use shake_plumbing::regions::{find_spans, is_big_string, thousands, tool_label, Region, RegionKind};
use shake_plumbing::tokens::{Tokenizer, IMAGE_TOKENS};

use crate::profile::Profile;

/// What a fold acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Whole tool results and big fenced/XML blocks outside the tail
    Elide,
    /// Every thinking block on the context path
    Thinking,
    /// Every image on the context path
    Images,
}

impl Scope {
    /// Returns the scope's name as typed and logged.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Elide => "elide",
            Scope::Thinking => "thinking",
            Scope::Images => "images",
        }
    }

    /// Parses a logged scope name.
    pub fn parse(s: &str) -> Option<Scope> {
        [Scope::Elide, Scope::Thinking, Scope::Images].into_iter().find(|x| x.as_str() == s)
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The text that replaces a folded region: `[bash output omitted (~9,045 tokens)]`.
pub fn placeholder(kind: RegionKind, label: &str, tokens: u64) -> String {
    // Pushed piece by piece, not formatted: a fold makes two per region (to count it, then to
    // write it), and `format!` was half of their cost on many small tool results.
    let (what, suffix, why) = match kind {
        RegionKind::ToolResult => (label, " output", ""),
        RegionKind::SupersededRead => (label, " output", SUPERSEDED),
        RegionKind::Block => (label, " block", ""),
        RegionKind::Thinking => ("thinking", "", ""),
        RegionKind::Image => (label, "", ""),
        RegionKind::ToolInput => (label, " input", ""),
    };
    let mut out = String::with_capacity(what.len() + suffix.len() + why.len() + 32);
    for part in ["[", what, suffix, " omitted (~", &thousands(tokens), " tokens)", why, "]"] {
        out.push_str(part);
    }
    out
}

/// The text that replaces the big arguments of a folded tool call (`target`: the entry holding
/// the call): what it was and how to get it back, `[write input omitted (~3,210 tokens): `shake
/// show :1a2b3c4d` prints the call as written]` (`shake show SESSION:ENTRY` prints an entry's
/// line), or the host's own way when it keeps the arguments itself (`way_back`, Claude Code's
/// saved file: [`shake_plumbing::host::View::input_way_back`]).
pub fn input_placeholder(label: &str, tokens: u64, target: &str, way_back: Option<&str>) -> String {
    let mut out = placeholder(RegionKind::ToolInput, label, tokens);
    out.pop();
    match way_back {
        Some(way) => {
            out.push_str(": ");
            out.push_str(way);
            out.push(']');
        }
        None => {
            out.push_str(": `shake show :");
            out.push_str(target);
            out.push_str("` prints the call as written]");
        }
    }
    out
}

/// Why a superseded read was folded, as its placeholder says it (shake's own placeholder; a host
/// with a placeholder of its own says it in its own form).
pub const SUPERSEDED_WHY: &str = "superseded: the file was read again or changed later";

/// [`SUPERSEDED_WHY`] as the placeholder's ending.
const SUPERSEDED: &str = ": superseded: the file was read again or changed later";

/// Finds the regions of one foldable entry with content `content` that `scope` would fold:
/// for `elide`, a tool result's text when it costs more than its placeholder, and blocks of at
/// least the profile's block minimum elsewhere; for `thinking`, each thinking block of an
/// assistant message; for `images`, each image outside assistant messages. A `superseded` tool
/// result's text is a [`RegionKind::SupersededRead`] region.
pub fn regions(
    unit: &Unit<'_>,
    content: &Content<'_>,
    scope: Scope,
    profile: Profile,
    tok: &Tokenizer,
    superseded: bool,
) -> Vec<Region> {
    let blocks = content.blocks();
    let region = |kind, label: String, tokens, block, at| Region { kind, label, tokens, block, at };
    let mut out = Vec::new();
    match scope {
        Scope::Elide if unit.role == Role::ToolResult => {
            let mut tally = tok.tally();
            let mut any_text = false;
            for b in blocks {
                if let BlockKind::Text(t) = &b.kind {
                    any_text |= !t.is_empty();
                    tally.text(t);
                }
            }
            let label = tool_label(unit.tool.as_deref());
            let tokens = tally.total();
            let kind = if superseded { RegionKind::SupersededRead } else { RegionKind::ToolResult };
            if any_text && tokens > tok.count(&placeholder(kind, &label, tokens)) {
                out.push(region(kind, label, tokens, None, None));
            }
        }
        Scope::Elide => {
            let texts: Vec<(Option<usize>, &str)> = match content {
                Content::Text(s) => vec![(None, s.as_ref())],
                _ => blocks
                    .iter()
                    .enumerate()
                    .filter_map(|(i, b)| match &b.kind {
                        BlockKind::Text(t) => Some((Some(i), t.as_ref())),
                        _ => None,
                    })
                    .collect(),
            };
            for (block, text) in texts {
                for span in find_spans(text) {
                    let tokens = tok.count(&text[span.range.clone()]);
                    if tokens >= profile.block_min() {
                        let at = Some((span.range.start, span.range.end));
                        out.push(region(RegionKind::Block, span.label, tokens, block, at));
                    }
                }
            }
        }
        Scope::Thinking if unit.role == Role::Assistant => {
            for (i, b) in blocks.iter().enumerate() {
                if let BlockKind::Thinking(t) = &b.kind {
                    out.push(region(RegionKind::Thinking, "thinking".into(), tok.count(t), Some(i), None));
                }
            }
        }
        Scope::Images if unit.role != Role::Assistant => {
            for (i, b) in blocks.iter().enumerate() {
                if let BlockKind::Image { mime } = &b.kind {
                    let label = mime.as_deref().filter(|m| !m.is_empty()).unwrap_or("image").to_string();
                    out.push(region(RegionKind::Image, label, IMAGE_TOKENS, Some(i), None));
                }
            }
        }
        Scope::Thinking | Scope::Images => {}
    }
    out
}

/// The tool-call regions of an assistant entry with content `content` (`--fold-tool-inputs`):
/// each call whose id is in `calls` (its result is folded, or its file changed later), not of an
/// excluded tool, whose arguments hold a big string ([`is_big_string`]) and come to at least
/// the profile's block minimum.
pub fn input_regions(
    content: &Content<'_>,
    calls: &std::collections::HashSet<String>,
    profile: Profile,
    tok: &Tokenizer,
    excludes: impl Fn(&str) -> bool,
) -> Vec<Region> {
    let mut out = Vec::new();
    for (i, b) in content.blocks().iter().enumerate() {
        let BlockKind::ToolCall { id: Some(id), name, arguments: Some(args) } = &b.kind else { continue };
        if !calls.contains(id.as_ref()) || excludes(name) || !has_big_string(args) {
            continue;
        }
        let tokens = tok.count(args.get());
        if tokens >= profile.block_min() {
            let label = if name.is_empty() { "tool".to_string() } else { name.to_string() };
            out.push(Region { kind: RegionKind::ToolInput, label, tokens, block: Some(i), at: None });
        }
    }
    out
}

/// Whether a call's arguments are an object with a big string member ([`is_big_string`]).
fn has_big_string(args: &serde_json::value::RawValue) -> bool {
    let Some(mut members) = shake_plumbing::js::json::trusted::members(args) else { return false };
    members.any(|m| m.is_some_and(|(_, v)| is_big_string(v)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_and_thousands() {
        assert_eq!(placeholder(RegionKind::ToolResult, "bash", 9045), "[bash output omitted (~9,045 tokens)]");
        assert_eq!(placeholder(RegionKind::Block, "python", 1210), "[python block omitted (~1,210 tokens)]");
        assert_eq!(
            placeholder(RegionKind::SupersededRead, "read", 1210),
            format!("[read output omitted (~1,210 tokens): {SUPERSEDED_WHY}]")
        );
        assert_eq!(SUPERSEDED, format!(": {SUPERSEDED_WHY}"));
        assert_eq!(
            input_placeholder("write", 3210, "1a2b3c4d", None),
            "[write input omitted (~3,210 tokens): `shake show :1a2b3c4d` prints the call as written]"
        );
        assert_eq!(
            input_placeholder("Write", 3210, "u", Some("the input as written is saved in /a/t.input.json")),
            "[Write input omitted (~3,210 tokens): the input as written is saved in /a/t.input.json]"
        );
    }
}

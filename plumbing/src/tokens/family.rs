//! Which tokenizer family a model has, as oh-my-pi's catalog gives it (the Claude encodings'
//! choice of vocabulary, `tokens::claude::for_model`, and OMP's own counts, `omp::tokenizer`).
//!
//! The family rules are `@oh-my-pi/pi-catalog` 18.2.11's `resolveModelTokenizer` over its
//! `classifyModel` taxonomy, restated for the five classes that have a tokenizer (Anthropic,
//! Qwen, DeepSeek, Kimi, GLM): the same bounded/namespace matchers, family globs and revision
//! parsing, without the catalog's reviewed per-model overrides. `tests/cli/omp.rs` measures the
//! agreement with the catalog over every bundled model (`docs/omp.md`).

/// OMP's tokenizer families (`ModelTokenizer`); `None` in [`Family::of`] means bytes/4.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    ClaudeV3,
    ClaudeV47,
    ClaudeV5,
    ClaudeV5Sonnet,
    Qwen3,
    DeepSeekV3,
    KimiK2,
    Glm5,
}

impl Family {
    /// Every family, in the catalog's order.
    pub const ALL: [Family; 8] = [
        Family::ClaudeV3,
        Family::ClaudeV47,
        Family::ClaudeV5,
        Family::ClaudeV5Sonnet,
        Family::Qwen3,
        Family::DeepSeekV3,
        Family::KimiK2,
        Family::Glm5,
    ];

    /// The catalog's name for it (`claude-v3`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Family::ClaudeV3 => "claude-v3",
            Family::ClaudeV47 => "claude-v47",
            Family::ClaudeV5 => "claude-v5",
            Family::ClaudeV5Sonnet => "claude-v5-sonnet",
            Family::Qwen3 => "qwen3",
            Family::DeepSeekV3 => "deepseek-v3",
            Family::KimiK2 => "kimi-k2",
            Family::Glm5 => "glm5",
        }
    }

    /// Parses a catalog name.
    pub fn parse(s: &str) -> Option<Family> {
        Family::ALL.into_iter().find(|f| f.as_str() == s)
    }

    /// The family OMP's catalog assigns to `provider`/`model`, or `None` (OMP counts bytes/4).
    pub fn of(_provider: &str, model: &str) -> Option<Family> {
        let lower = model.trim().to_lowercase();
        let bare = lower.rsplit('/').next().unwrap_or("");
        let rev = |prefix: &str, anywhere: bool| revision(bare, prefix, anywhere);
        match classify(&lower, bare)? {
            Class::Anthropic => {
                let families: Vec<&str> =
                    ["opus", "sonnet", "haiku", "fable", "mythos"].into_iter().filter(|f| bare.contains(f)).collect();
                let r = rev("claude-", true);
                Some(match families.as_slice() {
                    ["opus"] if at_least(r, [5, 0, 0]) => Family::ClaudeV5,
                    ["opus"] if at_least(r, [4, 7, 0]) => Family::ClaudeV47,
                    ["sonnet" | "fable" | "mythos"] if at_least(r, [5, 0, 0]) => Family::ClaudeV5Sonnet,
                    _ => Family::ClaudeV3,
                })
            }
            Class::Qwen => at_least(rev("qwen", false), [3, 5, 0]).then_some(Family::Qwen3),
            Class::DeepSeek => Some(Family::DeepSeekV3),
            Class::Kimi => Some(Family::KimiK2),
            Class::Glm => at_least(rev("glm-", true), [5, 0, 0]).then_some(Family::Glm5),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Anthropic,
    Qwen,
    DeepSeek,
    Kimi,
    Glm,
}

/// A class matcher, ranked as the taxonomy ranks them: bounded (3) > namespace (2) > glob (0),
/// then by token length.
enum Matcher {
    Bounded(&'static str),
    Namespace(&'static str, bool),
    Glob(&'static str),
}

const MATCHERS: &[(Class, Matcher)] = &[
    (Class::Anthropic, Matcher::Namespace("anthropic", true)),
    (Class::Anthropic, Matcher::Bounded("anthropic")),
    (Class::Anthropic, Matcher::Bounded("claude")),
    (Class::DeepSeek, Matcher::Namespace("deepseek", true)),
    (Class::DeepSeek, Matcher::Bounded("deepseek")),
    (Class::Glm, Matcher::Bounded("glm")),
    (Class::Glm, Matcher::Bounded("zai-glm")),
    (Class::Kimi, Matcher::Namespace("moonshotai", false)),
    (Class::Kimi, Matcher::Bounded("kimi")),
    (Class::Qwen, Matcher::Bounded("qwen")),
    (Class::Qwen, Matcher::Bounded("deepseek-r1-distill-qwen")),
    (Class::Qwen, Matcher::Glob("distill-qwen")),
];

fn classify(lower: &str, bare: &str) -> Option<Class> {
    let mut best: Option<((u8, usize), Class)> = None;
    let mut tied = false;
    for (class, matcher) in MATCHERS {
        let (hit, rank, token) = match matcher {
            Matcher::Bounded(t) => (bounded(bare, t), 3, t),
            Matcher::Namespace(t, true) => (lower.split(['/', '.', ':']).any(|p| !p.is_empty() && bounded(p, t)), 2, t),
            Matcher::Namespace(t, false) => (lower.split('/').any(|p| p == *t), 2, t),
            Matcher::Glob(t) => (bare.contains(t), 0, t),
        };
        if !hit {
            continue;
        }
        let key = (rank, token.len());
        match best {
            Some((k, c)) if k == key && c != *class => tied = true,
            Some((k, _)) if k >= key => {}
            _ => {
                best = Some((key, *class));
                tied = false;
            }
        }
    }
    if tied {
        return None;
    }
    best.map(|(_, c)| c)
}

/// `value` is `token` or starts with it followed by `-`, `_`, `.`, `:` or a digit.
fn bounded(value: &str, token: &str) -> bool {
    value.strip_prefix(token).is_some_and(|rest| {
        rest.bytes().next().is_none_or(|b| matches!(b, b'-' | b'_' | b'.' | b':') || b.is_ascii_digit())
    })
}

type Revision = [u32; 3];

/// The revision after `prefix` (at the start of `bare`, or anywhere), as `extractRevision` reads
/// it: from the first digit of the tail, up to three components.
fn revision(bare: &str, prefix: &str, anywhere: bool) -> Option<Revision> {
    let tail = if anywhere { bare.find(prefix).map(|i| &bare[i + prefix.len()..]) } else { bare.strip_prefix(prefix) }?;
    let digit = tail.find(|c: char| c.is_ascii_digit())?;
    revision_prefix(&tail[digit..])
}

/// `parseRevisionPrefix`: components separated by `.` or `-`+digit; a component running into a
/// letter is a size token (`32b`) and ends the revision.
fn revision_prefix(value: &str) -> Option<Revision> {
    let bytes = value.as_bytes();
    let mut out = [0u32; 3];
    let (mut count, mut i) = (0, 0);
    while count < 3 {
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        let size_token = bytes.get(i).is_some_and(u8::is_ascii_alphabetic);
        let component = (!size_token && i > start).then(|| value[start..i].parse::<u32>().ok()).flatten();
        match component {
            Some(c) if c <= 255 => out[count] = c,
            _ => return (count > 0).then_some(out),
        }
        count += 1;
        let Some(&sep) = bytes.get(i) else { break };
        if !matches!(sep, b'.' | b'-') || !bytes.get(i + 1).is_some_and(u8::is_ascii_digit) {
            break;
        }
        i += 1;
    }
    Some(out)
}

fn at_least(revision: Option<Revision>, floor: Revision) -> bool {
    revision.is_some_and(|r| r >= floor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_follow_the_catalog_rules() {
        let cases = [
            ("anthropic", "claude-sonnet-4-5", Some(Family::ClaudeV3)),
            ("anthropic", "claude-opus-4-20250514", Some(Family::ClaudeV3)),
            ("anthropic", "claude-opus-4-7", Some(Family::ClaudeV47)),
            ("amazon-bedrock", "eu.anthropic.claude-opus-5-5", Some(Family::ClaudeV5)),
            ("amazon-bedrock", "anthropic.claude-sonnet-5", Some(Family::ClaudeV5Sonnet)),
            ("anthropic", "claude-3-5-haiku-latest", Some(Family::ClaudeV3)),
            ("openai", "gpt-5.1-codex", None),
            ("google", "gemini-2.5-pro", None),
            ("aimlapi", "qwen3.5-plus", Some(Family::Qwen3)),
            ("aimlapi", "alibaba/qwen-max", None),
            ("x", "qwen3-32b", None),
            ("aiand", "deepseek-ai/deepseek-v4-flash", Some(Family::DeepSeekV3)),
            ("aimlapi", "moonshot/kimi-k2-0905-preview", Some(Family::KimiK2)),
            ("aimlapi", "glm-5.1", Some(Family::Glm5)),
            ("x", "glm-4.6", None),
        ];
        for (p, m, want) in cases {
            assert_eq!(Family::of(p, m), want, "{p}/{m}");
        }
    }

    #[test]
    fn revisions_stop_at_size_tokens_and_dates() {
        assert_eq!(revision_prefix("4-7"), Some([4, 7, 0]));
        assert_eq!(revision_prefix("4-20250514"), Some([4, 0, 0]));
        assert_eq!(revision_prefix("3-32b"), Some([3, 0, 0]));
        assert_eq!(revision_prefix("3.5.1-x"), Some([3, 5, 1]));
        assert_eq!(revision_prefix("32b"), None);
    }
}

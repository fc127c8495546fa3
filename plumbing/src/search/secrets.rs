//! The secret scan: credentials in what would leave the machine (`shake scan`, and `push`
//! before it sends anything). The rules are data in gitleaks' format (`gitleaks.toml`: gitleaks'
//! own default rule set, MIT, vendored as it is; `shake.toml`: shake's rules for what it lacks,
//! in the same format), read once. As gitleaks does, a session's readable text
//! ([`super::Readable`]) is read once for every rule's keywords (one Aho-Corasick pass, case
//! ignored), and only the rules whose keywords occur (and those that have none) run their
//! regex over it. (One `RegexSet` of all the rules was the first design: its lazy DFA gives up
//! on the union of 220 rules and the set falls back to the NFA, minutes on 30 MB.) A match is
//! kept as gitleaks keeps it: its secret (the
//! rule's `secretGroup`, else the first group, else the whole match) must reach the rule's
//! entropy and pass its allowlists (regexes, on the secret, the match or the line; stopwords)
//! and the global one. `docs/search.md` says what it catches and what it cannot.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use aho_corasick::AhoCorasick;
use regex::bytes::{Regex, RegexBuilder};

use std::path::PathBuf;

use super::{Entries, Readable};
use super::{Result, SearchError};
use crate::store::{SessionInfo, Store};

/// gitleaks' default rules (`config/gitleaks.toml` of gitleaks/gitleaks at
/// b58d3f102cf3a2c84cb7f923d05c25c9b1aed84b, MIT License, Copyright (c) 2019 Zachary Rice).
const GITLEAKS: &str = include_str!("gitleaks.toml");
/// shake's own rules, in gitleaks' format: what gitleaks' set lacks or reads too loosely for
/// session text (AWS secret keys, bearer tokens, `.env` lines).
const SHAKE: &str = include_str!("shake-rules.toml");

/// gitleaks' rules shake leaves out, and why (`docs/search.md`, "False positives").
const LEFT_OUT: &[(&str, &str)] = &[
    // Any `key = value` with an entropic value: in sessions, every hash, id and base64 line a
    // tool prints next to the word "key" or "token". shake's `dotenv-secret` and
    // `aws-secret-access-key` take the assignments that name a secret.
    ("generic-api-key", "matches hashes and ids beside the words key/token in tool output"),
];

#[derive(serde::Deserialize)]
struct File {
    #[serde(default)]
    allowlist: Option<AllowList>,
    #[serde(default)]
    rules: Vec<RuleData>,
}

#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct AllowList {
    #[serde(default)]
    regexes: Vec<String>,
    #[serde(default)]
    regex_target: Option<String>,
    #[serde(default)]
    stopwords: Vec<String>,
    #[serde(default)]
    paths: Vec<String>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct RuleData {
    id: String,
    #[serde(default)]
    regex: Option<String>,
    #[serde(default)]
    secret_group: Option<usize>,
    #[serde(default)]
    entropy: Option<f64>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    keywords: Vec<String>,
    #[serde(default)]
    allowlists: Vec<AllowList>,
}

/// Where an allowlist regex looks: the secret, the whole match, or the line.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    Secret,
    Match,
    Line,
}

struct Allowed {
    regexes: Vec<(Target, Regex)>,
    stopwords: Vec<String>,
}

impl Allowed {
    fn of(lists: &[AllowList], what: &str) -> Result<Allowed> {
        let mut allowed = Allowed { regexes: Vec::new(), stopwords: Vec::new() };
        for list in lists {
            // A list about file paths alone says nothing of text (a session has no such path).
            if list.regexes.is_empty() && list.stopwords.is_empty() && !list.paths.is_empty() {
                continue;
            }
            let target = match list.regex_target.as_deref() {
                None | Some("secret") => Target::Secret,
                Some("match") => Target::Match,
                Some("line") => Target::Line,
                Some(other) => {
                    return Err(SearchError::RegexTarget { what: what.to_string(), target: other.to_string() })
                }
            };
            for r in &list.regexes {
                allowed.regexes.push((target, compile(r, what)?));
            }
            allowed.stopwords.extend(list.stopwords.iter().map(|s| s.to_lowercase()));
        }
        Ok(allowed)
    }

    fn allows(&self, secret: &[u8], whole: &[u8], line: &[u8]) -> bool {
        let lower = secret.to_ascii_lowercase();
        self.stopwords.iter().any(|w| memchr::memmem::find(&lower, w.as_bytes()).is_some())
            || self.regexes.iter().any(|(target, r)| {
                r.is_match(match target {
                    Target::Secret => secret,
                    Target::Match => whole,
                    Target::Line => line,
                })
            })
    }
}

struct Rule {
    id: String,
    regex: Regex,
    group: Option<usize>,
    entropy: Option<f64>,
    allowed: Allowed,
}

/// The rules, compiled: every keyword in one automaton, each rule's own regex.
pub struct Rules {
    /// Every rule's keywords, case ignored.
    keywords: AhoCorasick,
    /// For each keyword of `keywords`, the rules it wakes.
    wakes: Vec<Vec<usize>>,
    /// The rules without keywords: they run on every text.
    always: Vec<usize>,
    rules: Vec<Rule>,
    global: Allowed,
}

fn compile(pattern: &str, what: &str) -> Result<Regex> {
    RegexBuilder::new(&from_go(pattern))
        .unicode(false)
        .size_limit(SIZE_LIMIT)
        .build()
        .map_err(|source| SearchError::RuleRegex { what: what.to_string(), source })
}

/// Room for gitleaks' longest rules (`[\w-]{50,1000}`) compiled.
const SIZE_LIMIT: usize = 1 << 26;

/// gitleaks' regexes are Go's (RE2): `\w`, `\d`, `\s` and `\b` are ASCII there, which a
/// byte regex without Unicode reads alike (the builder's `unicode(false)`), and a `{` that starts
/// no repetition (`{{`, `{x`) is a plain brace, which Rust's regex refuses: such a brace is
/// escaped. Every rule compiles so (`builtin_rules_compile`).
fn from_go(pattern: &str) -> String {
    let b = pattern.as_bytes();
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut escaped = false;
    for (i, c) in pattern.char_indices() {
        if c == '{' && !escaped {
            let rest = &b[i + 1..];
            let digits = rest.iter().take_while(|d| d.is_ascii_digit()).count();
            let more = rest[digits..].iter().take_while(|d| d.is_ascii_digit() || **d == b',').count();
            if digits == 0 || rest.get(digits + more) != Some(&b'}') {
                out.push('\\');
            }
        }
        escaped = c == '\\' && !escaped;
        out.push(c);
    }
    out
}

impl Rules {
    /// The built-in rules (gitleaks' and shake's), compiled once per process.
    pub fn builtin() -> &'static Rules {
        static RULES: OnceLock<Rules> = OnceLock::new();
        // The data is shake's own, tested (`builtin_rules_compile`): it cannot fail here.
        RULES.get_or_init(|| Rules::from_toml(&[("gitleaks.toml", GITLEAKS), ("shake-rules.toml", SHAKE)]).unwrap())
    }

    /// Rules read from gitleaks-format TOML texts, each named for errors. A rule that looks at
    /// file paths only (`path`, no `regex`), or that [`LEFT_OUT`] names, is left out.
    pub fn from_toml(texts: &[(&str, &str)]) -> Result<Rules> {
        let mut rules = Vec::new();
        let mut global = Vec::new();
        let mut keywords: Vec<String> = Vec::new();
        let mut wakes: Vec<Vec<usize>> = Vec::new();
        let mut always = Vec::new();
        for (name, text) in texts {
            let file: File =
                toml::from_str(text).map_err(|source| SearchError::RulesFile { name: name.to_string(), source })?;
            global.extend(file.allowlist);
            for data in file.rules {
                let Some(pattern) = data.regex.as_deref() else { continue };
                if LEFT_OUT.iter().any(|(id, _)| *id == data.id) || data.path.is_some() {
                    continue;
                }
                let what = format!("{name}: rule {}", data.id);
                if data.keywords.is_empty() {
                    always.push(rules.len());
                }
                for k in &data.keywords {
                    let k = k.to_ascii_lowercase();
                    match keywords.iter().position(|known| *known == k) {
                        Some(at) => wakes[at].push(rules.len()),
                        None => {
                            keywords.push(k);
                            wakes.push(vec![rules.len()]);
                        }
                    }
                }
                rules.push(Rule {
                    regex: compile(pattern, &what)?,
                    group: data.secret_group,
                    entropy: data.entropy,
                    allowed: Allowed::of(&data.allowlists, &what)?,
                    id: data.id,
                });
            }
        }
        let keywords = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            // A full DFA: overlapping search steps one table lookup a byte (the default for
            // this many keywords, a contiguous NFA, took half the scan's time).
            .kind(Some(aho_corasick::AhoCorasickKind::DFA))
            .build(&keywords)
            .map_err(SearchError::Keywords)?;
        Ok(Rules { keywords, wakes, always, global: Allowed::of(&global, "global allowlist")?, rules })
    }

    /// Every rule id, sorted (what `--allow` takes).
    pub fn kinds(&self) -> BTreeSet<&str> {
        self.rules.iter().map(|r| r.id.as_str()).collect()
    }

    /// The rules `text` wakes: those whose keywords it holds, and those without keywords; in
    /// the rules' order.
    fn woken(&self, text: &[u8]) -> Vec<usize> {
        let mut seen = vec![false; self.wakes.len()];
        let mut left = seen.len();
        // Overlapping: a keyword inside another ("sk" in "sk_live") is seen too.
        for m in self.keywords.find_overlapping_iter(text) {
            let k = m.pattern().as_usize();
            if !seen[k] {
                seen[k] = true;
                left -= 1;
                if left == 0 {
                    break;
                }
            }
        }
        let mut woken: Vec<usize> = self.always.clone();
        woken.extend(seen.iter().enumerate().filter(|(_, s)| **s).flat_map(|(k, _)| self.wakes[k].iter().copied()));
        woken.sort_unstable();
        woken.dedup();
        woken
    }

    /// Every secret in `readable`'s text: one pass for the keywords, then the rules they woke.
    pub fn scan(&self, readable: &Readable) -> Vec<Hit> {
        let text = &readable.text[..];
        let mut hits = Vec::new();
        // Secrets already told, by where they are: one secret that two rules find (an AWS key
        // id in a `.env` line) is told once, by the rule listed first (gitleaks' before shake's).
        let mut told: Vec<(usize, usize)> = Vec::new();
        for i in self.woken(text) {
            let rule = &self.rules[i];
            for caps in rule.regex.captures_iter(text) {
                let whole = caps.get(0).expect("group 0 is the match");
                let secret = rule.group.and_then(|g| caps.get(g)).or_else(|| caps.get(1)).unwrap_or(whole);
                let line = line_around(text, whole.start());
                if rule.entropy.is_some_and(|min| entropy(secret.as_bytes()) < min)
                    || rule.allowed.allows(secret.as_bytes(), whole.as_bytes(), line)
                    || self.global.allows(secret.as_bytes(), whole.as_bytes(), line)
                {
                    continue;
                }
                if told.iter().any(|&(s, e)| s < secret.end() && secret.start() < e) {
                    continue;
                }
                told.push((secret.start(), secret.end()));
                hits.push(Hit {
                    kind: rule.id.clone(),
                    line: readable.line_at(secret.start()),
                    excerpt: redacted(text, secret.start(), secret.end()),
                    fingerprint: fingerprint(secret.as_bytes()),
                });
            }
        }
        hits.sort_by(|a, b| (a.line, &a.kind).cmp(&(b.line, &b.kind)));
        hits
    }
}

/// One secret found in a text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hit {
    /// The rule that found it (what `--allow` names).
    pub kind: String,
    /// The session file's line (1-based) it is in.
    pub line: u32,
    /// The line of text around it, the secret redacted: its first 4 characters (all a reader
    /// needs to know which key it is), then its length.
    pub excerpt: String,
    /// `fp:` and 12 hex digits of the secret's blake3: names this one secret for `--allow`
    /// without writing it down.
    pub fingerprint: String,
}

/// The line of `text` that holds byte `at`.
fn line_around(text: &[u8], at: usize) -> &[u8] {
    let start = memchr::memrchr(b'\n', &text[..at]).map_or(0, |i| i + 1);
    let end = memchr::memchr(b'\n', &text[at..]).map_or(text.len(), |i| at + i);
    &text[start..end]
}

/// The secret at `start..end` in its line, redacted, with at most 40 characters either side.
fn redacted(text: &[u8], start: usize, end: usize) -> String {
    let line_start = memchr::memrchr(b'\n', &text[..start]).map_or(0, |i| i + 1);
    let before: String = {
        let b = String::from_utf8_lossy(&text[line_start..start]);
        let skip = b.chars().count().saturating_sub(40);
        b.chars().skip(skip).collect()
    };
    let secret = String::from_utf8_lossy(&text[start..end]);
    // A PEM block keeps its first line (which kind of key), never a byte of its body.
    let shown: String = match secret.starts_with("-----BEGIN") {
        true => secret.lines().next().unwrap_or("").to_string(),
        false => secret.chars().take(4).collect(),
    };
    let rest_of_line = String::from_utf8_lossy(text[end..].split(|&b| b == b'\n').next().unwrap_or(b""));
    let after: String = rest_of_line.chars().take(40).collect();
    format!("{before}{shown}…[{} chars redacted]{after}", secret.chars().count() - shown.chars().count())
}

/// Shannon entropy of `s` in bits per character (per byte: gitleaks' secrets are ASCII).
fn entropy(s: &[u8]) -> f64 {
    let mut counts = [0usize; 256];
    for &b in s {
        counts[usize::from(b)] += 1;
    }
    let n = s.len() as f64;
    counts.iter().filter(|&&c| c > 0).map(|&c| c as f64 / n).map(|p| -p * p.log2()).sum()
}

/// `fp:` and the first 12 hex digits of blake3 of the secret.
pub fn fingerprint(secret: &[u8]) -> String {
    format!("fp:{}", &blake3::hash(secret).to_hex()[..12])
}

/// What the user allows: rule ids (`aws-access-token`) and fingerprints (`fp:…`) of single
/// secrets, from `--allow` and the config file.
#[derive(Clone, Debug, Default)]
pub struct Allow {
    names: BTreeSet<String>,
}

impl Allow {
    /// The allow list of these names; a name that is neither a rule id nor a fingerprint is the
    /// user's error (a typo would allow nothing and say nothing).
    pub fn new<'a>(rules: &Rules, names: impl IntoIterator<Item = &'a str>) -> Result<Allow> {
        let kinds = rules.kinds();
        let mut allow = Allow::default();
        for name in names {
            let fp =
                name.strip_prefix("fp:").is_some_and(|h| h.len() == 12 && h.bytes().all(|b| b.is_ascii_hexdigit()));
            if !fp && !kinds.contains(name) {
                return Err(SearchError::NotAllowable { name: name.to_string() });
            }
            allow.names.insert(name.to_string());
        }
        Ok(allow)
    }

    /// Tells whether this hit is allowed.
    pub fn allows(&self, hit: &Hit) -> bool {
        self.names.contains(&hit.kind) || self.names.contains(&hit.fingerprint)
    }
}

/// One secret found in a stored session: what `shake scan` prints and `push` refuses with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The session's id.
    pub session: Option<String>,
    /// The session's file.
    pub path: PathBuf,
    /// The entry's id (`None`: a line that is no entry, e.g. a header).
    pub entry: Option<String>,
    /// What was found, its line, the redacted excerpt and the secret's fingerprint.
    pub hit: Hit,
}

/// Scans these stored sessions (for `push`: those that would leave) on every core, in order,
/// for every built-in rule; what `allow` allows is left out.
pub fn scan_sessions(store: &Store, sessions: &[SessionInfo], allow: &Allow) -> Result<Vec<Finding>> {
    let rules = Rules::builtin();
    let mut findings = Vec::new();
    let mut failed = Ok(());
    let work = |info: &SessionInfo| -> Result<Vec<Finding>> {
        let raw = super::session_bytes(store, info)?;
        let hits: Vec<Hit> = rules.scan(&Readable::of(&raw)).into_iter().filter(|h| !allow.allows(h)).collect();
        if hits.is_empty() {
            return Ok(Vec::new());
        }
        let lines: Vec<u32> = hits.iter().map(|h| h.line).collect();
        let entries = Entries::read(&info.path, raw, &lines);
        Ok(hits
            .into_iter()
            .map(|hit| Finding {
                session: info.session_id.clone(),
                path: info.path.clone(),
                entry: entries.at(hit.line).id,
                hit,
            })
            .collect())
    };
    super::each_in_order(sessions, super::threads(), work, |_, found| match found {
        Ok(found) => {
            findings.extend(found);
            true
        }
        Err(e) => {
            failed = Err(e);
            false
        }
    });
    failed.map(|()| findings)
}

/// The refusal `push` gives when the scan found something ([`SearchError::Secrets`]).
pub fn refusal(findings: Vec<Finding>) -> SearchError {
    SearchError::Secrets { findings }
}

/// What the refusal says of the findings: each one's session, entry and kind (the first few).
pub(super) fn told(findings: &[Finding]) -> String {
    const SHOWN: usize = 5;
    let told: Vec<String> = findings
        .iter()
        .take(SHOWN)
        .map(|f| {
            format!(
                "{} entry {} ({}): {}",
                f.session.as_deref().unwrap_or("-"),
                f.entry.clone().unwrap_or_else(|| format!("at line {}", f.hit.line)),
                f.hit.kind,
                f.hit.excerpt
            )
        })
        .collect();
    let more = match findings.len().saturating_sub(SHOWN) {
        0 => String::new(),
        n => format!("; and {n} more (shake scan lists them all)"),
    };
    format!(
        "{} secret{} in what would leave this machine: {}{more}",
        findings.len(),
        if findings.len() == 1 { "" } else { "s" },
        told.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(text: &str) -> Vec<Hit> {
        let mut raw = Vec::new();
        // One JSON line holding `text` as tool output, as a session would.
        raw.extend_from_slice(serde_json::json!({"content": text}).to_string().as_bytes());
        Rules::builtin().scan(&Readable::of(&raw))
    }

    #[test]
    fn builtin_rules_compile() {
        let kinds = Rules::builtin().kinds();
        for kind in ["aws-access-token", "github-pat", "private-key", "slack-bot-token", "anthropic-api-key"] {
            assert!(kinds.contains(kind), "{kind}");
        }
        assert!(!kinds.contains("generic-api-key"));
    }

    #[test]
    fn planted_keys_are_found_and_redacted() {
        let hits = scan("export AWS_ACCESS_KEY_ID=AKIAQYLPMN5HHHFPZAM2\n");
        assert_eq!(hits.iter().map(|h| h.kind.as_str()).collect::<Vec<_>>(), ["aws-access-token"]);
        assert!(hits[0].excerpt.contains("AKIA…[16 chars redacted]") && !hits[0].excerpt.contains("HHHF"));
        // AWS's documented example key is allowed by gitleaks' own allowlist.
        assert!(scan("AKIAIOSFODNN7EXAMPLE").is_empty());
        let hits = scan("token: ghp_4kd93nfLq0x8ZrT2mWv7YpB1cHs6Je5Ua3Rt\n");
        assert_eq!(hits[0].kind, "github-pat");
        assert_eq!(hits[0].fingerprint, fingerprint(b"ghp_4kd93nfLq0x8ZrT2mWv7YpB1cHs6Je5Ua3Rt"));
    }

    #[cfg(feature = "cli")]
    #[test]
    fn the_refusal_names_session_entry_and_kind_never_the_secret() {
        let hit = scan("GITHUB_TOKEN=ghp_4kd93nfLq0x8ZrT2mWv7YpB1cHs6Je5Ua3Rt\n").remove(0);
        let finding =
            Finding { session: Some("s-1".into()), path: PathBuf::from("/x.jsonl"), entry: Some("e-9".into()), hit };
        let e = crate::Error::from(refusal(vec![finding; 7]));
        assert!(
            e.message.starts_with("7 secrets in what would leave this machine: s-1 entry e-9 (github-pat): "),
            "{}",
            e.message
        );
        assert!(
            e.message.ends_with("and 2 more (shake scan lists them all)") && !e.message.contains("Je5Ua3Rt"),
            "{}",
            e.message
        );
        assert!(e.hints[0].contains("--allow KIND"));
    }
}

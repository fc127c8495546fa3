//! A parsed pi session: the header, the entries pi loads, and what pi would skip, as warnings.
//! [`load`] hands it to the engine as a neutral [`host::Session`] (the tree) whose host data is
//! this [`Session`] (the entries' pi fields).
//!
//! Loading follows pi 1.6.0's `loadEntriesFromFile` and `SessionManager` exactly: the header is the
//! first parseable line; blank and unparseable lines are skipped; later `session` lines are dropped;
//! v1/v2 files are migrated in memory (ids are synthetic here, random in pi).

use std::borrow::Cow;

use super::entry::{as_str, Entry, EntryType, Fields};
use crate::host::{self, SessionFile, Warning};

/// pi's current session format version.
pub const CURRENT_VERSION: u64 = 3;

/// Why a file cannot be read as a pi session at all.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// The first parseable line is not a `session` header (pi refuses such a file).
    #[error("{path}:{line}: {NOT_A_HEADER}")]
    NotASession { path: String, line: usize },
    /// The file has no parseable line at all (and is not empty).
    #[error("{path}: {NO_JSON}")]
    NoHeader { path: String },
    /// The file has more lines than an entry index holds ([`MAX_LINES`]).
    #[error(transparent)]
    TooManyLines(#[from] host::file::TooManyLines),
}

#[cfg(feature = "fixture-host")]
pub use host::file::MAX_LINES;

/// The header line.
#[derive(Debug)]
pub struct Header<'a> {
    /// 1-based line number of the header.
    pub line: usize,
    /// The header's exact bytes.
    pub raw: &'a [u8],
    /// The session id.
    pub id: Cow<'a, str>,
    /// The declared format version (1 when absent, as pi assumes).
    pub version: u64,
    /// The working directory the session belongs to.
    pub cwd: Option<Cow<'a, str>>,
    /// The file this session was forked from, if any.
    pub parent_session: Option<Cow<'a, str>>,
}

/// A session as pi loads it: the entries with their pi fields, parallel to the tree's nodes.
pub struct Session<'a> {
    /// The header; `None` only for an empty file.
    pub header: Option<Header<'a>>,
    /// Non-header entries in file order, as pi's `getEntries()` returns them.
    pub entries: Vec<Entry<'a>>,
    /// A v1 file's synthetic entry ids (its lines have none); empty for any other version.
    synthetic: Vec<String>,
    /// What shared views read of each entry ([`Session::memo`]), made on the first.
    memo: std::cell::OnceCell<super::project::FactsMemo<'a>>,
}

/// A pi session read ([`Session::parse`]): pi's reading of each entry, the tree's node of each
/// (the same index), and the warnings of what pi skips.
pub struct Parsed<'a> {
    /// pi's reading.
    pub session: Session<'a>,
    /// The tree's nodes: line, bytes, type name, id (synthetic in a v1 file) and parent.
    pub nodes: Vec<host::Node<'a>>,
    /// What pi skips or reads otherwise.
    pub warnings: Vec<Warning>,
}

/// Loads a pi session file: the neutral session (tree, header, warnings) with pi's reading of
/// every entry behind it.
pub fn load(file: &SessionFile) -> Result<host::Session<'_>, ParseError> {
    load_as(file, &super::Pi, 0, &[], |pi| Box::new(pi))
}

/// Loads a file in pi's format for another `host` whose files are pi's plus something before
/// (oh-my-pi: a title slot): the first `skip` lines are left out, `extra_types` are known besides
/// pi's, and `wrap` puts pi's reading behind the host's own session type.
pub(crate) fn load_as<'a>(
    file: &'a SessionFile,
    host: &'static dyn host::Host,
    skip: usize,
    extra_types: &[&str],
    wrap: impl FnOnce(Session<'a>) -> Box<dyn host::HostSession<'a> + 'a>,
) -> Result<host::Session<'a>, ParseError> {
    let Parsed { session: pi, nodes, mut warnings } = Session::parse_skipping(file, skip)?;
    let header = pi.header.as_ref().map(|h| host::Header {
        line: h.line,
        raw: h.raw,
        id: h.id.clone(),
        cwd: h.cwd.clone(),
        parent_session: h.parent_session.clone(),
    });
    let kinds: Vec<bool> = (pi.entries.iter().zip(&nodes))
        .map(|(e, n)| e.kind != EntryType::Other || extra_types.contains(&n.kind()))
        .collect();
    let mut session = host::Session::new(host, file, header, nodes, wrap(pi));
    check_tree(&session, &kinds, &mut warnings);
    session.warnings = warnings;
    Ok(session)
}

/// Warns about entries pi loads but reads oddly: unknown types, and parents that are not there.
fn check_tree(session: &host::Session<'_>, known: &[bool], warnings: &mut Vec<Warning>) {
    for (e, &known) in session.entries.iter().zip(known) {
        if !known {
            warnings.push(Warning {
                line: e.line(),
                message: format!(
                    "entry {}: unknown type {:?}; pi loads it but it adds nothing to the context",
                    e.id(),
                    e.kind()
                ),
            });
        }
        if let Some(parent) = e.parent_id().filter(|p| session.index_of(p).is_none()) {
            warnings.push(Warning {
                line: e.line(),
                message: format!(
                    "entry {}: parent {parent:?} not found; pi starts the branch at this entry (an orphan root)",
                    e.id()
                ),
            });
        }
    }
}

impl<'a> Session<'a> {
    /// What the session's shared views ([`host::View::shared`]) read of each entry, kept for
    /// the next: an audit that projects every leaf reads each entry once. Made on first use, so
    /// a command of one view holds none of it.
    pub(crate) fn memo(&self) -> &super::project::FactsMemo<'a> {
        self.memo.get_or_init(|| super::project::FactsMemo::new(self.entries.len()))
    }

    /// Parses a session file as pi 1.6.0 loads it, with the warnings of what pi skips.
    #[cfg(any(test, feature = "fixture-host"))]
    pub fn parse(file: &'a SessionFile) -> Result<Parsed<'a>, ParseError> {
        Self::parse_skipping(file, 0)
    }

    /// [`Session::parse`] leaving out the first `skip` physical lines.
    pub fn parse_skipping(file: &'a SessionFile, skip: usize) -> Result<Parsed<'a>, ParseError> {
        host::file::check_lines(&file.path, file.lines.len())?;
        let mut warnings = Vec::new();
        let mut header: Option<Header<'a>> = None;
        // One entry a line at most: reserved once, not doubled as it fills (on a 1,000,000-entry
        // chain the last doubling alone held ~230 MB of old and new entries at once).
        let mut entries = Vec::with_capacity(file.lines.len().saturating_sub(skip));
        let mut nodes = Vec::with_capacity(entries.capacity());
        let last = file.lines.len();
        for (number, line) in (1..).zip(&file.lines).skip(skip) {
            let text = file.line_text(line);
            if text.trim().is_empty() {
                continue;
            }
            if !file.line_is_utf8(line) {
                warnings.push(Warning {
                    line: number,
                    message: "invalid UTF-8; read with U+FFFD replacements, as pi reads it".into(),
                });
            }
            let fields = match Fields::parse(text) {
                Ok(f) => f,
                Err(e) => {
                    // pi takes the first line JSON.parse accepts as the header, whatever it is.
                    if header.is_none() && serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok() {
                        return Err(ParseError::NotASession { path: file.display().into_owned(), line: number });
                    }
                    let partial = number == last && !file.ends_with_newline();
                    warnings.push(Warning { line: number, message: malformed_message(text, &e, partial) });
                    continue;
                }
            };
            let raw = file.line_raw(line);
            let kind = as_str(fields.kind()).unwrap_or_default();
            if header.is_none() {
                if kind != "session" || as_str(fields.id()).is_none() {
                    return Err(ParseError::NotASession { path: file.display().into_owned(), line: number });
                }
                header = Some(Header {
                    line: number,
                    raw,
                    id: as_str(fields.id()).unwrap_or_default(),
                    version: fields.version().and_then(|v| v.get().parse::<u64>().ok()).unwrap_or(1),
                    cwd: as_str(fields.cwd()),
                    parent_session: as_str(fields.parent_session()),
                });
                continue;
            }
            if kind == "session" {
                warnings.push(Warning { line: number, message: "a second session header; pi ignores it".into() });
                continue;
            }
            let id = as_str(fields.id());
            if id.is_none() && header.as_ref().is_some_and(|h| h.version >= 2) {
                warnings.push(Warning { line: number, message: "entry has no string \"id\"; shake skips it".into() });
                continue;
            }
            odd_json_warnings(text, &fields, number, &mut warnings);
            let parent_id = as_str(fields.parent_id()).filter(|p| !p.is_empty());
            // At most `MAX_LINES` lines (`host::file::check_lines`): the number fits 32 bits.
            // `Fields` read the line, so it is under 4 GiB, and its bytes no longer than its
            // text: a node holds it.
            let node = host::Node::new(number as u32, raw, &kind, &id.unwrap_or_default(), parent_id.as_deref());
            let Some(node) = node else {
                warnings.push(Warning { line: number, message: "a line longer than 4 GiB; shake skips it".into() });
                continue;
            };
            entries.push(Entry::new(&kind, fields));
            nodes.push(node);
        }
        let header = match header {
            Some(h) => Some(h),
            None if file.raw().is_empty() => None,
            None if file.lines.iter().all(|l| file.line_text(l).trim().is_empty()) => None,
            None => return Err(ParseError::NoHeader { path: file.display().into_owned() }),
        };
        if header.is_none() {
            warnings.push(Warning {
                line: 0,
                message: "empty file (no session header); pi would start a new session in it".into(),
            });
        }
        let mut session = Session { header, entries, synthetic: Vec::new(), memo: std::cell::OnceCell::new() };
        session.migrate(&mut nodes, &mut warnings);
        Ok(Parsed { session, nodes, warnings })
    }

    /// The id of entry `index` (synthetic in a v1 file), as its node holds it.
    pub fn id(&self, index: usize) -> Cow<'_, str> {
        match self.synthetic.get(index) {
            Some(id) => Cow::Borrowed(id),
            None => as_str(self.entries[index].fields.id()).unwrap_or_default(),
        }
    }

    /// Returns a compaction's `firstKeptEntryId` (in a v1 file, the id of the entry its
    /// `firstKeptEntryIndex` names, where it names one).
    pub fn first_kept_entry_id(&self, index: usize) -> Option<Cow<'_, str>> {
        let e = &self.entries[index];
        let migrated = (!self.synthetic.is_empty() && e.kind == EntryType::Compaction)
            .then(|| {
                // pi indexes firstKeptEntryIndex into [header, ...entries]; malformed lines do not count.
                let k = e.fields.first_kept_entry_index()?.get().parse::<usize>().ok()?;
                self.synthetic.get(k.checked_sub(1)?)
            })
            .flatten();
        match migrated {
            Some(id) => Some(Cow::Borrowed(id)),
            None => as_str(e.fields.first_kept_entry_id()),
        }
    }

    /// Returns the header's declared version (3 for an empty file).
    pub fn version(&self) -> u64 {
        self.header.as_ref().map_or(CURRENT_VERSION, |h| h.version)
    }

    /// Tells whether pi would migrate (and so rewrite) this file when it opens it.
    pub fn needs_migration(&self) -> bool {
        self.version() < CURRENT_VERSION
    }

    /// Applies pi's v1→v2→v3 migration in memory (`migrateV1ToV2`, `migrateV2ToV3`).
    fn migrate(&mut self, nodes: &mut [host::Node<'a>], warnings: &mut Vec<Warning>) {
        let version = self.version();
        if version < 2 {
            self.synthetic = nodes.iter().map(|n| synthetic_id(n.line())).collect();
            for (i, node) in nodes.iter_mut().enumerate() {
                node.set_ids(&self.synthetic[i], i.checked_sub(1).map(|p| self.synthetic[p].as_str()));
            }
            warnings.push(Warning {
                line: 0,
                message: "v1 session (no entry ids): read as pi migrates it, with synthetic ids; pi assigns random ids and rewrites the file when it opens it".into(),
            });
        }
        if version < 3 {
            for entry in &mut self.entries {
                if entry.kind == EntryType::Message && entry.fields.message().is_some_and(has_hook_message_role) {
                    entry.hook_message_role = true;
                }
            }
        }
    }
}

/// Tells whether pi takes the file: its first JSON line is a session header (or it has no line
/// at all but blank ones: pi starts a new session in it). Reads only up to that line.
pub fn sniff(file: &SessionFile) -> Result<(), host::Refusal> {
    let mut any = false;
    for (number, line) in (1..).zip(&file.lines) {
        let text = file.line_text(line);
        if text.trim().is_empty() {
            continue;
        }
        any = true;
        let header = match Fields::parse(text) {
            Ok(f) => as_str(f.kind()).as_deref() == Some("session") && as_str(f.id()).is_some(),
            Err(_) if serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok() => false,
            Err(_) => continue,
        };
        return match header {
            true => Ok(()),
            false => Err(host::Refusal { line: number, reason: NOT_A_HEADER.into() }),
        };
    }
    match any {
        true => Err(host::Refusal { line: 0, reason: NO_JSON.into() }),
        false => Ok(()),
    }
}

/// Tells whether pi may shrink this file in place: its first JSON line among `head` (the file's
/// first bytes) is a session header of a version below 3, or cannot be told. pi migrates such a
/// file when it opens it and rewrites it through `openSync(path, "w")` (`_rewriteFile`), which
/// truncates it: a reader must not map it (`host::file`). A file pi does not take (no header
/// first) it never rewrites.
pub fn rewritten_in_place(head: &[u8]) -> bool {
    // The last line of `head` may be cut short: only complete lines decide.
    let complete = memchr::memrchr(b'\n', head).map_or(&head[..0], |i| &head[..i]);
    for line in complete.split(|&b| b == b'\n') {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let Ok(value) = serde_json::from_str::<serde_json::Value>(&String::from_utf8_lossy(line)) else { continue };
        if value.get("type").and_then(serde_json::Value::as_str) != Some("session") {
            return false;
        }
        // pi reads a missing version as 1 (`header.version ?? 1`); anything but a number is
        // taken as one pi may migrate.
        return value.get("version").is_none_or(|v| v.as_f64().is_none_or(|v| v < CURRENT_VERSION as f64));
    }
    true
}

const NOT_A_HEADER: &str = "not a pi session: the first JSON line is not a session header";
const NO_JSON: &str = "not a pi session: no line is valid JSON";

/// Reads one complete line for the store's import, with pi 1.6.0's tree rules: the first
/// parseable line is the header, v1 entries chain in file order, an entry without an id is not
/// part of the tree.
pub fn tree_line(text: &str, header: Option<u64>) -> host::TreeLine {
    use host::TreeLine;
    if text.trim().is_empty() {
        return TreeLine::Skip;
    }
    let Ok(fields) = Fields::parse(text) else {
        return TreeLine::Warn("malformed JSON; pi skips this line".into());
    };
    let kind = as_str(fields.kind());
    let id = as_str(fields.id()).map(|s| s.into_owned());
    let Some(version) = header else {
        return match (kind.as_deref(), id) {
            (Some("session"), Some(id)) => {
                TreeLine::Header { id, version: fields.version().and_then(|v| v.get().parse().ok()).unwrap_or(1) }
            }
            _ => TreeLine::Warn("the first JSON line is not a session header; pi refuses this file".into()),
        };
    };
    if kind.as_deref() == Some("session") {
        return TreeLine::Warn("a second session header; pi ignores it".into());
    }
    if version < 2 {
        return TreeLine::Entry { id: None, parent: None };
    }
    let Some(id) = id else { return TreeLine::Warn("entry has no string \"id\"; not part of the tree".into()) };
    let parent = as_str(fields.parent_id()).filter(|p| !p.is_empty()).map(|p| p.into_owned());
    TreeLine::Entry { id: Some(id), parent }
}

/// Warns about what shake reads otherwise than pi in a line `JSON.parse` takes: a value nested
/// past [`crate::js::MAX_DEPTH`] inside the entry's object (projected as empty), and lone surrogates in the fields that build
/// the tree (read as U+FFFD, so two ids that differ only there are one id to shake).
fn odd_json_warnings(text: &str, fields: &Fields<'_>, line: usize, warnings: &mut Vec<Warning>) {
    // The entry's own object is one level; what shake parses with its limit are its values.
    let limit = crate::js::MAX_DEPTH + 1;
    // Each level takes two bytes at least, so most lines need no count at all.
    let deep = text.len() > 2 * limit
        && memchr::memchr2_iter(b'[', b'{', text.as_bytes()).count() > limit
        && crate::js::depth(text) > limit;
    if deep {
        warnings.push(Warning {
            line,
            message: format!(
                "JSON nested deeper than {} levels; pi reads it (but its JSON.stringify fails near 4,000), shake projects this entry as empty",
                crate::js::MAX_DEPTH
            ),
        });
    }
    let tree = [("id", fields.id()), ("parentId", fields.parent_id()), ("targetId", fields.target_id())];
    for (key, raw) in tree {
        if raw.is_some_and(crate::js::has_lone_surrogate) {
            warnings.push(Warning {
                line,
                message: format!("{key:?} holds a lone surrogate escape; shake reads it as U+FFFD, so ids that differ only there are one id to shake"),
            });
        }
    }
}

/// Returns the id shake gives a v1 entry: its line number as 8 hex digits.
fn synthetic_id(line: usize) -> String {
    format!("{line:08x}")
}

fn has_hook_message_role(message: &serde_json::value::RawValue) -> bool {
    super::message::role_of(message).as_deref() == Some("hookMessage")
}

fn malformed_message(text: &str, error: &serde_json::Error, partial: bool) -> String {
    if partial {
        return "partial last line (no trailing newline and not valid JSON); pi skips it".into();
    }
    let valid_json = serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok();
    if valid_json {
        format!("valid JSON but not a session entry shake can read ({error}); skipped")
    } else {
        format!("malformed JSON ({error}); pi skips this line")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(s: &str) -> SessionFile {
        SessionFile::from_bytes("t.jsonl".into(), s.as_bytes().to_vec())
    }

    const HEAD: &str = r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#;

    #[test]
    fn garbage_before_header_and_malformed_lines_warn() {
        let f = file(&format!(
            "garbage\n{HEAD}\n\n{{\"type\":\"message\",\"id\":\"a\",\"parentId\":null}}\n{{broken\n{{\"type\":\"label\",\"id\":\"b\",\"parentId\":\"a\"}}\n{{\"type\":\"x\""
        ));
        let s = load(&f).unwrap();
        assert_eq!(s.entries.len(), 2);
        let lines: Vec<_> = s.warnings.iter().map(|w| w.line).collect();
        assert_eq!(lines, [1, 5, 7]);
        assert!(s.warnings[2].message.contains("partial last line"));
        assert_eq!(s.path(1).unwrap(), [0, 1]);
    }

    #[test]
    fn first_json_line_must_be_a_header() {
        let f = file("{\"type\":\"message\",\"id\":\"a\"}\n");
        let err = load(&f).unwrap_err();
        assert_eq!(err.to_string(), "t.jsonl:1: not a pi session: the first JSON line is not a session header");
        assert!(matches!(load(&file("nope\n")), Err(ParseError::NoHeader { .. })));
        let array_first = file(&format!("[1,2]\n{HEAD}\n"));
        assert!(matches!(load(&array_first), Err(ParseError::NotASession { line: 1, .. })));
        assert!(load(&file("")).unwrap().header.is_none());
    }

    #[test]
    fn orphans_unknown_types_and_empty_files_warn() {
        let f = file(&format!(
            "{HEAD}\n{{\"type\":\"wormhole\",\"id\":\"a\",\"parentId\":null}}\n{{\"type\":\"label\",\"id\":\"b\",\"parentId\":\"gone\"}}\n"
        ));
        let s = load(&f).unwrap();
        let got: Vec<_> = s.warnings.iter().map(|w| (w.line, w.message.split(';').next().unwrap())).collect();
        assert_eq!(got, [(2, "entry a: unknown type \"wormhole\""), (3, "entry b: parent \"gone\" not found")]);
        assert_eq!(s.path(1).unwrap(), [1]);
        let empty = file("");
        assert!(load(&empty).unwrap().warnings[0].message.starts_with("empty file"));
    }

    #[test]
    fn cycles_are_reported_not_followed() {
        let f = file(&format!(
            "{HEAD}\n{{\"type\":\"x\",\"id\":\"a\",\"parentId\":\"b\"}}\n{{\"type\":\"x\",\"id\":\"b\",\"parentId\":\"a\"}}\n"
        ));
        let s = load(&f).unwrap();
        assert!(s.path(1).is_err());
        assert!(s.leaves().is_empty());
        let own = file(&format!("{HEAD}\n{{\"type\":\"x\",\"id\":\"a\",\"parentId\":\"a\"}}\n"));
        let s = load(&own).unwrap();
        assert!(s.path(0).is_err());
        assert_eq!(s.leaves(), [0]);
    }

    /// Ids written with escapes are found by their decoded text: a unicode escape is the letter
    /// it names, a repeated id gives the later entry, and a parent written escaped otherwise
    /// finds its entry (the path goes through both).
    #[test]
    fn escaped_ids_are_found_decoded() {
        let f = file(&format!(
            "{HEAD}\n{}\n{}\n{}\n{}\n",
            r#"{"type":"message","id":"a\"b","parentId":null}"#,
            r#"{"type":"message","id":"\u0063d","parentId":"a\u0022b"}"#,
            r#"{"type":"label","id":"e","parentId":"cd"}"#,
            r#"{"type":"label","id":"c\u0064","parentId":"\u0061\"b"}"#,
        ));
        let s = load(&f).unwrap();
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        let ids: Vec<_> = s.entries.iter().map(|e| (e.id(), e.parent_id())).collect();
        assert_eq!(ids, [("a\"b", None), ("cd", Some("a\"b")), ("e", Some("cd")), ("cd", Some("a\"b"))]);
        assert_eq!((s.index_of("a\"b"), s.index_of("cd"), s.index_of("c\\u0064")), (Some(0), Some(3), None));
        assert_eq!(s.path(2).unwrap(), [0, 3, 2], "\"cd\" is the later entry");
        assert_eq!(s.entries[0].kind(), "message");
    }

    #[test]
    fn v1_is_migrated_in_memory() {
        let f = file(concat!(
            "{\"type\":\"session\",\"id\":\"old\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n",
            "{\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n",
            "{\"type\":\"message\",\"message\":{\"role\":\"hookMessage\",\"content\":\"x\"}}\n",
            "{\"type\":\"compaction\",\"summary\":\"s\",\"firstKeptEntryIndex\":2}\n",
        ));
        let s = load(&f).unwrap();
        assert!(s.needs_migration());
        assert_eq!(s.path(2).unwrap(), [0, 1, 2]);
        let pi = Session::parse(&f).unwrap().session;
        assert_eq!(pi.first_kept_entry_id(2).as_deref(), Some(s.entries[1].id()));
        assert_eq!(pi.entries[1].role().as_deref(), Some("custom"));
        assert_eq!(pi.id(2), s.entries[2].id());
    }
}

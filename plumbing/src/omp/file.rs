//! An oh-my-pi session file read whole: the title slot, the header and the entries, with each
//! entry's exact line kept (`spec/pi-extensions.md` §3.1–3.2, `pi-session-format.md` §8).
//!
//! An entry keeps its type, id and parent (a field scan of the line, [`crate::js::json::members`]);
//! the rest is parsed from the line where it is read ([`OmpFile::value`]) and let go, so a
//! file costs little more than its bytes.
//!
//! OMP rewrites its files in place (title slot) and whole (`/shake`, pruning: temp file and
//! rename), so a reader holds no descriptor: [`OmpFile::read`] reopens by path and checks that
//! the file it read is still the one at the path, retrying a few times before it gives up. The
//! title slot is OMP's to overwrite: it is parsed for display only, never byte-compared.

use std::borrow::Cow;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use thiserror::Error;

use crate::host::error::HostError;
use crate::host::file::{Bytes, SessionFile, READ_ATTEMPTS};

/// The title slot's fixed width, `\n` included (`session-title-slot.ts`).
pub const TITLE_SLOT_BYTES: usize = 256;

/// Why an OMP file could not be read. Each names the file, and the line where there is one.
#[derive(Debug, Error)]
pub enum OmpError {
    /// The system refused to read it.
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// The first line is OMP's title slot, but not whole.
    #[error("{}:1: torn title slot: {why} (OMP writes a {TITLE_SLOT_BYTES}-byte JSON line)", path.display())]
    TornTitle { path: PathBuf, why: String },
    /// No header before the first entry.
    #[error("{}: no session header (no `\"type\":\"session\"` line before the first entry)", path.display())]
    MissingHeader { path: PathBuf },
    /// A header of a version OMP migrates when it opens the file.
    #[error("{}:{line}: session header version {version}; open it in OMP once to migrate it to version 3", path.display())]
    OldVersion { path: PathBuf, line: usize, version: String },
    /// OMP kept rewriting it while it was read.
    #[error("{}: the file was rewritten {attempts} times while being read; try again when OMP is idle", path.display())]
    Unstable { path: PathBuf, attempts: usize },
}

impl From<OmpError> for HostError {
    fn from(e: OmpError) -> HostError {
        match &e {
            OmpError::Io { source, .. } => HostError::Io { kind: source.kind(), source: Box::new(e) },
            _ => HostError::refused(e.to_string()).caused_by(e),
        }
    }
}

/// The title slot: the first line when it is OMP's fixed-width title record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TitleSlot {
    /// The session's title (empty when none was set).
    pub title: String,
}

/// One entry line (not the title slot, not the header).
#[derive(Clone, Debug)]
pub struct OmpEntry {
    /// 1-based physical line number.
    pub line: usize,
    /// The line's bytes in [`OmpFile::bytes`], `\n` excluded.
    pub raw: Range<usize>,
    kind: Box<str>,
    id: Option<Box<str>>,
    parent_id: Option<Box<str>>,
    /// The line decoded as JavaScript decodes it, for a line that is not UTF-8 (U+FFFD for each
    /// maximal invalid sequence, as `readFileSync(file, "utf8")` and `from_utf8_lossy` both do).
    decoded: Option<Box<str>>,
}

impl OmpEntry {
    /// The entry's `type`.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The entry's `id`, when it is a string.
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// The entry's `parentId`, when it is a string.
    pub fn parent_id(&self) -> Option<&str> {
        self.parent_id.as_deref()
    }
}

/// The message of a `message` entry's value.
pub fn message(value: &Map<String, Value>) -> Option<&Map<String, Value>> {
    match value.get("type").and_then(Value::as_str) {
        Some("message") => value.get("message")?.as_object(),
        _ => None,
    }
}

/// The role of a `message` entry's message.
pub fn role(value: &Map<String, Value>) -> Option<&str> {
    message(value)?.get("role")?.as_str()
}

/// A whole OMP session file.
// The whole file as OMP reads it: its path, header line and skipped lines are for whoever
// reads it whole (the tests, a tool), not for the engine, which reads the entries.
#[cfg_attr(not(feature = "fixture-host"), allow(dead_code))]
#[derive(Clone, Debug)]
pub struct OmpFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// The bytes as read (a big file's map, shared with the `SessionFile` it came from).
    pub bytes: Bytes,
    /// The title slot, when the file has one.
    pub title: Option<TitleSlot>,
    /// The `session` header line.
    pub header: OmpEntry,
    /// The header, parsed.
    pub header_value: Map<String, Value>,
    /// Every parseable entry line after the header, in file order (malformed lines are skipped,
    /// as OMP's loader skips them).
    pub entries: Vec<OmpEntry>,
    /// 1-based numbers of the lines that did not parse as a JSON object.
    pub malformed: Vec<usize>,
    /// The bytes as text, when the read checked them whole (their lines are not checked again).
    text: Option<Utf8>,
}

/// Bytes checked to be UTF-8 (their own handle: [`OmpFile::bytes`] is the caller's to replace).
#[derive(Clone)]
struct Utf8(Bytes);

impl Utf8 {
    fn str(&self) -> &str {
        // SAFETY: made only of bytes checked to be UTF-8 (`OmpFile::scanned`, given them as text),
        // which a `Bytes` never changes (`SessionFile::text` relies on the same).
        unsafe { std::str::from_utf8_unchecked(&self.0) }
    }
}

impl std::fmt::Debug for Utf8 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Utf8({} bytes)", self.0.len())
    }
}

/// Tells whether `bytes` look like an OMP file: a title slot first, or a header carrying one of
/// OMP's own header fields. A pi file has neither.
pub fn looks_like_omp(bytes: &[u8]) -> bool {
    let first = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
    if first.starts_with(br#"{"type":"title""#) {
        return true;
    }
    let Ok(Value::Object(header)) = serde_json::from_slice::<Value>(first) else { return false };
    header.get("type").and_then(Value::as_str) == Some("session")
        && ["titleSource", "additionalDirectories", "previousSessionFiles", "providerPromptCacheKey"]
            .iter()
            .any(|k| header.contains_key(*k))
}

impl OmpFile {
    /// Reads the file at `path`, reopening it until two looks at the path agree (OMP may replace
    /// it with a rename at any moment).
    #[cfg(any(test, feature = "fixture-host"))]
    pub fn read(path: &Path) -> Result<OmpFile, OmpError> {
        Self::read_with(path, || {})
    }

    /// [`OmpFile::read`] with a hook run between reading the bytes and checking the path again
    /// (tests use it to rewrite the file mid-read).
    #[cfg(any(test, feature = "fixture-host"))]
    pub fn read_with(path: &Path, between: impl FnMut()) -> Result<OmpFile, OmpError> {
        let read = crate::host::file::read_settled(path, &[&super::host::Omp], between)
            .map_err(|source| OmpError::Io { path: path.to_path_buf(), source })?;
        match read.settled {
            true => Self::parse(path.to_path_buf(), read.bytes),
            false => Err(OmpError::Unstable { path: path.to_path_buf(), attempts: READ_ATTEMPTS }),
        }
    }

    /// [`OmpFile::read`], with the same bytes as a [`SessionFile`] (shared, not copied) for the
    /// store's import of this read ([`crate::store::touch::import_read`]): the file is mapped
    /// once, not once per reader.
    pub fn read_shared(path: &Path) -> Result<(OmpFile, SessionFile), OmpError> {
        let read = SessionFile::read(path, &[&super::host::Omp])
            .map_err(|source| OmpError::Io { path: path.to_path_buf(), source })?;
        if read.stamp().is_none() {
            return Err(OmpError::Unstable { path: path.to_path_buf(), attempts: READ_ATTEMPTS });
        }
        Ok((Self::scanned(path.to_path_buf(), read.bytes().clone(), read.utf8())?, read))
    }

    /// Parses bytes already in memory (a version restored from the store, a test).
    pub fn parse(path: PathBuf, bytes: impl Into<Bytes>) -> Result<OmpFile, OmpError> {
        Self::scanned(path, bytes.into(), None)
    }

    /// [`OmpFile::parse`], `text` being the bytes when they are known to be UTF-8.
    fn scanned(path: PathBuf, bytes: Bytes, text: Option<&str>) -> Result<OmpFile, OmpError> {
        let Scan { title, header: (header, header_value), entries, malformed } = scan(&path, &bytes, text, true)?;
        // Only the very bytes checked (the same memory) are kept as text.
        let same = |t: &&str| t.as_ptr() == bytes.as_ptr() && t.len() == bytes.len();
        let text = text.filter(same).map(|_| Utf8(bytes.clone()));
        Ok(OmpFile { path, bytes, title, header, header_value, entries, malformed, text })
    }

    /// Makes [`OmpFile::parse`]'s checks (torn title slot, missing header, old version) without
    /// parsing the entries: they stop at the header. Returns the title slot, when there is one.
    pub fn check(path: &Path, bytes: &[u8]) -> Result<Option<TitleSlot>, OmpError> {
        Ok(scan(path, bytes, None, false)?.title)
    }

    /// The bytes after the title slot: what a version of the file is compared by.
    pub fn body(&self) -> &[u8] {
        if self.title.is_some() {
            &self.bytes[TITLE_SLOT_BYTES.min(self.bytes.len())..]
        } else {
            &self.bytes
        }
    }

    /// Where the entries start: the end of the header line, `\n` included.
    #[cfg(any(test, feature = "fixture-host"))]
    pub fn header_end(&self) -> usize {
        (self.header.raw.end + 1).min(self.bytes.len())
    }

    /// A line's exact bytes.
    pub fn line_bytes(&self, entry: &OmpEntry) -> &[u8] {
        &self.bytes[entry.raw.clone()]
    }

    /// An entry's line as raw JSON, to be read with [`crate::js::json::trusted`]: the scan
    /// checked it is one JSON object of UTF-8 text.
    pub fn raw<'s>(&'s self, entry: &'s OmpEntry) -> &'s serde_json::value::RawValue {
        let text = self.text_of(entry);
        crate::js::json::raw_within(text, 0..text.len())
    }

    /// An entry's line as text: as OMP decodes it when it is not UTF-8.
    fn text_of<'s>(&'s self, entry: &'s OmpEntry) -> &'s str {
        if let Some(decoded) = &entry.decoded {
            return decoded;
        }
        let checked = self.text.as_ref().and_then(|t| t.str().get(entry.raw.clone()));
        // Else the line is checked again (bytes restored from the store, a test).
        checked.or_else(|| std::str::from_utf8(self.line_bytes(entry)).ok()).unwrap_or("{}")
    }

    /// An entry parsed from its line (again: nothing holds the parsed entries), as `JSON.parse`
    /// reads it (a lone surrogate as U+FFFD).
    pub fn value(&self, entry: &OmpEntry) -> Map<String, Value> {
        match crate::js::value(self.text_of(entry)) {
            Some(Value::Object(map)) => map,
            _ => Map::new(),
        }
    }
}

/// What [`scan`] read.
struct Scan {
    title: Option<TitleSlot>,
    header: (OmpEntry, Map<String, Value>),
    entries: Vec<OmpEntry>,
    malformed: Vec<usize>,
}

/// Reads the title slot, the header and, when `entries`, every entry after it (else it stops at
/// the header, where the last error can arise). `text` is `bytes` when they are known to be
/// UTF-8 (each line is then not checked again).
fn scan(path: &Path, bytes: &[u8], text: Option<&str>, entries_too: bool) -> Result<Scan, OmpError> {
    let mut title = None;
    let mut header = None;
    let mut entries = Vec::new();
    let mut malformed = Vec::new();
    let mut start = 0;
    // Lines found by memchr: a split by a byte test was 8% of a cold meter's instructions.
    let ends = memchr::memchr_iter(b'\n', bytes).chain([bytes.len()]);
    for (index, end) in ends.enumerate() {
        let (raw, line) = (start..end, &bytes[start..end]);
        start = end + 1;
        let number = index + 1;
        if index == 0 && line.starts_with(br#"{"type":"title""#) {
            title = Some(parse_title(path, line, raw.end < bytes.len())?);
            continue;
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if header.is_some() && !entries_too {
            break;
        }
        // A line of checked text is text (it ends at a line feed, never inside a character).
        let Some(entry) = scan_entry(line, text.map(|t| &t[raw.clone()]), number, raw) else {
            malformed.push(number);
            continue;
        };
        match entry.kind() {
            "session" if header.is_none() => {
                let value = serde_json::from_slice::<Map<String, Value>>(line).unwrap_or_default();
                check_version(path, number, &value)?;
                header = Some((entry, value));
            }
            "session" | "title" => {}
            _ if header.is_none() => return Err(OmpError::MissingHeader { path: path.to_path_buf() }),
            _ => entries.push(entry),
        }
    }
    let header = header.ok_or_else(|| OmpError::MissingHeader { path: path.to_path_buf() })?;
    Ok(Scan { title, header, entries, malformed })
}

/// An entry's type, id and parent, read without building the entry; `None` when the line is
/// not a JSON object (what OMP's reader skips). The line is read as OMP reads it: decoded with
/// U+FFFD where it is not UTF-8, a lone surrogate escape taken (`JSON.parse` takes it).
fn scan_entry(line: &[u8], text: Option<&str>, number: usize, raw: Range<usize>) -> Option<OmpEntry> {
    let text = match text {
        Some(text) => Cow::Borrowed(text),
        None => String::from_utf8_lossy(line),
    };
    let [kind, id, parent] = crate::js::json::members(&text, &["type", "id", "parentId"])?;
    // `Value::as_str`: a string, decoded (only a string that parses is one here).
    let string = |raw: Option<&serde_json::value::RawValue>| {
        raw.and_then(|r| serde_json::from_str::<String>(r.get()).ok()).map(String::into_boxed_str)
    };
    let (kind, id, parent_id) = (string(kind).unwrap_or_default(), string(id), string(parent));
    // Kept only when decoding changed the line (it was not UTF-8).
    let decoded = match text {
        Cow::Owned(decoded) => Some(decoded.into_boxed_str()),
        Cow::Borrowed(_) => None,
    };
    Some(OmpEntry { line: number, raw, kind, id, parent_id, decoded })
}

fn parse_title(path: &Path, line: &[u8], has_newline: bool) -> Result<TitleSlot, OmpError> {
    let torn = |why: String| OmpError::TornTitle { path: path.to_path_buf(), why };
    if !has_newline || line.len() + 1 != TITLE_SLOT_BYTES {
        let width = line.len() + usize::from(has_newline);
        return Err(torn(format!("the first line is {width} bytes")));
    }
    match serde_json::from_slice::<Value>(line) {
        Ok(Value::Object(slot)) => {
            Ok(TitleSlot { title: slot.get("title").and_then(Value::as_str).unwrap_or_default().to_string() })
        }
        Ok(_) => Err(torn("not a JSON object".into())),
        Err(e) => Err(torn(format!("not JSON ({e})"))),
    }
}

fn check_version(path: &Path, line: usize, header: &Map<String, Value>) -> Result<(), OmpError> {
    match header.get("version").and_then(Value::as_u64) {
        Some(v) if v >= 3 => Ok(()),
        other => Err(OmpError::OldVersion {
            path: path.to_path_buf(),
            line,
            version: other.map_or("1".to_string(), |v| v.to_string()),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(title: &str) -> String {
        let mut line =
            format!(r#"{{"type":"title","v":1,"title":"{title}","updatedAt":"2026-01-01T00:00:00.000Z","pad":""#);
        line.push_str(&" ".repeat(TITLE_SLOT_BYTES - line.len() - 3));
        line.push_str("\"}\n");
        line
    }

    const HEADER: &str = r#"{"type":"session","id":"s","timestamp":"t","cwd":"/w","version":3}"#;

    /// An OMP file's errors name it as a path and keep what the system said: the CLI's error
    /// for a refused read is an I/O error (exit 4; a missing file the user's, exit 1) whose
    /// source is the OMP error, the user's (exit 1) for a file that is not OMP's to read.
    #[cfg(feature = "cli")]
    #[test]
    fn errors_keep_the_path_and_the_systems_error() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("gone.jsonl");
        let e = OmpFile::read(&missing).unwrap_err();
        let OmpError::Io { path, source } = &e else { panic!("{e:?}") };
        assert_eq!((path, source.kind()), (&missing, std::io::ErrorKind::NotFound));
        let e = crate::Error::from(HostError::from(e));
        // A file not there is the user's to name again (exit 1), as every missing file is.
        assert_eq!(e.kind.exit_code(), 1);
        assert!(std::error::Error::source(&e).is_some_and(|s| s.is::<OmpError>()));
        // Reading /proc/self/mem from offset 0 fails with EIO, even for root: an I/O error.
        let e = crate::Error::from(HostError::from(OmpFile::read(Path::new("/proc/self/mem")).unwrap_err()));
        assert_eq!(e.kind.exit_code(), 4, "{}", e.message);
        let e = crate::Error::from(HostError::from(OmpFile::check(&missing, b"{}\n").unwrap_err()));
        assert!(
            e.message.ends_with("no session header (no `\"type\":\"session\"` line before the first entry)"),
            "{}",
            e.message
        );
        assert_eq!(e.kind.exit_code(), 1);
    }

    #[test]
    fn reads_title_header_and_entries() {
        let text =
            format!("{}{HEADER}\n{{\"type\":\"message\",\"id\":\"a\",\"parentId\":null}}\nnot json\n", slot("Hi"));
        let f = OmpFile::parse("t.jsonl".into(), text.into_bytes()).unwrap();
        assert_eq!(f.title, Some(TitleSlot { title: "Hi".into() }));
        assert_eq!(f.header.line, 2);
        assert_eq!(f.entries.len(), 1);
        assert_eq!((f.entries[0].line, f.entries[0].id()), (3, Some("a")));
        assert_eq!(f.malformed, [4]);
        assert!(f.body().starts_with(HEADER.as_bytes()));
        assert!(looks_like_omp(&f.bytes));
        assert!(!looks_like_omp(HEADER.as_bytes()));
    }

    #[test]
    fn torn_title_slot_names_the_file_and_line() {
        let mut text = slot("Hi").into_bytes();
        text[100] = b'"';
        text.extend_from_slice(HEADER.as_bytes());
        let e = OmpFile::parse("t.jsonl".into(), text).unwrap_err().to_string();
        assert!(e.starts_with("t.jsonl:1: torn title slot: not JSON"), "{e}");
        let short = format!("{{\"type\":\"title\",\"v\":1}}\n{HEADER}\n");
        let e = OmpFile::parse("t.jsonl".into(), short.into_bytes()).unwrap_err().to_string();
        assert!(e.contains("the first line is 23 bytes"), "{e}");
    }

    #[test]
    fn missing_header_and_old_versions_are_refused() {
        let e = OmpFile::parse("t.jsonl".into(), b"{\"type\":\"message\",\"id\":\"a\"}\n".to_vec()).unwrap_err();
        assert_eq!(e.to_string(), "t.jsonl: no session header (no `\"type\":\"session\"` line before the first entry)");
        let e = OmpFile::parse("t.jsonl".into(), b"{\"type\":\"session\",\"version\":2}\n".to_vec()).unwrap_err();
        assert!(e.to_string().starts_with("t.jsonl:1: session header version 2"), "{e}");
    }

    #[test]
    fn a_file_rewritten_while_read_is_read_again_or_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, format!("{HEADER}\n")).unwrap();
        let rewrite = |n: usize| {
            let tmp = dir.path().join(format!("tmp{n}"));
            std::fs::write(&tmp, format!("{HEADER}\n{{\"type\":\"message\",\"id\":\"x{n}\"}}\n")).unwrap();
            std::fs::rename(&tmp, &path).unwrap();
        };
        // Rewritten once: the second attempt reads the new file whole.
        let mut calls = 0;
        let f = OmpFile::read_with(&path, || {
            calls += 1;
            if calls == 1 {
                rewrite(calls)
            }
        })
        .unwrap();
        assert_eq!(f.entries[0].id(), Some("x1"));
        // Rewritten on every attempt: refused, and the file is untouched by the reader.
        let mut n = 10;
        let e = OmpFile::read_with(&path, || {
            n += 1;
            rewrite(n)
        })
        .unwrap_err();
        assert!(e.to_string().contains("rewritten 4 times while being read"), "{e}");
    }
}

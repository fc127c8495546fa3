//! Writing Claude Code transcripts the way an outside tool safely may (spec: pi-extensions §2.5):
//! a fork is a copy of the file under a new session uuid where only the `"sessionId":"<old>"`
//! bytes and the folded `tool_result` contents differ; every other byte, key order and
//! separator is kept (Claude Code's loader scans raw bytes above 5 MiB). Folded results become
//! Claude Code's own `<persisted-output>` placeholder, pointing at the original saved first.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Write;
use std::ops::Range;
use std::path::Path;

use serde_json::value::RawValue;

use super::transcript::Transcript;
use crate::durable::{Batch, FileError};
use crate::js::json::{js_string, trusted, RawObject};
use crate::js::utf16_len;

/// The exact byte range of each `tool_result` block's `content` in a row's line, by
/// `tool_use_id` (empty for lines that are not user rows with results).
pub fn result_spans(line: &str) -> Vec<(String, Range<usize>)> {
    block_spans(line, "tool_result", "tool_use_id", "content")
}

/// The exact byte range of each `tool_use` block's `input` in a row's line, by the call's `id`
/// (empty for lines that are not assistant rows with calls).
pub fn input_spans(line: &str) -> Vec<(String, Range<usize>)> {
    block_spans(line, "tool_use", "id", "input")
}

/// The exact byte range of member `member` of each block of type `kind` in a row's
/// `message.content`, by the block's string member `id`.
fn block_spans(line: &str, kind: &str, id: &str, member: &str) -> Vec<(String, Range<usize>)> {
    let span = |raw: &RawValue| {
        let start = raw.get().as_ptr() as usize - line.as_ptr() as usize;
        start..start + raw.get().len()
    };
    let Some(row) = RawObject::parse(line) else { return Vec::new() };
    let Some(message) = row.get("message").and_then(|m| RawObject::parse(m.get())) else { return Vec::new() };
    let Some(content) = message.get("content") else { return Vec::new() };
    let Ok(blocks) = serde_json::from_str::<Vec<&RawValue>>(content.get()) else { return Vec::new() };
    let mut spans = Vec::new();
    for block in blocks {
        let Some(b) = RawObject::parse(block.get()) else { continue };
        let field = |k: &str| b.get(k).and_then(|v| serde_json::from_str::<String>(v.get()).ok());
        if field("type").as_deref() != Some(kind) {
            continue;
        }
        if let (Some(id), Some(value)) = (field(id), b.get(member)) {
            // The RawObject re-borrows from `block`, itself a slice of `line`.
            spans.push((id, span(value)));
        }
    }
    spans
}

/// What a fork changes besides the session id, as the JSON to write at each place: an undo's
/// borrow the originals the plan read, a fold's are its placeholders.
#[derive(Debug, Default)]
pub struct Replace<'a> {
    /// The new `content` of each `tool_result`, by `tool_use_id` (a JSON string: [`js_string`]
    /// of the text).
    pub results: HashMap<String, Cow<'a, str>>,
    /// The new `input` of each `tool_use` block, by the call's `id` (a JSON object).
    pub inputs: HashMap<String, Cow<'a, str>>,
}

impl<'a> Replace<'a> {
    /// The results of `results` replaced, no input.
    #[cfg(test)]
    pub fn results(results: impl IntoIterator<Item = (String, Cow<'a, str>)>) -> Replace<'a> {
        Replace { results: results.into_iter().collect(), inputs: HashMap::new() }
    }
}

/// Writes a fork's bytes to `out`, line by line: every line of `t` as it is, except that rows
/// whose `sessionId` is `old_id` get `new_id` in each `"sessionId":"<old_id>"`, the `content` of
/// each `tool_result` named in `replace` becomes that JSON string, and the `input` of each
/// `tool_use` named there that JSON object (the call's id and name, and every other byte, kept).
/// Returns the ids replaced.
pub fn write_fork_bytes(
    t: &Transcript,
    old_id: &str,
    new_id: &str,
    replace: &Replace<'_>,
    out: &mut dyn Write,
) -> std::io::Result<Vec<String>> {
    let raw = t.file.raw();
    let old_key = format!("\"sessionId\":{}", js_string(old_id));
    let new_key = format!("\"sessionId\":{}", js_string(new_id));
    let mut replaced = Vec::new();
    let mut rows = t.rows.iter().peekable();
    let mut cursor = 0;
    for (number, line) in (1..).zip(&t.file.lines) {
        out.write_all(&raw[cursor..line.raw.start])?;
        cursor = line.raw.end;
        let bytes = &raw[line.raw.clone()];
        let row = rows.next_if(|r| r.line == number);
        let Some(row) = row.filter(|r| r.session_id() == Some(old_id)) else {
            out.write_all(bytes)?;
            continue;
        };
        let text = t.file.line_text(line);
        let mut edits: Vec<(Range<usize>, &str)> = Vec::new();
        if !replace.results.is_empty() && row.kind() == "user" && row.has_tool_result() {
            for (id, span) in result_spans(text) {
                if let Some(new) = replace.results.get(&id) {
                    edits.push((span, new));
                    replaced.push(id);
                }
            }
        }
        if !replace.inputs.is_empty() && row.kind() == "assistant" {
            for (id, span) in input_spans(text) {
                if let Some(new) = replace.inputs.get(&id) {
                    edits.push((span, new));
                    replaced.push(id);
                }
            }
        }
        for (at, _) in text.match_indices(&old_key) {
            if !edits.iter().any(|(r, _)| r.contains(&at)) {
                edits.push((at..at + old_key.len(), &new_key));
            }
        }
        edits.sort_by_key(|(r, _)| r.start);
        let mut at = 0;
        for (range, with) in edits {
            out.write_all(&bytes[at..range.start])?;
            out.write_all(with.as_bytes())?;
            at = range.end;
        }
        out.write_all(&bytes[at..])?;
    }
    out.write_all(&raw[cursor..])?;
    Ok(replaced)
}

/// [`write_fork_bytes`] into memory: the fork's bytes and the ids replaced.
#[cfg(any(test, feature = "fixture-host"))]
pub fn fork_bytes(t: &Transcript, old_id: &str, new_id: &str, replace: &Replace<'_>) -> (Vec<u8>, Vec<String>) {
    let mut out = Vec::with_capacity(t.file.raw().len());
    let replaced = write_fork_bytes(t, old_id, new_id, replace, &mut out).expect("writing to memory cannot fail");
    (out, replaced)
}

/// What a folded tool input's placeholder says after its size: where the input as written is
/// saved ([`super::fork::saved_input_path`]), so the model can `Read` it back.
pub fn input_way_back(saved: &Path) -> String {
    format!("{INPUT_SAVED}{}", saved.display())
}

/// The words before the saved input's path in a folded input's placeholder.
const INPUT_SAVED: &str = "the input as written is saved in ";

/// The file a folded tool input's placeholder names ([`input_way_back`]): where its input as
/// written is, wherever the fold that wrote it read the transcript (a fork's placeholders name
/// its source's saved files). `None` when no string member of `input` is such a placeholder.
pub fn folded_input_path(input: &RawValue) -> Option<std::path::PathBuf> {
    trusted::members(input)?.flatten().find_map(|(_, value)| {
        let text = serde_json::from_str::<Cow<'_, str>>(value.get()).ok()?;
        let path = text.strip_prefix('[')?.strip_suffix(']')?.rsplit_once(INPUT_SAVED)?.1;
        Some(std::path::PathBuf::from(path))
    })
}

/// Whether a tool input (its JSON) holds a placeholder of a folded input ([`input_way_back`]):
/// the cheap look a view takes at every call (the placeholder is then checked against the saved
/// file before anything is put back).
pub fn holds_folded_input(json: &str) -> bool {
    memchr::memmem::find(json.as_bytes(), INPUT_SAVED.as_bytes()).is_some()
}

/// Whether tool input `now` is `original` (JSON, as saved) with its big string members
/// ([`crate::regions::is_big_string`]), and those alone, turned into one placeholder that names
/// `saved`: what a fold of it writes. `None` when either is not an object whose keys hold no
/// escape.
pub fn is_folded_input(now: &RawValue, original: &str, saved: &Path) -> Option<bool> {
    let original: &RawValue = serde_json::from_str(original).ok()?;
    let now: Vec<_> = trusted::members(now)?.collect::<Option<_>>()?;
    let was: Vec<_> = trusted::members(original)?.collect::<Option<_>>()?;
    let ending = format!(": {}]", input_way_back(saved));
    let is_placeholder = |v: &RawValue| {
        serde_json::from_str::<Cow<'_, str>>(v.get()).is_ok_and(|t| t.starts_with('[') && t.ends_with(&ending))
    };
    let mut placeholder: Option<&str> = None;
    for ((key, value), (was_key, was_value)) in now.iter().zip(&was) {
        if key != was_key {
            return Some(false);
        }
        if !crate::regions::is_big_string(was_value) {
            match value.get() == was_value.get() {
                true => continue,
                false => return Some(false),
            }
        }
        let one = placeholder.is_none_or(|p| p == value.get());
        if !(one && is_placeholder(value)) {
            return Some(false);
        }
        placeholder = Some(value.get());
    }
    Some(now.len() == was.len() && placeholder.is_some())
}

/// What Claude Code puts before a preview (`Preview (first 2KB):`), in characters.
pub const PREVIEW_CHARS: usize = 2000;

/// Claude Code's own placeholder for an output saved to `path` (its `<persisted-output>` form,
/// 2.1.328): the size, the path, and a preview of up to 2,000 UTF-16 units cut at the last
/// newline past the half, never inside a surrogate pair.
#[cfg(any(test, feature = "fixture-host"))]
pub fn placeholder(text: &str, path: &Path) -> String {
    noted_placeholder(text, path, None)
}

/// [`placeholder`] with a line saying why the output was folded (a superseded read), after the
/// line naming the saved file (which [`original`](super::host) reads back).
pub fn noted_placeholder(text: &str, path: &Path, note: Option<&str>) -> String {
    let (preview, more) = preview(text, PREVIEW_CHARS);
    let preview = preview.replace("</persisted-output>", "<\\/persisted-output>");
    let note = note.map(|n| format!("\n{}", n.replace('\n', " "))).unwrap_or_default();
    format!(
        "<persisted-output>\nOutput too large ({}). Full output saved to: {}{note}\n\nPreview (first {}):\n{preview}{}</persisted-output>",
        size(utf16_len(text)),
        path.display(),
        size(PREVIEW_CHARS),
        if more { "\n...\n" } else { "\n" }
    )
}

/// The note of a placeholder [`noted_placeholder`] wrote: its third line, when the blank line
/// before the preview follows it.
pub fn note_of(placeholder: &str) -> Option<&str> {
    let mut lines = placeholder.strip_prefix("<persisted-output>\n")?.splitn(4, '\n').skip(1);
    let note = lines.next().filter(|n| !n.is_empty())?;
    (lines.next() == Some("")).then_some(note)
}

/// Claude Code's size label: `N bytes` below 1 KiB, else one decimal of KB or MB without `.0`.
fn size(n: usize) -> String {
    let one = |v: f64, unit: &str| {
        let s = format!("{v:.1}");
        format!("{}{unit}", s.strip_suffix(".0").unwrap_or(&s))
    };
    match n {
        n if n < 1024 => format!("{n} bytes"),
        n if n < 1024 * 1024 => one(n as f64 / 1024.0, "KB"),
        n => one(n as f64 / (1024.0 * 1024.0), "MB"),
    }
}

/// The first `max` UTF-16 units of `text`, cut at its last newline when that lies past half
/// of them, and never between the halves of a surrogate pair; with whether text was left out.
fn preview(text: &str, max: usize) -> (&str, bool) {
    if utf16_len(text) <= max {
        return (text, false);
    }
    // The byte offset where `max` UTF-16 units end, rounded down to a whole character.
    let mut units = 0;
    let mut end = 0;
    for (i, c) in text.char_indices() {
        if units + c.len_utf16() > max {
            break;
        }
        units += c.len_utf16();
        end = i + c.len_utf8();
    }
    let head = &text[..end];
    let cut = match head.rfind('\n') {
        Some(nl) if utf16_len(&head[..nl]) > max / 2 => nl,
        _ => end,
    };
    (&text[..cut], true)
}

/// Why an original could not be saved; the fold is then refused (nothing written).
#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    /// The tool_use id is not safe as a file name (`^[A-Za-z0-9_-]{1,128}$`).
    #[error("tool_use id {0:?} is not a safe file name")]
    UnsafeId(String),
    /// A different file is already there; it is never overwritten.
    #[error(
        "{0} exists with other content than the result it would save; not overwritten (move it away to fold again)"
    )]
    Exists(String),
    /// A folder of the path is a symbolic link (or not a folder): originals go only into real
    /// folders beside the transcript, never where a link leads.
    #[error("{0} is a symbolic link or not a folder; originals are saved only in a real folder beside the transcript")]
    NotAFolder(String),
    /// The file system refused.
    #[error(transparent)]
    File(#[from] FileError),
}

/// Saves `text` as `<dir>/<id>.txt`, to be made durable with `batch` before any placeholder
/// points at it: folders made 0700 (`dir` and its parent must be real folders, not links), the
/// text written to a hidden temp file (0600) that the batch renames into place once on disk, so
/// a run killed midway never leaves a partial original under the final name. An existing file
/// with the same bytes is reused (and synced: a run that died may have left it unwritten); one
/// holding the start of `text` only (an older shake killed while writing it) is replaced; one
/// with other bytes is an error. Returns the file's path.
pub fn save_original(dir: &Path, id: &str, text: &str, batch: &mut Batch) -> Result<std::path::PathBuf, SaveError> {
    save_as(dir, id, "txt", text, batch)
}

/// [`save_original`] of a tool call's input as written (a JSON object), as `<dir>/<id>.input.json`:
/// beside its result's original, which has the same id.
pub fn save_input(dir: &Path, id: &str, json: &str, batch: &mut Batch) -> Result<std::path::PathBuf, SaveError> {
    save_as(dir, id, INPUT_EXT, json, batch)
}

/// The extension of a saved input ([`save_input`]).
pub const INPUT_EXT: &str = "input.json";

/// [`save_original`] as `<dir>/<id>.<ext>`.
fn save_as(dir: &Path, id: &str, ext: &str, text: &str, batch: &mut Batch) -> Result<std::path::PathBuf, SaveError> {
    let safe =
        !id.is_empty() && id.len() <= 128 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !safe {
        return Err(SaveError::UnsafeId(id.to_string()));
    }
    let parent = dir.parent().filter(|p| !p.as_os_str().is_empty());
    let folders = || std::iter::once(dir).chain(parent);
    // Looked at before the folders are made (a link is never followed to make one) and after.
    let linked = |missing_ok: bool| {
        folders().find(|f| match std::fs::symlink_metadata(f) {
            Ok(m) => !m.is_dir(),
            Err(_) => !missing_ok,
        })
    };
    if let Some(folder) = linked(true) {
        return Err(SaveError::NotAFolder(folder.display().to_string()));
    }
    crate::durable::private_dir(dir)?;
    if let Some(folder) = linked(false) {
        return Err(SaveError::NotAFolder(folder.display().to_string()));
    }
    folders().for_each(|f| batch.add_dir(f));
    let path = dir.join(format!("{id}.{ext}"));
    let replace = match std::fs::symlink_metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(FileError::at(&path, "read")(e).into()),
        Ok(meta) if !meta.is_file() => return Err(SaveError::Exists(path.display().to_string())),
        Ok(_) => {
            let there = std::fs::read(&path).map_err(FileError::at(&path, "read"))?;
            if there == text.as_bytes() {
                let f = std::fs::File::open(&path).map_err(FileError::at(&path, "read"))?;
                batch.add(&path, &f);
                return Ok(path);
            }
            if !text.as_bytes().starts_with(&there) {
                return Err(SaveError::Exists(path.display().to_string()));
            }
            true
        }
    };
    let mut temp = crate::durable::hidden_temp(dir)?;
    temp.write_all(text.as_bytes()).map_err(FileError::at(temp.path(), "write"))?;
    batch.add_new(temp, &path, replace);
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::SessionFile;
    use crate::regions::claude_shake::is_tombstone;

    fn transcript(text: &str) -> Transcript {
        Transcript::parse(SessionFile::from_bytes("t.jsonl".into(), text.as_bytes().to_vec()))
    }

    #[test]
    fn a_fork_changes_only_session_ids_and_folded_contents() {
        let text = concat!(
            "{\"type\":\"queue-operation\",\"sessionId\":\"old\"}\n",
            "{\"parentUuid\":null,\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":[{\"tool_use_id\":\"t1\",",
            "\"type\":\"tool_result\",\"content\":\"big \\u00e9 output\"},{\"tool_use_id\":\"t2\",\"type\":\"tool_result\",",
            "\"content\":[{\"type\":\"text\",\"text\":\"keep\"}]}]},\"uuid\":\"u1\",\"sessionId\":\"old\"}\n",
            "not json\n",
            "{\"type\":\"other\",\"sessionId\":\"someone-else\",\"x\":\"\\\"sessionId\\\":\\\"old\\\"\"}\n",
            "{\"type\":\"tor"
        );
        let t = transcript(text);
        let replace =
            Replace::results([("t1".to_string(), js_string("[folded]").into()), ("t9".to_string(), "\"x\"".into())]);
        let (bytes, replaced) = fork_bytes(&t, "old", "new", &replace);
        let expected = text
            .replacen("\"sessionId\":\"old\"}\n{", "\"sessionId\":\"new\"}\n{", 1)
            .replace("\"uuid\":\"u1\",\"sessionId\":\"old\"", "\"uuid\":\"u1\",\"sessionId\":\"new\"")
            .replace("\"big \\u00e9 output\"", "\"[folded]\"");
        assert_eq!(String::from_utf8(bytes).unwrap(), expected);
        assert_eq!(replaced, ["t1"]);
    }

    /// A folded input is spliced into its `tool_use` block alone (id, name, other keys and bytes
    /// kept), and is known for the saved input it names.
    #[test]
    fn a_call_input_is_spliced_and_known_by_its_saved_file() {
        let big = "b".repeat(300);
        let input = |path: &str, content: &str| format!(r#"{{"file_path":"{path}","content":"{content}"}}"#);
        let original = input("/a", &big);
        let text = format!(
            "{{\"parentUuid\":null,\"type\":\"assistant\",\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"tool_use\",\"id\":\"c1\",\"name\":\"Write\",\"input\":{original}}}]}},\"uuid\":\"a1\",\"sessionId\":\"old\"}}\n"
        );
        let t = transcript(&text);
        let saved = Path::new("/s/c1.input.json");
        let placeholder = format!("[Write input omitted (~9 tokens): {}]", input_way_back(saved));
        let new = format!("{{\"file_path\":\"/a\",\"content\":{}}}", js_string(&placeholder));
        let mut replace = Replace::default();
        replace.inputs.insert("c1".into(), new.clone().into());
        let (bytes, replaced) = fork_bytes(&t, "old", "old", &replace);
        assert_eq!(String::from_utf8(bytes).unwrap(), text.replace(&original, &new));
        assert_eq!(replaced, ["c1"]);
        let new: Box<RawValue> = serde_json::from_str(&new).unwrap();
        assert_eq!(folded_input_path(&new).as_deref(), Some(saved));
        assert!(holds_folded_input(new.get()));
        assert_eq!(is_folded_input(&new, &original, saved), Some(true));
        // Another saved file, another key, another kept member, or a member too small to have
        // been folded: not this fold.
        assert_eq!(is_folded_input(&new, &original, Path::new("/s/other.input.json")), Some(false));
        assert_eq!(is_folded_input(&new, &original.replace("file_path", "path"), saved), Some(false));
        assert_eq!(is_folded_input(&new, &input("/b", &big), saved), Some(false));
        assert_eq!(is_folded_input(&new, &input("/a", "small"), saved), Some(false));
        // A big member left as it was: not what a fold writes.
        let half = format!(r#"{{"file_path":"{big}","content":{}}}"#, js_string(&placeholder));
        let half: Box<RawValue> = serde_json::from_str(&half).unwrap();
        assert_eq!(is_folded_input(&half, &input(&big, &big), saved), Some(false));
    }

    /// A noted placeholder keeps Claude Code's form and the saved file's line, and gives its
    /// note back; a plain one has none.
    #[test]
    fn a_note_rides_on_its_own_line() {
        let path = Path::new("/abs/t.txt");
        let noted = noted_placeholder("a\nb", path, Some("superseded: read again"));
        assert!(noted.starts_with("<persisted-output>\nOutput too large (3 bytes). Full output saved to: /abs/t.txt\nsuperseded: read again\n\nPreview"));
        assert_eq!(note_of(&noted), Some("superseded: read again"));
        assert_eq!(note_of(&placeholder("a\nb", path)), None);
        assert_eq!(noted_placeholder("a", path, None), placeholder("a", path));
    }

    #[test]
    fn placeholders_match_claude_codes_own() {
        let text: String = (1..=600).map(|i| format!("{i}\n")).collect();
        let p = placeholder(&text, Path::new("/abs/t.txt"));
        assert!(p.starts_with("<persisted-output>\nOutput too large (2.2KB). Full output saved to: /abs/t.txt\n\nPreview (first 2KB):\n1\n2\n"));
        assert!(p.ends_with("\n...\n</persisted-output>"));
        let shown = &p[p.find("2KB):\n").unwrap() + 6..p.find("\n...\n").unwrap()];
        assert!(text.starts_with(shown) && shown.ends_with("\n527") && shown.len() <= 2000);
        assert_eq!(size(1023), "1023 bytes");
        assert_eq!(size(60894), "59.5KB");
        assert_eq!(size(3 * 1024 * 1024), "3MB");
        assert!(is_tombstone(&p) && is_tombstone("  [shaken: x]") && !is_tombstone("plain"));
    }

    #[test]
    fn previews_never_split_a_surrogate_pair() {
        // 1,999 units of 'a' then an emoji (2 units): 2,000 units end inside the pair.
        let text = format!("{}🦀{}", "a".repeat(1999), "b".repeat(10));
        let (p, more) = preview(&text, 2000);
        assert!(more);
        assert_eq!(p, "a".repeat(1999));
        let short = "é🦀";
        assert_eq!(preview(short, 2000), (short, false));
    }

    #[test]
    fn originals_are_saved_once_and_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let at = dir.path().join("s/shake");
        let mut batch = Batch::default();
        let p = save_original(&at, "toolu_1", "original", &mut batch).unwrap();
        batch.sync().unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "original");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(&at).unwrap().permissions().mode() & 0o777, 0o700);
        assert_eq!(save_original(&at, "toolu_1", "original", &mut Batch::default()).unwrap(), p);
        assert!(matches!(save_original(&at, "toolu_1", "other", &mut Batch::default()), Err(SaveError::Exists(_))));
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "original");
        assert!(matches!(save_original(&at, "../x", "t", &mut Batch::default()), Err(SaveError::UnsafeId(_))));
    }
}

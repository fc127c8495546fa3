//! Command output, written one way by every command: JSON (one object, one line) or line
//! records (TAB-separated and quoted, or NUL-ended with `-z`); and exit codes that a closed pipe
//! cannot change (`docs/plumbing.md`, "Exit codes").

use std::borrow::Cow;
use std::ffi::OsStr;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use serde::Serialize;

/// The output flags of a command that lists records: `--json`, `--porcelain`, `-z`; without
/// one it prints text for people. Flattened into the command's arguments, which says what its
/// `--json` holds on the struct: `#[command(mut_arg("json", |a| a.help("Print JSON: {…}")))]`.
#[derive(Clone, Copy, Debug, Default)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct RecordArgs {
    /// Print JSON (its fields: docs/plumbing.md)
    #[cfg_attr(feature = "cli", arg(long, conflicts_with = "nul"))]
    pub json: bool,
    /// Print TAB-separated records for scripts (the contract in docs/plumbing.md) instead of text for people
    #[cfg_attr(feature = "cli", arg(long, conflicts_with = "json"))]
    pub porcelain: bool,
    /// Records as --porcelain, every field ended with NUL and ids and paths verbatim (they may hold any character)
    #[cfg_attr(feature = "cli", arg(short = 'z', id = "nul"))]
    pub nul: bool,
}

impl RecordArgs {
    /// Tells whether records (TAB-separated, or NUL-ended) were asked for.
    pub fn records(&self) -> bool {
        self.porcelain || self.nul
    }

    /// Tells whether no flag was given: the output is text for people.
    pub fn for_people(&self) -> bool {
        !self.json && !self.records()
    }
}

/// Writes `value` as one line of JSON.
pub fn write_json(out: &mut dyn Write, value: &impl Serialize) -> io::Result<()> {
    serde_json::to_writer(&mut *out, value)?;
    out.write_all(b"\n")
}

/// Writes a command's output: `value()` as one line of JSON when `json` is set, else `text`.
pub fn json_or(
    out: &mut dyn Write,
    json: bool,
    value: impl FnOnce() -> serde_json::Value,
    text: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    if json {
        write_json(out, &value())
    } else {
        text(out)
    }
}

/// Tells whether a write failed because the reader closed the pipe (`shake log | head`).
pub fn is_broken_pipe(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::BrokenPipe
}

/// Returns a command's answer (its exit code, or the error it reports) after its output was
/// `written`. The answer is decided before the output: a reader that closes the pipe early
/// (`shake diff A B | head -1`) cuts the output short but never changes the answer. Any other
/// write error is the command's error.
pub fn answer<T, E: From<io::Error>>(verdict: Result<T, E>, written: io::Result<()>) -> Result<T, E> {
    match written {
        Err(e) if !is_broken_pipe(&e) => Err(e.into()),
        _ => verdict,
    }
}

/// Joins an error and its sources into one line: `a: b: c`.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut next = e.source();
    while let Some(s) = next {
        let more = s.to_string();
        // thiserror's transparent wrappers repeat their source's text: say it once.
        if !text.ends_with(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        next = s.source();
    }
    text
}

/// Quotes a free-text field (entry id, type) for line output the way git quotes paths: as is
/// when it is plain, else (control characters, `"`, `\`, or empty) in double quotes with C
/// escapes (`\t`, `\n`, `\"`, `\\`, octal).
pub fn quote(s: &str) -> Cow<'_, str> {
    quote_bytes(s.as_bytes())
}

/// `word` as one word for a POSIX shell, for a command printed to be copied: as it is when it
/// holds only characters no shell treats specially, else in single quotes.
pub fn shell_word(word: &str) -> Cow<'_, str> {
    let plain = !word.is_empty() && word.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-+,:@%".contains(&b));
    match plain {
        true => Cow::Borrowed(word),
        false => Cow::Owned(format!("'{}'", word.replace('\'', "'\\''"))),
    }
}

/// Quotes a path for text output, as [`quote`] does, so a path with a newline, a TAB or bytes
/// that are not UTF-8 (each printed as an octal escape, as git prints them) stays one field on
/// one line and names the file exactly.
pub fn path(p: &Path) -> Cow<'_, str> {
    quote_bytes(p.as_os_str().as_bytes())
}

/// [`quote`] for bytes that may not be UTF-8: each byte of an invalid sequence is octal.
fn quote_bytes(b: &[u8]) -> Cow<'_, str> {
    let text = std::str::from_utf8(b).ok();
    let plain = !b.is_empty() && !b.iter().any(|&c| c.is_ascii_control() || c == b'"' || c == b'\\');
    if let Some(text) = text.filter(|_| plain) {
        return Cow::Borrowed(text);
    }
    let mut q = String::with_capacity(b.len() + 2);
    q.push('"');
    for chunk in b.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => q.push_str("\\\""),
                '\\' => q.push_str("\\\\"),
                '\t' => q.push_str("\\t"),
                '\n' => q.push_str("\\n"),
                '\r' => q.push_str("\\r"),
                c if c.is_ascii_control() => q.push_str(&format!("\\{:03o}", c as u8)),
                c => q.push(c),
            }
        }
        for byte in chunk.invalid() {
            q.push_str(&format!("\\{byte:03o}"));
        }
    }
    q.push('"');
    Cow::Owned(q)
}

/// A `-z` field that holds U+0000, which would end it early: `-z` refuses to print it (the
/// one rule, `docs/plumbing.md`), and the command fails (exit 1, 2 for interrogators).
#[derive(Debug, thiserror::Error)]
#[error("-z cannot print a field holding U+0000 ({field}, quoted here): every -z field ends with a NUL")]
pub struct NulInField {
    /// The field, quoted.
    pub field: String,
}

/// Writes one record of line output: fields separated by TAB and ended by a newline, each
/// quoted; or with `-z`, every field verbatim and ended by NUL (a field holding a NUL is refused:
/// [`NulInField`]).
pub fn write_record(out: &mut dyn Write, fields: &[&str], nul: bool) -> std::io::Result<()> {
    let fields: Vec<&OsStr> = fields.iter().map(OsStr::new).collect();
    write_record_os(out, &fields, nul)
}

/// [`write_record`] for records that hold paths, which may not be UTF-8.
pub fn write_record_os(out: &mut dyn Write, fields: &[&OsStr], nul: bool) -> std::io::Result<()> {
    if nul {
        if let Some(bad) = fields.iter().find(|f| f.as_bytes().contains(&0)) {
            return Err(io::Error::other(NulInField { field: quote_bytes(bad.as_bytes()).into_owned() }));
        }
        for field in fields {
            out.write_all(field.as_bytes())?;
            out.write_all(b"\0")?;
        }
        return Ok(());
    }
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            out.write_all(b"\t")?;
        }
        out.write_all(quote_bytes(field.as_bytes()).as_bytes())?;
    }
    out.write_all(b"\n")
}

/// Writes a table for people: a header row, then the rows, columns padded to their widest cell
/// (in the columns a terminal gives it: a CJK character or an emoji takes two), two spaces apart;
/// the columns `right` names are aligned right (numbers), the others left; the last column is not
/// padded.
pub fn table(out: &mut dyn Write, header: &[&str], rows: &[Vec<String>], right: &[usize]) -> io::Result<()> {
    use unicode_width::UnicodeWidthStr;
    let mut widths: Vec<usize> = header.iter().map(|h| h.width()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.width());
        }
    }
    let line = |out: &mut dyn Write, cells: &mut dyn Iterator<Item = &str>| -> io::Result<()> {
        let cells: Vec<&str> = cells.collect();
        let mut text = String::new();
        for (i, cell) in cells.iter().enumerate() {
            let pad = " ".repeat(widths[i].saturating_sub(cell.width()));
            match (i + 1 == cells.len(), right.contains(&i)) {
                (true, false) => text.push_str(cell),
                (_, true) => text.push_str(&format!("{pad}{cell}  ")),
                (false, false) => text.push_str(&format!("{cell}{pad}  ")),
            }
        }
        writeln!(out, "{}", text.trim_end())
    };
    line(out, &mut header.iter().copied())?;
    for row in rows {
        line(out, &mut row.iter().map(String::as_str))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_is_git_like() {
        assert_eq!(quote("1a2b3c4d"), "1a2b3c4d");
        assert_eq!(quote("sp ace é"), "sp ace é");
        assert_eq!(quote("a\tb\nc"), "\"a\\tb\\nc\"");
        assert_eq!(quote("\"x"), "\"\\\"x\"");
        assert_eq!(quote("back\\slash"), "\"back\\\\slash\"");
        assert_eq!(quote("\u{1}\u{7f}"), "\"\\001\\177\"");
        assert_eq!(quote(""), "\"\"");
        use std::os::unix::ffi::OsStrExt;
        let odd = Path::new(OsStr::from_bytes(b"/s/a\nb\xff\xfec.jsonl"));
        assert_eq!(path(odd), "\"/s/a\\nb\\377\\376c.jsonl\"");
        assert_eq!(path(Path::new("/s/plain é.jsonl")), "/s/plain é.jsonl");
    }

    #[test]
    fn records_tab_or_nul() {
        let mut out = Vec::new();
        write_record(&mut out, &["a\tb", "message", "ff"], false).unwrap();
        write_record(&mut out, &["a\tb", "message", "ff"], true).unwrap();
        assert_eq!(out, b"\"a\\tb\"\tmessage\tff\na\tb\0message\0ff\0");
        let before = out.len();
        let refused = write_record(&mut out, &["ok", "a\0b"], true).unwrap_err();
        let nul = refused.get_ref().and_then(|e| e.downcast_ref::<NulInField>()).unwrap();
        assert_eq!(nul.field, "\"a\\000b\"");
        assert_eq!(out.len(), before, "nothing of a refused record is written");
    }

    #[test]
    fn a_closed_pipe_keeps_the_answer_and_other_write_errors_do_not() {
        let pipe = || -> io::Result<()> { Err(io::Error::from(io::ErrorKind::BrokenPipe)) };
        assert_eq!(answer::<_, io::Error>(Ok(1), pipe()).unwrap(), 1);
        let refused = io::Error::from(io::ErrorKind::InvalidData);
        assert_eq!(answer::<u8, _>(Err(refused), pipe()).unwrap_err().kind(), io::ErrorKind::InvalidData);
        assert!(answer::<_, io::Error>(Ok(1), Err(io::Error::other("disk full"))).is_err());
        let mut out = Vec::new();
        json_or(&mut out, true, || serde_json::json!({"a": 1}), |_| unreachable!()).unwrap();
        json_or(&mut out, false, || unreachable!(), |o: &mut dyn Write| o.write_all(b"text\n")).unwrap();
        assert_eq!(out, b"{\"a\":1}\ntext\n");
    }

    #[test]
    fn tables_align_on_the_widest_cell() {
        let mut out = Vec::new();
        let rows = vec![vec!["é1".to_string(), "22".into(), "last".into()], vec!["3".into(), "".into(), "x".into()]];
        table(&mut out, &["A", "BBB", "C"], &rows, &[]).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "A   BBB  C\né1  22   last\n3        x\n");
    }

    /// Widths are what a terminal shows: a wide character takes two columns (`chars()` counted
    /// one, and the columns after it slid); numbers can stand right.
    #[test]
    fn tables_count_display_columns_and_align_numbers_right() {
        let mut out = Vec::new();
        let rows =
            vec![vec!["日本".to_string(), "7".into(), "x".into()], vec!["ab".into(), "1,024".into(), "y".into()]];
        table(&mut out, &["NAME", "N", "Z"], &rows, &[1]).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "NAME      N  Z\n日本      7  x\nab    1,024  y\n");
    }
}

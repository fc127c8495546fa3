//! A pi session file read whole, split into physical lines exactly as pi splits them.
//!
//! The bytes are kept as read: hashing and export use `raw`, parsing uses the text pi's UTF-8
//! decoder would produce (invalid sequences become U+FFFD, as in pi's streaming decoder).

use std::borrow::Cow;
use std::io;
use std::path::{Path, PathBuf};

/// A session file's bytes and line table. Parse it with the host that reads it (`crate::host`).
pub struct SessionFile {
    /// Where the bytes came from (used in every message that names a line).
    pub path: PathBuf,
    /// The text pi decodes: the bytes themselves when they are valid UTF-8.
    text: String,
    /// The bytes as read, kept only when they are not valid UTF-8 (and so differ from `text`).
    invalid_raw: Option<Vec<u8>>,
    /// One record per physical line.
    pub lines: Vec<Line>,
}

/// One physical line: the bytes between two `\n` (the `\n` itself excluded).
#[derive(Clone, Debug)]
pub struct Line {
    /// 1-based line number.
    pub number: usize,
    /// Byte range in [`SessionFile::raw`].
    pub raw: std::ops::Range<usize>,
    /// Byte range in the decoded text.
    pub text: std::ops::Range<usize>,
    /// Whether the raw bytes were valid UTF-8.
    pub valid_utf8: bool,
}

impl SessionFile {
    /// Reads a session file.
    pub fn read(path: &Path) -> io::Result<SessionFile> {
        let raw = std::fs::read(path)?;
        Ok(SessionFile::from_bytes(path.to_path_buf(), raw))
    }

    /// Wraps bytes already in memory (a session restored from the store, stdin, a test).
    pub fn from_bytes(path: PathBuf, raw: Vec<u8>) -> SessionFile {
        match String::from_utf8(raw) {
            Ok(text) => {
                let lines = split_lines(text.as_bytes(), None);
                SessionFile { path, text, invalid_raw: None, lines }
            }
            Err(e) => {
                let raw = e.into_bytes();
                let text = String::from_utf8_lossy(&raw).into_owned();
                let lines = split_lines(&raw, Some(&text));
                SessionFile { path, text, invalid_raw: Some(raw), lines }
            }
        }
    }

    /// Returns the file's bytes, unchanged.
    pub fn raw(&self) -> &[u8] {
        self.invalid_raw.as_deref().unwrap_or(self.text.as_bytes())
    }

    /// Returns the decoded text of the whole file.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Returns a line's exact bytes.
    pub fn line_raw(&self, line: &Line) -> &[u8] {
        &self.raw()[line.raw.clone()]
    }

    /// Returns a line's decoded text.
    pub fn line_text(&self, line: &Line) -> &str {
        &self.text()[line.text.clone()]
    }

    /// Tells whether the file ends with a newline (an empty file counts as ending cleanly).
    pub fn ends_with_newline(&self) -> bool {
        self.text.is_empty() || self.text.ends_with('\n')
    }

    /// Returns the path as text for messages and text output: quoted when odd (a newline, a
    /// TAB, bytes that are not UTF-8: [`crate::output::path`]). JSON carries the path itself.
    pub fn display(&self) -> Cow<'_, str> {
        crate::output::path(&self.path)
    }
}

fn split_lines(raw: &[u8], lossy: Option<&str>) -> Vec<Line> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut number = 0;
    let mut push = |range: std::ops::Range<usize>| {
        number += 1;
        let bytes = &raw[range.clone()];
        lines.push(Line { number, raw: range, text: 0..0, valid_utf8: std::str::from_utf8(bytes).is_ok() });
    };
    for i in memchr::memchr_iter(b'\n', raw) {
        push(start..i);
        start = i + 1;
    }
    if start < raw.len() {
        push(start..raw.len());
    }
    match lossy {
        None => lines.iter_mut().for_each(|l| l.text = l.raw.clone()),
        // Lossy decoding changes lengths, so text ranges come from splitting the decoded text.
        // "\n" is never part of an invalid sequence, so both splits have the same lines.
        Some(text) => {
            let mut offset = 0;
            for (line, piece) in lines.iter_mut().zip(text.split('\n')) {
                line.text = offset..offset + piece.len();
                offset += piece.len() + 1;
            }
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_like_pi() {
        let f = SessionFile::from_bytes("t".into(), b"a\n\nb\r\nc".to_vec());
        let texts: Vec<_> = f.lines.iter().map(|l| f.line_text(l)).collect();
        assert_eq!(texts, ["a", "", "b\r", "c"]);
        assert!(!f.ends_with_newline());
        assert_eq!(f.lines[3].number, 4);
    }

    #[test]
    fn invalid_utf8_decodes_lossily_per_line() {
        let f = SessionFile::from_bytes("t".into(), b"ok\n\xff\xfex\nend\n".to_vec());
        assert_eq!(f.line_text(&f.lines[1]), "\u{fffd}\u{fffd}x");
        assert_eq!(f.line_raw(&f.lines[1]), b"\xff\xfex");
        assert!(!f.lines[1].valid_utf8);
        assert_eq!(f.line_text(&f.lines[2]), "end");
    }
}

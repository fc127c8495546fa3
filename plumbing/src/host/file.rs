//! A pi session file read whole, split into physical lines exactly as pi splits them.
//!
//! The bytes are kept as read: hashing and export use `raw`, parsing uses the text pi's UTF-8
//! decoder would produce (invalid sequences become U+FFFD, as in pi's streaming decoder).
//!
//! A file is read until two looks at its path agree ([`read_settled`]): oh-my-pi replaces its
//! files with a rename and overwrites its title slot in place at any moment.

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

/// How many times [`read_settled`] reads a file that keeps changing.
pub const READ_ATTEMPTS: usize = 4;

/// A file's bytes, and whether the file stayed the same while they were read.
pub struct Settled {
    /// The bytes of the last read.
    pub bytes: Vec<u8>,
    /// The file at the path was the same (inode, size, mtime) before and after that read.
    pub settled: bool,
}

/// Reads the file at `path` again (up to [`READ_ATTEMPTS`] times) until the path shows the same
/// file before and after a read: a rename over it or a write into it in between is seen, so the
/// bytes are never a mix of two versions (an in-place overwrite of OMP's title slot, say).
/// `between` runs between the read and the second look (tests rewrite the file there).
pub fn read_settled(path: &Path, mut between: impl FnMut()) -> io::Result<Settled> {
    let mut bytes = Vec::new();
    for _ in 0..READ_ATTEMPTS {
        let before = Stamp::of(path)?;
        bytes = std::fs::read(path)?;
        between();
        let after = Stamp::of(path)?;
        if before == after && after.len == bytes.len() as u64 {
            return Ok(Settled { bytes, settled: true });
        }
    }
    Ok(Settled { bytes, settled: false })
}

/// What identifies the file at a path at one moment: a rename or an in-place write changes it.
#[derive(PartialEq, Eq)]
struct Stamp {
    ino: u64,
    len: u64,
    modified: Option<std::time::SystemTime>,
}

impl Stamp {
    fn of(path: &Path) -> io::Result<Stamp> {
        let meta = std::fs::metadata(path)?;
        let ino = std::os::unix::fs::MetadataExt::ino(&meta);
        Ok(Stamp { ino, len: meta.len(), modified: meta.modified().ok() })
    }
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
    /// Reads a session file ([`read_settled`]: the last bytes read when it never settled, as
    /// a plain read would give them; a host's reader says what is wrong with them).
    pub fn read(path: &Path) -> io::Result<SessionFile> {
        let read = read_settled(path, || {})?;
        Ok(SessionFile::from_bytes(path.to_path_buf(), read.bytes))
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
    fn a_write_in_place_during_a_read_is_read_again() {
        use std::io::{Seek, Write};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, b"AAAA\nrest\n").unwrap();
        // OMP overwrites its title slot in place, the same length: seen by the mtime (set apart
        // here, as a coarse clock might not) and read again.
        let overwrite = |text: &[u8], secs: u64| {
            let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            f.seek(std::io::SeekFrom::Start(0)).unwrap();
            f.write_all(text).unwrap();
            f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs)).unwrap();
        };
        let mut calls = 0;
        let read = read_settled(&path, || {
            calls += 1;
            if calls == 1 {
                overwrite(b"BBBB", 1);
            }
        })
        .unwrap();
        assert!(read.settled);
        assert_eq!(read.bytes, b"BBBB\nrest\n");
        // Never settling: the last bytes, said so.
        let mut n = 1;
        let read = read_settled(&path, || {
            n += 1;
            overwrite(b"CCCC", n);
        })
        .unwrap();
        assert!(!read.settled);
        assert_eq!((n - 1, read.bytes.as_slice()), (READ_ATTEMPTS as u64, b"CCCC\nrest\n".as_slice()));
    }

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

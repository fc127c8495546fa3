//! A session file read whole, split into physical lines exactly as pi splits them.
//!
//! The bytes are kept as read: hashing and export use `raw`, parsing uses the text pi's UTF-8
//! decoder would produce (invalid sequences become U+FFFD, as in pi's streaming decoder).
//!
//! A file is read until two looks at its path agree ([`read_settled`]): oh-my-pi replaces its
//! files with a rename and overwrites its title slot in place at any moment.
//!
//! Files from [`MAP_MIN`] bytes up are mapped (`mmap`), not copied, so a command holds the file
//! once (its pages, shared with the page cache) and not a copy of it beside the page cache.
//! A map shows later writes to the file's inode, so it is only as safe as the hosts' writing:
//! - pi, oh-my-pi and Claude Code append: bytes past the mapped length are never read.
//! - oh-my-pi and Claude Code rewrite a file by a rename over it: the mapped inode keeps its
//!   bytes until it is unmapped.
//! - oh-my-pi overwrites its title slot (the first 256 bytes) in place: the map is private and
//!   its first page is copied (written once) while the read is checked, so the check sees a
//!   mix of two titles as it sees one in a copied read, and a later overwrite is not seen.
//! - Shrinking a mapped file raises SIGBUS on the next read of a page past its new end. No host
//!   truncates a session file in place except pi when it migrates a v1 or v2 file (it rewrites
//!   the file through `openSync(path, "w")`); such files are copied, never mapped
//!   (`Host::shrinks_in_place`), and shake itself writes session files only by
//!   appending or by a new file renamed into place (`docs/reliability.md`).

use std::borrow::Cow;
use std::fs::File;
use std::io;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::proof::Proof;

/// Files of at least this many bytes are mapped rather than read into memory.
pub const MAP_MIN: u64 = 1 << 20;

/// The hosts whose writers may touch a file being read: how they write in place decides how it
/// may be read (the module doc). The registry passes every host it lists (`hosts::read`).
pub type Writers<'h> = &'h [&'h dyn super::Host];

/// How many leading bytes of a mapped file are copied out of the map while the read is checked:
/// the most any of `writers` overwrites in place (oh-my-pi's title slot).
fn in_place_bytes(writers: Writers<'_>) -> usize {
    writers.iter().map(|h| h.overwrites_in_place()).max().unwrap_or(0)
}

/// A session file's bytes: read into memory, or mapped. Clones share them.
#[derive(Clone)]
pub struct Bytes(Arc<Held>);

enum Held {
    Owned(Vec<u8>),
    Mapped(memmap2::Mmap),
}

impl Bytes {
    /// Bytes already in memory.
    pub fn owned(bytes: Vec<u8>) -> Bytes {
        Bytes(Arc::new(Held::Owned(bytes)))
    }

    /// Tells whether the bytes are a map of the file (not a copy).
    pub fn is_mapped(&self) -> bool {
        matches!(*self.0, Held::Mapped(_))
    }
}

impl PartialEq for Bytes {
    fn eq(&self, other: &Bytes) -> bool {
        **self == **other
    }
}

impl Eq for Bytes {}

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Bytes({} bytes{})", self.len(), if self.is_mapped() { ", mapped" } else { "" })
    }
}

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &*self.0 {
            Held::Owned(v) => v,
            Held::Mapped(m) => m,
        }
    }
}

impl From<Vec<u8>> for Bytes {
    fn from(bytes: Vec<u8>) -> Bytes {
        Bytes::owned(bytes)
    }
}

/// The most lines a session may have: its entries are numbered in 32 bits (a node's line, the id
/// index, a view's records). No JavaScript string holds the file such a count takes (at least
/// 8 GiB), so no host can read it either.
pub const MAX_LINES: usize = u32::MAX as usize;

/// A file of more than [`MAX_LINES`] lines, which every host refuses.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{}: {lines} lines; shake reads a session of at most {MAX_LINES} lines", crate::output::path(path))]
pub struct TooManyLines {
    /// The file.
    pub path: PathBuf,
    /// How many lines it has.
    pub lines: usize,
}

/// Refuses a file of more than [`MAX_LINES`] lines, by name.
pub fn check_lines(path: &Path, lines: usize) -> Result<(), TooManyLines> {
    match lines > MAX_LINES {
        true => Err(TooManyLines { path: path.to_path_buf(), lines }),
        false => Ok(()),
    }
}

/// A session file's bytes and line table. Parse it with the host that reads it (`crate::host`).
pub struct SessionFile {
    /// Where the bytes came from (used in every message that names a line).
    pub path: PathBuf,
    /// The bytes as read.
    raw: Bytes,
    /// The text pi decodes, kept only when the bytes are not valid UTF-8 (and so differ from it).
    lossy: Option<Arc<Lossy>>,
    /// One record per physical line.
    pub lines: Vec<Line>,
    /// The file's size, mtime and inode when it was read; `None` for bytes not read from a file.
    stamp: Option<Stamp>,
    /// The proof of these bytes, once an import of this read proved them (`store::import`): the
    /// append this command makes next carries it to the import after it, which then trusts the
    /// old bytes without hashing them again (`Snapshot::of_file` in the safe writer).
    proven: std::sync::OnceLock<Proof>,
}

/// How many times [`read_settled`] reads a file that keeps changing.
pub const READ_ATTEMPTS: usize = 4;

/// A file's bytes, and whether the file stayed the same while they were read.
pub struct Settled {
    /// The bytes of the last read.
    pub bytes: Bytes,
    /// The file at the path was the same (inode, size, mtime) before and after that read.
    pub settled: bool,
    /// The file at the path after that read.
    stamp: Stamp,
}

/// Reads the file at `path` again (up to [`READ_ATTEMPTS`] times) until the path shows the same
/// file before and after a read: a rename over it or a write into it in between is seen, so the
/// bytes are never a mix of two versions (an in-place overwrite of OMP's title slot, say).
/// `between` runs between the read and the second look (tests rewrite the file there).
/// Files of [`MAP_MIN`] bytes or more are mapped (see the module doc).
pub fn read_settled(path: &Path, writers: Writers<'_>, between: impl FnMut()) -> io::Result<Settled> {
    read_settled_from(path, writers, MAP_MIN, between)
}

/// [`read_settled`], mapping files of `map_min` bytes or more.
pub(crate) fn read_settled_from(
    path: &Path,
    writers: Writers<'_>,
    map_min: u64,
    mut between: impl FnMut(),
) -> io::Result<Settled> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let before = Stamp::of(path)?;
        let mut file = File::open(path)?;
        let bytes = if before.len >= map_min && !rewritten_in_place(&mut file, writers)? {
            map(&file, before.len, in_place_bytes(writers))?
        } else {
            let mut bytes = Vec::new();
            io::Read::read_to_end(&mut file, &mut bytes)?;
            Bytes::owned(bytes)
        };
        between();
        let after = Stamp::of(path)?;
        let settled = before == after && after.len == bytes.len() as u64;
        if settled || attempt == READ_ATTEMPTS {
            return Ok(Settled { bytes, settled, stamp: after });
        }
    }
}

/// Tells whether one of `writers` may shrink the file in place, judged from its first 64 KiB
/// (then it must not be mapped: pi's migration of a version 1 or 2 file).
fn rewritten_in_place(file: &mut File, writers: Writers<'_>) -> io::Result<bool> {
    let mut head = Vec::new();
    io::Read::read_to_end(&mut io::Read::take(&mut *file, 64 << 10), &mut head)?;
    io::Seek::rewind(file)?;
    Ok(writers.iter().any(|h| h.shrinks_in_place(&head)))
}

/// Maps the first `len` bytes of `file` privately, its first `copied` bytes copied now.
fn map(file: &File, len: u64, copied: usize) -> io::Result<Bytes> {
    let len = usize::try_from(len).map_err(|_| io::Error::other("file too large to map"))?;
    // SAFETY: the map is only as stable as the hosts' writes allow (module doc): they append or
    // rename over, never shrink a file mapped here, and the bytes they overwrite in place are
    // copied out of the map below, before the read is checked.
    let mut map = unsafe { memmap2::MmapOptions::new().len(len).map_copy(file)? };
    // Writing a private page copies it: from then on it holds the bytes it had now, whatever is
    // written to the file. The same byte is written back, so the page's content is unchanged.
    for page in (0..copied.min(len)).step_by(4096) {
        let byte = &mut map[page];
        // SAFETY: a valid, aligned pointer into the map; volatile so the write is not elided.
        unsafe { std::ptr::write_volatile(byte, std::ptr::read_volatile(byte)) };
    }
    let map = map.make_read_only()?;
    // The whole file is read next (UTF-8 check, line table, parse): ask for it ahead.
    #[cfg(unix)]
    let _ = map.advise(memmap2::Advice::Sequential);
    Ok(Bytes(Arc::new(Held::Mapped(map))))
}

/// What identifies the file at a path at one moment: a rename or an in-place write changes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    ino: u64,
    /// The file's size in bytes.
    pub len: u64,
    modified: Option<std::time::SystemTime>,
}

impl Stamp {
    /// The file at `path` now.
    pub fn of(path: &Path) -> io::Result<Stamp> {
        Ok(Stamp::of_meta(&std::fs::metadata(path)?))
    }

    /// The file these metadata describe (an open file's `fstat`).
    pub fn of_meta(meta: &std::fs::Metadata) -> Stamp {
        let ino = std::os::unix::fs::MetadataExt::ino(meta);
        Stamp { ino, len: meta.len(), modified: meta.modified().ok() }
    }

    /// The modification time in nanoseconds since the epoch (0 when unknown).
    pub fn mtime_ns(&self) -> u64 {
        self.modified.and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos() as u64)
    }
}

/// One physical line: the bytes between two `\n` (the `\n` itself excluded). A file that is
/// not valid UTF-8 keeps where each line is in its decoded text beside ([`Lossy`]): in any
/// other it is where the bytes are (a range for each line was half of the line table). Its
/// 1-based number is its index in [`SessionFile::lines`] plus one (kept in each, it was a third
/// of the table).
#[derive(Clone, Debug)]
pub struct Line {
    /// Byte range in [`SessionFile::raw`].
    pub raw: std::ops::Range<usize>,
}

// One per line of every file read (100,000 tiny entries: 1.6 MB); not to grow unnoticed.
const _: () = assert!(std::mem::size_of::<Line>() <= 16);

/// The decoded text of a file that is not valid UTF-8, and where each line is in it.
struct Lossy {
    text: String,
    /// Per line: its byte range in `text`, and whether its raw bytes were valid UTF-8.
    lines: Vec<(std::ops::Range<usize>, bool)>,
}

impl SessionFile {
    /// Reads a session file that `writers` may be writing ([`read_settled`]: the last bytes
    /// read when it never settled, as a plain read would give them; a host's reader says what is
    /// wrong with them). Callers read through the registry (`hosts::read`), which names them all.
    pub fn read(path: &Path, writers: Writers<'_>) -> io::Result<SessionFile> {
        SessionFile::read_mapping_from(path, writers, MAP_MIN)
    }

    /// [`SessionFile::read`], mapping files of `map_min` bytes or more.
    pub(crate) fn read_mapping_from(path: &Path, writers: Writers<'_>, map_min: u64) -> io::Result<SessionFile> {
        let read = read_settled_from(path, writers, map_min, || {})?;
        let stamp = read.settled.then_some(read.stamp);
        Ok(SessionFile { stamp, ..SessionFile::from_shared(path.to_path_buf(), read.bytes) })
    }

    /// Wraps bytes already in memory (a session restored from the store, stdin, a test).
    pub fn from_bytes(path: PathBuf, raw: Vec<u8>) -> SessionFile {
        SessionFile::from_shared(path, Bytes::owned(raw))
    }

    /// Wraps bytes held elsewhere (another reader of the same file shares them, no copy).
    pub fn from_shared(path: PathBuf, raw: Bytes) -> SessionFile {
        let lines = split_lines(&raw);
        let lossy = std::str::from_utf8(&raw).is_err().then(|| Arc::new(Lossy::of(&raw, &lines)));
        SessionFile { path, raw, lossy, lines, stamp: None, proven: std::sync::OnceLock::new() }
    }

    /// Another handle on the same bytes and lines (a map is shared, not copied).
    pub fn share(&self) -> SessionFile {
        SessionFile {
            path: self.path.clone(),
            raw: self.raw.clone(),
            lossy: self.lossy.clone(),
            lines: self.lines.clone(),
            stamp: self.stamp,
            proven: self.proven.clone(),
        }
    }

    /// Remembers the proof of these bytes (`proof`: proven by their content, never told).
    pub(crate) fn remember_proof(&self, proof: Proof) {
        debug_assert_eq!(proof.len, self.raw.len() as u64);
        let _ = self.proven.set(proof);
    }

    /// The proof of these bytes, made on first use and kept: the store's import and the meter's
    /// memo each need it, and hashing a large file is a few percent of a cold meter.
    pub fn proof(&self) -> &Proof {
        self.proven.get_or_init(|| Proof::of(&self.raw))
    }

    /// The proof of these bytes when an import (or [`SessionFile::proof`]) proved them, with the file's stamp when they were
    /// read (`None` for bytes not read from a file).
    pub fn proven(&self) -> Option<(Stamp, &Proof)> {
        Some((self.stamp?, self.proven.get()?))
    }

    /// The file's bytes, shared (a map is not copied).
    pub fn bytes(&self) -> &Bytes {
        &self.raw
    }

    /// The file at the path when these bytes were read from it, when they were (and the file
    /// stayed the same while they were read): what an import compares with the file now.
    pub fn stamp(&self) -> Option<Stamp> {
        self.stamp
    }

    /// Returns the file's bytes, unchanged.
    pub fn raw(&self) -> &[u8] {
        &self.raw
    }

    /// Returns the decoded text of the whole file.
    pub fn text(&self) -> &str {
        match &self.lossy {
            Some(lossy) => &lossy.text,
            // SAFETY: checked to be UTF-8 in `from_shared`; a mapped file's bytes stay as checked
            // (the module doc says which writes could change them, and why no host makes them).
            None => unsafe { std::str::from_utf8_unchecked(&self.raw) },
        }
    }

    /// The whole file as text when it is UTF-8 (checked once when read: a reader of its lines
    /// need not check them again).
    pub fn utf8(&self) -> Option<&str> {
        self.lossy.is_none().then(|| self.text())
    }

    /// Returns a line's exact bytes.
    pub fn line_raw(&self, line: &Line) -> &[u8] {
        &self.raw()[line.raw.clone()]
    }

    /// Returns a line's decoded text.
    pub fn line_text(&self, line: &Line) -> &str {
        match &self.lossy {
            Some(lossy) => &lossy.text[lossy.lines[self.index_of(line)].0.clone()],
            None => &self.text()[line.raw.clone()],
        }
    }

    /// Tells whether a line's raw bytes are valid UTF-8 (else its text has U+FFFD in their place).
    pub fn line_is_utf8(&self, line: &Line) -> bool {
        self.lossy.as_ref().is_none_or(|lossy| lossy.lines[self.index_of(line)].1)
    }

    /// The index in `lines` of one of them, found by where it starts (no two lines start at
    /// one byte; only a file that is not UTF-8 asks).
    fn index_of(&self, line: &Line) -> usize {
        self.lines.partition_point(|l| l.raw.start < line.raw.start)
    }

    /// Tells whether the file ends with a newline (an empty file counts as ending cleanly).
    pub fn ends_with_newline(&self) -> bool {
        self.raw.is_empty() || self.raw.ends_with(b"\n")
    }

    /// Returns the path as text for messages and text output: quoted when odd (a newline, a
    /// TAB, bytes that are not UTF-8: [`crate::output::path`]). JSON carries the path itself.
    pub fn display(&self) -> Cow<'_, str> {
        crate::output::path(&self.path)
    }
}

fn split_lines(raw: &[u8]) -> Vec<Line> {
    let mut lines = Vec::new();
    let mut start = 0;
    for i in memchr::memchr_iter(b'\n', raw) {
        lines.push(Line { raw: start..i });
        start = i + 1;
    }
    if start < raw.len() {
        lines.push(Line { raw: start..raw.len() });
    }
    // Grown by doubling: up to half of it was room for lines the file does not have.
    lines.shrink_to_fit();
    lines
}

impl Lossy {
    /// Decodes `raw` as pi's UTF-8 decoder does, and finds its `lines` in the text.
    fn of(raw: &[u8], lines: &[Line]) -> Lossy {
        let text = String::from_utf8_lossy(raw).into_owned();
        // Lossy decoding changes lengths, so text ranges come from splitting the decoded text.
        // "\n" is never part of an invalid sequence, so both splits have the same lines.
        let mut offset = 0;
        let lines = lines
            .iter()
            .zip(text.split('\n'))
            .map(|(line, piece)| {
                let range = offset..offset + piece.len();
                offset += piece.len() + 1;
                (range, std::str::from_utf8(&raw[line.raw.clone()]).is_ok())
            })
            .collect();
        Lossy { text, lines }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file past [`MAX_LINES`] is refused by name (its entries would not fit 32-bit indexes);
    /// one at the limit is read.
    #[test]
    fn too_many_lines_are_refused_by_name() {
        assert!(check_lines(Path::new("t.jsonl"), MAX_LINES).is_ok());
        let err = check_lines(Path::new("t.jsonl"), MAX_LINES + 1).unwrap_err();
        assert_eq!(err.to_string(), "t.jsonl: 4294967296 lines; shake reads a session of at most 4294967295 lines");
    }

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
        let read = read_settled(&path, &[], || {
            calls += 1;
            if calls == 1 {
                overwrite(b"BBBB", 1);
            }
        })
        .unwrap();
        assert!(read.settled);
        assert_eq!(&read.bytes[..], b"BBBB\nrest\n");
        // Never settling: the last bytes, said so.
        let mut n = 1;
        let read = read_settled(&path, &[], || {
            n += 1;
            overwrite(b"CCCC", n);
        })
        .unwrap();
        assert!(!read.settled);
        assert_eq!((n - 1, &read.bytes[..]), (READ_ATTEMPTS as u64, b"CCCC\nrest\n".as_slice()));
    }

    #[test]
    fn a_mapped_file_with_invalid_utf8_reads_as_a_copied_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, b"{\"type\":\"session\",\"version\":3}\n\xff\xfex\nend\n").unwrap();
        let (mapped, copied) = (
            SessionFile::read_mapping_from(&path, &[], 0).unwrap(),
            SessionFile::read_mapping_from(&path, &[], u64::MAX).unwrap(),
        );
        assert!(mapped.bytes().is_mapped() && !copied.bytes().is_mapped());
        let view = |f: &SessionFile| {
            f.lines
                .iter()
                .map(|l| (f.line_text(l).to_string(), f.line_raw(l).to_vec(), f.line_is_utf8(l)))
                .collect::<Vec<_>>()
        };
        assert_eq!(view(&mapped), view(&copied));
        assert_eq!(mapped.line_text(&mapped.lines[1]), "\u{fffd}\u{fffd}x");
    }

    #[test]
    fn splits_like_pi() {
        let f = SessionFile::from_bytes("t".into(), b"a\n\nb\r\nc".to_vec());
        let texts: Vec<_> = f.lines.iter().map(|l| f.line_text(l)).collect();
        assert_eq!(texts, ["a", "", "b\r", "c"]);
        assert!(!f.ends_with_newline());
        assert_eq!(f.lines.len(), 4);
    }

    #[test]
    fn invalid_utf8_decodes_lossily_per_line() {
        let f = SessionFile::from_bytes("t".into(), b"ok\n\xff\xfex\nend\n".to_vec());
        assert_eq!(f.line_text(&f.lines[1]), "\u{fffd}\u{fffd}x");
        assert_eq!(f.line_raw(&f.lines[1]), b"\xff\xfex");
        assert!(!f.line_is_utf8(&f.lines[1]));
        assert_eq!(f.line_text(&f.lines[2]), "end");
        // Each line's text and flag found by where it starts, empty lines among them.
        let f = SessionFile::from_bytes("t".into(), b"ok\n\n\xff\xfex\n\nend".to_vec());
        let seen: Vec<_> = f.lines.iter().map(|l| (f.line_text(l), f.line_is_utf8(l))).collect();
        assert_eq!(seen, [("ok", true), ("", true), ("\u{fffd}\u{fffd}x", false), ("", true), ("end", true)]);
    }
}

//! The safe writer: appends a batch of lines to a session file pi may also write (DESIGN §7).
//!
//! One advisory lock so two shake processes never interleave, compare-and-append (the file must
//! still end where the plan was made), one `write` in append mode, then one fsync. pi takes no
//! lock, so it may append between the check and the write: the write then lands after pi's
//! bytes. That is not prevented (no lock pi honours exists) but always detected: after the write
//! the batch's bytes are looked up where they landed, and [`Appended::foreign`] says what came
//! in between, for the caller to re-chain (`porcelain::batch`). A batch is never written after a
//! partial last line, except one that shake itself left half-written (then the line is first
//! terminated, as pi's own loader does).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::durable::FileError;
use crate::host::file::{SessionFile, Stamp};
use crate::proof::Proof;

/// A file modified more recently than this may be open in a running pi.
pub const LIVE_WINDOW: Duration = Duration::from_secs(30);

/// Fault injection for the race tests: milliseconds to sleep between the "file unchanged" check
/// and the write, and again between the write and the read-back, so a concurrent writer reliably
/// lands before the batch or right after it (`tests/cli/append.rs`); `restore` sleeps as long
/// between its first look at the file and its last. Read only in builds for tests
/// ([`crate::fault`]).
pub const DELAY_ENV: &str = "SHAKE_TEST_APPEND_DELAY_MS";

/// The line prefixes shake writes; a partial last line starting so is a torn shake batch.
pub const SHAKE_LINE_PREFIXES: [&str; 2] =
    ["{\"type\":\"context_edit\",\"id\":\"", "{\"type\":\"custom\",\"customType\":\"shake\","];

/// Where the plan was made: the file's length, its last bytes then, and how it ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// File length in bytes.
    pub len: u64,
    /// The last (up to 4 KiB) bytes.
    pub tail: Vec<u8>,
    /// How the whole file ended, told from its last line whatever its length (a torn line of an
    /// undo's 100 KB replacement starts far before the tail).
    pub ending: Ending,
    /// The stamp of the file the bytes were read from and their proof, when an import proved
    /// them ([`SessionFile::proven`]).
    pub proven: Option<(Stamp, Proof)>,
}

const TAIL: usize = 4096;

impl Snapshot {
    /// Takes the snapshot of bytes already read.
    pub fn of(bytes: &[u8]) -> Snapshot {
        Snapshot {
            len: bytes.len() as u64,
            tail: bytes[bytes.len().saturating_sub(TAIL)..].to_vec(),
            ending: ending(bytes),
            proven: None,
        }
    }

    /// The snapshot of a file the command read, with the proof an import made of its bytes.
    pub fn of_file(file: &SessionFile) -> Snapshot {
        let proven = file.proven().map(|(stamp, proof)| (stamp, proof.clone()));
        Snapshot { proven, ..Snapshot::of(file.raw()) }
    }
}

/// Why an append did not happen.
#[derive(Debug, thiserror::Error)]
pub enum AppendError {
    /// The system refused a step.
    #[error(transparent)]
    Io(#[from] FileError),
    /// Another shake holds the file's lock.
    #[error("{}: another shake process is writing this session", path.display())]
    Busy {
        /// The session file.
        path: PathBuf,
    },
    /// The file is not where the plan was made; nothing was written.
    #[error("{}: the file changed while shake was planning ({then} bytes then, {now} now); nothing was written", path.display())]
    Changed {
        /// The session file.
        path: PathBuf,
        /// Its length when planned.
        then: u64,
        /// Its length now.
        now: u64,
    },
    /// The file ends in a partial line shake did not write.
    #[error("{}: the last line is incomplete (no trailing newline); shake does not append after it", path.display())]
    PartialLine {
        /// The session file.
        path: PathBuf,
    },
    /// The batch was written but its bytes are not in the file afterwards (another program
    /// truncated or rewrote the file at the same moment).
    #[error("{}: the batch shake wrote is not in the file afterwards; another program rewrote the file meanwhile", path.display())]
    Vanished {
        /// The session file.
        path: PathBuf,
    },
}

/// What an append did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Appended {
    /// The file's length just after the batch.
    pub len: u64,
    /// Bytes another writer appended between the check and the write, which the batch now
    /// follows: `None` when the batch landed where it was planned.
    pub foreign: Option<std::ops::Range<u64>>,
    /// The file as the check found it under the lock, on the descriptor then written (`fstat`).
    pub before: Stamp,
    /// The file just after the write, its fsync and the read-back of the batch (`fstat`).
    pub after: Stamp,
    /// The proof of the file's bytes as the check found them, when the snapshot had one of the
    /// very file found (same stamp): the import after the append trusts the old bytes by it
    /// though the store's state, written within a second of an earlier write, has no mtime to
    /// compare.
    pub proven: Option<Proof>,
}

/// How a file ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ending {
    /// With a newline (or empty).
    Clean,
    /// With a partial line that shake left when a write was cut short.
    TornShakeLine,
    /// With a partial line that is not shake's.
    Partial,
}

/// Tells how `bytes` end.
pub fn ending(bytes: &[u8]) -> Ending {
    if bytes.is_empty() || bytes.ends_with(b"\n") {
        return Ending::Clean;
    }
    // A complete shake line that lacks only its newline is torn too: the write was cut there.
    if last_line_is_shakes(bytes) {
        Ending::TornShakeLine
    } else {
        Ending::Partial
    }
}

/// Tells whether the last line of `bytes`, whole or cut short, is one shake writes: then the
/// last write was shake's (a batch, or one a kill cut short), whoever else may have the file.
pub fn last_line_is_shakes(bytes: &[u8]) -> bool {
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let last = &body[memchr::memrchr(b'\n', body).map_or(0, |i| i + 1)..];
    SHAKE_LINE_PREFIXES
        .iter()
        .any(|p| last.starts_with(p.as_bytes()) || (!last.is_empty() && p.as_bytes().starts_with(last)))
}

/// Returns how long ago the file was modified, when that is within [`LIVE_WINDOW`].
pub fn recently_written(path: &Path) -> Option<Duration> {
    let modified = path.metadata().and_then(|m| m.modified()).ok()?;
    let age = SystemTime::now().duration_since(modified).unwrap_or_default();
    (age < LIVE_WINDOW).then_some(age)
}

/// Appends `batch` (whole lines, each ending in `\n`) to `path`, if the file still matches
/// `snapshot`; then finds where the bytes landed (see [`Appended::foreign`]).
pub fn append(path: &Path, snapshot: &Snapshot, batch: &[u8]) -> Result<Appended, AppendError> {
    let io = |doing: &'static str| move |source| AppendError::Io(FileError { path: path.to_path_buf(), doing, source });
    let mut file = OpenOptions::new().read(true).append(true).open(path).map_err(io("open for appending"))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => return Err(AppendError::Busy { path: path.to_path_buf() }),
        Err(std::fs::TryLockError::Error(e)) => return Err(io("lock")(e)),
    }
    let before = check_unchanged(&mut file, path, snapshot)?;
    // One write; the batch is copied only behind a newline (batches are megabytes).
    let terminated;
    let bytes = match snapshot.ending {
        Ending::Clean => batch,
        // Terminate our own torn line first, as pi's loader would: it stays a skipped line.
        Ending::TornShakeLine => {
            terminated = [&b"\n"[..], batch].concat();
            &terminated[..]
        }
        Ending::Partial => return Err(AppendError::PartialLine { path: path.to_path_buf() }),
    };
    crate::fault::pause(DELAY_ENV);
    if let Err((written, e)) = write_counted(&mut file, bytes) {
        take_back(&file, &bytes[..written]);
        return Err(io("append to")(e));
    }
    file.sync_all().map_err(io("fsync"))?;
    crate::fault::pause(DELAY_ENV);
    let at = landed_at(&file, path, snapshot.len, bytes)?;
    let after = Stamp::of_meta(&file.metadata().map_err(io("stat"))?);
    let foreign = (at > snapshot.len).then_some(snapshot.len..at);
    let proven = snapshot.proven.as_ref().filter(|(stamp, _)| *stamp == before).map(|(_, proof)| proof.clone());
    Ok(Appended { len: at + bytes.len() as u64, foreign, before, after, proven })
}

/// Writes all of `bytes` (one `write` unless the system takes fewer); on failure, the error and
/// how many bytes went in before it.
fn write_counted(file: &mut File, bytes: &[u8]) -> Result<(), (usize, std::io::Error)> {
    let mut done = 0;
    while done < bytes.len() {
        match file.write(&bytes[done..]) {
            Ok(0) => return Err((done, std::io::ErrorKind::WriteZero.into())),
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err((done, e)),
        }
    }
    Ok(())
}

/// Takes back `written`, the start of a batch a failed write left at the file's end (a full
/// disk, a file-size limit): a partial line left there would swallow the next entry pi appends,
/// which pi writes onto it. Only while the file still ends with those bytes: what another writer
/// appended after them is never cut (the torn line then stays, for the next shake command to
/// end, [`end_torn_line`]). Returns whether the file is as it was.
fn take_back(file: &File, written: &[u8]) -> bool {
    if written.is_empty() {
        return true;
    }
    let Some(at) = file.metadata().ok().and_then(|m| m.len().checked_sub(written.len() as u64)) else { return false };
    reads_back(file, at, written) && file.set_len(at).is_ok() && file.sync_all().is_ok()
}

/// Ends the torn last line a cut shake batch left (a kill in the middle of its write, which no
/// handler sees), if the file still ends as `snapshot` says: pi, still running, would write its
/// next entry onto it, and that entry would be lost (pi skips the line) with the one after it
/// read as a root. Returns whether the line was ended; `Busy` when another shake is writing.
pub fn end_torn_line(path: &Path, snapshot: &Snapshot) -> Result<bool, AppendError> {
    if snapshot.ending != Ending::TornShakeLine {
        return Ok(false);
    }
    // An empty batch after a torn shake line is the newline that ends it.
    append(path, snapshot, b"").map(|_| true)
}

/// Finds the offset where `bytes`, just appended, landed: `from` unless another writer
/// appended in between. One `write` in append mode is not interleaved with other writes to a
/// local file, so the bytes are there whole.
fn landed_at(file: &File, path: &Path, from: u64, bytes: &[u8]) -> Result<u64, AppendError> {
    let io = |source| AppendError::Io(FileError { path: path.to_path_buf(), doing: "read back", source });
    if reads_back(file, from, bytes) {
        return Ok(from);
    }
    let len = file.metadata().map_err(io)?.len();
    let mut after = vec![0; usize::try_from(len.saturating_sub(from)).unwrap_or(usize::MAX)];
    file.read_exact_at(&mut after, from).map_err(io)?;
    match memchr::memmem::find(&after, bytes) {
        Some(i) => Ok(from + i as u64),
        None => Err(AppendError::Vanished { path: path.to_path_buf() }),
    }
}

/// How much of the bytes [`reads_back`] reads at a time.
const READ_BACK: usize = 1 << 20;

/// Tells whether `file` holds `bytes` from offset `at` on, read a block at a time (never a copy
/// of all of them: a batch is megabytes).
pub fn reads_back(file: &File, at: u64, bytes: &[u8]) -> bool {
    let mut buf = vec![0; READ_BACK.min(bytes.len())];
    let mut offset = at;
    bytes.chunks(READ_BACK).all(|want| {
        let got = &mut buf[..want.len()];
        let same = file.read_exact_at(got, offset).is_ok() && got == want;
        offset += want.len() as u64;
        same
    })
}

/// Returns the refusal for a file that ends in a partial line shake did not write.
pub fn partial_line(path: &Path) -> AppendError {
    AppendError::PartialLine { path: path.to_path_buf() }
}

/// Checks that the file still ends as `snapshot` says; returns what `fstat` said of it.
fn check_unchanged(file: &mut File, path: &Path, snapshot: &Snapshot) -> Result<Stamp, AppendError> {
    let meta = file
        .metadata()
        .map_err(|source| AppendError::Io(FileError { path: path.to_path_buf(), doing: "stat", source }))?;
    let len = meta.len();
    let mut tail = vec![0; snapshot.tail.len()];
    let same_len = len == snapshot.len;
    let same_tail = same_len
        && file.seek(SeekFrom::Start(len - tail.len() as u64)).is_ok()
        && file.read_exact(&mut tail).is_ok()
        && tail == snapshot.tail;
    if same_tail {
        return Ok(Stamp::of_meta(&meta));
    }
    Err(AppendError::Changed { path: path.to_path_buf(), then: snapshot.len, now: len })
}
#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(feature = "cli")]
    use crate::Error;

    #[test]
    fn endings() {
        assert_eq!(ending(b""), Ending::Clean);
        assert_eq!(ending(b"{}\n"), Ending::Clean);
        assert_eq!(ending(b"{}\n{\"type\":\"context_edit\",\"id\":\"ab"), Ending::TornShakeLine);
        assert_eq!(ending(b"{}\n{\"type\":\"cus"), Ending::TornShakeLine);
        assert_eq!(ending(b"{}\n{\"type\":\"message\""), Ending::Partial);
        assert_eq!(ending(b"{}\n{\"type\":\"context_edit\",\"id\":\"ab\"}"), Ending::TornShakeLine);
        assert_eq!(ending(b"{}\n{\"type\":\"custom\",\"customType\":\"other\"}"), Ending::Partial);
    }

    #[test]
    fn appends_only_when_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, b"a\n").unwrap();
        let snap = Snapshot::of(b"a\n");
        let landed = append(&path, &snap, b"b\n").unwrap();
        assert_eq!(
            (landed.len, landed.foreign, landed.before.len, landed.after),
            (4, None, 2, Stamp::of(&path).unwrap())
        );
        let err = append(&path, &snap, b"c\n").unwrap_err();
        assert!(matches!(err, AppendError::Changed { then: 2, now: 4, .. }), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), b"a\nb\n");
    }

    #[cfg(feature = "cli")]
    #[test]
    fn torn_shake_line_is_terminated_first_and_foreign_partial_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let torn = b"a\n{\"type\":\"context_edit\",\"id\":\"1";
        std::fs::write(&path, torn).unwrap();
        append(&path, &Snapshot::of(torn), b"b\n").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"a\n{\"type\":\"context_edit\",\"id\":\"1\nb\n");
        std::fs::write(&path, b"a\nxyz").unwrap();
        let err = Error::from(append(&path, &Snapshot::of(b"a\nxyz"), b"b\n").unwrap_err());
        assert!(err.message.contains("incomplete") && err.hints.len() == 2, "{err}");
    }

    #[test]
    fn a_torn_shake_line_longer_than_the_tail_is_still_ours() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let torn = [&b"a\n{\"type\":\"context_edit\",\"id\":\"1\",\"replacement\":\""[..], &[b'x'; 100_000]].concat();
        std::fs::write(&path, &torn).unwrap();
        let snap = Snapshot::of(&torn);
        assert_eq!(snap.ending, Ending::TornShakeLine);
        append(&path, &snap, b"b\n").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), [&torn[..], b"\nb\n"].concat());
    }

    #[test]
    fn a_batch_that_landed_after_foreign_bytes_is_found_there() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, b"a\npi1\npi2\nours\npi3\n").unwrap();
        let file = File::open(&path).unwrap();
        assert_eq!(landed_at(&file, &path, 2, b"ours\n").unwrap(), 10);
        assert_eq!(landed_at(&file, &path, 10, b"ours\n").unwrap(), 10);
        assert!(matches!(landed_at(&file, &path, 2, b"gone\n"), Err(AppendError::Vanished { .. })));
    }

    /// A failed write's bytes are taken back while the file ends with them; bytes another writer
    /// appended after them are never cut (the torn line then stays, for the next command to end).
    #[test]
    fn a_failed_writes_bytes_are_taken_back_but_never_anothers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let open = || OpenOptions::new().read(true).append(true).open(&path).unwrap();
        std::fs::write(&path, b"a\n{\"type\":\"cus").unwrap();
        assert!(take_back(&open(), b"{\"type\":\"cus"));
        assert_eq!(std::fs::read(&path).unwrap(), b"a\n");
        std::fs::write(&path, b"a\n{\"type\":\"cuspi\n").unwrap();
        assert!(!take_back(&open(), b"{\"type\":\"cus"));
        assert_eq!(std::fs::read(&path).unwrap(), b"a\n{\"type\":\"cuspi\n");
        assert!(take_back(&open(), b""));
    }

    #[cfg(feature = "cli")]
    #[test]
    fn io_failures_name_the_file_and_the_step() {
        let err = append(Path::new("/nonexistent/s.jsonl"), &Snapshot::of(b""), b"b\n").unwrap_err();
        let shown = Error::from(err);
        assert!(shown.message.starts_with("cannot open for appending /nonexistent/s.jsonl: "), "{shown}");
        assert!(shown.source.is_some());
    }
}

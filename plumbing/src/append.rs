//! The safe writer: appends a batch of lines to a session file pi may also write (DESIGN §7).
//!
//! One advisory lock so two shake processes never interleave, compare-and-append (the file must
//! still end where the plan was made), one `write` in append mode, then one fsync. A batch is
//! never written after a partial last line, except one that shake itself left half-written
//! (then the line is first terminated, as pi's own loader does).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::{Error, Result};

/// A file modified more recently than this may be open in a running pi.
pub const LIVE_WINDOW: Duration = Duration::from_secs(30);

/// The line prefixes shake writes; a partial last line starting so is a torn shake batch.
pub const SHAKE_LINE_PREFIXES: [&str; 2] =
    ["{\"type\":\"context_edit\",\"id\":\"", "{\"type\":\"custom\",\"customType\":\"shake\","];

/// Where the plan was made: the file's length and its last bytes then.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// File length in bytes.
    pub len: u64,
    /// The last (up to 4 KiB) bytes.
    pub tail: Vec<u8>,
}

const TAIL: usize = 4096;

impl Snapshot {
    /// Takes the snapshot of bytes already read.
    pub fn of(bytes: &[u8]) -> Snapshot {
        Snapshot { len: bytes.len() as u64, tail: bytes[bytes.len().saturating_sub(TAIL)..].to_vec() }
    }
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
    let start = memchr::memrchr(b'\n', bytes).map_or(0, |i| i + 1);
    let last = &bytes[start..];
    let ours = SHAKE_LINE_PREFIXES
        .iter()
        .any(|p| last.starts_with(p.as_bytes()) || (p.as_bytes().starts_with(last) && !last.is_empty()));
    // A complete shake line that lacks only its newline is torn too: the write was cut there.
    if ours {
        Ending::TornShakeLine
    } else {
        Ending::Partial
    }
}

/// Returns how long ago the file was modified, when that is within [`LIVE_WINDOW`].
pub fn recently_written(path: &Path) -> Option<Duration> {
    let modified = path.metadata().and_then(|m| m.modified()).ok()?;
    let age = SystemTime::now().duration_since(modified).unwrap_or_default();
    (age < LIVE_WINDOW).then_some(age)
}

/// Appends `batch` (whole lines, each ending in `\n`) to `path`, if the file still matches
/// `snapshot`. Returns the file's new length.
pub fn append(path: &Path, snapshot: &Snapshot, batch: &[u8]) -> Result<u64> {
    let shown = path.display();
    let mut file = OpenOptions::new()
        .read(true)
        .append(true)
        .open(path)
        .map_err(|e| Error::io(format!("cannot open {shown} for appending"), e))?;
    lock(&file, path)?;
    check_unchanged(&mut file, path, snapshot)?;
    let mut bytes = Vec::with_capacity(batch.len() + 1);
    match ending(&snapshot.tail) {
        Ending::Clean => {}
        // Terminate our own torn line first, as pi's loader would: it stays a skipped line.
        Ending::TornShakeLine => bytes.push(b'\n'),
        Ending::Partial => return Err(partial_line(path)),
    }
    bytes.extend_from_slice(batch);
    file.write_all(&bytes).map_err(|e| Error::io(format!("cannot append to {shown}"), e))?;
    file.sync_all().map_err(|e| Error::io(format!("cannot fsync {shown}"), e))?;
    Ok(snapshot.len + bytes.len() as u64)
}

/// Returns the refusal for a file that ends in a partial line shake did not write.
pub fn partial_line(path: &Path) -> Error {
    Error::user(format!(
        "{}: the last line is incomplete (no trailing newline); shake does not append after it",
        path.display()
    ))
    .hint("another program may be writing the file right now; try again when it is done")
    .hint("if nothing is writing it, open the session in pi once: pi terminates the line")
}

fn lock(file: &File, path: &Path) -> Result<()> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => {
            Err(Error::user(format!("{}: another shake process is writing this session", path.display()))
                .hint("wait for it to finish, then run the command again"))
        }
        Err(std::fs::TryLockError::Error(e)) => Err(Error::io(format!("cannot lock {}", path.display()), e)),
    }
}

fn check_unchanged(file: &mut File, path: &Path, snapshot: &Snapshot) -> Result<()> {
    let len = file.metadata().map_err(|e| Error::io(format!("cannot stat {}", path.display()), e))?.len();
    let mut tail = vec![0; snapshot.tail.len()];
    let same_len = len == snapshot.len;
    let same_tail = same_len
        && file.seek(SeekFrom::Start(len - tail.len() as u64)).is_ok()
        && file.read_exact(&mut tail).is_ok()
        && tail == snapshot.tail;
    if same_tail {
        return Ok(());
    }
    Err(Error::user(format!(
        "{}: the file changed while shake was planning ({} bytes then, {len} now); nothing was written",
        path.display(),
        snapshot.len
    ))
    .hint("if pi is running on this session, quit it first; then run the command again"))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(append(&path, &snap, b"b\n").unwrap(), 4);
        assert!(append(&path, &snap, b"c\n").unwrap_err().message.contains("changed"));
        assert_eq!(std::fs::read(&path).unwrap(), b"a\nb\n");
    }

    #[test]
    fn torn_shake_line_is_terminated_first_and_foreign_partial_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let torn = b"a\n{\"type\":\"context_edit\",\"id\":\"1";
        std::fs::write(&path, torn).unwrap();
        append(&path, &Snapshot::of(torn), b"b\n").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"a\n{\"type\":\"context_edit\",\"id\":\"1\nb\n");
        std::fs::write(&path, b"a\nxyz").unwrap();
        assert!(append(&path, &Snapshot::of(b"a\nxyz"), b"b\n").unwrap_err().message.contains("incomplete"));
    }
}

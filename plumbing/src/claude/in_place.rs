//! Rewriting a Claude Code transcript in place (`shake fold --in-place --force`, `shake undo
//! --in-place --force`): the new bytes go to a hidden temporary file in the same folder, the rows
//! Claude Code appended meanwhile are copied after them, and the temporary file is renamed over
//! the transcript. The write is refused, and the transcript left as it was, when the file was
//! replaced (another inode), when the bytes shake read changed, when Claude Code was midway
//! through a row, when the transcript is a symbolic link (the rename would replace the link by a
//! file), or when another process has it open (where the system can tell: Linux's `/proc`).
//!
//! Claude Code opens the transcript for each flush, writes, and closes it, so an idle one holds
//! no descriptor and nothing can tell from outside that it runs (why the caller asks for
//! `--force`). A flush that opened the old file just before the rename writes to it after: the
//! old inode is watched after the rename until no other process has it open, and what reached
//! it is put right after shake's bytes, before rows appended to the new file since.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

use super::fork::{checked_source, ForkError};
use super::transcript::Transcript;
use super::write::{write_fork_bytes, Replace};
use crate::durable::FileError;

/// Fault injection for the kill tests: milliseconds to sleep right after the rename, before the
/// old file is looked at again (`tests/cli/claude_in_place.rs`, `tests/cli/fault_claude.rs`). Read
/// only in builds for tests ([`crate::fault`]).
pub const RENAME_DELAY_ENV: &str = "SHAKE_TEST_RENAME_DELAY_MS";

/// How long, after the rename, shake waits for a process that opened the old file to close it.
const LATE_WAIT: Duration = Duration::from_secs(2);

/// The points of [`rewrite`] a test may act at, as Claude Code would.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// The new bytes are written; the source is about to be looked at again.
    Written,
    /// Every check passed; the rename is next.
    Renaming,
}

/// Writes the bytes of `t` with the `content` of each `tool_result` in `replace` (by
/// `tool_use_id`) set to that JSON string to `out`; every other byte, the session id included,
/// is kept.
pub fn write_replaced(
    t: &Transcript,
    source: &Path,
    replace: &Replace<'_>,
    out: &mut dyn Write,
) -> Result<(), ForkError> {
    let sid = checked_source(t, source)?;
    write_fork_bytes(t, &sid, &sid, replace, out).map_err(FileError::at(source, "write a copy of"))?;
    Ok(())
}

/// Replaces `source`, whose bytes shake read are `t`'s, by the bytes `write` streams (through a
/// buffer into a temporary file: never held whole) followed by the rows appended to it since;
/// returns how many bytes of such rows were copied. `hook` runs at each [`Stage`] (the tests
/// append rows or open the file there, as Claude Code would). The source is compared with what
/// was read by its hash, read in pieces.
pub fn rewrite(
    t: &Transcript,
    source: &Path,
    write: impl FnOnce(&mut dyn Write) -> Result<(), ForkError>,
    mut hook: impl FnMut(Stage),
) -> Result<u64, ForkError> {
    let shown = source.display().to_string();
    let io = FileError::at(source, "read");
    checked_source(t, source)?;
    let read = t.file.raw();
    let meta = std::fs::symlink_metadata(source).map_err(io)?;
    if meta.file_type().is_symlink() {
        return Err(ForkError::Symlink(shown));
    }
    let dir = source.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    crate::durable::remove_dead_temps(dir);
    // Removed when dropped: every refusal below leaves no temporary file.
    let mut temp = crate::durable::hidden_temp(dir)?;
    let tio = FileError::at(source, "write the new version of");
    temp.as_file().set_permissions(std::fs::Permissions::from_mode(meta.mode() & 0o7777)).map_err(tio)?;
    let mut buffered = std::io::BufWriter::with_capacity(1 << 20, temp.as_file_mut());
    write(&mut buffered)?;
    buffered.flush().map_err(tio)?;
    drop(buffered);
    hook(Stage::Written);
    let mut old = match std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(source) {
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(ForkError::Symlink(shown)),
        opened => opened.map_err(io)?,
    };
    let now = old.metadata().map_err(io)?;
    if (now.dev(), now.ino()) != (meta.dev(), meta.ino()) {
        return Err(ForkError::Replaced(shown));
    }
    let mut prefix = blake3::Hasher::new();
    prefix.update_reader((&mut old).take(read.len() as u64)).map_err(io)?;
    if now.len() < read.len() as u64 || prefix.finalize() != blake3::hash(read) {
        return Err(ForkError::Rewritten(shown));
    }
    let mut tail = Vec::new();
    old.read_to_end(&mut tail).map_err(io)?;
    if !tail.is_empty() && !tail.ends_with(b"\n") {
        return Err(ForkError::Writing(shown));
    }
    temp.write_all(&tail).map_err(tio)?;
    temp.as_file().sync_all().map_err(tio)?;
    let seen = (read.len() + tail.len()) as u64;
    // The last look: nothing more was written since the tail was read, and no other process
    // holds the file open (its next write would go to the old file).
    if old.metadata().map_err(io)?.len() != seen {
        return Err(ForkError::Writing(shown));
    }
    let inode = (meta.dev(), meta.ino());
    if let Some(who) = openers(source, inode, old.as_raw_fd()).first() {
        return Err(ForkError::Open(shown, who.clone()));
    }
    let ours = temp.as_file().metadata().map_err(tio)?.len();
    hook(Stage::Renaming);
    temp.persist(source).map_err(|e| io(e.error))?;
    crate::fault::pause(RENAME_DELAY_ENV);
    let late = carry_late(source, (old, inode), seen, ours, meta.mode() & 0o7777)?;
    crate::durable::sync_dir(dir)?;
    Ok(tail.len() as u64 + late)
}

/// After the rename: a flush that opened the old file (`old`, inode `inode`) before the rename
/// writes there after it. Waits (up to [`LATE_WAIT`] in all) until no other process has the old
/// file open, and puts what reached it past `seen` into the file now at `source` right after the
/// `ours` bytes shake wrote there: before any row Claude Code appended to the new file since,
/// as they came later. That takes a new file renamed over the path (never an append, which
/// would land after those rows); rows reaching the file it replaces are put in the same way, in
/// turn. Returns the bytes put.
fn carry_late(
    source: &Path,
    (mut old, mut inode): (File, (u64, u64)),
    mut seen: u64,
    mut ours: u64,
    mode: u32,
) -> Result<u64, FileError> {
    let io = FileError::at(source, "read");
    let dir = source.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let deadline = Instant::now() + LATE_WAIT;
    let mut carried = 0;
    loop {
        while !openers(source, inode, old.as_raw_fd()).is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        let mut late = Vec::new();
        old.seek(SeekFrom::Start(seen)).map_err(io)?;
        old.read_to_end(&mut late).map_err(io)?;
        if late.is_empty() {
            return Ok(carried);
        }
        if Instant::now() >= deadline {
            // A writer that never stops: its rows go at the end rather than nowhere.
            let mut new = std::fs::OpenOptions::new().append(true).open(source).map_err(io)?;
            new.write_all(&late).and_then(|_| new.sync_all()).map_err(FileError::at(source, "append to"))?;
            return Ok(carried + late.len() as u64);
        }
        let mut now = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(source).map_err(io)?;
        let mut there = Vec::new();
        now.read_to_end(&mut there).map_err(io)?;
        if (there.len() as u64) < ours {
            // Not the file shake wrote (another writer replaced it): what it holds stays; the
            // late rows go after it rather than nowhere.
            ours = there.len() as u64;
        }
        let at = ours as usize;
        let mut temp = crate::durable::hidden_temp(dir)?;
        let tio = FileError::at(source, "write the new version of");
        temp.as_file().set_permissions(std::fs::Permissions::from_mode(mode)).map_err(tio)?;
        [&there[..at], &late, &there[at..]].iter().try_for_each(|part| temp.write_all(part)).map_err(tio)?;
        temp.as_file().sync_all().map_err(tio)?;
        let meta = now.metadata().map_err(io)?;
        if meta.len() != there.len() as u64 {
            continue; // Claude Code appended to it meanwhile: read it again.
        }
        temp.persist(source).map_err(|e| io(e.error))?;
        carried += late.len() as u64;
        (old, inode, seen, ours) =
            (now, (meta.dev(), meta.ino()), there.len() as u64, (there.len() + late.len()) as u64);
    }
}

/// The processes other than this descriptor (`ours`, of this process) that have the file with
/// `inode` (device, inode) open, as `pid N (command)`: read from `/proc/<pid>/fd` on Linux, as
/// far as shake may look (other users' processes are not visible to it); nothing elsewhere.
fn openers(source: &Path, inode: (u64, u64), ours: i32) -> Vec<String> {
    if !cfg!(target_os = "linux") {
        return Vec::new();
    }
    let Some(name) = source.file_name().map(|n| n.as_encoded_bytes().to_vec()) else { return Vec::new() };
    let me = std::process::id();
    let mut found = Vec::new();
    for process in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = process.file_name().to_str().and_then(|p| p.parse::<u32>().ok()) else { continue };
        let Ok(fds) = std::fs::read_dir(process.path().join("fd")) else { continue };
        let holds = fds.flatten().any(|fd| {
            if pid == me && fd.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) == Some(ours) {
                return false;
            }
            // The link names the path the file had when opened (" (deleted)" once replaced):
            // only those ending in the file name are looked at through the link.
            let Ok(target) = std::fs::read_link(fd.path()) else { return false };
            let target = target.as_os_str().as_encoded_bytes();
            let named =
                target.ends_with(&name) || target.strip_suffix(b" (deleted)").is_some_and(|t| t.ends_with(&name));
            named && std::fs::metadata(fd.path()).is_ok_and(|m| (m.dev(), m.ino()) == inode)
        });
        if holds {
            let comm = std::fs::read_to_string(process.path().join("comm")).unwrap_or_default();
            found.push(format!("pid {pid} ({})", comm.trim()));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    const ROWS: &str = concat!(
        "{\"parentUuid\":null,\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":[{\"tool_use_id\":\"t1\",",
        "\"type\":\"tool_result\",\"content\":\"big output\"}]},\"uuid\":\"u1\",\"sessionId\":\"11111111-2222-4333-8444-000000000000\"}\n",
    );
    const LATER: &str = "{\"parentUuid\":\"u1\",\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"next\"},\"uuid\":\"u2\",\"sessionId\":\"11111111-2222-4333-8444-000000000000\"}\n";

    fn setup() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, ROWS).unwrap();
        (dir, path)
    }

    /// Writes `t` with result t1 folded.
    fn folded<'t>(t: &'t Transcript, path: &'t Path) -> impl FnOnce(&mut dyn Write) -> Result<(), ForkError> + 't {
        move |out| write_replaced(t, path, &Replace::results([("t1".to_string(), "\"[folded]\"".into())]), out)
    }

    fn append(path: &Path, bytes: &str) {
        std::fs::OpenOptions::new().append(true).open(path).unwrap().write_all(bytes.as_bytes()).unwrap();
    }

    fn left(dir: &Path) -> Vec<String> {
        let mut names: Vec<_> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    }

    #[test]
    fn rows_appended_while_shake_writes_are_kept_after_the_new_bytes() {
        let (dir, path) = setup();
        let t = Transcript::read(&path).unwrap();
        let before = std::fs::metadata(&path).unwrap().ino();
        let hook = |s| {
            if s == Stage::Written {
                append(&path, LATER)
            }
        };
        let carried = rewrite(&t, &path, folded(&t, &path), hook).unwrap();
        let want = format!("{}{LATER}", ROWS.replace("\"big output\"", "\"[folded]\""));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), want);
        assert_eq!(carried, LATER.len() as u64);
        assert_ne!(std::fs::metadata(&path).unwrap().ino(), before, "a new file, renamed over");
        assert_eq!(left(dir.path()), ["s.jsonl"]);
    }

    #[test]
    fn a_changed_replaced_or_half_written_file_is_left_as_it_is() {
        let (dir, path) = setup();
        let other = dir.path().join("other");
        let cases: [(&dyn Fn(), &str); 3] = [
            (&|| std::fs::write(&path, ROWS.replace("big", "BIG")).unwrap(), "changed"),
            (&|| append(&path, "{\"type\":\"user\",\"mess"), "midway"),
            (
                &|| {
                    std::fs::write(&other, ROWS).unwrap();
                    std::fs::rename(&other, &path).unwrap()
                },
                "replaced",
            ),
        ];
        for (hook, why) in cases {
            std::fs::write(&path, ROWS).unwrap();
            let t = Transcript::read(&path).unwrap();
            let e = rewrite(&t, &path, folded(&t, &path), |s| {
                if s == Stage::Written {
                    hook()
                }
            })
            .unwrap_err();
            assert!(e.to_string().contains(why), "{why}: {e}");
            assert_eq!(left(dir.path()), ["s.jsonl"], "{why}: the temporary file is removed");
            assert!(!std::fs::read_to_string(&path).unwrap().contains("[folded]"), "{why}");
        }
    }
}

//! Rewriting a Claude Code transcript in place (`shake fold --in-place --force`, `shake undo
//! --in-place --force`): the new bytes go to a temporary file in the same folder, the rows Claude
//! Code appended meanwhile are copied after them, and the temporary file is renamed over the
//! transcript. The write is refused, and the transcript left as it was, when the file was
//! replaced (another inode), when the bytes shake read changed, or when Claude Code was midway
//! through a row.
//!
//! Nothing can tell from outside whether a Claude Code process has the transcript open. One
//! that does appends its next rows to the path (it opens the file for each flush), so they land
//! in the new file; bytes written to the old file between the last look and the rename are
//! copied after it. That is why the caller asks for `--force`.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::fork::{checked_source, ForkError};
use super::transcript::Transcript;
use super::write::{write_fork_bytes, Replace};
use crate::durable::FileError;

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
/// returns how many bytes of such rows were copied. `between` runs after the new bytes are
/// written and before the last look at the source (the tests append rows there, as Claude
/// Code would). The source is compared with what was read by its hash, read in pieces.
pub fn rewrite(
    t: &Transcript,
    source: &Path,
    write: impl FnOnce(&mut dyn Write) -> Result<(), ForkError>,
    mut between: impl FnMut(),
) -> Result<u64, ForkError> {
    let shown = source.display().to_string();
    let io = FileError::at(source, "read");
    checked_source(t, source)?;
    let read = t.file.raw();
    let meta = std::fs::metadata(source).map_err(io)?;
    let temp = temp_path(source);
    let tio = FileError::at(&temp, "write");
    let out = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&temp).map_err(tio)?;
    // From here on every refusal removes the temporary file.
    let result = (|| {
        out.set_permissions(std::fs::Permissions::from_mode(meta.mode() & 0o7777)).map_err(tio)?;
        let mut buffered = std::io::BufWriter::with_capacity(1 << 20, out);
        write(&mut buffered)?;
        let mut out = buffered.into_inner().map_err(|e| tio(e.into_error()))?;
        between();
        let mut old = File::open(source).map_err(io)?;
        let now = old.metadata().map_err(io)?;
        if (now.dev(), now.ino()) != (meta.dev(), meta.ino()) {
            return Err(ForkError::Replaced(shown.clone()));
        }
        let mut prefix = blake3::Hasher::new();
        prefix.update_reader((&mut old).take(read.len() as u64)).map_err(io)?;
        if now.len() < read.len() as u64 || prefix.finalize() != blake3::hash(read) {
            return Err(ForkError::Rewritten(shown.clone()));
        }
        let mut tail = Vec::new();
        old.read_to_end(&mut tail).map_err(io)?;
        if !tail.is_empty() && !tail.ends_with(b"\n") {
            return Err(ForkError::Writing(shown.clone()));
        }
        out.write_all(&tail).map_err(tio)?;
        out.sync_all().map_err(tio)?;
        let seen = (read.len() + tail.len()) as u64;
        // The last look: nothing more was written since the tail was read.
        if old.metadata().map_err(io)?.len() != seen {
            return Err(ForkError::Writing(shown.clone()));
        }
        std::fs::rename(&temp, source).map_err(io)?;
        let mut carried = tail.len() as u64;
        // Bytes written to the old file between the last look and the rename.
        let late = old.metadata().map_err(io)?.len().saturating_sub(seen);
        if late > 0 {
            let mut more = Vec::new();
            old.seek(SeekFrom::Start(seen)).map_err(io)?;
            old.read_to_end(&mut more).map_err(io)?;
            let mut new = std::fs::OpenOptions::new().append(true).open(source).map_err(io)?;
            new.write_all(&more).and_then(|_| new.sync_all()).map_err(io)?;
            carried += more.len() as u64;
        }
        sync_dir(source).map_err(io)?;
        Ok(carried)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

/// `<dir>/.<file name>.shake-<pid>.tmp`: in the transcript's folder (so the rename stays on one
/// file system), hidden, and not a `.jsonl` Claude Code would list as a session.
fn temp_path(source: &Path) -> PathBuf {
    let name = source.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let dir = source.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    dir.join(format!(".{name}.shake-{}.tmp", std::process::id()))
}

fn sync_dir(path: &Path) -> std::io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROWS: &str = concat!(
        "{\"parentUuid\":null,\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":[{\"tool_use_id\":\"t1\",",
        "\"type\":\"tool_result\",\"content\":\"big output\"}]},\"uuid\":\"u1\",\"sessionId\":\"s\"}\n",
    );
    const LATER: &str = "{\"parentUuid\":\"u1\",\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"next\"},\"uuid\":\"u2\",\"sessionId\":\"s\"}\n";

    fn setup() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, ROWS).unwrap();
        (dir, path)
    }

    /// Writes `t` with result t1 folded.
    fn folded<'t>(t: &'t Transcript, path: &'t Path) -> impl FnOnce(&mut dyn Write) -> Result<(), ForkError> + 't {
        move |out| write_replaced(t, path, &Replace::from([("t1".to_string(), "\"[folded]\"".into())]), out)
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
        let carried = rewrite(&t, &path, folded(&t, &path), || append(&path, LATER)).unwrap();
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
            let e = rewrite(&t, &path, folded(&t, &path), hook).unwrap_err();
            assert!(e.to_string().contains(why), "{why}: {e}");
            assert_eq!(left(dir.path()), ["s.jsonl"], "{why}: the temporary file is removed");
            assert!(!std::fs::read_to_string(&path).unwrap().contains("[folded]"), "{why}");
        }
    }
}

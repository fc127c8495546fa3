//! `shake restore`: write any imported version of a session file back, byte for byte.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::durable::FileError;
use crate::host::file::Stamp;
use crate::store::Store;
use crate::{Context, Error, Result};

/// Rebuild an imported version of a session file byte for byte (e.g. after a tool rewrote it)
#[derive(clap::Args, Debug)]
pub struct RestoreArgs {
    /// Session file (it may be gone), or session id (or unique prefix) of an imported session; default: the current session here (pi's, else oh-my-pi's or Claude Code's)
    #[arg(value_name = "SESSION")]
    pub session: Option<String>,
    /// Restore version N (1 = first import; see shake sessions --versions) instead of the latest
    #[arg(long, value_name = "N")]
    pub version: Option<usize>,
    /// Write to FILE ("-" for stdout) instead of the session's own path
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Overwrite an existing file (its current bytes are imported first, so nothing is lost)
    #[arg(long)]
    pub force: bool,
}

/// Runs `shake restore`: prints `<version id> <N> <path>` for the file written.
pub fn run(ctx: &Context, args: &RestoreArgs, out: &mut dyn Write) -> Result {
    let mut store = Store::open(ctx)?;
    let session = match &args.session {
        Some(s) => s.clone(),
        None => crate::rev::default_session(ctx)?.to_string_lossy().into_owned(),
    };
    let info = store.find_session(ctx, &session)?;
    let chain = store.version_chain(&info.version)?;
    let n = args.version.unwrap_or(chain.len());
    let id = *n
        .checked_sub(1)
        .and_then(|i| chain.get(i))
        .ok_or_else(|| Error::user(format!("{}: no version {n} (it has {})", info.path.display(), chain.len())))?;
    let bytes = store.version_bytes(&id)?;
    let target = args.output.clone().unwrap_or_else(|| info.path.clone());
    if target == Path::new("-") {
        out.write_all(&bytes)?;
        return Ok(0);
    }
    let existing = std::fs::metadata(&target).ok().map(|m| m.permissions());
    let replaced = existing.is_some();
    if replaced && !args.force {
        return Err(Error::user(format!("{} exists; not overwritten", target.display()))
            .hint("pass --force to replace it (its current bytes are imported first), or -o FILE"));
    }
    // A replaced file keeps the mode it had. A new file at the session's own path gets the mode
    // pi gives its files (0666 less the umask), so pi finds it as it left it; any other new file
    // is a copy the user asked for, private (0600) as `export` makes it, whatever the umask.
    let permissions = match existing {
        Some(p) => p,
        None if target == info.path => new_file_mode(&target)?,
        None => {
            new_file_mode(&target)?;
            std::fs::Permissions::from_mode(0o600)
        }
    };
    // The file as first seen (an empty one just made for a new target), held open: a change
    // from here on, pi appending at any moment, is seen before the rename or found after it.
    // (Not a FIFO or a device, which --force replaces unread: opening a FIFO waits for a writer.)
    let old = match target.is_file() {
        true => Some(Seen::open(&target)?),
        false => None,
    };
    // Keep what is there now as a version of its own before replacing it.
    if replaced && old.is_some() {
        store.import_file(&target, ctx.host)?;
    }
    crate::append::test_delay();
    match &old {
        Some(seen) => replace(&target, &bytes, seen, || {})?,
        None => crate::durable::replace_if(&target, &bytes, || Ok::<(), Error>(()))?,
    }
    std::fs::set_permissions(&target, permissions).map_err(FileError::at(&target, "set the mode of"))?;
    crate::own_write::record(ctx, &target);
    writeln!(out, "{id} {n} {}", crate::output::path(&target))?;
    Ok(0)
}

/// The file at the target when the restore first looked at it, open.
struct Seen {
    file: std::fs::File,
    stamp: Stamp,
}

impl Seen {
    fn open(path: &Path) -> Result<Seen> {
        let file = std::fs::File::open(path).map_err(FileError::at(path, "open"))?;
        let stamp = Stamp::of_meta(&file.metadata().map_err(FileError::at(path, "read"))?);
        Ok(Seen { file, stamp })
    }
}

/// Replaces `target` with `bytes` unless the path moved from `seen` (another program wrote or
/// replaced it: refused, nothing written). pi opens the path for each entry it appends, so one
/// that opened it before the rename and wrote after it wrote to the old file: then the old
/// file, with those bytes, is kept beside the target and the restore fails, naming it.
/// `between` runs between the last look and the rename (tests write there).
fn replace(target: &Path, bytes: &[u8], seen: &Seen, between: impl FnOnce()) -> Result<()> {
    crate::durable::replace_if(target, bytes, || {
        let same = Stamp::of(target).ok() == Some(seen.stamp);
        between();
        match same {
            true => Ok(()),
            false => {
                Err(Error::user(format!("{} changed while it was being restored; nothing written", target.display()))
                    .hint("if pi is running on this session, quit it first; then run the restore again (the new bytes are imported first)"))
            }
        }
    })?;
    let len = seen.file.metadata().map_err(FileError::at(target, "read"))?.len();
    if len == seen.stamp.len {
        return Ok(());
    }
    let mut old = Vec::new();
    std::io::Read::read_to_end(&mut &seen.file, &mut old).map_err(FileError::at(target, "read"))?;
    let mut name = target.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".before-restore-{}", seen.stamp.mtime_ns()));
    let kept = target.with_file_name(name);
    crate::durable::write_new(&kept, &old)?;
    Err(Error::user(format!(
        "{}: {} bytes were appended to it as it was replaced; they are not in the restored file",
        target.display(),
        len - seen.stamp.len
    ))
    .hint(format!("the file as it was, with them, is kept as {}", crate::output::path(&kept))))
}

/// Creates `path` empty, as any program creates a new file, and returns the mode it got.
fn new_file_mode(path: &Path) -> Result<std::fs::Permissions> {
    let file = std::fs::File::create_new(path).map_err(FileError::at(path, "create"))?;
    Ok(file.metadata().map_err(FileError::at(path, "read"))?.permissions())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// pi opens the path for each entry: one whose open came before the rename and whose write
    /// came after it writes to the old file. Its bytes are kept beside, and the restore says so.
    #[test]
    fn an_append_in_the_instant_of_the_rename_is_kept_beside_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("s.jsonl");
        std::fs::write(&target, b"a\n").unwrap();
        let seen = Seen::open(&target).unwrap();
        let err = replace(&target, b"restored\n", &seen, || {
            let mut pi = std::fs::OpenOptions::new().append(true).open(&target).unwrap();
            // The look is done: make the write after it land as pi's would, then the rename.
            pi.write_all(b"pi\n").unwrap();
        })
        .unwrap_err();
        assert_eq!(std::fs::read(&target).unwrap(), b"restored\n");
        let kept: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().contains(".before-restore-"))
            .collect();
        assert_eq!(kept.len(), 1, "{kept:?}");
        assert_eq!(std::fs::read(&kept[0]).unwrap(), b"a\npi\n");
        assert!(
            err.message.ends_with("3 bytes were appended to it as it was replaced; they are not in the restored file"),
            "{err}"
        );
        assert!(err.hints[0].contains(".before-restore-"), "{err:?}");
    }

    /// A change before the last look refuses the restore: nothing written.
    #[test]
    fn a_change_before_the_last_look_refuses() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("s.jsonl");
        std::fs::write(&target, b"a\n").unwrap();
        let seen = Seen::open(&target).unwrap();
        std::fs::OpenOptions::new().append(true).open(&target).unwrap().write_all(b"pi\n").unwrap();
        let err = replace(&target, b"restored\n", &seen, || {}).unwrap_err();
        assert!(err.message.contains("changed while it was being restored; nothing written"), "{err}");
        assert_eq!(std::fs::read(&target).unwrap(), b"a\npi\n");
    }
}

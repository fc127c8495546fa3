//! `shake restore`: write any imported version of a session file back, byte for byte.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::durable::FileError;
use crate::store::Store;
use crate::{Context, Error, Result};

/// Rebuild an imported version of a session file byte for byte (e.g. after a tool rewrote it)
#[derive(clap::Args, Debug)]
pub struct RestoreArgs {
    /// Session file (it may be gone), or session id (or unique prefix) of an imported session; default: the current session here (pi's, else oh-my-pi's)
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
    if existing.is_some() {
        if !args.force {
            return Err(Error::user(format!("{} exists; not overwritten", target.display()))
                .hint("pass --force to replace it (its current bytes are imported first), or -o FILE"));
        }
        // Keep what is there now as a version of its own before replacing it.
        if target.is_file() {
            store.import_file(&target, ctx.host)?;
        }
    }
    // The temp file is private (0600): a replaced file keeps the mode it had, and a new one gets
    // the mode a new file gets here (0666 less the umask), as pi's own writes create it.
    let permissions = match existing {
        Some(p) => p,
        None => new_file_mode(&target)?,
    };
    // A file another program (OMP, pi) changes after that import would lose the change: refuse.
    let seen = std::fs::metadata(&target).ok().map(|m| (m.len(), m.modified().ok()));
    crate::durable::replace_if(&target, &bytes, || {
        match std::fs::metadata(&target).ok().map(|m| (m.len(), m.modified().ok())) == seen {
            true => Ok(()),
            false => {
                Err(Error::user(format!("{} changed while it was being restored; nothing written", target.display()))
                    .hint("run the restore again: the new bytes are imported first"))
            }
        }
    })?;
    std::fs::set_permissions(&target, permissions).map_err(FileError::at(&target, "set the mode of"))?;
    writeln!(out, "{id} {n} {}", crate::output::path(&target))?;
    Ok(0)
}

/// Creates `path` empty, as any program creates a new file, and returns the mode it got.
fn new_file_mode(path: &Path) -> Result<std::fs::Permissions> {
    let file = std::fs::File::create_new(path).map_err(FileError::at(path, "create"))?;
    Ok(file.metadata().map_err(FileError::at(path, "read"))?.permissions())
}

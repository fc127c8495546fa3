//! `shake meter` and `--watch`: print a reading (and log it); watching, poll the file's stat and
//! print a new reading whenever it changed. [`FileState`] is what is compared (by the memo too).

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use crate::profile::Profile;
use crate::rules::Rules;
use shake_plumbing::durable::FileError;
use shake_plumbing::rev::RevArgs;
use shake_plumbing::{Context, Result};

use super::log::append_log;
use super::memo::reading;
use super::{Counting, MeterArgs};

/// How often `--watch` looks at the session file.
const POLL: Duration = Duration::from_millis(500);

/// Prints one reading of the session `args` names, or with `--watch` one per change of its file.
pub(super) fn run(
    ctx: &Context,
    args: &MeterArgs,
    profile: Profile,
    rules: &Rules,
    counting: &Counting<'_>,
    out: &mut dyn Write,
) -> Result {
    let color = !args.json && ctx.color;
    let mut state = FileState::of(ctx, &args.rev)?;
    loop {
        let reading = reading(ctx, &args.rev, &state, (profile, rules), counting)?;
        if args.json {
            writeln!(out, "{}", reading.json())?;
        } else {
            writeln!(out, "{}", reading.render(color))?;
        }
        out.flush()?;
        if let Some(log) = &args.log {
            append_log(log, reading.json())?;
        }
        if !args.watch {
            return Ok(0);
        }
        // A watching meter runs for hours: keep what it learnt after every reading.
        counting.save();
        // Poll: a stat every half second; read again only when the file changed.
        loop {
            std::thread::sleep(POLL);
            let now = FileState::of(ctx, &args.rev)?;
            if now != state {
                state = now;
                break;
            }
        }
    }
}

/// What `--watch` and the memo compare: which file the revision names now, and its size,
/// modification time and inode (as git's index does for a work-tree file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FileState {
    pub(crate) path: PathBuf,
    pub(crate) len: u64,
    pub(crate) mtime_ns: u128,
    pub(crate) inode: u64,
}

impl FileState {
    pub(crate) fn of(ctx: &Context, rev: &RevArgs) -> Result<FileState> {
        let path = rev.rev().session_path(ctx)?;
        let meta = std::fs::metadata(&path).map_err(FileError::at(&path, "read"))?;
        let mtime_ns = meta.modified().ok().and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok());
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(&meta);
        #[cfg(not(unix))]
        let inode = 0;
        Ok(FileState { path, len: meta.len(), mtime_ns: mtime_ns.map_or(0, |d| d.as_nanos()), inode })
    }

    /// Tells whether the file was modified long enough ago that a write in the same clock tick
    /// cannot hide behind an unchanged stamp (git's "racily clean" rule).
    pub(crate) fn settled(&self) -> bool {
        let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        self.mtime_ns > 0 && now.saturating_sub(self.mtime_ns) >= SETTLED.as_nanos()
    }
}

/// A file modified less than this long ago is never recalled by its stamp alone.
const SETTLED: Duration = Duration::from_secs(2);

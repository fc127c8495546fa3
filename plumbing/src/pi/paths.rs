//! Where pi keeps sessions: `<agent dir>/sessions/--<cwd>--/`, or the flat custom folder, and
//! which one `pi --continue` opens for a directory.

use std::path::{Path, PathBuf};

use crate::host::error::{HostError, Result};
use crate::host::recent::{self, Created, Name, Precision, Recency};
use crate::Context;

/// Returns pi's sessions root: `<agent dir>/sessions`.
pub fn sessions_root(ctx: &Context) -> PathBuf {
    ctx.agent_dir.join("sessions")
}

/// Returns the folder where pi keeps this directory's sessions, and whether it is the flat
/// custom folder (whose files must then be filtered by their header's `cwd`).
pub fn session_dir_for_cwd(ctx: &Context) -> (PathBuf, bool) {
    match &ctx.custom_session_dir {
        Some(dir) => (dir.clone(), true),
        None => (sessions_root(ctx).join(encode_cwd(&ctx.cwd)), false),
    }
}

/// pi's folder name for a working directory: `/home/dev/proj` → `--home-dev-proj--`.
pub fn encode_cwd(cwd: &Path) -> String {
    let s = cwd.to_string_lossy();
    let trimmed = s.strip_prefix(['/', '\\']).unwrap_or(&s);
    format!("--{}--", trimmed.replace(['/', '\\', ':'], "-"))
}

/// How pi 1.6.0 orders a folder for `--continue` (`findMostRecentSession`): `mtimeMs`, newest
/// first; equal ones in `readdirSync`'s order, which is by name (its sort is stable).
pub const RECENCY: Recency =
    Recency { precision: Precision::NodeMtimeMs, created: Created::Nothing, name: Name::Smallest };

/// pi's `--continue` choice: of this directory's `*.jsonl` files, newest first by [`RECENCY`],
/// the first whose header is a session's (in the flat custom folder: whose header's `cwd` is
/// this directory). pi skips a file without one rather than open it.
pub fn default_session(ctx: &Context) -> Result<PathBuf> {
    let (dir, flat) = session_dir_for_cwd(ctx);
    let cwd = ctx.cwd.to_string_lossy();
    let chosen = recent::newest_first(jsonl_files(&dir), RECENCY).into_iter().find(|path| match header(path) {
        Some(h) => !flat || h.get("cwd").and_then(|c| c.as_str()) == Some(&*cwd),
        None => false,
    });
    chosen.ok_or_else(|| {
        HostError::refused(format!("no pi session for {} (looked in {})", ctx.cwd.display(), dir.display()))
            .hint("name a session file, or run shake from the directory you ran pi in")
    })
}

fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(read) = std::fs::read_dir(dir) else { return Vec::new() };
    read.filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl") && p.is_file())
        .collect()
}

/// The session header as pi's `readSessionHeader` finds it: the first line that parses, if it
/// is a `session` entry with a string `id`, within the first 1 MiB; else none.
fn header(path: &Path) -> Option<serde_json::Value> {
    use std::io::{BufRead, BufReader, Read};
    let f = std::fs::File::open(path).ok()?;
    let mut reader = BufReader::new(f.take(1 << 20));
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).ok()? == 0 {
            return None;
        }
        // pi skips blank lines, lines that do not parse, and ones that parse to a falsy value.
        let Ok(raw) = serde_json::from_slice::<&serde_json::value::RawValue>(line.trim_ascii()) else { continue };
        if !super::entry::is_truthy(Some(raw)) {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(raw.get()).ok()?;
        let session =
            v.get("type").and_then(|t| t.as_str()) == Some("session") && v.get("id").is_some_and(|i| i.is_string());
        return session.then_some(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_cwd_like_pi() {
        assert_eq!(encode_cwd(Path::new("/home/dev/proj")), "--home-dev-proj--");
        assert_eq!(encode_cwd(Path::new("C:\\Users\\me\\p")), "--C--Users-me-p--");
    }
}

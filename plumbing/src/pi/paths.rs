//! Where pi keeps sessions: `<agent dir>/sessions/--<cwd>--/`, or the flat custom folder, and
//! which one `pi --continue` opens for a directory.

use std::path::{Path, PathBuf};

use crate::{Context, Error, Result};

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

/// pi's `--continue` choice: the most recently modified session file of this directory.
pub fn default_session(ctx: &Context) -> Result<PathBuf> {
    let (dir, flat) = session_dir_for_cwd(ctx);
    let mut newest: Option<(std::time::SystemTime, PathBuf)> = None;
    for path in jsonl_files(&dir) {
        if flat && !header_cwd_is(&path, &ctx.cwd) {
            continue;
        }
        let Ok(modified) = path.metadata().and_then(|m| m.modified()) else { continue };
        if newest.as_ref().is_none_or(|(t, _)| modified > *t) {
            newest = Some((modified, path));
        }
    }
    newest.map(|(_, p)| p).ok_or_else(|| {
        Error::user(format!("no pi session for {} (looked in {})", ctx.cwd.display(), dir.display()))
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

/// Reads just the header line's `cwd` (pi filters a flat session folder by it).
fn header_cwd_is(path: &Path, cwd: &Path) -> bool {
    use std::io::{BufRead, BufReader, Read};
    let Ok(f) = std::fs::File::open(path) else { return false };
    // pi reads at most 1 MiB looking for the header.
    let mut reader = BufReader::new(f.take(1 << 20));
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return false;
        }
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) {
            return v.get("cwd").and_then(|c| c.as_str()) == Some(&*cwd.to_string_lossy());
        }
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

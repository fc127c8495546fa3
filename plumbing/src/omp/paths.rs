//! Where OMP keeps sessions (`@oh-my-pi/pi-utils` `dirs.ts`, OMP `session/session-paths.ts`):
//! the sessions root and the per-directory folder name for a working directory.
//!
//! The root is `$PI_CODING_AGENT_DIR/sessions`; else `$XDG_DATA_HOME/omp/sessions` once that
//! folder exists (`omp config init-xdg`); else `~/<$PI_CONFIG_DIR or .omp>/agent/sessions`. Named
//! profiles are not followed. A folder name is `-` plus the home-relative path, `-tmp-` plus the
//! temp-relative path, or pi's legacy `--<absolute path>--`, with `/`, `\` and `:` turned into `-`.
//!
//! Also which file of that folder `omp --continue` opens ([`continue_choice`]).

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use crate::host::recent::{self, Created, Name, Precision, Recency};

/// OMP's sessions root, from an environment lookup and the home folder.
pub fn sessions_root(env: impl Fn(&str) -> Option<OsString>, home: &Path) -> PathBuf {
    if let Some(dir) = env("PI_CODING_AGENT_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("sessions");
    }
    if let Some(xdg) = env("XDG_DATA_HOME").filter(|d| !d.is_empty()).map(|d| PathBuf::from(d).join("omp")) {
        if xdg.is_dir() {
            return xdg.join("sessions");
        }
    }
    let config = env("PI_CONFIG_DIR").filter(|d| !d.is_empty()).unwrap_or_else(|| ".omp".into());
    home.join(config).join("agent").join("sessions")
}

/// The folder name OMP gives the sessions of `cwd` (all three paths already canonical).
pub fn session_dir_name(cwd: &Path, home: &Path, tmp: &Path) -> String {
    let encode = |p: &Path| p.to_string_lossy().replace(['/', '\\', ':'], "-");
    let relative = |p: &Path| match p.as_os_str().is_empty() {
        true => String::new(),
        false => format!("-{}", encode(p)),
    };
    if let Some(rel) = within(cwd, home) {
        let rel = relative(&rel);
        return if rel.is_empty() { "-".into() } else { rel };
    }
    if let Some(rel) = within(cwd, tmp) {
        return format!("-tmp{}", relative(&rel));
    }
    let abs = cwd.to_string_lossy();
    format!("--{}--", encode(Path::new(abs.strip_prefix(['/', '\\']).unwrap_or(&abs))))
}

/// `cwd` relative to `root` when it is `root` or below it.
fn within(cwd: &Path, root: &Path) -> Option<PathBuf> {
    let rel = cwd.strip_prefix(root).ok()?;
    rel.components().all(|c| matches!(c, Component::Normal(_))).then(|| rel.to_path_buf())
}

/// Node's `os.tmpdir()`: `$TMPDIR`, `$TMP` or `$TEMP`, else `/tmp`, without a trailing `/`.
pub fn temp_dir(env: impl Fn(&str) -> Option<OsString>) -> PathBuf {
    let dir = ["TMPDIR", "TMP", "TEMP"].into_iter().find_map(|k| env(k).filter(|v| !v.is_empty()));
    let dir = dir.map_or_else(|| "/tmp".to_string(), |d| d.to_string_lossy().into_owned());
    PathBuf::from(if dir.len() > 1 { dir.trim_end_matches('/') } else { &dir })
}

/// How OMP 18.2.11 orders a folder's sessions (`collectSessionsFromFiles`): `mtime` to the
/// millisecond, newest first; then the header's `timestamp`, newest first; then the greatest path.
pub const RECENCY: Recency =
    Recency { precision: Precision::Millis, created: Created::Stamp(header_timestamp), name: Name::Greatest };

/// The session `omp --continue` opens from `dir` when no terminal breadcrumb names one
/// (`findMostRecentNonEmptySession`): of the `*.jsonl` files (`Bun.Glob`: files, no dot files),
/// newest first by [`RECENCY`], the first with a session header. OMP also passes over sessions
/// with no turn, title or prompt yet; shake does not.
pub fn continue_choice(dir: &Path) -> Option<PathBuf> {
    let files = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.ends_with(".jsonl") && !name.starts_with('.') && e.path().is_file()
        })
        .map(|e| e.path())
        .collect();
    recent::newest_first(files, RECENCY).into_iter().find(|p| header(p).is_some())
}

/// The header OMP's session list reads (`parseSessionListHeader`): in the first 4 KiB, the first
/// non-empty line after an optional title slot, if it is a `session` entry with a string `id`.
fn header(path: &Path) -> Option<serde_json::Value> {
    use std::io::Read;
    let mut prefix = Vec::with_capacity(4096);
    std::fs::File::open(path).ok()?.take(4096).read_to_end(&mut prefix).ok()?;
    let text = String::from_utf8_lossy(&prefix);
    let mut lines = text.split('\n').map(str::trim).filter(|l| !l.is_empty()).peekable();
    let kind = |line: &str| serde_json::from_str::<serde_json::Value>(line).ok().filter(|v| v.is_object());
    if lines.peek().and_then(|l| kind(l)).is_some_and(|v| v["type"] == "title") {
        lines.next();
    }
    let v = kind(lines.next()?)?;
    (v["type"] == "session" && v["id"].is_string()).then_some(v)
}

/// The header's `timestamp` in Unix milliseconds (`new Date(header.timestamp)`), if it parses.
fn header_timestamp(path: &Path) -> Option<i64> {
    crate::time::parse_iso_millis(header(path)?["timestamp"].as_str()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folder_names_are_omps() {
        let (home, tmp) = (Path::new("/home/dev"), Path::new("/tmp"));
        let name = |cwd: &str| session_dir_name(Path::new(cwd), home, tmp);
        assert_eq!(name("/home/dev"), "-");
        assert_eq!(name("/home/dev/src/shake"), "-src-shake");
        assert_eq!(name("/tmp"), "-tmp");
        assert_eq!(name("/tmp/x/y"), "-tmp-x-y");
        assert_eq!(name("/srv/a:b"), "--srv-a-b--");
        assert_eq!(name("/home/devx"), "--home-devx--");
    }

    #[test]
    fn the_root_follows_omps_environment() {
        let home = Path::new("/h");
        let none = |_: &str| None;
        assert_eq!(sessions_root(none, home), Path::new("/h/.omp/agent/sessions"));
        let agent = |k: &str| (k == "PI_CODING_AGENT_DIR").then(|| OsString::from("/a"));
        assert_eq!(sessions_root(agent, home), Path::new("/a/sessions"));
        let config = |k: &str| (k == "PI_CONFIG_DIR").then(|| OsString::from(".omp-dev"));
        assert_eq!(sessions_root(config, home), Path::new("/h/.omp-dev/agent/sessions"));
        let xdg = tempfile::tempdir().unwrap();
        let xdg_env = |k: &str| (k == "XDG_DATA_HOME").then(|| xdg.path().as_os_str().to_owned());
        assert_eq!(sessions_root(xdg_env, home), Path::new("/h/.omp/agent/sessions"), "no omp folder yet");
        std::fs::create_dir(xdg.path().join("omp")).unwrap();
        assert_eq!(sessions_root(xdg_env, home), xdg.path().join("omp/sessions"));
        assert_eq!(temp_dir(|k| (k == "TMP").then(|| "/t/".into())), Path::new("/t"));
        assert_eq!(temp_dir(|_| None), Path::new("/tmp"));
    }
}

//! Where Claude Code keeps sessions: `$CLAUDE_CONFIG_DIR/projects/`, else
//! `~/.claude/projects/`, one folder per working directory (the absolute path with every
//! character other than `A–Z a–z 0–9` turned into `-`; past 200 characters Claude Code cuts the
//! name and adds a hash, so such folders are found by their first 200 characters).

use std::path::{Path, PathBuf};

use crate::host::recent::{self, Created, Name, Precision, Recency};

/// The longest folder name Claude Code uses as is.
const MAX_NAME: usize = 200;

/// Claude Code's configuration folder: `$CLAUDE_CONFIG_DIR`, else `~/.claude` (`home` as the
/// context found it: `$HOME`, else the account database's, as Node's `os.homedir()`).
pub fn config_dir(env: impl Fn(&str) -> Option<String>, home: &Path) -> PathBuf {
    match env("CLAUDE_CONFIG_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => home.join(".claude"),
    }
}

/// The folder that holds every project's sessions.
pub fn projects_dir(env: impl Fn(&str) -> Option<String>, home: &Path) -> PathBuf {
    config_dir(env, home).join("projects")
}

/// A working directory's folder name, as Claude Code encodes it (before any hash suffix).
pub fn encode_cwd(cwd: &str) -> String {
    // JavaScript replaces per UTF-16 unit: a character outside the BMP gives two dashes.
    let mut out = String::with_capacity(cwd.len());
    for c in cwd.chars() {
        match c.is_ascii_alphanumeric() {
            true => out.push(c),
            false => (0..c.len_utf16()).for_each(|_| out.push('-')),
        }
    }
    out
}

/// The project folder of `cwd` under `projects`, if it exists: the exact name, or for a long
/// path the one folder whose name starts with the first 200 characters and a `-`.
pub fn project_dir(projects: &Path, cwd: &str) -> Option<PathBuf> {
    let name = encode_cwd(cwd);
    if name.len() <= MAX_NAME {
        let dir = projects.join(&name);
        return dir.is_dir().then_some(dir);
    }
    let prefix = format!("{}-", &name[..MAX_NAME]);
    let mut found = std::fs::read_dir(projects)
        .ok()?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix) && e.path().is_dir());
    let first = found.next()?;
    // Two folders could share the prefix (two long paths alike for 200 characters): refuse to guess.
    found.next().is_none().then(|| first.path())
}

/// The session id a transcript's file name carries (`<uuid>.jsonl`).
pub fn session_id_of_file(name: &str) -> Option<String> {
    let id = name.strip_suffix(".jsonl")?;
    let uuid = id.len() == 36
        && id.char_indices().all(|(i, c)| if [8, 13, 18, 23].contains(&i) { c == '-' } else { c.is_ascii_hexdigit() });
    uuid.then(|| id.to_string())
}

/// How Claude Code 2.1 orders a project folder for `--continue`: `mtime` to the millisecond,
/// newest first; then the birth time to the millisecond, newest first. Where both are equal its
/// order is that of its directory listing and stat calls (unspecified); shake takes the smallest
/// name.
pub const RECENCY: Recency = Recency { precision: Precision::Millis, created: Created::Birth, name: Name::Smallest };

/// The sessions of a project folder, in the order `claude --continue` tries them ([`RECENCY`]):
/// it resumes the first it accepts. (It also passes over transcripts with only bookkeeping rows,
/// superseded, archived or running ones; shake does not.)
pub fn sessions_newest_first(dir: &Path) -> Vec<PathBuf> {
    let found = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter(|e| session_id_of_file(&e.file_name().to_string_lossy()).is_some() && e.path().is_file())
        .map(|e| e.path())
        .collect();
    recent::newest_first(found, RECENCY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_and_finds_project_folders_as_claude_code_names_them() {
        assert_eq!(encode_cwd("/Users/a/my-app"), "-Users-a-my-app");
        assert_eq!(encode_cwd("/tmp/tmp.jqVhU43WxT/project"), "-tmp-tmp-jqVhU43WxT-project");
        assert_eq!(encode_cwd("/home/é/x"), "-home---x");
        assert_eq!(encode_cwd("/🦀"), "---");
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("-w-p")).unwrap();
        assert_eq!(project_dir(root.path(), "/w/p"), Some(root.path().join("-w-p")));
        assert_eq!(project_dir(root.path(), "/w/q"), None);
        let long = format!("/{}", "d".repeat(250));
        let hashed = format!("{}-abc123", &encode_cwd(&long)[..200]);
        std::fs::create_dir(root.path().join(&hashed)).unwrap();
        assert_eq!(project_dir(root.path(), &long), Some(root.path().join(hashed)));
    }

    #[test]
    fn config_dir_prefers_claude_config_dir() {
        let env = |k: &str| (k == "CLAUDE_CONFIG_DIR").then(|| "/cfg".to_string());
        let home = Path::new("/home/u");
        assert_eq!(projects_dir(env, home), PathBuf::from("/cfg/projects"));
        assert_eq!(projects_dir(|_| None, home), PathBuf::from("/home/u/.claude/projects"));
        assert_eq!(
            session_id_of_file("6441b122-fe40-440f-8748-373795bf20d8.jsonl").as_deref(),
            Some("6441b122-fe40-440f-8748-373795bf20d8")
        );
        assert_eq!(session_id_of_file("agent-a4aef1417a694d5dd.jsonl"), None);
    }
}

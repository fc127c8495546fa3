//! Where things are: the working directory, pi's agent and session folders, and the store.
//!
//! Resolved once per process from flags and the environment, then passed to every command.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The environment a command runs in.
#[derive(Clone, Debug)]
pub struct Context {
    /// The directory the user runs shake from (pi's sessions are per directory).
    pub cwd: PathBuf,
    /// pi's agent directory: `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`.
    pub agent_dir: PathBuf,
    /// A flat custom session folder (`$PI_CODING_AGENT_SESSION_DIR`), if set.
    pub custom_session_dir: Option<PathBuf>,
    /// The store: `--store`, else `$SHAKE_DIR`, else `<agent dir>/shake`.
    pub store_dir: PathBuf,
}

impl Context {
    /// Resolves the context from the process environment and an optional `--store` flag.
    pub fn from_env(store_flag: Option<PathBuf>) -> std::io::Result<Context> {
        let cwd = std::env::current_dir()?;
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let home = var("HOME").unwrap_or_else(|| PathBuf::from("/"));
        let agent_dir = var("PI_CODING_AGENT_DIR").map(|d| expand_home(&d, &home)).unwrap_or(home.join(".pi/agent"));
        let custom_session_dir = var("PI_CODING_AGENT_SESSION_DIR").map(|d| expand_home(&d, &home));
        let store_dir = store_flag.or_else(|| var("SHAKE_DIR")).unwrap_or_else(|| agent_dir.join("shake"));
        Ok(Context { cwd, agent_dir, custom_session_dir, store_dir })
    }

    /// Prints a warning on stderr (`shake: warning: …`), unless `SHAKE_QUIET` is set.
    pub fn warn(&self, message: impl std::fmt::Display) {
        if std::env::var_os("SHAKE_QUIET").is_none() {
            // Not eprintln!, which panics when stderr is closed: a warning nobody can read is
            // dropped, as a closed stdout is.
            let _ = writeln!(std::io::stderr().lock(), "shake: warning: {message}");
        }
    }

    /// Prints the warnings of a parsed session, each naming file and line.
    pub fn warn_session(&self, session: &crate::pi::Session<'_>) {
        for w in &session.warnings {
            match w.line {
                0 => self.warn(format_args!("{}: {}", session.file.display(), w.message)),
                n => self.warn(format_args!("{}:{}: {}", session.file.display(), n, w.message)),
            }
        }
    }

    /// Returns pi's sessions root: `<agent dir>/sessions`.
    pub fn sessions_root(&self) -> PathBuf {
        self.agent_dir.join("sessions")
    }

    /// Returns the folder where pi keeps this directory's sessions, and whether it is the flat
    /// custom folder (whose files must then be filtered by their header's `cwd`).
    pub fn session_dir_for_cwd(&self) -> (PathBuf, bool) {
        match &self.custom_session_dir {
            Some(dir) => (dir.clone(), true),
            None => (self.sessions_root().join(encode_cwd(&self.cwd)), false),
        }
    }
}

/// pi's folder name for a working directory: `/home/dev/proj` → `--home-dev-proj--`.
pub fn encode_cwd(cwd: &Path) -> String {
    let s = cwd.to_string_lossy();
    let trimmed = s.strip_prefix(['/', '\\']).unwrap_or(&s);
    format!("--{}--", trimmed.replace(['/', '\\', ':'], "-"))
}

fn expand_home(path: &Path, home: &Path) -> PathBuf {
    match path.strip_prefix("~") {
        Ok(rest) => home.join(rest),
        Err(_) => path.to_path_buf(),
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

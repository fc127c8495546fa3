//! Where things are: the working directory, the hosts' folders, the store, and the host a
//! `--host` flag forces.
//!
//! Resolved once per process from flags and the environment, then passed to every command.
//! Which folder a host keeps its sessions in is the host's own rule (`crate::host::Host`).

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::host::HostKind;

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
    /// Whether output for people may be coloured: decided once by the binary (`--color`, a
    /// terminal, `NO_COLOR`) and passed in, so no command looks at the real stdout.
    pub color: bool,
    /// The host `--host` names: files are read as its sessions, without detection.
    pub host: Option<HostKind>,
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
        Ok(Context { cwd, agent_dir, custom_session_dir, store_dir, color: false, host: None })
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
    pub fn warn_session(&self, session: &crate::host::Session<'_>) {
        for w in &session.warnings {
            match w.line {
                0 => self.warn(format_args!("{}: {}", session.file.display(), w.message)),
                n => self.warn(format_args!("{}:{}: {}", session.file.display(), n, w.message)),
            }
        }
    }
}

fn expand_home(path: &Path, home: &Path) -> PathBuf {
    match path.strip_prefix("~") {
        Ok(rest) => home.join(rest),
        Err(_) => path.to_path_buf(),
    }
}

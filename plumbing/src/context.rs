//! Where things are: the working directory, the hosts' folders, the store, and the host a
//! `--host` flag forces.
//!
//! Resolved once per process from flags and the environment, then passed to every command.
//! Which folder a host keeps its sessions in is the host's own rule (`crate::host::Host`).

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::host::kind::HostKind;

/// The environment a command runs in.
#[derive(Clone, Debug)]
pub struct Context {
    /// The directory the user runs shake from (pi's sessions are per directory).
    pub cwd: PathBuf,
    /// The user's home folder ([`home_dir`]).
    pub home: PathBuf,
    /// pi's agent directory: `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`.
    pub agent_dir: PathBuf,
    /// A flat custom session folder (`$PI_CODING_AGENT_SESSION_DIR`), if set.
    pub custom_session_dir: Option<PathBuf>,
    /// The store ([`store_dir`]): `--store`, else `$SHAKE_DIR`, else `<agent dir>/shake` for a
    /// pi user, else the platform's data folder.
    pub store_dir: PathBuf,
    /// Whether output for people may be coloured: decided once by the binary (`--color`, a
    /// terminal, `NO_COLOR`) and passed in, so no command looks at the real stdout.
    pub color: bool,
    /// The host `--host` names: files are read as its sessions, without detection.
    pub host: Option<HostKind>,
    /// The model the next request goes to (`--model`), for a host whose projection depends on
    /// it (Claude Code: [`crate::host::Session::choose_model`]); `None`: each session's own.
    pub model: Option<String>,
}

impl Context {
    /// This context with `model` chosen (`--model`), when one is given.
    pub fn with_model(&self, model: Option<&str>) -> Context {
        Context { model: model.map(str::to_string).or_else(|| self.model.clone()), ..self.clone() }
    }

    /// Resolves the context from the process environment and an optional `--store` flag.
    pub fn from_env(store_flag: Option<PathBuf>) -> std::io::Result<Context> {
        let cwd = std::env::current_dir()?;
        let env = |name: &str| std::env::var_os(name);
        let var = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let home = home_dir(env, passwd_home);
        let pi_dir = var("PI_CODING_AGENT_DIR").map(|d| expand_home(&d, &home));
        let custom_session_dir = var("PI_CODING_AGENT_SESSION_DIR").map(|d| expand_home(&d, &home));
        let store_dir = store_dir(store_flag, env, pi_dir.as_deref(), &home, |p| p.exists());
        let agent_dir = pi_dir.unwrap_or_else(|| home.join(".pi/agent"));
        Ok(Context { cwd, home, agent_dir, custom_session_dir, store_dir, color: false, host: None, model: None })
    }

    /// Prints a warning on stderr (`shake: warning: …`), unless `SHAKE_QUIET` is set.
    pub fn warn(&self, message: impl std::fmt::Display) {
        if std::env::var_os("SHAKE_QUIET").is_none() {
            // Not eprintln!, which panics when stderr is closed: a warning nobody can read is
            // dropped, as a closed stdout is.
            let _ = writeln!(std::io::stderr().lock(), "shake: warning: {message}");
        }
    }
}

/// The user's home folder: `$HOME` when set and not empty, else the account database's entry of
/// the user (as Node's `os.homedir()` finds it, so as the hosts find it), else `/`.
pub fn home_dir(env: impl Fn(&str) -> Option<OsString>, passwd: impl FnOnce() -> Option<PathBuf>) -> PathBuf {
    env("HOME").filter(|h| !h.is_empty()).map(PathBuf::from).or_else(passwd).unwrap_or_else(|| PathBuf::from("/"))
}

/// The home folder the account database gives the user running shake.
#[cfg(unix)]
fn passwd_home() -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let mut buf = vec![0u8; 4096];
    // SAFETY: an all-zero `passwd` is a valid value to be filled in.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found = std::ptr::null_mut();
    loop {
        // SAFETY: every pointer is valid for the call; `buf` outlives the strings it fills in.
        let rc = unsafe { libc::getpwuid_r(libc::getuid(), &mut pw, buf.as_mut_ptr().cast(), buf.len(), &mut found) };
        match rc {
            libc::ERANGE if buf.len() < 1 << 20 => buf.resize(buf.len() * 2, 0),
            0 if !found.is_null() && !pw.pw_dir.is_null() => {
                // SAFETY: `pw_dir` points at a NUL-terminated string inside `buf`.
                let dir = unsafe { std::ffi::CStr::from_ptr(pw.pw_dir) };
                let dir = std::ffi::OsStr::from_bytes(dir.to_bytes());
                return (!dir.is_empty()).then(|| PathBuf::from(dir));
            }
            _ => return None,
        }
    }
}

#[cfg(not(unix))]
fn passwd_home() -> Option<PathBuf> {
    None
}

/// Where the store is: `--store`, else `$SHAKE_DIR`, else `$PI_CODING_AGENT_DIR/shake`, else
/// where a store already is (`~/.pi/agent/shake`, then the data folder's), else beside pi's
/// sessions for a pi user (`~/.pi/agent` there), else the platform's data folder
/// (`$XDG_DATA_HOME/shake`, else `~/.local/share/shake`; `~/Library/Application Support/shake`
/// on macOS): a user of Claude Code alone gets no `~/.pi`, and no store is left behind when the
/// user later installs pi.
pub fn store_dir(
    flag: Option<PathBuf>,
    env: impl Fn(&str) -> Option<OsString>,
    pi_dir: Option<&Path>,
    home: &Path,
    exists: impl Fn(&Path) -> bool,
) -> PathBuf {
    let var = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(dir) = flag.or_else(|| var("SHAKE_DIR")) {
        return dir;
    }
    if let Some(pi) = pi_dir {
        return pi.join("shake");
    }
    let pi = home.join(".pi/agent");
    let data = match cfg!(target_os = "macos") {
        true => home.join("Library/Application Support"),
        // The XDG spec ignores a relative path.
        false => var("XDG_DATA_HOME").filter(|d| d.is_absolute()).unwrap_or_else(|| home.join(".local/share")),
    }
    .join("shake");
    match (exists(&pi.join("shake")), exists(&data), exists(&pi)) {
        (true, _, _) | (false, false, true) => pi.join("shake"),
        _ => data,
    }
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

    fn env<'a>(vars: &'a [(&str, &str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| OsString::from(v))
    }

    /// `$HOME` when set and not empty, else the account database's, else `/`.
    #[test]
    fn home_comes_from_home_else_the_account_database() {
        let db = || Some(PathBuf::from("/home/db"));
        assert_eq!(home_dir(env(&[("HOME", "/h")]), db), Path::new("/h"));
        assert_eq!(home_dir(env(&[("HOME", "")]), db), Path::new("/home/db"));
        assert_eq!(home_dir(env(&[]), db), Path::new("/home/db"));
        assert_eq!(home_dir(env(&[]), || None), Path::new("/"));
        // The real database names a home for the user running the tests (root in CI).
        assert!(passwd_home().is_some_and(|h| h.is_absolute()));
    }

    /// The store: the flag, `$SHAKE_DIR`, beside pi's sessions for a pi user or where a store
    /// already is, else the platform's data folder.
    #[test]
    fn the_store_is_beside_pi_for_pi_users_else_in_the_data_folder() {
        let home = Path::new("/h");
        let none = |_: &Path| false;
        let pi_there = |p: &Path| p == Path::new("/h/.pi/agent");
        let at = |flag: Option<&str>, vars: &[(&str, &str)], pi: Option<&str>, exists: &dyn Fn(&Path) -> bool| {
            store_dir(flag.map(PathBuf::from), env(vars), pi.map(Path::new), home, exists)
        };
        assert_eq!(at(Some("/f"), &[("SHAKE_DIR", "/s")], None, &none), Path::new("/f"));
        assert_eq!(at(None, &[("SHAKE_DIR", "/s")], None, &none), Path::new("/s"));
        assert_eq!(at(None, &[], Some("/agent"), &none), Path::new("/agent/shake"));
        assert_eq!(at(None, &[], None, &pi_there), Path::new("/h/.pi/agent/shake"));
        // A store the data folder holds stays in use once pi is installed.
        let both = |p: &Path| pi_there(p) || p == Path::new("/h/.local/share/shake");
        let older = |p: &Path| pi_there(p) || p == Path::new("/h/.pi/agent/shake");
        assert_eq!(at(None, &[], None, &older), Path::new("/h/.pi/agent/shake"));
        if !cfg!(target_os = "macos") {
            assert_eq!(at(None, &[], None, &both), Path::new("/h/.local/share/shake"));
        }
        if !cfg!(target_os = "macos") {
            assert_eq!(at(None, &[("XDG_DATA_HOME", "/x")], None, &none), Path::new("/x/shake"));
            assert_eq!(at(None, &[("XDG_DATA_HOME", "rel")], None, &none), Path::new("/h/.local/share/shake"));
            assert_eq!(at(None, &[], None, &none), Path::new("/h/.local/share/shake"));
        }
    }
}

//! The error every command returns: a message, hints, what kind of failure it is (which decides
//! the exit code), and the engine error it came from (its `source` chain).
//!
//! Engine operations return their own typed errors (`store::StoreError` and the store's parts it
//! wraps, `append::AppendError`, `durable::FileError` for a step on a file, each host's parse
//! errors, …), each naming the path involved and keeping the system's error as its `source`;
//! they become an [`Error`] by `From` where a command's `?` meets them. Those `From` impls, which
//! pick the kind (the exit code) and the hints, are the command boundary's
//! (`command_error.rs`, as jj's is), not this floor's nor where the error was made.

use std::fmt;

pub use crate::output::chain;

/// What kind of failure an error is; each maps to one exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Bad input or a refusal: exit 1.
    User,
    /// The store is corrupt: exit 3.
    Corrupt,
    /// An interrogating command (`diff`, `audit`), whose exit 1 means "found a difference",
    /// could not answer (bad revision, unreadable file…): exit 2, like diff(1) and clap's usage
    /// errors, so a script never reads a failure as a finding.
    Trouble,
    /// The system refused an operation on a file that exists (permission denied, disk full,
    /// read-only file system, an I/O error): exit 4. Neither the input's fault nor corruption.
    Io,
}

impl ErrorKind {
    /// Returns the process exit code for this kind.
    pub fn exit_code(self) -> u8 {
        match self {
            ErrorKind::User => 1,
            ErrorKind::Trouble => 2,
            ErrorKind::Corrupt => 3,
            ErrorKind::Io => 4,
        }
    }

    /// The kind of an operating-system error: a path that names nothing, names a folder where
    /// a file was wanted (or the reverse), or names a file that must not be overwritten is the
    /// user's; anything else (permission, space, the device) is [`ErrorKind::Io`].
    pub fn of_io(kind: std::io::ErrorKind) -> ErrorKind {
        use std::io::ErrorKind as K;
        match kind {
            K::NotFound | K::AlreadyExists | K::IsADirectory | K::NotADirectory => ErrorKind::User,
            _ => ErrorKind::Io,
        }
    }
}

/// A command's failure, ready to print as `shake: error: …` plus `hint: …` lines.
#[derive(Debug)]
pub struct Error {
    /// Decides the exit code.
    pub kind: ErrorKind,
    /// One line saying what went wrong, naming the file and line where there is one.
    pub message: String,
    /// What the user can do about it.
    pub hints: Vec<String>,
    /// The engine or system error this one reports, if any.
    pub source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl Error {
    fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error { kind, message: message.into(), hints: Vec::new(), source: None }
    }

    /// Returns a user error with this message.
    pub fn user(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::User, message)
    }

    /// Returns a corrupt-store error with this message.
    pub fn corrupt(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Corrupt, message)
    }

    /// Returns the error for a typed engine error `e` caused by an I/O error of `kind`: its
    /// message is `e`'s whole source chain.
    pub fn os(kind: std::io::ErrorKind, e: &dyn std::error::Error) -> Error {
        Error::new(ErrorKind::of_io(kind), chain(e))
    }

    /// Returns this error as an interrogating command reports it: a user error becomes
    /// [`ErrorKind::Trouble`] (exit 2); corruption and I/O keep their codes.
    pub fn trouble(self) -> Error {
        match self.kind {
            ErrorKind::User => Error { kind: ErrorKind::Trouble, ..self },
            _ => self,
        }
    }

    /// Adds a hint line.
    pub fn hint(mut self, hint: impl Into<String>) -> Error {
        self.hints.push(hint.into());
        self
    }

    /// Keeps `source` as the error this one reports.
    pub fn caused_by(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Error {
        self.source = Some(Box::new(source));
        self
    }

    /// Wraps an I/O error on no file (standard input, the working directory) with what was
    /// being done; a step on a file is a [`crate::durable::FileError`], which names it.
    pub fn io(what: impl fmt::Display, err: std::io::Error) -> Error {
        Error::new(ErrorKind::of_io(err.kind()), format!("{what}: {err}")).caused_by(err)
    }

    /// Tells whether this error is a closed pipe (`shake log | head`), found by the
    /// `io::ErrorKind` anywhere in its source chain.
    pub fn is_broken_pipe(&self) -> bool {
        let mut next: Option<&(dyn std::error::Error + 'static)> = self.source.as_deref().map(|s| s as _);
        while let Some(e) = next {
            if e.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe) {
                return true;
            }
            next = e.source();
        }
        false
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|s| s as _)
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        // A `-z` record that cannot be printed is the input's fault, not the system's.
        if let Some(nul) = e.get_ref().and_then(|r| r.downcast_ref::<crate::output::NulInField>()) {
            return Error::user(nul.to_string()).hint("print it with --json, or without -z (quoted)");
        }
        Error::new(ErrorKind::of_io(e.kind()), e.to_string()).caused_by(e)
    }
}

/// What a command returns: its exit code (0, or 1 for "found a difference"), or an error; with
/// `E`, what an engine operation returns (its typed error).
pub type Result<T = u8, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interrogators_exit_2_on_user_errors_and_3_on_corruption() {
        assert_eq!(Error::user("x").kind.exit_code(), 1);
        assert_eq!(Error::user("x").trouble().kind.exit_code(), 2);
        assert_eq!(Error::corrupt("x").trouble().kind.exit_code(), 3);
        let e = Error::user("x").hint("h").trouble();
        assert_eq!((e.message.as_str(), e.hints.as_slice()), ("x", ["h".to_string()].as_slice()));
    }

    #[test]
    fn io_errors_keep_their_kind_and_source() {
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let e = Error::io("cannot read /s/refs/x", denied);
        assert_eq!(e.kind, ErrorKind::Io);
        assert_eq!(e.kind.exit_code(), 4);
        assert!(e.message.starts_with("cannot read /s/refs/x: "), "{}", e.message);
        assert_eq!(Error::io("x", std::io::ErrorKind::NotFound.into()).kind, ErrorKind::User);
        assert!(Error::from(std::io::Error::from(std::io::ErrorKind::BrokenPipe)).is_broken_pipe());
        // The text alone does not make a broken pipe.
        assert!(!Error::user("Broken pipe").is_broken_pipe());
    }
}

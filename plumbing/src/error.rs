//! The error every command returns: a message, hints, and what kind of failure it is (which
//! decides the exit code).

use std::fmt;

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
}

impl ErrorKind {
    /// Returns the process exit code for this kind.
    pub fn exit_code(self) -> u8 {
        match self {
            ErrorKind::User => 1,
            ErrorKind::Corrupt => 3,
            ErrorKind::Trouble => 2,
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
}

impl Error {
    /// Returns a user error with this message.
    pub fn user(message: impl Into<String>) -> Error {
        Error { kind: ErrorKind::User, message: message.into(), hints: Vec::new() }
    }

    /// Returns a corrupt-store error with this message.
    pub fn corrupt(message: impl Into<String>) -> Error {
        Error { kind: ErrorKind::Corrupt, message: message.into(), hints: Vec::new() }
    }

    /// Returns this error as an interrogating command reports it: a user error becomes
    /// [`ErrorKind::Trouble`] (exit 2); a corrupt store stays exit 3.
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

    /// Wraps an I/O error with what was being done and to which path.
    pub fn io(what: impl fmt::Display, err: std::io::Error) -> Error {
        Error::user(format!("{what}: {err}"))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        Error::user(e.to_string())
    }
}

/// What a command returns: its exit code (0, or 1 for "found a difference"), or an error.
pub type Result<T = u8> = std::result::Result<T, Error>;

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
}

//! The porcelain's command boundary, as `plumbing/src/command_error.rs` is the engine's: how a
//! command says each error of the porcelain's library, its kind (the exit code) and its hints.
//! The library (everything beside `cmd/`) returns its own typed errors; a command's `?` turns
//! them into the CLI's [`Error`] through the `From` impls here (a trait impl needs no import).

use shake_plumbing::Error;

use crate::config::ConfigError;
use crate::host_history::HistoryError;
use crate::overlay::OverlayError;
use crate::pi_extension::InstallError;

impl From<ConfigError> for Error {
    fn from(e: ConfigError) -> Error {
        let hint = match e {
            ConfigError::Unreadable { .. } | ConfigError::BadFloor { .. } => None,
            ConfigError::Invalid { .. } => Some("see docs/folding.md, \"Rules\", for the keys"),
            ConfigError::UnknownProfile { .. } => Some("use \"default\", \"conservative\" or \"aggressive\""),
        };
        user(&e, hint)
    }
}

impl From<OverlayError> for Error {
    fn from(e: OverlayError) -> Error {
        match e {
            OverlayError::Store(e) => e.into(),
            OverlayError::EmptyPath => Error::user(e.to_string()),
        }
    }
}

impl From<InstallError> for Error {
    fn from(e: InstallError) -> Error {
        match e {
            InstallError::Symlink { .. } => {
                Error::user(e.to_string()).hint("remove it first to install the copy this shake carries")
            }
            InstallError::Write(e) => e.into(),
        }
    }
}

impl From<HistoryError> for Error {
    fn from(e: HistoryError) -> Error {
        let hint = match e {
            HistoryError::NoVersion { .. } => Some("`shake sessions --versions` lists them"),
            HistoryError::NotRewriter { .. } => Some("to compare two leaves, name them as SESSION[:ENTRY]"),
            HistoryError::LeafChosen { .. } => None,
        };
        user(&e, hint)
    }
}

/// A user's error (exit 1) in the library's words, with its hint if it has one.
fn user(e: &dyn std::fmt::Display, hint: Option<&str>) -> Error {
    let err = Error::user(e.to_string());
    match hint {
        Some(h) => err.hint(h),
        None => err,
    }
}

//! The porcelain's command boundary, as `plumbing/src/command_error.rs` is the engine's: how a
//! command says each error of the porcelain's library, its kind (the exit code) and its hints.
//! The library (everything beside `cmd/`) returns its own typed errors; a command's `?` turns
//! them into the CLI's [`Error`] through the `From` impls here (a trait impl needs no import).

use shake_plumbing::Error;

use super::pi_extension::InstallError;
use crate::batch::BatchError;
use crate::config::ConfigError;
use crate::host_history::HistoryError;
use crate::leaf::LeafError;
use crate::overlay::OverlayError;

impl From<BatchError> for Error {
    fn from(e: BatchError) -> Error {
        use BatchError as B;
        let e = match e {
            B::Rev(e) => return e.into(),
            B::Host(e) => return e.into(),
            B::Record(e) => return e.into(),
            B::Append(e) => return e.into(),
            B::File(e) => return e.into(),
            e => e,
        };
        let hint = match &e {
            B::InPlaceAppends { .. } => Some("leave out --in-place".to_string()),
            B::InPlaceUnforced { word, title, .. } => Some(format!(
                "quit every {title} running this session, then add --force; or leave out --in-place to write a new session (the {word} is never written)"
            )),
            B::Fetched { machine, .. } => {
                Some(format!("fold it on {machine}, or work on a copy: shake restore {machine}/<session> -o FILE"))
            }
            B::NeedsMigration { .. } => {
                Some("open the session in pi once (pi --session <file>), quit, then run shake again".to_string())
            }
            B::Live { title, .. } => Some(format!(
                "quit {title} (or use /shake inside it), then run the command again; or pass --force to write all the same"
            )),
            B::MovesResumePoint { title, resume, .. } => Some(format!(
                "pass --force to write there all the same; to go back to {resume} afterwards, move {title} back to it (pi: /tree) before your next message"
            )),
            B::KeepsAppending { .. } | B::KeptAppending { .. } => {
                Some("quit pi, or use the pi extension (/shake), then run the command again".to_string())
            }
            _ => None,
        };
        user(&e, hint.as_deref())
    }
}

impl From<LeafError> for Error {
    fn from(e: LeafError) -> Error {
        match e {
            LeafError::Rev(e) => e.into(),
            LeafError::Host(e) => e.into(),
            LeafError::Record(e) => e.into(),
        }
    }
}

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
            HistoryError::Rev(e) => return e.into(),
            HistoryError::Store(e) => return e.into(),
            HistoryError::Host(e) => return e.into(),
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

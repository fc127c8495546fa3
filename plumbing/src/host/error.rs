//! The seam's own error: what a host's operations (load, view, write, export, its own rules,
//! where it keeps sessions) and the registry return (issue 34.4). A host says what it refuses in
//! its own words, naming the file and the line where there is one, with what the user can do;
//! a failure of the system keeps the system's error. The CLI's exit code and the hint lines are
//! chosen from it at the command boundary (`command_error.rs`), as every engine error's are.

use crate::durable::FileError;
use crate::host::file::TooManyLines;

/// A host's error, or the registry's.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The host refuses the file or the request (a file it does not read, a request it does not
    /// take): the input's to change. The message is the host's words, naming the file (and the
    /// line); the hints say what to do instead.
    #[error("{message}")]
    Refused {
        /// One line saying what is refused, naming the file and line where there is one.
        message: String,
        /// What the user can do about it, one line each.
        hints: Vec<String>,
        /// The host's own error this reports (a parse error, a fork's refusal), if any.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// The system refused a read the host made itself (a file it rereads until it holds
    /// still): the host's error, naming the file and keeping the system's error as its
    /// source, and the system error's kind (a missing file is the user's, the rest the system's).
    #[error("{source}")]
    Io {
        /// What the system said, as the host's error naming the file.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
        /// The kind of the system's error.
        kind: std::io::ErrorKind,
    },
    /// The system refused a step on a file the host writes (a fork, a saved original).
    #[error(transparent)]
    File(#[from] FileError),
    /// The output refused what the host wrote to it (`shake project --json`: a closed pipe, a
    /// full disk).
    #[error(transparent)]
    Write(#[from] std::io::Error),
}

/// What a host's operation returns.
pub type Result<T, E = HostError> = std::result::Result<T, E>;

impl HostError {
    /// Returns the host's refusal in these words.
    pub fn refused(message: impl Into<String>) -> HostError {
        HostError::Refused { message: message.into(), hints: Vec::new(), source: None }
    }

    /// Adds a hint line to a refusal (other errors take none: the boundary words them).
    pub fn hint(mut self, hint: impl Into<String>) -> HostError {
        if let HostError::Refused { hints, .. } = &mut self {
            hints.push(hint.into());
        }
        self
    }

    /// Keeps `source` as the error a refusal reports.
    pub fn caused_by(mut self, error: impl std::error::Error + Send + Sync + 'static) -> HostError {
        if let HostError::Refused { source, .. } = &mut self {
            *source = Some(Box::new(error));
        }
        self
    }

    /// Returns a host's own error `e` as a refusal, its whole source chain as the message.
    pub fn chained(e: impl std::error::Error + Send + Sync + 'static) -> HostError {
        HostError::refused(crate::output::chain(&e)).caused_by(e)
    }
}

impl From<TooManyLines> for HostError {
    fn from(e: TooManyLines) -> HostError {
        HostError::refused(e.to_string()).caused_by(e)
    }
}

//! The command boundary, as jj's `cli/src/command_error.rs` is: how a command says each engine
//! error, its kind (the exit code) and its hints. The engine's operations return their own typed
//! errors; a command's `?` turns them into the CLI's [`Error`] through the `From` impls here,
//! and nowhere else is an exit code or a hint chosen for them. Nothing imports this file (a
//! trait impl needs no import), so the floor (`error.rs`) stays below the engine.

use crate::append::AppendError;
use crate::durable::FileError;
use crate::error::{chain, Error, ErrorKind};
use crate::fork_record::RecordError;
use crate::host::error::HostError;
use crate::host::file::TooManyLines;
use crate::remote::RemoteError;
use crate::rev::RevError;
use crate::search::SearchError;
use crate::store::import::ImportError;
use crate::store::pack::PackError;
use crate::store::refs::RefError;
use crate::store::state::StateError;
use crate::store::StoreError;
use crate::tokens::calibration::CalibrationError;

impl From<StoreError> for Error {
    fn from(e: StoreError) -> Error {
        use StoreError as S;
        match e {
            S::Pack(e) => return e.into(),
            S::Ref(e) => return e.into(),
            S::State(e) => return e.into(),
            S::File(e) => return e.into(),
            _ => {}
        }
        // The kind is the store's own word on it: damage is exit 3, the rest the user's.
        let err = match e.is_damage() {
            true => Error::corrupt(e.to_string()),
            false => Error::user(chain(&e)),
        };
        let err = match &e {
            S::Damaged { .. } => err.hint("run shake fsck; nothing is merged or collected while the damage is there"),
            S::NotMerging { .. } => {
                err.hint("run shake fsck: nothing is merged, repacked or dropped until the damage is dealt with")
            }
            S::NotCollecting { .. } => err.hint("run shake fsck: gc keeps everything until the damage is dealt with"),
            S::Rehash { .. } => err.hint(
                "run shake fsck; shake restore or a re-import rebuilds the object from a session file that has it",
            ),
            S::Ambiguous { .. } => err.hint("type more digits"),
            S::NoSession { .. } => err.hint("name the session file, or run shake import first"),
            S::AmbiguousSession { paths, .. } => {
                let paths: Vec<String> = paths.iter().map(|p| crate::output::path(p).into_owned()).collect();
                err.hint(format!("name one of the files: {}", paths.join(", ")))
            }
            _ => err,
        };
        err.caused_by(e)
    }
}

impl From<ImportError> for Error {
    fn from(e: ImportError) -> Error {
        let err = match e {
            ImportError::Pack(e) => return e.into(),
            ImportError::Store(e) => return e.into(),
            ImportError::Host(e) => return e.into(),
            ImportError::NotAFile { .. } => Error::user(e.to_string()),
            ImportError::TableUnread { .. } => Error::corrupt(e.to_string()),
            ImportError::File(ref f) => Error::os(f.source.kind(), &e),
        };
        err.caused_by(e)
    }
}

impl From<PackError> for Error {
    fn from(e: PackError) -> Error {
        let err = match &e {
            PackError::File(f) => Error::os(f.source.kind(), &e),
            _ => Error::corrupt(chain(&e)),
        };
        err.caused_by(e)
    }
}

impl From<RefError> for Error {
    fn from(e: RefError) -> Error {
        let err = match &e {
            RefError::BadName { .. } => Error::user(e.to_string()).hint("ref names look like refs/sessions/<id>"),
            RefError::BadFile { .. } => Error::corrupt(e.to_string()),
            RefError::Moved { .. } => Error::user(e.to_string()).hint("another process moved it; re-read it and retry"),
            RefError::Io(f) => Error::os(f.source.kind(), &e),
        };
        err.caused_by(e)
    }
}

impl From<StateError> for Error {
    fn from(e: StateError) -> Error {
        Error::corrupt(e.to_string()).caused_by(e)
    }
}

impl From<FileError> for Error {
    fn from(e: FileError) -> Error {
        use std::io::ErrorKind as K;
        // The two a user meets most, in words rather than the system's `(os error N)`.
        let (message, hint) = match e.source.kind() {
            K::AlreadyExists if e.doing == "create" => (
                format!("{} exists; not overwritten", crate::output::path(&e.path)),
                Some("name another file, or move this one away"),
            ),
            K::StorageFull => (
                chain(&e),
                Some("the disk is full: free some space and run the command again (what was there is kept)"),
            ),
            _ => return Error::os(e.source.kind(), &e).caused_by(e),
        };
        let err = Error::os(e.source.kind(), &e);
        let err = Error { message, ..err }.caused_by(e);
        match hint {
            Some(hint) => err.hint(hint),
            None => err,
        }
    }
}

impl From<AppendError> for Error {
    fn from(e: AppendError) -> Error {
        let hints: &[&str] = match &e {
            AppendError::Busy { .. } => &["wait for it to finish, then run the command again"],
            AppendError::Changed { .. } => {
                &["if pi is running on this session, quit it first; then run the command again"]
            }
            AppendError::PartialLine { .. } => &[
                "another program may be writing the file right now; try again when it is done",
                "if nothing is writing it, open the session in pi once: pi terminates the line",
            ],
            AppendError::Vanished { .. } => {
                &["check the file with shake status; shake restore can bring back any imported version"]
            }
            AppendError::Io(_) => &[],
        };
        let err = match &e {
            AppendError::Io(f) => Error::os(f.source.kind(), &e),
            _ => Error::user(chain(&e)),
        };
        hints.iter().fold(err.caused_by(e), |err, h| err.hint(*h))
    }
}

impl From<TooManyLines> for Error {
    fn from(e: TooManyLines) -> Error {
        Error::user(e.to_string()).caused_by(e)
    }
}

impl From<RecordError> for Error {
    fn from(e: RecordError) -> Error {
        let err = match e {
            RecordError::Store(e) => return e.into(),
            RecordError::Damaged { .. } => Error::corrupt(chain(&e)),
            RecordError::Encode(_) => Error::user(chain(&e)),
        };
        err.caused_by(e)
    }
}

impl From<HostError> for Error {
    fn from(e: HostError) -> Error {
        match e {
            HostError::Refused { message, hints, source } => {
                hints.into_iter().fold(Error { source, ..Error::user(message) }, Error::hint)
            }
            HostError::Io { source, kind } => {
                let err = Error::os(kind, &*source);
                Error { source: Some(source), ..err }
            }
            HostError::File(e) => e.into(),
            HostError::Write(e) => e.into(),
        }
    }
}

impl From<RevError> for Error {
    fn from(e: RevError) -> Error {
        use RevError as R;
        match e {
            R::Host(e) => e.into(),
            R::File(e) => e.into(),
            R::Store(e) => e.into(),
            R::Record(e) => e.into(),
            R::NoDefault { source, others } => {
                Error::from(source).hint(format!("no {} session here either", others.join(" or ")))
            }
            e => {
                let err = Error::user(e.to_string());
                match rev_hint(&e) {
                    Some(hint) => err.hint(hint),
                    None => err,
                }
                .caused_by(e)
            }
        }
    }
}

/// What the user can do about a revision that names no session or no leaf.
fn rev_hint(e: &RevError) -> Option<String> {
    use RevError as R;
    Some(match e {
        R::Folder { .. } => "name a .jsonl file in it, or a session id (`shake sessions` lists them)".to_string(),
        R::NoSession { id, entry_here: true } => {
            format!("{id} is an entry of the current session here: name it `:{id}`")
        }
        R::NoSession { entry_here: false, .. } => {
            "name a session file, or a session id: `shake import` then `shake sessions` lists every host's sessions"
                .to_string()
        }
        R::AmbiguousSession { files, whole: true, .. } => {
            format!("{} have that id: name one by its path", if files.len() == 2 { "both" } else { "all" })
        }
        R::AmbiguousSession { whole: false, .. } => "type more of the id, or name the file by its path".to_string(),
        R::Cycle { .. } => "repair the parentId of one entry on the loop by hand".to_string(),
        R::NoEntry { path, .. } => format!(
            "`shake ls-entries {}` lists the entries to its leaf, `shake ls-leaves` its leaves",
            crate::output::shell_word(&path.to_string_lossy())
        ),
        R::AmbiguousEntry { .. } => "type more of the id".to_string(),
        _ => return None,
    })
}

impl From<CalibrationError> for Error {
    fn from(e: CalibrationError) -> Error {
        match e {
            CalibrationError::Host(e) => e.into(),
            CalibrationError::NoRatio { .. } => Error::user(e.to_string())
                .hint("run `shake tokens` on a longer session of the same model first, or pick another --tokenizer")
                .caused_by(e),
        }
    }
}

impl From<SearchError> for Error {
    fn from(e: SearchError) -> Error {
        let hint = match e {
            SearchError::Store(e) => return e.into(),
            SearchError::NotAllowable { .. } => Some("`shake scan --list-rules` lists the rule ids"),
            SearchError::Secrets { .. } => Some(
                "allow a kind with --allow KIND, or one secret with --allow fp:… (`shake scan` prints each one's), or list them under [scan] allow in .shake.toml",
            ),
            _ => None,
        };
        let err = Error::user(e.to_string());
        match hint {
            Some(hint) => err.hint(hint),
            None => err,
        }
        .caused_by(e)
    }
}

impl From<RemoteError> for Error {
    fn from(e: RemoteError) -> Error {
        use RemoteError as R;
        match e {
            R::Store(e) => e.into(),
            R::Pack(e) => e.into(),
            R::File(e) => e.into(),
            e => {
                let (kind, hint) = remote_words(&e);
                let err = Error { kind, ..Error::user(e.to_string()) };
                match hint {
                    Some(hint) => err.hint(hint),
                    None => err,
                }
                .caused_by(e)
            }
        }
    }
}

/// A remote's error's kind (the remote's damage and a damaged remotes or machine file are
/// corruption, a service's failure the system's) and what the user can do about it.
fn remote_words(e: &RemoteError) -> (ErrorKind, Option<String>) {
    use ErrorKind::{Corrupt, Io, User};
    use RemoteError as R;
    let (kind, hint) = match e {
        R::Runtime(io) | R::TempDir(io) => (ErrorKind::of_io(io.kind()), None),
        R::Service { .. } => (Io, None),
        R::BadRemotes { .. } | R::RemotesVersion { .. } | R::BadMachine { .. } | R::SessionUnread { .. } => {
            (Corrupt, None)
        }
        R::IndexMissing { .. } | R::PackMissing { .. } => (Corrupt, Some("run shake fsck --remote")),
        R::IndexDamaged { .. } | R::PackDamaged { .. } => {
            (Corrupt, Some("run shake fsck --remote; the machine that pushed it can push again"))
        }
        R::ManifestDamaged { .. } => {
            (Corrupt, Some("run shake fsck --remote; the machine that wrote it can push again"))
        }
        R::ObjectMismatch { .. } => (Corrupt, Some("run shake fsck")),
        R::Exists { name } => {
            return (User, Some(format!("`shake remote remove {name}` first, or choose another name")))
        }
        R::NoRemote => (User, Some("add one: shake remote add NAME URL (docs/remotes.md)")),
        R::Unknown { .. } => (User, Some("`shake remote list` lists them")),
        R::Scheme { .. } => (
            User,
            Some("use s3://BUCKET/PREFIX, gs://BUCKET/PREFIX, az://CONTAINER/PREFIX, file:///PATH or a folder path"),
        ),
        R::NotWritable { .. } => (User, Some("use s3://, gs://, az://, file:// or a folder path")),
        R::ManifestVersion { .. } => (User, Some("upgrade shake")),
        R::BadName { .. }
        | R::EmptyUrl
        | R::Several { .. }
        | R::NoMirror { .. }
        | R::Encode { .. }
        | R::Url { .. }
        | R::Store(_)
        | R::Pack(_)
        | R::File(_) => (User, None),
    };
    (kind, hint.map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The store says which of its errors are damage ([`StoreError::is_damage`], what a reader
    /// asks before it takes a failure for "not there") and the boundary agrees: damage is exit 3,
    /// the rest is not.
    #[test]
    fn the_store_says_what_is_damage_and_the_boundary_agrees() {
        let path = std::path::PathBuf::from("/store/x");
        let refused = || FileError { path: path.clone(), doing: "read", source: std::io::Error::other("no") };
        let cases = [
            (StoreError::Damaged { what: "x".into() }, true),
            (StoreError::StateUnreadable { path: path.clone() }, true),
            (StoreError::Ref(RefError::BadFile { path: path.clone() }), true),
            (StoreError::Pack(PackError::Corrupt { path: path.clone(), why: "x".into() }), true),
            (StoreError::Pack(PackError::File(refused())), false),
            (StoreError::Ref(RefError::BadName { name: "x".into(), why: "y" }), false),
            (StoreError::File(refused()), false),
            (StoreError::NoSession { prefix: "x".into() }, false),
            (StoreError::Ambiguous { text: "ab".into(), count: 2 }, false),
            (StoreError::NotUtf8 { path: path.clone() }, false),
        ];
        for (e, damage) in cases {
            let said = format!("{e:?}");
            assert_eq!(e.is_damage(), damage, "{said}");
            assert_eq!(Error::from(e).kind == ErrorKind::Corrupt, damage, "{said}");
        }
    }

    /// A host's error becomes the CLI's at the boundary with the kind and hints it had when the
    /// hosts built the CLI's error themselves: a refusal is the user's (exit 1) with its hints
    /// and source, a read the system refused keeps the system's kind, a closed output is a
    /// broken pipe.
    #[test]
    fn a_hosts_error_keeps_its_exit_code_and_hints_at_the_boundary() {
        let parse = std::io::Error::other("bad line");
        let e = Error::from(HostError::refused("/s.jsonl:3: refused").hint("do this").caused_by(parse));
        assert_eq!(
            (e.kind.exit_code(), e.message.as_str(), e.hints.as_slice()),
            (1, "/s.jsonl:3: refused", &["do this".to_string()][..])
        );
        assert!(std::error::Error::source(&e).is_some_and(|s| s.to_string() == "bad line"));
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let e = Error::from(HostError::Io { kind: denied.kind(), source: Box::new(denied) });
        assert_eq!(e.kind.exit_code(), 4);
        let gone = std::io::Error::from(std::io::ErrorKind::NotFound);
        assert_eq!(Error::from(HostError::Io { kind: gone.kind(), source: Box::new(gone) }).kind.exit_code(), 1);
        let pipe = Error::from(HostError::from(std::io::Error::from(std::io::ErrorKind::BrokenPipe)));
        assert!(pipe.is_broken_pipe());
    }
}

//! The search's own error (issue 34.4): a pattern or a rule that does not compile, an allow
//! list naming nothing, the secrets `push` refuses to send, the store's failure reading a
//! session. The CLI's exit code and hints are the command boundary's (`command_error.rs`).

use super::secrets::{told, Finding};
use crate::store::StoreError;

/// Why a search, a scan or its rules failed.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// `shake grep`'s pattern is not a regular expression.
    #[error("not a pattern: {pattern:?}: {source}")]
    NotAPattern {
        /// The pattern given.
        pattern: String,
        /// Why.
        #[source]
        source: grep_regex::Error,
    },
    /// A rule's allow list names a target gitleaks does not have.
    #[error("{what}: unknown regexTarget {target:?}")]
    RegexTarget {
        /// The rules file and rule.
        what: String,
        /// The target named.
        target: String,
    },
    /// A rule's regex does not compile.
    #[error("{what}: rule regex does not compile: {source}")]
    RuleRegex {
        /// The rules file and rule.
        what: String,
        /// Why.
        #[source]
        source: regex::Error,
    },
    /// A rules file is not gitleaks' TOML.
    #[error("{name}: {source}")]
    RulesFile {
        /// The rules file's name.
        name: String,
        /// Why.
        #[source]
        source: toml::de::Error,
    },
    /// The rules' keywords do not make a searcher.
    #[error("the secret rules' keywords: {0}")]
    Keywords(#[source] aho_corasick::BuildError),
    /// `--allow` names neither a rule nor a fingerprint (a typo would allow nothing, silently).
    #[error("--allow {name:?}: no secret rule has that id, nor is it a fp:<12 hex> fingerprint")]
    NotAllowable {
        /// The name given.
        name: String,
    },
    /// Secrets found in what would leave this machine (`push` refuses to send them).
    #[error("{}", told(findings))]
    Secrets {
        /// Every finding, in the scan's order.
        findings: Vec<Finding>,
    },
    /// The store could not give a session's bytes.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a search returns.
pub type Result<T, E = SearchError> = std::result::Result<T, E>;

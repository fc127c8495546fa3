//! What a host does by its own rules, offered as capabilities ([`super::Host::own_meter`],
//! [`super::Host::history`]) the engine asks for instead of sniffing a format: a host that
//! rewrites its files itself (oh-my-pi's `/shake`) meters what its own rules would free, and
//! tells what each of its rewrites changed, entry by entry, counted as the host counts.

use std::path::Path;

use super::error::Result;
use super::SessionFile;
use crate::Context;

/// A host's own meter: what the host's own rules would free now (oh-my-pi's `/shake`), printed
/// by `shake meter` in place of shake's fold plan, which such a host never takes.
pub trait OwnMeter: Sync {
    /// The host's rules a `--profile` picks (`None`: none given), or the refusal of a profile,
    /// or of a leaf (`leaf`: one was named), that the host's rules do not take.
    fn rules(&self, profile: Option<&str>, leaf: bool) -> Result<Rules>;

    /// Reads the file at `path` and measures it by `rules`, with the newest turn's facts that
    /// price the figure; `seen` is given the file as read (the engine imports those bytes: the
    /// version before the host rewrites it is kept), on the calling thread, while the host's
    /// count may run on others (the two share nothing but the bytes).
    fn measure(
        &self,
        ctx: &Context,
        path: &Path,
        rules: &Rules,
        seen: &mut dyn FnMut(&SessionFile),
    ) -> Result<OwnFigures>;
}

/// The rules an [`OwnMeter`] measures by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rules {
    /// Their name, as the reading prints it (`omp`, `omp-auto`).
    pub name: &'static str,
    /// What else decides the figures (an environment setting of the host), for the memo's key.
    pub key: String,
}

/// What one reading of a host's own meter shows.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OwnFigures {
    /// Tokens the host's rules would free now.
    pub tokens: u64,
    /// Tool results they would take.
    pub tool_results: usize,
    /// Blocks they would take.
    pub blocks: usize,
    /// The count's name (the tokenizer, as the host counts for the session's model).
    pub tokenizer: String,
    /// The count is the host's own, exactly.
    pub exact: bool,
    /// The session's model, when the file names one.
    pub model: Option<String>,
    /// The leaf the rules take.
    pub leaf_id: Option<String>,
    /// Tokens from the first entry the rules would change to the end: what the provider's
    /// cache writes again after (the priced meter's suffix).
    pub suffix: u64,
    /// The newest turn's facts, read on the same pass (the priced meter reads no second copy).
    pub turn: super::turn::LastTurn,
}

/// What a host's rewrites of its own files changed ([`super::Host::history`]).
pub trait History: Sync {
    /// Compares two versions of one file (each named for errors: `version 3`), counting as the
    /// host counts for the session's model.
    fn compare(&self, ctx: &Context, old: (&str, &SessionFile), new: (&str, &SessionFile)) -> Result<Compared>;
}

/// Two versions compared ([`History::compare`]).
#[derive(Clone, Debug)]
pub struct Compared {
    /// What changed.
    pub rewrite: Rewrite,
    /// The count's name.
    pub tokenizer: String,
    /// The count is the host's own, exactly.
    pub exact: bool,
}

/// How one entry differs between two versions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeKind {
    /// Replaced by the host's own fold (oh-my-pi's shake or pruning): a tool result newly
    /// stamped `prunedAt`, or text holding a new `[shaken ~` placeholder.
    Shaken,
    /// Otherwise rewritten.
    Edited,
    /// Only in the newer version.
    Added,
    /// Only in the older version.
    Removed,
}

impl ChangeKind {
    /// The name printed and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Shaken => "shaken",
            ChangeKind::Edited => "edited",
            ChangeKind::Added => "added",
            ChangeKind::Removed => "removed",
        }
    }
}

/// One entry that differs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// The entry id.
    pub id: String,
    /// What happened to it.
    pub kind: ChangeKind,
    /// 1-based line in the older version (none when added).
    pub old_line: Option<usize>,
    /// 1-based line in the newer version (none when removed).
    pub new_line: Option<usize>,
    /// The host's count of the entry before.
    pub tokens_before: u64,
    /// The host's count of the entry after.
    pub tokens_after: u64,
    /// What the host put in (shaken entries): each new placeholder, else the text of a result
    /// newly pruned (the host's notice).
    pub placeholders: Vec<String>,
}

/// The difference between two versions of one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rewrite {
    /// The newer version is the older one plus lines (an append, not a rewrite).
    pub appended: bool,
    /// The title in the title slot changed.
    pub title_changed: bool,
    /// Every entry that differs, in the newer version's order, removed ones last.
    pub changes: Vec<Change>,
}

impl Rewrite {
    /// Tokens that left: Σ (before − after) over the entries changed in place.
    pub fn tokens_removed(&self) -> u64 {
        self.in_place().map(|c| c.tokens_before.saturating_sub(c.tokens_after)).sum()
    }

    /// Tokens that came back: Σ (after − before) over the entries changed in place (a restore
    /// of the version before a fold).
    pub fn tokens_restored(&self) -> u64 {
        self.in_place().map(|c| c.tokens_after.saturating_sub(c.tokens_before)).sum()
    }

    /// How many entries were shaken.
    pub fn shaken(&self) -> usize {
        self.changes.iter().filter(|c| c.kind == ChangeKind::Shaken).count()
    }

    fn in_place(&self) -> impl Iterator<Item = &Change> {
        self.changes.iter().filter(|c| matches!(c.kind, ChangeKind::Shaken | ChangeKind::Edited))
    }
}

//! The host seam: the one boundary between shake's engine and a coding agent's session format
//! (`docs/architecture.md`).
//!
//! A host (pi, Claude Code, oh-my-pi) is a module that implements three traits:
//! - [`Host`], stateless: which files are its own, where it keeps sessions, how a file loads into
//!   a [`Session`], how it counts tokens, what may be folded, and how a fold is written back;
//! - [`HostSession`], for one loaded file: the context the model sees at a leaf (a [`View`]),
//!   and the host's reading of single entries (log records, provider usage, timestamps);
//! - [`HostView`], for one leaf: what the model sees of each entry, in the neutral model of
//!   [`model`].
//!
//! The engine (store, regions, plan, wall, meter, audits, output) sees a host through these and
//! nothing else. This module names no host: the registry above the hosts (`crate::hosts`) lists
//! them, and each host's reading of a file or a leaf is owned here as a trait object the host
//! made ([`Session`]'s and [`View`]'s `data`).

pub mod error;
pub mod file;
pub mod kind;
pub mod model;
pub mod own;
pub mod recent;
pub mod session;
pub mod turn;
pub mod view;

use std::borrow::Cow;
use std::fmt;
use std::path::PathBuf;

use serde_json::value::RawValue;
use serde_json::Value;

use crate::Context;
use error::{HostError, Result};

pub use file::SessionFile;
pub use kind::HostKind;
pub use model::{Block, BlockKind, Content, Pieces, Role, Tool};
pub use session::{Cycle, Header, Node, Session, Stored, Warning};
pub use view::{Call, Projected, Unit, View};

/// What a host keeps of a measured view's end to read rows appended after it alone (the
/// meter's append shortcut, for a host whose rows cannot be judged one by one with
/// [`HostSession::is_plain`]): small and of a bounded size whatever the session's length, and
/// opaque to the engine: the host that made it reads its `state` back ([`Host::follow`]). Made
/// by [`View::tail`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Tail {
    /// The name of the host that made it, which alone reads it ([`HostKind::as_str`]).
    host: String,
    /// The id of the leaf the view ends at (the leaf a whole measure of the file finds; none
    /// when the file has no message to end at, as right after a compaction's boundary).
    leaf_id: Option<String>,
    /// The host's own record, in its own encoding.
    state: Vec<u8>,
}

impl Tail {
    /// A tail of `host`'s, ending at `leaf_id`, holding the host's `state`.
    pub fn new(host: HostKind, leaf_id: Option<String>, state: Vec<u8>) -> Tail {
        Tail { host: host.as_str().to_string(), leaf_id, state }
    }

    /// The name of the host that made it ([`HostKind::as_str`]).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The id of the leaf the view ends at.
    pub fn leaf_id(&self) -> Option<&str> {
        self.leaf_id.as_deref()
    }

    /// The host's own record.
    pub fn state(&self) -> &[u8] {
        &self.state
    }
}

/// Rows appended after a view's end, read by [`Host::follow`]: the whole file's context at the
/// host's leaf is the view's followed by the positions of `session`'s view (at
/// [`Session::default_leaf`]), or, when `restart`, those positions alone, provided no id in
/// `fresh` is one of the old file's (those [`View::tail`] gave).
pub struct Followed<'a> {
    /// The appended rows alone, or (`restart`) with the old rows they restart from; its view's
    /// context is the new positions, in order.
    pub session: Session<'a>,
    /// The context restarts: `session`'s view is all of it, not what follows the old one (a
    /// compaction's rows; nothing of the old context's figures carries over).
    pub restart: bool,
    /// The ids the new rows bring: each must be new to the file.
    pub fresh: Vec<String>,
    /// Ids the file holds after the new rows, old or new, that a later row must not take.
    pub known: Vec<String>,
    /// The tail after the new rows.
    pub tail: Tail,
}

/// What a host can do with a fold ([`Host::writer`]): one value the engine matches on, not
/// methods every host must answer. The words a user reads about it come from the host too.
#[derive(Clone, Copy)]
pub enum Writer {
    /// Appends lines to the session file (pi: `context_edit` entries and a log entry), through
    /// [`Session::appender`](session::Session::appender); shake's records are in the file.
    Append,
    /// Writes a new session beside the source (Claude Code), through
    /// [`Session::write_fork`](session::Session::write_fork); the source is never written, and
    /// the folds' records are kept in the store (`crate::fork_record`).
    Fork(&'static dyn Forks),
    /// Never writes: measure only (oh-my-pi).
    ReadOnly {
        /// Why, in the host's words, after the file's name (`<file>: <reason>`).
        reason: &'static str,
        /// What to do instead.
        hint: &'static str,
    },
}

impl Writer {
    /// The refusal a write to `session`'s file meets on a host that never writes; `None` on
    /// one that does.
    pub fn refusal(self, session: &Session<'_>) -> Option<HostError> {
        match self {
            Writer::ReadOnly { reason, hint } => {
                Some(HostError::refused(format!("{}: {reason}", session.file.display())).hint(hint))
            }
            Writer::Append | Writer::Fork(_) => None,
        }
    }
}

impl fmt::Debug for Writer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Writer::Append => f.write_str("Append"),
            Writer::Fork(_) => f.write_str("Fork"),
            Writer::ReadOnly { reason, .. } => write!(f, "ReadOnly({reason})"),
        }
    }
}

/// A host whose folds are new sessions written beside their source ([`Writer::Fork`]): what only
/// such a host is asked.
pub trait Forks: Sync {
    /// The command a user types to go on with the session written (Claude Code: `cd <cwd> &&
    /// claude --resume <id>`), each word quoted for a shell where it needs it.
    fn resume_command(&self, forked: &Forked) -> String;

    /// The word the host's users call one of its session files (Claude Code: `transcript`), for
    /// the messages about writing one in place.
    fn file_word(&self) -> &'static str;

    /// The session id a line carries as its own, for hosts that write the id into every row
    /// (Claude Code's top-level `sessionId`): the store keys such rows with the file's id taken
    /// out (`store::row`), so a copy of them under a new id (a fork) shares them.
    fn row_session_id(&self, text: &str) -> Option<String>;
}

/// Why a host does not take a file as its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The 1-based line that decided it (0: the whole file).
    pub line: usize,
    /// Why, in words (`not a pi session: the first JSON line is not a session header`).
    pub reason: String,
}

/// What one complete line of a session file is to the tree, as the store's import sees it
/// (it reads lines one at a time, from where the last import stopped).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TreeLine {
    /// Blank: nothing to say.
    Skip,
    /// Not part of the tree, for this reason.
    Warn(String),
    /// The session header: the session id and the format version.
    Header { id: String, version: u64 },
    /// A tree entry: its id and its parent's id (`None` at a root). A format without ids
    /// (pi v1) gives `id: None`, and the entry's parent is the entry before it.
    Entry { id: Option<String>, parent: Option<String> },
}

/// A reply the provider counted: what it says the request cost.
#[derive(Clone, Debug, PartialEq)]
pub struct Reply<'a> {
    /// The provider that answered.
    pub provider: Option<Cow<'a, str>>,
    /// The model id.
    pub model: Option<Cow<'a, str>>,
    /// The provider's context size for the request (input + cache read + cache write), when the
    /// host trusts the figure (not aborted or failed, not zero).
    pub prompt_tokens: Option<u64>,
    /// How the prompt met the provider's cache, when the host records it (the priced meter).
    pub cache: Option<CacheUse>,
}

/// How one request's prompt met the provider's prompt cache, as the host recorded it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CacheUse {
    /// Prompt tokens neither read from nor written to the cache.
    pub input: u64,
    /// Prompt tokens read from the cache.
    pub cache_read: u64,
    /// Prompt tokens written to the cache (every lifetime).
    pub cache_write: u64,
    /// Of those, written with the 1-hour lifetime (Claude Code's `ephemeral_1h_input_tokens`).
    pub cache_write_1h: u64,
    /// What the request cost, in US dollars, when the host records it (pi's `usage.cost`).
    pub cost: Option<CacheCost>,
}

/// A request's recorded cost in US dollars, by kind of prompt token.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CacheCost {
    /// For the uncached input.
    pub input: f64,
    /// For the tokens read from the cache.
    pub cache_read: f64,
    /// For the tokens written to the cache.
    pub cache_write: f64,
}

/// A branch written as a session file of its own ([`HostSession::export`]).
#[derive(Clone, Debug)]
pub struct Export<'a> {
    /// The new file's lines, each without its `\n`: an entry kept as it is borrows the
    /// source's bytes, so the branch is never copied whole ([`Export::write_to`]).
    pub lines: Vec<std::borrow::Cow<'a, [u8]>>,
    /// The new session's id.
    pub session_id: String,
    /// Entries written (the header excluded).
    pub entries: usize,
    /// Where the host would keep the new session.
    pub path: PathBuf,
    /// The file it was exported from.
    pub parent: PathBuf,
}

impl Export<'_> {
    /// Writes the new file's bytes to `out`, line by line.
    pub fn write_to(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        for line in &self.lines {
            out.write_all(line)?;
            out.write_all(b"\n")?;
        }
        Ok(())
    }
}

/// A fold written as a new session beside its source ([`Writer::Fork`],
/// [`HostSession::write_fork`]).
#[derive(Clone, Debug)]
pub struct Forked {
    /// The new session's id.
    pub session_id: String,
    /// The new session file.
    pub path: PathBuf,
    /// The directory the session belongs to (where to resume it from).
    pub cwd: Option<String>,
    /// Each folded target with the path its original was saved to.
    pub saved: Vec<(String, PathBuf)>,
    /// The same session was written before (an undo done again): nothing was written now.
    pub reused: bool,
    /// The session file itself was rewritten (`--in-place`): `path` is the source.
    pub in_place: bool,
    /// In place: bytes of rows the host appended while shake wrote, copied after its own.
    pub carried: u64,
}

/// What a fork writes ([`HostSession::write_fork`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForkWrite {
    /// A fold: each target's original is saved, then its placeholder written.
    Fold,
    /// An undo: the contents given are the originals again; nothing is saved, and the same undo
    /// of the same file writes the same session (once).
    Restore,
    /// A fold written into the session file itself (temporary file, rename), originals saved
    /// first as for [`ForkWrite::Fold`].
    FoldInPlace,
    /// An undo written into the session file itself; when `Some`, the file's first bytes after
    /// it must be the ones a fold read ([`Exact`]), else nothing is written.
    RestoreInPlace(Option<Exact>),
}

impl ForkWrite {
    /// Whether this write saves originals and writes placeholders.
    pub fn is_fold(self) -> bool {
        matches!(self, ForkWrite::Fold | ForkWrite::FoldInPlace)
    }
}

/// The bytes a fold read, as its record keeps them: their length and blake3 hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exact {
    /// How many bytes.
    pub len: u64,
    /// Their blake3 hash.
    pub hash: [u8; 32],
}

/// Makes the lines of one appended batch ([`Writer::Append`]).
pub trait Appender {
    /// Returns a fresh entry id, unique in `session` (the one the appender was made for) and in
    /// this batch.
    fn fresh_id(&mut self, session: &Session<'_>) -> String;
    /// Adds a log record line (shake's own, never sent to the model) carrying `data` (JSON of
    /// integers and strings, as serde_json writes it) to `out`, without the trailing newline.
    fn log_line(&self, out: &mut Vec<u8>, id: &str, parent: Option<&str>, record_type: &str, data: &RawValue);
    /// Adds an edit line replacing `target`'s content with `content` (raw JSON) to `out`,
    /// without the trailing newline.
    fn edit_line(&self, out: &mut Vec<u8>, id: &str, parent: Option<&str>, target: &str, content: &RawValue);
}

/// A host: the stateless half of the seam.
pub trait Host: Sync {
    /// Which host this is.
    fn kind(&self) -> HostKind;

    /// Tells whether `file` is this host's, or why not (detection asks every host in turn).
    fn accepts(&self, file: &SessionFile) -> std::result::Result<(), Refusal>;

    /// Loads a file this host accepts: the tree, the header, the host's warnings.
    fn load<'a>(&self, file: &'a SessionFile) -> Result<Session<'a>>;

    /// Reads one complete line for the store's import. `header` is the format version of the
    /// header already read (`None` before it).
    fn tree_line(&self, text: &str, header: Option<u64>) -> TreeLine;

    /// The session the host itself would open for the current directory (pi: `--continue`).
    fn default_session(&self, ctx: &Context) -> Result<PathBuf>;

    /// The folders under which the host keeps sessions (searched for a session id), the main
    /// one (what `shake import` reads by default) first.
    fn session_roots(&self, ctx: &Context) -> Vec<PathBuf>;

    /// The session id a file name carries, if the host names files after it.
    fn session_id_of_file(&self, file_name: &str) -> Option<String>;

    /// What the host does with a fold: append, fork, or nothing (and why).
    fn writer(&self) -> Writer;

    /// Tells whether this host may shrink the file whose first bytes are `head` in place (a
    /// truncating rewrite): such a file is copied, never mapped (`file`, "Mapped reads" in
    /// `docs/reliability.md`). Hosts that only append or rename a new file over keep the default.
    fn shrinks_in_place(&self, _head: &[u8]) -> bool {
        false
    }

    /// How many leading bytes of its files this host overwrites in place (same length): a
    /// mapped read copies them out of the map while it is checked.
    fn overwrites_in_place(&self) -> usize {
        0
    }

    /// Reads `appended` (the bytes appended to the file after `tail`'s view, whole lines) as
    /// rows continuing the view's context without changing it, or as rows that restart it from
    /// a few old rows the tail names (read again from `appended.path`, put with the new rows in
    /// `room`), or `None` when they may be neither (then the whole file must be measured). Only
    /// hosts whose views make a [`Tail`] ([`HostView::tail`]) read one.
    fn follow<'a>(
        &self,
        _tail: &Tail,
        _appended: &'a SessionFile,
        _room: &'a std::cell::OnceCell<SessionFile>,
    ) -> Option<Followed<'a>> {
        None
    }

    /// Parses a raw `content` value into the neutral model.
    fn parse_content<'r>(&self, raw: Option<&'r RawValue>) -> Content<'r>;

    /// Tells whether a fold may rewrite content of this shape for this role and the host take
    /// it back exactly (pi's writer turns string content of assistant and tool-result
    /// messages into blocks, so those are not).
    fn foldable_content(&self, role: Role, content: &Content<'_>) -> bool;

    /// Tells whether a fold may rewrite the arguments of the tool calls in content of this
    /// shape for this role (`--fold-tool-inputs`) and the host take them back exactly; by default
    /// where it may rewrite the content ([`Host::foldable_content`]). A host that rewrites calls
    /// alone (Claude Code splices a call's `input`) says so here.
    fn foldable_inputs(&self, role: Role, content: &Content<'_>) -> bool {
        self.foldable_content(role, content)
    }

    /// The host's own meter, when it rewrites its files by rules of its own (oh-my-pi's
    /// `/shake`): `shake meter` prints what they would free instead of shake's plan.
    fn own_meter(&self) -> Option<&'static dyn own::OwnMeter> {
        None
    }

    /// What the host's own rewrites of its files changed (`shake log`, `shake diff
    /// SESSION@N SESSION@M`), when it rewrites them.
    fn history(&self) -> Option<&'static dyn own::History> {
        None
    }

    /// The host's own token estimate, when it has one shake counts with (pi's `estimateTokens`,
    /// `--tokenizer pi`); `None`: the host's figures are counted by a real tokenizer only.
    fn estimator(&self) -> Option<&'static dyn Estimator> {
        None
    }
}

/// A host's own token estimate ([`Host::estimator`]): units per piece, tokens per message.
pub trait Estimator: Sync {
    /// The estimate for a piece of text, in the host's units (pi: UTF-16 code units).
    fn text(&self, text: &str) -> u64;

    /// The estimate for one image, in the same units.
    fn image(&self) -> u64;

    /// Turns one message's units into tokens (pi: `ceil(units / 4)`).
    fn tokens(&self, units: u64) -> u64;
}

impl fmt::Debug for dyn Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Host({})", self.kind())
    }
}

impl fmt::Debug for dyn Estimator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Estimator")
    }
}

/// One loaded session file, as its host reads it.
pub trait HostSession<'a> {
    /// The context the model sees at `leaf` (an entry index; `None` is the empty leaf).
    fn view<'s>(&'s self, session: &'s Session<'a>, leaf: Option<usize>) -> Result<View<'s, 'a>>;

    /// [`HostSession::view`] for one of many leaves of the session ([`View::shared`]): a host
    /// may keep what it reads of each entry for the session's other views; one that keeps
    /// nothing projects as `view` does.
    fn view_shared<'s>(&'s self, session: &'s Session<'a>, leaf: Option<usize>) -> Result<View<'s, 'a>> {
        self.view(session, leaf)
    }

    /// Writes the context at `leaf` as the host itself would write it, byte for byte (`shake
    /// project --json`); a host whose writer needs less than a whole view writes it without one.
    fn write_context_json(
        &self,
        session: &Session<'a>,
        leaf: Option<usize>,
        out: &mut dyn std::io::Write,
    ) -> Result<()> {
        Ok(self.view(session, leaf)?.write_json_text(out)?)
    }

    /// The entries of the root→leaf `path` the host sends the model (compaction-aware), without
    /// reading what they say (so an edit the host would choke on does not stop a listing).
    fn context(&self, path: &[usize]) -> Vec<usize>;

    /// Projects every later view for `model`, the model the next request goes to (`--model`),
    /// when what the host sends depends on it (Claude Code leaves out the thinking another
    /// model family signed); a host whose projection does not keeps the default.
    fn choose_model(&mut self, _model: &str) {}

    /// The host's leaf on load (pi: the last entry in file order; Claude Code: the last
    /// non-sidechain user or assistant row its loader starts from).
    fn default_leaf(&self, session: &Session<'a>) -> Option<usize> {
        session.entries.len().checked_sub(1)
    }

    /// The format version, when the format has one.
    fn version(&self) -> Option<u64> {
        None
    }

    /// Tells whether the host would migrate (rewrite) this file when it opens it.
    fn needs_migration(&self) -> bool {
        false
    }

    /// The `data` of entry `index` when it is a log record of type `record_type` (pi: a
    /// `custom` entry with that `customType`); none in a file shake never writes records into.
    fn record(&self, _index: usize, _record_type: &str) -> Option<&'a RawValue> {
        None
    }

    /// The entry's timestamp as written.
    fn timestamp(&self, index: usize) -> Option<Cow<'a, str>>;

    /// A foldable entry's own content, as written.
    fn own_content(&self, index: usize) -> Option<&'a RawValue>;

    /// Tells whether entry `index` is an edit (pi: a `context_edit`); none in a format without.
    fn is_edit(&self, _index: usize) -> bool {
        false
    }

    /// The raw payload of an edit entry, as written (pi: its `replacement`).
    fn edit_raw(&self, _index: usize) -> Option<&'a RawValue> {
        None
    }

    /// The reply entry `index` is, when it is one the provider counted.
    fn reply(&self, index: usize) -> Option<Reply<'a>>;

    /// The label of what entry `index` gives the model, as `show` prints it (a role name).
    fn role_label(&self, index: usize) -> String;

    /// The neutral role of what entry `index` gives the model, read from the entry alone (no
    /// view): what `shake grep --role` keeps. `None` by default: every line is `other`.
    fn speaker(&self, _index: usize) -> Option<Role> {
        None
    }

    /// The message role of entry `index` in the host's words, else the entry's type (how an
    /// undo log names a restored target that is not a tool result).
    fn entry_label(&self, index: usize) -> String;

    /// Tells whether entry `index` can follow a measured leaf without changing what the model
    /// saw before it (the meter's append shortcut: no edit, compaction or summary). A host
    /// that cannot tell keeps the default: no row is (the whole file is measured again).
    fn is_plain(&self, _index: usize) -> bool {
        false
    }

    /// The bytes to put before appended lines so they load alone (pi: the header line).
    fn append_prefix(&self) -> Option<&'a [u8]> {
        None
    }

    /// A writer for one appended batch ([`Writer::Append`] hosts only).
    fn appender(&self, session: &Session<'a>) -> Result<Box<dyn Appender>> {
        Err(HostError::refused(format!(
            "{}: {} does not take a fold as appended lines",
            session.file.display(),
            session.kind.title()
        )))
    }

    /// Writes a fold as a new session beside this one ([`Writer::Fork`] hosts only): each
    /// `(target, content)` replaces that target's content; the source is never written.
    fn write_fork(&self, session: &Session<'a>, _edits: &[(String, &RawValue)], _how: ForkWrite) -> Result<Forked> {
        Err(HostError::refused(format!(
            "{}: {} does not take a fold as a fork",
            session.file.display(),
            session.kind.title()
        )))
    }

    /// Writes the root→leaf path as a session file of its own, in the host's format (as the
    /// host's own fork would), for a new file in the host's session folder.
    fn export(&self, ctx: &Context, session: &Session<'a>, leaf: usize) -> Result<Export<'a>>;
}

/// One leaf's context, as its host projects it.
pub trait HostView<'s> {
    /// What the model sees of entry `index` (which must be in the context).
    fn projected(&self, index: usize) -> Projected<'s>;

    /// The content the model sees for a foldable entry (the winning edit's, else its own).
    fn content(&self, index: usize) -> Option<Content<'s>>;

    /// The target of entry `index` when it is an edit (pi: a `context_edit`).
    fn edit_target(&self, index: usize) -> Option<Cow<'s, str>>;

    /// The content an edit puts in place of its target's; `None` when it omits the target or
    /// has no content.
    fn replacement(&self, edit: usize) -> Option<&'s RawValue>;

    /// Each context entry's position ([`View::position`]).
    fn positions(&self) -> &view::Positions;

    /// Feeds the pieces the model sees of context position `pos` (entry `index`), message by
    /// message. (The view holds the context list and tells the entry: the host keeps no copy.)
    fn pieces(&self, pos: usize, index: usize, sink: &mut dyn Pieces);

    /// Feeds the pieces foldable entry `index` would give with `content` in place of its own.
    fn pieces_with(&self, index: usize, content: &Content<'_>, sink: &mut dyn Pieces);

    /// The messages context position `pos` (entry `index`) gives the model, as the host's own
    /// JSON.
    fn messages_json(&self, pos: usize, index: usize) -> Vec<Value>;

    /// The entry's own content ([`HostSession::own_content`]) when the view keeps it parsed
    /// already; `None`: ask the session.
    fn own_content(&self, _index: usize) -> Option<Option<&'s RawValue>> {
        None
    }

    /// The original content (raw JSON) of foldable entry `index` when it is a placeholder the
    /// host's fork wrote and the original is still where the placeholder says, byte for byte.
    fn original(&self, _index: usize) -> Option<Box<RawValue>> {
        None
    }

    /// The content (raw JSON) the host writes in place of the whole text of tool result
    /// `index` when a fold takes it, if the host has a placeholder of its own (Claude Code: its
    /// `<persisted-output>` form pointing at the saved original), saying `why` when the fold
    /// says why (a superseded read); `None`: shake's placeholder.
    fn own_placeholder(&self, _index: usize, _why: Option<&str>) -> Option<Box<RawValue>> {
        None
    }

    /// How the model gets back the arguments of the tool call in block `block` of entry
    /// `index` once a fold replaced them, as the placeholder says it after the size, when the
    /// host keeps them itself (Claude Code: `the input as written is saved in <path>`); `None`:
    /// shake's own way (`shake show :<entry>`).
    fn input_way_back(&self, _index: usize, _block: usize) -> Option<String> {
        None
    }

    /// What to keep to follow rows appended after this view's context ([`Tail`]), when it is
    /// at the host's own leaf and its end is one that appended rows can continue; `ids` is given
    /// every id of the file a new row must not reuse (`None`: the host has no such shortcut).
    fn tail(&self, _view: &View<'s, '_>, _ids: &mut dyn FnMut(&str)) -> Option<Tail> {
        None
    }

    /// The whole context (the view's `context` list) as the host's own JSON (`shake project`).
    fn to_json(&self, context: &[usize]) -> Value;

    /// Writes [`HostView::to_json`] as the host itself would write it, byte for byte (pi:
    /// strings with lone surrogates, which a [`Value`] cannot hold; streamed, not held).
    fn write_json_text(&self, context: &[usize], out: &mut dyn std::io::Write) -> std::io::Result<()> {
        serde_json::to_writer(out, &self.to_json(context)).map_err(std::io::Error::from)
    }
}

/// Says in a few words what a file that no host reads looks like.
pub fn looks_like(bytes: &[u8]) -> String {
    let head = &bytes[..bytes.len().min(4096)];
    let invalid = std::str::from_utf8(head).err().is_some_and(|e| e.error_len().is_some());
    if head.contains(&0) || invalid {
        return format!("the file looks like binary data ({} bytes)", bytes.len());
    }
    let text = String::from_utf8_lossy(head);
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or_default();
    let shown: String = first.chars().take(60).collect();
    let more = if first.chars().count() > 60 { "…" } else { "" };
    match serde_json::from_str::<serde::de::IgnoredAny>(first).is_ok() {
        true => format!("its first line is JSON: {shown}{more}"),
        false => format!("its first line is text, not JSON: {shown}{more}"),
    }
}

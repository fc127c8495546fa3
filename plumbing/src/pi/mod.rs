//! Everything pi-specific, behind the host seam ([`crate::host`]): the session file, its
//! entries, the tree and pi's projection, pi's token estimate, how an edit is written, where pi
//! keeps sessions, and pi's session generator (tests and benchmarks).
//!
//! Nothing outside `pi` parses pi's JSON; the engine sees pi as [`Pi`] (a [`Host`]), a loaded
//! [`Session`] (a [`HostSession`]) and a [`Projection`] (a [`crate::host::HostView`]).

pub mod entry;
pub mod estimate;
pub mod export;
pub mod generate;
pub mod ids;
pub mod message;
pub mod paths;
pub mod project;
pub mod session;
pub mod write;

use std::borrow::Cow;
use std::path::PathBuf;

use serde_json::value::RawValue;

use crate::host::error::{HostError, Result};
use crate::host::{
    self, Appender, Content, Host, HostKind, HostSession, Refusal, Reply, Role, SessionFile, TreeLine, View, Writer,
};
use crate::Context;

#[cfg(feature = "fixture-host")]
pub use entry::Entry;
pub use entry::EntryType;
#[cfg(feature = "fixture-host")]
pub use message::Message;
pub use project::{ProjectError, Projection};
#[cfg(feature = "fixture-host")]
pub use session::Header;
pub use session::{ParseError, Session};

/// The pi host (pi 1.6.0).
pub struct Pi;

/// pi's kind: `--host pi`.
pub const KIND: HostKind = HostKind::new("pi", "pi");

impl Host for Pi {
    fn kind(&self) -> HostKind {
        KIND
    }

    fn accepts(&self, file: &SessionFile) -> std::result::Result<(), Refusal> {
        session::sniff(file)
    }

    fn load<'a>(&self, file: &'a SessionFile) -> Result<host::Session<'a>> {
        Ok(session::load(file)?)
    }

    fn tree_line(&self, text: &str, header: Option<u64>) -> TreeLine {
        session::tree_line(text, header)
    }

    fn default_session(&self, ctx: &Context) -> Result<PathBuf> {
        paths::default_session(ctx)
    }

    fn session_roots(&self, ctx: &Context) -> Vec<PathBuf> {
        let mut roots = vec![paths::sessions_root(ctx)];
        roots.extend(ctx.custom_session_dir.clone());
        roots
    }

    fn session_id_of_file(&self, file_name: &str) -> Option<String> {
        // pi names files `<timestamp>_<session id>.jsonl`.
        let stem = file_name.strip_suffix(".jsonl")?;
        stem.split_once('_').map(|(_, sid)| sid.to_string())
    }

    fn writer(&self) -> Writer {
        Writer::Append
    }

    fn shrinks_in_place(&self, head: &[u8]) -> bool {
        session::rewritten_in_place(head)
    }

    fn parse_content<'r>(&self, raw: Option<&'r RawValue>) -> Content<'r> {
        message::parse_content(raw)
    }

    fn foldable_content(&self, role: Role, content: &Content<'_>) -> bool {
        match content {
            Content::Blocks(_) => true,
            // pi's writer turns string content of assistant and tool-result messages into blocks.
            Content::Text(_) => matches!(role, Role::User | Role::Custom),
            Content::Other => false,
        }
    }

    fn estimator(&self) -> Option<&'static dyn host::Estimator> {
        Some(&crate::tokens::PiRule)
    }
}

/// Entry types an append may hold for the meter's shortcut: they add messages or nothing to the
/// context, and change nothing the model saw before them.
const PLAIN: [EntryType; 6] = [
    EntryType::Message,
    EntryType::Custom,
    EntryType::Label,
    EntryType::SessionInfo,
    EntryType::ModelChange,
    EntryType::ThinkingLevelChange,
];

impl<'a> HostSession<'a> for Session<'a> {
    fn view<'s>(&'s self, session: &'s host::Session<'a>, leaf: Option<usize>) -> Result<View<'s, 'a>> {
        Ok(Projection::at(session, self, leaf)?.into_view(None))
    }

    fn view_shared<'s>(&'s self, session: &'s host::Session<'a>, leaf: Option<usize>) -> Result<View<'s, 'a>> {
        Ok(Projection::at(session, self, leaf)?.into_view(Some(self.memo())))
    }

    /// The projection writes itself; the units, calls and parsed content of a view are not
    /// needed for it (building them was ~40% of `project --json` on many small entries).
    fn write_context_json(
        &self,
        session: &host::Session<'a>,
        leaf: Option<usize>,
        out: &mut dyn std::io::Write,
    ) -> Result<()> {
        let projection = Projection::at(session, self, leaf)?;
        Ok(projection.write_json(&projection.context, out)?)
    }

    fn context(&self, path: &[usize]) -> Vec<usize> {
        project::context_entries(self, path)
    }

    fn version(&self) -> Option<u64> {
        Some(Session::version(self))
    }

    fn needs_migration(&self) -> bool {
        Session::needs_migration(self)
    }

    fn record(&self, index: usize, record_type: &str) -> Option<&'a RawValue> {
        let e = &self.entries[index];
        if e.kind != EntryType::Custom || e.custom_type().as_deref() != Some(record_type) {
            return None;
        }
        e.fields.data()
    }

    fn timestamp(&self, index: usize) -> Option<Cow<'a, str>> {
        entry::as_str(self.entries[index].fields.timestamp())
    }

    fn own_content(&self, index: usize) -> Option<&'a RawValue> {
        project::own_content(&self.entries[index])
    }

    fn is_edit(&self, index: usize) -> bool {
        self.entries[index].kind == EntryType::ContextEdit
    }

    fn edit_raw(&self, index: usize) -> Option<&'a RawValue> {
        self.entries[index].fields.replacement()
    }

    fn reply(&self, index: usize) -> Option<Reply<'a>> {
        self.entries[index].message()?.reply()
    }

    fn role_label(&self, index: usize) -> String {
        let e = &self.entries[index];
        match e.kind {
            EntryType::Message => e.role().map_or_else(|| "?".to_string(), |r| r.into_owned()),
            EntryType::CustomMessage => "custom".to_string(),
            EntryType::Compaction => "compactionSummary".to_string(),
            EntryType::BranchSummary => "branchSummary".to_string(),
            _ => e.kind_name().into_owned(),
        }
    }

    fn speaker(&self, index: usize) -> Option<Role> {
        Some(project::entry_role(&self.entries[index]))
    }

    fn entry_label(&self, index: usize) -> String {
        let e = &self.entries[index];
        e.role().map_or_else(|| e.kind_name().into_owned(), |r| r.into_owned())
    }

    fn is_plain(&self, index: usize) -> bool {
        PLAIN.contains(&self.entries[index].kind)
    }

    fn append_prefix(&self) -> Option<&'a [u8]> {
        (!Session::needs_migration(self)).then_some(self.header.as_ref()?.raw)
    }

    fn appender(&self, session: &host::Session<'a>) -> Result<Box<dyn Appender>> {
        Ok(Box::new(write::EntryWriter::new(session)))
    }

    fn export(&self, ctx: &Context, session: &host::Session<'a>, leaf: usize) -> Result<host::Export<'a>> {
        export::export(ctx, session, self, leaf)
    }
}

impl From<ParseError> for HostError {
    fn from(e: ParseError) -> HostError {
        HostError::chained(e)
    }
}

impl From<ProjectError> for HostError {
    fn from(e: ProjectError) -> HostError {
        HostError::chained(e)
    }
}

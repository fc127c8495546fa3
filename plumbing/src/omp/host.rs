//! The oh-my-pi host behind the seam (`docs/architecture.md`, `docs/omp.md`).
//!
//! OMP's files are pi's format plus a title slot and OMP's own entry types, and OMP sends the
//! model what pi's projection gives for them (no `context_edit` exists in OMP; compaction is
//! pi's), so the host reads through pi's reader with the title slot left out, after OMP's own
//! checks ([`OmpFile::parse`]: torn title slot, missing header, old versions). It never writes:
//! `appender` and `export` refuse, and the meter asks [`crate::omp::reading`] what OMP's own
//! `/shake` would free instead of running shake's fold rules.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::value::RawValue;

use super::file::{looks_like_omp, OmpFile};
use super::paths;
use crate::host::error::{HostError, Result};
use crate::host::own::{History, OwnMeter};
use crate::host::{
    self, Content, Host, HostKind, HostSession, Refusal, Reply, Role, SessionFile, TreeLine, View, Writer,
};
use crate::pi::{self, Pi};
use crate::Context;

/// OMP's entry types that pi does not have (`session-entries.ts`).
const OMP_TYPES: [&str; 9] = [
    "model_usage",
    "service_tier_change",
    "reset_boundary",
    "title_change",
    "ttsr_injection",
    "credential_pin",
    "session_init",
    "mode_change",
    "thinking_level_change",
];

/// The oh-my-pi host (OMP 18.x).
pub struct Omp;

/// oh-my-pi's kind: `--host omp`.
pub const KIND: HostKind = HostKind::new("omp", "oh-my-pi");

impl Host for Omp {
    fn kind(&self) -> HostKind {
        KIND
    }

    fn accepts(&self, file: &SessionFile) -> std::result::Result<(), Refusal> {
        // A torn title slot is still OMP's file: `load` says what is wrong with it.
        match looks_like_omp(file.raw()) {
            true => Ok(()),
            false => {
                Err(Refusal { line: 1, reason: "not an oh-my-pi session: no title slot, no OMP header field".into() })
            }
        }
    }

    fn load<'a>(&self, file: &'a SessionFile) -> Result<host::Session<'a>> {
        let title = OmpFile::check(&file.path, file.raw())?;
        let skip = usize::from(title.is_some());
        Ok(pi::session::load_as(file, &Omp, skip, &OMP_TYPES, |p| {
            Box::new(OmpSession { pruned: super::prune::rewrites(&p), pi: p })
        })?)
    }

    fn tree_line(&self, text: &str, header: Option<u64>) -> TreeLine {
        if header.is_none() && text.starts_with(r#"{"type":"title""#) {
            // The slot is OMP's to overwrite: stored as a line, never part of the tree. A torn
            // one is kept too (nothing is lost), with a warning; reading the file refuses it.
            let whole = text.len() + 1 == super::file::TITLE_SLOT_BYTES
                && serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(text).is_ok();
            return match whole {
                true => TreeLine::Skip,
                false => TreeLine::Warn("torn title slot; kept as it is, but OMP's reader would refuse it".into()),
            };
        }
        Pi.tree_line(text, header)
    }

    fn default_session(&self, ctx: &Context) -> Result<PathBuf> {
        let env = |k: &str| std::env::var_os(k);
        let home = &ctx.home;
        let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let name = paths::session_dir_name(&canonical(&ctx.cwd), &canonical(home), &canonical(&paths::temp_dir(env)));
        let dir = paths::sessions_root(env, home).join(name);
        paths::continue_choice(&dir).ok_or_else(|| {
            HostError::refused(format!("no oh-my-pi session for {} (looked in {})", ctx.cwd.display(), dir.display()))
                .hint("name a session file, or run omp here first")
        })
    }

    fn session_roots(&self, ctx: &Context) -> Vec<PathBuf> {
        vec![paths::sessions_root(|k| std::env::var_os(k), &ctx.home)]
    }

    fn session_id_of_file(&self, file_name: &str) -> Option<String> {
        // OMP names files `<timestamp>_<uuidv7>.jsonl`, as pi does.
        Pi.session_id_of_file(file_name)
    }

    fn own_meter(&self) -> Option<&'static dyn OwnMeter> {
        Some(&super::own::OmpRules)
    }

    fn history(&self) -> Option<&'static dyn History> {
        Some(&super::own::OmpRules)
    }

    fn writer(&self) -> Writer {
        Writer::ReadOnly { reason: READ_ONLY, hint: READ_ONLY_HINT }
    }

    fn overwrites_in_place(&self) -> usize {
        // The title slot, overwritten in place at any moment; everything else OMP rewrites by
        // a rename over the file.
        super::file::TITLE_SLOT_BYTES
    }

    fn parse_content<'r>(&self, raw: Option<&'r RawValue>) -> Content<'r> {
        Pi.parse_content(raw)
    }

    fn foldable_content(&self, role: Role, content: &Content<'_>) -> bool {
        Pi.foldable_content(role, content)
    }
}

/// A loaded OMP file: pi's reading of its entries, and what OMP sends for pruned results.
pub struct OmpSession<'a> {
    pi: pi::Session<'a>,
    /// Entry index → the content OMP sends for a pruned tool result ([`super::prune`]).
    pruned: HashMap<usize, Box<RawValue>>,
}

/// The error every write through an OMP session gets, naming its file.
/// Why a fold is refused ([`Writer::ReadOnly`]), after the file's name.
const READ_ONLY: &str = "an oh-my-pi session; oh-my-pi sessions are read-only: shake does not append to them";

/// What to do instead of a fold.
const READ_ONLY_HINT: &str =
    "`shake meter` shows what OMP's own /shake would free; run /shake in OMP, and `shake restore --version N` undoes it";

/// The refusal of `what` (an export) on a read-only host.
fn read_only(session: &host::Session<'_>, what: &str) -> HostError {
    let file = session.file.display();
    HostError::refused(format!(
        "{file}: an oh-my-pi session; oh-my-pi sessions are read-only: shake does not {what} them"
    ))
    .hint(READ_ONLY_HINT)
}

impl<'a> HostSession<'a> for OmpSession<'a> {
    fn view<'s>(&'s self, session: &'s host::Session<'a>, leaf: Option<usize>) -> Result<View<'s, 'a>> {
        // pi's projection, with OMP's join of each pruned result's text.
        let projection = pi::Projection::rewritten(session, &self.pi, leaf, Some(&self.pruned))?;
        Ok(projection.into_view(None))
    }

    fn view_shared<'s>(&'s self, session: &'s host::Session<'a>, leaf: Option<usize>) -> Result<View<'s, 'a>> {
        let projection = pi::Projection::rewritten(session, &self.pi, leaf, Some(&self.pruned))?;
        Ok(projection.into_view(Some(self.pi.memo())))
    }

    fn context(&self, path: &[usize]) -> Vec<usize> {
        self.pi.context(path)
    }

    fn version(&self) -> Option<u64> {
        HostSession::version(&self.pi)
    }

    fn needs_migration(&self) -> bool {
        HostSession::needs_migration(&self.pi)
    }

    fn timestamp(&self, index: usize) -> Option<Cow<'a, str>> {
        self.pi.timestamp(index)
    }

    fn own_content(&self, index: usize) -> Option<&'a RawValue> {
        self.pi.own_content(index)
    }

    fn reply(&self, index: usize) -> Option<Reply<'a>> {
        self.pi.reply(index)
    }

    fn role_label(&self, index: usize) -> String {
        self.pi.role_label(index)
    }

    fn speaker(&self, index: usize) -> Option<crate::host::Role> {
        self.pi.speaker(index)
    }

    fn entry_label(&self, index: usize) -> String {
        self.pi.entry_label(index)
    }

    fn is_plain(&self, index: usize) -> bool {
        self.pi.is_plain(index)
    }

    fn export(&self, _ctx: &Context, session: &host::Session<'a>, _leaf: usize) -> Result<host::Export<'a>> {
        Err(read_only(session, "export"))
    }
}

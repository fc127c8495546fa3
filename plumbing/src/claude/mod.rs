//! Everything Claude Code-specific: its transcripts (`~/.claude/projects/<encoded cwd>/<uuid>.jsonl`),
//! the loader that picks the conversation it resumes, and the messages it sends the model.
//!
//! Nothing outside `claude` parses Claude Code's JSON. The reference for every rule here is
//! Claude Code 2.1.328 itself, run offline in the tests (`tests/claude-oracle/`).

pub mod attachment;
mod deferred;
pub mod fork;
pub mod host;
pub mod in_place;
pub mod loader;
pub mod model;
pub mod normalize;
pub mod paths;
pub mod project;
mod system_turns;
pub mod tail;
mod toolsearch;
pub mod transcript;
mod unresumable;
mod view;
pub mod write;
mod write_back;

#[cfg(feature = "fixture-host")]
pub use loader::{load, load_at, Chain, LoadOptions};
pub use project::project;
#[cfg(feature = "fixture-host")]
pub use transcript::{Row, Transcript};

//! Everything pi-specific: the session file, its entries, the tree and pi's projection.
//!
//! A second format (Claude Code, oh-my-pi) gets a sibling module; nothing outside `pi` parses
//! pi's JSON.

pub mod entry;
pub mod file;
pub mod ids;
pub mod json;
pub mod message;
pub mod project;
pub mod session;
pub mod write;

pub use entry::Entry;
pub use file::SessionFile;
pub use message::{Block, BlockKind, Content, Message};
pub use project::{ProjectError, Projected, Projection};
pub use session::{Header, ParseError, Session, Warning};

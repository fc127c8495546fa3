//! Everything pi-specific: the session file, its entries, the tree and pi's projection.
//!
//! A second format (Claude Code, oh-my-pi) gets a sibling module; nothing outside `pi` parses
//! pi's JSON.

pub mod entry;
pub mod generate;
pub mod ids;
pub mod message;
pub mod project;
pub mod session;
pub mod write;

pub use crate::host::file::SessionFile;
pub use entry::Entry;
pub use message::{Block, BlockKind, Content, Message};
pub use project::{ProjectError, Projected, Projection};
pub use session::{Header, ParseError, Session, Warning};

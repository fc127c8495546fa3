//! Commands that need the whole command-line definition: completions, the man page, the reference.

pub mod completions;
pub mod man;

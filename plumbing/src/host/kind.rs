//! Which host a session is, by name: the one thing of the seam the floor below it
//! (`crate::context`'s `--host`) may name, so it imports nothing.

use std::fmt;

/// Which host a session is: its name as typed (`--host`) and printed, and its agent's name
/// for messages. Each host declares its own (`Host::kind`); the registry (`crate::hosts`) lists
/// them, so this type names none. Two kinds are the same host when their names are.
#[derive(Clone, Copy)]
pub struct HostKind {
    name: &'static str,
    title: &'static str,
}

impl HostKind {
    /// A host's kind: `name` as typed and printed (`pi`, `claude`), `title` its agent's name
    /// (`Claude Code`).
    pub const fn new(name: &'static str, title: &'static str) -> HostKind {
        HostKind { name, title }
    }

    /// The name as typed and printed.
    pub fn as_str(self) -> &'static str {
        self.name
    }

    /// The agent's name, for messages.
    pub fn title(self) -> &'static str {
        self.title
    }
}

impl PartialEq for HostKind {
    fn eq(&self, other: &HostKind) -> bool {
        self.name == other.name
    }
}

impl Eq for HostKind {}

impl std::hash::Hash for HostKind {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state)
    }
}

impl fmt::Debug for HostKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

impl fmt::Display for HostKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

//! Reading every stored session for a search (`shake grep`) or a scan for secrets (`shake
//! scan`, and `push` before anything leaves): each session's file rebuilt from the store, its
//! readable text ([`text`]) with a map back to the file's lines, the entries those lines are
//! (id, role, time, from the session's own host), and the sessions taken on every core, in order.

pub mod error;
pub mod grep;
pub mod secrets;
pub mod text;

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

use crate::host::{HostKind, Role, SessionFile};
use crate::store::{SessionInfo, Store};
pub use error::{Result, SearchError};

/// A session's readable text, and where each of its lines came from.
#[derive(Debug, Default)]
pub struct Readable {
    /// The text: every string value of every line ([`text::append`]), each ended by `\n`.
    pub text: Vec<u8>,
    /// For each file line that gave text: where its text starts, and the line (1-based).
    starts: Vec<(usize, u32)>,
}

impl Readable {
    /// The readable text of a session file's bytes.
    pub fn of(raw: &[u8]) -> Readable {
        let mut r = Readable { text: Vec::with_capacity(raw.len() / 2), starts: Vec::new() };
        for (n, line) in raw.split(|&b| b == b'\n').enumerate() {
            let at = r.text.len();
            if text::append(line, &mut r.text) > 0 {
                r.starts.push((at, u32::try_from(n + 1).unwrap_or(u32::MAX)));
            }
        }
        r
    }

    /// The file line (1-based) whose text holds byte `offset` of [`Readable::text`].
    pub fn line_at(&self, offset: usize) -> u32 {
        let i = self.starts.partition_point(|&(at, _)| at <= offset);
        self.starts.get(i.wrapping_sub(1)).map_or(0, |&(_, line)| line)
    }
}

/// Rebuilds a stored session's file bytes (its latest version); a damaged store is the
/// command's error as the store says it (`command_error.rs`: exit 3).
pub fn session_bytes(store: &Store, info: &SessionInfo) -> Result<Vec<u8>> {
    Ok(store.version_bytes(&info.version)?)
}

/// What a search says of who wrote an entry: the roles `--role` names, or another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum Who {
    /// The user's turn.
    User,
    /// The model's turn (its text, its thinking, its tool calls: the tool input).
    Assistant,
    /// A tool's output.
    Tool,
    /// Anything else: the header, a summary, a host's own record, a line no host reads.
    Other,
}

impl Who {
    /// The word `--json` and the text print.
    pub fn as_str(self) -> &'static str {
        match self {
            Who::User => "user",
            Who::Assistant => "assistant",
            Who::Tool => "tool",
            Who::Other => "other",
        }
    }
}

/// One entry as its host reads it: what a search prints of it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Entry {
    /// The host's id of the entry (`None`: a line that is no entry, e.g. the header).
    pub id: Option<String>,
    /// Who wrote it.
    pub who: Option<Who>,
    /// Its time as the host wrote it (ISO 8601), when it has one.
    pub timestamp: Option<String>,
}

/// A stored session read by its own host: the host's name and its entries by file line.
pub struct Entries {
    /// The host that read it (`None`: none recognised the file).
    pub host: Option<HostKind>,
    by_line: HashMap<u32, Entry>,
}

impl Entries {
    /// Reads the session `raw` (the file at `path`) with its host, keeping the entries of `lines`.
    /// A file no host reads gives entries without ids: the search still prints its lines.
    pub fn read(path: &Path, raw: Vec<u8>, lines: &[u32]) -> Entries {
        let file = SessionFile::from_bytes(path.to_path_buf(), raw);
        let Ok(session) = crate::hosts::load(&file, None) else {
            return Entries { host: None, by_line: HashMap::new() };
        };
        let wanted: std::collections::HashSet<u32> = lines.iter().copied().collect();
        let mut by_line = HashMap::new();
        for (index, node) in session.entries.iter().enumerate() {
            let line = u32::try_from(node.line()).unwrap_or(u32::MAX);
            if !wanted.contains(&line) {
                continue;
            }
            let entry = Entry {
                id: Some(node.id().to_string()),
                who: Some(session.speaker(index).map_or(Who::Other, Who::of)),
                timestamp: session.timestamp(index).map(|t| t.into_owned()),
            };
            by_line.insert(line, entry);
        }
        Entries { host: Some(session.kind), by_line }
    }

    /// The entry at a file line (a line that is no entry: no id, who `Other`).
    pub fn at(&self, line: u32) -> Entry {
        self.by_line.get(&line).cloned().unwrap_or(Entry { id: None, who: Some(Who::Other), timestamp: None })
    }
}

impl Who {
    /// What the host's neutral role is for a search.
    fn of(role: Role) -> Who {
        match role {
            Role::User => Who::User,
            Role::Assistant => Who::Assistant,
            Role::ToolResult => Who::Tool,
            _ => Who::Other,
        }
    }
}

/// Runs `work` on every item on up to `threads` threads, and hands each result to `emit` in the
/// items' order as soon as it and those before it are done. `emit` returning `false` stops the
/// work (a reader closed the pipe): items not started are not started.
pub fn each_in_order<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    work: impl Fn(&T) -> R + Sync,
    mut emit: impl FnMut(usize, R) -> bool,
) {
    let threads = threads.clamp(1, items.len().max(1));
    if threads == 1 {
        for (i, item) in items.iter().enumerate() {
            if !emit(i, work(item)) {
                return;
            }
        }
        return;
    }
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let (send, receive) = mpsc::channel::<(usize, R)>();
        for _ in 0..threads {
            let (send, next, stop, work) = (send.clone(), &next, &stop, &work);
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= items.len() || stop.load(Ordering::Relaxed) {
                    return;
                }
                if send.send((i, work(&items[i]))).is_err() {
                    return;
                }
            });
        }
        drop(send);
        // Results that came before their turn.
        let mut waiting = std::collections::BTreeMap::new();
        let mut turn = 0;
        for (i, r) in receive {
            waiting.insert(i, r);
            while let Some(r) = waiting.remove(&turn) {
                turn += 1;
                if !emit(turn - 1, r) {
                    stop.store(true, Ordering::Relaxed);
                    return;
                }
            }
        }
    });
}

/// How many threads a search takes: every core (the machine's own count).
pub fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_map_back_and_results_come_in_order() {
        let raw = b"{\"a\":\"one\"}\n{\"id\":\"x\"}\n{\"b\":\"two\\nthree\"}\n";
        let r = Readable::of(raw);
        assert_eq!(r.text, b"one\ntwo\nthree\n");
        assert_eq!(r.line_at(0), 1);
        assert_eq!(r.line_at(4), 3);
        assert_eq!(r.line_at(9), 3);
        let items: Vec<usize> = (0..50).collect();
        let mut seen = Vec::new();
        each_in_order(
            &items,
            3,
            |&i| i * 2,
            |i, r| {
                seen.push((i, r));
                i < 40
            },
        );
        assert_eq!(seen, (0..=40).map(|i| (i, i * 2)).collect::<Vec<_>>());
    }
}

//! `fsck` logic: re-hash every object, re-check every index, pack, ref and import state, and
//! check that what objects name exists, and recompute every overlay whose session is imported
//! (through a function the caller passes: overlays are the porcelain's wall), and check the BPE
//! tables' and the meter memos' checksums. Each problem is one message naming the file and, where there is one, the
//! object.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::path::Path;

use crate::host::SessionFile;

use crate::id::{Kind, ObjectId};
use crate::tokens::{bpe, TokenizerName};

use super::version::{split_node, Version};
use super::{refs, state, Pack, Result, Store};

/// What `fsck` found.
#[derive(Debug, Default)]
pub struct FsckReport {
    /// Objects checked.
    pub objects: u64,
    /// Packs checked.
    pub packs: u64,
    /// Refs checked.
    pub refs: u64,
    /// Import states checked.
    pub sessions: u64,
    /// Corruption, one message each: any makes `fsck` fail.
    pub problems: Vec<String>,
    /// Harmless leftovers (an interrupted write's pack without an index).
    pub notes: Vec<String>,
    /// Objects something names that the store lacks (a pack without its index may hold them).
    missing: HashSet<ObjectId>,
}

/// Recomputes a leaf's overlay from a session file: the leaf's node id and the overlay's
/// canonical bytes, or `None` when the file has no entry with this id; its error is the
/// caller's (the fold policy that recomputes overlays is the porcelain's), said as it displays.
pub type OverlayCheck<'a, E> = &'a dyn Fn(&SessionFile, &str) -> Result<Option<(ObjectId, Vec<u8>)>, E>;

/// Checks the store in `dir` as deeply as it can, never stopping at the first problem;
/// `overlays` recomputes overlays to compare with the stored ones.
pub fn check<E: std::fmt::Display>(dir: &Path, overlays: OverlayCheck<'_, E>) -> Result<FsckReport> {
    let mut report = FsckReport::default();
    let (packed, problems) = super::packed::Packed::check(dir)?;
    report.problems.extend(problems);
    let mut store = Store { dir: dir.to_path_buf(), packs: Vec::new(), packed };
    for idx in store.index_files()? {
        report.packs += 1;
        match Pack::open(&idx) {
            Ok(pack) => {
                report.objects += pack.len() as u64;
                report.problems.extend(pack.verify());
                store.packs.push(pack);
            }
            // A pack fsck may not read is not a finding about the store: fsck cannot answer.
            Err(e) if e.is_io() => return Err(e.into()),
            Err(e) => report.problems.push(crate::output::chain(&e)),
        }
    }
    note_ref_locks(dir, &mut report);
    check_links(&store, &mut report);
    for (name, id) in store.refs_all()? {
        report.refs += 1;
        let want = if name.starts_with("refs/overlays/") {
            Some(Kind::Overlay)
        } else if name.starts_with("refs/sessions/") {
            Some(Kind::Version)
        } else {
            None
        };
        match id {
            Err(e) => report.problems.push(crate::output::chain(&e)),
            Ok(id) => expect(&store, &id, want, &format!("{}: ref", dir.join(&name).display()), &mut report),
        }
    }
    check_states(&store, &mut report)?;
    check_overlays(&store, overlays, &mut report)?;
    check_tables(dir, &mut report);
    // Last: whether a pack without its index holds objects that something names.
    note_orphan_packs(&store, &mut report);
    super::sealed::check_memos(dir, &mut report.problems, &mut report.notes);
    Ok(report)
}

/// Checks the BPE tables the store keeps (`cache/ranks-*.bin`: counts read them unhashed) and
/// the token caches (`cache/tokens-*.bin`).
fn check_tables(dir: &Path, report: &mut FsckReport) {
    for name in TokenizerName::ALL.into_iter().filter(|n| n.is_bpe()) {
        if let Err(why) = bpe::check(dir, name) {
            let path = bpe::table_path(dir, name);
            report
                .problems
                .push(format!("{}: damaged BPE table ({why}); delete it to have it rebuilt", path.display()));
        }
        if let Err(why) = crate::tokens::cache::check(dir, name) {
            let path = crate::tokens::cache::cache_path(dir, name);
            report.problems.push(format!("{}: damaged token cache: {why}", path.display()));
        }
    }
}

/// Recomputes every overlay ref's object from an imported file of its session (the file as
/// the store holds it) and reports those that differ. Overlays of sessions not imported, or
/// of leaves no imported file holds, are noted, not checked.
fn check_overlays<E: std::fmt::Display>(
    store: &Store,
    recompute: OverlayCheck<'_, E>,
    report: &mut FsckReport,
) -> Result<()> {
    #[derive(serde::Deserialize)]
    struct Head {
        session: Option<String>,
        leaf: String,
    }
    let sessions = store.sessions()?;
    let mut files: HashMap<ObjectId, SessionFile> = HashMap::new();
    for (name, id) in store.refs_all()? {
        let (Some(node), Ok(id)) = (name.strip_prefix("refs/overlays/"), id) else { continue };
        let Ok(Some(obj)) = store.get(&id) else { continue };
        let what = store.dir().join(&name);
        let Ok(head) = serde_json::from_slice::<Head>(obj.bytes) else {
            report.problems.push(format!(
                "{}: overlay {id} is not an overlay object (want {{\"session\",\"leaf\",\"wall\"}})",
                what.display()
            ));
            continue;
        };
        // The first file that holds the leaf at the ref's node decides; a file that holds the
        // leaf elsewhere (a rewritten copy of the session) only counts when none does.
        let mut found: Option<Result<(), String>> = None;
        for s in sessions.iter().filter(|s| s.session_id.is_some() && s.session_id == head.session) {
            let file = match files.entry(s.version) {
                Entry::Occupied(o) => o.into_mut(),
                Entry::Vacant(v) => {
                    let Ok(bytes) = store.version_bytes(&s.version) else { continue };
                    v.insert(SessionFile::from_bytes(s.path.clone(), bytes))
                }
            };
            let here = match recompute(file, &head.leaf) {
                Ok(Some((n, bytes))) if n.to_hex() == node => {
                    found = Some(match bytes == obj.bytes {
                        true => Ok(()),
                        false => Err(format!("overlay {id} differs from the one recomputed from {}", s.path.display())),
                    });
                    break;
                }
                Ok(Some((n, _))) => format!("overlay {id} is for leaf {} at node {n}, not this ref's node", head.leaf),
                Ok(None) => continue,
                Err(e) => format!("cannot recompute from {}: {e}", s.path.display()),
            };
            found.get_or_insert(Err(here));
        }
        match found {
            None => report.notes.push(format!(
                "{}: not recomputed (no imported file of its session holds leaf {})",
                what.display(),
                head.leaf
            )),
            Some(Err(problem)) => report.problems.push(format!("{}: {problem}", what.display())),
            Some(Ok(())) => {}
        }
    }
    Ok(())
}

/// Checks that every version and node names objects that exist, of the right kinds.
fn check_links(store: &Store, report: &mut FsckReport) {
    for pack in store.packs() {
        for i in 0..pack.len() {
            let Ok(obj) = pack.object_at(i) else { continue };
            let id = pack.id_at(i);
            let what = format!("{}: {} {id}", pack.path.display(), obj.kind);
            match obj.kind {
                Kind::Version => {
                    let lines = Version::decode(obj.bytes, &what).and_then(|v| {
                        if let Some(parent) = v.parent {
                            expect(store, &parent, Some(Kind::Version), &what, report);
                        }
                        v.lines(store, &what)
                    });
                    match lines {
                        Err(e) => report.problems.push(format!("{what}: {}", crate::output::chain(&e))),
                        Ok(lines) => {
                            // A row puts back the version's session id: it must name one.
                            let session = Version::decode(obj.bytes, &what).ok().and_then(|v| v.session);
                            for line in &lines {
                                if expect_line(store, line, &what, report) == Some(Kind::Row) && session.is_none() {
                                    report.problems.push(format!("{what}: lists row {line} but names no session"));
                                }
                            }
                        }
                    }
                }
                Kind::Node => match split_node(obj.bytes) {
                    Some((parent, entry)) => {
                        if let Some(parent) = parent {
                            expect(store, &parent, Some(Kind::Node), &what, report);
                        }
                        expect_line(store, &entry, &what, report);
                    }
                    None => report.problems.push(format!("{what}: {} bytes, want 32 or 64", obj.bytes.len())),
                },
                // Canonical rows hold the mark (a line without it is stored as an entry).
                Kind::Row if memchr::memmem::find(obj.bytes, super::row::MARK).is_none() => {
                    report.problems.push(format!("{what}: a row without the session mark (not canonical)"))
                }
                Kind::Table if state::chunk_entries(obj.bytes).is_none() => {
                    report.problems.push(format!("{what}: not a whole node table"))
                }
                Kind::Entry | Kind::Row | Kind::Overlay | Kind::Table => {}
            }
        }
    }
}

/// Records a problem unless `id` is a session line in the store (an entry or a row); returns
/// its kind when it is one.
fn expect_line(store: &Store, id: &ObjectId, what: &str, report: &mut FsckReport) -> Option<Kind> {
    match store.kind_of(id) {
        Ok(Some(kind)) if kind.is_line() => return Some(kind),
        Ok(Some(kind)) => report.problems.push(format!("{what}: names {id}, a {kind} (want an entry or a row)")),
        Ok(None) => {
            report.missing.insert(*id);
            report.problems.push(format!("{what}: names missing object {id}"))
        }
        Err(e) => report.problems.push(format!("{what}: names {id}: {}", crate::output::chain(&e))),
    }
    None
}

/// Records a problem unless `id` is in the store (and of kind `want`, when given).
fn expect(store: &Store, id: &ObjectId, want: Option<Kind>, what: &str, report: &mut FsckReport) {
    match store.kind_of(id) {
        Ok(Some(kind)) if want.is_none_or(|k| k == kind) => {}
        Ok(Some(kind)) => {
            report.problems.push(format!("{what}: names {id}, a {kind} (want a {})", want.map_or("", Kind::name)))
        }
        Ok(None) => {
            report.missing.insert(*id);
            report.problems.push(format!("{what}: names missing object {id}"))
        }
        Err(e) => report.problems.push(format!("{what}: names {id}: {}", crate::output::chain(&e))),
    }
}

fn check_states(store: &Store, report: &mut FsckReport) -> Result<()> {
    for (path, bytes) in store.states()? {
        report.sessions += 1;
        let (head, rest) = match state::decode(&path, &bytes) {
            Err(why) => {
                report.problems.push(why.to_string());
                continue;
            }
            Ok(decoded) => decoded,
        };
        let what = format!("{}: import state of {}", path.display(), head.path);
        match state::decode_resume(&head, &rest) {
            None => report.problems.push(format!("{}: unreadable import state (resume part)", path.display())),
            // Each chunk of the node table there, a table, whole, of the entries the state says.
            Some(resume) => {
                for chunk in &resume.chunks {
                    if let Err(why) = state::chunk_bytes(store, chunk) {
                        if !store.contains(&chunk.id) {
                            report.missing.insert(chunk.id);
                        }
                        report.problems.push(format!("{what}: {why}"));
                    }
                }
            }
        }
        expect(store, &ObjectId(head.version), Some(Kind::Version), &what, report);
    }
    Ok(())
}

/// Notes `<ref>.lock` files: shake no longer writes loose refs, so each was left by an older
/// shake that died mid-update (the ref kept its old value); `shake gc` removes them.
fn note_ref_locks(dir: &Path, report: &mut FsckReport) {
    for path in refs::lock_files(dir) {
        report.notes.push(format!(
            "{}: a ref lock left by an older shake that died mid-update; the ref keeps its old value (shake gc removes the lock)",
            path.display()
        ));
    }
}

/// Tells the two kinds of pack without an index apart: one holding objects that something in the
/// store names and no other pack holds lost its index (a problem: it may be their only copy; the
/// next write rebuilds the index); any other is an interrupted write (a writer dies between
/// the pack's rename and its index's, before the refs that would name its objects): ignored,
/// safe to delete, as `docs/format.md` says.
fn note_orphan_packs(store: &Store, report: &mut FsckReport) {
    for path in store.packs_without_index() {
        match super::pack::lost_index(&path) {
            Ok(Some((ids, _))) if !ids.iter().any(|id| report.missing.contains(id)) => report.notes.push(format!(
                "{}: a complete pack without its index that holds nothing the store names: a write interrupted before its refs; ignored, safe to delete (the next write indexes it)",
                path.display()
            )),
            Ok(Some(_)) => report.problems.push(format!(
                "{}: a complete pack without its index, so its objects cannot be read; do not delete it (it may hold the only copy of objects refs name): the next write (e.g. shake import) rebuilds the index",
                path.display()
            )),
            Ok(None) => report.notes.push(format!(
                "{}: not a complete pack (no valid checksum) and no index; nothing reads it",
                path.display()
            )),
            Err(e) => report.problems.push(crate::output::chain(&e)),
        }
    }
    let Ok(read) = std::fs::read_dir(store.dir().join("packs")) else { return };
    for path in read.filter_map(|e| e.ok()).map(|e| e.path()) {
        if path.file_name().is_some_and(|n| n.to_string_lossy().starts_with(crate::durable::TMP_PREFIX)) {
            report.notes.push(format!(
                "{}: a temp file left by an interrupted write; ignored (shake gc removes it)",
                path.display()
            ));
        }
    }
}

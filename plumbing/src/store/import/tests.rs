//! The import's tests: states, appends, damaged chunks, errors.

use super::*;
use crate::id::Kind;
use crate::proof::Proof;
use crate::store::state::{self, FileState, Hashed, NodeTable, Resume, Table};
use crate::store::version;
#[cfg(feature = "cli")]
use crate::Error;

#[test]
fn path_nodes_match_what_import_stored() {
    let dir = tempfile::tempdir().unwrap();
    let text = concat!(
        "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n",
        "{\"type\":\"message\",\"id\":\"a\",\"parentId\":null}\n",
        "{\"type\":\"message\",\"id\":\"b\",\"parentId\":\"a\"}\n",
        "{\"type\":\"message\",\"id\":\"c\",\"parentId\":\"a\"}\n",
    );
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, text).unwrap();
    let mut store = Store::open_dir(&dir.path().join("store")).unwrap();
    let report = store.import_file(&path, None).unwrap();
    // 4 entries, 3 nodes, the version and the node table's chunk.
    assert_eq!((report.entries, report.new_objects), (3, 9));
    let file = crate::hosts::read(&path).unwrap();
    let session = crate::hosts::load(&file, None).unwrap();
    let nodes = path_nodes(&session, 2).unwrap();
    assert_eq!(nodes.len(), 2);
    assert!(nodes.iter().all(|n| store.read_kind(n, Kind::Node).is_ok()));
    let version = store.version(&report.version).unwrap();
    assert!(version.items.contains(&version::Item::Path { node: path_nodes(&session, 1).unwrap()[1], count: 2 }));
    assert_eq!(store.version_bytes(&report.version).unwrap(), text.as_bytes());
    assert!(store.import_file(&path, None).unwrap().unchanged);
}

/// A file proven unchanged within a second of its last write (its state's mtime 0, and
/// still 0) leaves the store as it was: no state is written again.
#[test]
fn a_racy_file_proven_unchanged_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n")
        .unwrap();
    let store_dir = dir.path().join("store");
    let mut store = Store::open_dir(&store_dir).unwrap();
    store.import_file(&path, None).unwrap();
    let packed = || std::fs::read_dir(store_dir.join("packed")).unwrap().count();
    let before = packed();
    assert!(store.import_file(&path, None).unwrap().unchanged);
    assert_eq!(packed(), before);
    // A minute later the mtime is trusted: the state is written once with it.
    let minute_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    std::fs::File::options().write(true).open(&path).unwrap().set_modified(minute_ago).unwrap();
    assert!(store.import_file(&path, None).unwrap().unchanged);
    assert_eq!(packed(), before + 1);
}

/// The import state's node of an entry is the one the path gives, and is told only while
/// the state describes the bytes read by the identity the store trusts (size and a real
/// mtime): not for a state imported moments after a write, nor once the file changed.
#[test]
fn the_node_an_import_state_tells_is_the_paths_and_only_for_the_bytes_it_describes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let text = concat!(
        "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n",
        "{\"type\":\"message\",\"id\":\"a\",\"parentId\":null}\n",
        "{\"type\":\"message\",\"id\":\"b\",\"parentId\":\"a\"}\n",
        "{\"type\":\"message\",\"id\":\"c\",\"parentId\":\"a\"}\n",
    );
    let age = |when| std::fs::File::options().write(true).open(&path).unwrap().set_modified(when).unwrap();
    let minute_ago = || std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    std::fs::write(&path, text).unwrap();
    let mut store = Store::open_dir(&dir.path().join("store")).unwrap();
    store.import_file(&path, None).unwrap();
    let file = crate::hosts::read(&path).unwrap();
    // Imported within a second of its write: the state's mtime is not trusted.
    assert_eq!(store.imported_node(&file, "b"), None);
    age(minute_ago());
    store.import_file(&path, None).unwrap();
    let file = crate::hosts::read(&path).unwrap();
    let session = crate::hosts::load(&file, None).unwrap();
    for (id, leaf) in [("b", 1), ("c", 2)] {
        assert_eq!(store.imported_node(&file, id), path_nodes(&session, leaf).unwrap().last().copied(), "{id}");
    }
    assert_eq!(store.imported_node(&file, "x"), None);
    // The file changed after it was read and imported: nothing is told.
    std::fs::write(&path, format!("{text}{{\"type\":\"message\",\"id\":\"d\",\"parentId\":\"c\"}}\n")).unwrap();
    age(minute_ago());
    assert_eq!(store.imported_node(&file, "b"), None);
}

/// The import after this process's own append reads only the last MiB of the old bytes and
/// the new ones, and gives the state a whole import would; a change of old bytes that keeps
/// the file's size and mtime is caught in that last MiB, and, like the one-`stat` check of
/// an unchanged file, not before it.
#[test]
fn the_import_after_an_own_append_trusts_what_the_append_saw() {
    use crate::append::{append, Snapshot};
    use crate::proof::BLOCK;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let header = "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n";
    let pad = "x".repeat(1000);
    let mut text = header.to_string();
    let mut parent = "null".to_string();
    // A bit over 2 MiB, so that the prefix has whole blocks before its last one.
    for i in 0..2200 {
        text.push_str(&format!("{{\"type\":\"message\",\"id\":\"e{i}\",\"parentId\":{parent},\"p\":\"{pad}\"}}\n"));
        parent = format!("\"e{i}\"");
    }
    let minute_ago = || std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    let age = |path: &Path, when| std::fs::File::options().write(true).open(path).unwrap().set_modified(when).unwrap();
    let state = |store: &Store| store.read_state(&canonical(&path).unwrap()).unwrap().unwrap().unwrap().0;
    let line = |id: &str| format!("{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":\"e2199\"}}\n");
    let own_import = |store: &mut Store, landed: &Appended, id: &str| {
        let mut batch = store.batch().unwrap();
        let bytes = Bytes::from(line(id).into_bytes());
        let own = OwnAppend { append: landed, bytes: &bytes, entries: &[(id, Some("e2199"))] };
        let report = batch.import_appended(&path, None, &own).unwrap();
        batch.commit().unwrap();
        report
    };

    // Appended after an unchanged file: the state a whole import gives, the node chained.
    std::fs::write(&path, &text).unwrap();
    age(&path, minute_ago());
    let mut store = Store::open_dir(&dir.path().join("store")).unwrap();
    store.import_file(&path, None).unwrap();
    let landed = append(&path, &Snapshot::of(text.as_bytes()), line("n1").as_bytes()).unwrap();
    let report = own_import(&mut store, &landed, "n1");
    let whole = std::fs::read(&path).unwrap();
    assert_eq!((report.rewritten, report.bytes), (false, line("n1").len() as u64));
    assert_eq!(store.version_bytes(&report.version).unwrap(), whole);
    let mut fresh = Store::open_dir(&dir.path().join("fresh")).unwrap();
    let from_scratch = fresh.import_file(&path, None).unwrap();
    assert_eq!(report.last_entry, from_scratch.last_entry);
    let (got, want) = (state(&store), state(&fresh));
    assert_eq!((&got.prefix, &got.file, got.committed), (&want.prefix, &want.file, want.committed));
    assert_eq!(got.prefix, Hashed::Proof(Proof::of(&whole)));

    // Old bytes changed in place, size and mtime as the state has them: caught in the last
    // MiB (a new version from the first byte), trusted before it (the prefix kept).
    for (at, caught) in [(whole.len() - 100, true), (BLOCK as usize / 2, false)] {
        let text = std::fs::read(&path).unwrap();
        age(&path, minute_ago());
        store.import_file(&path, None).unwrap();
        let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
        let mut changed = text.clone();
        changed[at] = b'y';
        std::fs::write(&path, &changed).unwrap();
        age(&path, mtime);
        let landed = append(&path, &Snapshot::of(&changed), line(&format!("n{at}")).as_bytes()).unwrap();
        assert_eq!(own_import(&mut store, &landed, &format!("n{at}")).rewritten, caught, "a change at byte {at}");
    }
}

/// An own append to a file whose state is racy (mtime 0) trusts the old bytes when the
/// command proved them by their content (the import of its whole read) at the very stamp the
/// append found: a change before the last MiB that keeps the stamp is then not seen, as
/// after a state with a real mtime; without that proof the old bytes are proven again. The
/// proof is the read's, carried by the append: another read of the same file, not imported,
/// vouches for nothing, though this process proved the very same bytes.
#[test]
fn the_import_after_an_own_append_trusts_a_racy_state_the_commands_read_proved() {
    use crate::append::{append, Snapshot};
    use crate::proof::BLOCK;
    let dir = tempfile::tempdir().unwrap();
    let header = "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n";
    let mut text = header.to_string();
    let mut parent = "null".to_string();
    for i in 0..2200 {
        let pad = "x".repeat(1000);
        text.push_str(&format!("{{\"type\":\"message\",\"id\":\"e{i}\",\"parentId\":{parent},\"p\":\"{pad}\"}}\n"));
        parent = format!("\"e{i}\"");
    }
    let line = "{\"type\":\"message\",\"id\":\"n\",\"parentId\":\"e2199\"}\n";
    // A minute ahead: every import sees a write moments ago, so the state stays racy.
    let ahead = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
    for proved in [true, false] {
        let path = dir.path().join(format!("s-{proved}.jsonl"));
        let set = |bytes: &[u8]| {
            std::fs::write(&path, bytes).unwrap();
            std::fs::File::options().write(true).open(&path).unwrap().set_modified(ahead).unwrap();
        };
        set(text.as_bytes());
        let mut store = Store::open_dir(&dir.path().join(format!("store-{proved}"))).unwrap();
        store.import_file(&path, None).unwrap();
        let key = canonical(&path).unwrap();
        assert_eq!(store.read_state(&key).unwrap().unwrap().unwrap().0.mtime_ns, 0);
        // The command's read; imported, its bytes are proven in memory, the state unchanged.
        let file = crate::hosts::read(&path).unwrap();
        if proved {
            assert!(store.import_read(&file, None).unwrap().unchanged);
        }
        let mut changed = text.clone().into_bytes();
        changed[BLOCK as usize / 2] = b'y';
        set(&changed);
        let landed = append(&path, &Snapshot::of_file(&file), line.as_bytes()).unwrap();
        assert_eq!(landed.proven.is_some(), proved);
        let bytes = Bytes::from(line.as_bytes().to_vec());
        let own = OwnAppend { append: &landed, bytes: &bytes, entries: &[("n", Some("e2199"))] };
        let mut batch = store.batch().unwrap();
        let report = batch.import_appended(&path, None, &own).unwrap();
        batch.commit().unwrap();
        assert_eq!(report.rewritten, !proved, "proved by this process: {proved}");
    }
    // Two reads of one file, the first imported: only its append carries the proof.
    let path = dir.path().join("s-two-reads.jsonl");
    std::fs::write(&path, &text).unwrap();
    std::fs::File::options().write(true).open(&path).unwrap().set_modified(ahead).unwrap();
    let mut store = Store::open_dir(&dir.path().join("store-two-reads")).unwrap();
    store.import_file(&path, None).unwrap();
    let (proven, other) = (crate::hosts::read(&path).unwrap(), crate::hosts::read(&path).unwrap());
    assert!(store.import_read(&proven, None).unwrap().unchanged);
    assert!(proven.proven().is_some() && other.proven().is_none());
    let landed = append(&path, &Snapshot::of_file(&other), line.as_bytes()).unwrap();
    assert_eq!(landed.proven, None);
}

/// After an own append to a file whose state could not trust its mtime (imported within a
/// second of a write), the old bytes are proven whole, and the appended lines, when they
/// are exactly the bytes written, still take the writer's tree (a parent the writer names
/// is believed, not parsed again); any other bytes after the old ones are parsed.
#[test]
fn the_import_after_an_own_append_to_a_racy_state_takes_the_writers_tree_of_its_own_bytes() {
    use crate::append::{append, Snapshot};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let text = concat!(
        "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n",
        "{\"type\":\"message\",\"id\":\"a\",\"parentId\":null}\n",
        "{\"type\":\"message\",\"id\":\"b\",\"parentId\":\"a\"}\n",
    );
    let line = |id: &str| format!("{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":\"b\"}}\n");
    let node_of = |store: &Store, id: &str| {
        let state = store.read_state(&canonical(&path).unwrap()).unwrap().unwrap().unwrap();
        let resume = state::decode_resume(&state.0, &state.1).unwrap();
        let node = Table::of(store, &resume).iter_back().find(|(i, _)| *i == id).map(|(_, n)| n);
        node
    };
    std::fs::write(&path, text).unwrap();
    let mut store = Store::open_dir(&dir.path().join("store")).unwrap();
    store.import_file(&path, None).unwrap();
    // The parent of "b" as the writer says it (a lie, to tell whose tree the import took).
    let lie = |store: &mut Store, written: &[u8], said: &str| {
        let landed = append(&path, &Snapshot::of(&std::fs::read(&path).unwrap()), written).unwrap();
        assert_eq!(store.read_state(&canonical(&path).unwrap()).unwrap().unwrap().unwrap().0.mtime_ns, 0);
        let bytes = Bytes::from(line(said).into_bytes());
        let own = OwnAppend { append: &landed, bytes: &bytes, entries: &[(said, Some("a"))] };
        let mut batch = store.batch().unwrap();
        let report = batch.import_appended(&path, None, &own).unwrap();
        batch.commit().unwrap();
        assert!(!report.rewritten);
    };
    let (a, b) = (node_of(&store, "a").unwrap(), node_of(&store, "b").unwrap());
    let node = |parent: &ObjectId, written: &str| {
        ObjectId::node(Some(parent), &ObjectId::hash(Kind::Entry, written.trim_end().as_bytes()))
    };
    // Exactly the bytes written: the writer's parent ("a"), though the line names "b".
    lie(&mut store, line("c").as_bytes(), "c");
    assert_eq!(node_of(&store, "c"), Some(node(&a, &line("c"))));
    // Other bytes than the batch's: parsed, the line's own parent.
    lie(&mut store, line("d").as_bytes(), "x");
    assert_eq!(node_of(&store, "d"), Some(node(&b, &line("d"))));
}

/// A chain of `n` entries `e0`… after a header, each the child of the one before.
fn chain(n: usize) -> String {
    let mut text = "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n".to_string();
    for i in 0..n {
        let parent = if i == 0 { "null".to_string() } else { format!("\"e{}\"", i - 1) };
        text.push_str(&format!("{{\"type\":\"message\",\"id\":\"e{i}\",\"parentId\":{parent}}}\n"));
    }
    text
}

/// A line `id` whose parent is `parent`.
fn child(id: &str, parent: &str) -> String {
    format!("{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":\"{parent}\"}}\n")
}

/// The node the import state of `path` gives entry `id` (through its node table's chunks).
fn state_node(store: &Store, path: &Path, id: &str) -> Option<ObjectId> {
    let (head, rest) = store.read_state(&canonical(path).unwrap()).unwrap().unwrap()?;
    let resume = state::decode_resume(&head, &rest)?;
    let table = Table::of(store, &resume);
    let node = table.iter_back().find(|(i, _)| *i == id).map(|(_, n)| n);
    node
}

/// The node a fresh store's import of `path` gives entry `id`.
fn fresh_node(path: &Path, id: &str) -> Option<ObjectId> {
    let dir = tempfile::tempdir().unwrap();
    let mut fresh = Store::open_dir(dir.path()).unwrap();
    fresh.import_file(path, None).unwrap();
    state_node(&fresh, path, id)
}

/// A store (in the folder returned) that imported `chain(n)` from `s.jsonl` there.
fn imported_chain(n: usize) -> (tempfile::TempDir, PathBuf, Store) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, chain(n)).unwrap();
    let mut store = Store::open_dir(&dir.path().join("store")).unwrap();
    store.import_file(&path, None).unwrap();
    (dir, path, store)
}

/// The import state of `path`, decoded.
fn state_of(store: &Store, path: &Path) -> (FileState, Resume) {
    let (head, rest) = store.read_state(&canonical(path).unwrap()).unwrap().unwrap().unwrap();
    let resume = state::decode_resume(&head, &rest).unwrap();
    (head, resume)
}

/// Sets the import state record of `path` to `bytes`, as a command's batch does.
fn set_state(store: &mut Store, path: &Path, bytes: Vec<u8>) {
    let mut batch = store.batch().unwrap();
    batch.pending.set(state::name(&canonical(path).unwrap()), bytes);
    batch.commit().unwrap();
}

fn fsck_problems(store: &Store) -> Vec<String> {
    crate::store::fsck::check::<String>(store.dir(), &|_, _| Ok(None)).unwrap().problems
}

fn append(path: &Path, line: &str) {
    let mut text = std::fs::read_to_string(path).unwrap();
    text.push_str(line);
    std::fs::write(path, text).unwrap();
}

/// A store whose import state is of format 3 (the table inside the state, as main before
/// chunks wrote it) imports an append from that table, a parent deep in it found, and
/// writes format 4 with the table as chunks.
#[test]
fn a_format_3_state_imports_an_append_and_is_written_in_format_4() {
    let (_dir, path, mut store) = imported_chain(300);
    let (head, resume) = state_of(&store, &path);
    let mut table = NodeTable::default();
    let mut entries: Vec<(String, ObjectId)> =
        Table::of(&store, &resume).iter_back().map(|(i, n)| (i.to_string(), n)).collect();
    entries.reverse();
    entries.iter().for_each(|(i, n)| table.push(i, n));
    set_state(&mut store, &path, state::encode_format_3(&head, &resume, &table));
    store.refresh().unwrap();
    assert_eq!(store.read_state(&canonical(&path).unwrap()).unwrap().unwrap().unwrap().0.format, 3);
    let line = child("n", "e5");
    append(&path, &line);
    let report = store.import_file(&path, None).unwrap();
    assert_eq!((report.rewritten, report.bytes), (false, line.len() as u64), "{report:?}");
    assert_eq!(store.read_state(&canonical(&path).unwrap()).unwrap().unwrap().unwrap().0.format, state::VERSION);
    assert_eq!(state_node(&store, &path, "n"), fresh_node(&path, "n"));
    assert_eq!(state_node(&store, &path, "e5"), fresh_node(&path, "e5"));
    assert_eq!(fsck_problems(&store), Vec::<String>::new());
}

/// A state naming a chunk the store lacks, or holds damaged, is named by fsck; an import
/// whose parent lookup reaches it reads the file whole again (with a warning) and writes a
/// sound state, never a node from a table it could not read.
#[test]
fn a_missing_or_damaged_chunk_is_named_by_fsck_and_the_file_read_whole_again() {
    let (dir, path, mut store) = imported_chain(100);
    let (head, resume) = state_of(&store, &path);
    assert_eq!(resume.chunks.len(), 1);
    let real = resume.chunks[0];

    // Missing: the state names a chunk no pack holds.
    let missing = state::Chunk { id: ObjectId([9; 32]), entries: real.entries };
    let lacking = Resume { chunks: vec![missing], ..resume.clone() };
    let encoded = state::encode(&store, &head, &lacking).unwrap();
    set_state(&mut store, &path, encoded.state);
    store.refresh().unwrap();
    let problems = fsck_problems(&store);
    assert!(
        problems.iter().any(|p| p.contains(&format!("node table chunk {} is missing", missing.id))),
        "{problems:?}"
    );
    append(&path, &child("n", "e5"));
    let report = store.import_file(&path, None).unwrap();
    assert!(report.rewritten, "read whole again: {report:?}");
    assert!(report.warnings[0].message.contains("does not read"), "{:?}", report.warnings);
    assert_eq!(state_node(&store, &path, "n"), fresh_node(&path, "n"));
    assert_eq!(fsck_problems(&store), Vec::<String>::new());

    // Damaged: a byte of the chunk flipped in its pack.
    let chunk = state_of(&store, &path).1.chunks[0];
    let bytes = state::chunk_bytes(&store, &chunk).unwrap().to_vec();
    let pack = store.packs().iter().find(|p| p.find(&chunk.id).is_some()).unwrap().path.clone();
    let mut packed = std::fs::read(&pack).unwrap();
    let at = packed.windows(bytes.len()).position(|w| w == bytes).unwrap() + bytes.len() / 2;
    packed[at] ^= 0x01;
    std::fs::write(&pack, &packed).unwrap();
    let store = Store::open_dir(&dir.path().join("store")).unwrap();
    let problems = fsck_problems(&store);
    let named = format!("node table chunk {}", chunk.id);
    assert!(problems.iter().any(|p| p.contains(&named) && p.contains("content hashes to")), "{problems:?}");
}

/// An import interrupted after its pack (the new chunk in it) and before its state leaves the
/// old state valid: the store checks clean, and the next import continues from the old state.
#[test]
fn a_crash_between_the_chunks_and_the_state_leaves_the_old_state_valid() {
    let (_dir, path, mut store) = imported_chain(100);
    let before = store.read_state(&canonical(&path).unwrap()).unwrap().unwrap().unwrap();
    let line = child("n", "e99");
    append(&path, &line);
    // The import's objects written and durable, its records (state, ref, times) never.
    let prepared = prepare(&store, &path, None, None).unwrap();
    assert!(prepared.objects.iter().any(|(_, kind, _)| *kind == Kind::Table));
    let mut batch = store.batch().unwrap();
    for (id, kind, bytes) in prepared.objects.iter() {
        batch.pending.add_new(batch.store, *id, *kind, bytes).unwrap();
    }
    batch.commit().unwrap();
    store.refresh().unwrap();
    assert_eq!(store.read_state(&canonical(&path).unwrap()).unwrap().unwrap().unwrap(), before);
    assert_eq!(fsck_problems(&store), Vec::<String>::new());
    let report = store.import_file(&path, None).unwrap();
    assert_eq!((report.rewritten, report.bytes), (false, line.len() as u64));
    assert_eq!(store.version_bytes(&report.version).unwrap(), std::fs::read(&path).unwrap());
    assert_eq!(state_node(&store, &path, "n"), fresh_node(&path, "n"));
}

/// gc keeps the chunks import states name and drops those no state names any more (merged
/// into a bigger one); the state still reads after it.
#[test]
fn gc_keeps_the_chunks_in_use_and_drops_the_merged_ones() {
    let (_dir, path, mut store) = imported_chain(10);
    // 20 entries after 10: the new chunk takes the old one in.
    let mut more = String::new();
    for i in 10..30 {
        more.push_str(&child(&format!("e{i}"), &format!("e{}", i - 1)));
    }
    append(&path, &more);
    store.import_file(&path, None).unwrap();
    let report = store.gc(false).unwrap();
    assert_eq!(report.dropped[Kind::Table.code() as usize - 1], 1, "{report:?}");
    assert_eq!(report.dropped.iter().sum::<u64>(), 1, "{report:?}");
    assert_eq!(fsck_problems(&store), Vec::<String>::new());
    append(&path, &child("n", "e0"));
    let report = store.import_file(&path, None).unwrap();
    assert!(!report.rewritten);
    assert_eq!(state_node(&store, &path, "n"), fresh_node(&path, "n"));
}

/// Each failure names its file and says what was being done; the system's refusal keeps its
/// `io::Error` as the source and becomes an I/O error (exit 4), a wrong kind of path is the
/// user's (exit 1).
#[cfg(feature = "cli")]
#[test]
fn import_errors_name_the_file_and_keep_their_kind() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open_dir(&dir.path().join("store")).unwrap();
    // Reading /proc/self/mem from offset 0 fails with EIO, even for root.
    let mem = Path::new("/proc/self/mem");
    let e = store.import_file(mem, None).unwrap_err();
    let ImportError::File(f) = &e else { panic!("{e:?}") };
    assert_eq!((f.path.as_path(), f.doing, f.source.raw_os_error()), (mem, "read", Some(libc::EIO)));
    let e = Error::from(e);
    assert!(e.message.starts_with("cannot read /proc/self/mem: "), "{}", e.message);
    assert_eq!(e.kind.exit_code(), 4);
    assert!(std::error::Error::source(&e).is_some_and(|s| s.is::<ImportError>()));

    let e = Error::from(store.import_file(dir.path(), None).unwrap_err());
    assert_eq!((e.message, e.kind.exit_code()), (format!("{}: not a file", dir.path().display()), 1));
}

/// A node table that does not read is a typed error naming the session file and the chunk,
/// a damaged store to the CLI (exit 3), not a string threaded through the import.
#[cfg(feature = "cli")]
#[test]
fn an_unread_node_table_names_the_file_and_the_chunk_and_is_corruption() {
    let chunk = ObjectId([9; 32]);
    let e = ImportError::TableUnread { path: PathBuf::from("/s.jsonl"), chunk };
    assert_eq!(e.to_string(), format!("/s.jsonl: the import state's node table does not read (chunk {chunk})"));
    let e = Error::from(e);
    assert_eq!(e.kind.exit_code(), 3);
    assert!(std::error::Error::source(&e).is_some_and(|s| s.is::<ImportError>()));
}

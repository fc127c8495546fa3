//! Garbage collection: keep what refs and import states reach, repack it into one pack, drop the
//! rest.
//!
//! Reached: every ref's object; every version a ref or an import state names, with its whole
//! parent chain and the entries and nodes its lines name; the table objects of every import
//! state's node table; every node whose entry is kept (and whose parent, if any, is kept), so
//! node ids of kept paths stay resolvable. Crash safety: the new
//! pack is written completely and made durable (fsync, rename, index last) before any old pack is
//! removed, so an interruption leaves the old packs, or the old and the new ones (duplicate
//! objects, which lookups tolerate), or the new one: every state is a valid store.

use std::collections::HashSet;

use super::{Result, StoreError};
use crate::durable::FileError;
use crate::id::{Kind, ObjectId};

use super::version::{split_node, Item};
use super::{pack, state, Batch, Store};

/// What a collection found (and, unless a dry run, did).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GcReport {
    /// Distinct objects before.
    pub objects: u64,
    /// Objects kept.
    pub kept: u64,
    /// Objects dropped, by kind, in the order of [`Kind::ALL`]: entry, node, version, overlay,
    /// row, table.
    pub dropped: [u64; Kind::ALL.len()],
    /// Packs before.
    pub packs_before: u64,
    /// Pack and index bytes before.
    pub bytes_before: u64,
    /// Pack and index bytes after (as before for a dry run).
    pub bytes_after: u64,
    /// Temp files of writers that died, removed (in a dry run: found).
    pub temp_files: u64,
}

impl Store {
    /// Collects garbage under the store's write lock; `dry_run` only counts. Refuses, naming
    /// it, while anything in the packs or packed files is damaged: what damage hides cannot be
    /// told reachable, and would be dropped.
    pub fn gc(&mut self, dry_run: bool) -> Result<GcReport> {
        let Batch { store, _lock, .. } = self.batch()?;
        let mut problems = store.packed.problems();
        problems.extend(store.packs().iter().flat_map(|p| p.verify()));
        if !problems.is_empty() {
            return Err(StoreError::NotCollecting { problems });
        }
        let temp_files = remove_temp_files(store.dir(), dry_run)?;
        let keep = reachable(store)?;
        if !dry_run {
            pack_records(store)?;
        }
        let counts = store.counts();
        let mut report = GcReport {
            packs_before: counts.packs,
            bytes_before: counts.bytes,
            bytes_after: counts.bytes,
            temp_files,
            ..Default::default()
        };
        let mut seen = HashSet::new();
        for p in store.packs() {
            for i in 0..p.len() {
                let id = p.id_at(i);
                if seen.insert(id) && !keep.contains(&id) {
                    report.dropped[p.object_at(i)?.kind.code() as usize - 1] += 1;
                }
            }
        }
        report.objects = seen.len() as u64;
        report.kept = report.objects - report.dropped.iter().sum::<u64>();
        if report.kept == report.objects && counts.packs <= 1 {
            return Ok(report);
        }
        if dry_run {
            // The size the repack would write: the pack and index of the kept objects.
            let mut sizes = Vec::new();
            each_kept(store, &keep, |_, obj| {
                sizes.push(obj.bytes.len());
                Ok(())
            })?;
            report.bytes_after = pack::packed_bytes(&sizes);
            return Ok(report);
        }
        repack(store, &keep)?;
        report.bytes_after = store.counts().bytes;
        Ok(report)
    }
}

/// Removes (or, in a dry run, counts) the `tmp-*` files under `packs/`, `import/` and `refs/`.
/// Only writers holding the store's lock create them there, and the caller holds it: each was
/// left by a writer that died before its rename.
fn remove_temp_files(dir: &std::path::Path, dry_run: bool) -> Result<u64> {
    let mut n = 0;
    for sub in ["packs", "import", "refs", "times", super::packed::DIR] {
        for entry in walkdir::WalkDir::new(dir.join(sub)).into_iter().filter_map(|e| e.ok()) {
            if !entry.file_type().is_file()
                || !entry.file_name().to_string_lossy().starts_with(crate::durable::TMP_PREFIX)
            {
                continue;
            }
            if !dry_run {
                std::fs::remove_file(entry.path()).map_err(FileError::at(entry.path(), "remove"))?;
            }
            n += 1;
        }
    }
    Ok(n)
}

/// Writes the kept objects into one new durable pack, then removes every other pack (index
/// first, so a half-removed pack is an ignored orphan).
/// Writes every ref, import state and times list in one packed file, the loose files of stores
/// from before the packed form included (a packed record shadows a loose file of its name), then
/// removes the older packed files and the loose files (and the `<ref>.lock` files an older shake
/// left): the new file is in place, durably, before anything is removed.
fn pack_records(store: &mut Store) -> Result<()> {
    let dir = store.dir().to_path_buf();
    let mut loose = Vec::new();
    for sub in ["refs", "import", "times"] {
        for entry in walkdir::WalkDir::new(dir.join(sub)).into_iter().filter_map(|e| e.ok()) {
            let name = entry.path().strip_prefix(&dir).unwrap_or(entry.path()).to_string_lossy().into_owned();
            if entry.file_type().is_file()
                && !entry.file_name().to_string_lossy().starts_with(crate::durable::TMP_PREFIX)
            {
                loose.push((name, entry.into_path()));
            }
        }
    }
    if loose.is_empty() && store.packed.files().len() <= 1 {
        return Ok(());
    }
    let mut base = std::collections::BTreeMap::new();
    for (name, path) in &loose {
        if !name.ends_with(".lock") {
            base.insert(name.clone(), std::fs::read(path).map_err(FileError::at(path, "read"))?);
        }
    }
    let all = store.packed.merged(base)?;
    store.packed.replace(&dir, all)?;
    for (_, path) in &loose {
        std::fs::remove_file(path).map_err(FileError::at(path, "remove"))?;
    }
    Ok(())
}

fn repack(store: &mut Store, keep: &HashSet<ObjectId>) -> Result<()> {
    let dir = store.packs_dir();
    let mut writer = pack::PackWriter::new(&dir)?;
    each_kept(store, keep, |id, obj| Ok(writer.add(id, obj.kind, obj.bytes)?))?;
    let new_idx = writer.finish()?;
    for old in std::mem::take(&mut store.packs) {
        // The new pack can have the name of an old one with the same contents: that one stays.
        if Some(&old.idx_path) == new_idx.as_ref() {
            continue;
        }
        let (idx, path) = (old.idx_path.clone(), old.path.clone());
        drop(old);
        for file in [idx, path] {
            std::fs::remove_file(&file).map_err(FileError::at(&file, "remove"))?;
        }
    }
    crate::durable::sync_dir(&dir)?;
    store.refresh()
}

/// Calls `f` once for each kept object, in pack order (what a repack writes, and in that order),
/// after checking that its bytes match its id.
fn each_kept(
    store: &Store,
    keep: &HashSet<ObjectId>,
    mut f: impl FnMut(ObjectId, pack::Object<'_>) -> Result<()>,
) -> Result<()> {
    let mut done = HashSet::new();
    for p in &store.packs {
        for i in 0..p.len() {
            let id = p.id_at(i);
            if !keep.contains(&id) || !done.insert(id) {
                continue;
            }
            let obj = p.object_at(i)?;
            if ObjectId::hash(obj.kind, obj.bytes) != id {
                return Err(StoreError::Mismatch { pack: p.path.clone(), id });
            }
            f(id, obj)?;
        }
    }
    Ok(())
}

/// Returns every object id a ref or an import state reaches (see the module doc).
fn reachable(store: &Store) -> Result<HashSet<ObjectId>> {
    let mut keep = HashSet::new();
    let mut todo: Vec<ObjectId> = store.refs()?.into_iter().map(|(_, id)| id).collect();
    todo.extend(store.sessions()?.into_iter().map(|s| s.version));
    for (path, bytes) in store.states()? {
        let resume = state::decode_head(&bytes).and_then(|(head, rest)| state::decode_resume(&head, rest));
        let resume = resume.ok_or(StoreError::StateUnreadable { path })?;
        todo.extend(resume.chunks.into_iter().map(|c| c.id));
    }
    while let Some(id) = todo.pop() {
        // Something names it: a missing object is damage (a lost index, say) to refuse on.
        let obj = store.read(&id)?;
        if !keep.insert(id) {
            continue;
        }
        match obj.kind {
            Kind::Version => {
                let version = store.version(&id)?;
                keep.extend(version.lines(store, &format_args!("version {id}"))?);
                todo.extend(version.items.iter().filter_map(|item| match item {
                    Item::Path { node, .. } => Some(*node),
                    Item::Line(_) => None,
                }));
                todo.extend(version.parent);
            }
            Kind::Node => {
                let (parent, entry) = split_node(obj.bytes).ok_or(StoreError::BadNode { id })?;
                keep.insert(entry);
                todo.extend(parent);
            }
            Kind::Entry | Kind::Row | Kind::Overlay | Kind::Table => {}
        }
    }
    keep_nodes(store, &mut keep)?;
    Ok(keep)
}

/// Adds every node whose entry is kept, less those whose parent is not kept (repeated until
/// nothing changes: a kept node always has its parent).
fn keep_nodes(store: &Store, keep: &mut HashSet<ObjectId>) -> Result<()> {
    let mut nodes = Vec::new();
    for p in store.packs() {
        for i in 0..p.len() {
            let obj = p.object_at(i)?;
            if obj.kind != Kind::Node {
                continue;
            }
            let id = p.id_at(i);
            let what = p.path.display().to_string();
            let (parent, entry) = split_node(obj.bytes).ok_or(StoreError::BadNodeIn { what, id })?;
            if keep.contains(&entry) {
                nodes.push((id, parent));
            }
        }
    }
    let mut kept: HashSet<ObjectId> = nodes.iter().map(|(n, _)| *n).collect();
    loop {
        let before = kept.len();
        nodes.retain(|(n, parent)| {
            let ok = parent.is_none_or(|p| kept.contains(&p));
            if !ok {
                kept.remove(n);
            }
            ok
        });
        if kept.len() == before {
            break;
        }
    }
    keep.extend(kept);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_nothing_names_goes_and_the_rest_is_one_pack() {
        let dir = tempfile::tempdir().unwrap();
        let text = concat!(
            "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n",
            "{\"type\":\"message\",\"id\":\"a\",\"parentId\":null}\n",
        );
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, text).unwrap();
        let mut store = Store::open_dir(&dir.path().join("store")).unwrap();
        let version = store.import_file(&path, None).unwrap().version;
        let mut batch = store.batch().unwrap();
        let loose = batch.put(Kind::Overlay, b"{}").unwrap();
        // A row nothing names (a Claude Code transcript's, say) is counted in its own slot: the
        // counts had four slots, one per kind before rows, and dropping a row panicked.
        let row = batch.put(Kind::Row, b"{\"type\":\"user\"}").unwrap();
        batch.commit().unwrap();
        store.refresh().unwrap();
        assert_eq!(store.counts().packs, 2);
        let predicted = store.gc(true).unwrap();
        let report = store.gc(false).unwrap();
        assert_eq!((report.objects, report.kept, report.dropped), (7, 5, [0, 0, 0, 1, 1, 0]));
        assert_eq!(predicted.bytes_after, report.bytes_after, "the dry run predicts the size");
        assert_eq!(report.bytes_after, store.counts().bytes);
        assert_eq!(store.counts().packs, 1);
        assert!(!store.contains(&loose) && !store.contains(&row));
        assert_eq!(store.version_bytes(&version).unwrap(), text.as_bytes());
        // With the session's ref and import state gone, nothing is reached.
        std::fs::remove_dir_all(dir.path().join("store/packed")).unwrap();
        assert_eq!(store.gc(true).unwrap().kept, 0);
        assert_eq!(store.counts().objects, 5, "a dry run changes nothing");
        store.gc(false).unwrap();
        assert_eq!(store.counts().objects, 0);
    }
}

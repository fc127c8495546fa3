//! The content-addressed store: objects in packs, refs, and what was imported from which file.
//!
//! Layout under the store folder (`docs/format.md`):
//! `packs/pack-<sum>.{pack,idx}`, `packed/packed-<seq>` (refs, per-file import states and import
//! times, several per file: [`packed`]), `lock`; stores written before the packed form also
//! have loose `refs/…`, `import/<key>` and `times/<key>` files, still read.
//! Readers never lock: packs and packed files are immutable once renamed into place.
//! Writers ([`Batch`]) hold an advisory lock on `lock` so two shake processes never race.

mod error;
pub mod family;
pub mod fsck;
pub mod gc;
pub mod import;
pub mod lock;
mod many;
pub mod pack;
pub mod packed;
pub mod refs;
pub mod row;
pub mod sealed;
pub mod state;
pub mod times;
pub mod touch;
pub mod version;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::durable::FileError;
use crate::id::{HexPrefix, Kind, ObjectId};
use crate::Context;

pub use error::{Result, StoreError};

pub use import::{path_nodes, session_by_id, ImportReport, SessionInfo};
pub use lock::WriteLock;
pub use pack::{Object, Pack};
use packed::Resolved;
pub use refs::{Expect, RefError};
pub use version::Version;

/// More packs than this get merged (all but the largest) by the next write.
pub const MAX_PACKS: usize = 16;

/// An open store: its folder and the packs found there when opened (or last refreshed).
pub struct Store {
    dir: PathBuf,
    packs: Vec<Pack>,
    packed: packed::Packed,
}

/// Totals for `count-objects`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Objects over all packs.
    pub objects: u64,
    /// Pack files.
    pub packs: u64,
    /// Bytes of pack and index files.
    pub bytes: u64,
}

impl Store {
    /// Opens the store of this context (`--store`, `$SHAKE_DIR`, else `<pi agent dir>/shake`).
    /// A store that does not exist yet opens empty; nothing is created until something is written.
    pub fn open(ctx: &Context) -> Result<Store> {
        Store::open_dir(&ctx.store_dir)
    }

    /// Opens the store in `dir`.
    pub fn open_dir(dir: &Path) -> Result<Store> {
        let mut store = Store { dir: dir.to_path_buf(), packs: Vec::new(), packed: packed::Packed::default() };
        store.refresh()?;
        Ok(store)
    }

    /// Re-reads the list of packs and packed files (another process may have added some, or
    /// merged some away).
    pub fn refresh(&mut self) -> Result<()> {
        // A file listed and then deleted was merged into a new one by a writer: list again.
        for _ in 0..3 {
            let (packed, vanished) = packed::Packed::load(&self.dir, std::mem::take(&mut self.packed))?;
            self.packed = packed;
            if !vanished {
                break;
            }
        }
        for _ in 0..3 {
            let mut packs = Vec::new();
            let mut vanished = false;
            for idx in self.index_files()? {
                match self.packs.iter().position(|p| p.idx_path == idx) {
                    Some(i) => packs.push(self.packs.swap_remove(i)),
                    None => match Pack::open(&idx) {
                        Ok(pack) => packs.push(pack),
                        Err(_) if !idx.exists() => vanished = true,
                        Err(e) => return Err(e.into()),
                    },
                }
            }
            self.packs = packs;
            if !vanished {
                return Ok(());
            }
        }
        Err(StoreError::Unsettled { dir: self.packs_dir() })
    }

    /// Merges every pack but the largest into one when there are more than [`MAX_PACKS`]
    /// (each command that writes adds a pack). Objects are re-hashed as they are copied; the new
    /// pack is in place before the old ones go, index first.
    fn consolidate(&mut self) -> Result<()> {
        if self.packs.len() <= MAX_PACKS {
            return Ok(());
        }
        self.packs.sort_by_key(|p| std::cmp::Reverse(p.disk_bytes()));
        let small = self.packs.split_off(1);
        let mut writer = pack::PackWriter::new(&self.packs_dir())?;
        for pack in &small {
            for i in 0..pack.len() {
                let (id, obj) = (pack.id_at(i), pack.object_at(i)?);
                if ObjectId::hash(obj.kind, obj.bytes) != id {
                    return Err(StoreError::Mismatch { pack: pack.path.clone(), id });
                }
                if !writer.contains(&id) && self.packs[0].find(&id).is_none() {
                    writer.add(id, obj.kind, obj.bytes)?;
                }
            }
        }
        if let Some(idx) = writer.finish()? {
            self.packs.push(Pack::open(&idx)?);
        }
        for pack in small {
            let (idx, path) = (pack.idx_path.clone(), pack.path.clone());
            drop(pack);
            std::fs::remove_file(&idx).map_err(FileError::at(&idx, "remove"))?;
            std::fs::remove_file(&path).map_err(FileError::at(&path, "remove"))?;
        }
        self.packs.sort_by(|a, b| a.idx_path.cmp(&b.idx_path));
        Ok(())
    }

    /// Returns the `.idx` files of the store's packs, sorted.
    pub fn index_files(&self) -> Result<Vec<PathBuf>> {
        let dir = self.packs_dir();
        let read = match std::fs::read_dir(&dir) {
            Ok(r) => r,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(FileError::at(&dir, "list")(e).into()),
        };
        let mut files: Vec<PathBuf> = read
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| {
                p.extension().is_some_and(|x| x == "idx")
                    && p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("pack-"))
            })
            .collect();
        files.sort();
        Ok(files)
    }

    /// Returns the store folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn packs_dir(&self) -> PathBuf {
        self.dir.join("packs")
    }

    /// Returns the packs.
    pub fn packs(&self) -> &[Pack] {
        &self.packs
    }

    /// Tells whether the store holds `id`.
    pub fn contains(&self, id: &ObjectId) -> bool {
        self.packs.iter().any(|p| p.find(id).is_some())
    }

    /// Returns the object `id`, or `None` when the store does not hold it. Its bytes are
    /// re-hashed first: every object that leaves the store (restore, cat-object, cat-session,
    /// export, overlays, the meter) is the one its id names, or a corrupt-store error naming it.
    pub fn get(&self, id: &ObjectId) -> Result<Option<Object<'_>>> {
        let Some((pack, obj)) = self.locate(id)? else { return Ok(None) };
        let actual = ObjectId::hash(obj.kind, obj.bytes);
        if actual != *id {
            return Err(StoreError::Rehash { pack: pack.path.clone(), id: *id, actual, kind: obj.kind });
        }
        Ok(Some(obj))
    }

    /// Returns the kind of object `id` without re-hashing it (for `fsck`'s link checks, which
    /// re-hash every object once by itself), or `None` when the store does not hold it.
    pub fn kind_of(&self, id: &ObjectId) -> Result<Option<Kind>> {
        Ok(self.locate(id)?.map(|(_, obj)| obj.kind))
    }

    /// Finds object `id`'s record, unverified.
    fn locate(&self, id: &ObjectId) -> Result<Option<(&Pack, Object<'_>)>> {
        for pack in &self.packs {
            if let Some(i) = pack.find(id) {
                return Ok(Some((pack, pack.object_at(i)?)));
            }
        }
        Ok(None)
    }

    /// Returns the object `id`; a missing object is a corrupt store (something refers to it).
    pub fn read(&self, id: &ObjectId) -> Result<Object<'_>> {
        self.get(id)?.ok_or_else(|| StoreError::Missing { store: self.dir.clone(), id: *id })
    }

    /// Returns the object `id`, checking it is of `kind`.
    pub fn read_kind(&self, id: &ObjectId, kind: Kind) -> Result<&[u8]> {
        let obj = self.read(id)?;
        if obj.kind != kind {
            return Err(StoreError::WrongKind { id: *id, is: obj.kind, want: kind });
        }
        Ok(obj.bytes)
    }

    /// Resolves a full id or a unique hex prefix (at least 4 digits) to an id in the store.
    pub fn resolve(&self, text: &str) -> Result<ObjectId> {
        let prefix = HexPrefix::parse(text).ok_or_else(|| StoreError::NotAnId { text: text.to_string() })?;
        let mut hits = Vec::new();
        self.packs.iter().for_each(|p| p.find_prefix(&prefix, &mut hits));
        hits.sort_unstable();
        hits.dedup();
        match hits.len() {
            1 => Ok(hits[0]),
            0 => Err(StoreError::NoObject { text: text.to_string(), store: self.dir.clone() }),
            count => Err(StoreError::Ambiguous { text: text.to_string(), count }),
        }
    }

    /// Returns the object, pack and byte totals.
    pub fn counts(&self) -> Counts {
        Counts {
            objects: self.packs.iter().map(|p| p.len() as u64).sum(),
            packs: self.packs.len() as u64,
            bytes: self.packs.iter().map(Pack::disk_bytes).sum(),
        }
    }

    /// Reads a ref (`None` when it does not exist): its packed record, else its loose file; a
    /// damaged record is a corrupt-store error naming it.
    pub fn read_ref(&self, name: &str) -> Result<Option<ObjectId>> {
        refs::check_name(name)?;
        match self.packed.resolve(name) {
            Resolved::Found(f, bytes) => Ok(Some(refs::parse(&f.path.join(name), bytes)?)),
            Resolved::Damaged(what) => Err(damaged(what)),
            Resolved::Missing => Ok(refs::read(&self.dir, name)?),
        }
    }

    /// Sets a ref durably if its current value is what `expect` says; `new` must be in the
    /// store. The compare and the write happen under the store's write lock.
    pub fn update_ref(&mut self, name: &str, new: &ObjectId, expect: Expect) -> Result<()> {
        refs::check_name(name)?;
        let _held = WriteLock::take(&self.dir)?;
        self.refresh()?;
        if !self.contains(new) {
            return Err(StoreError::NoTarget { name: name.to_string(), new: *new });
        }
        refs::compare(name, self.read_ref(name)?, expect)?;
        let records = [(name.to_string(), refs::value(new))].into();
        self.packed.write(&self.dir, records)
    }

    /// Lists every ref, sorted by name; the first unreadable ref is an error.
    pub fn refs(&self) -> Result<Vec<(String, ObjectId)>> {
        Ok(self.refs_all()?.into_iter().map(|(name, id)| id.map(|id| (name, id))).collect::<Result<_, _>>()?)
    }

    /// Lists every ref, sorted by name, each with its id or why it cannot be read: the packed
    /// ones and the loose files no packed record shadows. Damage that may hide a ref or its
    /// value is a corrupt-store error naming it (`fsck`'s lenient view: those refs left out).
    pub fn refs_all(&self) -> Result<refs::Listed> {
        let mut all: BTreeMap<String, Result<ObjectId, RefError>> = refs::list_all(&self.dir)?.into_iter().collect();
        for name in self.packed.names("refs/").map_err(damaged)? {
            all.insert(name.to_string(), Ok(ObjectId::NULL));
        }
        let mut listed = Vec::with_capacity(all.len());
        for (name, id) in all {
            match self.packed.resolve(&name) {
                Resolved::Found(f, bytes) => {
                    listed.push((name.clone(), refs::parse(&f.path.join(&name), bytes)));
                }
                Resolved::Damaged(what) => self.packed.refuse(what).map_err(damaged)?,
                Resolved::Missing => listed.push((name, id)),
            }
        }
        Ok(listed)
    }

    /// Reads the import state of the session file whose absolute path is `path`: its packed
    /// record, else its loose file. `Ok(Ok(None))` when absent, `Ok(Err(why))` naming it when
    /// the state does not decode (a loose file's checksum, an unknown format: read as absent by
    /// an import, which reads the file whole again), `Err` when its packed record is damaged (a
    /// corrupt store: what it named, and so which versions the file had, is unknown).
    pub fn read_state(&self, path: &str) -> Result<state::Read> {
        let name = state::name(path);
        match self.packed.resolve(&name) {
            Resolved::Found(f, bytes) => Ok(state::decode(&f.path.join(&name), bytes).map(Some)),
            Resolved::Damaged(what) => Err(damaged(what)),
            Resolved::Missing => Ok(state::read(&self.dir.join(name))),
        }
    }

    /// When each imported version of the file at `path` (as the store records it) was imported,
    /// in milliseconds since the epoch; versions with no time recorded are absent (`times.rs`).
    /// A damaged times record is a corrupt-store error naming it.
    pub fn import_times(&self, path: &Path) -> Result<HashMap<ObjectId, u64>> {
        let name = times::name(&path.to_string_lossy());
        let mut text = std::fs::read(self.dir.join(&name)).unwrap_or_default();
        self.packed.all(&name).map_err(damaged)?.into_iter().for_each(|lines| text.extend_from_slice(lines));
        Ok(times::parse(&text))
    }

    /// Returns a version's chain, oldest first (version 1 is the first import).
    pub fn version_chain(&self, id: &ObjectId) -> Result<Vec<ObjectId>> {
        let mut chain = vec![*id];
        let mut seen = HashSet::from([*id]);
        while let Some(parent) = self.version(&chain[chain.len() - 1])?.parent {
            if !seen.insert(parent) {
                return Err(StoreError::ChainLoops { id: *id, parent });
            }
            chain.push(parent);
        }
        chain.reverse();
        Ok(chain)
    }

    /// Starts writing: takes the store's write lock, then sees packs written meanwhile.
    pub fn batch(&mut self) -> Result<Batch<'_>> {
        let lock = WriteLock::take(&self.dir)?;
        self.rebuild_lost_indexes()?;
        self.refresh()?;
        Ok(Batch { store: self, pending: Pending::default(), _lock: lock })
    }
}

impl Store {
    /// Gives every complete pack that has no index its index back (under the write lock, so no
    /// writer is between its pack and its index): such a pack may hold the only copy of objects
    /// that refs name.
    fn rebuild_lost_indexes(&self) -> Result<()> {
        for pack in self.packs_without_index() {
            pack::rebuild_index(&pack)?;
        }
        Ok(())
    }

    /// Returns the `pack-*.pack` files that have no `.idx` beside them.
    pub fn packs_without_index(&self) -> Vec<PathBuf> {
        let Ok(read) = std::fs::read_dir(self.packs_dir()) else { return Vec::new() };
        let mut packs: Vec<PathBuf> = read
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| {
                p.extension().is_some_and(|x| x == "pack")
                    && p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("pack-"))
                    && !p.with_extension("idx").exists()
            })
            .collect();
        packs.sort();
        packs
    }
}

/// The corrupt-store error for damage in the packed files (`what` names it).
fn damaged(what: String) -> StoreError {
    StoreError::Damaged { what }
}

/// A write in progress: new objects go to one new pack; the refs, import states and import
/// times that name them go to one packed file ([`packed`]), written only after the pack is
/// durable ([`Batch::commit`]). Dropping it uncommitted leaves the store as it was.
pub struct Batch<'s> {
    store: &'s mut Store,
    pending: Pending,
    _lock: WriteLock,
}

/// What a batch has written so far, apart from the store it writes to (so that other threads
/// can read that store while one thread adds to this: `import_files`).
#[derive(Default)]
struct Pending {
    writer: Option<pack::PackWriter>,
    /// The packed records to write: name → bytes (a later record of a name replaces the
    /// earlier; a times record's lines add up).
    after: BTreeMap<String, Vec<u8>>,
}

impl Pending {
    /// Adds an object unless this batch has it (the caller knows `store` does not); returns
    /// whether it was new.
    fn add_new(
        &mut self,
        store: &Store,
        id: ObjectId,
        kind: Kind,
        bytes: &[u8],
    ) -> std::result::Result<bool, pack::PackError> {
        let writer = match &mut self.writer {
            Some(w) => w,
            None => self.writer.insert(pack::PackWriter::new(&store.packs_dir())?),
        };
        writer.add_new(id, kind, bytes)
    }

    /// Tells whether this batch added `id`.
    fn contains(&self, id: &ObjectId) -> bool {
        self.writer.as_ref().is_some_and(|w| w.contains(id))
    }

    /// Sets the packed record `name` (a ref, an import state) once the batch commits.
    fn set(&mut self, name: String, bytes: Vec<u8>) {
        self.after.insert(name, bytes);
    }

    /// Records, once the batch commits, that `version` was imported now, in the times record
    /// `name` ([`times::name`]).
    fn add_time(&mut self, name: String, version: &ObjectId) {
        let line = times::line(version, times::now_ms());
        self.after.entry(name).or_default().extend_from_slice(&line);
    }
}

impl Batch<'_> {
    /// Returns the store as it was when the batch started (objects added since are not in it).
    pub fn store(&self) -> &Store {
        self.store
    }

    /// The store as it was when the batch started, and what the batch adds to it.
    fn parts(&mut self) -> (&Store, &mut Pending) {
        (self.store, &mut self.pending)
    }

    /// Adds an object unless the store or this batch has it; returns its id.
    pub fn put(&mut self, kind: Kind, bytes: &[u8]) -> std::result::Result<ObjectId, pack::PackError> {
        let id = ObjectId::hash(kind, bytes);
        if !self.store.contains(&id) {
            self.pending.add_new(self.store, id, kind, bytes)?;
        }
        Ok(id)
    }

    /// Tells whether the store or this batch holds `id`.
    pub fn contains(&self, id: &ObjectId) -> bool {
        self.pending.contains(id) || self.store.contains(id)
    }

    /// Points `name` at `id` once the batch commits (no compare: the importer owns session refs).
    pub fn set_ref(&mut self, name: &str, id: ObjectId) -> Result<()> {
        refs::check_name(name)?;
        self.pending.set(name.to_string(), refs::value(&id));
        Ok(())
    }

    /// Makes the pack durable (one fsync for the pack, one for its index), then writes the refs,
    /// import states and times that name its objects in one packed file (one fsync), last, so
    /// an interruption anywhere leaves a store whose refs and states only name objects that
    /// exist.
    pub fn commit(self) -> Result<()> {
        let Batch { store, pending: Pending { writer, after }, _lock } = self;
        if let Some(writer) = writer {
            if let Some(idx) = writer.finish()? {
                store.packs.push(Pack::open(&idx)?);
            }
        }
        store.consolidate()?;
        store.packed.write(&store.dir, after)
    }
}

//! Packed refs, import states and import times: every batch that changes any of them writes
//! them all in one new file, `<store>/packed/packed-<seq>` (like git's `packed-refs`), instead of
//! one small file per ref, per state and per times list (an import of 1,000 files created 3,000).
//!
//! A packed file holds records named as the loose files they replace (`refs/sessions/<id>`,
//! `import/<key>`, `times/<key>`), each with the bytes that file would hold. Files are written
//! once (temp, fsync, rename) under the store's write lock, numbered in the order written, and
//! read newest first: a name's newest record wins, except `times/` records, whose lines add up
//! (oldest first). A loose file is read only when no packed file holds its name (stores written
//! before this format; `shake gc` packs them). When there are [`MAX_FILES`], the next write
//! merges them all into one, which is in place before the old ones are removed: a crash leaves
//! the old files, both (the merged one is newer and says the same), or the merged one. Layout:
//! `docs/format.md`.
//!
//! Damage is never read as "nothing there". Format 2 frames every record (a marker, then its
//! lengths and name under a checksum of their own), so a reader that meets a damaged record
//! skips to the next one: a damaged value is known by its name, damaged framing by the names
//! around it ([`Damage`]). A name the damage may concern resolves to [`Resolved::Damaged`],
//! never to an older record, and readers say so; merging ([`Packed::merged`]) refuses while any
//! file is damaged, so nothing that is still on disk is ever dropped. Format 1 files (one
//! checksum per record, no marker) still read: a damaged record there may have had any name
//! between its neighbours'.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::durable::{self, FileError};

use super::StoreError;

const MAGIC: &[u8; 8] = b"SHAKPREF";
/// 2: framed records (a marker, a checksum of the lengths and name). 1 (still read): records
/// back to back after a record count, one checksum each.
const VERSION: u32 = 2;
const V1: u32 = 1;
/// Bytes before the first record: magic, version and record count.
const HEADER: usize = MAGIC.len() + 8;
const CHECKSUM: usize = 32;
/// Bytes of each record's own checksum (blake3 of its name and value, cut).
const RECORD_SUM: usize = 16;
/// Starts every format 2 record: what a reader looks for to find the next record after damage.
const MARKER: &[u8; 8] = b"\xffSHKREC\n";
/// Bytes of a format 2 record's head checksum (its lengths and name).
const HEAD_SUM: usize = 16;
/// More packed files than this get merged into one by the next write.
pub const MAX_FILES: usize = 16;
/// The folder, under the store.
pub const DIR: &str = "packed";
const PREFIX: &str = "packed-";
/// Names whose records add up across files instead of replacing each other.
const ADDED: &str = "times/";

/// One packed file, mapped, with its records' places (sorted by name).
pub struct PackedFile {
    /// The file.
    pub path: PathBuf,
    /// Its number: newer files have larger ones.
    pub seq: u64,
    map: memmap2::Mmap,
    /// Its format: in format 1, a damaged record's name may be the damaged part.
    version: u32,
    records: Vec<Record>,
    /// The indexes of the records whose checksum fails, found once, when first asked.
    unsound: std::sync::OnceLock<Vec<usize>>,
    /// Damaged stretches (format 2) where no record head reads.
    gaps: Vec<Gap>,
}

/// What a packed file says of a name.
enum Lookup<'p> {
    /// A sound record: its value.
    Found(&'p [u8]),
    /// The record, or damage that may be it, is damaged: the name's value is unknown here
    /// (what is damaged, for the message).
    Damaged(String),
    /// No record of this name.
    Missing,
}

/// What the packed files say of a name ([`Packed::resolve`]).
pub enum Resolved<'p> {
    /// The newest file that holds the name, and its value.
    Found(&'p PackedFile, &'p [u8]),
    /// The newest file that may hold it has it damaged (the message says where): its value is
    /// unknown, and older records or loose files of the name are not believed instead (they are
    /// older than the damage).
    Damaged(String),
    /// No packed file holds it (a loose file may).
    Missing,
}

/// Damage in a packed file, and which names it may concern.
pub struct Damage<'p> {
    /// What is damaged, naming the file.
    pub what: String,
    /// The names it may concern: exactly this one (a format 2 record whose head reads), or
    /// those strictly between two (either end open).
    names: Names<'p>,
}

/// The names a damage may concern ([`Damage::concerns`]).
enum Names<'p> {
    One(&'p str),
    Between(Option<&'p str>, Option<&'p str>),
}

impl Damage<'_> {
    /// Tells whether a name starting with `prefix` may be one of the damaged ones.
    fn concerns(&self, prefix: &str) -> bool {
        match self.names {
            Names::One(name) => name.starts_with(prefix),
            Names::Between(lo, hi) => {
                hi.is_none_or(|h| h > prefix) && lo.is_none_or(|l| l < prefix || l.starts_with(prefix))
            }
        }
    }
}

/// Where one record's name, value and checksum lie in the file.
struct Record {
    name: (usize, usize),
    value: (usize, usize),
    sum: usize,
}

impl PackedFile {
    /// Opens and maps a packed file and checks its layout (magic, version; format 1: every
    /// record in bounds; names UTF-8, sorted and unique); the file's checksum is `fsck`'s to
    /// check, each record's is checked when it is read.
    pub fn open(path: &Path) -> Result<PackedFile, StoreError> {
        let seq = seq_of(path).ok_or_else(|| StoreError::NotPackedName { path: path.to_path_buf() })?;
        let file = std::fs::File::open(path).map_err(FileError::at(path, "open"))?;
        // SAFETY: packed files are never written once renamed into place (a new file replaces
        // them), so the mapping does not change under us.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(FileError::at(path, "map"))?;
        let (version, records, gaps) =
            layout(&map).map_err(|why| StoreError::BadPacked { path: path.to_path_buf(), why })?;
        Ok(PackedFile { path: path.to_path_buf(), seq, map, version, records, unsound: Default::default(), gaps })
    }

    fn name(&self, r: &Record) -> &str {
        // Checked UTF-8 when opened.
        std::str::from_utf8(&self.map[r.name.0..r.name.1]).unwrap_or_default()
    }

    /// Tells whether a record's bytes still match its checksum.
    fn sound(&self, r: &Record) -> bool {
        let sum = record_sum(&self.map[r.name.0..r.name.1], &self.map[r.value.0..r.value.1]);
        self.map[r.sum..r.sum + RECORD_SUM] == sum
    }

    /// Looks record `name` up: a damaged record of that name, or damage whose names may include
    /// it, is [`Lookup::Damaged`].
    fn lookup(&self, name: &str) -> Lookup<'_> {
        let i = match self.records.binary_search_by(|r| self.name(r).cmp(name)) {
            Ok(i) if self.sound(&self.records[i]) => {
                return Lookup::Found(&self.map[self.records[i].value.0..self.records[i].value.1]);
            }
            Ok(i) => return Lookup::Damaged(self.record_damage(i).what),
            Err(i) => i,
        };
        if let Ok(g) = self.gaps.binary_search_by_key(&i, |g| g.0) {
            return Lookup::Damaged(self.gap_damage(g).what);
        }
        // In format 1 a damaged record's name may be what was damaged: it was some name between
        // its neighbours', so a name that sorts next to it may be its own.
        let unsure = |j: usize| self.version == V1 && self.records.get(j).is_some_and(|r| !self.sound(r));
        match [Some(i), i.checked_sub(1)].into_iter().flatten().find(|&j| unsure(j)) {
            Some(j) => Lookup::Damaged(self.record_damage(j).what),
            None => Lookup::Missing,
        }
    }

    /// The indexes of the records whose checksum fails.
    fn unsound(&self) -> &[usize] {
        self.unsound.get_or_init(|| (0..self.records.len()).filter(|&i| !self.sound(&self.records[i])).collect())
    }

    /// Returns every sound record, sorted by name.
    pub fn records(&self) -> impl Iterator<Item = (&str, &[u8])> {
        let unsound = self.unsound();
        let sound = (0..self.records.len()).filter(move |i| unsound.binary_search(i).is_err());
        sound.map(|i| &self.records[i]).map(|r| (self.name(r), &self.map[r.value.0..r.value.1]))
    }

    /// The damage of record `i` (whose checksum fails).
    fn record_damage(&self, i: usize) -> Damage<'_> {
        let name = self.name(&self.records[i]);
        if self.version != V1 {
            let what = format!("{}: record {name:?} is damaged (checksum mismatch)", self.path.display());
            return Damage { what, names: Names::One(name) };
        }
        // The nearest sound neighbours bound the name it had.
        let sound_name = |j: usize| Some(&self.records[j]).filter(|r| self.sound(r)).map(|r| self.name(r));
        let lo = (0..i).rev().find_map(sound_name);
        let hi = (i + 1..self.records.len()).find_map(sound_name);
        let what = format!(
            "{}: record {name:?} is damaged (checksum mismatch; its name may be the damaged part: any between {} and {})",
            self.path.display(),
            lo.map_or("the first".to_string(), |n| format!("{n:?}")),
            hi.map_or("the last".to_string(), |n| format!("{n:?}")),
        );
        Damage { what, names: Names::Between(lo, hi) }
    }

    /// The damage of gap `g`: the records between its neighbours cannot be told.
    fn gap_damage(&self, g: usize) -> Damage<'_> {
        let (before, (start, end)) = self.gaps[g];
        let lo = before.checked_sub(1).map(|j| self.name(&self.records[j]));
        let hi = self.records.get(before).map(|r| self.name(r));
        let names = format!(
            "names between {} and {}",
            lo.map_or("the first".to_string(), |n| format!("{n:?}")),
            hi.map_or("the last".to_string(), |n| format!("{n:?}")),
        );
        let what = match start == end {
            true => format!("{}: fewer records than its header says ({names}): cut short", self.path.display()),
            false => format!(
                "{}: bytes {start}..{end} are damaged: the records there ({names}) cannot be read",
                self.path.display()
            ),
        };
        Damage { what, names: Names::Between(lo, hi) }
    }

    /// Every damaged record and stretch of records, in file order of kind (records, then gaps).
    pub fn damage(&self) -> Vec<Damage<'_>> {
        let records = self.unsound().iter().map(|&i| self.record_damage(i));
        records.chain((0..self.gaps.len()).map(|g| self.gap_damage(g))).collect()
    }

    /// Checks the trailing checksum (`fsck`, and before a merge).
    pub fn verify(&self) -> Option<String> {
        let (body, sum) = self.map.split_at(self.map.len() - CHECKSUM);
        (blake3::hash(body).as_bytes() != sum).then(|| {
            format!("{}: packed file checksum mismatch (a byte changed since it was written)", self.path.display())
        })
    }
}

/// A damaged stretch of a format 2 file: the index of the record after it, and its bytes.
type Gap = (usize, (usize, usize));

/// A file's format, records and damaged stretches ([`PackedFile`]'s fields).
type Layout = (u32, Vec<Record>, Vec<Gap>);

/// Parses the layout: magic, version, then the records ([`layout_v1`], [`layout_v2`]), then
/// the file's checksum.
fn layout(bytes: &[u8]) -> Result<Layout, &'static str> {
    let body_end = bytes.len().checked_sub(CHECKSUM).ok_or("too short")?;
    let body = &bytes[..body_end];
    let rest = body.strip_prefix(MAGIC).ok_or("wrong magic")?;
    let (version, rest) = rest.split_first_chunk::<4>().ok_or("too short")?;
    let (count, _) = rest.split_first_chunk::<4>().ok_or("too short")?;
    let count = u32::from_le_bytes(*count) as usize;
    match u32::from_le_bytes(*version) {
        V1 => Ok((V1, layout_v1(body, count)?, Vec::new())),
        VERSION => layout_v2(body, count).map(|(records, gaps)| (VERSION, records, gaps)),
        _ => Err("unknown version"),
    }
}

/// Format 1: `count` records of (u32 name length, name, u64 value length, value, 16-byte record
/// checksum) back to back: a damaged length breaks the whole file.
fn layout_v1(body: &[u8], count: usize) -> Result<Vec<Record>, &'static str> {
    let mut at = HEADER;
    let mut records: Vec<Record> = Vec::with_capacity(count.min(body.len() / 12));
    for _ in 0..count {
        let take = |at: &mut usize, n: usize| -> Result<(usize, usize), &'static str> {
            let end = at.checked_add(n).filter(|&e| e <= body.len()).ok_or("a record runs past the end")?;
            let span = (*at, end);
            *at = end;
            Ok(span)
        };
        let len = take(&mut at, 4)?;
        let name = take(&mut at, u32::from_le_bytes(body[len.0..len.1].try_into().unwrap_or_default()) as usize)?;
        let len = take(&mut at, 8)?;
        let n = u64::from_le_bytes(body[len.0..len.1].try_into().unwrap_or_default());
        let value = take(&mut at, usize::try_from(n).map_err(|_| "a record runs past the end")?)?;
        let sum = take(&mut at, RECORD_SUM)?.0;
        std::str::from_utf8(&body[name.0..name.1]).map_err(|_| "a name is not UTF-8")?;
        if records.last().is_some_and(|last| body[name.0..name.1] <= body[last.name.0..last.name.1]) {
            return Err("names not sorted and unique");
        }
        records.push(Record { name, value, sum });
    }
    if at != body.len() {
        return Err("bytes after the last record");
    }
    Ok(records)
}

/// Format 2: records of (marker, u32 name length, u64 value length, name, 16-byte head
/// checksum, value, 16-byte record checksum) back to back. Where a head does not read (its
/// checksum fails or it runs past the end), the bytes up to the next marker that starts a head
/// that reads are a gap: the records there are lost to readers, the others are not. Fewer
/// records than `count` and no gap is a file cut short at a record's end: an empty gap at the
/// end (or a damaged count: either way the file is damaged).
fn layout_v2(body: &[u8], count: usize) -> Result<(Vec<Record>, Vec<Gap>), &'static str> {
    let (mut records, mut gaps) = (Vec::<Record>::new(), Vec::new());
    let (mut at, mut gap) = (HEADER, None);
    while at < body.len() {
        let Some((record, end)) = head_at(body, at) else {
            gap.get_or_insert(at);
            // A marker is not checked where a record is expected (a flip in it harms nothing):
            // only where the next head is looked for.
            at = memchr::memmem::find(&body[at + 1..], MARKER).map_or(body.len(), |i| at + 1 + i);
            continue;
        };
        if let Some(start) = gap.take() {
            gaps.push((records.len(), (start, at)));
        }
        if records.last().is_some_and(|last| body[record.name.0..record.name.1] <= body[last.name.0..last.name.1]) {
            return Err("names not sorted and unique");
        }
        records.push(record);
        at = end;
    }
    if let Some(start) = gap {
        gaps.push((records.len(), (start, body.len())));
    }
    if gaps.is_empty() && records.len() != count {
        gaps.push((records.len(), (body.len(), body.len())));
    }
    Ok((records, gaps))
}

/// Reads the format 2 record head at `at`: the record's places and where it ends, if its
/// lengths and name match their checksum and it lies within `body`.
fn head_at(body: &[u8], at: usize) -> Option<(Record, usize)> {
    let fixed = body.get(at + MARKER.len()..at + MARKER.len() + 12)?;
    let name_len = u32::from_le_bytes(fixed[..4].try_into().ok()?) as usize;
    let value_len = usize::try_from(u64::from_le_bytes(fixed[4..].try_into().ok()?)).ok()?;
    let name = (at + MARKER.len() + 12, (at + MARKER.len() + 12).checked_add(name_len)?);
    let head_end = name.1.checked_add(HEAD_SUM)?;
    let value = (head_end, head_end.checked_add(value_len)?);
    let end = value.1.checked_add(RECORD_SUM)?;
    if end > body.len() || body[name.1..head_end] != head_sum(name_len as u32, value_len as u64, &body[name.0..name.1])
    {
        return None;
    }
    std::str::from_utf8(&body[name.0..name.1]).ok()?;
    Some((Record { name, value, sum: value.1 }, end))
}

/// Encodes records (sorted by the map) as one packed file of the current format.
fn encode(records: &BTreeMap<String, Vec<u8>>) -> Vec<u8> {
    let size: usize = records.iter().map(|(k, v)| 20 + k.len() + HEAD_SUM + v.len() + RECORD_SUM).sum();
    let mut out = Vec::with_capacity(HEADER + size + CHECKSUM);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(records.len() as u32).to_le_bytes());
    for (name, value) in records {
        out.extend_from_slice(MARKER);
        out.extend_from_slice(&(name.len() as u32).to_le_bytes());
        out.extend_from_slice(&(value.len() as u64).to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&head_sum(name.len() as u32, value.len() as u64, name.as_bytes()));
        out.extend_from_slice(value);
        out.extend_from_slice(&record_sum(name.as_bytes(), value));
    }
    let sum = blake3::hash(&out);
    out.extend_from_slice(sum.as_bytes());
    out
}

/// A format 2 record head's checksum: blake3 of its lengths and name, cut to 16 bytes.
fn head_sum(name_len: u32, value_len: u64, name: &[u8]) -> [u8; HEAD_SUM] {
    let mut h = blake3::Hasher::new();
    h.update(b"shake packed head\0").update(&name_len.to_le_bytes()).update(&value_len.to_le_bytes()).update(name);
    let mut sum = [0; HEAD_SUM];
    sum.copy_from_slice(&h.finalize().as_bytes()[..HEAD_SUM]);
    sum
}

/// A record's checksum: blake3 of its name's length, its name and its value, cut to 16 bytes
/// (a flipped byte in a name would otherwise move the record under another name).
fn record_sum(name: &[u8], value: &[u8]) -> [u8; RECORD_SUM] {
    let mut h = blake3::Hasher::new();
    h.update(&(name.len() as u32).to_le_bytes()).update(name).update(value);
    let mut sum = [0; RECORD_SUM];
    sum.copy_from_slice(&h.finalize().as_bytes()[..RECORD_SUM]);
    sum
}

fn seq_of(path: &Path) -> Option<u64> {
    let name = path.file_name()?.to_str()?.strip_prefix(PREFIX)?;
    (name.len() == 20 && name.bytes().all(|b| b.is_ascii_digit())).then(|| name.parse().ok()).flatten()
}

/// The packed files of a store, newest first.
#[derive(Default)]
pub struct Packed {
    files: Vec<PackedFile>,
    /// Read past damage instead of refusing: `fsck`'s view, which names every damage itself.
    lenient: bool,
}

impl Packed {
    /// Lists and opens the packed files in `store` (none when the folder does not exist),
    /// keeping those of `old` that are still there. A file listed and then removed was merged
    /// by a writer meanwhile: the caller lists again.
    pub fn load(store: &Path, old: Packed) -> Result<(Packed, bool), StoreError> {
        let lenient = old.lenient;
        let Some(paths) = list(store)? else { return Ok((Packed { files: Vec::new(), lenient }, false)) };
        let mut old = old.files;
        let mut files = Vec::with_capacity(paths.len());
        for path in paths {
            match old.iter().position(|f| f.path == path) {
                Some(i) => files.push(old.swap_remove(i)),
                None => match PackedFile::open(&path) {
                    Ok(f) => files.push(f),
                    Err(_) if !path.exists() => return Ok((Packed { files, lenient }, true)),
                    Err(e) => return Err(e),
                },
            }
        }
        Ok((Packed { files, lenient }, false))
    }

    /// Opens every packed file in `store` for `fsck`, lenient (readers skip what is damaged):
    /// the ones that open, and a message for each damage ([`Packed::problems`]) and each file
    /// that does not open.
    pub fn check(store: &Path) -> Result<(Packed, Vec<String>), StoreError> {
        let (mut files, mut problems) = (Vec::new(), Vec::new());
        for path in list(store)?.unwrap_or_default() {
            match PackedFile::open(&path) {
                Ok(f) => files.push(f),
                Err(e) => problems.push(crate::output::chain(&e)),
            }
        }
        let packed = Packed { files, lenient: true };
        problems.extend(packed.problems());
        Ok((packed, problems))
    }

    /// Every damage in the files, one message each (their checksums too): what `fsck` reports
    /// and what stops a merge.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        for f in &self.files {
            problems.extend(f.verify());
            problems.extend(f.damage().into_iter().map(|d| d.what));
        }
        problems
    }

    /// `Err(what)` when damage must be said (never in `fsck`'s lenient view, which says it).
    pub fn refuse<E>(&self, what: E) -> Result<(), E> {
        match self.lenient {
            true => Ok(()),
            false => Err(what),
        }
    }

    /// The files, newest first.
    pub fn files(&self) -> &[PackedFile] {
        &self.files
    }

    /// What the newest packed file that knows `name` says of it.
    pub fn resolve(&self, name: &str) -> Resolved<'_> {
        for f in &self.files {
            match f.lookup(name) {
                Lookup::Found(value) => return Resolved::Found(f, value),
                Lookup::Damaged(what) => return Resolved::Damaged(what),
                Lookup::Missing => {}
            }
        }
        Resolved::Missing
    }

    /// Every value of record `name`, oldest first (for the records that add up); `Err` naming
    /// the damage when a file may hold one that does not read (lenient: left out).
    pub fn all<'p>(&'p self, name: &str) -> Result<Vec<&'p [u8]>, String> {
        let mut values = Vec::new();
        for f in self.files.iter().rev() {
            match f.lookup(name) {
                Lookup::Found(value) => values.push(value),
                Lookup::Damaged(what) => self.refuse(what)?,
                Lookup::Missing => {}
            }
        }
        Ok(values)
    }

    /// The names of the sound records starting with `prefix` in any file, sorted, once each;
    /// `Err` naming the damage when one may be missing from them, or may have been read from an
    /// older record: damage that may concern such a name and that no newer sound record of its
    /// name shadows (lenient: the names that read).
    pub fn names(&self, prefix: &str) -> Result<BTreeSet<&str>, String> {
        for (k, f) in self.files.iter().enumerate() {
            for d in f.damage().into_iter().filter(|d| d.concerns(prefix)) {
                let shadowed = match d.names {
                    Names::One(name) => {
                        !name.starts_with(ADDED)
                            && self.files[..k].iter().any(|g| matches!(g.lookup(name), Lookup::Found(_)))
                    }
                    Names::Between(..) => false,
                };
                if !shadowed {
                    self.refuse(d.what)?;
                }
            }
        }
        Ok(self
            .files
            .iter()
            .flat_map(|f| f.records().map(|(name, _)| name))
            .filter(|n| n.starts_with(prefix))
            .collect())
    }

    /// Every name with its newest value (the records that add up: all their lines, oldest
    /// first), laid over `base` (older records, e.g. loose files), sorted by name. Refuses, naming
    /// it, while any file is damaged: what a damaged record held would be dropped.
    pub fn merged(&self, mut base: BTreeMap<String, Vec<u8>>) -> Result<BTreeMap<String, Vec<u8>>, StoreError> {
        let problems = self.problems();
        if !problems.is_empty() {
            return Err(StoreError::NotMerging { problems });
        }
        for f in self.files.iter().rev() {
            for (name, value) in f.records() {
                layer(&mut base, name, value);
            }
        }
        Ok(base)
    }

    /// Writes `records` as the next packed file; when there are [`MAX_FILES`] already, the
    /// next file holds every record instead ([`Packed::replace`]), unless one is damaged (the
    /// merge waits, so that nothing a damaged file holds is dropped). The caller holds the
    /// store's write lock and loaded `self` under it.
    pub fn write(&mut self, store: &Path, records: BTreeMap<String, Vec<u8>>) -> Result<(), StoreError> {
        if records.is_empty() {
            return Ok(());
        }
        if self.files.len() >= MAX_FILES && self.problems().is_empty() {
            let mut all = self.merged(BTreeMap::new())?;
            for (name, value) in &records {
                layer(&mut all, name, value);
            }
            return self.replace(store, all);
        }
        let written = self.put(store, &records)?;
        self.files.insert(0, written);
        Ok(())
    }

    /// Writes `records` as the one packed file, then removes every older one (it is in place,
    /// durably, first). The caller holds the store's write lock and took `records` from
    /// [`Packed::merged`].
    pub fn replace(&mut self, store: &Path, records: BTreeMap<String, Vec<u8>>) -> Result<(), StoreError> {
        let written = self.put(store, &records)?;
        for old in std::mem::take(&mut self.files) {
            std::fs::remove_file(&old.path).map_err(FileError::at(&old.path, "remove"))?;
        }
        self.files.push(written);
        Ok(())
    }

    /// Writes the next packed file durably (temp, fsync, rename, folder fsync) and opens it.
    fn put(&self, store: &Path, records: &BTreeMap<String, Vec<u8>>) -> Result<PackedFile, StoreError> {
        let seq = self.files.first().map_or(1, |f| f.seq + 1);
        let path = store.join(DIR).join(format!("{PREFIX}{seq:020}"));
        durable::write(&path, &encode(records))?;
        PackedFile::open(&path)
    }
}

/// The packed files in `store`, newest first (`None` when the folder does not exist).
fn list(store: &Path) -> Result<Option<Vec<PathBuf>>, StoreError> {
    let dir = store.join(DIR);
    let read = match std::fs::read_dir(&dir) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(FileError::at(&dir, "list")(e).into()),
    };
    let mut paths: Vec<PathBuf> =
        read.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| seq_of(p).is_some()).collect();
    paths.sort_by_key(|p| std::cmp::Reverse(seq_of(p)));
    Ok(Some(paths))
}

/// Lays record `name` over `into`: it replaces an older value, or, for the records that add
/// up, follows it.
fn layer(into: &mut BTreeMap<String, Vec<u8>>, name: &str, value: &[u8]) {
    match into.get_mut(name) {
        Some(v) if name.starts_with(ADDED) => v.extend_from_slice(value),
        Some(v) => *v = value.to_vec(),
        None => {
            into.insert(name.to_string(), value.to_vec());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(pairs: &[(&str, &str)]) -> BTreeMap<String, Vec<u8>> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.as_bytes().to_vec())).collect()
    }

    /// What the files say of `name`: its value, `Err` when damaged, `None` when missing.
    fn value(packed: &Packed, name: &str) -> Option<Result<String, String>> {
        match packed.resolve(name) {
            Resolved::Found(_, v) => Some(Ok(String::from_utf8_lossy(v).into_owned())),
            Resolved::Damaged(what) => Some(Err(what)),
            Resolved::Missing => None,
        }
    }

    /// A format 1 file, as shakes before format 2 wrote it.
    fn encode_v1(records: &BTreeMap<String, Vec<u8>>) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&V1.to_le_bytes());
        out.extend_from_slice(&(records.len() as u32).to_le_bytes());
        for (name, value) in records {
            out.extend_from_slice(&(name.len() as u32).to_le_bytes());
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(&(value.len() as u64).to_le_bytes());
            out.extend_from_slice(value);
            out.extend_from_slice(&record_sum(name.as_bytes(), value));
        }
        let sum = blake3::hash(&out);
        out.extend_from_slice(sum.as_bytes());
        out
    }

    #[test]
    fn newest_wins_times_add_up_and_merging_keeps_both() {
        let dir = tempfile::tempdir().unwrap();
        let mut packed = Packed::default();
        packed.write(dir.path(), records(&[("import/a", "1"), ("refs/sessions/s", "x"), ("times/a", "t1\n")])).unwrap();
        packed.write(dir.path(), records(&[("import/a", "2"), ("times/a", "t2\n")])).unwrap();
        let (mut packed, _) = Packed::load(dir.path(), Packed::default()).unwrap();
        assert_eq!(packed.files().len(), 2);
        assert_eq!(value(&packed, "import/a"), Some(Ok("2".into())));
        assert_eq!(value(&packed, "refs/sessions/s"), Some(Ok("x".into())));
        assert_eq!(value(&packed, "import/b"), None);
        assert_eq!(packed.all("times/a").unwrap(), [&b"t1\n"[..], b"t2\n"]);
        let all = packed.merged(records(&[("times/a", "t0\n"), ("import/a", "0"), ("import/c", "loose")])).unwrap();
        packed.replace(dir.path(), all).unwrap();
        let (packed, _) = Packed::load(dir.path(), Packed::default()).unwrap();
        assert_eq!(packed.files().len(), 1);
        assert_eq!(packed.files()[0].seq, 3);
        assert_eq!(value(&packed, "times/a"), Some(Ok("t0\nt1\nt2\n".into())));
        assert_eq!(value(&packed, "import/a"), Some(Ok("2".into())));
        assert_eq!(value(&packed, "import/c"), Some(Ok("loose".into())));
        assert!(packed.problems().is_empty());
    }

    #[test]
    fn more_than_the_limit_merge_into_one() {
        let dir = tempfile::tempdir().unwrap();
        let mut packed = Packed::default();
        for i in 0..=MAX_FILES {
            packed.write(dir.path(), records(&[(&format!("import/{i:02}"), "v")])).unwrap();
        }
        assert_eq!(std::fs::read_dir(dir.path().join(DIR)).unwrap().count(), 1);
        let (packed, _) = Packed::load(dir.path(), Packed::default()).unwrap();
        assert_eq!(packed.merged(BTreeMap::new()).unwrap().len(), MAX_FILES + 1);
    }

    /// While a file is damaged the automatic merge waits (it would keep only what reads): the
    /// write goes to a file of its own and every file stays.
    #[test]
    fn the_merge_waits_while_a_file_is_damaged() {
        let dir = tempfile::tempdir().unwrap();
        let mut packed = Packed::default();
        for i in 0..MAX_FILES {
            packed.write(dir.path(), records(&[(&format!("import/{i:02}"), "value")])).unwrap();
        }
        let damaged = packed.files()[MAX_FILES / 2].path.clone();
        let mut bytes = std::fs::read(&damaged).unwrap();
        let at = bytes.len() - CHECKSUM - RECORD_SUM - 2;
        bytes[at] ^= 0x01;
        std::fs::write(&damaged, bytes).unwrap();
        let (mut packed, _) = Packed::load(dir.path(), Packed::default()).unwrap();
        packed.write(dir.path(), records(&[("import/new", "v")])).unwrap();
        assert_eq!(std::fs::read_dir(dir.path().join(DIR)).unwrap().count(), MAX_FILES + 1);
        let err = packed.merged(BTreeMap::new()).unwrap_err().to_string();
        assert!(err.contains(&damaged.display().to_string()), "{err}");
        assert!(matches!(packed.resolve("import/07"), Resolved::Damaged(_)));
        assert_eq!(value(&packed, "import/09"), Some(Ok("value".into())));
    }

    /// Every one-bit flip of the newer of two files (issue 28.2): a reader never gets an old
    /// value back, the damage is said by name (resolving it, listing its names, merging), and
    /// it stays where it is: every other record still reads. Under format 1's rule a damaged
    /// record hid the names on both sides of it too, so that with a few names one flip hid
    /// every session.
    #[test]
    fn a_damaged_record_is_said_and_every_other_record_still_reads() {
        let dir = tempfile::tempdir().unwrap();
        let mut packed = Packed::default();
        let names = ["import/a", "import/b", "import/c", "refs/sessions/s", "times/a"];
        packed
            .write(dir.path(), names.iter().map(|n| (n.to_string(), format!("old {n}").into_bytes())).collect())
            .unwrap();
        packed
            .write(dir.path(), names.iter().map(|n| (n.to_string(), format!("new {n}").into_bytes())).collect())
            .unwrap();
        let path = packed.files()[0].path.clone();
        let good = std::fs::read(&path).unwrap();
        for i in 0..good.len() {
            for bit in [0x01, 0x80] {
                let mut bad = good.clone();
                bad[i] ^= bit;
                std::fs::write(&path, &bad).unwrap();
                let packed = match Packed::load(dir.path(), Packed::default()) {
                    Ok((p, _)) => p,
                    Err(e) => {
                        assert!(i < 12 && e.to_string().contains("packed file"), "flip at {i}: {e}");
                        continue;
                    }
                };
                let mut damaged = Vec::new();
                for name in names {
                    let got = match name.starts_with(ADDED) {
                        true => packed.all(name).map(|v| String::from_utf8_lossy(&v.concat()).into_owned()),
                        false => value(&packed, name).unwrap_or_else(|| panic!("flip at {i}: {name} missing")),
                    };
                    match got {
                        Ok(v) if name.starts_with(ADDED) => assert_eq!(v, format!("old {name}new {name}")),
                        Ok(v) => assert_eq!(v, format!("new {name}"), "flip at {i}"),
                        Err(what) => damaged.push((name, what)),
                    }
                }
                assert!(damaged.len() <= 1, "flip at {i}: one flip damaged {damaged:?}");
                assert!(!packed.problems().is_empty(), "flip at {i} unseen");
                assert!(packed.merged(BTreeMap::new()).is_err(), "flip at {i}: merged anyway");
                for (name, what) in damaged {
                    assert!(what.contains(&path.display().to_string()), "{what}");
                    let prefix = &name[..name.find('/').unwrap() + 1];
                    assert_eq!(packed.names(prefix).unwrap_err(), what, "flip at {i}: listing {prefix}");
                }
            }
        }
    }

    /// A format 1 file still reads; a damaged record there may have had any name between its
    /// neighbours', so those read as damaged (never as an older record).
    #[test]
    fn a_format_1_file_still_reads_and_its_damage_is_said() {
        let dir = tempfile::tempdir().unwrap();
        let mut packed = Packed::default();
        packed.write(dir.path(), records(&[("import/a", "old"), ("import/b", "old"), ("import/c", "old")])).unwrap();
        let newer = dir.path().join(DIR).join(format!("{PREFIX}{:020}", 2));
        let v1 = encode_v1(&records(&[("import/a", "new a"), ("import/b", "new b"), ("import/c", "new c")]));
        std::fs::write(&newer, &v1).unwrap();
        let (packed, _) = Packed::load(dir.path(), Packed::default()).unwrap();
        assert_eq!(value(&packed, "import/b"), Some(Ok("new b".into())));
        assert!(packed.problems().is_empty());
        for i in HEADER..v1.len() - CHECKSUM {
            let mut bad = v1.clone();
            bad[i] ^= 0x01;
            std::fs::write(&newer, &bad).unwrap();
            let Ok((packed, _)) = Packed::load(dir.path(), Packed::default()) else { continue };
            for name in ["import/a", "import/b", "import/c", "import/a0", "import/d"] {
                let got = value(&packed, name);
                assert!(
                    got.as_ref().is_none_or(|v| v.as_ref().is_err_and(|w| w.contains("damaged"))
                        || v.as_ref().is_ok_and(|v| v.starts_with("new"))),
                    "flip at {i}: {name} = {got:?}"
                );
            }
            assert!(!packed.problems().is_empty(), "flip at {i} unseen");
        }
    }

    #[test]
    fn damage_is_caught_never_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let mut packed = Packed::default();
        packed.write(dir.path(), records(&[("import/a", "state"), ("refs/x", "id")])).unwrap();
        let path = packed.files()[0].path.clone();
        let good = std::fs::read(&path).unwrap();
        let sound = [("import/a", &b"state"[..]), ("refs/x", b"id")];
        for cut in 0..good.len() {
            std::fs::write(&path, &good[..cut]).unwrap();
            // A cut file does not open, or its records past the cut are a gap it names.
            if let Ok(f) = PackedFile::open(&path) {
                assert!(f.verify().is_some() && !f.damage().is_empty(), "cut at {cut} unseen");
                assert!(f.records().all(|r| sound.contains(&r)), "cut at {cut}");
            }
        }
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x41;
            std::fs::write(&path, &bad).unwrap();
            // A flip breaks the header, or the file's checksum; a record it lands in is named.
            if let Ok(f) = PackedFile::open(&path) {
                assert!(f.verify().is_some(), "flip at {i} unseen");
                let read: Vec<_> = f.records().collect();
                assert!(read.len() == 2 || f.damage().len() == 1, "flip at {i}");
                assert!(read.iter().all(|r| sound.contains(r)), "flip at {i}");
            }
        }
    }
}

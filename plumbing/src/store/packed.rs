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

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::durable::{self, FileError};
use crate::Error;

const MAGIC: &[u8; 8] = b"SHAKPREF";
const VERSION: u32 = 1;
const CHECKSUM: usize = 32;
/// Bytes of each record's own checksum (blake3 of its name and value, cut).
const RECORD_SUM: usize = 16;
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
    records: Vec<Record>,
}

/// Where one record's name, value and checksum lie in the file.
struct Record {
    name: (usize, usize),
    value: (usize, usize),
    sum: usize,
}

impl PackedFile {
    /// Opens and maps a packed file and checks its layout (magic, version, every record in
    /// bounds, names UTF-8, sorted and unique); the checksum is `fsck`'s to check.
    pub fn open(path: &Path) -> Result<PackedFile, Error> {
        let seq = seq_of(path).ok_or_else(|| Error::corrupt(format!("{}: not a packed file name", path.display())))?;
        let file = std::fs::File::open(path).map_err(FileError::at(path, "open"))?;
        // SAFETY: packed files are never written once renamed into place (a new file replaces
        // them), so the mapping does not change under us.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(FileError::at(path, "map"))?;
        let records =
            layout(&map).map_err(|why| Error::corrupt(format!("{}: bad packed file: {why}", path.display())))?;
        Ok(PackedFile { path: path.to_path_buf(), seq, map, records })
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

    /// Returns the value of record `name`, if this file has a sound one (a damaged record
    /// reads as absent: `fsck` names it).
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        let i = self.records.binary_search_by(|r| self.name(r).cmp(name)).ok()?;
        let r = &self.records[i];
        self.sound(r).then(|| &self.map[r.value.0..r.value.1])
    }

    /// Returns every sound record, sorted by name.
    pub fn records(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.records.iter().filter(|r| self.sound(r)).map(|r| (self.name(r), &self.map[r.value.0..r.value.1]))
    }

    /// Names the records whose bytes no longer match their checksum (`fsck`).
    pub fn damaged(&self) -> Vec<String> {
        let damaged = self.records.iter().filter(|r| !self.sound(r));
        damaged
            .map(|r| {
                format!(
                    "{}: record {:?} is damaged (checksum mismatch); it reads as absent",
                    self.path.display(),
                    self.name(r)
                )
            })
            .collect()
    }

    /// Checks the trailing checksum (`fsck`).
    pub fn verify(&self) -> Option<String> {
        let (body, sum) = self.map.split_at(self.map.len() - CHECKSUM);
        (blake3::hash(body).as_bytes() != sum).then(|| {
            format!("{}: packed file checksum mismatch (a byte changed since it was written)", self.path.display())
        })
    }
}

/// Parses the layout: magic, version, count, then `count` records of (u32 name length, name,
/// u64 value length, value, 16-byte record checksum), then the file's checksum.
fn layout(bytes: &[u8]) -> Result<Vec<Record>, &'static str> {
    let body_end = bytes.len().checked_sub(CHECKSUM).ok_or("too short")?;
    let body = &bytes[..body_end];
    let rest = body.strip_prefix(MAGIC).ok_or("wrong magic")?;
    let (version, rest) = rest.split_first_chunk::<4>().ok_or("too short")?;
    if u32::from_le_bytes(*version) != VERSION {
        return Err("unknown version");
    }
    let (count, _) = rest.split_first_chunk::<4>().ok_or("too short")?;
    let count = u32::from_le_bytes(*count) as usize;
    let mut at = MAGIC.len() + 8;
    let mut records: Vec<Record> = Vec::with_capacity(count.min(body.len() / 12));
    for _ in 0..count {
        let take = |at: &mut usize, n: usize| -> Result<(usize, usize), &'static str> {
            let end = at.checked_add(n).filter(|&e| e <= body_end).ok_or("a record runs past the end")?;
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
        let text = std::str::from_utf8(&body[name.0..name.1]).map_err(|_| "a name is not UTF-8")?;
        if let Some(last) = records.last() {
            if text.as_bytes() <= &body[last.name.0..last.name.1] {
                return Err("names not sorted and unique");
            }
        }
        records.push(Record { name, value, sum });
    }
    if at != body_end {
        return Err("bytes after the last record");
    }
    Ok(records)
}

/// Encodes records (sorted by the map) as one packed file.
fn encode(records: &BTreeMap<String, Vec<u8>>) -> Vec<u8> {
    let size: usize = records.iter().map(|(k, v)| 12 + k.len() + v.len() + RECORD_SUM).sum();
    let mut out = Vec::with_capacity(16 + size + CHECKSUM);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
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
}

impl Packed {
    /// Lists and opens the packed files in `store` (none when the folder does not exist),
    /// keeping those of `old` that are still there. A file listed and then removed was merged
    /// by a writer meanwhile: the caller lists again.
    pub fn load(store: &Path, old: Packed) -> Result<(Packed, bool), Error> {
        let dir = store.join(DIR);
        let read = match std::fs::read_dir(&dir) {
            Ok(r) => r,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Packed::default(), false)),
            Err(e) => return Err(FileError::at(&dir, "list")(e).into()),
        };
        let mut paths: Vec<PathBuf> =
            read.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| seq_of(p).is_some()).collect();
        paths.sort_by_key(|p| std::cmp::Reverse(seq_of(p)));
        let mut old = old.files;
        let mut files = Vec::with_capacity(paths.len());
        for path in paths {
            match old.iter().position(|f| f.path == path) {
                Some(i) => files.push(old.swap_remove(i)),
                None => match PackedFile::open(&path) {
                    Ok(f) => files.push(f),
                    Err(_) if !path.exists() => return Ok((Packed { files }, true)),
                    Err(e) => return Err(e),
                },
            }
        }
        Ok((Packed { files }, false))
    }

    /// Opens every packed file in `store` for `fsck`: the ones that open, and a message for
    /// each that does not or whose checksum fails (those that open are read even so).
    pub fn check(store: &Path) -> Result<(Packed, Vec<String>), Error> {
        let dir = store.join(DIR);
        let read = match std::fs::read_dir(&dir) {
            Ok(r) => r,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Packed::default(), Vec::new())),
            Err(e) => return Err(FileError::at(&dir, "list")(e).into()),
        };
        let mut paths: Vec<PathBuf> =
            read.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| seq_of(p).is_some()).collect();
        paths.sort_by_key(|p| std::cmp::Reverse(seq_of(p)));
        let (mut files, mut problems) = (Vec::new(), Vec::new());
        for path in paths {
            match PackedFile::open(&path) {
                Ok(f) => {
                    problems.extend(f.verify());
                    problems.extend(f.damaged());
                    files.push(f);
                }
                Err(e) => problems.push(e.message),
            }
        }
        Ok((Packed { files }, problems))
    }

    /// The files, newest first.
    pub fn files(&self) -> &[PackedFile] {
        &self.files
    }

    /// The newest value of record `name`.
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.files.iter().find_map(|f| f.get(name))
    }

    /// Every value of record `name`, oldest first (for the records that add up).
    pub fn all<'p>(&'p self, name: &'p str) -> impl Iterator<Item = &'p [u8]> {
        self.files.iter().rev().filter_map(move |f| f.get(name))
    }

    /// Every name with its newest value (the records that add up: all their lines, oldest
    /// first), laid over `base` (older records, e.g. loose files), sorted by name.
    pub fn merged(&self, mut base: BTreeMap<String, Vec<u8>>) -> BTreeMap<String, Vec<u8>> {
        for f in self.files.iter().rev() {
            for (name, value) in f.records() {
                layer(&mut base, name, value);
            }
        }
        base
    }

    /// Writes `records` as the next packed file; when there are [`MAX_FILES`] already, the
    /// next file holds every record instead ([`Packed::replace`]). The caller holds the store's
    /// write lock and loaded `self` under it.
    pub fn write(&mut self, store: &Path, records: BTreeMap<String, Vec<u8>>) -> Result<(), Error> {
        if records.is_empty() {
            return Ok(());
        }
        if self.files.len() >= MAX_FILES {
            let mut all = self.merged(BTreeMap::new());
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
    /// durably, first). The caller holds the store's write lock.
    pub fn replace(&mut self, store: &Path, records: BTreeMap<String, Vec<u8>>) -> Result<(), Error> {
        let written = self.put(store, &records)?;
        for old in std::mem::take(&mut self.files) {
            std::fs::remove_file(&old.path).map_err(FileError::at(&old.path, "remove"))?;
        }
        self.files.push(written);
        Ok(())
    }

    /// Writes the next packed file durably (temp, fsync, rename, folder fsync) and opens it.
    fn put(&self, store: &Path, records: &BTreeMap<String, Vec<u8>>) -> Result<PackedFile, Error> {
        let seq = self.files.first().map_or(1, |f| f.seq + 1);
        let path = store.join(DIR).join(format!("{PREFIX}{seq:020}"));
        durable::write(&path, &encode(records))?;
        PackedFile::open(&path)
    }
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

    #[test]
    fn newest_wins_times_add_up_and_merging_keeps_both() {
        let dir = tempfile::tempdir().unwrap();
        let mut packed = Packed::default();
        packed.write(dir.path(), records(&[("import/a", "1"), ("refs/sessions/s", "x"), ("times/a", "t1\n")])).unwrap();
        packed.write(dir.path(), records(&[("import/a", "2"), ("times/a", "t2\n")])).unwrap();
        let (mut packed, _) = Packed::load(dir.path(), Packed::default()).unwrap();
        assert_eq!(packed.files().len(), 2);
        assert_eq!(packed.get("import/a"), Some(&b"2"[..]));
        assert_eq!(packed.get("refs/sessions/s"), Some(&b"x"[..]));
        assert_eq!(packed.get("import/b"), None);
        assert_eq!(packed.all("times/a").collect::<Vec<_>>(), [&b"t1\n"[..], b"t2\n"]);
        let all = packed.merged(records(&[("times/a", "t0\n"), ("import/a", "0"), ("import/c", "loose")]));
        packed.replace(dir.path(), all).unwrap();
        let (packed, _) = Packed::load(dir.path(), Packed::default()).unwrap();
        assert_eq!(packed.files().len(), 1);
        assert_eq!(packed.files()[0].seq, 3);
        assert_eq!(packed.get("times/a"), Some(&b"t0\nt1\nt2\n"[..]));
        assert_eq!(packed.get("import/a"), Some(&b"2"[..]));
        assert_eq!(packed.get("import/c"), Some(&b"loose"[..]));
        assert!(packed.files()[0].verify().is_none());
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
        assert_eq!(packed.merged(BTreeMap::new()).len(), MAX_FILES + 1);
    }

    #[test]
    fn damage_is_caught_never_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let mut packed = Packed::default();
        packed.write(dir.path(), records(&[("import/a", "state"), ("refs/x", "id")])).unwrap();
        let path = packed.files()[0].path.clone();
        let good = std::fs::read(&path).unwrap();
        for cut in 0..good.len() {
            std::fs::write(&path, &good[..cut]).unwrap();
            assert!(PackedFile::open(&path).is_err(), "cut at {cut} accepted");
        }
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x41;
            std::fs::write(&path, &bad).unwrap();
            // A flip breaks the layout or the checksum; a record it lands in reads as absent.
            if let Ok(f) = PackedFile::open(&path) {
                assert!(f.verify().is_some(), "flip at {i} unseen");
                let sound: Vec<_> = f.records().collect();
                assert!(sound.len() == 2 || f.damaged().len() == 1, "flip at {i}");
                assert!(
                    sound.iter().all(|r| [("import/a", &b"state"[..]), ("refs/x", b"id")].contains(r)),
                    "flip at {i}"
                );
            }
        }
    }
}

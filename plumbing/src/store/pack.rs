//! Pack files and their indexes: the only place objects live (`docs/format.md`, "Packs").
//!
//! A pack is written once, through a temp file, fsync-ed and renamed into place, then never
//! touched again; only then is it mmap-ed (a file truncated under a live map raises SIGBUS).
//! The index (fan-out table, sorted ids, offsets) is renamed last, so a pack without an index is
//! an interrupted write and is ignored.

use std::collections::HashSet;
use std::fs::File;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use crate::durable::FileError;
use crate::id::{HexPrefix, Kind, ObjectId};

/// What reading or writing a pack can fail with, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    /// The pack or its index does not hold what the format says.
    #[error("{}: {why}", path.display())]
    Corrupt {
        /// The `.pack` or `.idx` file.
        path: PathBuf,
        /// What is wrong, and where.
        why: String,
    },
    /// The record of object `id` is not where or what its index row says.
    #[error("{}: object {id}: {source}", path.display())]
    BadObject {
        /// The `.pack` file.
        path: PathBuf,
        /// The object the index row names.
        id: ObjectId,
        /// What is wrong with its record.
        source: BadRecord,
    },
    /// A pack the index names is gone (a store's packs are never removed but by a writer that
    /// merged them).
    #[error("{}: cannot open: {source}", path.display())]
    Vanished {
        /// The file that is not there.
        path: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
    /// The system refused a step (open, write, fsync, rename).
    #[error(transparent)]
    File(#[from] FileError),
}

/// Why a record of a pack cannot be read ([`PackError::BadObject`]).
#[derive(Debug, thiserror::Error)]
pub enum BadRecord {
    /// The offset lies outside the pack's records.
    #[error("record offset {0} is outside the pack")]
    Outside(usize),
    /// The kind byte is no kind.
    #[error("unknown kind code {code} at offset {offset}")]
    UnknownKind {
        /// The byte read.
        code: u8,
        /// Where the record starts.
        offset: usize,
    },
    /// The length runs past the end of the pack.
    #[error("record at offset {offset} claims {len} bytes, past the end of the pack")]
    PastTheEnd {
        /// Where the record starts.
        offset: usize,
        /// The length it claims.
        len: usize,
    },
}

impl PackError {
    fn corrupt(path: &Path, why: impl Into<String>) -> PackError {
        PackError::Corrupt { path: path.to_path_buf(), why: why.into() }
    }

    /// Tells whether the system refused a step (the store may be fine; the answer is unknown).
    pub fn is_io(&self) -> bool {
        matches!(self, PackError::File(_))
    }

    /// Tells whether the error is damage in the pack: every error that is not the system's.
    pub fn is_damage(&self) -> bool {
        !self.is_io()
    }
}

type Result<T> = std::result::Result<T, PackError>;

/// First 8 bytes of every pack file.
pub const PACK_MAGIC: &[u8; 8] = b"SHAKPACK";
/// First 8 bytes of every index file.
pub const IDX_MAGIC: &[u8; 8] = b"SHAKIDX\0";
/// The pack and index format version this code writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// Magic (8) + version (4) + reserved (4).
const HEADER_LEN: usize = 16;
/// Kind (1) + length (8) before each object's bytes.
const RECORD_HEADER_LEN: usize = 9;
const FANOUT_LEN: usize = 256 * 4;
/// How many interpolation probes [`Pack::find`] makes before it bisects.
const INTERPOLATIONS: usize = 3;
/// Id (32) + offset (8) per object in the index.
const IDX_ROW_LEN: usize = 40;
/// Pack length (8) + pack checksum (32) + index checksum (32).
const IDX_TRAILER_LEN: usize = 72;
const CHECKSUM_LEN: usize = 32;

/// One object read from a pack, borrowing the mapped bytes.
#[derive(Clone, Copy, Debug)]
pub struct Object<'a> {
    /// What kind of object it is.
    pub kind: Kind,
    /// Its canonical bytes (what the id hashes, after the typed header).
    pub bytes: &'a [u8],
}

/// A finished pack and its index, both mapped.
pub struct Pack {
    /// The `.pack` file.
    pub path: PathBuf,
    /// The `.idx` file.
    pub idx_path: PathBuf,
    pack: Mmap,
    idx: Mmap,
    count: usize,
}

impl Pack {
    /// Maps a pack through its index (`pack-….idx` beside `pack-….pack`) and checks the
    /// structure that lookups rely on; content hashes are left to [`Pack::verify`].
    pub fn open(idx_path: &Path) -> Result<Pack> {
        let path = idx_path.with_extension("pack");
        let idx = map(idx_path)?;
        let pack = map(&path)?;
        if idx.len() < HEADER_LEN + FANOUT_LEN + IDX_TRAILER_LEN || &idx[..8] != IDX_MAGIC {
            return Err(PackError::corrupt(idx_path, "not a shake pack index (bad magic or too short)"));
        }
        let version = u32_at(&idx, 8);
        if version != FORMAT_VERSION {
            return Err(PackError::corrupt(
                idx_path,
                format!("index format version {version}, this shake reads {FORMAT_VERSION}"),
            ));
        }
        let count = u32_at(&idx, 12) as usize;
        if idx.len() != HEADER_LEN + FANOUT_LEN + count * IDX_ROW_LEN + IDX_TRAILER_LEN {
            return Err(PackError::corrupt(
                idx_path,
                format!("index length {} does not fit its {count} objects", idx.len()),
            ));
        }
        let mut previous = 0;
        for b in 0..256 {
            let n = u32_at(&idx, HEADER_LEN + b * 4);
            if n < previous {
                return Err(PackError::corrupt(idx_path, format!("fan-out table is not monotonic at byte {b:02x}")));
            }
            previous = n;
        }
        if previous as usize != count {
            return Err(PackError::corrupt(idx_path, format!("fan-out table ends at {previous}, index holds {count}")));
        }
        let pack_len = u64_at(&idx, idx.len() - IDX_TRAILER_LEN);
        if pack.len() as u64 != pack_len {
            return Err(PackError::corrupt(
                &path,
                format!("pack is {} bytes, its index says {pack_len} (truncated or overwritten)", pack.len()),
            ));
        }
        if pack.len() < HEADER_LEN + CHECKSUM_LEN || &pack[..8] != PACK_MAGIC || u32_at(&pack, 8) != FORMAT_VERSION {
            return Err(PackError::corrupt(&path, format!("not a shake pack of format {FORMAT_VERSION} (bad header)")));
        }
        Ok(Pack { path, idx_path: idx_path.to_path_buf(), pack, idx, count })
    }

    /// Returns how many objects the pack holds.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Tells whether the pack holds no object.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Returns the size of the pack and index files together.
    pub fn disk_bytes(&self) -> u64 {
        (self.pack.len() + self.idx.len()) as u64
    }

    /// Returns the pack's checksum (its last 32 bytes, whose hex starts its name).
    pub fn checksum(&self) -> [u8; 32] {
        self.pack[self.pack.len() - CHECKSUM_LEN..].try_into().unwrap_or([0; 32])
    }

    /// Returns the id in index row `i`.
    pub fn id_at(&self, i: usize) -> ObjectId {
        let start = HEADER_LEN + FANOUT_LEN + i * 32;
        let mut id = [0u8; 32];
        id.copy_from_slice(&self.idx[start..start + 32]);
        ObjectId(id)
    }

    fn offset_at(&self, i: usize) -> u64 {
        u64_at(&self.idx, HEADER_LEN + FANOUT_LEN + self.count * 32 + i * 8)
    }

    /// The index rows whose id starts with `first`: the fan-out table's bucket.
    fn bucket(&self, first: u8) -> std::ops::Range<usize> {
        let end = u32_at(&self.idx, HEADER_LEN + first as usize * 4) as usize;
        let start = match first {
            0 => 0,
            b => u32_at(&self.idx, HEADER_LEN + (b as usize - 1) * 4) as usize,
        };
        start..end.max(start)
    }

    /// Returns the index row of `id`, in its fan-out bucket: a few interpolation probes on the
    /// ids' next 8 bytes (ids are hashes, spread evenly), then a binary search of the rows left.
    /// Each probe reads another part of the index, likely not cached: an import looks up every
    /// new object, which no pack holds, and bisecting a bucket of a large pack takes ~10 reads
    /// where interpolation takes ~3 (the binary search bounds a skewed bucket).
    pub fn find(&self, id: &ObjectId) -> Option<usize> {
        let range = self.bucket(id.0[0]);
        let (mut lo, mut hi) = (range.start, range.end);
        let key = |id: &ObjectId| {
            u64::from_be_bytes([id.0[1], id.0[2], id.0[3], id.0[4], id.0[5], id.0[6], id.0[7], id.0[8]])
        };
        let want = key(id);
        // The keys of rows lo..hi lie in floor..=ceil, and so does `want`.
        let (mut floor, mut ceil) = (0u64, u64::MAX);
        for _ in 0..INTERPOLATIONS {
            if hi - lo <= 8 {
                break;
            }
            let span = u128::from(ceil - floor) + 1;
            let mid = lo + (u128::from(want - floor) * (hi - lo) as u128 / span) as usize;
            let at = self.id_at(mid);
            match at.cmp(id) {
                std::cmp::Ordering::Less => (lo, floor) = (mid + 1, key(&at)),
                std::cmp::Ordering::Greater => (hi, ceil) = (mid, key(&at)),
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.id_at(mid).cmp(id) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// Adds every id starting with `prefix` to `out`.
    pub fn find_prefix(&self, prefix: &HexPrefix, out: &mut Vec<ObjectId>) {
        let range = self.bucket(prefix.bytes[0]);
        let (mut lo, mut hi) = (range.start, range.end);
        // Lower bound of the prefix (its digits padded with zeros), then scan while it matches.
        let floor = ObjectId(prefix.bytes);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.id_at(mid) < floor {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        out.extend((lo..range.end).map(|i| self.id_at(i)).take_while(|id| prefix.matches(id)));
    }

    /// Reads the object in index row `i`, checking that its record lies inside the pack.
    pub fn object_at(&self, i: usize) -> Result<Object<'_>> {
        let id = self.id_at(i);
        let offset = usize::try_from(self.offset_at(i)).unwrap_or(usize::MAX);
        self.record(offset).map_err(|source| PackError::BadObject { path: self.path.clone(), id, source })
    }

    /// Parses the record at `offset`; on failure says why, for the caller to name the object.
    fn record(&self, offset: usize) -> std::result::Result<Object<'_>, BadRecord> {
        let body_end = self.pack.len() - CHECKSUM_LEN;
        if offset < HEADER_LEN || offset.saturating_add(RECORD_HEADER_LEN) > body_end {
            return Err(BadRecord::Outside(offset));
        }
        let code = self.pack[offset];
        let kind = Kind::from_code(code).ok_or(BadRecord::UnknownKind { code, offset })?;
        let len = usize::try_from(u64_at(&self.pack, offset + 1)).unwrap_or(usize::MAX);
        let start = offset + RECORD_HEADER_LEN;
        if start.saturating_add(len) > body_end {
            return Err(BadRecord::PastTheEnd { offset, len });
        }
        Ok(Object { kind, bytes: &self.pack[start..start + len] })
    }

    /// Re-checks everything: both checksums, sorted ids, every record's bounds and hash, and
    /// that the records cover the pack exactly. Returns one message per problem, naming the file
    /// and, where there is one, the object.
    pub fn verify(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let name = self.path.display();
        let body = &self.pack[..self.pack.len() - CHECKSUM_LEN];
        let sum = blake3::hash(body);
        if sum.as_bytes() != &self.pack[body.len()..] {
            problems.push(format!("{name}: pack checksum does not match its content"));
        }
        let idx_body = &self.idx[..self.idx.len() - CHECKSUM_LEN];
        if blake3::hash(idx_body).as_bytes() != &self.idx[idx_body.len()..] {
            problems.push(format!("{}: index checksum does not match its content", self.idx_path.display()));
        }
        if &self.idx[self.idx.len() - 64..self.idx.len() - 32] != sum.as_bytes() {
            problems
                .push(format!("{}: index belongs to another pack (pack checksum differs)", self.idx_path.display()));
        }
        let mut offsets = Vec::with_capacity(self.count);
        for i in 0..self.count {
            let id = self.id_at(i);
            if i > 0 && self.id_at(i - 1) >= id {
                problems.push(format!("{}: ids not sorted at row {i} ({id})", self.idx_path.display()));
            }
            if !self.bucket(id.0[0]).contains(&i) {
                problems.push(format!("{}: object {id} is outside its fan-out bucket", self.idx_path.display()));
            }
            let offset = usize::try_from(self.offset_at(i)).unwrap_or(usize::MAX);
            match self.record(offset) {
                Err(why) => problems.push(format!("{name}: object {id}: {why}")),
                Ok(obj) => {
                    let actual = ObjectId::hash(obj.kind, obj.bytes);
                    if actual != id {
                        problems.push(format!(
                            "{name}: object {id}: content hashes to {actual} (corrupt {} bytes)",
                            obj.kind
                        ));
                    }
                    offsets.push((offset, offset + RECORD_HEADER_LEN + obj.bytes.len()));
                }
            }
        }
        offsets.sort_unstable();
        let mut at = HEADER_LEN;
        for (start, end) in offsets {
            if start != at {
                problems.push(format!("{name}: bytes {at}..{start} are not an indexed record"));
            }
            at = at.max(end);
        }
        if problems.is_empty() && at != body.len() {
            problems.push(format!("{name}: bytes {at}..{} are not an indexed record", body.len()));
        }
        problems
    }
}

/// The object ids a pack index lists, and the checksum of the pack it indexes, read from the
/// index alone (a remote's, whose pack is not here: `remote`); `None` unless its magic,
/// version, length and own checksum are right and the ids are sorted.
pub fn index_ids(idx: &[u8]) -> Option<(Vec<ObjectId>, [u8; 32])> {
    if idx.len() < HEADER_LEN + FANOUT_LEN + IDX_TRAILER_LEN || &idx[..8] != IDX_MAGIC {
        return None;
    }
    let count = u32_at(idx, 12) as usize;
    let sound = u32_at(idx, 8) == FORMAT_VERSION
        && idx.len() == HEADER_LEN + FANOUT_LEN + count.checked_mul(IDX_ROW_LEN)? + IDX_TRAILER_LEN;
    let (body, sum) = idx.split_at(idx.len() - CHECKSUM_LEN);
    if !sound || blake3::hash(body).as_bytes() != sum {
        return None;
    }
    let start = HEADER_LEN + FANOUT_LEN;
    let ids: Vec<ObjectId> =
        idx[start..start + count * 32].chunks_exact(32).map(|c| ObjectId(c.try_into().unwrap_or([0; 32]))).collect();
    let pack_sum = idx[idx.len() - 64..idx.len() - 32].try_into().ok()?;
    ids.windows(2).all(|w| w[0] < w[1]).then_some((ids, pack_sum))
}

/// Writes one new pack: records stream to a temp file as they come, the index is built at the end.
pub struct PackWriter {
    dir: PathBuf,
    file: BufWriter<Hashing>,
    offset: u64,
    rows: Vec<(ObjectId, u64)>,
    index: HashSet<ObjectId, BuildHasherDefault<IdHasher>>,
}

/// Hashes an object id for [`PackWriter`]'s set by its first bytes: ids are blake3 output,
/// uniform already, so SipHash over them (a few percent of an import) buys nothing.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // The length prefix arrives here too (a constant, xor-ed in: the hash stays uniform).
        let mut first = [0u8; 8];
        let n = bytes.len().min(8);
        first[..n].copy_from_slice(&bytes[..n]);
        self.0 ^= u64::from_le_bytes(first);
    }
}

impl PackWriter {
    /// Starts a pack in `dir` (the store's `packs/` folder, created if needed).
    pub fn new(dir: &Path) -> Result<PackWriter> {
        crate::durable::private_dir(dir)?;
        let tmp = tempfile::Builder::new()
            .prefix("tmp-pack-")
            .tempfile_in(dir)
            .map_err(FileError::at(dir, "create a temp file in"))?;
        let mut writer = PackWriter {
            dir: dir.to_path_buf(),
            file: BufWriter::with_capacity(1 << 20, Hashing { file: tmp, hasher: blake3::Hasher::new() }),
            offset: 0,
            rows: Vec::new(),
            index: HashSet::default(),
        };
        let mut header = [0u8; HEADER_LEN];
        header[..8].copy_from_slice(PACK_MAGIC);
        header[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        writer.write(&header)?;
        Ok(writer)
    }

    /// Tells whether this pack already holds `id`.
    pub fn contains(&self, id: &ObjectId) -> bool {
        self.index.contains(id)
    }

    /// Appends an object whose id the caller computed.
    pub fn add(&mut self, id: ObjectId, kind: Kind, bytes: &[u8]) -> Result<()> {
        self.add_new(id, kind, bytes).map(|_| ())
    }

    /// Appends an object whose id the caller computed unless this pack holds it already;
    /// returns whether it was new (one look-up where `contains` then `add` take two).
    pub fn add_new(&mut self, id: ObjectId, kind: Kind, bytes: &[u8]) -> Result<bool> {
        if !self.index.insert(id) {
            return Ok(false);
        }
        self.rows.push((id, self.offset));
        let mut header = [0u8; RECORD_HEADER_LEN];
        header[0] = kind.code();
        header[1..].copy_from_slice(&(bytes.len() as u64).to_le_bytes());
        self.write(&header)?;
        self.write(bytes)?;
        Ok(true)
    }

    /// Returns how many objects were added.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Tells whether nothing was added.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.offset += bytes.len() as u64;
        self.file.write_all(bytes).map_err(FileError::at(&self.dir, "write a pack in"))?;
        Ok(())
    }

    /// Finishes the pack: checksum, fsync, rename, then the index the same way, then the folder.
    /// Returns the index path, or `None` when nothing was added (no file is left behind).
    pub fn finish(mut self) -> Result<Option<PathBuf>> {
        if self.rows.is_empty() {
            return Ok(None);
        }
        let io = FileError::at(&self.dir, "write a pack in");
        let Hashing { file: mut tmp, hasher } = self.file.into_inner().map_err(|e| io(e.into_error()))?;
        let sum = hasher.finalize();
        tmp.write_all(sum.as_bytes()).map_err(io)?;
        let pack_len = self.offset + CHECKSUM_LEN as u64;
        tmp.as_file().sync_all().map_err(io)?;
        let name = format!("pack-{}", &sum.to_hex()[..40]);
        let pack_path = self.dir.join(format!("{name}.pack"));
        tmp.persist(&pack_path).map_err(|e| io(e.error))?;

        sort_rows(&mut self.rows);
        let idx = encode_index(&self.rows, pack_len, sum.as_bytes());
        let idx_path = self.dir.join(format!("{name}.idx"));
        // Renamed (and the folder synced) after the pack: a pack without an index is ignored.
        crate::durable::write(&idx_path, &idx)?;
        Ok(Some(idx_path))
    }
}

/// The pack's temp file, hashing what goes through: under the `BufWriter`, so blake3 sees
/// megabyte blocks (fast, SIMD across chunks) rather than one small record at a time.
struct Hashing {
    file: tempfile::NamedTempFile,
    hasher: blake3::Hasher,
}

impl Write for Hashing {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// Returns the bytes on disk (pack and index) of a pack holding objects of these sizes, as
/// [`PackWriter`] writes it; 0 for no objects (no file is written).
pub fn packed_bytes(sizes: &[usize]) -> u64 {
    if sizes.is_empty() {
        return 0;
    }
    let pack = HEADER_LEN + sizes.iter().map(|n| RECORD_HEADER_LEN + n).sum::<usize>() + CHECKSUM_LEN;
    let idx = HEADER_LEN + FANOUT_LEN + sizes.len() * IDX_ROW_LEN + IDX_TRAILER_LEN;
    (pack + idx) as u64
}

/// Rebuilds the index of a complete pack whose index is gone (deleted, or a writer died between
/// the two renames). Returns the index path, or `None` when the file is not a complete pack.
pub fn rebuild_index(pack_path: &Path) -> Result<Option<PathBuf>> {
    let Some((_, idx)) = lost_index(pack_path)? else { return Ok(None) };
    let idx_path = pack_path.with_extension("idx");
    crate::durable::write(&idx_path, &idx)?;
    Ok(Some(idx_path))
}

/// Computes the index of a pack file from its records (each object re-hashed for its id), with
/// the ids it holds, or `None` when the file is not a complete pack (its header, checksum or
/// records do not hold).
pub fn lost_index(pack_path: &Path) -> Result<Option<(Vec<ObjectId>, Vec<u8>)>> {
    let bytes = std::fs::read(pack_path).map_err(FileError::at(pack_path, "read"))?;
    if bytes.len() < HEADER_LEN + CHECKSUM_LEN || &bytes[..8] != PACK_MAGIC || u32_at(&bytes, 8) != FORMAT_VERSION {
        return Ok(None);
    }
    let body_end = bytes.len() - CHECKSUM_LEN;
    let sum = blake3::hash(&bytes[..body_end]);
    if sum.as_bytes() != &bytes[body_end..] {
        return Ok(None);
    }
    let mut rows = Vec::new();
    let mut at = HEADER_LEN;
    while at < body_end {
        let Some(kind) = Kind::from_code(bytes[at]) else { return Ok(None) };
        if at + RECORD_HEADER_LEN > body_end {
            return Ok(None);
        }
        let len = usize::try_from(u64_at(&bytes, at + 1)).unwrap_or(usize::MAX);
        let start = at + RECORD_HEADER_LEN;
        if start.saturating_add(len) > body_end {
            return Ok(None);
        }
        rows.push((ObjectId::hash(kind, &bytes[start..start + len]), at as u64));
        at = start + len;
    }
    sort_rows(&mut rows);
    let idx = encode_index(&rows, bytes.len() as u64, sum.as_bytes());
    Ok(Some((rows.into_iter().map(|(id, _)| id).collect(), idx)))
}

/// Sorts index rows by id: by their first 8 bytes as a number (one compare, no `memcmp` call),
/// the rest only on a tie.
fn sort_rows(rows: &mut [(ObjectId, u64)]) {
    let head = |id: &ObjectId| u64::from_be_bytes(id.0[..8].try_into().unwrap_or_default());
    rows.sort_unstable_by(|a, b| head(&a.0).cmp(&head(&b.0)).then_with(|| a.0.cmp(&b.0)));
}

/// Builds an index for sorted `(id, offset)` rows.
fn encode_index(rows: &[(ObjectId, u64)], pack_len: u64, pack_sum: &[u8; 32]) -> Vec<u8> {
    let mut idx = Vec::with_capacity(HEADER_LEN + FANOUT_LEN + rows.len() * IDX_ROW_LEN + IDX_TRAILER_LEN);
    idx.extend_from_slice(IDX_MAGIC);
    idx.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    idx.extend_from_slice(&(rows.len() as u32).to_le_bytes());
    let mut fanout = [0u32; 256];
    for (id, _) in rows {
        fanout[id.0[0] as usize] += 1;
    }
    let mut total = 0;
    for n in fanout {
        total += n;
        idx.extend_from_slice(&total.to_le_bytes());
    }
    rows.iter().for_each(|(id, _)| idx.extend_from_slice(&id.0));
    rows.iter().for_each(|(_, off)| idx.extend_from_slice(&off.to_le_bytes()));
    idx.extend_from_slice(&pack_len.to_le_bytes());
    idx.extend_from_slice(pack_sum);
    let sum = blake3::hash(&idx);
    idx.extend_from_slice(sum.as_bytes());
    idx
}

fn map(path: &Path) -> Result<Mmap> {
    // A pack that cannot be opened is corrupt only when it vanished or is not a file; a
    // permission or device error is reported as what it is.
    let file = File::open(path).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => PackError::Vanished { path: path.to_path_buf(), source },
        _ => FileError::at(path, "open")(source).into(),
    })?;
    // SAFETY: packs and indexes are renamed into place complete and never written again, so the
    // mapped bytes cannot change or shrink under us (see the module doc).
    unsafe { Mmap::map(&file) }.map_err(|e| PackError::corrupt(path, format!("cannot map: {e}")))
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(b)
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(feature = "cli")]
    use crate::Error;

    fn write_pack(dir: &Path, objects: &[(Kind, &[u8])]) -> PathBuf {
        let mut w = PackWriter::new(dir).unwrap();
        for (kind, bytes) in objects {
            w.add(ObjectId::hash(*kind, bytes), *kind, bytes).unwrap();
        }
        w.finish().unwrap().unwrap()
    }

    /// An index read alone (a remote's) gives its ids and its pack's checksum, and nothing when
    /// a byte of it changed.
    #[test]
    fn index_ids_reads_an_index_alone_and_refuses_a_damaged_one() {
        let dir = tempfile::tempdir().unwrap();
        let idx = write_pack(dir.path(), &[(Kind::Entry, b"a"), (Kind::Entry, b"b"), (Kind::Node, b"c")]);
        let pack = Pack::open(&idx).unwrap();
        let bytes = std::fs::read(&idx).unwrap();
        let (ids, sum) = index_ids(&bytes).unwrap();
        assert_eq!(ids, (0..3).map(|i| pack.id_at(i)).collect::<Vec<_>>());
        let pack_bytes = std::fs::read(&pack.path).unwrap();
        assert_eq!(sum, pack_bytes[pack_bytes.len() - 32..]);
        for at in [0, 12, HEADER_LEN + FANOUT_LEN + 5, bytes.len() - 1] {
            let mut flipped = bytes.clone();
            flipped[at] ^= 1;
            assert!(index_ids(&flipped).is_none(), "byte {at}");
        }
        assert!(index_ids(&bytes[..bytes.len() - 1]).is_none());
    }

    #[test]
    fn round_trip_lookup_and_prefix() {
        let dir = tempfile::tempdir().unwrap();
        // Buckets of ~80 rows: found by interpolation, then bisection.
        let objects: Vec<Vec<u8>> = (0..20_000).map(|i| format!("{{\"n\":{i}}}").into_bytes()).collect();
        let list: Vec<(Kind, &[u8])> = objects.iter().map(|b| (Kind::Entry, b.as_slice())).collect();
        let pack = Pack::open(&write_pack(dir.path(), &list)).unwrap();
        assert_eq!(pack.len(), 20_000);
        for bytes in &objects {
            let id = ObjectId::hash(Kind::Entry, bytes);
            let obj = pack.object_at(pack.find(&id).unwrap()).unwrap();
            assert_eq!((obj.kind, obj.bytes), (Kind::Entry, bytes.as_slice()));
            let mut hits = Vec::new();
            pack.find_prefix(&HexPrefix::parse(&id.short(12)).unwrap(), &mut hits);
            assert_eq!(hits, [id]);
        }
        for i in 0..20_000 {
            assert!(pack.find(&ObjectId::hash(Kind::Node, format!("{i}").as_bytes())).is_none());
        }
        let (first, last) = (pack.id_at(0), pack.id_at(pack.len() - 1));
        for (id, row) in [(first, 0), (last, pack.len() - 1)] {
            assert_eq!(pack.find(&id), Some(row));
        }
        for edge in [[0u8; 32], [0xff; 32]] {
            assert!(pack.find(&ObjectId(edge)).is_none());
        }
        assert!(pack.verify().is_empty());
        let sizes: Vec<usize> = objects.iter().map(Vec::len).collect();
        assert_eq!(pack.disk_bytes(), packed_bytes(&sizes), "the size a repack predicts is the size written");
    }

    /// A pack that cannot be started names the folder and the step, and is an I/O error (not
    /// the store's corruption) whose source is the system's error.
    #[cfg(feature = "cli")]
    #[test]
    fn a_refused_write_names_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        let packs = dir.path().join("packs");
        std::fs::write(&packs, b"a file, not a folder").unwrap();
        let e = PackWriter::new(&packs).err().unwrap();
        assert!(e.is_io(), "{e:?}");
        let e = Error::from(e);
        assert!(e.message.starts_with(&format!("cannot create the folder {}: ", packs.display())), "{}", e.message);
        assert_ne!(e.kind, crate::ErrorKind::Corrupt);
    }

    #[test]
    fn empty_writer_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        assert!(PackWriter::new(dir.path()).unwrap().finish().unwrap().is_none());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[cfg(feature = "cli")]
    #[test]
    fn flipped_byte_and_truncation_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let idx = write_pack(dir.path(), &[(Kind::Entry, b"{\"a\":1}"), (Kind::Entry, b"{\"b\":2}")]);
        let pack_path = idx.with_extension("pack");
        let mut bytes = std::fs::read(&pack_path).unwrap();
        bytes[HEADER_LEN + RECORD_HEADER_LEN + 2] ^= 1;
        std::fs::write(&pack_path, &bytes).unwrap();
        let problems = Pack::open(&idx).unwrap().verify();
        assert!(problems.iter().any(|p| p.contains("content hashes to")), "{problems:?}");
        bytes.truncate(bytes.len() - 5);
        std::fs::write(&pack_path, &bytes).unwrap();
        let err = Error::from(Pack::open(&idx).err().unwrap());
        assert!(err.message.contains("truncated"), "{}", err.message);
        assert!(err.message.starts_with(&format!("{}: ", pack_path.display())), "names the file: {}", err.message);
        assert_eq!(err.kind.exit_code(), 3);
        std::fs::write(&idx, b"garbage").unwrap();
        let err = Error::from(Pack::open(&idx).err().unwrap());
        assert_eq!(err.message, format!("{}: not a shake pack index (bad magic or too short)", idx.display()));
    }
}

//! Small, fixed-size summaries of things that grow with a session, for the meter's memo: a
//! [`Bloom`] filter of ids (may a new id be an old one?) and a [`Proof`] of a file's bytes (is a
//! touched file still byte for byte what was measured?). Both are only ever used to take a
//! shortcut: a "maybe" or a mismatch means measuring the whole file, never a wrong figure.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// A Bloom filter of strings: no false negatives, a few false positives. Its size is set when it
/// is made (16 bits per expected item, at least 512 bytes, at most [`Bloom::MAX_BYTES`]), so it
/// stays small whatever the session's length; past ~65,000 items it says "maybe" more often.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Bloom {
    bits: Vec<u64>,
}

/// Probes per item.
const PROBES: u64 = 4;

impl Bloom {
    /// The largest filter made.
    pub const MAX_BYTES: usize = 128 << 10;

    /// An empty filter sized for about `items` items.
    pub fn with_capacity(items: usize) -> Bloom {
        let words = (items * 16 / 64).clamp(64, Bloom::MAX_BYTES / 8).next_power_of_two();
        Bloom { bits: vec![0; words.min(Bloom::MAX_BYTES / 8)] }
    }

    /// Adds an item.
    pub fn insert(&mut self, item: &str) {
        for bit in self.probes(item) {
            self.bits[bit / 64] |= 1 << (bit % 64);
        }
    }

    /// Tells whether the item may have been added (`false`: it surely was not).
    pub fn may_contain(&self, item: &str) -> bool {
        self.probes(item).all(|bit| self.bits[bit / 64] & (1 << (bit % 64)) != 0)
    }

    /// The bit positions of an item: double hashing over two FNV-1a hashes (stable across builds
    /// and platforms, unlike std's hasher, since filters are stored).
    fn probes(&self, item: &str) -> impl Iterator<Item = usize> {
        let fnv = |basis: u64| item.bytes().fold(basis, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3));
        let (h1, h2) = (fnv(0xcbf2_9ce4_8422_2325), fnv(0x8422_2325_cbf2_9ce4) | 1);
        let mask = (self.bits.len() * 64 - 1) as u64;
        (0..PROBES).map(move |i| (h1.wrapping_add(i.wrapping_mul(h2)) & mask) as usize)
    }
}

/// The block the proof hashes by: appends re-hash at most one block of old bytes.
const BLOCK: u64 = 1 << 20;

/// A proof of a file's first `len` bytes: a chain of blake3 hashes over its whole 1 MiB blocks,
/// and a digest of that chain with the last, partial block. Checking it re-reads and re-hashes the
/// file (~2 GB/s here), far cheaper than parsing it; extending it after an append hashes only the
/// last old block and the new bytes.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Proof {
    /// Bytes proven.
    pub len: u64,
    /// The chain over the whole blocks before `len`.
    chain: [u8; 32],
    /// The chain with the partial block's bytes.
    digest: [u8; 32],
}

impl Proof {
    /// The proof of `bytes` (a whole file read into memory).
    pub fn of(bytes: &[u8]) -> Proof {
        Proof::extend_from(0, [0; 32], bytes)
    }

    /// Where the bytes an extension needs start: the last whole block before `len`.
    pub fn resume_at(&self) -> u64 {
        self.len / BLOCK * BLOCK
    }

    /// The proof of the file after an append, given its bytes from [`Proof::resume_at`] to its new
    /// end (the caller has checked that the old bytes there are still there, e.g. by `verify`ing).
    pub fn extended(&self, from_resume: &[u8]) -> Proof {
        Proof::extend_from(self.resume_at(), self.chain, from_resume)
    }

    /// Tells whether the file holds exactly the proven bytes (its length must be `len`).
    pub fn verify(&self, path: &Path) -> bool {
        let check = || -> std::io::Result<bool> {
            let mut file = std::fs::File::open(path)?;
            if file.metadata()?.len() != self.len {
                return Ok(false);
            }
            let mut chain = [0; 32];
            let mut buf = vec![0; BLOCK as usize];
            let mut at = 0;
            while at + BLOCK <= self.len {
                file.read_exact(&mut buf)?;
                chain = link(&chain, &buf);
                at += BLOCK;
            }
            let mut rest = Vec::with_capacity((self.len - at) as usize);
            file.seek(SeekFrom::Start(at))?;
            file.take(self.len - at).read_to_end(&mut rest)?;
            Ok(chain == self.chain && link(&chain, &rest) == self.digest)
        };
        check().unwrap_or(false)
    }

    fn extend_from(start: u64, mut chain: [u8; 32], bytes: &[u8]) -> Proof {
        let mut blocks = bytes.chunks_exact(BLOCK as usize);
        for block in blocks.by_ref() {
            chain = link(&chain, block);
        }
        let rest = blocks.remainder();
        Proof { len: start + bytes.len() as u64, chain, digest: link(&chain, rest) }
    }
}

fn link(chain: &[u8; 32], bytes: &[u8]) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(chain);
    h.update(bytes);
    *h.finalize().as_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bloom_has_no_false_negatives_and_few_false_positives() {
        let mut b = Bloom::with_capacity(10_000);
        (0..10_000).for_each(|i| b.insert(&format!("{i:08x}")));
        assert!((0..10_000).all(|i| b.may_contain(&format!("{i:08x}"))));
        let false_positives = (10_000..110_000).filter(|i| b.may_contain(&format!("{i:08x}"))).count();
        assert!(false_positives < 1_000, "{false_positives} of 100,000");
        assert!(Bloom::with_capacity(100_000_000).bits.len() * 8 <= Bloom::MAX_BYTES);
    }

    #[test]
    fn a_proof_extends_like_it_is_made_and_catches_any_change() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        // Lengths around the block size: the partial block empty, short, and whole.
        for (old, new) in [(10, 20), (BLOCK - 1, BLOCK + 1), (BLOCK, 3 * BLOCK + 7), (2 * BLOCK + 5, 2 * BLOCK + 6)] {
            let bytes: Vec<u8> = (0..new).map(|i| (i * 31 % 251) as u8).collect();
            let p = Proof::of(&bytes[..old as usize]);
            let grown = p.extended(&bytes[p.resume_at() as usize..]);
            assert_eq!(grown, Proof::of(&bytes), "{old} -> {new}");
            std::fs::write(&path, &bytes).unwrap();
            assert!(grown.verify(&path));
            assert!(!p.verify(&path), "another length");
            let mut changed = bytes.clone();
            changed[old as usize / 2] ^= 1;
            std::fs::write(&path, &changed).unwrap();
            assert!(!grown.verify(&path));
        }
    }
}

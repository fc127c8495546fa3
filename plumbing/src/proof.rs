//! A resumable proof of a file's bytes: a chain of blake3 hashes over its whole 1 MiB blocks and
//! a digest of that chain with the last, partial block. Checking one re-reads and re-hashes the
//! file (~2 GB/s here), far cheaper than parsing it; extending one after an append hashes only
//! the last old block and the new bytes, so neither the meter's memo nor the store's import
//! state must hash a file whole again to know its new proof.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// The block the proof hashes by: an extension re-hashes at most one block of old bytes.
pub const BLOCK: u64 = 1 << 20;

/// A proof of a file's first `len` bytes (see the module doc).
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
        let mut prover = Prover::default();
        prover.update(bytes);
        prover.proof()
    }

    /// Where the bytes an extension needs start: the last whole block before `len`.
    pub fn resume_at(&self) -> u64 {
        self.len / BLOCK * BLOCK
    }

    /// The proof of the file after an append, given its bytes from [`Proof::resume_at`] to its new
    /// end (the caller has checked that the old bytes there are still there, e.g. by `verify`ing).
    pub fn extended(&self, from_resume: &[u8]) -> Proof {
        let mut prover = self.prover();
        prover.update(from_resume);
        prover.proof()
    }

    /// A prover at [`Proof::resume_at`], to be fed the bytes from there on.
    pub fn prover(&self) -> Prover {
        Prover { len: self.resume_at(), chain: self.chain, partial: Vec::new() }
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
}

/// A proof being made over bytes fed in order, in pieces of any size; it holds at most one
/// block of them.
#[derive(Clone, Debug, Default)]
pub struct Prover {
    /// Bytes linked into `chain` (a multiple of [`BLOCK`]).
    len: u64,
    chain: [u8; 32],
    /// Bytes fed after `len`, fewer than a block.
    partial: Vec<u8>,
}

impl Prover {
    /// Feeds the next bytes.
    pub fn update(&mut self, mut bytes: &[u8]) {
        let block = BLOCK as usize;
        if !self.partial.is_empty() {
            let take = (block - self.partial.len()).min(bytes.len());
            self.partial.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.partial.len() < block {
                return;
            }
            self.chain = link(&self.chain, &self.partial);
            self.len += BLOCK;
            self.partial.clear();
        }
        let mut blocks = bytes.chunks_exact(block);
        for b in blocks.by_ref() {
            self.chain = link(&self.chain, b);
            self.len += BLOCK;
        }
        self.partial.extend_from_slice(blocks.remainder());
    }

    /// Bytes fed so far (with those before where it resumed).
    pub fn len(&self) -> u64 {
        self.len + self.partial.len() as u64
    }

    /// Tells whether nothing was fed (nor proven before).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The proof of the bytes fed so far.
    pub fn proof(&self) -> Proof {
        Proof { len: self.len(), chain: self.chain, digest: link(&self.chain, &self.partial) }
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

    #[test]
    fn a_prover_fed_in_any_pieces_proves_the_same() {
        let bytes: Vec<u8> = (0..3 * BLOCK + 11).map(|i| (i * 7 % 253) as u8).collect();
        let whole = Proof::of(&bytes);
        for piece in [1, 1000, BLOCK as usize - 1, BLOCK as usize, BLOCK as usize + 3] {
            let mut p = Prover::default();
            bytes.chunks(piece).for_each(|c| p.update(c));
            assert_eq!((p.proof(), p.len()), (whole.clone(), bytes.len() as u64), "pieces of {piece}");
        }
        assert_ne!(Proof::of(&bytes[1..]), whole);
    }
}

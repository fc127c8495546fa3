//! Small, fixed-size summaries of things that grow with a session, for the meter's memo: a
//! [`Bloom`] filter of ids (may a new id be an old one?) and a [`Proof`] of a file's bytes (is a
//! touched file still byte for byte what was measured?). Both are only ever used to take a
//! shortcut: a "maybe" or a mismatch means measuring the whole file, never a wrong figure.

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

/// The proof of a file's bytes the memo keeps (shared with the store's import state).
pub use shake_plumbing::proof::Proof;

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
}

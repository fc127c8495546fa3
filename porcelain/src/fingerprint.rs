//! Small, fixed-size summaries of things that grow with a session, for the meter's memo: a
//! [`Bloom`] filter of ids (may a new id be an old one?) and a [`Proof`] of a file's bytes (is a
//! touched file still byte for byte what was measured?). Both are only ever used to take a
//! shortcut: a "maybe" or a mismatch means measuring the whole file, never a wrong figure.

/// A Bloom filter of strings: no false negatives, a few false positives. Its size is set when it
/// is made (16 bits per expected item, at least 512 bytes, at most [`Bloom::MAX_BYTES`]), so it
/// stays bounded whatever the session's length; past ~520,000 items it says "maybe" more often
/// (at 1,000,000 items, for ~2.4% of new ones; see `docs/bench/notebook.md`, branch `claude2`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Bloom {
    #[serde(with = "words_as_bytes")]
    bits: Vec<u64>,
}

/// Probes per item.
const PROBES: u64 = 4;

impl Bloom {
    /// The largest filter made: read and written with the memo on every reading (~1 ms a MiB
    /// here), so it is what a session of a million ids may cost per turn.
    pub const MAX_BYTES: usize = 1 << 20;

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

    /// The filter's size in bytes.
    #[cfg(test)]
    pub fn len_bytes(&self) -> usize {
        self.bits.len() * 8
    }

    /// A filter of this size saying "maybe" of everything (one past its capacity, as it were).
    #[cfg(test)]
    pub fn saturated(&self) -> Bloom {
        Bloom { bits: vec![u64::MAX; self.bits.len()] }
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

/// A filter's words stored as one byte string (little-endian): bincode writes a `Vec<u64>` of
/// random words one varint at a time (9 bytes each, 2.5 ms a MiB each way here).
mod words_as_bytes {
    use serde::de::{Error, Visitor};

    pub fn serialize<S: serde::Serializer>(words: &[u64], s: S) -> Result<S::Ok, S::Error> {
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        s.serialize_bytes(&bytes)
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u64>, D::Error> {
        struct Words;
        impl Visitor<'_> for Words {
            type Value = Vec<u64>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a filter's words as a byte string of a power of two of them")
            }
            fn visit_bytes<E: Error>(self, bytes: &[u8]) -> Result<Vec<u64>, E> {
                let words = bytes.len() / 8;
                if !bytes.len().is_multiple_of(8) || !words.is_power_of_two() {
                    return Err(E::invalid_length(bytes.len(), &self));
                }
                Ok(bytes.chunks_exact(8).map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes"))).collect())
            }
            fn visit_byte_buf<E: Error>(self, bytes: Vec<u8>) -> Result<Vec<u64>, E> {
                self.visit_bytes(&bytes)
            }
        }
        d.deserialize_bytes(Words)
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

    #[test]
    fn a_filter_is_stored_as_its_bytes() {
        let mut b = Bloom::with_capacity(100);
        b.insert("abc");
        let config = bincode::config::standard();
        let bytes = bincode::serde::encode_to_vec(&b, config).unwrap();
        assert!(bytes.len() <= b.bits.len() * 8 + 4, "{} bytes", bytes.len());
        let (back, _): (Bloom, usize) = bincode::serde::decode_from_slice(&bytes, config).unwrap();
        assert_eq!(back, b);
        // Not a power of two of words: refused (the memo is then ignored), never a panic.
        let odd = bincode::serde::encode_to_vec(serde_bytes_of(&[0; 24]), config).unwrap();
        assert!(bincode::serde::decode_from_slice::<Bloom, _>(&odd, config).is_err());
    }

    /// A byte string as serde sees one.
    fn serde_bytes_of(bytes: &[u8]) -> impl serde::Serialize + '_ {
        struct B<'a>(&'a [u8]);
        impl serde::Serialize for B<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_bytes(self.0)
            }
        }
        B(bytes)
    }
}

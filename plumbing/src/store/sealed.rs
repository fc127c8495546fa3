//! Sealed cache files: the meter's memos (`<store>/cache/meter/<hash>`), written whole through
//! [`crate::durable::write_cache`], hold their bytes between a magic and the blake3 of them, so
//! that damage is told from what was written: a flipped byte inside bincode often still decodes,
//! and once printed 2,063,670,081 tokens. A memo that fails its checksum is measured again (and
//! replaced) by the meter, with a warning, and named by `fsck`; one without the magic is a memo
//! of an older shake, ignored.

use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"SHAKSEAL";
const CHECKSUM: usize = 32;

/// What a sealed file's bytes say.
#[derive(Debug, PartialEq, Eq)]
pub enum Unsealed<'b> {
    /// The bytes sealed, sound.
    Sound(&'b [u8]),
    /// Sealed, but the checksum fails: damaged.
    Damaged,
    /// Not sealed (no magic): an older shake's file.
    Unsealed,
}

/// `bytes`, sealed: the magic, the bytes, their blake3.
pub fn seal(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(MAGIC.len() + bytes.len() + CHECKSUM);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(bytes);
    out.extend_from_slice(blake3::hash(bytes).as_bytes());
    out
}

/// The bytes [`seal`] sealed in `file`, if sound.
pub fn unseal(file: &[u8]) -> Unsealed<'_> {
    let Some(rest) = file.strip_prefix(MAGIC) else { return Unsealed::Unsealed };
    match rest.split_at_checked(rest.len().saturating_sub(CHECKSUM)) {
        Some((bytes, sum)) if sum.len() == CHECKSUM && blake3::hash(bytes).as_bytes() == sum => Unsealed::Sound(bytes),
        _ => Unsealed::Damaged,
    }
}

/// The folder of the meter's memos in `store`.
pub fn memo_dir(store: &Path) -> PathBuf {
    store.join("cache").join("meter")
}

/// Names each damaged memo in `store` (`fsck`), and each older one in `notes`.
pub fn check_memos(store: &Path, problems: &mut Vec<String>, notes: &mut Vec<String>) {
    let Ok(read) = std::fs::read_dir(memo_dir(store)) else { return };
    let mut paths: Vec<PathBuf> = read.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        if path.file_name().is_some_and(|n| n.to_string_lossy().starts_with(crate::durable::TMP_PREFIX)) {
            continue;
        }
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) => {
                problems.push(format!("{}: cannot read the meter memo: {e}", path.display()));
                continue;
            }
        };
        match unseal(&bytes) {
            Unsealed::Sound(_) => {}
            Unsealed::Damaged => problems.push(format!(
                "{}: damaged meter memo (checksum mismatch); the meter measures again and replaces it, or delete it",
                path.display()
            )),
            Unsealed::Unsealed => notes.push(format!(
                "{}: a meter memo of an older shake (no checksum); ignored, replaced by the next reading",
                path.display()
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_flip_of_a_sealed_file_is_damage_or_unsealed() {
        let bytes = b"figures: 1234".to_vec();
        let sealed = seal(&bytes);
        assert_eq!(unseal(&sealed), Unsealed::Sound(&bytes[..]));
        assert_eq!(unseal(&bytes), Unsealed::Unsealed);
        for i in 0..sealed.len() {
            let mut bad = sealed.clone();
            bad[i] ^= 0x04;
            let want = if i < MAGIC.len() { Unsealed::Unsealed } else { Unsealed::Damaged };
            assert_eq!(unseal(&bad), want, "flip at {i}");
        }
        assert_eq!(unseal(&sealed[..sealed.len() - 1]), Unsealed::Damaged);
    }
}

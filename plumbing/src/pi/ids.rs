//! Fresh identifiers in pi's formats: UUIDv7 session ids and ISO timestamps.
//!
//! Randomness comes from blake3 over the clock, the process id and a counter: as unpredictable
//! as a session id needs, with no dependency. (Entry ids: `write::EntryWriter::fresh_id`.)

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

pub use crate::time::{iso, now_millis};

/// Returns 32 fresh pseudo-random bytes.
fn random_bytes() -> [u8; 32] {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = blake3::Hasher::new();
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    h.update(&now.as_nanos().to_le_bytes());
    h.update(&std::process::id().to_le_bytes());
    h.update(&COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    *h.finalize().as_bytes()
}

/// Returns a fresh UUIDv7 (pi's session ids), for the given Unix time in milliseconds.
pub fn uuid_v7(millis: u64) -> String {
    let mut b = random_bytes();
    b[..6].copy_from_slice(&millis.to_be_bytes()[2..]);
    b[6] = 0x70 | (b[6] & 0x0f);
    b[8] = 0x80 | (b[8] & 0x3f);
    let hex: String = b[..16].iter().map(|x| format!("{x:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_matches_javascript() {
        assert_eq!(iso(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso(1_795_251_635_000), "2026-11-21T09:00:35.000Z");
        assert_eq!(iso(1_709_164_800_123), "2024-02-29T00:00:00.123Z");
        assert_eq!(iso(1_766_574_413_530), "2025-12-24T11:06:53.530Z");
    }

    #[test]
    fn session_ids_are_uuid_v7() {
        let u = uuid_v7(1_795_251_635_000);
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "7");
        assert!(u.starts_with(&format!("{:08x}", 1_795_251_635_000_u64 >> 16)));
    }
}

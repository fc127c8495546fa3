//! Fresh identifiers in pi's formats: UUIDv7 session ids and ISO timestamps.
//!
//! Randomness comes from blake3 over the clock, the process id and a counter: as unpredictable
//! as a session id needs, with no dependency. (Entry ids: `write::EntryWriter::fresh_id`.)

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

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

/// Returns the time to stamp new entries with, in Unix milliseconds: `$SHAKE_TIMESTAMP` (ISO-8601
/// or milliseconds, for reproducible tests) or now.
pub fn now_millis() -> u64 {
    if let Some(fixed) = std::env::var("SHAKE_TIMESTAMP").ok().filter(|s| !s.is_empty()) {
        if let Some(ms) = fixed
            .parse::<u64>()
            .ok()
            .or_else(|| super::project::parse_iso_millis(&fixed).and_then(|m| u64::try_from(m).ok()))
        {
            return ms;
        }
    }
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Formats Unix milliseconds as JavaScript's `toISOString()` does: `2026-11-30T13:26:17.806Z`.
pub fn iso(millis: u64) -> String {
    let days = (millis / 86_400_000) as i64;
    let rest = millis % 86_400_000;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3_600_000,
        rest / 60_000 % 60,
        rest / 1000 % 60,
        rest % 1000
    )
}

/// Howard Hinnant's `civil_from_days`.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
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

//! Time as JavaScript has it: Unix milliseconds, `Date`'s ISO-8601 parsing and
//! `toISOString()` (every host writes its timestamps with them).

use std::time::{SystemTime, UNIX_EPOCH};

/// Returns the time to stamp new entries with, in Unix milliseconds: `$SHAKE_TIMESTAMP` (ISO-8601
/// or milliseconds, for reproducible tests) or now.
pub fn now_millis() -> u64 {
    if let Some(fixed) = std::env::var("SHAKE_TIMESTAMP").ok().filter(|s| !s.is_empty()) {
        if let Some(ms) =
            fixed.parse::<u64>().ok().or_else(|| parse_iso_millis(&fixed).and_then(|m| u64::try_from(m).ok()))
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

/// Parses the ISO-8601 forms JavaScript's `Date` accepts (`YYYY-MM-DD[THH:MM[:SS[.sss]]][Z|±HH:MM]`).
pub fn parse_iso_millis(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = s.get(r)?;
        part.bytes().all(|c| c.is_ascii_digit()).then(|| part.parse().ok())?
    };
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    if !(1..=12).contains(&month) || !(1..=days_in_month(year, month)).contains(&day) {
        return None;
    }
    let mut millis = days_from_civil(year, month, day) * 86_400_000;
    if b.len() == 10 {
        return Some(millis);
    }
    if b[10] != b'T' || b.len() < 16 || b[13] != b':' {
        return None;
    }
    let (hour, minute) = (num(11..13)?, num(14..16)?);
    let mut i = 16;
    let mut second = 0;
    let mut ms = 0;
    if b.get(i) == Some(&b':') {
        second = num(i + 1..i + 3)?;
        i += 3;
        if b.get(i) == Some(&b'.') {
            let start = i + 1;
            let mut end = start;
            while end < b.len() && b[end].is_ascii_digit() {
                end += 1;
            }
            if end == start {
                return None;
            }
            let digits = &s[start..end.min(start + 3)];
            ms = digits.parse::<i64>().ok()? * 10_i64.pow(3 - digits.len() as u32);
            i = end;
        }
    }
    if hour > 24 || minute > 59 || second > 59 || (hour == 24 && (minute, second, ms) != (0, 0, 0)) {
        return None;
    }
    millis += ((hour * 60 + minute) * 60 + second) * 1000 + ms;
    // `get`, not an index: a byte offset past the ASCII part may fall inside a character.
    match s.get(i..)? {
        "Z" => Some(millis),
        // Without an offset JavaScript reads a date-time as local time; shake runs in UTC terms.
        "" => Some(millis),
        rest if rest.len() == 6 && (rest.starts_with('+') || rest.starts_with('-')) && rest.get(3..4) == Some(":") => {
            let offset = (num(i + 1..i + 3)? * 60 + num(i + 4..i + 6)?) * 60_000;
            Some(if rest.starts_with('+') { millis - offset } else { millis + offset })
        }
        _ => None,
    }
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_dates_match_javascript() {
        assert_eq!(parse_iso_millis("1970-01-01T00:00:00.000Z"), Some(0));
        assert_eq!(parse_iso_millis("2026-11-21T09:00:35.000Z"), Some(1_795_251_635_000));
        assert_eq!(parse_iso_millis("2025-12-24T11:06:53.530Z"), Some(1_766_574_413_530));
        assert_eq!(parse_iso_millis("2026-11-21T10:00:35.000+01:00"), Some(1_795_251_635_000));
        assert_eq!(parse_iso_millis("2024-02-29"), Some(1_709_164_800_000));
        assert_eq!(parse_iso_millis("2023-02-29"), None);
        assert_eq!(parse_iso_millis("yesterday"), None);
    }
}

//! `created_at` timestamps.
//!
//! AgentScope stores `datetime.now().isoformat()`, the *local* time without
//! an offset. A component has no time zone database and no notion of the
//! user's zone, so toolhost stores UTC instead, read from the WASI wall clock
//! (`std::time::SystemTime`), in ISO 8601 with microseconds and an explicit
//! offset: `2026-08-22T10:15:30.123456+00:00`. That is what Python's
//! `datetime.now(timezone.utc).isoformat()` prints, so
//! `datetime.fromisoformat` reads it back on every Python version.

use std::time::{SystemTime, UNIX_EPOCH};

/// The current time as an ISO 8601 UTC timestamp (see the module docs).
pub fn now_iso() -> String {
    iso_utc(SystemTime::now())
}

/// `t` as `YYYY-MM-DDTHH:MM:SS.ffffff+00:00` (UTC, microseconds). Times
/// before 1970 are clamped to the epoch.
pub fn iso_utc(t: SystemTime) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let micros = since.subsec_micros();
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{micros:06}+00:00", rem / 3600, (rem % 3600) / 60, rem % 60)
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day)
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn formats_known_instants() {
        assert_eq!(iso_utc(UNIX_EPOCH), "1970-01-01T00:00:00.000000+00:00");
        // 2000-02-29 (a leap day in a century leap year) 12:34:56.789012.
        let t = UNIX_EPOCH + Duration::new(951_827_696, 789_012_345);
        assert_eq!(iso_utc(t), "2000-02-29T12:34:56.789012+00:00");
        // 2024-12-31T23:59:59 and the next second.
        let t = UNIX_EPOCH + Duration::from_secs(1_735_689_599);
        assert_eq!(iso_utc(t), "2024-12-31T23:59:59.000000+00:00");
        assert_eq!(iso_utc(t + Duration::from_secs(1)), "2025-01-01T00:00:00.000000+00:00");
        // 2100-03-01 (2100 is not a leap year).
        let t = UNIX_EPOCH + Duration::from_secs(4_107_542_400);
        assert_eq!(iso_utc(t), "2100-03-01T00:00:00.000000+00:00");
    }

    #[test]
    fn now_has_the_documented_shape() {
        let s = now_iso();
        assert_eq!(s.len(), "2026-08-22T10:15:30.123456+00:00".len(), "{s}");
        assert!(s.ends_with("+00:00") && s.as_bytes()[10] == b'T', "{s}");
    }
}

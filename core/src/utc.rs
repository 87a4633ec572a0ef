//! Calendar time in UTC, without a time-zone database: the one place that
//! turns a `SystemTime` into a date (the audit log's timestamps, the
//! comment on a remembered rule).

use std::time::{SystemTime, UNIX_EPOCH};

/// A point in time in UTC on the proleptic Gregorian calendar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UtcTime {
    /// The year (1970 and later for any `SystemTime` after the epoch).
    pub year: i64,
    /// 1–12.
    pub month: i64,
    /// 1–31.
    pub day: i64,
    /// 0–23.
    pub hour: u64,
    /// 0–59.
    pub minute: u64,
    /// 0–59.
    pub second: u64,
    /// 0–999.
    pub millis: u32,
}

impl UtcTime {
    /// `t` in UTC; a time before the epoch counts as the epoch.
    pub fn of(t: SystemTime) -> Self {
        let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
        let secs = d.as_secs();
        let (days, rem) = (secs / 86_400, secs % 86_400);
        // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
        let z = days as i64 + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = doy - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        let year = yoe + era * 400 + i64::from(month <= 2);
        Self {
            year,
            month,
            day,
            hour: rem / 3_600,
            minute: rem % 3_600 / 60,
            second: rem % 60,
            millis: d.subsec_millis(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn dates_across_leap_days_and_centuries() {
        let at = |secs: u64| UtcTime::of(UNIX_EPOCH + Duration::from_secs(secs));
        let epoch = at(0);
        assert_eq!((epoch.year, epoch.month, epoch.day, epoch.hour), (1970, 1, 1, 0));
        let leap = at(951_782_400); // 2000-02-29
        assert_eq!((leap.year, leap.month, leap.day), (2000, 2, 29));
        let t = UtcTime::of(UNIX_EPOCH + Duration::from_millis(1_764_627_362_500)); // 2025-12-01 22:16:02.500
        assert_eq!((t.year, t.month, t.day, t.hour, t.minute, t.second, t.millis), (2025, 12, 1, 22, 16, 2, 500));
    }
}

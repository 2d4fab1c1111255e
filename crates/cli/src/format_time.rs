//! Calendar formatting of F2FS timestamps, in UTC, without a date-time dependency.

/// Seconds in a day.
const SECS_PER_DAY: i64 = 86_400;

/// Formats seconds since the epoch as `YYYY-MM-DD HH:MM` in UTC (what `ls -l` shows).
///
/// Any `i64` is accepted: times before 1970 work, and absurd values from a corrupt
/// image still format instead of failing.
pub fn format_utc_minutes(secs: i64) -> String {
    let days = secs.div_euclid(SECS_PER_DAY);
    let secs_of_day = secs.rem_euclid(SECS_PER_DAY);
    let (year, month, day) = civil_from_days(days);
    let hour = secs_of_day / 3600;
    let minute = secs_of_day % 3600 / 60;
    format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02}")
}

/// Converts days since 1970-01-01 to a proleptic Gregorian (year, month, day).
///
/// Works in 400-year eras (146,097 days each) counted from 0000-03-01, so the leap day
/// falls at the end of each shifted year and needs no special case.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    const DAYS_PER_ERA: i64 = 146_097;
    // Days from 0000-03-01 to 1970-01-01.
    const EPOCH_SHIFT: i64 = 719_468;
    let shifted = days + EPOCH_SHIFT;
    let era = shifted.div_euclid(DAYS_PER_ERA);
    let day_of_era = shifted.rem_euclid(DAYS_PER_ERA); // 0..=146096
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146_096) / 365; // 0..=399
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100); // 0..=365
    let month_from_march = (5 * day_of_year + 2) / 153; // 0..=11, 0 is March
    let day = (day_of_year - (153 * month_from_march + 2) / 5 + 1) as u32;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::{civil_from_days, format_utc_minutes};

    #[test]
    fn known_dates() {
        assert_eq!(format_utc_minutes(0), "1970-01-01 00:00");
        assert_eq!(format_utc_minutes(59), "1970-01-01 00:00");
        assert_eq!(format_utc_minutes(951_782_400), "2000-02-29 00:00");
        assert_eq!(format_utc_minutes(1_700_000_000), "2023-11-14 22:13");
        assert_eq!(format_utc_minutes(4_107_542_399), "2100-02-28 23:59");
        assert_eq!(format_utc_minutes(4_107_542_400), "2100-03-01 00:00");
        assert_eq!(format_utc_minutes(-1), "1969-12-31 23:59");
        assert_eq!(format_utc_minutes(-86_400 * 365), "1969-01-01 00:00");
    }

    #[test]
    fn extremes_do_not_panic() {
        let _ = format_utc_minutes(i64::MIN);
        let _ = format_utc_minutes(i64::MAX);
    }

    #[test]
    fn every_day_of_four_centuries_round_trips() {
        // Walk day by day and check the calendar advances by exactly one day each time.
        let (mut y, mut m, mut d) = civil_from_days(-146_097);
        for days in -146_096..146_097 {
            let (ny, nm, nd) = civil_from_days(days);
            let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
            let month_len = match m {
                2 if leap => 29,
                2 => 28,
                4 | 6 | 9 | 11 => 30,
                _ => 31,
            };
            let expected = if d < month_len {
                (y, m, d + 1)
            } else if m < 12 {
                (y, m + 1, 1)
            } else {
                (y + 1, 1, 1)
            };
            assert_eq!((ny, nm, nd), expected, "day {days}");
            (y, m, d) = (ny, nm, nd);
        }
    }
}

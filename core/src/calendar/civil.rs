//! Days and months counted from 1970-01-01, the numbering of every calendar's
//! periods.

use jiff::civil::Date;

/// Days from 1970-01-01 to `date`.
pub(super) fn epoch_day(date: Date) -> i64 {
    // Howard Hinnant's days_from_civil: years from March, so Feb 29 is a year's
    // last day.
    let (y, m, d) = (
        i64::from(date.year()),
        i64::from(date.month()),
        i64::from(date.day()),
    );
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date `days` after 1970-01-01.
pub(super) fn from_epoch_day(days: i64) -> Option<Date> {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    Date::new(
        i16::try_from(y).ok()?,
        i8::try_from(m).ok()?,
        i8::try_from(d).ok()?,
    )
    .ok()
}

/// Months from 1970-01 to `date`'s month.
pub(super) fn epoch_month(date: Date) -> i64 {
    (i64::from(date.year()) - 1970) * 12 + i64::from(date.month()) - 1
}

/// Day `day` of the month `month` months after 1970-01, clamped to its last day.
pub(super) fn clamped(month: i64, day: i8) -> Option<Date> {
    let year = i16::try_from(1970 + month.div_euclid(12)).ok()?;
    let month = i8::try_from(month.rem_euclid(12) + 1).ok()?;
    let first = Date::new(year, month, 1).ok()?;
    Date::new(year, month, day.min(first.days_in_month())).ok()
}

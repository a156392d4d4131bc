//! The calendar against the documented vectors, its invariants, and an independent
//! computation (jiff's own zoned calendar arithmetic) at many random instants in
//! every zone of the database.

use jiff::civil::{Date, Weekday};
use jiff::tz::TimeZone;
use jiff::{Span, Timestamp, ToSpan};
use proptest::prelude::*;

use super::*;
use crate::error::Error;

fn at(s: &str) -> Millis {
    s.parse::<Timestamp>().unwrap().as_millisecond()
}

fn cal(line: &str) -> Calendar {
    try_cal(line).unwrap()
}

/// `unit [EVERY n] [ON a] [AT t] [TZ z]` as the command reads it.
fn try_cal(line: &str) -> crate::error::Result<Calendar> {
    let words: Vec<&str> = line.split(' ').collect();
    let opt = |name: &str| {
        words
            .windows(2)
            .find(|w| w[0] == name)
            .map(|w| w[1].as_bytes())
    };
    Calendar::parse(
        words[0].as_bytes(),
        opt("EVERY"),
        opt("ON"),
        opt("AT"),
        opt("TZ"),
    )
}

fn period(line: &str, now: &str) -> (Millis, Millis) {
    let p = cal(line).period(at(now));
    (p.start, p.end)
}

const HOUR: Millis = 3_600_000;

#[test]
fn the_documented_vectors() {
    let ny = "TZ America/New_York";
    let month31 = format!("month ON 31 {ny}");
    let (s, e) = period(&month31, "2026-02-10T12:00-05:00");
    assert_eq!(
        (s, e),
        (at("2026-01-31T00:00-05:00"), at("2026-02-28T00:00-05:00"))
    );
    assert_eq!(e - at("2026-02-10T12:00-05:00"), 1_512_000_000);
    assert_eq!(
        period(&month31, "2026-03-31T12:00-04:00"),
        (at("2026-03-31T00:00-04:00"), at("2026-04-30T00:00-04:00"))
    );
    let day0230 = format!("day AT 02:30 {ny}");
    let (s, e) = period(&day0230, "2026-03-08T12:00-04:00");
    assert_eq!(
        (s, e),
        (at("2026-03-08T03:30-04:00"), at("2026-03-09T02:30-04:00"))
    );
    assert_eq!(e - s, 23 * HOUR);
    assert_eq!(e - at("2026-03-08T12:00-04:00"), 52_200_000);
    assert_eq!(
        period(&day0230, "2026-03-08T01:00-05:00"),
        (at("2026-03-07T02:30-05:00"), at("2026-03-08T03:30-04:00"))
    );
    let (s, e) = period(&format!("day AT 01:30 {ny}"), "2026-11-01T12:00-05:00");
    assert_eq!(
        (s, e),
        (at("2026-11-01T01:30-04:00"), at("2026-11-02T01:30-05:00"))
    );
    assert_eq!(e - s, 25 * HOUR);
    let (s, e) = period(&format!("week ON sun {ny}"), "2026-03-10T10:00-04:00");
    assert_eq!(
        (s, e),
        (at("2026-03-08T00:00-05:00"), at("2026-03-15T00:00-04:00"))
    );
    assert_eq!(e - s, 167 * HOUR);
    assert_eq!(
        period("month EVERY 3", "2026-05-10T00:00Z"),
        (at("2026-04-01T00:00Z"), at("2026-07-01T00:00Z"))
    );
    assert_eq!(
        period("year ON 02-29", "2027-03-01T00:00Z"),
        (at("2027-02-28T00:00Z"), at("2028-02-29T00:00Z"))
    );
    let (s, e) = period("day TZ Australia/Lord_Howe", "2026-10-04T12:00+11:00");
    assert_eq!(e - s, 23 * HOUR + HOUR / 2);
}

#[test]
fn the_boundary_instant_belongs_to_the_new_period() {
    let c = cal("day TZ Europe/Berlin");
    let midnight = at("2026-06-02T00:00+02:00");
    assert_eq!(c.period(midnight).start, midnight);
    assert_eq!(c.period(midnight - 1).end, midnight);
}

#[test]
fn defaults_and_spellings() {
    assert_eq!(cal("DAY"), cal("day AT 00:00 TZ utc"));
    assert_eq!(cal("week"), cal("week ON MON"));
    assert_eq!(cal("month"), cal("month ON 1 EVERY 1"));
    assert_eq!(cal("year"), cal("year ON 01-01"));
    assert_eq!(
        cal("day TZ america/new_york"),
        cal("day TZ America/New_York")
    );
    assert_eq!(cal("day TZ +00:00"), cal("day TZ UTC"));
    assert_eq!(cal("day TZ -08:00").zone().name(), "-08:00");
    assert_eq!(cal("day TZ ASIA/KOLKATA").zone().name(), "Asia/Kolkata");
    // A fixed offset moves local midnight: +05:30's day starts at 18:30 UTC.
    assert_eq!(
        period("day TZ +05:30", "2026-01-01T20:00Z"),
        (at("2026-01-01T18:30Z"), at("2026-01-02T18:30Z"))
    );
    assert!(tzdb_version().starts_with("20"), "{}", tzdb_version());
    assert!(zone_names().count() > 400);
}

#[test]
fn every_bad_value_is_an_error_naming_its_argument() {
    let unit = "unit must be day, week, month or year";
    let on_day = "syntax error: ON does not apply to unit day, whose periods start every day at AT";
    let week = "ON must be mon, tue, wed, thu, fri, sat or sun for unit week";
    let month = "ON must be a day of the month from 1 to 31 for unit month";
    let year = "ON must be a date MM-DD from 01-01 to 12-31 for unit year";
    let time = "AT must be a time of day hh:mm from 00:00 to 23:59";
    let every = |max| format!("EVERY must be an integer from 1 to {max}");
    for (line, want) in [
        ("days", unit.to_string()),
        ("", unit.to_string()),
        ("hour", unit.to_string()),
        ("day ON 1", on_day.to_string()),
        ("week ON monday", week.to_string()),
        ("week ON 1", week.to_string()),
        ("month ON 0", month.to_string()),
        ("month ON 32", month.to_string()),
        ("month ON 01", month.to_string()),
        ("month ON mon", month.to_string()),
        ("year ON 02-30", year.to_string()),
        ("year ON 04-31", year.to_string()),
        ("year ON 13-01", year.to_string()),
        ("year ON 00-10", year.to_string()),
        ("year ON 1-01", year.to_string()),
        ("year ON 01/01", year.to_string()),
        ("day AT 24:00", time.to_string()),
        ("day AT 23:60", time.to_string()),
        ("day AT 9:00", time.to_string()),
        ("day AT 09:00:00", time.to_string()),
        ("day EVERY 0", every(3650)),
        ("day EVERY 3651", every(3650)),
        ("week EVERY 522", every(521)),
        ("month EVERY 121", every(120)),
        ("year EVERY 11", every(10)),
        ("year EVERY -1", every(10)),
    ] {
        assert_eq!(try_cal(line).unwrap_err().to_string(), want, "{line}");
    }
    for zone in [
        "Mars/Olympus",
        "+24:00",
        "-08:60",
        "+8:00",
        "08:00",
        "UTC+1",
        "",
        "America/New_York ",
    ] {
        assert_eq!(
            Zone::parse(zone.as_bytes()),
            Err(Error::BadZone(zone.to_string())),
            "{zone}"
        );
    }
    assert!(Error::BadZone("Mars/Olympus".into())
        .to_string()
        .starts_with("unknown time zone 'Mars/Olympus'"));
    for ok in [
        "day EVERY 3650",
        "week EVERY 521",
        "month EVERY 120",
        "year EVERY 10",
        "year ON 02-29",
        "day AT 23:59 TZ -23:59",
        "day TZ +23:59",
    ] {
        assert!(try_cal(ok).is_ok(), "{ok}");
    }
}

#[test]
fn on_29_to_31_never_drifts() {
    let c = cal("month ON 31 TZ America/New_York");
    let mut start = c.period(at("2027-12-31T12:00-05:00")).start;
    let mut days = vec![];
    for _ in 0..14 {
        let p = c.period(start);
        days.push(
            TimeZone::get("America/New_York")
                .unwrap()
                .to_datetime(Timestamp::from_millisecond(p.start).unwrap())
                .day(),
        );
        start = p.end;
    }
    // Dec 31, then 2028: Jan 31, Feb 29 (leap), Mar 31, Apr 30 … Dec 31, Jan 31.
    assert_eq!(
        days,
        [31, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31, 31]
    );
    let (s, _) = period("month ON 30", "2027-03-01T00:00Z");
    assert_eq!(s, at("2027-02-28T00:00Z"));
    let (s, e) = period("month ON 29", "2027-03-29T00:00Z");
    assert_eq!((s, e), (at("2027-03-29T00:00Z"), at("2027-04-29T00:00Z")));
}

#[test]
fn weeks_quarters_and_years_are_numbered_from_1970() {
    // 1970-01-01 was a Thursday: the week holding it, ON mon, began 1969-12-29.
    assert_eq!(
        period("week", "1970-01-01T00:00Z").0,
        at("1969-12-29T00:00Z")
    );
    assert_eq!(
        period("week EVERY 2", "1970-01-12T00:00Z"),
        (at("1970-01-12T00:00Z"), at("1970-01-26T00:00Z"))
    );
    assert_eq!(
        period("year EVERY 2", "2027-06-01T00:00Z"),
        (at("2026-01-01T00:00Z"), at("2028-01-01T00:00Z"))
    );
    assert_eq!(
        period("day EVERY 2", "1970-01-02T00:00Z").0,
        at("1970-01-01T00:00Z")
    );
}

#[test]
fn a_start_in_a_gap_moves_forward_and_one_in_an_overlap_is_the_earlier() {
    // Berlin springs forward at 02:00 → 03:00 on 2026-03-29 and falls back at
    // 03:00 → 02:00 on 2026-10-25.
    let c = cal("day AT 02:15 TZ Europe/Berlin");
    assert_eq!(
        c.period(at("2026-03-29T12:00+02:00")).start,
        at("2026-03-29T03:15+02:00")
    );
    assert_eq!(
        c.period(at("2026-10-25T12:00+01:00")).start,
        at("2026-10-25T02:15+02:00")
    );
}

/// A sample of zones with unusual rules, and fixed offsets.
const ZONES: [&str; 12] = [
    "America/New_York",
    "Europe/Berlin",
    "Australia/Lord_Howe",
    "Pacific/Chatham",
    "Africa/Casablanca",
    "America/Santiago",
    "Antarctica/Troll",
    "Asia/Kolkata",
    "America/Havana",
    "UTC",
    "+05:45",
    "-09:30",
];

fn calendars() -> impl Strategy<Value = String> {
    (
        0..4usize,
        1..40u64,
        0..31u64,
        0..24u32,
        0..4u32,
        0..ZONES.len(),
    )
        .prop_map(|(unit, every, anchor, hour, quarter, zone)| {
            let (unit, on) = match unit {
                0 => ("day", String::new()),
                1 => (
                    "week",
                    format!(
                        " ON {}",
                        ["mon", "tue", "wed", "thu", "fri", "sat", "sun"][anchor as usize % 7]
                    ),
                ),
                2 => ("month", format!(" ON {}", anchor + 1)),
                _ => (
                    "year",
                    format!(" ON {:02}-{:02}", anchor % 12 + 1, anchor % 28 + 1),
                ),
            };
            let every = every.min(Unit::parse(unit.as_bytes()).unwrap().max_every());
            format!(
                "{unit} EVERY {every}{on} AT {hour:02}:{:02} TZ {}",
                quarter * 15,
                ZONES[zone]
            )
        })
}

const Y2026: Millis = 1_767_225_600_000;
const Y2041: Millis = 2_240_611_200_000;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn periods_hold_now_and_tile_time(line in calendars(), now in Y2026..Y2041) {
        let c = cal(&line);
        let p = c.compute(now);
        prop_assert!(p.start <= now && now < p.end, "{line} at {now}: {p:?}");
        prop_assert_eq!(c.compute(p.end).start, p.end, "{} next", line);
        prop_assert_eq!(c.compute(p.start - 1).end, p.start, "{} previous", line);
        prop_assert_eq!(c.period(now), p);
    }

    #[test]
    fn the_memo_answers_what_the_rules_answer(
        calls in prop::collection::vec((0..3usize, 0..(40 * 86_400_000i64)), 1..60)
    ) {
        let lines = ["day AT 02:30 TZ America/New_York", "month ON 31 TZ Australia/Lord_Howe", "week ON sun TZ America/New_York"];
        for (i, offset) in calls {
            let c = cal(lines[i]);
            let now = at("2026-02-20T00:00Z") + offset;
            prop_assert_eq!(c.period(now), c.compute(now));
        }
    }
}

/// The period by jiff's zoned calendar arithmetic (spans added to a base date,
/// which clamp a day to the month's end; `to_zoned`, which resolves a gap forward
/// and an overlap to the earlier instant), found by stepping period by period.
fn reference(
    unit: usize,
    every: i64,
    anchor: i64,
    hour: i8,
    minute: i8,
    tz: &TimeZone,
    now: Timestamp,
) -> (Millis, Millis) {
    let epoch = Date::constant(1970, 1, 1);
    let start_of = |k: i64| -> Timestamp {
        let date = match unit {
            0 => epoch.checked_add((k * every).days()).unwrap(),
            1 => {
                let anchor = Weekday::from_monday_zero_offset(anchor as i8).unwrap();
                let first = epoch.nth_weekday(-1, anchor).unwrap();
                let first = if epoch.weekday() == anchor {
                    epoch
                } else {
                    first
                };
                first.checked_add((7 * k * every).days()).unwrap()
            }
            2 => Date::new(1970, 1, anchor as i8 + 1)
                .unwrap()
                .checked_add((k * every).months())
                .unwrap(),
            _ => Date::new(1972, (anchor % 12 + 1) as i8, (anchor % 28 + 1) as i8)
                .unwrap()
                .checked_add(Span::new().years(k * every - 2))
                .unwrap(),
        };
        date.at(hour, minute, 0, 0)
            .to_zoned(tz.clone())
            .unwrap()
            .timestamp()
    };
    // A first guess from whole years, then period by period.
    let years = now.to_zoned(tz.clone()).year() as i64 - 1970;
    let per_year = match unit {
        0 => 365.0 / every as f64,
        1 => 52.18 / every as f64,
        2 => 12.0 / every as f64,
        _ => 1.0 / every as f64,
    };
    let mut k = (years as f64 * per_year) as i64 - 2;
    while start_of(k) > now {
        k -= 1;
    }
    while start_of(k + 1) <= now {
        k += 1;
    }
    (
        start_of(k).as_millisecond(),
        start_of(k + 1).as_millisecond(),
    )
}

/// Random instants 2026–2040 over every zone of the database, against
/// [`reference`]. `RL_CALENDAR_CASES` sets the count (default 20,000; the full
/// check runs 1,000,000).
#[test]
fn agrees_with_jiffs_zoned_arithmetic_in_every_zone() {
    let cases: usize = std::env::var("RL_CALENDAR_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let zones: Vec<&str> = zone_names().collect();
    let mut seed = 0x5eed_u64;
    let mut next = move |n: u64| {
        seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    };
    for case in 0..cases {
        let zone = zones[case % zones.len()];
        let tz = TimeZone::get(zone).unwrap();
        let unit = next(4) as usize;
        let every = [1, 1, 1, 2, 3, 6, 7][next(7) as usize];
        let anchor = next(31) as i64;
        let (hour, minute) = (next(24) as i8, [0, 15, 30, 45][next(4) as usize] as i8);
        let now = Y2026 + next((Y2041 - Y2026) as u64) as i64;
        let on = match unit {
            0 => String::new(),
            1 => format!(
                " ON {}",
                ["mon", "tue", "wed", "thu", "fri", "sat", "sun"][anchor as usize % 7]
            ),
            2 => format!(" ON {}", anchor + 1),
            _ => format!(" ON {:02}-{:02}", anchor % 12 + 1, anchor % 28 + 1),
        };
        let unit_name = ["day", "week", "month", "year"][unit];
        let line = format!("{unit_name} EVERY {every}{on} AT {hour:02}:{minute:02} TZ {zone}");
        let p = cal(&line).compute(now);
        let want = reference(
            unit,
            every,
            anchor % 7 * i64::from(unit == 1) + anchor * i64::from(unit != 1),
            hour,
            minute,
            &tz,
            Timestamp::from_millisecond(now).unwrap(),
        );
        assert_eq!((p.start, p.end), want, "{line} at {now}");
    }
}

//! RL.QUOTA's calendar in the library (functions/rl.lua's `calendar`) held to the
//! module's (`rl_core::calendar`: jiff over the same tz database): every zone's
//! offset at an instant and the instant of a local time (gaps and overlaps), and
//! random calendars read and resolved to periods, at random instants from 2025 to
//! 2040. `RL_CALENDAR_CASES` sets how many per check (the default, 50,000, keeps
//! `cargo test` fast; the full run takes 1,000,000).

use std::path::Path;

use jiff::tz::{Offset, TimeZone};
use jiff::Timestamp;
use mlua::{Function, Lua, Table};

/// 2025-01-01T00:00:00Z and 2041-01-01T00:00:00Z, in ms.
const FROM_MS: i64 = 1_735_689_600_000;
const TO_MS: i64 = 2_240_524_800_000;

/// Cases per check, unless RL_CALENDAR_CASES says otherwise.
const DEFAULT_CASES: u64 = 50_000;

fn cases() -> u64 {
    std::env::var("RL_CALENDAR_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_CASES)
}

/// A small deterministic generator (splitmix64): the same cases on every run.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// True once in `n` times on average.
    pub fn one_in(&mut self, n: u64) -> bool {
        self.next().is_multiple_of(n)
    }

    /// One of `items` (not empty).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[(self.next() % items.len() as u64) as usize]
    }

    /// A number in lo ..= hi.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        let span = u64::try_from(hi - lo).expect("lo <= hi") + 1;
        lo + i64::try_from(self.next() % span).expect("span fits")
    }
}

/// The library's calendar: its functions, in the Lua state that holds them.
pub struct LibraryCalendar {
    _lua: Lua,
    parse: Function,
    period: Function,
    period_of: Function,
    named: Function,
    offset_at: Function,
    instant: Function,
}

/// functions/rl.lua run as a plain chunk (a `redis` that registers nothing),
/// returning its chunk-level `calendar` builder, called.
pub fn library_calendar() -> LibraryCalendar {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../functions/rl.lua");
    let source = std::fs::read_to_string(&path).expect("functions/rl.lua");
    // The `#!lua` line is FUNCTION LOAD's, not Lua's.
    let code = format!("--{source}\nreturn calendar");
    let lua = Lua::new();
    let redis = lua.create_table().expect("table");
    let ignore = lua.create_function(|_, ()| Ok(())).expect("function");
    redis.set("register_function", ignore).expect("set");
    lua.globals().set("redis", redis).expect("set");
    let build: Function = lua
        .load(&code)
        .set_name("@rl.lua")
        .eval()
        .expect("rl.lua loads");
    let calendar: Table = build.call(()).expect("calendar() builds");
    let get = |name: &str| -> Function {
        calendar
            .get(name)
            .unwrap_or_else(|e| panic!("calendar.{name}: {e}"))
    };
    LibraryCalendar {
        parse: get("parse"),
        period: get("period"),
        period_of: get("period_of"),
        named: get("named"),
        offset_at: get("offset_at"),
        instant: get("instant"),
        _lua: lua,
    }
}

/// Every zone name the module knows.
pub fn zone_names() -> Vec<&'static str> {
    rl_core::calendar::zone_names().collect()
}

/// The zone's rules as the module reads them (its TZ parser, its database).
fn jiff_zone(name: &str) -> TimeZone {
    rl_core::calendar::Zone::parse(name.as_bytes())
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .rules()
}

/// The instant (ms) jiff gives local time `local` (ms since 1970-01-01 local).
fn jiff_instant(tz: &TimeZone, local: i64) -> i64 {
    let dt = Offset::UTC.to_datetime(Timestamp::from_millisecond(local).expect("in range"));
    tz.to_ambiguous_timestamp(dt)
        .compatible()
        .expect("in range")
        .as_millisecond()
}

/// Within two hours of a transition of `tz` half the time (where offsets change),
/// else anywhere from 2025 to 2040.
fn instant_near_change(rng: &mut Rng, tz: &TimeZone) -> i64 {
    const TWO_HOURS: i64 = 7_200_000;
    let t = rng.range(FROM_MS, TO_MS);
    if rng.one_in(2) {
        let ts = Timestamp::from_millisecond(t).expect("in range");
        if let Some(next) = tz.following(ts).next() {
            let at = next.timestamp().as_millisecond();
            if at < TO_MS {
                return at + rng.range(-TWO_HOURS, TWO_HOURS);
            }
        }
    }
    t
}

#[test]
fn every_zone_resolves_as_the_module_does() {
    let cal = library_calendar();
    let names = zone_names();
    let mut rng = Rng::new(0x5eed_cafe);
    let per_zone = cases().div_ceil(names.len() as u64).max(8);
    for name in &names {
        let tz = jiff_zone(name);
        // Any case finds the zone.
        let zone: Table = cal
            .named
            .call(name.to_ascii_uppercase())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        for _ in 0..per_zone {
            let t = instant_near_change(&mut rng, &tz);
            let ts = Timestamp::from_millisecond(t).expect("in range");
            let want = i64::from(tz.to_offset(ts).seconds());
            let got: i64 = cal.offset_at.call((zone.clone(), t)).expect("offset_at");
            assert_eq!(got, want, "{name}: offset at {ts}");
            // A local time near there: in a gap, an overlap or neither.
            let local = t + want * 1000 + rng.range(-7_200_000, 7_200_000);
            let want = jiff_instant(&tz, local);
            let got: i64 = cal.instant.call((zone.clone(), local)).expect("instant");
            assert_eq!(got, want, "{name}: instant of local {local}");
        }
    }
}

#[test]
fn an_unknown_zone_is_none() {
    let cal = library_calendar();
    for name in ["Mars/Olympus", "america/new_yorkk", "", "UTC+1"] {
        let zone: Option<Table> = cal.named.call(name).expect("named");
        assert!(zone.is_none(), "{name} is not a zone");
    }
}

/// One calendar's arguments: the unit and the values of EVERY, ON, AT and TZ.
#[derive(Debug)]
struct Args {
    unit: String,
    every: Option<String>,
    on: Option<String>,
    at: Option<String>,
    tz: Option<String>,
}

/// Upper or lower case at random, letter by letter.
fn any_case(rng: &mut Rng, s: &str) -> String {
    s.chars()
        .map(|c| {
            if rng.one_in(2) {
                c.to_ascii_uppercase()
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect()
}

/// Most often a value of the option, sometimes absent, sometimes a bad one.
fn arguments(rng: &mut Rng, zones: &[&str]) -> Args {
    let bad = rng.one_in(20);
    const UNITS: [(&str, i64); 4] = [("day", 3650), ("week", 521), ("month", 120), ("year", 10)];
    let (unit, max) = *rng.pick(&UNITS);
    let every = match rng.next() % 4 {
        0 => None,
        1 => Some("1".to_string()),
        2 => Some(rng.range(1, max.min(12)).to_string()),
        _ => Some(rng.range(1, max).to_string()),
    };
    let on = match (unit, rng.next() % 3) {
        ("day", _) | (_, 0) => None,
        ("week", _) => {
            let days = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
            let day = *rng.pick(&days);
            Some(any_case(rng, day))
        }
        ("month", _) => Some(
            {
                let from = *rng.pick(&[1, 28]);
                rng.range(from, 31)
            }
            .to_string(),
        ),
        _ => {
            let month = rng.range(1, 12);
            let last = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][(month - 1) as usize];
            Some(format!("{month:02}-{:02}", rng.range(1, last)))
        }
    };
    // Start times where DST changes happen, most of the time.
    let at = match rng.next() % 3 {
        0 => None,
        1 => Some(format!("{:02}:{:02}", rng.range(0, 3), rng.range(0, 59))),
        _ => Some(format!("{:02}:{:02}", rng.range(0, 23), rng.range(0, 59))),
    };
    let tz = match rng.next() % 8 {
        0 => None,
        1 => Some(any_case(rng, "utc")),
        2 => {
            let sign = if rng.one_in(2) { '+' } else { '-' };
            Some(format!(
                "{sign}{:02}:{:02}",
                rng.range(0, 23),
                rng.range(0, 59)
            ))
        }
        _ => {
            let zone = *rng.pick(zones);
            Some(any_case(rng, zone))
        }
    };
    let mut args = Args {
        unit: any_case(rng, unit),
        every,
        on,
        at,
        tz,
    };
    if bad {
        let garbage = [
            "0",
            "",
            "24:00",
            "12:60",
            "1:00",
            "+24:00",
            "02-30",
            "13-01",
            "32",
            "x",
            "Mars/Olympus",
            "01",
            "day",
            "mon ",
            "3651",
            "522",
            "121",
            "11",
        ];
        let g = rng.pick(&garbage).to_string();
        match rng.next() % 5 {
            0 => args.unit = g,
            1 => args.every = Some(g),
            2 => args.on = Some(g),
            3 => args.at = Some(g),
            _ => args.tz = Some(g),
        }
    }
    args
}

/// What the module's parser finds wrong, in the library's words for it.
fn what_is_wrong(e: &rl_core::error::Error) -> &'static str {
    use rl_core::error::Error;
    match e {
        Error::BadUnit => "unit",
        Error::BadInteger { .. } => "every",
        Error::OnForDay => "on_day",
        Error::BadAnchor { .. } => "on",
        Error::BadTime => "at",
        Error::BadZone(_) => "tz",
        other => panic!("not a calendar error: {other}"),
    }
}

/// The library's calendar and the module's read the same arguments alike (or
/// refuse them for the same reason) and give the same period at random instants
/// from 2025 to 2040, half of them at or next to a period's boundary.
#[test]
fn periods_agree_with_the_module() {
    use rl_core::calendar::Calendar;
    let cal = library_calendar();
    let zones = zone_names();
    let mut rng = Rng::new(0x0ca1_e4da);
    let started = std::time::Instant::now();
    let total = cases();
    for _ in 0..total {
        let a = arguments(&mut rng, &zones);
        let bytes = |v: &Option<String>| v.as_ref().map(|s| s.as_bytes().to_vec());
        let (every, on, at, tz) = (bytes(&a.every), bytes(&a.on), bytes(&a.at), bytes(&a.tz));
        let module = Calendar::parse(
            a.unit.as_bytes(),
            every.as_deref(),
            on.as_deref(),
            at.as_deref(),
            tz.as_deref(),
        );
        let (lua_cal, why): (Option<Table>, Option<String>) = cal
            .parse
            .call((
                a.unit.as_str(),
                a.every.as_deref(),
                a.on.as_deref(),
                a.at.as_deref(),
                a.tz.as_deref(),
            ))
            .expect("parse");
        let module = match module {
            Err(e) => {
                assert_eq!(
                    why.as_deref(),
                    Some(what_is_wrong(&e)),
                    "{a:?}: the module says {e}"
                );
                continue;
            }
            Ok(c) => c,
        };
        let lua_cal = lua_cal.unwrap_or_else(|| panic!("{a:?}: the library refuses it ({why:?})"));
        let mut now = rng.range(FROM_MS, TO_MS);
        if rng.one_in(2) {
            // At a boundary, or a millisecond before it.
            now = module.compute(now).end - rng.range(0, 1);
        }
        let want = module.compute(now);
        let (start, end): (i64, i64) = cal.period.call((lua_cal.clone(), now)).expect("period");
        assert_eq!((start, end), (want.start, want.end), "{a:?} at {now}");
        // The remembered period, at now and at another instant (of it, or of the
        // period before or after).
        let later = rng.range(start - 1, end);
        for t in [now, later] {
            let want = module.compute(t);
            let got: (i64, i64) = cal.period_of.call((lua_cal.clone(), t)).expect("period_of");
            assert_eq!(got, (want.start, want.end), "{a:?} remembered, at {t}");
        }
    }
    eprintln!(
        "{total} calendars and instants agree in {:.1?}",
        started.elapsed()
    );
}

/// The library carries the module's tz database, and docs/library.md names its
/// version and counts its names: a new database without `make lua` (or without
/// the page) fails here.
#[test]
fn the_library_carries_the_modules_tz_database() {
    let version = rl_core::calendar::tzdb_version();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../functions/rl.lua");
    let library = std::fs::read_to_string(path).expect("functions/rl.lua");
    assert!(
        library.contains(&format!("local TZDB = \"{version}\"")),
        "functions/rl.lua carries another tz database than {version}: run `make lua`"
    );
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/library.md");
    let page = std::fs::read_to_string(path).expect("docs/library.md");
    assert!(
        page.contains(&format!("(version `{version}`")),
        "docs/library.md does not name the tz database's version, {version}"
    );
    let names = zone_names().len();
    assert!(
        page.contains(&format!("({names} names")),
        "docs/library.md does not count the database's {names} names"
    );
}

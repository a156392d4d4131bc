//! RL.TOP: which keys are being rejected now. A pure value: the module keeps one
//! per node (and one for shadow rejections) and feeds it on the rejection path
//! only; every function takes the call's `now`.
//!
//! "Now" is two rotating windows of [`WINDOW_MS`], aligned on the epoch: the
//! current minute and the one before it, so a report covers the last 60 to 120
//! seconds. Each window is a [`SpaceSaving`] sketch of `rl.top-size` entries, so
//! the memory is fixed (two sketches) whatever the number of keys rejected. A
//! key's `rejected` is the sum of what both windows hold for it: exact while each
//! window held it from its first rejection there (both had room), otherwise above
//! the truth by at most its `error` (≤ a window's rejections / rl.top-size) and,
//! where a full window dropped it, below by at most that window's smallest count.

mod space_saving;

pub use space_saving::{Entry, SpaceSaving};

use std::collections::HashMap;

use crate::algorithms::Millis;
use crate::args;
use crate::error::{Error, Result};
use crate::limits::MAX_COUNT;

/// One window's length: a report covers the last one or two of them.
pub const WINDOW_MS: Millis = 60_000;

/// `rl.top-size`'s default: entries per window.
pub const DEFAULT_SIZE: usize = 128;

/// How many keys RL.TOP reports without `COUNT`.
pub const DEFAULT_COUNT: u64 = 10;

/// The rejected keys of the current window and the one before.
#[derive(Debug, Clone)]
pub struct Top {
    /// The window `current` counts: `now / WINDOW_MS`.
    window: Millis,
    current: SpaceSaving,
    previous: SpaceSaving,
}

/// One key of a report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ranked {
    pub key: Vec<u8>,
    /// Rejections counted for it in both windows.
    pub rejected: u64,
    /// How far `rejected` may be above the truth (0: not above).
    pub over: u64,
    /// How far it may be below (a full window that no longer holds it).
    pub under: u64,
    /// The `now` of its last rejection.
    pub last: Millis,
}

impl Ranked {
    /// Milliseconds since its last rejection (0 if the clock went back).
    pub fn since(&self, now: Millis) -> i64 {
        now.saturating_sub(self.last).max(0)
    }
}

impl Top {
    /// Two windows of `size` entries each.
    pub fn new(size: usize) -> Self {
        Top {
            window: Millis::MIN,
            current: SpaceSaving::new(size),
            previous: SpaceSaving::new(size),
        }
    }

    /// Entries per window.
    pub fn size(&self) -> usize {
        self.current.capacity()
    }

    /// Moves to `now`'s window: the current one becomes the previous one a window
    /// later, and both are forgotten after two. A clock that goes back stays in the
    /// window it was in.
    fn advance(&mut self, now: Millis) {
        let window = now.div_euclid(WINDOW_MS);
        if window <= self.window {
            return;
        }
        if window == self.window.saturating_add(1) {
            std::mem::swap(&mut self.current, &mut self.previous);
        } else {
            self.previous.clear();
        }
        self.current.clear();
        self.window = window;
    }

    /// A rejected call on `key` at `now`.
    pub fn rejected(&mut self, key: &[u8], now: Millis) {
        self.advance(now);
        self.current.offer(key, now);
    }

    /// Forgets every key.
    pub fn reset(&mut self) {
        self.current.clear();
        self.previous.clear();
    }

    /// The `count` keys with the most rejections in the last one or two windows,
    /// most first (ties: the latest rejection first, then by key).
    pub fn top(&mut self, now: Millis, count: u64) -> Vec<Ranked> {
        self.advance(now);
        let mut merged: HashMap<&[u8], Ranked> = HashMap::new();
        for (this, other) in [
            (&self.current, &self.previous),
            (&self.previous, &self.current),
        ] {
            for e in this.entries() {
                let r = merged.entry(&e.key[..]).or_insert_with(|| Ranked {
                    key: e.key.clone(),
                    rejected: 0,
                    over: 0,
                    // A full window that does not hold it may have dropped it.
                    under: if other.get(&e.key).is_none() {
                        other.floor()
                    } else {
                        0
                    },
                    last: e.last,
                });
                r.rejected = r.rejected.saturating_add(e.count);
                r.over = r.over.saturating_add(e.error);
                r.last = r.last.max(e.last);
            }
        }
        let mut ranked: Vec<Ranked> = merged.into_values().collect();
        ranked.sort_by(|a, b| {
            (b.rejected, b.last)
                .cmp(&(a.rejected, a.last))
                .then_with(|| a.key.cmp(&b.key))
        });
        ranked.truncate(usize::try_from(count).unwrap_or(usize::MAX));
        ranked
    }
}

/// What an RL.TOP call asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// `[COUNT k] [SHADOW]`: the first `count` keys, of shadow rejections if
    /// `shadow`.
    Report { count: u64, shadow: bool },
    /// `RESET`: forget every key (shadow rejections too).
    Reset,
}

/// Parses RL.TOP's arguments after its name: `[COUNT k] [SHADOW]` in any order
/// (case-insensitive, each once), or `RESET` alone.
pub fn parse(args: &[&[u8]]) -> Result<Request> {
    if let [word] = args {
        if word.eq_ignore_ascii_case(b"RESET") {
            return Ok(Request::Reset);
        }
    }
    let mut count = None;
    let mut shadow = false;
    let mut rest = args;
    while let [word, tail @ ..] = rest {
        rest = tail;
        if word.eq_ignore_ascii_case(b"COUNT") && count.is_none() {
            let [k, tail @ ..] = rest else {
                return Err(Error::TopSyntax);
            };
            count = Some(args::integer("COUNT", k, 1, MAX_COUNT)?);
            rest = tail;
        } else if word.eq_ignore_ascii_case(b"SHADOW") && !shadow {
            shadow = true;
        } else {
            return Err(Error::TopSyntax);
        }
    }
    Ok(Request::Report {
        count: count.unwrap_or(DEFAULT_COUNT),
        shadow,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn report(top: &mut Top, now: Millis) -> Vec<(Vec<u8>, u64, i64)> {
        top.top(now, 100)
            .into_iter()
            .map(|r| (r.key.to_vec(), r.rejected, r.since(now)))
            .collect()
    }

    #[test]
    fn a_report_covers_this_window_and_the_one_before() {
        let mut t = Top::new(4);
        t.rejected(b"a", 59_000);
        t.rejected(b"a", 61_000);
        t.rejected(b"b", 62_000);
        t.rejected(b"b", 63_000);
        t.rejected(b"b", 63_500);
        assert_eq!(
            report(&mut t, 64_000),
            [(b"b".to_vec(), 3, 500), (b"a".to_vec(), 2, 3_000)]
        );
        // The next window: the first minute is gone, the second one remains.
        assert_eq!(
            report(&mut t, 120_000),
            [(b"b".to_vec(), 3, 56_500), (b"a".to_vec(), 1, 59_000)]
        );
        // Two windows later, nothing.
        assert!(report(&mut t, 240_000).is_empty());
        // The clock going back stays in the window it was in.
        t.rejected(b"c", 250_000);
        t.rejected(b"c", 100);
        assert_eq!(report(&mut t, 90), [(b"c".to_vec(), 2, 0)]);
        t.reset();
        assert!(report(&mut t, 250_001).is_empty());
    }

    #[test]
    fn count_truncates_and_ties_go_to_the_latest() {
        let mut t = Top::new(8);
        for (k, now) in [(b"x", 1), (b"y", 2), (b"z", 3)] {
            t.rejected(k, now);
        }
        let keys: Vec<Vec<u8>> = t.top(5, 2).into_iter().map(|r| r.key.to_vec()).collect();
        assert_eq!(keys, [b"z".to_vec(), b"y".to_vec()]);
    }

    #[test]
    fn arguments() {
        let p = |words: &[&str]| {
            let bytes: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
            parse(&bytes)
        };
        let report = |count, shadow| Ok(Request::Report { count, shadow });
        assert_eq!(p(&[]), report(10, false));
        assert_eq!(p(&["count", "3"]), report(3, false));
        assert_eq!(
            p(&["SHADOW", "COUNT", "9007199254740991"]),
            report(MAX_COUNT, true)
        );
        assert_eq!(p(&["reset"]), Ok(Request::Reset));
        let count_error = Err(Error::BadInteger {
            name: "COUNT",
            min: 1,
            max: MAX_COUNT,
        });
        for bad in ["0", "-1", "x", "9007199254740992", ""] {
            assert_eq!(p(&["COUNT", bad]), count_error, "{bad:?}");
        }
        for bad in [
            &["COUNT"][..],
            &["RESET", "SHADOW"],
            &["SHADOW", "SHADOW"],
            &["COUNT", "1", "COUNT", "2"],
            &["TOP"],
        ] {
            assert_eq!(p(bad), Err(Error::TopSyntax), "{bad:?}");
        }
    }

    proptest! {
        /// Against exact counts per window: every reported key within its
        /// documented bounds, exact when no window overflowed.
        #[test]
        fn reports_stay_within_their_bounds(
            size in 1usize..10,
            calls in proptest::collection::vec((0u8..30, 0i64..2_000), 0..300),
        ) {
            let mut t = Top::new(size);
            let mut now = 0;
            let mut log: Vec<(u8, Millis)> = Vec::new();
            for (k, step) in &calls {
                now += step * 60;
                t.rejected(&[*k], now);
                log.push((*k, now));
            }
            let window = now.div_euclid(WINDOW_MS);
            let recent: Vec<u8> = log
                .iter()
                .filter(|(_, at)| at.div_euclid(WINDOW_MS) >= window - 1)
                .map(|(k, _)| *k)
                .collect();
            let distinct = |w: Millis| {
                let mut keys: Vec<u8> = log.iter()
                    .filter(|(_, at)| at.div_euclid(WINDOW_MS) == w)
                    .map(|(k, _)| *k).collect();
                keys.sort();
                keys.dedup();
                keys.len()
            };
            let exact = distinct(window) <= size && distinct(window - 1) <= size;
            let report = t.top(now, u64::MAX);
            for r in &report {
                let truth = recent.iter().filter(|k| **k == r.key[0]).count() as u64;
                prop_assert!(r.rejected <= truth + r.over, "{:?} truth {}", r, truth);
                prop_assert!(r.rejected + r.under >= truth, "{:?} truth {}", r, truth);
                if exact {
                    prop_assert_eq!((r.rejected, r.over, r.under), (truth, 0, 0));
                }
            }
            if exact {
                let mut keys = recent.clone();
                keys.sort();
                keys.dedup();
                prop_assert_eq!(report.len(), keys.len());
            }
            prop_assert!(report.windows(2).all(|w| w[0].rejected >= w[1].rejected));
        }
    }
}

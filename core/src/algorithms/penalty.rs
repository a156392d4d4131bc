//! Escalating blocks for repeat offenders, as fail2ban's `bantime.increment`.
//!
//! Strikes (failed logins, bad tokens) are counted in a window that opens at the
//! first one; `strikes` of them block the key for `block`, and every further block
//! while the offender is still remembered lasts twice as long, up to `max`. An
//! offender quiet for `max` after a block is forgiven (back to the first length).
//! The state is one string of four integers; see [`State`].

use super::{
    at_plus, ms_until, takes_only, Algorithm, Amount, Change, Cost, Count, Decision, Interval,
    Millis, Outcome, RetryAfter, MAX_COUNT,
};
use crate::decimal;

/// `strikes` within `window` block for `block`, doubled per block up to `max`.
/// Built by [`Penalty::new`], which refuses a block longer than `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Penalty {
    strikes: Count,
    window: Interval,
    block: Interval,
    max: Interval,
}

impl Penalty {
    /// None when `block` is longer than `max`.
    pub const fn new(
        strikes: Count,
        window: Interval,
        block: Interval,
        max: Interval,
    ) -> Option<Self> {
        if block.ms() <= max.ms() {
            Some(Penalty {
                strikes,
                window,
                block,
                max,
            })
        } else {
            None
        }
    }

    pub const fn strikes(self) -> Count {
        self.strikes
    }

    /// The length of the block given after `level` earlier ones: block · 2^level,
    /// at most `max` (so any level, however large, is fine).
    fn block_ms(self, level: u64) -> u64 {
        let max = self.max.ms();
        // block ≤ 10 years < 2^39: shifted by less than 64 it fits a u128.
        match u32::try_from(level) {
            Ok(shift) if shift < 64 => {
                (u128::from(self.block.ms()) << shift).min(u128::from(max)) as u64
            }
            _ => max,
        }
    }
}

/// What the key holds: `"<count> <window_end> <level> <blocked_until>"`, times in
/// server ms. `count` strikes in the window ending at `window_end` (0: none open);
/// `level` blocks given so far; `blocked_until` the end of the current or last
/// block (0: none yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct State {
    pub count: u64,
    pub window_end: Millis,
    pub level: u64,
    pub blocked_until: Millis,
}

/// Room for the value: four fields of at most 20 digits (any u64) and three spaces.
pub const BUF_LEN: usize = 96;
pub type Buf = [u8; BUF_LEN];

impl State {
    /// Reads exactly four canonical decimals (no sign, no leading zero), one space
    /// apart, each at most 2^53 − 1 (what every client, and the Lua library, reads
    /// exactly); None for anything else.
    pub fn parse(bytes: &[u8]) -> Option<State> {
        let mut fields = bytes.split(|&b| b == b' ');
        let mut next = || {
            fields
                .next()
                .and_then(decimal::canonical_u64)
                .filter(|&v| v <= MAX_COUNT)
        };
        let state = State {
            count: next()?,
            // Within 2^53 − 1: fits an i64.
            window_end: next()? as Millis,
            level: next()?,
            blocked_until: next()? as Millis,
        };
        if fields.next().is_some() {
            return None;
        }
        Some(state)
    }

    /// Writes the four fields into `buf`. Times are clamped to 0 ..= 2^53 − 1, which
    /// only a clock far outside any real server's could reach, so what is written
    /// always reads back.
    pub fn format(self, buf: &mut Buf) -> &[u8] {
        let time = |t: Millis| t.clamp(0, MAX_COUNT as Millis) as u64;
        let values = [
            self.count,
            time(self.window_end),
            self.level,
            time(self.blocked_until),
        ];
        let mut len = 0;
        let mut digits = itoa::Buffer::new();
        for (i, v) in values.into_iter().enumerate() {
            if i > 0 {
                buf[len] = b' ';
                len += 1;
            }
            // Each value is at most 2^53 − 1 (16 digits): four fit the buffer.
            let d = digits.format(v).as_bytes();
            buf[len..len + d.len()].copy_from_slice(d);
            len += d.len();
        }
        &buf[..len]
    }

    /// The state as a call at `now` sees it: a window that has ended holds no
    /// strikes, and an offender quiet for `max` since the last block ended is
    /// forgiven (never while blocked, which is before that block's end).
    fn at(self, now: Millis, p: Penalty) -> State {
        let mut s = self;
        if now >= s.window_end {
            s.count = 0;
            s.window_end = 0;
        }
        if s.level > 0 && now >= at_plus(s.blocked_until, p.max.ms()) {
            s.level = 0;
        }
        s
    }

    /// When the key is back to its initial state (no strikes, level 0) if nothing
    /// else happens: the latest of the window's end, the block's end and, while
    /// blocks are remembered, `max` after the last one. (The block's end alone
    /// matters only for a state RL did not write: every RL write with level 0 has
    /// its window ending after it.)
    fn resets_at(self, p: Penalty) -> Millis {
        let remembered = if self.level > 0 {
            at_plus(self.blocked_until, p.max.ms())
        } else {
            0
        };
        self.window_end.max(self.blocked_until).max(remembered)
    }
}

/// What a call that records strikes writes: the state, and when the key expires
/// (when it would be back to its initial state).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stored {
    pub state: State,
    pub expires_at: Millis,
}

/// The penalty box (RL.PENALTY).
pub struct EscalatingBlocks;

impl Algorithm for EscalatingBlocks {
    type State = Option<State>;
    type Params = Penalty;
    type Write = Change<Stored>;

    fn take(state: Option<State>, now: Millis, p: Penalty, cost: Cost) -> Outcome<Self::Write> {
        decide(state, now, p, cost).into_change()
    }

    /// Strikes are never given back (a strike that was not one is simply not
    /// recorded) nor charged after the fact: no REFUND, no DEBIT.
    #[inline]
    fn call(state: Option<State>, now: Millis, p: Penalty, amount: Amount) -> Outcome<Self::Write> {
        takes_only::<Self>((state, now, p), amount)
    }
}

/// Decides one call: records `cost` strikes unless the key is blocked (None: an
/// absent key). A call while blocked and `COST 0` write nothing; the strike that
/// reaches `strikes` starts a block, is answered as rejected, and writes it.
pub fn decide(stored: Option<State>, now: Millis, p: Penalty, cost: Cost) -> Outcome<Stored> {
    let seen = stored.unwrap_or_default().at(now, p);
    let n = cost.get();
    if now < seen.blocked_until || n == 0 {
        return Outcome {
            decision: report(seen, now, p),
            write: None,
        };
    }
    let strikes = p.strikes.get();
    // count + n ≥ strikes, without adding two values that may be near 2^53.
    let after = if n >= strikes.saturating_sub(seen.count) {
        State {
            count: 0,
            window_end: 0,
            level: seen.level.saturating_add(1).min(MAX_COUNT),
            blocked_until: at_plus(now, p.block_ms(seen.level)),
        }
    } else {
        State {
            count: seen.count + n,
            // The first strike opens the window; later ones keep its end.
            window_end: if seen.count == 0 {
                at_plus(now, p.window.ms())
            } else {
                seen.window_end
            },
            ..seen
        }
    };
    Outcome {
        decision: report(after, now, p),
        write: Some(Stored {
            state: after,
            expires_at: after.resets_at(p),
        }),
    }
}

/// The reply for state `s` at `now`: allowed unless blocked; remaining strikes
/// before the next block (0 while blocked, and when a lowered `strikes` is already
/// reached); retry_after until the block ends.
fn report(s: State, now: Millis, p: Penalty) -> Decision {
    let strikes = p.strikes.get();
    let blocked = now < s.blocked_until;
    Decision {
        allowed: !blocked,
        limit: strikes,
        remaining: if blocked {
            0
        } else {
            strikes.saturating_sub(s.count)
        },
        retry_after: if blocked {
            RetryAfter::Ms(ms_until(s.blocked_until, now))
        } else {
            RetryAfter::Now
        },
        reset_after_ms: ms_until(s.resets_at(p), now),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::MAX_DURATION_MS;

    const S: Millis = 1000;
    const MIN: Millis = 60 * S;
    const HOUR: Millis = 60 * MIN;

    fn penalty(strikes: u64, window: u64, block: u64, max: u64) -> Penalty {
        Penalty::new(
            Count::new(strikes).unwrap(),
            Interval::from_ms(window).unwrap(),
            Interval::from_ms(block).unwrap(),
            Interval::from_ms(max).unwrap(),
        )
        .unwrap()
    }

    /// strikes 3, window 1 min, block 1 min, max 1 h.
    fn login() -> Penalty {
        penalty(3, 60_000, 60_000, 3_600_000)
    }

    fn cost(n: u64) -> Cost {
        Cost::new(n).unwrap()
    }

    /// The reply as the command sends it.
    fn fields(d: Decision) -> [i64; 5] {
        [
            i64::from(d.allowed),
            d.limit as i64,
            d.remaining as i64,
            d.retry_after_ms(),
            d.reset_after_ms as i64,
        ]
    }

    /// One key: calls (time, cost) in order, storing what each writes.
    struct Key {
        state: Option<State>,
        p: Penalty,
    }

    impl Key {
        fn new(p: Penalty) -> Self {
            Key { state: None, p }
        }

        fn call(&mut self, now: Millis, n: u64) -> Outcome<Stored> {
            let out = decide(self.state, now, self.p, cost(n));
            if let Some(s) = out.write {
                assert_eq!(
                    s.expires_at,
                    now + out.decision.reset_after_ms as Millis,
                    "the key expires when it resets"
                );
                self.state = Some(s.state);
            }
            out
        }

        fn reply(&mut self, now: Millis, n: u64) -> [i64; 5] {
            fields(self.call(now, n).decision)
        }
    }

    #[test]
    fn the_vector_blocks_on_the_third_strike_and_doubles_the_next_block() {
        let mut k = Key::new(login());
        assert_eq!(k.reply(0, 1), [1, 3, 2, 0, 60_000]);
        assert_eq!(k.reply(10 * S, 1), [1, 3, 1, 0, 50_000]);
        assert_eq!(k.reply(20 * S, 1), [0, 3, 0, 60_000, 3_660_000]);
        assert_eq!(
            k.state,
            Some(State {
                count: 0,
                window_end: 0,
                level: 1,
                blocked_until: 80 * S
            })
        );
        // Blocked: not counted, nothing written.
        let blocked = k.call(30 * S, 1);
        assert_eq!(fields(blocked.decision), [0, 3, 0, 50_000, 3_650_000]);
        assert_eq!(blocked.write, None);
        // Block over at 80 s, level 1: the third strike blocks for 2 min.
        assert_eq!(k.reply(80 * S, 1)[0], 1);
        assert_eq!(k.reply(80 * S, 1)[0], 1);
        assert_eq!(k.reply(80 * S, 1), [0, 3, 0, 120_000, 3_720_000]);
        assert_eq!(
            k.state.map(|s| (s.level, s.blocked_until)),
            Some((2, 200 * S))
        );
        // An hour after that block ended (200 s) the level is 0 again.
        assert_eq!(k.reply(3_801 * S, 1), [1, 3, 2, 0, 60_000]);
        assert_eq!(k.state.map(|s| s.level), Some(0));
    }

    #[test]
    fn a_strike_formats_as_four_integers() {
        let mut k = Key::new(login());
        k.call(1_700_000_000_000, 2);
        let mut buf = [0; BUF_LEN];
        assert_eq!(
            k.state.unwrap().format(&mut buf),
            b"2 1700000060000 0 0".as_slice()
        );
    }

    #[test]
    fn an_offender_quiet_for_max_after_a_block_is_forgiven_not_before() {
        let p = login();
        let blocked = State {
            count: 0,
            window_end: 0,
            level: 3,
            blocked_until: 100 * S,
        };
        // 1 ms before forgiveness: the fourth block is 8 min.
        let out = decide(Some(blocked), 100 * S + HOUR - 1, p, cost(3));
        assert_eq!(out.decision.retry_after_ms(), 8 * MIN);
        assert_eq!(out.write.unwrap().state.level, 4);
        // At blocked_until + max: forgiven, the block is the first length again.
        let out = decide(Some(blocked), 100 * S + HOUR, p, cost(3));
        assert_eq!(out.decision.retry_after_ms(), MIN);
        assert_eq!(out.write.unwrap().state.level, 1);
        // And COST 0 there reports the initial state.
        let d = decide(Some(blocked), 100 * S + HOUR, p, cost(0)).decision;
        assert_eq!(fields(d), [1, 3, 3, 0, 0]);
    }

    #[test]
    fn blocks_double_up_to_max_and_stay_there() {
        let p = penalty(1, MIN as u64, MIN as u64, 5 * MIN as u64);
        let mut k = Key::new(p);
        let mut now = 0;
        let mut lengths = Vec::new();
        for _ in 0..6 {
            let d = k.call(now, 1).decision;
            lengths.push(d.retry_after_ms() / MIN);
            now += d.retry_after_ms();
        }
        assert_eq!(lengths, [1, 2, 4, 5, 5, 5]);
        assert_eq!(k.state.unwrap().level, 6);
    }

    #[test]
    fn only_the_call_that_starts_a_block_writes_during_it() {
        let mut k = Key::new(login());
        k.call(0, 2);
        let start = k.call(1, 1);
        assert!(!start.decision.allowed);
        assert!(start.write.is_some(), "the block is written");
        for t in [2, 30 * S, MIN] {
            for n in [0, 1, 5] {
                let out = k.call(t, n);
                assert!(!out.decision.allowed);
                assert_eq!(out.write, None, "at {t} COST {n}");
                assert_eq!(out.decision.retry_after_ms(), MIN + 1 - t);
            }
        }
        // The block ends at 60 001: the next strike is counted again.
        assert!(k.call(MIN + 1, 1).write.is_some());
    }

    #[test]
    fn cost_zero_looks_and_writes_nothing() {
        let p = login();
        let empty = decide(None, 5 * S, p, cost(0));
        assert_eq!(empty.write, None);
        assert_eq!(fields(empty.decision), [1, 3, 3, 0, 0]);
        let two = State {
            count: 2,
            window_end: 50 * S,
            level: 0,
            blocked_until: 0,
        };
        let out = decide(Some(two), 20 * S, p, cost(0));
        assert_eq!(out.write, None);
        assert_eq!(fields(out.decision), [1, 3, 1, 0, 30_000]);
        // While blocked: rejected, remaining 0, the time left.
        let blocked = State {
            count: 0,
            window_end: 0,
            level: 1,
            blocked_until: 50 * S,
        };
        let out = decide(Some(blocked), 20 * S, p, cost(0));
        assert_eq!(out.write, None);
        assert_eq!(fields(out.decision), [0, 3, 0, 30_000, 30_000 + HOUR]);
    }

    #[test]
    fn a_cost_of_strikes_or_more_blocks_at_once() {
        for n in [3, 4, MAX_COUNT] {
            let out = decide(None, 0, login(), cost(n));
            assert_eq!(
                fields(out.decision),
                [0, 3, 0, 60_000, 60_000 + HOUR],
                "COST {n}"
            );
            let s = out.write.unwrap();
            assert_eq!((s.state.count, s.state.level), (0, 1));
        }
        // With strikes already counted, the rest of them is enough.
        let two = State {
            count: 2,
            window_end: 50 * S,
            level: 0,
            blocked_until: 0,
        };
        assert!(!decide(Some(two), 0, login(), cost(1)).decision.allowed);
    }

    #[test]
    fn the_window_opens_at_the_first_strike_and_forgets_its_strikes_at_its_end() {
        let mut k = Key::new(login());
        k.call(10 * S, 1);
        k.call(40 * S, 1);
        assert_eq!(k.state.unwrap().window_end, 70 * S);
        // At 70 s the window has ended: this strike is the first of a new one.
        assert_eq!(k.reply(70 * S, 1), [1, 3, 2, 0, 60_000]);
        assert_eq!(k.state.unwrap().window_end, 130 * S);
    }

    #[test]
    fn a_policy_change_reads_the_live_key_under_the_new_parameters() {
        let four = State {
            count: 4,
            window_end: 50 * S,
            level: 0,
            blocked_until: 0,
        };
        let lower = penalty(3, MIN as u64, MIN as u64, HOUR as u64);
        // Strikes lowered below the count: not blocked yet, none remaining, and
        // the next strike blocks.
        let look = decide(Some(four), 10 * S, lower, cost(0));
        assert_eq!(fields(look.decision), [1, 3, 0, 0, 40_000]);
        let strike = decide(Some(four), 10 * S, lower, cost(1));
        assert!(!strike.decision.allowed);
        assert_eq!(strike.write.unwrap().state.level, 1);
        // A longer window keeps the open window's end.
        let longer = penalty(10, HOUR as u64, MIN as u64, HOUR as u64);
        let out = decide(Some(four), 10 * S, longer, cost(1));
        assert_eq!(out.write.unwrap().state.window_end, 50 * S);
        // A lowered max forgives sooner and caps the next block.
        let remembered = State {
            count: 0,
            window_end: 0,
            level: 5,
            blocked_until: 100 * S,
        };
        let short = penalty(3, MIN as u64, MIN as u64, 2 * MIN as u64);
        let d = decide(Some(remembered), 100 * S, short, cost(0)).decision;
        assert_eq!(d.reset_after_ms, 2 * MIN as u64);
        let d = decide(Some(remembered), 100 * S, short, cost(3)).decision;
        assert_eq!(d.retry_after_ms(), 2 * MIN);
        assert_eq!(
            decide(Some(remembered), 100 * S + 2 * MIN, short, cost(3))
                .decision
                .retry_after_ms(),
            MIN
        );
    }

    #[test]
    fn a_clock_stepping_back_never_shortens_a_block_or_drops_strikes() {
        let blocked = State {
            count: 0,
            window_end: 0,
            level: 1,
            blocked_until: 100 * S,
        };
        // Behind the block's start: still blocked, and for longer.
        let d = decide(Some(blocked), 10 * S, login(), cost(1));
        assert_eq!(d.write, None);
        assert_eq!(d.decision.retry_after_ms(), 90_000);
        let two = State {
            count: 2,
            window_end: 100 * S,
            level: 0,
            blocked_until: 0,
        };
        // Before the window opened: its strikes still count.
        let d = decide(Some(two), 10 * S, login(), cost(1)).decision;
        assert!(!d.allowed);
        let d = decide(Some(two), 10 * S, login(), cost(0)).decision;
        assert_eq!((d.remaining, d.reset_after_ms), (1, 90_000));
    }

    #[test]
    fn a_block_longer_than_max_cannot_be_built() {
        let m = |ms| Interval::from_ms(ms).unwrap();
        let one = Count::new(1).unwrap();
        assert_eq!(Penalty::new(one, m(1), m(2), m(1)), None);
        assert!(Penalty::new(one, m(1), m(2), m(2)).is_some());
    }

    #[test]
    fn block_lengths_saturate_at_max_for_any_level() {
        let p = penalty(1, 1, MAX_DURATION_MS, MAX_DURATION_MS);
        assert_eq!(p.block_ms(0), MAX_DURATION_MS);
        let p = penalty(1, 1, 1, MAX_DURATION_MS);
        assert_eq!(p.block_ms(10), 1024);
        assert_eq!(p.block_ms(38), 1 << 38);
        for level in [39, 63, 64, 65, u32::MAX as u64 + 1, MAX_COUNT, u64::MAX] {
            assert_eq!(p.block_ms(level), MAX_DURATION_MS, "level {level}");
        }
    }

    #[test]
    fn huge_values_neither_overflow_nor_break_the_reply() {
        let p = penalty(MAX_COUNT, MAX_DURATION_MS, 1, MAX_DURATION_MS);
        let top = State {
            count: MAX_COUNT,
            window_end: MAX_COUNT as Millis,
            level: MAX_COUNT,
            blocked_until: MAX_COUNT as Millis,
        };
        for now in [
            i64::MIN,
            -1,
            0,
            1_700_000_000_000,
            MAX_COUNT as Millis,
            i64::MAX,
        ] {
            for n in [0, 1, MAX_COUNT] {
                let out = decide(Some(top), now, p, cost(n));
                let d = out.decision;
                assert!(d.remaining <= d.limit);
                assert!(d.reset_after_ms <= MAX_COUNT && d.retry_after_ms() <= MAX_COUNT as i64);
                if let Some(s) = out.write {
                    assert!(s.state.level <= MAX_COUNT);
                    let mut buf = [0; BUF_LEN];
                    assert!(State::parse(s.state.format(&mut buf)).is_some());
                }
            }
        }
        // The level stops at 2^53 − 1, still a readable value.
        let now = MAX_COUNT as Millis;
        let out = decide(Some(top), now, p, cost(MAX_COUNT));
        assert!(!out.decision.allowed);
        assert_eq!(out.write.unwrap().state.level, MAX_COUNT);
    }

    #[test]
    fn the_state_reads_exactly_four_canonical_integers() {
        let s = State {
            count: 2,
            window_end: 1_700_000_060_000,
            level: 1,
            blocked_until: 1_699_999_000_000,
        };
        let mut buf = [0; BUF_LEN];
        let text = s.format(&mut buf).to_vec();
        assert_eq!(text, b"2 1700000060000 1 1699999000000");
        assert_eq!(State::parse(&text), Some(s));
        let max = "9007199254740991 9007199254740991 9007199254740991 9007199254740991";
        let top = State::parse(max.as_bytes()).unwrap();
        assert_eq!(top.format(&mut buf), max.as_bytes());
        assert_eq!(State::parse(b"0 0 0 0"), Some(State::default()));
        for bad in [
            "",
            "0",
            "1 2 3",
            "1 2 3 4 5",
            "1  2 3 4",
            " 1 2 3 4",
            "1 2 3 4 ",
            "01 2 3 4",
            "1 -2 3 4",
            "+1 2 3 4",
            "1 2 3 x",
            "1 2 3 4.0",
            "1,2,3,4",
            "1\t2 3 4",
            "9007199254740992 0 0 0",
            "0 0 0 9007199254740992",
            "0 0 0 18446744073709551616",
        ] {
            assert_eq!(State::parse(bad.as_bytes()), None, "{bad:?}");
        }
    }

    #[test]
    fn times_outside_a_real_clock_are_clamped_so_the_value_reads_back() {
        let s = State {
            count: 1,
            window_end: -5,
            level: 0,
            blocked_until: i64::MAX,
        };
        let mut buf = [0; BUF_LEN];
        assert_eq!(s.format(&mut buf), b"1 0 0 9007199254740991");
    }
}

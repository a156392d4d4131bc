//! Calendar quota (RL.QUOTA): RL.FIXED's counter with a calendar period as its
//! window ("1,000,000 per month from midnight on the 1st, New York time"). The key
//! holds the units used in the current period and expires at its end, so replicas
//! and the AOF only see absolute instants.

use super::fixed::{debit, decide, refund, Counter, Stored, Window};
use super::{one_value_algorithm, Cost, Count, Millis, Outcome};
use crate::calendar::Calendar;

/// At most `limit` units per period of `calendar`: RL.QUOTA's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    pub limit: Count,
    pub calendar: Calendar,
}

impl Window for Quota {
    fn limit(self) -> Count {
        self.limit
    }

    /// The current period's end (memoized per calendar: no time-zone rules on a
    /// call within a period already seen).
    fn end(self, now: Millis) -> Millis {
        self.calendar.period(now).end
    }
}

one_value_algorithm!(
    /// The calendar quota (RL.QUOTA).
    CalendarQuota,
    Counter,
    Quota
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::{Algorithm, Amount, Change, RetryAfter};
    use jiff::Timestamp;

    fn at(s: &str) -> Millis {
        s.parse::<Timestamp>().unwrap().as_millisecond()
    }

    fn quota(limit: u64, line: &str) -> Quota {
        let w: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        let opt = |n: &[u8]| w.windows(2).find(|p| p[0] == n).map(|p| p[1]);
        Quota {
            limit: Count::new(limit).unwrap(),
            calendar: Calendar::parse(w[0], opt(b"EVERY"), opt(b"ON"), opt(b"AT"), opt(b"TZ"))
                .unwrap(),
        }
    }

    fn call(
        state: Option<Counter>,
        now: Millis,
        q: Quota,
        amount: Amount,
    ) -> Outcome<Change<Counter>> {
        CalendarQuota::call(state, now, q, amount)
    }

    #[test]
    fn the_month_on_31_vector_counts_until_the_period_end() {
        let q = quota(1_000_000, "month ON 31 TZ America/New_York");
        let now = at("2026-02-10T12:00-05:00");
        let out = call(None, now, q, Amount::Take(Cost::ONE));
        assert_eq!(
            out.decision.fields(),
            [1, 1_000_000, 999_999, 0, 1_512_000_000]
        );
        assert_eq!(
            out.write,
            Some(Change::Set(Counter {
                used: 1,
                expires_at: at("2026-02-28T00:00-05:00")
            }))
        );
    }

    #[test]
    fn a_new_period_starts_a_fresh_count_and_debt_is_forgiven_at_its_end() {
        let q = quota(2, "day TZ America/New_York");
        let before = at("2026-03-08T23:59:59.999-04:00");
        let out = call(None, before, q, Amount::Debit(Count::new(5).unwrap()));
        let Some(Change::Set(stored)) = out.write else {
            panic!("a debit writes")
        };
        assert_eq!((stored.used, stored.expires_at), (5, before + 1));
        let rejected = call(Some(stored), before, q, Amount::Take(Cost::ONE));
        assert_eq!(rejected.decision.retry_after, RetryAfter::Ms(1));
        assert_eq!(rejected.write, None);
        // Midnight belongs to the new day: the count starts again.
        let next = call(Some(stored), before + 1, q, Amount::Take(Cost::ONE));
        assert_eq!(next.decision.fields(), [1, 2, 1, 0, 24 * 3_600_000]);
    }

    #[test]
    fn cost_above_the_limit_never_passes_and_refund_gives_back() {
        let q = quota(3, "week ON sun");
        let now = at("2026-05-05T00:00Z");
        assert_eq!(
            call(None, now, q, Amount::Take(Cost::new(4).unwrap()))
                .decision
                .retry_after,
            RetryAfter::Never
        );
        let Some(Change::Set(s)) = call(None, now, q, Amount::Take(Cost::new(2).unwrap())).write
        else {
            panic!()
        };
        let back = call(Some(s), now, q, Amount::Refund(Cost::new(5).unwrap()));
        assert_eq!(back.write, Some(Change::Delete));
    }
}

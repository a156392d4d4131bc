//! Concurrency limiter (RL.ACQUIRE / RL.RELEASE): at most `limit` leases held at
//! once, each by name, each ending by itself `ttl` after it was taken or renewed.
//!
//! The state is a set of (id, end) pairs; a lease whose end is at or before `now`
//! has expired and holds no slot. Ends are absolute server times, so a holder that
//! crashes never leaks its slot, and a clock stepping back only makes expired
//! leases count again (it never frees a slot early).

use super::{at_plus, ms_until, Cost, Count, Decision, Interval, Millis, Outcome, RetryAfter};

/// Longest lease id, in bytes.
pub const MAX_ID_LEN: usize = 256;

/// A lease's name, chosen by the caller (a request or job id): 1 ..= 256 bytes,
/// binary-safe.
#[derive(Clone, PartialEq, Eq)]
pub struct LeaseId(Vec<u8>);

impl LeaseId {
    pub fn new(id: &[u8]) -> Option<Self> {
        (1..=MAX_ID_LEN)
            .contains(&id.len())
            .then(|| LeaseId(id.to_vec()))
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl std::fmt::Debug for LeaseId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LeaseId({})", self.0.escape_ascii())
    }
}

/// At most `limit` leases at once, each lasting `ttl` unless renewed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Leases {
    pub limit: Count,
    pub ttl: Interval,
}

/// Read access to the stored leases (expired ones included until an allowed call
/// removes them). Implemented over a sorted set (member = id, score = end) by the
/// storage layer and over a vector in tests.
pub trait LeaseSet {
    /// Leases stored, expired ones included.
    fn stored(&self) -> u64;
    /// Leases that end at or before `t`.
    fn ended_by(&self, t: Millis) -> u64;
    /// When the lease named `id` ends, if it is stored.
    fn end_of(&self, id: &[u8]) -> Option<Millis>;
    /// The soonest end after `t`.
    fn first_end_after(&self, t: Millis) -> Option<Millis>;
    /// The latest end among the leases not named `except` (all when None).
    fn latest_end(&self, except: Option<&[u8]>) -> Option<Millis>;
}

/// The write an allowed ACQUIRE makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    /// Remove the expired leases (those ending at or before this time), if any.
    pub drop_through: Option<Millis>,
    /// The caller's lease's new end; None when it is already that (a renewal in the
    /// same millisecond with the same ttl).
    pub lease_end: Option<Millis>,
    /// The latest live lease's end after the call: the key's expiry.
    pub expires_at: Millis,
}

/// The write a RELEASE makes when `id` held a live lease: remove it and move the
/// key's expiry to the latest lease left, or delete the key when no live lease is
/// left (`expires_at` None).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Release {
    pub expires_at: Option<Millis>,
}

/// Live leases at `now`.
fn live(set: &impl LeaseSet, now: Millis) -> u64 {
    set.stored().saturating_sub(set.ended_by(now))
}

/// The latest end after `now` among the leases not named `except`.
fn latest_live(set: &impl LeaseSet, now: Millis, except: Option<&[u8]>) -> Option<Millis> {
    set.latest_end(except).filter(|&end| end > now)
}

/// One ACQUIRE of lease `id`. A live lease of `id` is renewed (end = now + ttl)
/// and allowed whatever the limit; otherwise a lease is granted iff fewer than
/// `limit` are live. `COST 0` (RL.ALL's inspection) reports the state and writes
/// nothing; any other cost counts one lease.
pub fn acquire(
    set: &impl LeaseSet,
    now: Millis,
    params: Leases,
    id: &[u8],
    cost: Cost,
) -> Outcome<Grant> {
    let limit = params.limit.get();
    let live_now = live(set, now);
    if cost.is_inspection() {
        return Outcome {
            decision: Decision {
                allowed: true,
                limit,
                remaining: limit.saturating_sub(live_now),
                retry_after: RetryAfter::Now,
                reset_after_ms: latest_live(set, now, None).map_or(0, |t| ms_until(t, now)),
            },
            write: None,
        };
    }
    let held = set.end_of(id).filter(|&end| end > now);
    if held.is_none() && live_now >= limit {
        // live_now >= limit >= 1: some lease ends after now.
        let soonest = set.first_end_after(now).unwrap_or(now);
        return Outcome {
            decision: Decision {
                allowed: false,
                limit,
                remaining: 0,
                retry_after: RetryAfter::Ms(ms_until(soonest, now).max(1)),
                reset_after_ms: latest_live(set, now, None).map_or(0, |t| ms_until(t, now)),
            },
            write: None,
        };
    }
    let end = at_plus(now, params.ttl.ms());
    let live_after = if held.is_some() {
        live_now
    } else {
        live_now + 1
    };
    let latest = latest_live(set, now, Some(id)).map_or(end, |t| t.max(end));
    let drop_through = (set.ended_by(now) > 0).then_some(now);
    let lease_end = (held != Some(end)).then_some(end);
    let store = (drop_through.is_some() || lease_end.is_some()).then_some(Grant {
        drop_through,
        lease_end,
        expires_at: latest,
    });
    Outcome {
        decision: Decision {
            allowed: true,
            limit,
            remaining: limit.saturating_sub(live_after),
            retry_after: RetryAfter::Now,
            reset_after_ms: ms_until(latest, now),
        },
        write: store,
    }
}

/// One RELEASE of lease `id`: None when `id` holds no live lease (nothing to
/// write, the reply 0).
pub fn release(set: &impl LeaseSet, now: Millis, id: &[u8]) -> Option<Release> {
    set.end_of(id).filter(|&end| end > now)?;
    Some(Release {
        expires_at: latest_live(set, now, Some(id)),
    })
}

/// Leases in a vector: what the tests and the fuzzer decide against.
#[doc(hidden)]
#[derive(Debug, Default, Clone)]
pub struct VecLeases(pub Vec<(Vec<u8>, Millis)>);

#[doc(hidden)]
impl VecLeases {
    /// Applies an ACQUIRE's write for `id`.
    pub fn grant(&mut self, id: &[u8], grant: &Grant) {
        if let Some(t) = grant.drop_through {
            self.0.retain(|&(_, end)| end > t);
        }
        if let Some(end) = grant.lease_end {
            self.0.retain(|(m, _)| m != id);
            self.0.push((id.to_vec(), end));
        }
    }

    /// Applies a RELEASE's write for `id`.
    pub fn release(&mut self, id: &[u8], release: &Release) {
        match release.expires_at {
            Some(_) => self.0.retain(|(m, _)| m != id),
            None => self.0.clear(),
        }
    }
}

impl LeaseSet for VecLeases {
    fn stored(&self) -> u64 {
        self.0.len() as u64
    }
    fn ended_by(&self, t: Millis) -> u64 {
        self.0.iter().filter(|&&(_, end)| end <= t).count() as u64
    }
    fn end_of(&self, id: &[u8]) -> Option<Millis> {
        self.0.iter().find(|(m, _)| m == id).map(|&(_, end)| end)
    }
    fn first_end_after(&self, t: Millis) -> Option<Millis> {
        self.0
            .iter()
            .map(|&(_, end)| end)
            .filter(|&end| end > t)
            .min()
    }
    fn latest_end(&self, except: Option<&[u8]>) -> Option<Millis> {
        self.0
            .iter()
            .filter(|(m, _)| except != Some(m.as_slice()))
            .map(|&(_, end)| end)
            .max()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::{MAX_COUNT, MAX_DURATION_MS};

    fn params(limit: u64, ttl: u64) -> Leases {
        Leases {
            limit: Count::new(limit).unwrap(),
            ttl: Interval::from_ms(ttl).unwrap(),
        }
    }

    /// ACQUIRE, applying its write; the reply's five fields.
    fn acq(set: &mut VecLeases, now: Millis, limit: u64, ttl: u64, id: &str) -> [i64; 5] {
        let out = acquire(set, now, params(limit, ttl), id.as_bytes(), Cost::ONE);
        if let Some(g) = out.write {
            set.grant(id.as_bytes(), &g);
        }
        let d = out.decision;
        [
            i64::from(d.allowed),
            d.limit as i64,
            d.remaining as i64,
            d.retry_after_ms(),
            d.reset_after_ms as i64,
        ]
    }

    fn rel(set: &mut VecLeases, now: Millis, id: &str) -> i64 {
        match release(set, now, id.as_bytes()) {
            Some(r) => {
                set.release(id.as_bytes(), &r);
                1
            }
            None => 0,
        }
    }

    #[test]
    fn spec_vector_limit_2_ttl_10s() {
        let mut set = VecLeases::default();
        assert_eq!(acq(&mut set, 0, 2, 10_000, "a"), [1, 2, 1, 0, 10_000]);
        assert_eq!(acq(&mut set, 0, 2, 10_000, "b"), [1, 2, 0, 0, 10_000]);
        assert_eq!(acq(&mut set, 0, 2, 10_000, "c"), [0, 2, 0, 10_000, 10_000]);
        assert_eq!(acq(&mut set, 4000, 2, 10_000, "a"), [1, 2, 0, 0, 10_000]);
        assert_eq!(rel(&mut set, 4000, "b"), 1);
        assert_eq!(acq(&mut set, 5000, 2, 10_000, "c"), [1, 2, 0, 0, 10_000]);
        assert_eq!(rel(&mut set, 5000, "b"), 0);
        let mut ends = set.0.clone();
        ends.sort();
        assert_eq!(ends, vec![(b"a".to_vec(), 14_000), (b"c".to_vec(), 15_000)]);
    }

    #[test]
    fn a_lease_holds_its_slot_until_exactly_its_end() {
        let mut set = VecLeases::default();
        acq(&mut set, 1000, 1, 500, "a");
        assert_eq!(acq(&mut set, 1499, 1, 500, "b"), [0, 1, 0, 1, 1]);
        assert_eq!(acq(&mut set, 1500, 1, 500, "b"), [1, 1, 0, 0, 500]);
        assert_eq!(
            set.0,
            vec![(b"b".to_vec(), 2000)],
            "the expired lease is gone"
        );
    }

    #[test]
    fn renewing_at_the_last_ms_keeps_the_slot() {
        let mut set = VecLeases::default();
        acq(&mut set, 0, 1, 1000, "a");
        assert_eq!(acq(&mut set, 999, 1, 1000, "a"), [1, 1, 0, 0, 1000]);
        assert_eq!(set.0, vec![(b"a".to_vec(), 1999)]);
        // One ms later than its end, it is a new lease (and still the only one).
        assert_eq!(acq(&mut set, 1999, 1, 1000, "a"), [1, 1, 0, 0, 1000]);
        assert_eq!(set.0, vec![(b"a".to_vec(), 2999)]);
    }

    #[test]
    fn a_renewal_is_allowed_above_a_lowered_limit() {
        let mut set = VecLeases::default();
        for id in ["a", "b", "c"] {
            acq(&mut set, 0, 3, 1000, id);
        }
        assert_eq!(acq(&mut set, 10, 1, 1000, "b"), [1, 1, 0, 0, 1000]);
        assert_eq!(acq(&mut set, 10, 1, 1000, "d"), [0, 1, 0, 990, 1000]);
    }

    #[test]
    fn rejected_and_unchanged_calls_write_nothing() {
        let set = VecLeases(vec![(b"a".to_vec(), 1000)]);
        let p = params(1, 1000);
        assert_eq!(acquire(&set, 0, p, b"b", Cost::ONE).write, None);
        // Renewed in the same ms with the same ttl: the end is already right.
        assert_eq!(acquire(&set, 0, p, b"a", Cost::ONE).write, None);
        assert!(acquire(&set, 0, p, b"a", Cost::ONE).decision.allowed);
        let inspect = acquire(&set, 500, params(3, 10), b"x", Cost::ZERO);
        assert_eq!(inspect.write, None);
        assert_eq!(
            inspect.decision,
            Decision {
                allowed: true,
                limit: 3,
                remaining: 2,
                retry_after: RetryAfter::Now,
                reset_after_ms: 500
            }
        );
    }

    #[test]
    fn an_allowed_call_removes_expired_leases_and_expires_at_the_latest() {
        let set = VecLeases(vec![(b"old".to_vec(), 100), (b"long".to_vec(), 9000)]);
        let out = acquire(&set, 200, params(5, 1000), b"new", Cost::ONE);
        assert_eq!(
            out.write,
            Some(Grant {
                drop_through: Some(200),
                lease_end: Some(1200),
                expires_at: 9000
            })
        );
        assert_eq!(out.decision.remaining, 3);
        assert_eq!(out.decision.reset_after_ms, 8800);
    }

    #[test]
    fn a_renewal_that_shortens_the_latest_lease_moves_the_expiry_back() {
        // Renewed with a shorter ttl: the key expires at the new latest end.
        let set = VecLeases(vec![(b"a".to_vec(), 9000), (b"b".to_vec(), 3000)]);
        let out = acquire(&set, 1000, params(5, 1000), b"a", Cost::ONE);
        assert_eq!(out.write.map(|g| g.expires_at), Some(3000));
    }

    #[test]
    fn release_frees_a_live_lease_only() {
        let mut set = VecLeases(vec![(b"a".to_vec(), 1000), (b"b".to_vec(), 3000)]);
        assert_eq!(release(&set, 1000, b"a"), None, "expired at its end");
        assert_eq!(release(&set, 0, b"zz"), None);
        assert_eq!(
            release(&set, 0, b"b"),
            Some(Release {
                expires_at: Some(1000)
            })
        );
        assert_eq!(
            release(&set, 999, b"a"),
            Some(Release {
                expires_at: Some(3000)
            })
        );
        // The last live lease: the key goes, expired leases with it.
        assert_eq!(
            release(&set, 2000, b"b"),
            Some(Release { expires_at: None })
        );
        assert_eq!(rel(&mut set, 2000, "b"), 1);
        assert!(set.0.is_empty());
    }

    #[test]
    fn a_clock_stepping_back_never_frees_a_slot() {
        let mut set = VecLeases::default();
        acq(&mut set, 10_000, 1, 1000, "a");
        // Back to before the lease began: it still holds the slot.
        assert_eq!(acq(&mut set, 5000, 1, 1000, "b"), [0, 1, 0, 6000, 6000]);
        // A renewal there ends it sooner, and the key follows.
        let out = acquire(&set, 5000, params(1, 1000), b"a", Cost::ONE);
        assert_eq!(
            out.write.map(|g| (g.lease_end, g.expires_at)),
            Some((Some(6000), 6000))
        );
    }

    #[test]
    fn ids_are_1_to_256_bytes() {
        assert!(LeaseId::new(b"").is_none());
        assert_eq!(LeaseId::new(b"\0\xff").unwrap().as_bytes(), b"\0\xff");
        assert!(LeaseId::new(&[b'x'; MAX_ID_LEN]).is_some());
        assert!(LeaseId::new(&[b'x'; MAX_ID_LEN + 1]).is_none());
    }

    #[test]
    fn bounds_do_not_overflow() {
        let set = VecLeases(vec![(b"a".to_vec(), i64::MAX)]);
        let out = acquire(&set, 0, params(1, MAX_DURATION_MS), b"b", Cost::ONE);
        assert_eq!(out.decision.retry_after_ms(), MAX_COUNT as i64);
        assert_eq!(out.decision.reset_after_ms, MAX_COUNT);
        let out = acquire(
            &VecLeases::default(),
            i64::MAX,
            params(1, MAX_DURATION_MS),
            b"b",
            Cost::ONE,
        );
        assert_eq!(out.write.and_then(|g| g.lease_end), Some(i64::MAX));
    }
}

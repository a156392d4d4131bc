//! RL.ACQUIRE's state: a sorted set of leases, member = the lease's id, score = its
//! end in server ms; the key expires at its latest lease's end. Read in place; an
//! allowed ACQUIRE writes `ZREMRANGEBYSCORE` (the expired leases) + `ZADD` +
//! `PEXPIREAT`; RL.RELEASE of a live lease `ZREM` + `PEXPIREAT`, or `DEL` for the
//! last one.

use super::zset::{after, check_times, time_between};
use super::{From, Kind, Store};
use crate::algorithms::acquire::{self, Grant, LeaseId, LeaseSet};
use crate::algorithms::{Amount, Decision, Millis, Outcome, RetryAfter};
use crate::codec::LEASES_WHAT;
use crate::command::Runs;
use crate::commands::{self, Acquire, Release};
use crate::error::{Error, Result};
use crate::params::Lease;

/// The stored leases, read in place.
struct StoredLeases<'s, S: Store> {
    store: &'s S,
    key: &'s S::Key,
    total: u64,
}

/// Opens the lease set; an absent key holds none. A sorted set whose lowest and
/// highest scores are whole ms times is read as one (members are ids, any bytes).
#[inline]
fn load<'s, S: Store>(store: &'s S, key: &'s S::Key) -> Result<StoredLeases<'s, S>> {
    let total = match store.kind(key) {
        Kind::Empty => 0,
        Kind::SortedSet => {
            check_times(store, key, LEASES_WHAT)?;
            store.zcard(key)
        }
        _ => return Err(Error::WrongType),
    };
    Ok(StoredLeases { store, key, total })
}

impl<S: Store> LeaseSet for StoredLeases<'_, S> {
    fn stored(&self) -> u64 {
        self.total
    }

    fn ended_by(&self, t: Millis) -> u64 {
        if self.total == 0 {
            return 0;
        }
        self.store.zcount_through(self.key, t)
    }

    fn end_of(&self, id: &[u8]) -> Option<Millis> {
        if self.total == 0 {
            return None;
        }
        self.store.zscore(self.key, id).map(time_between)
    }

    fn first_end_after(&self, t: Millis) -> Option<Millis> {
        self.store.znth(self.key, after(t), 0).map(time_between)
    }

    fn latest_end(&self, except: Option<&[u8]>) -> Option<Millis> {
        let mut latest = None;
        self.store.zwalk(self.key, From::Top, |member, score| {
            if except == Some(member) {
                return true;
            }
            latest = Some(time_between(score));
            false
        });
        latest
    }
}

impl Runs for Acquire {
    #[inline]
    fn decide<S: Store>(
        store: &S,
        key: &S::Key,
        p: &Lease,
        now: Millis,
        amount: Amount,
    ) -> Result<Outcome<(LeaseId, Grant)>> {
        let cost = commands::lease_cost(amount)?;
        let set = load(store, key)?;
        let out = acquire::acquire(&set, now, p.leases, p.id.as_bytes(), cost);
        Ok(Outcome {
            decision: out.decision,
            write: out.write.map(|g| (p.id.clone(), g)),
        })
    }

    /// Removes the expired leases, adds or renews the caller's, and moves the
    /// expiry when it did. A failure stops there: what was written stays written
    /// (and propagated).
    #[inline]
    fn store<S: Store>(store: &mut S, key: &S::Key, (id, grant): (LeaseId, Grant)) -> Result<()> {
        if !matches!(store.kind(key), Kind::Empty | Kind::SortedSet) {
            return Err(Error::WrongType);
        }
        if let Some(t) = grant.drop_through {
            store.zremrangebyscore(key, t)?;
        }
        if let Some(end) = grant.lease_end {
            store.zadd(key, end, id.as_bytes())?;
            store.pexpireat(key, grant.expires_at)?;
        }
        Ok(())
    }
}

impl Runs for Release {
    /// Allowed when `id` holds a live lease (its removal the write); every other
    /// field of the decision is 0.
    #[inline]
    fn decide<S: Store>(
        store: &S,
        key: &S::Key,
        id: &LeaseId,
        now: Millis,
        _amount: Amount,
    ) -> Result<Outcome<(LeaseId, acquire::Release)>> {
        let release = acquire::release(&load(store, key)?, now, id.as_bytes());
        Ok(Outcome {
            decision: Decision {
                allowed: release.is_some(),
                limit: 0,
                remaining: 0,
                retry_after: RetryAfter::Now,
                reset_after_ms: 0,
            },
            write: release.map(|r| (id.clone(), r)),
        })
    }

    /// `ZREM` of the lease + `PEXPIREAT` at the latest lease left, or `DEL` when
    /// none is left.
    #[inline]
    fn store<S: Store>(
        store: &mut S,
        key: &S::Key,
        (id, release): (LeaseId, acquire::Release),
    ) -> Result<()> {
        let Some(at) = release.expires_at else {
            return store.del(key);
        };
        store.zrem(key, &[id.as_bytes()])?;
        store.pexpireat(key, at)
    }
}

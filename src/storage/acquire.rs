//! RL.ACQUIRE's state: a native sorted set of leases, member = the lease's id,
//! score = its end in server ms. The key expires at its latest lease's end.

use super::zset::{self, members_through, IfPresent, Range, Written};
use super::{effects, injected, Key, Kind, Server};
use crate::server::{ServerString, StrRef};
use rl_core::algorithms::acquire::{self, Grant, LeaseId, LeaseSet, Release};
use rl_core::algorithms::{Amount, Millis, Outcome};
use rl_core::command::Runs;
use rl_core::commands;
use rl_core::error::{Error, Result};
use rl_core::params::Lease;

const WHAT: &str = "an RL.ACQUIRE lease set (a sorted set of lease ends in ms)";

/// The stored leases, read in place.
pub struct ZsetLeases<'k> {
    key: &'k Key,
    total: u64,
}

/// Opens the lease set; an absent key holds none. A sorted set whose lowest and
/// highest scores are whole ms times is read as one (members are ids, any bytes);
/// any other sorted set is the "does not hold" error (`zset::check_times`, the
/// check RL.SLIDING's log passes too).
pub fn load(key: &Key) -> Result<ZsetLeases<'_>> {
    match key.kind() {
        Kind::Empty => Ok(ZsetLeases { key, total: 0 }),
        Kind::SortedSet => {
            zset::check_times(key, WHAT)?;
            Ok(ZsetLeases {
                key,
                total: key.element_count(),
            })
        }
        _ => Err(Error::WrongType),
    }
}

/// A score read as a lease end (interior scores of a foreign set rounded up).
fn end(score: f64) -> Millis {
    zset::time_between(score)
}

impl LeaseSet for ZsetLeases<'_> {
    fn stored(&self) -> u64 {
        self.total
    }

    fn ended_by(&self, t: Millis) -> u64 {
        if self.total == 0 {
            return 0;
        }
        Range::scores(self.key, f64::NEG_INFINITY, t as f64, false).count()
    }

    fn end_of(&self, id: &[u8]) -> Option<Millis> {
        if self.total == 0 {
            return None;
        }
        let member = ServerString::new(id)?;
        self.key.zset_score(&member).map(end)
    }

    fn first_end_after(&self, t: Millis) -> Option<Millis> {
        let (_, score) = Range::scores(self.key, t as f64, f64::INFINITY, true).current()?;
        Some(end(score))
    }

    fn latest_end(&self, except: Option<&[u8]>) -> Option<Millis> {
        let mut range = Range::last(self.key);
        loop {
            let (member, score) = range.current()?;
            if except != Some(member.bytes()) {
                return Some(end(score));
            }
            if !range.retreat() {
                return None;
            }
        }
    }
}

/// Applies an allowed ACQUIRE: removes the expired leases, adds or renews lease
/// `id`, sets the expiry, and only then propagates what was written
/// (`ZREMRANGEBYSCORE key -inf now`, `ZADD key end id`, `PEXPIREAT`), firing the
/// events those fire on a replica. A failed write stops there and exactly what was
/// written is propagated, as for RL.SLIDING's log.
pub fn store(key: &Key, id: &[u8], grant: Grant) -> Result<()> {
    if !matches!(key.kind(), Kind::Empty | Kind::SortedSet) {
        return Err(Error::WrongType);
    }
    let member = ServerString::new(id).ok_or(Error::WriteFailed("creating a string"))?;
    let score = match grant.lease_end {
        Some(at) => {
            Some(ServerString::from_i64(at).ok_or(Error::WriteFailed("creating a string"))?)
        }
        None => None,
    };
    let drop_through = grant.drop_through.unwrap_or(Millis::MIN);
    let gone = grant
        .drop_through
        .map_or_else(Vec::new, |t| members_through(key, t));
    let (removed, mut failed) = zset::remove_members(key, &gone, "removing expired leases");
    let mut written = Written {
        gone: gone.len(),
        removed,
        emptied: removed > 0 && key.kind() == Kind::Empty,
        ..Written::default()
    };
    if let (None, Some(at)) = (failed, grant.lease_end) {
        let ok = !injected(key, "add")
            && key
                .zset_add(at as f64, &member, IfPresent::Update)
                .is_some();
        if ok {
            written.added = 1;
        } else {
            failed = Some("adding the lease");
        }
    }
    if written.added > 0 {
        written.expiry = !injected(key, "expiry") && key.set_expires_at(grant.expires_at);
        if !written.expiry && failed.is_none() {
            failed = Some("setting the expiry");
        }
    }
    let pairs: Vec<StrRef> = score
        .iter()
        .flat_map(|s| [s.as_ref(), member.as_ref()])
        .collect();
    zset::propagate(key, written, drop_through, &gone, &pairs, grant.expires_at)?;
    if written.removed > 0 || written.added > 0 {
        key.signal_modified();
    }
    match failed {
        Some(what) => Err(Error::WriteFailed(what)),
        None => Ok(()),
    }
}

/// Applies a RELEASE of a live lease: `ZREM key id` + `PEXPIREAT` at the latest
/// lease left, or `DEL` when no live lease is left.
pub fn release(key: &Key, id: &[u8], release: Release) -> Result<()> {
    let Some(expires_at) = release.expires_at else {
        return super::delete(key);
    };
    if key.kind() != Kind::SortedSet {
        return Err(Error::WrongType);
    }
    let member = ServerString::new(id).ok_or(Error::WriteFailed("creating a string"))?;
    let (removed, failed) = zset::remove_members(key, [&member], "removing the lease");
    if removed == 0 {
        return Err(Error::WriteFailed(failed.unwrap_or("removing the lease")));
    }
    let expiry = !injected(key, "expiry") && key.set_expires_at(expires_at);
    effects::zrem(key, &[member.as_ref()], key.kind() == Kind::Empty)?;
    if expiry {
        effects::pexpireat(key, expires_at)?;
    }
    key.signal_modified();
    if expiry {
        Ok(())
    } else {
        Err(Error::WriteFailed("setting the expiry"))
    }
}

/// RL.ACQUIRE on the server's keys: the leases read in place, the grant applied
/// by [`store`].
impl Runs<commands::Acquire> for Server {
    fn decide(
        &mut self,
        key: &Key,
        p: &Lease,
        now: Millis,
        amount: Amount,
    ) -> Result<Outcome<(LeaseId, Grant)>> {
        let cost = commands::lease_cost(amount)?;
        let set = load(key)?;
        let out = acquire::acquire(&set, now, p.leases, p.id.as_bytes(), cost);
        Ok(Outcome {
            decision: out.decision,
            write: out.write.map(|g| (p.id.clone(), g)),
        })
    }

    fn store(&mut self, key: &Key, (id, grant): (LeaseId, Grant)) -> Result<()> {
        store(key, id.as_bytes(), grant)
    }
}

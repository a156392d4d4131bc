//! RL's commands over an in-memory [`Keyspace`]: what the module does to Redis keys,
//! done to a model of them, with no server. The command table, the parsers, the
//! algorithms and the state formats are the module's own; what this adds is the
//! few lines of key handling the module's storage does with the server's key API
//! (type checks, which key content is a state, what a write leaves in the key).
//!
//! It exists to hold the Functions library (functions/rl.lua, run in-process
//! against the same kind of keyspace) to the Rust code call by call and byte by
//! byte, to run the shared vectors (vectors/vectors.json) without a server, and to
//! let the fuzzer drive whole commands. The module's own storage is held to the
//! same behaviour by the integration tests on real servers.

use crate::algorithms::acquire::{self, VecLeases};
use crate::algorithms::bucket::{self, TokenBucket};
use crate::algorithms::fixed::FixedWindow;
use crate::algorithms::gcra::Gcra;
use crate::algorithms::penalty::EscalatingBlocks;
use crate::algorithms::sliding::{Log, SlidingLog, VecLog, Write};
use crate::algorithms::sliding_counter::SlidingWindowCounter;
use crate::algorithms::{Algorithm, Amount, Change, Cost, Decision, Millis, MAX_COUNT};
use crate::all::Policy;
use crate::codec::{self, StringState};
use crate::decimal;
use crate::error::{Error, Result};
use crate::keyspace::{Keyspace, Kind, Value, WrongType};
use crate::params;
use crate::table::{self, Command, CostArg};

pub use crate::table::SLIDING_MAX_LIMIT;

/// Runs one command line at server time `now`: an RL command as the module runs
/// it, anything else as the keyspace's model of Redis runs it. `Err` is the whole
/// error line (`ERR …`, `WRONGTYPE …`).
pub fn call(ks: &mut Keyspace, now: Millis, argv: &[&[u8]]) -> std::result::Result<Value, String> {
    let Some(command) = argv.first().and_then(|name| table::find(name)) else {
        return ks.command(now, argv);
    };
    if !command.accepts_argc(argv.len()) {
        if let Some(e) = command.refused_option(argv.get(command.min_argc).copied()) {
            return Err(format!("{} {e}", e.code()));
        }
        return Err(format!(
            "ERR wrong number of arguments for '{}' command",
            command.name_str().to_lowercase()
        ));
    }
    run(ks, now, command, argv).map_err(|e| format!("{} {e}", e.code()))
}

/// An RL command whose arity is right.
fn run(ks: &mut Keyspace, now: Millis, command: &Command, argv: &[&[u8]]) -> Result<Value> {
    let key = argv[1];
    let rest = &argv[2..];
    if command.name == table::THROTTLE.name {
        let (emission, amount) = params::throttle(rest)?;
        let d = string::<Gcra>(ks, key, now, emission, amount)?;
        return Ok(throttle_reply(&d));
    }
    if command.name == table::RELEASE.name {
        return release(ks, key, now, rest[0]);
    }
    if command.name == table::ACQUIRE.name {
        let lease = params::lease(rest, SLIDING_MAX_LIMIT)?;
        return Ok(reply(&acquire(ks, key, now, &lease, amount_one())?));
    }
    if command.name == table::ALL.name {
        return all(ks, now, &argv[1..]);
    }
    let d = if command.name == table::FIXED.name {
        let (quota, o) = params::with_options(command, rest, params::quota)?;
        string::<FixedWindow>(ks, key, now, quota, o.amount)?
    } else if command.name == table::SLIDINGCOUNTER.name {
        let (quota, o) = params::with_options(command, rest, params::quota)?;
        string::<SlidingWindowCounter>(ks, key, now, quota, o.amount)?
    } else if command.name == table::GCRA.name {
        let (mut e, o) = params::with_options(command, rest, params::emission)?;
        if let Some(max) = o.delay {
            e = e.with_delay(max);
        }
        string::<Gcra>(ks, key, now, e, o.amount)?
    } else if command.name == table::BUCKET.name {
        let (rate, o) = params::with_options(command, rest, params::rate)?;
        bucket(ks, key, now, rate, o.amount)?
    } else if command.name == table::PENALTY.name {
        let (p, o) = params::with_options(command, rest, params::penalty)?;
        string::<EscalatingBlocks>(ks, key, now, p, o.amount)?
    } else if command.name == table::SLIDING.name {
        let (quota, o) =
            params::with_options(command, rest, |p| params::sliding(p, SLIDING_MAX_LIMIT))?;
        sliding(ks, key, now, quota, o.amount)?
    } else {
        debug_assert!(matches!(command.cost, CostArg::Option));
        return Err(Error::Internal("an unknown command"));
    };
    Ok(reply(&d))
}

/// RL.ALL: every key decided at one instant, all written or none. Each policy runs
/// as its own command on a copy of the keyspace (the keys are distinct, so one
/// after the other is the same instant); the copy is kept only if all allow.
fn all(ks: &mut Keyspace, now: Millis, args: &[&[u8]]) -> Result<Value> {
    let call = crate::all::parse(args, SLIDING_MAX_LIMIT)?;
    let keys = &args[1..=call.keys()];
    let mut trial = ks.clone();
    let mut decisions = Vec::with_capacity(call.keys() + 1);
    for (key, policy) in keys.iter().zip(&call.policies) {
        decisions.push(policy_call(
            &mut trial,
            key,
            now,
            policy,
            policy.amount(call.amount),
        )?);
    }
    if call.allows(&decisions) {
        *ks = trial;
    } else {
        for ((key, policy), d) in keys.iter().zip(&call.policies).zip(decisions.iter_mut()) {
            let state = policy_call(ks, key, now, policy, Amount::Take(Cost::ZERO))?;
            *d = crate::all::unchanged(*d, state);
        }
    }
    decisions.insert(0, call.combine(&decisions));
    Ok(Value::Array(decisions.iter().map(reply).collect()))
}

/// One key of an RL.ALL call, as its own command runs it.
fn policy_call(
    ks: &mut Keyspace,
    key: &[u8],
    now: Millis,
    policy: &Policy,
    amount: Amount,
) -> Result<Decision> {
    match policy {
        Policy::Fixed(q) => string::<FixedWindow>(ks, key, now, *q, amount),
        Policy::Sliding(q) => sliding(ks, key, now, *q, amount),
        Policy::Bucket(r) => bucket(ks, key, now, *r, amount),
        Policy::Gcra(e) => string::<Gcra>(ks, key, now, *e, amount),
        Policy::SlidingCounter(q) => string::<SlidingWindowCounter>(ks, key, now, *q, amount),
        Policy::Acquire(lease) => acquire(ks, key, now, lease, amount),
        Policy::Penalty(p) => string::<EscalatingBlocks>(ks, key, now, *p, amount),
    }
}

fn amount_one() -> Amount {
    Amount::Take(Cost::ONE)
}

/// RL's five integers.
fn reply(d: &Decision) -> Value {
    Value::Array(d.fields().into_iter().map(Value::Int).collect())
}

/// CL.THROTTLE's five integers, as redis-cell answers.
fn throttle_reply(d: &Decision) -> Value {
    Value::Array(d.throttle_fields().into_iter().map(Value::Int).collect())
}

fn wrong(_: WrongType) -> Error {
    Error::WrongType
}

/// A limiter whose state is one string: load, decide, store.
fn string<A>(
    ks: &mut Keyspace,
    key: &[u8],
    now: Millis,
    params: A::Params,
    amount: Amount,
) -> Result<Decision>
where
    A: StringState + Algorithm<State = Option<A::Value>, Write = Change<A::Stored>>,
{
    let state = match ks.kind(key, now) {
        Kind::Empty => None,
        Kind::String => {
            let value = ks.string(key, now).unwrap_or_default();
            let expires_at = if A::READS_EXPIRY {
                ks.expires_at(key, now)
            } else {
                None
            };
            Some(A::decode(value, expires_at).ok_or(Error::NotALimiter(A::WHAT))?)
        }
        _ => return Err(Error::WrongType),
    };
    let out = A::call(state, now, params, amount);
    match out.write {
        Some(Change::Set(stored)) => {
            A::encode(&stored, |value, expires_at| {
                ks.set_string(key, value, Some(expires_at))
            });
        }
        Some(Change::Delete) => {
            ks.delete(key, now);
        }
        None => {}
    }
    Ok(out.decision)
}

/// RL.BUCKET: a hash of `tokens` and `ts`.
fn bucket(
    ks: &mut Keyspace,
    key: &[u8],
    now: Millis,
    rate: crate::algorithms::Rate,
    amount: Amount,
) -> Result<Decision> {
    let state = match ks.kind(key, now) {
        Kind::Empty => None,
        Kind::Hash => {
            let tokens = ks.hash_get(key, b"tokens", now).map_err(wrong)?;
            let ts = ks.hash_get(key, b"ts", now).map_err(wrong)?;
            Some(TokenBucket::decode(tokens, ts).ok_or(Error::NotALimiter(TokenBucket::WHAT))?)
        }
        _ => return Err(Error::WrongType),
    };
    let out = TokenBucket::call(state, now, rate, amount);
    match out.write {
        Some(Change::Set(bucket::Stored { bucket, expires_at })) => {
            let mut buf = [0u8; 48];
            let level = codec::format_micros(bucket.level_micros, &mut buf).to_vec();
            let mut ts = itoa::Buffer::new();
            ks.hash_set(key, b"tokens", &level, now).map_err(wrong)?;
            ks.hash_set(key, b"ts", ts.format(bucket.ts).as_bytes(), now)
                .map_err(wrong)?;
            ks.set_expiry(key, Some(expires_at), now);
        }
        Some(Change::Delete) => {
            ks.delete(key, now);
        }
        None => {}
    }
    Ok(out.decision)
}

/// A sorted set's (member, score) pairs, lowest score first.
type Members = Vec<(Vec<u8>, f64)>;

/// A sorted set's members in order, its edges checked as every sorted-set reader
/// checks them: None when it is no log RL could have written.
fn zset_members(ks: &Keyspace, key: &[u8], now: Millis) -> Result<Option<Members>> {
    match ks.kind(key, now) {
        Kind::Empty => Ok(Some(Vec::new())),
        Kind::Zset => {
            let members = ks.zset_members(key, now).map_err(wrong)?;
            let edges_valid = [members.first(), members.last()]
                .into_iter()
                .all(|m| m.is_some_and(|&(_, score)| codec::log_time(score).is_some()));
            Ok(edges_valid.then(|| members.iter().map(|&(m, s)| (m.to_vec(), s)).collect()))
        }
        _ => Err(Error::WrongType),
    }
}

/// RL.SLIDING: one member per unit, named by a sequence number, scored by its ms.
fn sliding(
    ks: &mut Keyspace,
    key: &[u8],
    now: Millis,
    quota: crate::algorithms::Quota,
    amount: Amount,
) -> Result<Decision> {
    let members = zset_members(ks, key, now)?.ok_or(Error::NotALimiter(codec::SLIDING_WHAT))?;
    let log = VecLog(
        members
            .iter()
            .map(|&(_, s)| codec::log_time(s).unwrap_or(Millis::MAX))
            .collect(),
    );
    let newest = log.newest();
    let out = SlidingLog::call(&log, now, quota, amount);
    let Some(write) = out.write else {
        return Ok(out.decision);
    };
    let through = |t: Millis| {
        members
            .iter()
            .filter(move |&&(_, s)| s <= t as f64)
            .map(|(m, _)| m.clone())
    };
    match write {
        Write::Append(append) => {
            // One past the highest sequence number at the newest time.
            let mut next = newest.map_or(0, |newest| {
                members
                    .iter()
                    .filter(|&&(_, s)| s >= newest as f64)
                    .filter_map(|(m, _)| decimal::digits(m))
                    .map(|seq| seq.saturating_add(1))
                    .max()
                    .unwrap_or(0)
            });
            for member in through(append.drop_through) {
                ks.zset_remove(key, &member, now).map_err(wrong)?;
            }
            let mut digits = itoa::Buffer::new();
            let mut added = 0;
            while added < append.units {
                let seq = next;
                next = next
                    .checked_add(1)
                    .ok_or(Error::WriteFailed("logging the new units"))?;
                let member = digits.format(seq).as_bytes();
                if ks.zset_score(key, member, now).map_err(wrong)?.is_none() {
                    ks.zset_add(key, member, append.at as f64, now)
                        .map_err(wrong)?;
                    added += 1;
                }
            }
            if append.units > 0 {
                ks.set_expiry(key, Some(append.expires_at), now);
            }
        }
        Write::Remove(removal) => {
            let Some(expires_at) = removal.expires_at else {
                ks.delete(key, now);
                return Ok(out.decision);
            };
            let newest_members: Vec<Vec<u8>> = members
                .iter()
                .rev()
                .take(usize::try_from(removal.newest).unwrap_or(usize::MAX))
                .map(|(m, _)| m.clone())
                .collect();
            for member in through(removal.drop_through).chain(newest_members) {
                ks.zset_remove(key, &member, now).map_err(wrong)?;
            }
            ks.set_expiry(key, Some(expires_at), now);
        }
    }
    Ok(out.decision)
}

/// The leases of an RL.ACQUIRE key.
fn leases(ks: &Keyspace, key: &[u8], now: Millis) -> Result<VecLeases> {
    let members = zset_members(ks, key, now)?.ok_or(Error::NotALimiter(codec::LEASES_WHAT))?;
    Ok(VecLeases(
        members
            .into_iter()
            .map(|(m, s)| (m, codec::log_time(s).unwrap_or(Millis::MAX)))
            .collect(),
    ))
}

/// RL.ACQUIRE: member = the lease's id, score = its end.
fn acquire(
    ks: &mut Keyspace,
    key: &[u8],
    now: Millis,
    lease: &params::Lease,
    amount: Amount,
) -> Result<Decision> {
    let Amount::Take(cost) = amount else {
        return Err(Error::LeaseRefund);
    };
    let set = leases(ks, key, now)?;
    let id = lease.id.as_bytes();
    let out = acquire::acquire(&set, now, lease.leases, id, cost);
    if let Some(grant) = out.write {
        if let Some(t) = grant.drop_through {
            for (member, _) in set.0.iter().filter(|&&(_, end)| end <= t) {
                ks.zset_remove(key, member, now).map_err(wrong)?;
            }
        }
        if let Some(end) = grant.lease_end {
            ks.zset_add(key, id, end as f64, now).map_err(wrong)?;
        }
        ks.set_expiry(key, Some(grant.expires_at), now);
    }
    Ok(out.decision)
}

/// RL.RELEASE: 1 if `id` held a live lease, now removed; 0 otherwise.
fn release(ks: &mut Keyspace, key: &[u8], now: Millis, id: &[u8]) -> Result<Value> {
    let id = params::lease_id(id)?;
    let set = leases(ks, key, now)?;
    let Some(release) = acquire::release(&set, now, id.as_bytes()) else {
        return Ok(Value::Int(0));
    };
    match release.expires_at {
        Some(at) => {
            ks.zset_remove(key, id.as_bytes(), now).map_err(wrong)?;
            ks.set_expiry(key, Some(at), now);
        }
        None => {
            ks.delete(key, now);
        }
    }
    Ok(Value::Int(1))
}

/// Keeps `MAX_COUNT` in view: every reply integer is at most 2^53 − 1.
const _: () = assert!(MAX_COUNT < i64::MAX as u64);

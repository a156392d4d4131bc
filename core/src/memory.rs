//! RL's commands over an in-memory [`Keyspace`]: what the module does to Redis keys,
//! done to a model of them, with no server. The command table, the parsers, the
//! algorithms, the state formats and the executor ([`crate::exec`],
//! [`crate::command::apply`]) are the module's own; what this adds is the storage:
//! the few lines of key handling the module's storage does with the server's key
//! API (type checks, which key content is a state, what a write leaves in the key),
//! as [`Runs`] for each command.
//!
//! It exists to hold the Functions library (functions/rl.lua, run in-process
//! against the same kind of keyspace) to the Rust code call by call and byte by
//! byte, to run the shared vectors (vectors/vectors.json) without a server, and to
//! let the fuzzer drive whole commands. The module's own storage is held to the
//! same behaviour by the integration tests on real servers.

use crate::algorithms::acquire::{self, LeaseId, VecLeases};
use crate::algorithms::bucket::{self, TokenBucket};
use crate::algorithms::fixed::FixedWindow;
use crate::algorithms::gcra::Gcra as GcraAlgorithm;
use crate::algorithms::penalty::EscalatingBlocks;
use crate::algorithms::share::{self, Fields};
use crate::algorithms::sliding::{Log, SlidingLog, VecLog, Write};
use crate::algorithms::sliding_counter::SlidingWindowCounter;
use crate::algorithms::{Algorithm, Amount, Change, Millis, Outcome, Rate, WindowLimit, MAX_COUNT};
use crate::codec::{self, StringState};
use crate::command::{apply, Backend, Runs, Settings, Spec};
use crate::commands::{self, Visit};
use crate::decimal;
use crate::error::{Error, Result};
use crate::keyspace::{Keyspace, Kind, Value, WrongType};
use crate::params;

pub use crate::table::SLIDING_MAX_LIMIT;

/// Runs one command line at server time `now`: an RL command as the module runs
/// it, anything else as the keyspace's model of Redis runs it. `Err` is the whole
/// error line (`ERR …`, `WRONGTYPE …`).
pub fn call(ks: &mut Keyspace, now: Millis, argv: &[&[u8]]) -> std::result::Result<Value, String> {
    let Some(command) = argv.first().and_then(|name| commands::find(name)) else {
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
    let line = Line {
        memory: Memory { ks, now },
        argv,
    };
    commands::visit(command, line)
        .unwrap_or(Err(Error::Internal("a command outside the list")))
        .map_err(|e| format!("{} {e}", e.code()))
}

/// The keyspace at one instant: the in-memory executor's backend.
pub struct Memory<'k> {
    ks: &'k mut Keyspace,
    now: Millis,
}

impl Backend for Memory<'_> {
    type Key = Vec<u8>;
}

impl Memory<'_> {
    /// A key, typed as the backend's: inside a `where Memory: Runs<C>` scope the
    /// compiler does not see that it is a `Vec<u8>`.
    fn key(&self, name: &[u8]) -> <Self as Backend>::Key {
        name.to_vec()
    }
}

/// One call whose arity is right, for [`commands::visit`] to run.
struct Line<'k, 'a> {
    memory: Memory<'k>,
    argv: &'a [&'a [u8]],
}

impl<'k> Visit<Memory<'k>> for Line<'k, '_> {
    type Output = Result<Value>;

    fn single<C: Spec>(mut self) -> Result<Value>
    where
        Memory<'k>: Runs<C>,
    {
        let (params, amount) = C::parse(&self.argv[2..], Settings::DEFAULT)?;
        let key = self.memory.key(self.argv[1]);
        let now = self.memory.now;
        let d = apply::<C, _>(&mut self.memory, &key, &params, now, amount)?;
        Ok(integers(C::fields(&d)))
    }

    fn all(mut self) -> Result<Value> {
        let args = &self.argv[1..];
        let call = crate::all::parse(args, Settings::DEFAULT)?;
        let keys: Vec<Vec<u8>> = args[1..=call.keys()].iter().map(|k| k.to_vec()).collect();
        let now = self.memory.now;
        let decisions = crate::exec::all(&mut self.memory, &keys, &call, now)?;
        Ok(Value::Array(
            decisions.iter().map(|d| integers(d.fields())).collect(),
        ))
    }

    fn release(self) -> Result<Value> {
        release(self.memory.ks, self.argv[1], self.memory.now, self.argv[2])
    }
}

fn integers(fields: [i64; 5]) -> Value {
    Value::Array(fields.into_iter().map(Value::Int).collect())
}

fn wrong(_: WrongType) -> Error {
    Error::WrongType
}

/// A limiter whose state is one string: RL.FIXED, RL.GCRA (and CL.THROTTLE),
/// RL.SLIDINGCOUNTER, RL.PENALTY.
macro_rules! string_state {
    ($($command:ident => $algorithm:ty),* $(,)?) => {$(
        impl Runs<commands::$command> for Memory<'_> {
            fn decide(
                &mut self,
                key: &Vec<u8>,
                params: &<commands::$command as Spec>::Params,
                now: Millis,
                amount: Amount,
            ) -> Result<Outcome<<commands::$command as Spec>::Write>> {
                let state = load_string::<$algorithm>(self.ks, key, now)?;
                Ok(<$algorithm>::call(state, now, *params, amount))
            }

            fn store(&mut self, key: &Vec<u8>, write: <commands::$command as Spec>::Write) -> Result<()> {
                store_string::<$algorithm>(self.ks, key, self.now, write);
                Ok(())
            }
        }
    )*};
}

string_state! {
    Fixed => FixedWindow,
    Gcra => GcraAlgorithm,
    Throttle => GcraAlgorithm,
    SlidingCounter => SlidingWindowCounter,
    Penalty => EscalatingBlocks,
}

/// A string state: None for an absent key.
fn load_string<A>(ks: &Keyspace, key: &[u8], now: Millis) -> Result<Option<A::Value>>
where
    A: StringState,
{
    match ks.kind(key, now) {
        Kind::Empty => Ok(None),
        Kind::String => {
            let value = ks.string(key, now).unwrap_or_default();
            let expires_at = if A::READS_EXPIRY {
                ks.expires_at(key, now)
            } else {
                None
            };
            Ok(Some(
                A::decode(value, expires_at).ok_or(Error::NotALimiter(A::WHAT))?,
            ))
        }
        _ => Err(Error::WrongType),
    }
}

fn store_string<A: StringState>(
    ks: &mut Keyspace,
    key: &[u8],
    now: Millis,
    write: Change<A::Stored>,
) {
    match write {
        Change::Set(stored) => {
            A::encode(&stored, |value, expires_at| {
                ks.set_string(key, value, Some(expires_at))
            });
        }
        Change::Delete => {
            ks.delete(key, now);
        }
    }
}

/// RL.BUCKET: a hash of `tokens` and `ts`.
impl Runs<commands::Bucket> for Memory<'_> {
    fn decide(
        &mut self,
        key: &Vec<u8>,
        rate: &Rate,
        now: Millis,
        amount: Amount,
    ) -> Result<Outcome<<TokenBucket as Algorithm>::Write>> {
        let state = match self.ks.kind(key, now) {
            Kind::Empty => None,
            Kind::Hash => {
                let tokens = self.ks.hash_get(key, b"tokens", now).map_err(wrong)?;
                let ts = self.ks.hash_get(key, b"ts", now).map_err(wrong)?;
                Some(TokenBucket::decode(tokens, ts).ok_or(Error::NotALimiter(TokenBucket::WHAT))?)
            }
            _ => return Err(Error::WrongType),
        };
        Ok(TokenBucket::call(state, now, *rate, amount))
    }

    fn store(&mut self, key: &Vec<u8>, write: <TokenBucket as Algorithm>::Write) -> Result<()> {
        let (ks, now) = (&mut *self.ks, self.now);
        match write {
            Change::Set(bucket::Stored { bucket, expires_at }) => {
                let mut buf = [0u8; 48];
                let level = codec::format_micros(bucket.level_micros, &mut buf).to_vec();
                let mut ts = itoa::Buffer::new();
                ks.hash_set(key, b"tokens", &level, now).map_err(wrong)?;
                ks.hash_set(key, b"ts", ts.format(bucket.ts).as_bytes(), now)
                    .map_err(wrong)?;
                ks.set_expiry(key, Some(expires_at), now);
            }
            Change::Delete => {
                ks.delete(key, now);
            }
        }
        Ok(())
    }
}

/// An RL.SHARE budget's hash, read one field at a time (no key: no fields).
struct HashFields<'k> {
    ks: &'k Keyspace,
    key: &'k [u8],
    now: Millis,
}

impl<'k> Fields for HashFields<'k> {
    type Value = &'k [u8];
    fn field(&self, name: &[u8]) -> Option<&'k [u8]> {
        // The key's type is checked before: a hash, or no key.
        self.ks.hash_get(self.key, name, self.now).ok().flatten()
    }
}

/// RL.SHARE: one hash, read and written field by field.
impl Runs<commands::Share> for Memory<'_> {
    fn decide(
        &mut self,
        key: &Vec<u8>,
        params: &share::Share,
        now: Millis,
        amount: Amount,
    ) -> Result<Outcome<share::Write>> {
        match self.ks.kind(key, now) {
            Kind::Empty | Kind::Hash => {}
            _ => return Err(Error::WrongType),
        }
        let fields = HashFields {
            ks: self.ks,
            key,
            now,
        };
        share::call(&fields, now, params, amount)
    }

    fn store(&mut self, key: &Vec<u8>, write: share::Write) -> Result<()> {
        let (ks, now) = (&mut *self.ks, self.now);
        match write {
            Change::Set(changes) => {
                for (field, value) in changes.set() {
                    ks.hash_set(key, field, value, now).map_err(wrong)?;
                }
                for field in changes.deleted() {
                    ks.hash_del(key, field, now).map_err(wrong)?;
                }
                ks.set_expiry(key, Some(changes.expires_at), now);
            }
            Change::Delete => {
                ks.delete(key, now);
            }
        }
        Ok(())
    }
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

/// The log of an RL.SLIDING key: its members and their times.
fn log(ks: &Keyspace, key: &[u8], now: Millis) -> Result<(Members, VecLog)> {
    let members = zset_members(ks, key, now)?.ok_or(Error::NotALimiter(codec::SLIDING_WHAT))?;
    let log = VecLog(
        members
            .iter()
            .map(|&(_, s)| codec::log_time(s).unwrap_or(Millis::MAX))
            .collect(),
    );
    Ok((members, log))
}

/// RL.SLIDING: one member per unit, named by a sequence number, scored by its ms.
impl Runs<commands::Sliding> for Memory<'_> {
    fn decide(
        &mut self,
        key: &Vec<u8>,
        quota: &WindowLimit,
        now: Millis,
        amount: Amount,
    ) -> Result<Outcome<(Option<Millis>, Write)>> {
        let (_, log) = log(self.ks, key, now)?;
        let newest = log.newest();
        let out = SlidingLog::call(log, now, *quota, amount);
        Ok(Outcome {
            decision: out.decision,
            write: out.write.map(|w| (newest, w)),
        })
    }

    fn store(&mut self, key: &Vec<u8>, (newest, write): (Option<Millis>, Write)) -> Result<()> {
        let (ks, now) = (&mut *self.ks, self.now);
        // Deciding wrote nothing: the members are those the decision saw.
        let (members, _) = log(ks, key, now)?;
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
                    return Ok(());
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
        Ok(())
    }
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
impl Runs<commands::Acquire> for Memory<'_> {
    fn decide(
        &mut self,
        key: &Vec<u8>,
        lease: &params::Lease,
        now: Millis,
        amount: Amount,
    ) -> Result<Outcome<(LeaseId, acquire::Grant)>> {
        let cost = commands::lease_cost(amount)?;
        let set = leases(self.ks, key, now)?;
        let out = acquire::acquire(&set, now, lease.leases, lease.id.as_bytes(), cost);
        Ok(Outcome {
            decision: out.decision,
            write: out.write.map(|g| (lease.id.clone(), g)),
        })
    }

    fn store(&mut self, key: &Vec<u8>, (id, grant): (LeaseId, acquire::Grant)) -> Result<()> {
        let (ks, now) = (&mut *self.ks, self.now);
        let set = leases(ks, key, now)?;
        if let Some(t) = grant.drop_through {
            for (member, _) in set.0.iter().filter(|&&(_, end)| end <= t) {
                ks.zset_remove(key, member, now).map_err(wrong)?;
            }
        }
        if let Some(end) = grant.lease_end {
            ks.zset_add(key, id.as_bytes(), end as f64, now)
                .map_err(wrong)?;
        }
        ks.set_expiry(key, Some(grant.expires_at), now);
        Ok(())
    }
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

//! RL's commands over an in-memory [`Keyspace`]: what the module does to Redis keys,
//! done to a model of them, with no server. The command table, the parsers, the
//! algorithms, the storage ([`crate::store`]) and the executor ([`crate::exec`],
//! [`crate::command::apply`]) are the module's own; what this adds is a [`Store`]
//! over the model: each read and each native write RL makes, done to the keyspace.
//!
//! It exists to hold the Functions library (functions/rl.lua, run in-process
//! against the same kind of keyspace) to the Rust code call by call and byte by
//! byte, to run the shared vectors (vectors/vectors.json) without a server, and to
//! let the fuzzer drive whole commands. The module's own storage is held to the
//! same behaviour by the integration tests on real servers.

use crate::algorithms::{Millis, MAX_COUNT};
use crate::command::{apply, Answer, Runs, Settings};
use crate::commands::{self, Visit};
use crate::error::{Error, Result};
use crate::keyspace::{self, Keyspace, Value, WrongType};
use crate::store::{From, Kind, Store};

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

/// The keyspace at one instant: the in-memory executor's store.
pub struct Memory<'k> {
    ks: &'k mut Keyspace,
    now: Millis,
}

/// One call whose arity is right, for [`commands::visit`] to run.
struct Line<'k, 'a> {
    memory: Memory<'k>,
    argv: &'a [&'a [u8]],
}

impl Visit for Line<'_, '_> {
    type Output = Result<Value>;

    fn single<C: Runs>(mut self) -> Result<Value> {
        // SHADOW changes nothing a store sees: only the module's counters.
        let (params, options) = C::parse(&self.argv[2..], Settings::DEFAULT)?;
        let key = self.argv[1].to_vec();
        let now = self.memory.now;
        let d = apply::<C, _>(&mut self.memory, &key, &params, now, options.amount)?;
        Ok(match C::reply(&d) {
            Answer::Five(fields) => integers(fields),
            Answer::One(n) => Value::Int(n),
        })
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
}

fn integers(fields: [i64; 5]) -> Value {
    Value::Array(fields.into_iter().map(Value::Int).collect())
}

fn wrong(_: WrongType) -> Error {
    Error::WrongType
}

impl Memory<'_> {
    /// The members of a sorted set from `from` on, in that order.
    fn walk(&self, key: &[u8], from: From) -> impl Iterator<Item = (&[u8], f64)> {
        let members = self.ks.zset_members(key, self.now).unwrap_or_default();
        let (min, exclusive, top) = match from {
            From::Above { min, exclusive } => (min, exclusive, false),
            From::Top => (f64::NEG_INFINITY, false, true),
        };
        let kept = members
            .into_iter()
            .filter(move |&(_, s)| if exclusive { s > min } else { s >= min });
        let ordered: Vec<_> = if top {
            kept.rev().collect()
        } else {
            kept.collect()
        };
        ordered.into_iter()
    }
}

impl Store for Memory<'_> {
    type Key = Vec<u8>;
    type Value<'a>
        = &'a [u8]
    where
        Self: 'a;

    fn kind(&self, key: &Vec<u8>) -> Kind {
        match self.ks.kind(key, self.now) {
            keyspace::Kind::Empty => Kind::Empty,
            keyspace::Kind::String => Kind::String,
            keyspace::Kind::Hash => Kind::Hash,
            keyspace::Kind::Zset => Kind::SortedSet,
        }
    }

    fn expires_at(&self, key: &Vec<u8>) -> Option<Millis> {
        self.ks.expires_at(key, self.now)
    }

    fn read_string<R>(&self, key: &Vec<u8>, read: impl FnOnce(&[u8]) -> R + Send) -> R {
        read(self.ks.string(key, self.now).unwrap_or_default())
    }

    fn hash_get<const N: usize>(&self, key: &Vec<u8>, fields: [&[u8]; N]) -> [Option<&[u8]>; N] {
        fields.map(|f| self.ks.hash_get(key, f, self.now).ok().flatten())
    }

    fn zcard(&self, key: &Vec<u8>) -> u64 {
        self.walk(key, From::BOTTOM).count() as u64
    }

    fn zcount_through(&self, key: &Vec<u8>, max: Millis) -> u64 {
        self.walk(key, From::BOTTOM)
            .filter(|&(_, s)| s <= max as f64)
            .count() as u64
    }

    fn zscore(&self, key: &Vec<u8>, member: &[u8]) -> Option<f64> {
        self.ks.zset_score(key, member, self.now).ok().flatten()
    }

    fn znth(&self, key: &Vec<u8>, from: From, skip: u64) -> Option<f64> {
        let skip = usize::try_from(skip).unwrap_or(usize::MAX);
        self.walk(key, from).nth(skip).map(|(_, s)| s)
    }

    fn zwalk(&self, key: &Vec<u8>, from: From, mut visit: impl FnMut(&[u8], f64) -> bool) {
        for (member, score) in self.walk(key, from) {
            if !visit(member, score) {
                break;
            }
        }
    }

    fn set_pxat(&mut self, key: &Vec<u8>, value: &[u8], at: Millis) -> Result<()> {
        self.ks.set_string(key, value, Some(at));
        Ok(())
    }

    fn hset<'p>(
        &mut self,
        key: &Vec<u8>,
        pairs: impl Iterator<Item = (&'p [u8], &'p [u8])>,
    ) -> Result<()> {
        for (field, value) in pairs {
            self.ks
                .hash_set(key, field, value, self.now)
                .map_err(wrong)?;
        }
        Ok(())
    }

    fn hdel<'f>(&mut self, key: &Vec<u8>, fields: impl Iterator<Item = &'f [u8]>) -> Result<()> {
        for field in fields {
            self.ks.hash_del(key, field, self.now).map_err(wrong)?;
        }
        Ok(())
    }

    fn pexpireat(&mut self, key: &Vec<u8>, at: Millis) -> Result<()> {
        self.ks.set_expiry(key, Some(at), self.now);
        Ok(())
    }

    fn zadd(&mut self, key: &Vec<u8>, at: Millis, member: &[u8]) -> Result<()> {
        self.ks
            .zset_add(key, member, at as f64, self.now)
            .map_err(wrong)?;
        Ok(())
    }

    fn zadd_new<M: AsRef<[u8]>>(
        &mut self,
        key: &Vec<u8>,
        at: Millis,
        count: u64,
        mut candidates: impl Iterator<Item = M>,
    ) -> (u64, Result<()>) {
        let mut added = 0;
        while added < count {
            let Some(member) = candidates.next() else {
                return (added, Err(Error::WriteFailed("logging the new units")));
            };
            let member = member.as_ref();
            let fresh = self
                .ks
                .zset_score(key, member, self.now)
                .map(|s| s.is_none());
            let outcome = fresh.and_then(|fresh| {
                if fresh {
                    self.ks.zset_add(key, member, at as f64, self.now)?;
                }
                Ok(fresh)
            });
            match outcome {
                Ok(true) => added += 1,
                Ok(false) => {}
                Err(e) => return (added, Err(wrong(e))),
            }
        }
        (added, Ok(()))
    }

    fn zrem<M: AsRef<[u8]>>(&mut self, key: &Vec<u8>, members: &[M]) -> Result<()> {
        for member in members {
            self.ks
                .zset_remove(key, member.as_ref(), self.now)
                .map_err(wrong)?;
        }
        Ok(())
    }

    fn zremrangebyscore(&mut self, key: &Vec<u8>, max: Millis) -> Result<()> {
        let gone: Vec<Vec<u8>> = self
            .walk(key, From::BOTTOM)
            .take_while(|&(_, s)| s <= max as f64)
            .map(|(m, _)| m.to_vec())
            .collect();
        self.zrem(key, &gone)
    }

    fn del(&mut self, key: &Vec<u8>) -> Result<()> {
        self.ks.delete(key, self.now);
        Ok(())
    }
}

/// Keeps `MAX_COUNT` in view: every reply integer is at most 2^53 − 1.
const _: () = assert!(MAX_COUNT < i64::MAX as u64);

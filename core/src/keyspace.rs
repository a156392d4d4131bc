//! An in-memory Redis keyspace, as much of one as RL uses: strings, hashes and
//! sorted sets with absolute expiries in ms, and the commands `functions/rl.lua`
//! sends ([`Keyspace::command`]). It lets the Functions library run in-process
//! (core/tests/twin/twin.rs) and be compared, call by call and key by key, with
//! the Rust core, with no server.
//!
//! It follows Redis 7.0 (the oldest server RL supports, and the one its tests run
//! on): the same replies, the same error lines, the same argument parsing (see
//! [`number`]). Time is explicit: every call takes `now` (ms), the instant Redis
//! freezes for a script. A key is live while `now <= expiry`: Redis expires a key
//! only once the clock is *past* its expiry (`keyIsExpired`: `now > when`), so a
//! key expiring at `now` is still there, and RL itself must treat it as ended.
//! Writes that set an expiry at or before `now` through PEXPIREAT delete the key,
//! as Redis does (`checkAlreadyExpired`); SET … PXAT does not.
//!
//! Checked against redis-server 7.0.15 on ~200,000 random commands of this subset
//! (same replies, byte for byte). Known limits: ZRANGE BYLEX is refused rather than
//! modelled; HGETALL answers in insertion order, which is Redis's for a small hash
//! (a listpack) but not for one past `hash-max-listpack-entries` (a hash table,
//! whose order Redis does not fix); the listpack limits are Redis's defaults.
//!
//! Nothing here panics on any input: the fuzzer may drive it.

mod commands;
pub mod number;
mod zset;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::ops::Bound;

pub use commands::{lookup_command, CommandInfo};
use zset::Zset;

/// A RESP2 reply, as a script sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Nil,
    Int(i64),
    Bulk(Vec<u8>),
    Status(String),
    Array(Vec<Value>),
    /// An error *inside* an array (a script may return one). A command's own error,
    /// and an error a script returns, is the `Err` side of the call instead.
    Error(String),
}

/// What a key holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Empty,
    String,
    Hash,
    Zset,
}

/// The error a typed accessor answers for a key of another type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WrongType;

impl fmt::Display for WrongType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(WRONGTYPE)
    }
}

impl std::error::Error for WrongType {}

pub(crate) const WRONGTYPE: &str =
    "WRONGTYPE Operation against a key holding the wrong kind of value";

/// A hash's fields in insertion order.
type Fields = Vec<(Vec<u8>, Vec<u8>)>;

/// Borrowed (field, value) pairs.
pub type FieldRefs<'a> = Vec<(&'a [u8], &'a [u8])>;

/// One key's value. A hash keeps insertion order, which is what HGETALL answers
/// for a small hash (Redis's listpack); a sorted set keeps Redis's order.
#[derive(Clone, Debug)]
enum Stored {
    String(Vec<u8>),
    Hash(Fields),
    Zset(Zset),
}

#[derive(Clone, Debug)]
struct Slot {
    value: Stored,
    expires_at: Option<i64>,
}

impl Slot {
    fn live(&self, now: i64) -> bool {
        self.expires_at.is_none_or(|at| now <= at)
    }
}

/// A keyspace. [`Default`] is the empty one; [`Keyspace::clear`] resets one.
#[derive(Clone, Debug, Default)]
pub struct Keyspace {
    keys: HashMap<Vec<u8>, Slot>,
}

/// A key's content in a [`Snapshot`]: what `DUMP` would show, with a hash as a map
/// (its field order is not content) and a sorted set in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Content {
    String(Vec<u8>),
    Hash(BTreeMap<Vec<u8>, Vec<u8>>),
    Zset(Vec<(Vec<u8>, Score)>),
}

/// A score compared bit for bit (so `-0` differs from `0`, as in a DUMP).
#[derive(Clone, Copy)]
pub struct Score(pub f64);

impl PartialEq for Score {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for Score {}

impl fmt::Debug for Score {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&number::format_g17(self.0))
    }
}

/// One live key of a [`Snapshot`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub content: Content,
    pub expires_at: Option<i64>,
}

/// Every live key at one instant, ordered by key: two keyspaces that hold the same
/// data compare equal, and `{:?}` shows the difference when they do not.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot(pub BTreeMap<Vec<u8>, Entry>);

impl Keyspace {
    pub fn new() -> Self {
        Self::default()
    }

    /// Deletes every key.
    pub fn clear(&mut self) {
        self.keys.clear();
    }

    fn get(&self, key: &[u8], now: i64) -> Option<&Slot> {
        self.keys.get(key).filter(|slot| slot.live(now))
    }

    /// The live slot, after deleting the key if it has expired (Redis's lazy
    /// expiry: what a write sees).
    fn get_mut(&mut self, key: &[u8], now: i64) -> Option<&mut Slot> {
        if self.keys.get(key).is_some_and(|slot| !slot.live(now)) {
            self.keys.remove(key);
        }
        self.keys.get_mut(key)
    }

    pub fn kind(&self, key: &[u8], now: i64) -> Kind {
        match self.get(key, now).map(|slot| &slot.value) {
            None => Kind::Empty,
            Some(Stored::String(_)) => Kind::String,
            Some(Stored::Hash(_)) => Kind::Hash,
            Some(Stored::Zset(_)) => Kind::Zset,
        }
    }

    /// A string key's value; None when absent or of another type.
    pub fn string(&self, key: &[u8], now: i64) -> Option<&[u8]> {
        match &self.get(key, now)?.value {
            Stored::String(v) => Some(v),
            _ => None,
        }
    }

    /// A live key's expiry (ms); None when absent or persistent.
    pub fn expires_at(&self, key: &[u8], now: i64) -> Option<i64> {
        self.get(key, now)?.expires_at
    }

    /// SET without options: any old value and expiry are replaced.
    pub fn set_string(&mut self, key: &[u8], value: &[u8], expires_at: Option<i64>) {
        let slot = Slot {
            value: Stored::String(value.to_vec()),
            expires_at,
        };
        self.keys.insert(key.to_vec(), slot);
    }

    /// Sets (or with None removes) a live key's expiry; false when there is no
    /// key. The expiry is stored as given: one before `now` makes the key absent
    /// from then on (PEXPIREAT's immediate delete is [`Keyspace::command`]'s).
    pub fn set_expiry(&mut self, key: &[u8], expires_at: Option<i64>, now: i64) -> bool {
        match self.get_mut(key, now) {
            Some(slot) => {
                slot.expires_at = expires_at;
                true
            }
            None => false,
        }
    }

    /// Deletes a key; false when there was no live one.
    pub fn delete(&mut self, key: &[u8], now: i64) -> bool {
        self.get_mut(key, now).is_some() && self.keys.remove(key).is_some()
    }

    fn hash(&self, key: &[u8], now: i64) -> Result<Option<&Fields>, WrongType> {
        match self.get(key, now).map(|slot| &slot.value) {
            None => Ok(None),
            Some(Stored::Hash(fields)) => Ok(Some(fields)),
            Some(_) => Err(WrongType),
        }
    }

    /// A hash field; Ok(None) when the key or the field is absent.
    pub fn hash_get(&self, key: &[u8], field: &[u8], now: i64) -> Result<Option<&[u8]>, WrongType> {
        Ok(self
            .hash(key, now)?
            .and_then(|fields| fields.iter().find(|(f, _)| f == field))
            .map(|(_, v)| v.as_slice()))
    }

    /// A hash's fields in HGETALL order; empty when there is no key.
    pub fn hash_fields(&self, key: &[u8], now: i64) -> Result<FieldRefs<'_>, WrongType> {
        Ok(self
            .hash(key, now)?
            .into_iter()
            .flatten()
            .map(|(f, v)| (f.as_slice(), v.as_slice()))
            .collect())
    }

    /// The live hash at `key`, created empty when absent (the caller adds a field
    /// at once, so no empty hash survives).
    fn hash_mut_or_create(&mut self, key: &[u8], now: i64) -> Result<&mut Fields, WrongType> {
        if self.get_mut(key, now).is_none() {
            let slot = Slot {
                value: Stored::Hash(Vec::new()),
                expires_at: None,
            };
            self.keys.insert(key.to_vec(), slot);
        }
        match self.keys.get_mut(key).map(|slot| &mut slot.value) {
            Some(Stored::Hash(fields)) => Ok(fields),
            _ => Err(WrongType),
        }
    }

    /// HSET of one field: true when the field is new. Creates the key (no expiry).
    pub fn hash_set(
        &mut self,
        key: &[u8],
        field: &[u8],
        value: &[u8],
        now: i64,
    ) -> Result<bool, WrongType> {
        let fields = self.hash_mut_or_create(key, now)?;
        match fields.iter_mut().find(|(f, _)| f == field) {
            Some((_, v)) => {
                *v = value.to_vec();
                Ok(false)
            }
            None => {
                fields.push((field.to_vec(), value.to_vec()));
                Ok(true)
            }
        }
    }

    /// HDEL of one field: true when it was there. The last field's removal deletes
    /// the key.
    pub fn hash_del(&mut self, key: &[u8], field: &[u8], now: i64) -> Result<bool, WrongType> {
        let removed = match self.get_mut(key, now).map(|slot| &mut slot.value) {
            None => false,
            Some(Stored::Hash(fields)) => match fields.iter().position(|(f, _)| f == field) {
                Some(i) => {
                    fields.remove(i);
                    true
                }
                None => false,
            },
            Some(_) => return Err(WrongType),
        };
        self.drop_if_empty(key);
        Ok(removed)
    }

    fn zset(&self, key: &[u8], now: i64) -> Result<Option<&Zset>, WrongType> {
        match self.get(key, now).map(|slot| &slot.value) {
            None => Ok(None),
            Some(Stored::Zset(z)) => Ok(Some(z)),
            Some(_) => Err(WrongType),
        }
    }

    /// The live sorted set at `key`, created empty when absent (the caller adds
    /// to it at once, so no empty set survives).
    fn zset_mut_or_create(&mut self, key: &[u8], now: i64) -> Result<&mut Zset, WrongType> {
        if self.get_mut(key, now).is_none() {
            self.keys.insert(
                key.to_vec(),
                Slot {
                    value: Stored::Zset(Zset::default()),
                    expires_at: None,
                },
            );
        }
        match self.keys.get_mut(key).map(|slot| &mut slot.value) {
            Some(Stored::Zset(z)) => Ok(z),
            _ => Err(WrongType),
        }
    }

    /// Deletes `key` if it holds an empty hash or sorted set: Redis never keeps one.
    fn drop_if_empty(&mut self, key: &[u8]) {
        let empty = match self.keys.get(key).map(|slot| &slot.value) {
            Some(Stored::Zset(z)) => z.is_empty(),
            Some(Stored::Hash(fields)) => fields.is_empty(),
            _ => false,
        };
        if empty {
            self.keys.remove(key);
        }
    }

    /// A sorted set's members with their scores, lowest first; empty when absent.
    pub fn zset_members(&self, key: &[u8], now: i64) -> Result<Vec<(&[u8], f64)>, WrongType> {
        Ok(self
            .zset(key, now)?
            .map(|z| z.iter().map(|e| (e.member.as_slice(), e.score)).collect())
            .unwrap_or_default())
    }

    /// ZSCORE.
    pub fn zset_score(
        &self,
        key: &[u8],
        member: &[u8],
        now: i64,
    ) -> Result<Option<f64>, WrongType> {
        Ok(self.zset(key, now)?.and_then(|z| z.score(member)))
    }

    /// ZADD of one member (a NaN score is refused as Redis refuses it: false, no
    /// change): true when the member is new.
    pub fn zset_add(
        &mut self,
        key: &[u8],
        member: &[u8],
        score: f64,
        now: i64,
    ) -> Result<bool, WrongType> {
        if score.is_nan() {
            self.zset(key, now)?;
            return Ok(false);
        }
        let z = self.zset_mut_or_create(key, now)?;
        Ok(z.insert(member, score) == zset::Insert::Added)
    }

    /// ZREM of one member: true when it was there. The last member's removal
    /// deletes the key.
    pub fn zset_remove(&mut self, key: &[u8], member: &[u8], now: i64) -> Result<bool, WrongType> {
        let removed = match self.get_mut(key, now).map(|slot| &mut slot.value) {
            None => false,
            Some(Stored::Zset(z)) => z.remove(member).is_some(),
            Some(_) => return Err(WrongType),
        };
        self.drop_if_empty(key);
        Ok(removed)
    }

    /// Members whose score is within the bounds (Excluded is Redis's `(`),
    /// lowest first.
    pub fn zset_range_by_score(
        &self,
        key: &[u8],
        min: Bound<f64>,
        max: Bound<f64>,
        now: i64,
    ) -> Result<Vec<(&[u8], f64)>, WrongType> {
        Ok(self
            .zset(key, now)?
            .map(|z| {
                z.by_score(min, max)
                    .map(|e| (e.member.as_slice(), e.score))
                    .collect()
            })
            .unwrap_or_default())
    }

    /// Every live key at `now`.
    pub fn snapshot(&self, now: i64) -> Snapshot {
        let entries = self
            .keys
            .iter()
            .filter(|(_, slot)| slot.live(now))
            .map(|(key, slot)| {
                let content = match &slot.value {
                    Stored::String(v) => Content::String(v.clone()),
                    Stored::Hash(fields) => Content::Hash(fields.iter().cloned().collect()),
                    Stored::Zset(z) => Content::Zset(
                        z.iter()
                            .map(|e| (e.member.clone(), Score(e.score)))
                            .collect(),
                    ),
                };
                let entry = Entry {
                    content,
                    expires_at: slot.expires_at,
                };
                (key.clone(), entry)
            });
        Snapshot(entries.collect())
    }

    /// How many keys are live at `now`.
    pub fn len(&self, now: i64) -> usize {
        self.keys.values().filter(|slot| slot.live(now)).count()
    }

    pub fn is_empty(&self, now: i64) -> bool {
        self.len(now) == 0
    }
}

//! RL.SHARE's state: one hash (`g`, `t:<tenant>`, `s:<n>`, `i:<n>`; see
//! [`crate::algorithms::share`]), read one field at a time while deciding and
//! written field by field: `HSET` of the fields set, `HDEL` of those deleted, then
//! `PEXPIREAT` when the expiry moves (the end of a slot, so the calls of a slot
//! write it once).

use super::{Kind, Store};
use crate::algorithms::share::{self, Fields};
use crate::algorithms::{Amount, Change, Millis, Outcome};
use crate::command::Runs;
use crate::commands::Share;
use crate::error::{Error, Result};

/// The budget's hash as the algorithm reads it: None for a field the hash lacks
/// (and for every field of an absent key).
struct HashFields<'s, S: Store> {
    store: &'s S,
    key: &'s S::Key,
}

impl<'s, S: Store> Fields for HashFields<'s, S> {
    type Value = S::Value<'s>;

    #[inline]
    fn field(&self, name: &[u8]) -> Option<S::Value<'s>> {
        let [value] = self.store.hash_get(self.key, [name]);
        value
    }
}

impl Runs for Share {
    #[inline]
    fn decide<S: Store>(
        store: &S,
        key: &S::Key,
        params: &share::Share,
        now: Millis,
        amount: Amount,
    ) -> Result<Outcome<share::Write>> {
        match store.kind(key) {
            Kind::Empty | Kind::Hash => {
                share::call(&HashFields { store, key }, now, params, amount)
            }
            _ => Err(Error::WrongType),
        }
    }

    /// The fields set, then those deleted, then the expiry if it moves; a refused
    /// expiry deletes the key everywhere (its fields were written).
    #[inline]
    fn store<S: Store>(store: &mut S, key: &S::Key, write: share::Write) -> Result<()> {
        let Change::Set(changes) = write else {
            return store.del(key);
        };
        if !matches!(store.kind(key), Kind::Empty | Kind::Hash) {
            return Err(Error::WrongType);
        }
        store.hset(key, changes.set())?;
        store.hdel(key, changes.deleted())?;
        if store.expires_at(key) == Some(changes.expires_at) {
            return Ok(());
        }
        match store.pexpireat(key, changes.expires_at) {
            Err(e) => store.undo(key, e),
            ok => ok,
        }
    }
}

//! RL.SHARE's state: one native hash (`g`, `t:<tenant>`, `s:<n>`, `i:<n>`; see
//! rl_core::algorithms::share), read one field at a time while deciding and written
//! field by field: the fields set, then those deleted, then the absolute expiry.

use super::record::undo;
use super::{effects, injected, Key, Kind, Server};
use crate::server::names::names;
use crate::server::{ServerString, StrRef};
use rl_core::algorithms::share::{self, Changes, Fields, GLOBAL_FIELD};
use rl_core::algorithms::{Amount, Change, Millis, Outcome};
use rl_core::command::Runs;
use rl_core::commands;
use rl_core::error::{Error, Result};
use smallvec::SmallVec;

/// The budget's hash as the algorithm reads it: one field at a time, the server's
/// own string read in place; None for a field the hash lacks (and for every field
/// of an absent key).
struct HashFields<'k>(&'k Key);

impl Fields for HashFields<'_> {
    type Value = ServerString;
    fn field(&self, name: &[u8]) -> Option<ServerString> {
        if name == GLOBAL_FIELD {
            self.0.hash_get(StrRef::shared(&names().share_global)?)
        } else {
            // The server aborts rather than fail to allocate: None is unreachable.
            let name = ServerString::new(name)?;
            self.0.hash_get(name.as_ref())
        }
    }
}

impl Runs<commands::Share> for Server {
    fn decide(
        &mut self,
        key: &Key,
        params: &share::Share,
        now: Millis,
        amount: Amount,
    ) -> Result<Outcome<share::Write>> {
        match key.kind() {
            Kind::Empty | Kind::Hash => share::call(&HashFields(key), now, params, amount),
            _ => Err(Error::WrongType),
        }
    }

    fn store(&mut self, key: &Key, write: share::Write) -> Result<()> {
        match write {
            Change::Set(changes) => store(key, &changes),
            Change::Delete => super::delete(key),
        }
    }
}

fn string(bytes: &[u8]) -> Result<ServerString> {
    ServerString::new(bytes).ok_or(Error::WriteFailed("creating a string"))
}

/// Strings for a call's fields, on the stack for the usual write (a tenant's record
/// and `g`; a slot or an index entry more when tenants come and go).
type Strings<T> = SmallVec<[T; 8]>;

/// Sets the fields, deletes the fields to delete, sets the absolute expiry when it
/// changes, and only then propagates `HSET key field value …`, `HDEL key field …`
/// (the fields it deleted, when any) and `PEXPIREAT key <expires_at>` (when set;
/// events `hset`, `hdel`, `expire`) and signals the key. The expiry is the end of a
/// slot (see `share::key_expiry`), so the calls of a slot propagate one command.
///
/// Failures: the server checks everything `HashSet` can refuse (type, write access)
/// before setting the first field, so a refusal there changes nothing: nothing is
/// propagated and the error is returned. A failure after a field was set
/// (unreachable in practice) deletes the key and propagates `DEL`, as for a record:
/// primary and replicas agree (the budget restarts from its initial state). A field
/// to delete that the hash lacks (one this call's sweep moved, added in the same
/// call) is no failure: it is not there, as the write wants.
fn store(key: &Key, changes: &Changes) -> Result<()> {
    if !matches!(key.kind(), Kind::Empty | Kind::Hash) {
        return Err(Error::WrongType);
    }
    let global = StrRef::shared(&names().share_global);
    // The server's strings for field, value, field, value …: what HSET propagates.
    // The global record's field, which every write sets (last), is a constant one.
    let mut owned: Strings<ServerString> = SmallVec::new();
    for (field, value) in changes.set() {
        if global.is_none() || field != GLOBAL_FIELD {
            owned.push(string(field)?);
        }
        owned.push(string(value)?);
    }
    let mut owned_refs = owned.iter().map(ServerString::as_ref);
    let mut pairs: Strings<StrRef> = SmallVec::new();
    for (field, _) in changes.set() {
        match global {
            Some(g) if field == GLOBAL_FIELD => pairs.push(g),
            _ => pairs.extend(owned_refs.next()),
        }
        pairs.extend(owned_refs.next());
    }
    let deleting = changes
        .deleted()
        .map(string)
        .collect::<Result<Strings<_>>>()?;
    for (i, pair) in pairs.chunks_exact(2).enumerate() {
        let refused = (i == 0 && injected(key, "hset")) || !key.hash_set(pair[0], pair[1]);
        if refused {
            return if i == 0 {
                Err(Error::WriteFailed("setting the fields"))
            } else {
                undo(key, "setting the fields")
            };
        }
    }
    let mut deleted: Strings<StrRef> = SmallVec::new();
    for field in &deleting {
        if key.hash_delete(field.as_ref()) {
            deleted.push(field.as_ref());
        }
    }
    let expires = key.expires_at() != Some(changes.expires_at);
    if expires && (injected(key, "expiry") || !key.set_expires_at(changes.expires_at)) {
        return undo(key, "setting the expiry");
    }
    effects::hset(key, &pairs)?;
    if !deleted.is_empty() {
        effects::hdel(key, &deleted)?;
    }
    if expires {
        effects::pexpireat(key, changes.expires_at)?;
    }
    key.signal_modified();
    Ok(())
}

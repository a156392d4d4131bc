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

/// The budget's hash as the algorithm reads it: one field at a time, None for a
/// field the hash lacks (and for every field of an absent key).
struct HashFields<'k>(&'k Key);

impl Fields for HashFields<'_> {
    fn field(&self, name: &[u8]) -> Option<Vec<u8>> {
        let value = if name == GLOBAL_FIELD {
            self.0.hash_get(StrRef::shared(&names().share_global)?)
        } else {
            // The server aborts rather than fail to allocate: None is unreachable.
            let name = ServerString::new(name)?;
            self.0.hash_get(name.as_ref())
        };
        value.map(|v| v.bytes().to_vec())
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

/// Sets the fields, deletes the fields to delete, sets the absolute expiry, and only
/// then propagates `HSET key field value …`, `HDEL key field …` (the fields it
/// deleted, when any) and `PEXPIREAT key <expires_at>` (events `hset`, `hdel`,
/// `expire`) and signals the key.
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
    // Field, value, field, value …: what HSET propagates.
    let mut pairs = Vec::with_capacity(changes.set.len() * 2);
    for (field, value) in &changes.set {
        pairs.push(string(field)?);
        pairs.push(string(value)?);
    }
    let deleting = changes
        .del
        .iter()
        .map(|f| string(f))
        .collect::<Result<Vec<_>>>()?;
    for (i, pair) in pairs.chunks_exact(2).enumerate() {
        let refused =
            (i == 0 && injected(key, "hset")) || !key.hash_set(pair[0].as_ref(), pair[1].as_ref());
        if refused {
            return if i == 0 {
                Err(Error::WriteFailed("setting the fields"))
            } else {
                undo(key, "setting the fields")
            };
        }
    }
    let mut deleted = Vec::with_capacity(deleting.len());
    for field in &deleting {
        if key.hash_delete(field.as_ref()) {
            deleted.push(field.as_ref());
        }
    }
    if injected(key, "expiry") || !key.set_expires_at(changes.expires_at) {
        return undo(key, "setting the expiry");
    }
    let pairs: Vec<StrRef<'_>> = pairs.iter().map(ServerString::as_ref).collect();
    if !pairs.is_empty() {
        effects::hset(key, &pairs)?;
    }
    if !deleted.is_empty() {
        effects::hdel(key, &deleted)?;
    }
    effects::pexpireat(key, changes.expires_at)?;
    key.signal_modified();
    Ok(())
}

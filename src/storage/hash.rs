//! A hash's fields: read (two at once for RL.BUCKET's `tokens` and `ts`, else one
//! at a time), set (`HSET`, event `hset`) and deleted (`HDEL`, event `hdel`). The
//! fields every call names use the load's constant strings.

use smallvec::SmallVec;

use super::{injected, undo, Key, Kind};
use crate::server::names::names;
use crate::server::replicate::replicate;
use crate::server::{EventClass as Class, ServerString, StrRef};
use rl_core::error::{Error, Result};
use rl_core::store::fields::{SHARE_GLOBAL, TOKENS, TS};

/// Strings for a call's fields, on the stack for the usual write (a bucket's two
/// fields; a tenant's record and RL.SHARE's `g`, a slot or an index entry more
/// when tenants come and go).
type Strings<T> = SmallVec<[T; 8]>;

/// The load's string for a field every call names, if `field` is one.
#[inline]
fn shared(field: &[u8]) -> Option<StrRef<'static>> {
    let names = names();
    let name = match field {
        TOKENS => &names.tokens,
        TS => &names.ts,
        SHARE_GLOBAL => &names.share_global,
        _ => return None,
    };
    StrRef::shared(name)
}

fn string(bytes: &[u8]) -> Result<ServerString> {
    ServerString::new(bytes).ok_or(Error::WriteFailed("creating a string"))
}

/// One field's value.
fn get_one(key: &Key, field: &[u8]) -> Option<ServerString> {
    match shared(field) {
        Some(name) => key.hash_get(name),
        None => key.hash_get(ServerString::new(field)?.as_ref()),
    }
}

/// The fields' values (None for a field the hash lacks): two constant fields in
/// one call, any others one at a time.
#[inline]
pub(super) fn get<const N: usize>(key: &Key, fields: [&[u8]; N]) -> [Option<ServerString>; N] {
    if let [first, second] = fields[..] {
        if let (Some(first), Some(second)) = (shared(first), shared(second)) {
            let mut values = [const { None }; N];
            [values[0], values[1]] = key.hash_get_two([first, second]);
            return values;
        }
    }
    fields.map(|field| get_one(key, field))
}

/// Sets the fields, and only then propagates `HSET key field value …`.
///
/// Failures: the server checks everything `HashSet` can refuse (type, write access)
/// before setting the first field, so a refusal there changes nothing: nothing is
/// propagated and the error is returned. A failure after a field was set
/// (unreachable in practice) deletes the key and propagates `DEL`: primary and
/// replicas agree (the limiter restarts from its initial state).
pub(super) fn set<'p>(key: &Key, pairs: impl Iterator<Item = (&'p [u8], &'p [u8])>) -> Result<()> {
    if !matches!(key.kind(), Kind::Empty | Kind::Hash) {
        return Err(Error::WrongType);
    }
    let pairs: Strings<(&[u8], &[u8])> = pairs.collect();
    // The server's strings for field, value, field, value …: what HSET propagates.
    let mut owned: Strings<ServerString> = SmallVec::new();
    for &(field, value) in &pairs {
        if shared(field).is_none() {
            owned.push(string(field)?);
        }
        owned.push(string(value)?);
    }
    let mut owned_refs = owned.iter().map(ServerString::as_ref);
    let mut args: Strings<StrRef> = SmallVec::new();
    for &(field, _) in &pairs {
        match shared(field) {
            Some(name) => args.push(name),
            None => args.extend(owned_refs.next()),
        }
        args.extend(owned_refs.next());
    }
    let refused = injected(key, "hset");
    if let [field, value, other, its] = args[..] {
        let set = if refused {
            0
        } else {
            key.hash_set_two([(field, value), (other, its)])
        };
        match set {
            2 => {}
            0 => return Err(Error::WriteFailed("setting the fields")),
            _ => return undo(key, Error::WriteFailed("setting the fields")),
        }
    } else {
        for (i, pair) in args.chunks_exact(2).enumerate() {
            if (i == 0 && refused) || !key.hash_set(pair[0], pair[1]) {
                let failed = Error::WriteFailed("setting the fields");
                return if i == 0 {
                    Err(failed)
                } else {
                    undo(key, failed)
                };
            }
        }
    }
    let args: &[StrRef] = &args;
    replicate!(key, c"HSET"; strings(args))?;
    key.notify(Class::Hash, c"hset");
    key.signal_modified();
    Ok(())
}

/// Deletes the fields the hash has, and only then propagates `HDEL` of those (none:
/// nothing). A field it lacks is no failure: it is not there, as the write wants.
pub(super) fn delete<'f>(key: &Key, fields: impl Iterator<Item = &'f [u8]>) -> Result<()> {
    let fields = fields.map(string).collect::<Result<Strings<_>>>()?;
    let mut deleted: Strings<StrRef> = SmallVec::new();
    for field in &fields {
        if key.hash_delete(field.as_ref()) {
            deleted.push(field.as_ref());
        }
    }
    if deleted.is_empty() {
        return Ok(());
    }
    let deleted: &[StrRef] = &deleted;
    replicate!(key, c"HDEL"; strings(deleted))?;
    key.notify(Class::Hash, c"hdel");
    key.signal_modified();
    Ok(())
}

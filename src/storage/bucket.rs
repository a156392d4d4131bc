//! RL.BUCKET's state: a native hash with the fields `tokens` (a decimal level, with a
//! leading `-` for a bucket in debt) and `ts` (the ms time of that level), expiring
//! when the bucket would be full again.

use super::record::undo;
use super::{effects, injected, Key, Kind, Storage};
use crate::server::names::names;
use crate::server::ServerString;
use rl_core::algorithms::bucket::{State, Stored, TokenBucket};
use rl_core::algorithms::Change;
use rl_core::codec;
use rl_core::error::{Error, Result};

/// The hash RL.BUCKET keeps its level in.
pub struct Hash;

impl Storage for Hash {
    type Algorithm = TokenBucket;

    fn load(key: &Key) -> Result<Option<State>> {
        load(key)
    }

    fn store(key: &Key, write: Change<Stored>) -> Result<()> {
        super::change(key, write, store)
    }
}

/// Reads the bucket; None for an absent key.
fn load(key: &Key) -> Result<Option<State>> {
    match key.kind() {
        Kind::Empty => Ok(None),
        Kind::Hash => {
            let names = names();
            let [tokens, ts] = key.hash_get_two([&names.tokens, &names.ts]);
            TokenBucket::decode(
                tokens.as_ref().map(|t| t.bytes()),
                ts.as_ref().map(|t| t.bytes()),
            )
            .map(Some)
            .ok_or(Error::NotALimiter(TokenBucket::WHAT))
        }
        _ => Err(Error::WrongType),
    }
}

/// Writes both fields, sets the absolute expiry and only then propagates
/// `HSET key tokens <level> ts <ts>` + `PEXPIREAT key <expires_at>` (events `hset`,
/// `expire`) and signals the key.
///
/// Failures: the server checks everything `HashSet` can refuse (type, write access)
/// before setting any field, so a refusal (0 fields set) changes nothing: nothing is
/// propagated and the error is returned. A failure after a field was set (unreachable
/// in practice) deletes the key and propagates `DEL`, as for a record.
fn store(key: &Key, store: Stored) -> Result<()> {
    if !matches!(key.kind(), Kind::Empty | Kind::Hash) {
        return Err(Error::WrongType);
    }
    let mut buf = [0u8; 48];
    let level = codec::format_micros(store.bucket.level_micros, &mut buf);
    let tokens = ServerString::new(level).ok_or(Error::WriteFailed("creating a string"))?;
    let ts =
        ServerString::from_i64(store.bucket.ts).ok_or(Error::WriteFailed("creating a string"))?;
    let set = if injected(key, "hset") {
        0
    } else {
        let names = names();
        key.hash_set_two([(&names.tokens, &tokens), (&names.ts, &ts)])
    };
    match set {
        2 => {}
        0 => return Err(Error::WriteFailed("setting the fields")),
        _ => return undo(key, "setting the fields"),
    }
    if injected(key, "expiry") || !key.set_expires_at(store.expires_at) {
        return undo(key, "setting the expiry");
    }
    effects::hset_bucket(key, level, store.bucket.ts)?;
    effects::pexpireat(key, store.expires_at)?;
    key.signal_modified();
    Ok(())
}

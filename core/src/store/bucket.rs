//! RL.BUCKET's state: a hash with the fields `tokens` (a decimal level, with a
//! leading `-` for a bucket in debt) and `ts` (the ms time of that level), written
//! with `HSET key tokens <level> ts <ts>` + `PEXPIREAT` (when the bucket would be
//! full again).

use super::{Kind, Store};
use crate::algorithms::bucket::{Stored, TokenBucket};
use crate::algorithms::{Algorithm, Amount, Change, Millis, Outcome, Rate};
use crate::codec;
use crate::command::Runs;
use crate::commands::Bucket;
use crate::error::{Error, Result};

/// The bucket's fields: its level, and the time of that level.
pub const TOKENS: &[u8] = b"tokens";
pub const TS: &[u8] = b"ts";

impl Runs for Bucket {
    #[inline]
    fn decide<S: Store>(
        store: &S,
        key: &S::Key,
        rate: &Rate,
        now: Millis,
        amount: Amount,
    ) -> Result<Outcome<Change<Stored>>> {
        let state = match store.kind(key) {
            Kind::Empty => None,
            Kind::Hash => {
                let [tokens, ts] = store.hash_get(key, [TOKENS, TS]);
                let bucket = TokenBucket::decode(
                    tokens.as_ref().map(AsRef::as_ref),
                    ts.as_ref().map(AsRef::as_ref),
                );
                Some(bucket.ok_or(Error::NotALimiter(TokenBucket::WHAT))?)
            }
            _ => return Err(Error::WrongType),
        };
        Ok(TokenBucket::call(state, now, *rate, amount))
    }

    /// Both fields, then the absolute expiry; a refused expiry deletes the key
    /// everywhere (its fields were written).
    #[inline]
    fn store<S: Store>(store: &mut S, key: &S::Key, write: Change<Stored>) -> Result<()> {
        let Change::Set(Stored { bucket, expires_at }) = write else {
            return store.del(key);
        };
        let mut buf = [0u8; 48];
        let level = codec::format_micros(bucket.level_micros, &mut buf);
        let mut ts = itoa::Buffer::new();
        store.hset(
            key,
            [(TOKENS, level), (TS, ts.format(bucket.ts).as_bytes())].into_iter(),
        )?;
        match store.pexpireat(key, expires_at) {
            Err(e) => store.undo(key, e),
            ok => ok,
        }
    }
}

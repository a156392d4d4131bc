//! What runs a command, written once over any [`Store`]: the
//! module runs it over the server's keys, the in-memory executor over its model.

use crate::algorithms::{Amount, Cost, Decision, Millis};
use crate::all::Call;
use crate::error::Result;
use crate::store::Store;

/// RL.ALL: every key decided at one instant as its own command would decide it
/// (a PENALTY policy only looked at); if the call allows (its enforced keys do),
/// each key written exactly as its own command writes it (a SHADOW key only if it
/// allows on its own), else none. Deciding never writes, so nothing needs
/// undoing. Returns the combined decision, then each key's.
///
/// Should a write fail midway (not on a healthy server), the keys written before
/// stay written and the error is returned.
pub fn all<S: Store>(
    store: &mut S,
    keys: &[S::Key],
    call: &Call,
    now: Millis,
) -> Result<Vec<Decision>> {
    let mut outcomes = Vec::with_capacity(call.keys());
    for (key, policy) in keys.iter().zip(&call.policies) {
        outcomes.push(policy.decide(store, key, now, policy.amount(call.amount))?);
    }
    let mut decisions: Vec<Decision> = Vec::with_capacity(call.keys() + 1);
    decisions.extend(outcomes.iter().map(|o| o.decision));
    if call.allows(&decisions) {
        for (i, (key, outcome)) in keys.iter().zip(outcomes).enumerate() {
            if !call.writes(i, &outcome.decision) {
                continue;
            }
            if let Some(write) = outcome.write {
                write.store(store, key)?;
            }
        }
    } else {
        // Nothing is written. Each key answers its real state, as COST 0 reads it,
        // and its own verdict on this cost. A decision that writes nothing (a key
        // that rejects, a watched key, COST 0) took nothing: it already reports that
        // state. Only a key that would have written is looked at again.
        let written = keys.iter().zip(&call.policies).zip(&outcomes);
        for (((key, policy), outcome), d) in written.zip(decisions.iter_mut()) {
            if outcome.write.is_some() {
                let state = policy.decide(store, key, now, Amount::Take(Cost::ZERO))?;
                *d = crate::all::unchanged(*d, state.decision);
            }
        }
    }
    decisions.insert(0, call.combine(&decisions));
    Ok(decisions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::Decision;
    use crate::command::Settings;
    use crate::error::Error;
    use crate::store::{From, Kind};
    use std::cell::Cell;
    use std::collections::HashMap;

    /// Strings with an expiry, counting how often a key is looked at (each decision
    /// starts with the key's type).
    #[derive(Default)]
    struct Strings {
        keys: HashMap<Vec<u8>, (Vec<u8>, Millis)>,
        looks: Cell<usize>,
        writes: usize,
    }

    impl Store for Strings {
        type Key = Vec<u8>;
        type Value<'a> = &'a [u8];

        fn kind(&self, key: &Vec<u8>) -> Kind {
            self.looks.set(self.looks.get() + 1);
            if self.keys.contains_key(key) {
                Kind::String
            } else {
                Kind::Empty
            }
        }
        fn expires_at(&self, key: &Vec<u8>) -> Option<Millis> {
            self.keys.get(key).map(|(_, at)| *at)
        }
        fn read_string<R>(&self, key: &Vec<u8>, read: impl FnOnce(&[u8]) -> R + Send) -> R {
            read(self.keys.get(key).map_or(&[][..], |(v, _)| v))
        }
        fn hash_get<const N: usize>(&self, _: &Vec<u8>, _: [&[u8]; N]) -> [Option<&[u8]>; N] {
            [None; N]
        }
        fn zcard(&self, _: &Vec<u8>) -> u64 {
            0
        }
        fn zcount_through(&self, _: &Vec<u8>, _: Millis) -> u64 {
            0
        }
        fn zscore(&self, _: &Vec<u8>, _: &[u8]) -> Option<f64> {
            None
        }
        fn znth(&self, _: &Vec<u8>, _: From, _: u64) -> Option<f64> {
            None
        }
        fn zwalk(&self, _: &Vec<u8>, _: From, _: impl FnMut(&[u8], f64) -> bool) {}
        fn set_pxat(&mut self, key: &Vec<u8>, value: &[u8], at: Millis) -> Result<()> {
            self.writes += 1;
            self.keys.insert(key.clone(), (value.to_vec(), at));
            Ok(())
        }
        fn hset<'p>(
            &mut self,
            _: &Vec<u8>,
            _: impl Iterator<Item = (&'p [u8], &'p [u8])>,
        ) -> Result<()> {
            Err(Error::WrongType)
        }
        fn hdel<'f>(&mut self, _: &Vec<u8>, _: impl Iterator<Item = &'f [u8]>) -> Result<()> {
            Err(Error::WrongType)
        }
        fn pexpireat(&mut self, _: &Vec<u8>, _: Millis) -> Result<()> {
            Err(Error::WrongType)
        }
        fn zadd(&mut self, _: &Vec<u8>, _: Millis, _: &[u8]) -> Result<()> {
            Err(Error::WrongType)
        }
        fn zadd_new<M: AsRef<[u8]>>(
            &mut self,
            _: &Vec<u8>,
            _: Millis,
            _: u64,
            _: impl Iterator<Item = M>,
        ) -> (u64, Result<()>) {
            (0, Err(Error::WrongType))
        }
        fn zrem<M: AsRef<[u8]>>(&mut self, _: &Vec<u8>, _: &[M]) -> Result<()> {
            Err(Error::WrongType)
        }
        fn zremrangebyscore(&mut self, _: &Vec<u8>, _: Millis) -> Result<()> {
            Err(Error::WrongType)
        }
        fn del(&mut self, key: &Vec<u8>) -> Result<()> {
            self.writes += 1;
            self.keys.remove(key);
            Ok(())
        }
    }

    /// RL.ALL over `line` (keys and policies) at `now`; its decisions, and how many
    /// times the keys were looked at.
    fn run(store: &mut Strings, line: &str, now: Millis) -> (Vec<[i64; 5]>, usize) {
        let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        let call = crate::all::parse(&args, Settings::DEFAULT).unwrap();
        let keys: Vec<Vec<u8>> = args[1..=call.keys()].iter().map(|k| k.to_vec()).collect();
        store.looks.set(0);
        let decisions = all(store, &keys, &call, now).unwrap();
        let fields = decisions.iter().map(Decision::fields).collect();
        (fields, store.looks.get())
    }

    #[test]
    fn a_rejected_call_looks_again_only_at_the_keys_that_would_have_written() {
        let mut store = Strings::default();
        // `full` has used its one unit of the minute ending at 60 s.
        store.keys.insert(b"full".to_vec(), (b"1".to_vec(), 60_000));
        // A key that rejects is decided once, and answers as COST 0 would.
        let (reply, looks) = run(&mut store, "1 full FIXED 1 1m", 1_000);
        assert_eq!(reply, [[0, 1, 0, 59_000, 59_000]; 2]);
        assert_eq!(looks, 1);
        // A key that would allow answers its state with nothing taken: it is looked
        // at again (its decision reports the state after the take).
        let (reply, looks) = run(&mut store, "2 full free FIXED 1 1m FIXED 5 1m", 1_000);
        assert_eq!(
            reply,
            [
                [0, 1, 0, 59_000, 59_000],
                [0, 1, 0, 59_000, 59_000],
                [1, 5, 5, 0, 0]
            ]
        );
        assert_eq!(looks, 3);
        // COST 0 takes nothing: each key decided once.
        let (reply, looks) = run(
            &mut store,
            "2 full free FIXED 1 1m FIXED 5 1m COST 0",
            1_000,
        );
        assert_eq!(reply[2], [1, 5, 5, 0, 0]);
        assert_eq!(looks, 2);
        assert_eq!(store.writes, 0);
        // Allowed: each key decided once, then written.
        let (_, looks) = run(&mut store, "1 free FIXED 5 1m", 1_000);
        assert_eq!((looks, store.writes), (1, 1));
    }
}

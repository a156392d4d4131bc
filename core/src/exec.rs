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
        // and its own verdict on this cost.
        for ((key, policy), d) in keys.iter().zip(&call.policies).zip(decisions.iter_mut()) {
            let state = policy
                .decide(store, key, now, Amount::Take(Cost::ZERO))?
                .decision;
            *d = crate::all::unchanged(*d, state);
        }
    }
    decisions.insert(0, call.combine(&decisions));
    Ok(decisions)
}

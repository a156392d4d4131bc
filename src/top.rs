//! RL.TOP's state on this node: the keys rejected most in the last minute or so,
//! one sketch ([`rl_core::top::Top`]) for enforced rejections and one for shadow
//! ones. Node-local and never replicated or persisted, like SLOWLOG: a replica's is
//! its own (empty, as it runs no RL call). Fed on the rejection path only, one call
//! per rejected key; its size follows `rl.top-size` (a new size starts afresh).

use std::sync::{Mutex, MutexGuard};

use crate::config;
use rl_core::algorithms::Millis;
use rl_core::top::{Ranked, Top};

static ENFORCED: Mutex<Option<Top>> = Mutex::new(None);
static SHADOW: Mutex<Option<Top>> = Mutex::new(None);

/// A call rejected on `key` at `now`.
pub fn rejected(key: &[u8], now: Millis) {
    sketch(&ENFORCED, |top| top.rejected(key, now));
}

/// A shadow policy that would have rejected a call on `key` at `now` (what
/// `RL.TOP SHADOW` reports): the one call the SHADOW option makes.
#[allow(dead_code, reason = "the SHADOW option calls it")]
pub fn shadow_rejected(key: &[u8], now: Millis) {
    sketch(&SHADOW, |top| top.rejected(key, now));
}

/// The `count` keys rejected most (of shadow rejections if `shadow`) at `now`.
pub fn report(shadow: bool, now: Millis, count: u64) -> Vec<Ranked> {
    let which = if shadow { &SHADOW } else { &ENFORCED };
    sketch(which, |top| top.top(now, count))
}

/// Forgets every key, shadow ones too (`RL.TOP RESET`, and each load).
pub fn reset() {
    for which in [&ENFORCED, &SHADOW] {
        *lock(which) = None;
    }
}

/// Runs `f` on one sketch, made (or remade, after `rl.top-size` changed) at the
/// configured size.
fn sketch<T>(which: &Mutex<Option<Top>>, f: impl FnOnce(&mut Top) -> T) -> T {
    let size = config::top_size();
    let mut guard = lock(which);
    let top = match guard.as_mut() {
        Some(top) if top.size() == size => top,
        _ => guard.insert(Top::new(size)),
    };
    f(top)
}

/// The lock, also after a panic elsewhere held it: a sketch is always valid
/// between two calls of its methods, which do not unwind half-way.
fn lock(which: &Mutex<Option<Top>>) -> MutexGuard<'_, Option<Top>> {
    which
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

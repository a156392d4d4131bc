//! Staying up when Redis is slow or gone (both off unless configured): a cache of
//! blocked keys, which rejects locally a call the server has just rejected until its
//! retry_after, and a fallback limiter, an in-process GCRA at the call's limit /
//! instances that decides while the server cannot be reached. No I/O here: the
//! limiters ask before a call and tell after it.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use redis::{cmd, Arg};

use crate::command::{Call, SHADOW};
use crate::error::Error;
use crate::reply::Decision;

// The commands both apply to, the command table's plain rates: one key, one rate
// (limit per window) and an exact retry_after. Other commands, calls with SHADOW and
// batches go to the server as always (the fail mode applies to them).
use crate::generated::commands::PLAIN_RATES as COVERED;
/// The most keys the fallback limiter keeps (the least recently used are dropped).
const FALLBACK_KEYS: usize = 10_000;
/// The default longest a rejection is cached.
pub(crate) const DEFAULT_CACHE_MAX: Duration = Duration::from_secs(1);
/// The default shortest time between two probes of a server that did not answer.
pub(crate) const DEFAULT_PROBE_EVERY: Duration = Duration::from_millis(500);

/// What an amount does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Cost,
    Refund,
    Debit,
}

/// A covered call: its command, key and arguments without the amount (what the cache
/// and the fallback key on), the amount's kind and the amount, its limit and window.
#[derive(Debug)]
pub(crate) struct Ticket {
    ident: Vec<u8>,
    kind: Kind,
    amount: u64,
    limit: u64,
    window: Duration,
}

impl Ticket {
    /// The call's ticket; None for a command not covered or a call with DELAY or
    /// SHADOW (a tried limit must reach the server, which counts it, and must not
    /// block an enforced call).
    pub(crate) fn of(call: &Call<'_>) -> Option<Ticket> {
        let Call::One(key, p) = call else {
            return None;
        };
        let name = p.names().command;
        let window = p.window()?;
        if !COVERED.contains(&name) || window.is_zero() || p.flag(SHADOW) {
            return None;
        }
        let mut c = cmd(name);
        c.arg(*key);
        p.write_args(&mut c);
        p.write_options(&mut c);
        let words: Vec<&[u8]> = c
            .args_iter()
            .filter_map(|a| match a {
                Arg::Simple(w) => Some(w),
                _ => None,
            })
            .collect();
        let mut t = Ticket {
            ident: Vec::new(),
            kind: Kind::Cost,
            amount: 1,
            limit: p.limit(),
            window,
        };
        let mut i = 0;
        while i < words.len() {
            let word = words[i];
            let kind = match word {
                b"DELAY" => return None,
                b"COST" => Some(Kind::Cost),
                b"REFUND" => Some(Kind::Refund),
                b"DEBIT" => Some(Kind::Debit),
                _ => None,
            };
            if let (Some(kind), Some(n)) = (kind, words.get(i + 1)) {
                t.kind = kind;
                t.amount = std::str::from_utf8(n).ok()?.parse().ok()?;
                i += 2;
                continue;
            }
            // Length-prefixed, so that no two argument lists give the same bytes.
            t.ident.extend_from_slice(&word.len().to_le_bytes());
            t.ident.extend_from_slice(word);
            i += 1;
        }
        Some(t)
    }
}

/// A map that drops its least recently used entry past a size.
#[derive(Debug)]
struct Lru<V> {
    items: HashMap<Vec<u8>, (V, u64)>,
    order: BTreeMap<u64, Vec<u8>>,
    tick: u64,
}

impl<V> Default for Lru<V> {
    fn default() -> Self {
        Lru {
            items: HashMap::new(),
            order: BTreeMap::new(),
            tick: 0,
        }
    }
}

impl<V> Lru<V> {
    fn get(&self, key: &[u8]) -> Option<&V> {
        self.items.get(key).map(|(v, _)| v)
    }

    fn put(&mut self, key: &[u8], value: V, size: usize) {
        self.tick = self.tick.wrapping_add(1);
        if let Some((_, old)) = self.items.insert(key.to_vec(), (value, self.tick)) {
            self.order.remove(&old);
        }
        self.order.insert(self.tick, key.to_vec());
        while self.items.len() > size {
            let Some((_, oldest)) = self.order.pop_first() else {
                break;
            };
            self.items.remove(&oldest);
        }
    }

    fn remove(&mut self, key: &[u8]) {
        if let Some((_, tick)) = self.items.remove(key) {
            self.order.remove(&tick);
        }
    }
}

#[derive(Debug)]
struct Blocked {
    until: Instant,
    retry_at: Option<Instant>,
    reset_at: Instant,
    amount: u64,
    limit: u64,
}

/// One limiter's cache and fallback (shared by its clones).
#[derive(Debug, Default)]
pub(crate) struct Survival {
    cache_size: usize,
    cache_max: Duration,
    instances: u64,
    probe_every: Duration,
    blocked: Lru<Blocked>,
    /// The fallback GCRA's theoretical arrival time per ticket.
    tats: Lru<Instant>,
    /// The error the server last failed with; None while it answers.
    down: Option<Box<str>>,
    down_until: Option<Instant>,
}

/// A limiter's handle on its [`Survival`]: None when neither is configured.
pub(crate) type Shared = Option<Arc<Mutex<Survival>>>;

/// `shared`'s state (made on first use) given to `f`.
pub(crate) fn configure(shared: &mut Shared, f: impl FnOnce(&mut Survival)) {
    let s = shared.get_or_insert_with(|| {
        Arc::new(Mutex::new(Survival {
            cache_max: DEFAULT_CACHE_MAX,
            probe_every: DEFAULT_PROBE_EVERY,
            ..Survival::default()
        }))
    });
    f(&mut lock(s));
}

/// The state behind a [`Shared`] (a panic elsewhere while it was held leaves it usable).
pub(crate) fn lock(s: &Mutex<Survival>) -> MutexGuard<'_, Survival> {
    s.lock().unwrap_or_else(PoisonError::into_inner)
}

fn ceil_ms(d: Duration) -> Duration {
    let ms = d.as_nanos().div_ceil(1_000_000);
    Duration::from_millis(u64::try_from(ms).unwrap_or(u64::MAX))
}

impl Survival {
    pub(crate) fn set_cache(&mut self, size: usize, max: Duration) {
        self.cache_size = size;
        self.cache_max = if max.is_zero() {
            DEFAULT_CACHE_MAX
        } else {
            max
        };
    }

    pub(crate) fn set_fallback(&mut self, instances: u64, probe_every: Duration) {
        self.instances = instances;
        self.probe_every = probe_every;
    }

    /// A decision made here (the fallback's while the server is down and no probe is
    /// due; a cached rejection), or None: send the call.
    pub(crate) fn before(&mut self, t: &Ticket, now: Instant) -> Option<Decision> {
        if let Some(err) = self.down.clone() {
            if self.instances > 0 {
                if self.down_until.is_some_and(|u| now < u) {
                    return Some(self.fallback(t, now, err));
                }
                // This call probes the server; the calls meanwhile stay local.
                self.down_until = Some(now + self.probe_every);
            }
        }
        if self.cache_size == 0 {
            return None;
        }
        if t.kind != Kind::Cost || t.amount == 0 {
            // COST 0, REFUND and DEBIT go to the server and end the entry.
            self.blocked.remove(&t.ident);
            return None;
        }
        let e = self.blocked.get(&t.ident)?;
        if now >= e.until {
            self.blocked.remove(&t.ident);
            return None;
        }
        if t.amount < e.amount {
            return None;
        }
        Some(Decision {
            allowed: false,
            limit: e.limit,
            remaining: 0,
            retry_after: e
                .retry_at
                .map(|r| ceil_ms(r.saturating_duration_since(now))),
            reset_after: ceil_ms(e.reset_at.saturating_duration_since(now)),
            window: Some(t.window),
            fallback: false,
            cached: true,
            error: None,
            shadow: false,
        })
    }

    /// The server answered (an error reply too): calls go to it again.
    pub(crate) fn up(&mut self) {
        self.down = None;
    }

    /// The server's decision: the server is up; a rejection is cached.
    pub(crate) fn answered(&mut self, t: &Ticket, d: &Decision, now: Instant) {
        self.up();
        if self.cache_size == 0 || d.allowed || t.kind != Kind::Cost || t.amount == 0 {
            return;
        }
        let hold = d
            .retry_after
            .map_or(self.cache_max, |r| r.min(self.cache_max));
        if hold.is_zero() {
            return;
        }
        let entry = Blocked {
            until: now + hold,
            retry_at: d.retry_after.map(|r| now + r),
            reset_at: now + d.reset_after,
            amount: t.amount,
            limit: d.limit,
        };
        self.blocked.put(&t.ident, entry, self.cache_size);
    }

    /// The fallback's decision for a call the server did not answer, or None without one.
    pub(crate) fn failed(&mut self, t: &Ticket, err: &Error, now: Instant) -> Option<Decision> {
        if self.instances == 0 {
            return None;
        }
        let cause: Box<str> = err.to_string().into();
        self.down = Some(cause.clone());
        self.down_until = Some(now + self.probe_every);
        Some(self.fallback(t, now, cause))
    }

    /// GCRA at this instance's share: n = limit / instances units per window, in bursts
    /// of up to n.
    fn fallback(&mut self, t: &Ticket, now: Instant, cause: Box<str>) -> Decision {
        let n = (t.limit / self.instances.max(1)).max(1);
        let window = t.window.as_secs_f64();
        let step = window / n as f64;
        let ahead = |tat: Instant| tat.saturating_duration_since(now).as_secs_f64();
        let mut tat = self
            .tats
            .get(&t.ident)
            .copied()
            .filter(|&v| v > now)
            .unwrap_or(now);
        let cost = Duration::from_secs_f64((t.amount as f64 * step).min(1e12));
        let mut allowed = true;
        match t.kind {
            Kind::Refund => tat = tat.checked_sub(cost).filter(|&v| v > now).unwrap_or(now),
            Kind::Debit => tat += cost,
            Kind::Cost if ahead(tat + cost) <= window + 1e-9 => tat += cost,
            Kind::Cost => allowed = false,
        }
        self.tats.put(&t.ident, tat, FALLBACK_KEYS);
        let ahead_s = ahead(tat);
        let remaining = (((window - ahead_s) / step + 1e-6).floor().max(0.0) as u64).min(n);
        let retry_after = if allowed {
            Some(Duration::ZERO)
        } else if t.amount > n {
            None
        } else {
            Some(ceil_ms(Duration::from_secs_f64(
                (ahead_s + cost.as_secs_f64() - window).max(0.0),
            )))
        };
        Decision {
            allowed,
            limit: n,
            remaining,
            retry_after,
            reset_after: ceil_ms(tat.saturating_duration_since(now)),
            window: Some(t.window),
            fallback: true,
            cached: false,
            error: Some(cause),
            shadow: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generated::commands::{Acquire, Fixed, Gcra};

    fn ticket(key: &str, params: &(dyn crate::command::Params + Sync)) -> Option<Ticket> {
        Ticket::of(&Call::One(key.as_bytes(), params))
    }

    #[test]
    fn the_cache_is_bounded_and_the_fallback_admits_limit_over_instances() {
        let mut s = Survival::default();
        s.set_cache(2, Duration::from_secs(1));
        s.set_fallback(3, Duration::from_secs(1));
        let now = Instant::now();
        let rejected = Decision::from_fields([0, 1, 0, 60_000, 60_000]).unwrap();
        for key in ["k0", "k1", "k2", "k3", "k4"] {
            let t = ticket(key, &Gcra::new(1, 1, "1m")).unwrap();
            s.answered(&t, &rejected, now);
        }
        assert_eq!(s.blocked.items.len(), 2);
        let k4 = ticket("k4", &Gcra::new(1, 1, "1m")).unwrap();
        assert!(s.before(&k4, now).is_some_and(|d| d.cached && !d.allowed));
        assert!(ticket("k", &Gcra::new(1, 1, "1m").delay("1s")).is_none());
        assert!(ticket("k", &Acquire::new(1, "1m", "id")).is_none());
        assert!(ticket("k", &Gcra::new(1, 1, "1m").shadow()).is_none());
        assert!(ticket("k", &Fixed::new(1, "1m").shadow().cost(2)).is_none());
        let t = ticket("f", &Fixed::new(30, "1s").cost(2)).unwrap();
        assert_eq!((t.kind, t.amount), (Kind::Cost, 2));
        let err = Error::timeout(Duration::from_millis(50));
        let got: Vec<bool> = (0..8)
            .map(|_| s.failed(&t, &err, now).unwrap().allowed)
            .collect();
        // 30 / 3 = 10 units a second: five calls of 2.
        assert_eq!(got, [true, true, true, true, true, false, false, false]);
    }
}

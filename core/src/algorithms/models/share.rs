//! Compiled only for tests (a submodule of `models`, which is `#[cfg(test)]`).
//! RL.SHARE against the plainest reading of its rules (docs/commands.md#rlshare):
//! every tenant kept in a map with the end of the slot of its last write, W and N
//! counted by scanning it, every condition in big integers, `remaining` and
//! `retry_after` found by search rather than by formula. Random calls by a few
//! tenants with changing weights, costs, refunds and debits, policy changes and
//! the tenant limit: replies and errors equal while time moves forward; the reply's
//! invariants and the hash's bookkeeping when the clock may step back.

use std::collections::BTreeMap;

use num_bigint::BigInt;

use super::*;
use crate::algorithms::share::{Global, Member, Share, Slot, Tenant, Weight, MAX_WEIGHT, SLOTS};
use crate::algorithms::{Amount, Change, Outcome, Rate};
use crate::codec::share::{self, MapBudget};
use crate::error::Error;

const NS: u128 = 1_000_000;

#[derive(Clone, Copy, Debug)]
struct Params {
    capacity: u64,
    tokens: u64,
    period: u64,
    max_tenants: u64,
}

impl Params {
    fn t(&self) -> u128 {
        u128::from(self.period) * NS / u128::from(self.tokens)
    }

    fn share(&self, who: u8, w: u64) -> Share {
        let rate = Rate {
            capacity: c(self.capacity),
            tokens: c(self.tokens),
            period: d(self.period),
        };
        let tenant = Tenant::new(&[b'a' + who]).unwrap();
        Share::new(tenant, Weight::new(w).unwrap(), rate, self.max_tenants).unwrap()
    }
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Take(u64),
    Refund(u64),
    Debit(u64),
}

impl Op {
    fn amount(self) -> Amount {
        match self {
            Op::Take(n) => Amount::Take(k(n)),
            Op::Refund(n) => Amount::Refund(k(n)),
            Op::Debit(n) => Amount::Debit(c(n)),
        }
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Rec {
    tat: u128,
    weight: u64,
    /// The end of the slot of the tenant's last write.
    slot_end: u64,
}

/// The rules, read plainly.
#[derive(Clone, Debug, Default)]
struct ShareModel {
    tat: u128,
    debt_end: u128,
    current_end: u64,
    tenants: BTreeMap<u8, Rec>,
    expires_at: Option<Millis>,
}

fn big(v: u128) -> BigInt {
    BigInt::from(v)
}

/// At `now`, the tenant's and the budget's debts and W decide a call of `n`.
struct Now {
    g: BigInt,
    d: BigInt,
    total: u64,
    w: u64,
}

impl Now {
    fn allows(&self, p: Params, n: u64) -> bool {
        let (t, dd) = (big(p.t()), big(p.t()) * p.capacity);
        let ti = (big(p.t()) * self.total / self.w).max(BigInt::from(1));
        let budget = n <= p.capacity && &self.g + &t * n <= dd;
        let share = self.d == BigInt::from(0) || &self.d + &ti * n <= dd;
        let surplus = n <= p.capacity
            && BigInt::from(self.total) * &self.g <= BigInt::from(self.w) * (&dd - &t * n);
        budget && (share || surplus)
    }

    /// The largest m ≤ capacity a call could take, by search.
    fn remaining(&self, p: Params) -> u64 {
        let (mut lo, mut hi) = (0u64, p.capacity);
        if !self.allows(p, 0) && !self.allows(p, 1) {
            return 0;
        }
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if self.allows(p, mid) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        lo
    }

    /// The first whole ms after which the call passes, both debts drained by the
    /// time passed (and nothing else changed), by search.
    fn wait(&self, p: Params, n: u64) -> u64 {
        let zero = BigInt::from(0);
        let later = |ms: u64| {
            let spent = BigInt::from(ms) * NS;
            Now {
                g: (&self.g - &spent).max(zero.clone()),
                d: (&self.d - &spent).max(zero.clone()),
                ..*self
            }
            .allows(p, n)
        };
        let (mut lo, mut hi) = (1u64, MAX_COUNT);
        if !later(hi) {
            return MAX_COUNT;
        }
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if later(mid) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    }
}

impl ShareModel {
    fn remembered(&self, p: Params, now: u64) -> impl Iterator<Item = (&u8, &Rec)> {
        self.tenants
            .iter()
            .filter(move |(_, r)| r.slot_end + p.period > now)
    }

    fn call(&mut self, now: Millis, p: Params, who: u8, w: u64, op: Op) -> Result<Decision, Error> {
        if self.expires_at.is_some_and(|e| now > e) {
            *self = ShareModel::default();
        }
        let now_ms = now as u64;
        let now_ns = u128::from(now_ms) * NS;
        let remembered = self.remembered(p, now_ms).any(|(&x, _)| x == who);
        let others: u64 = self
            .remembered(p, now_ms)
            .filter(|(&x, _)| x != who)
            .map(|(_, r)| r.weight)
            .sum();
        let n_remembered = self.remembered(p, now_ms).count() as u64;
        let total = others + w;
        let rec = self.tenants.get(&who).copied();
        let own_tat = rec.map_or(0, |r| r.tat);
        let debt = |tat: u128| tat.max(now_ns) - now_ns;
        let at = |g: u128, d: u128| Now {
            g: big(g),
            d: big(d),
            total,
            w,
        };
        let joins = matches!(op, Op::Take(n) if n > 0) || matches!(op, Op::Debit(_));
        if joins && !remembered && n_remembered >= p.max_tenants {
            return Err(Error::ShareTenants { max: p.max_tenants });
        }
        let t = p.t();
        let ti = (t * u128::from(total) / u128::from(w)).max(1);
        match op {
            Op::Take(n) => {
                let before = at(debt(self.tat), debt(own_tat));
                let allowed = before.allows(p, n);
                if n == 0 || (!allowed && remembered) {
                    return Ok(self.reply(&before, p, now_ms, n));
                }
                let budget = big(t) * n;
                let in_share =
                    before.d == BigInt::from(0) || &before.d + big(ti) * n <= big(t) * p.capacity;
                let own = if allowed {
                    self.tat = self.tat.max(now_ns) + t * u128::from(n);
                    if in_share {
                        now_ns + debt(own_tat) + ti * u128::from(n)
                    } else {
                        own_tat
                    }
                } else {
                    own_tat
                };
                let _ = budget;
                self.join(now_ms, p, who, w, own);
                let after = at(debt(self.tat), debt(own));
                let reply = if allowed {
                    Decision {
                        allowed: true,
                        retry_after: RetryAfter::Now,
                        ..self.reply(&after, p, now_ms, 0)
                    }
                } else {
                    self.reply(&after, p, now_ms, n)
                };
                self.expires_at = Some(now + reply.reset_after_ms as Millis);
                Ok(reply)
            }
            Op::Debit(n) => {
                let n = u128::from(n);
                self.tat = self.tat.max(now_ns).saturating_add(t * n);
                let own = (now_ns + debt(own_tat)).saturating_add(ti.saturating_mul(n));
                self.join(now_ms, p, who, w, own);
                let after = at(debt(self.tat), debt(own));
                let reply = Decision {
                    allowed: true,
                    retry_after: RetryAfter::Now,
                    ..self.reply(&after, p, now_ms, 0)
                };
                self.expires_at = Some(now + reply.reset_after_ms as Millis);
                Ok(reply)
            }
            Op::Refund(n) => {
                let n = u128::from(n);
                let budget = if self.tat > now_ns {
                    self.tat.saturating_sub(t * n).max(now_ns)
                } else {
                    self.tat
                };
                let own = if own_tat > now_ns {
                    own_tat.saturating_sub(ti.saturating_mul(n)).max(now_ns)
                } else {
                    own_tat
                };
                let changed = budget != self.tat || own != own_tat;
                self.tat = budget;
                if own != own_tat {
                    if let Some(r) = self.tenants.get_mut(&who) {
                        r.tat = own;
                    }
                }
                let after = at(debt(self.tat), debt(own));
                let reply = Decision {
                    allowed: true,
                    retry_after: RetryAfter::Now,
                    ..self.reply(&after, p, now_ms, 0)
                };
                if changed {
                    if n_remembered == 0 && self.tat <= now_ns && self.debt_end <= now_ns {
                        *self = ShareModel::default();
                    } else {
                        self.expires_at = Some(now + reply.reset_after_ms as Millis);
                    }
                }
                Ok(reply)
            }
        }
    }

    /// The tenant's write: into the current slot (a new one once it has ended),
    /// with its weight and own TAT.
    fn join(&mut self, now: u64, p: Params, who: u8, w: u64, tat: u128) {
        let s = p.period.div_ceil(SLOTS).max(1);
        if now >= self.current_end {
            self.current_end = ((now / s + 1) * s).min(MAX_COUNT);
        }
        self.tenants.insert(
            who,
            Rec {
                tat,
                weight: w,
                slot_end: self.current_end,
            },
        );
        self.debt_end = self.debt_end.max(tat);
    }

    fn reply(&self, s: &Now, p: Params, now: u64, n: u64) -> Decision {
        let allowed = s.allows(p, n);
        let retry_after = if allowed {
            RetryAfter::Now
        } else if n > p.capacity {
            RetryAfter::Never
        } else {
            RetryAfter::Ms(s.wait(p, n))
        };
        let now_ns = u128::from(now) * NS;
        let ceil_ms = |ns: u128| u64::try_from(ns.div_ceil(NS)).unwrap_or(u64::MAX);
        let budget = ceil_ms(self.tat.saturating_sub(now_ns));
        let owed = ceil_ms(self.debt_end.saturating_sub(now_ns));
        let tenants = self
            .remembered(p, now)
            .map(|(_, r)| r.slot_end + p.period - now)
            .max()
            .unwrap_or(0);
        Decision {
            allowed,
            limit: p.capacity,
            remaining: s.remaining(p),
            retry_after,
            reset_after_ms: budget.max(owed).max(tenants).min(MAX_COUNT),
        }
    }
}

/// The hash's bookkeeping holds together after every call: each index entry
/// names a tenant record that points back at it, W and N are the sums over the
/// remembered records, the current slot's over those written in it, and one
/// field per closed slot.
fn check_fields(b: &MapBudget) -> Result<(), String> {
    let Some(g) = b.global() else {
        return if b.fields.is_empty() {
            Ok(())
        } else {
            Err(format!("fields without a global record: {b:?}"))
        };
    };
    let mut records = Vec::new();
    for (f, v) in &b.fields {
        if let Some(name) = f.strip_prefix(b"t:") {
            let m = Member::parse(v).ok_or("a bad record")?;
            records.push((name.to_vec(), m));
        }
    }
    if records.len() as u64 != g.len {
        return Err(format!("{} records, len {}", records.len(), g.len));
    }
    for (name, m) in &records {
        if b.fields.get(&share::index_field(m.index)) != Some(name) {
            return Err(format!("index {} does not name {name:?}", m.index));
        }
    }
    let live: Vec<&Member> = records
        .iter()
        .map(|(_, m)| m)
        .filter(|m| g.remembers(m.seq))
        .collect();
    let sum = |ms: &[&Member]| ms.iter().map(|m| m.weight).sum::<u64>();
    let current: Vec<&Member> = live.iter().copied().filter(|m| m.seq == g.seq).collect();
    let slots = b.fields.keys().filter(|f| f.starts_with(b"s:")).count() as u64;
    let ok = live.len() as u64 == g.tenants
        && sum(&live) == g.weight
        && current.len() as u64 == g.slot_tenants
        && sum(&current) == g.slot_weight
        && slots == g.closed
        && (g.len == 0 || g.cursor < g.len);
    if ok {
        Ok(())
    } else {
        Err(format!(
            "bookkeeping: {g:?}, {} remembered: {b:?}",
            live.len()
        ))
    }
}

fn params() -> impl Strategy<Value = Params> {
    (
        count(),
        count(),
        duration(),
        // From 2: with four tenants the index never passes twice the limit, where
        // the sweep would forgive a debt (a unit test covers that).
        prop_oneof![1 => 2u64..=3, 2 => Just(10_000u64)],
    )
        .prop_map(|(capacity, tokens, period, max_tenants)| Params {
            capacity,
            // At most one token per ns.
            tokens: tokens.min(period * 1_000_000),
            period,
            max_tenants,
        })
}

fn weight() -> impl Strategy<Value = u64> {
    prop_oneof![4 => 1u64..=5, 1 => Just(MAX_WEIGHT), 1 => 1u64..=MAX_WEIGHT]
}

fn op(capacity: u64) -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => cost(capacity).prop_map(Op::Take),
        1 => prop_oneof![1u64..=3, Just(MAX_COUNT)].prop_map(Op::Refund),
        1 => prop_oneof![1u64..=3, Just(capacity), Just(MAX_COUNT)].prop_map(Op::Debit),
    ]
}

/// A call: a time step, the tenant (of four), its weight, what it asks, and now
/// and then another capacity and rate (the period stays).
type Call = (i64, u8, u64, Op, Option<(u64, u64)>);

fn share_calls(p: Params, step: fn(u64) -> BoxedStrategy<i64>) -> impl Strategy<Value = Vec<Call>> {
    let change = prop_oneof![8 => Just(None), 1 => (count(), count()).prop_map(Some)];
    proptest::collection::vec(
        (step(p.period), 0u8..4, weight(), op(p.capacity), change),
        1..64,
    )
}

fn with_calls(step: fn(u64) -> BoxedStrategy<i64>) -> impl Strategy<Value = (Params, Vec<Call>)> {
    params().prop_flat_map(move |p| (Just(p), share_calls(p, step)))
}

fn changed(p: Params, change: Option<(u64, u64)>) -> Params {
    match change {
        Some((capacity, tokens)) => Params {
            capacity,
            tokens: tokens.min(p.period * 1_000_000),
            ..p
        },
        None => p,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn share_matches_the_model_when_time_moves_forward((p0, seq) in with_calls(fwd)) {
        let (mut model, mut key, mut now) = (ShareModel::default(), MapBudget::default(), START);
        let mut p = p0;
        for (step, who, w, op, change) in seq {
            now += step;
            p = changed(p, change);
            let expected = model.call(now, p, who, w, op);
            key.at(now);
            let out = share::call(&key, now, &p.share(who, w), op.amount());
            match (&out, &expected) {
                (Ok(out), Ok(want)) => {
                    prop_assert_eq!(out.decision, *want, "at {} {:?} by {} (w {})", now, op, who, w);
                    let n = match op { Op::Take(n) => n, _ => 0 };
                    check_reply(&out.decision, p.capacity, n);
                }
                (Err(e), Err(want)) => prop_assert_eq!(e, want),
                _ => prop_assert!(false, "{:?} vs the model's {:?}", out, expected),
            }
            if let Ok(Outcome { write: Some(w), decision }) = &out {
                if let Change::Set(c) = w {
                    // The end of the slot in which the budget is back at its
                    // initial state.
                    let back = now + decision.reset_after_ms as Millis;
                    let slot = p.period.div_ceil(SLOTS).max(1) as Millis;
                    prop_assert!(c.expires_at >= back && c.expires_at - back < slot, "expires {} back {} slot {} now {}", c.expires_at, back, slot, now);
                    prop_assert_eq!(c.expires_at % slot, 0);
                    let set: Vec<_> = c.set().map(|(f, _)| f).collect();
                    prop_assert!(c.deleted().all(|f| !set.contains(&f)));
                    prop_assert!(set.iter().enumerate().all(|(i, f)| !set[..i].contains(f)));
                }
                key.apply(w);
            }
            check_fields(&key).map_err(TestCaseError::fail)?;
        }
    }

    #[test]
    fn share_replies_and_fields_hold_even_when_the_clock_steps_back((p0, seq) in with_calls(back)) {
        let (mut key, mut now) = (MapBudget::default(), START);
        let mut p = p0;
        for (step, who, w, op, change) in seq {
            now += step;
            p = changed(p, change);
            key.at(now);
            let before = key.clone();
            let Ok(out) = share::call(&key, now, &p.share(who, w), op.amount()) else {
                continue;
            };
            let n = match op { Op::Take(n) => n, _ => 0 };
            check_reply(&out.decision, p.capacity, n);
            if matches!(op, Op::Take(0)) {
                prop_assert!(out.write.is_none(), "COST 0 writes nothing");
            }
            if let Some(w) = &out.write {
                key.apply(w);
            }
            check_fields(&key).map_err(TestCaseError::fail)?;
            // A rejected call by a tenant the budget remembers writes nothing: one
            // whose slot (the current one, or a closed one) ended less than a
            // period ago.
            let remembered = before
                .global()
                .zip(before.member(&[b'a' + who]))
                .is_some_and(|(g, m): (Global, Member)| {
                    let end = if m.seq == g.seq {
                        Some(g.end)
                    } else {
                        before
                            .fields
                            .get(&share::slot_field(m.seq))
                            .and_then(|v| Slot::parse(v))
                            .map(|s| s.end)
                    };
                    g.remembers(m.seq) && end.is_some_and(|e| e + p.period > now as u64)
                });
            if !out.decision.allowed && remembered {
                prop_assert!(out.write.is_none());
            }
        }
    }
}

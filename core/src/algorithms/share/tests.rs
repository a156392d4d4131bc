//! RL.SHARE's unit tests: the vector, the fields as stored, and each rule, on a
//! budget in a map.

use super::params::NS_PER_MS;
use super::*;
use crate::algorithms::{
    check_fields, Amount, Change, Cost, Count, Interval, Millis, Outcome, Rate, RetryAfter,
    MAX_COUNT, MAX_DURATION_MS,
};
use crate::codec::share::{call, index_field, MapBudget, Write, WHAT};
use crate::error::Error;

const T0: Millis = 1_800_000_000_000;

fn rate(capacity: u64, tokens: u64, period_ms: u64) -> Rate {
    Rate {
        capacity: Count::new(capacity).unwrap(),
        tokens: Count::new(tokens).unwrap(),
        period: Interval::from_ms(period_ms).unwrap(),
    }
}

fn share(r: Rate, tenant: &str, weight: u64) -> Share {
    Share::new(
        Tenant::new(tenant.as_bytes()).unwrap(),
        Weight::new(weight).unwrap(),
        r,
        DEFAULT_MAX_TENANTS,
    )
    .unwrap()
}

fn take(n: u64) -> Amount {
    Amount::Take(Cost::new(n).unwrap())
}

/// One budget: calls at times relative to T0, the reply as the command sends it.
struct Budget {
    b: MapBudget,
    r: Rate,
}

impl Budget {
    fn new(r: Rate) -> Self {
        Budget {
            b: MapBudget::default(),
            r,
        }
    }

    fn outcome(&mut self, t: Millis, tenant: &str, w: u64, a: Amount) -> Outcome<Write> {
        self.b.at(T0 + t);
        let out = call(&self.b, T0 + t, &share(self.r, tenant, w), a).unwrap();
        if let Some(write) = &out.write {
            if let Change::Set(c) = write {
                // The end of the slot in which the budget resets.
                let back = T0 + t + out.decision.reset_after_ms as Millis;
                let slot = self.r.period.ms().div_ceil(SLOTS).max(1) as Millis;
                assert_eq!(
                    c.expires_at,
                    back + (slot - back % slot) % slot,
                    "the key expires at the end of the slot in which the budget resets"
                );
            }
            self.b.apply(write);
        }
        self.check();
        out
    }

    fn call(&mut self, t: Millis, tenant: &str, w: u64, a: Amount) -> [i64; 5] {
        self.outcome(t, tenant, w, a).decision.fields()
    }

    fn take(&mut self, t: Millis, tenant: &str, w: u64, n: u64) -> [i64; 5] {
        self.call(t, tenant, w, take(n))
    }

    /// The hash's bookkeeping holds together: the index and the tenant records
    /// match one to one, and W and N are the remembered records' sums.
    fn check(&self) {
        let Some(g) = self.b.global() else {
            assert!(self.b.fields.is_empty());
            return;
        };
        let records: Vec<(Vec<u8>, Member)> = self
            .b
            .fields
            .iter()
            .filter_map(|(f, v)| {
                f.strip_prefix(b"t:")
                    .map(|name| (name.to_vec(), Member::parse(v).unwrap()))
            })
            .collect();
        assert_eq!(records.len() as u64, g.len, "{:?}", self.b);
        for (name, m) in &records {
            assert_eq!(
                self.b.fields.get(&index_field(m.index)),
                Some(name),
                "index of {name:?}"
            );
        }
        let live: Vec<&Member> = records
            .iter()
            .map(|(_, m)| m)
            .filter(|m| g.remembers(m.seq))
            .collect();
        assert_eq!(live.len() as u64, g.tenants);
        assert_eq!(live.iter().map(|m| m.weight).sum::<u64>(), g.weight);
        let current: Vec<&&Member> = live.iter().filter(|m| m.seq == g.seq).collect();
        assert_eq!(current.len() as u64, g.slot_tenants);
        assert_eq!(current.iter().map(|m| m.weight).sum::<u64>(), g.slot_weight);
        let slots = self
            .b
            .fields
            .keys()
            .filter(|f| f.starts_with(b"s:"))
            .count() as u64;
        assert_eq!(slots, g.closed);
    }
}

/// capacity 4, 4 tokens per 1200 ms: T = 300 ms, D = 1.2 s, slots of 150 ms.
fn vector_rate() -> Rate {
    rate(4, 4, 1200)
}

#[test]
fn the_vector_shares_by_weight_and_lends_the_surplus() {
    let mut k = Budget::new(vector_rate());
    // b (weight 3) alone: its share is the whole budget.
    assert_eq!(k.take(0, "b", 3, 1), [1, 4, 3, 0, 1350]);
    // a (weight 1) joins: W = 4, T_a = 1200 ms, its share of the burst 1 unit.
    assert_eq!(k.take(0, "a", 1, 1), [1, 4, 0, 0, 1350]);
    // Beyond its share, and the budget holds no more than b's share of the
    // burst (3/4 of 4 − 1 units): rejected, for 375 ms.
    let rejected = k.outcome(0, "a", 1, take(1));
    assert_eq!(rejected.decision.fields(), [0, 4, 0, 375, 1350]);
    assert_eq!(rejected.write, None);
    assert!(!k.outcome(374, "a", 1, take(1)).decision.allowed);
    // At 375 ms the budget has refilled enough: a takes from the surplus, not
    // charged to its share (its own TAT stays at 1.2 s).
    assert_eq!(k.take(375, "a", 1, 1), [1, 4, 0, 0, 1275]);
    assert_eq!(
        k.b.member(b"a").unwrap().tat,
        (T0 as u128 + 1200) * NS_PER_MS
    );
    // b is forgotten at 1350 (its slot ended at 150, plus a period): a is
    // alone again, and its share is the whole budget.
    assert_eq!(k.take(1400, "a", 1, 1), [1, 4, 3, 0, 1300]);
    let g = k.b.global().unwrap();
    assert_eq!(
        (g.weight, g.tenants, g.len),
        (1, 1, 1),
        "b's fields are swept"
    );
    assert_eq!(k.b.fields.get(b"g".as_slice()).unwrap(), &g.format());
}

#[test]
fn the_fields_as_stored() {
    let mut k = Budget::new(vector_rate());
    k.take(0, "b", 3, 1);
    k.take(0, "a", 1, 1);
    let text = |k: &Budget, f: &[u8]| String::from_utf8(k.b.fields[f].clone()).unwrap();
    // TAT 600 ms after T0, tenants' debts until 1.2 s; W 4, N 2, 2 index
    // entries, cursor 0; slot 0 ends 150 ms after T0, holding weight 4 and 2
    // tenants; no closed slot.
    assert_eq!(
        text(&k, b"g"),
        "1800000000600000000 1800000001200000000 4 2 2 0 0 1800000000150 4 2 0 0"
    );
    assert_eq!(text(&k, b"t:b"), "1800000000300000000 3 0 0");
    assert_eq!(text(&k, b"t:a"), "1800000001200000000 1 0 1");
    assert_eq!(text(&k, b"i:0"), "b");
    assert_eq!(text(&k, b"i:1"), "a");
    assert_eq!(k.b.expires_at, Some(T0 + 1350));
    // A write in the next slot closes slot 0 into s:0.
    k.take(200, "b", 3, 1);
    assert_eq!(text(&k, b"s:0"), "1800000000150 1 1");
    assert!(text(&k, b"g").ends_with(" 1 1800000000300 3 1 1 1800000000150"));
}

#[test]
fn a_policy_change_applies_at_once() {
    let mut k = Budget::new(vector_rate());
    k.take(0, "b", 3, 1);
    k.take(0, "a", 1, 1);
    // a now weighs 3: W = 6, T_a = 600 ms, its debt (1.2 s) is read with it.
    assert_eq!(k.call(0, "a", 3, take(0)), [1, 4, 0, 0, 1350]);
    // b at weight 1 (W = 2 with a still at 1): T_b = 600 ms.
    let d = k.outcome(0, "b", 1, take(1)).decision;
    assert!(d.allowed);
    assert_eq!(k.b.global().unwrap().weight, 2);
    // A lower capacity leaves the budget over its tolerance: rejected.
    let low = Budget {
        b: k.b.clone(),
        r: rate(1, 4, 1200),
    }
    .outcome(0, "b", 1, take(0))
    .decision;
    assert_eq!(low.fields()[..3], [0, 1, 0]);
}

#[test]
fn cost_zero_inspects_and_a_rejected_tenant_already_remembered_writes_nothing() {
    let mut k = Budget::new(rate(2, 1, 1000));
    let out = k.outcome(0, "a", 1, take(0));
    assert_eq!(out.write, None);
    assert_eq!(out.decision.fields(), [1, 2, 2, 0, 0]);
    k.take(0, "a", 1, 2);
    let before = k.b.clone();
    let out = k.outcome(10, "a", 1, take(1));
    assert!(!out.decision.allowed);
    assert_eq!(out.write, None);
    assert_eq!(k.b, before);
    // Too much for the capacity: never.
    assert_eq!(k.call(10, "a", 1, take(3)), [0, 2, 0, -1, 1990]);
}

#[test]
fn a_new_tenant_joins_even_when_rejected() {
    let mut k = Budget::new(rate(2, 1, 1000));
    k.take(0, "a", 1, 2);
    // b's first call finds the budget empty; it is remembered from it, so a's
    // share halves at once.
    let out = k.outcome(0, "b", 1, take(1));
    assert_eq!(out.decision.fields(), [0, 2, 0, 1000, 2000]);
    assert!(out.write.is_some());
    let g = k.b.global().unwrap();
    assert_eq!((g.weight, g.tenants), (2, 2));
    assert_eq!(k.b.member(b"b").unwrap().tat, 0, "no debt");
    // At 1 s one unit is back: a, with 2 s of debt at T_a = 2 s, must wait;
    // b, with none, takes it.
    assert!(!k.outcome(1000, "a", 1, take(1)).decision.allowed);
    assert!(k.outcome(1000, "b", 1, take(1)).decision.allowed);
}

#[test]
fn beyond_the_most_tenants_a_new_one_is_an_error_that_changes_nothing() {
    let mut k = Budget::new(rate(10, 10, 1000));
    let full = |tenant: &str| Share {
        max_tenants: 2,
        ..share(k.r, tenant, 1)
    };
    for t in ["a", "b"] {
        let out = call(&k.b, T0, &full(t), take(1)).unwrap();
        k.b.apply(&out.write.unwrap());
    }
    for a in [take(1), Amount::Debit(Count::new(1).unwrap())] {
        let e = call(&k.b, T0, &full("c"), a).unwrap_err();
        assert_eq!(e, Error::ShareTenants { max: 2 });
        assert_eq!(
            e.to_string(),
            "the budget already remembers 2 tenants (rl.share-max-tenants): a new tenant \
             is refused until one is forgotten, a period after its last call"
        );
    }
    // Looking and giving back do not add it; a remembered tenant still calls.
    assert!(call(&k.b, T0, &full("c"), take(0)).unwrap().write.is_none());
    assert!(call(&k.b, T0, &full("c"), Amount::Refund(Cost::ONE)).is_ok());
    assert!(
        call(&k.b, T0, &full("a"), take(1))
            .unwrap()
            .decision
            .allowed
    );
    // Once a and b are forgotten, c is welcome.
    let later = T0 + 1000 + 125;
    k.b.at(later);
    assert!(
        call(&k.b, later, &full("c"), take(1))
            .unwrap()
            .decision
            .allowed
    );
}

#[test]
fn a_tenant_is_forgotten_after_a_period_and_its_fields_are_swept() {
    // Period 1 s, slots of 125 ms: a written at 0 (slot ending at 125) is
    // remembered until 1125.
    let mut k = Budget::new(rate(100, 100, 1000));
    k.take(0, "a", 5, 1);
    k.take(0, "b", 1, 1);
    let w = |k: &Budget, t: Millis| {
        let mut b = k.b.clone();
        b.at(T0 + t);
        call(&b, T0 + t, &share(k.r, "z", 1), take(1))
            .unwrap()
            .write
            .map(|_| ())
    };
    assert!(w(&k, 10).is_some());
    // b keeps calling; a goes quiet.
    for t in (100..=1200).step_by(100) {
        k.take(t, "b", 1, 1);
    }
    let g = k.b.global().unwrap();
    assert_eq!((g.weight, g.tenants), (1, 1), "a forgotten at 1125");
    assert_eq!(g.len, 1, "and its fields removed");
    assert!(k.b.member(b"a").is_none());
    assert!(!k.b.fields.contains_key(b"i:1".as_slice()));
}

#[test]
fn a_forgotten_tenant_still_owes_what_it_owes() {
    // T = 100 ms, D = 10 s. a and b weigh 1: T_a = 200 ms.
    let mut k = Budget::new(rate(100, 10, 1000));
    k.take(0, "b", 1, 1);
    // With no debt, a may take 90 at once (far beyond its share): it owes 18 s.
    assert_eq!(k.take(0, "a", 1, 90)[0], 1);
    assert_eq!(
        k.b.member(b"a").unwrap().tat,
        (T0 as u128 + 18_000) * NS_PER_MS
    );
    // a goes quiet; b keeps calling. a is forgotten at 1125 (W = 1), but its
    // record stays while it owes.
    for t in (100..=3000).step_by(100) {
        k.take(t, "b", 1, 1);
    }
    let g = k.b.global().unwrap();
    assert_eq!((g.weight, g.tenants, g.len), (1, 1, 2));
    // Back at 3 s, a still owes 15 s: rejected (it joins again).
    let out = k.outcome(3000, "a", 1, take(1));
    assert!(!out.decision.allowed);
    assert_eq!(k.b.global().unwrap().weight, 2);
    assert_eq!(
        k.b.member(b"a").unwrap().tat,
        (T0 as u128 + 18_000) * NS_PER_MS
    );
    // Its share passes in 5.2 s (15 + 0.2 − 10); the surplus sooner, when the
    // budget holds b's share of the burst again: 9.1 − (10 − 0.1) / 2 s.
    assert_eq!(out.decision.retry_after_ms(), 4150);
    // Once a has repaid (18 s) and is forgotten again, b's writes sweep it.
    for t in (3100..=19_000).step_by(100) {
        k.take(t, "b", 1, 1);
    }
    let g = k.b.global().unwrap();
    assert_eq!((g.weight, g.tenants, g.len), (1, 1, 1));
    assert!(k.b.member(b"a").is_none());
}

#[test]
fn past_twice_the_most_tenants_forgotten_debts_are_swept_too() {
    let r = rate(1000, 1, 1000);
    let mut b = MapBudget::default();
    let p = |t: &str| Share {
        max_tenants: 2,
        ..share(r, t, 1)
    };
    // Tenants in debt for 1000 s each, one a period: at most 2 remembered, but
    // records in debt pile up to 2 · 2, and no further.
    for i in 0..12 {
        let now = T0 + i * 2000;
        b.at(now);
        let out = call(&b, now, &p(&format!("t{i}")), take(1)).unwrap();
        assert!(out.decision.allowed);
        b.apply(&out.write.unwrap());
        let g = b.global().unwrap();
        assert!(g.len <= 5, "{i}: {g:?}");
    }
}

#[test]
fn the_key_expires_when_the_budget_is_full_and_no_tenant_is_remembered() {
    let mut k = Budget::new(rate(10, 1, 1000));
    // 10 units: the budget is full again 10 s later; a is forgotten at 1125.
    assert_eq!(k.take(0, "a", 1, 10), [1, 10, 0, 0, 10_000]);
    assert_eq!(k.b.expires_at, Some(T0 + 10_000));
    // 1 unit: full at 1 s, a forgotten at 1125 ms.
    let mut k = Budget::new(rate(10, 1, 1000));
    assert_eq!(k.take(0, "a", 1, 1), [1, 10, 9, 0, 1125]);
    assert_eq!(k.b.expires_at, Some(T0 + 1125));
    // At the expiry instant the key still exists but reads as the initial state.
    assert_eq!(k.call(1125, "a", 1, take(0)), [1, 10, 10, 0, 0]);
}

#[test]
fn a_refund_gives_back_to_the_budget_and_the_share_and_deletes_at_the_initial_state() {
    let mut k = Budget::new(rate(4, 4, 1200));
    k.take(0, "b", 3, 1);
    k.take(0, "a", 1, 1);
    let r = |n| Amount::Refund(Cost::new(n).unwrap());
    // a gives its unit back: the budget's TAT moves 300 ms, a's 1200 ms.
    assert_eq!(k.call(0, "a", 1, r(1)), [1, 4, 3, 0, 1350]);
    assert_eq!(k.b.member(b"a").unwrap().tat, (T0 as u128) * NS_PER_MS);
    assert_eq!(k.b.global().unwrap().tat, (T0 as u128 + 300) * NS_PER_MS);
    // Nothing left to give back for a: only the budget moves.
    assert_eq!(k.call(0, "a", 1, r(5)), [1, 4, 4, 0, 1350]);
    assert!(k.outcome(0, "a", 1, r(5)).write.is_none());
    // Tenants are still remembered: the key stays until they are forgotten.
    assert_eq!(k.b.expires_at, Some(T0 + 1350));
    // Once no tenant is remembered, a refund leaves the key until the latest
    // tenant debt (a's, 5 s) has passed.
    let mut k = Budget::new(rate(10, 1, 1000));
    k.take(0, "a", 1, 5);
    assert_eq!(k.call(2000, "a", 1, r(10)), [1, 10, 10, 0, 3000]);
    assert_eq!(k.b.expires_at, Some(T0 + 5000));
    // With no debt left anywhere, a refund that fills the budget deletes it.
    let mut b = MapBudget::default();
    let g = Global {
        tat: (T0 as u128 + 3000) * NS_PER_MS,
        debt_end: (T0 as u128 + 1000) * NS_PER_MS,
        ..Global::default()
    };
    b.fields.insert(b"g".to_vec(), g.format());
    let out = call(&b, T0 + 2000, &share(k.r, "a", 1), r(1)).unwrap();
    assert_eq!(out.write, Some(Change::Delete));
    assert_eq!(out.decision.fields(), [1, 10, 10, 0, 0]);
}

#[test]
fn a_debit_goes_into_debt_repaid_by_time() {
    let mut k = Budget::new(rate(5, 1, 1000));
    assert_eq!(k.take(0, "a", 1, 2), [1, 5, 3, 0, 2000]);
    let debit = Amount::Debit(Count::new(6).unwrap());
    assert_eq!(k.call(0, "a", 1, debit), [1, 5, 0, 0, 8000]);
    assert_eq!(k.call(0, "a", 1, take(1)), [0, 5, 0, 4000, 8000]);
    assert_eq!(k.call(0, "a", 1, take(0)), [0, 5, 0, 3000, 8000]);
    assert_eq!(k.call(4000, "a", 1, take(1)), [1, 5, 0, 0, 5000]);
}

#[test]
fn a_call_larger_than_the_share_passes_on_a_tenant_without_debt() {
    // 10 tenants of weight 1: each one's share of the burst is 1 of 10 units.
    let mut k = Budget::new(rate(10, 10, 1000));
    for i in 0..9 {
        k.take(0, &format!("t{i}"), 1, 1);
    }
    // A new tenant takes 1 (its share) — and a call of 1 is all the budget has.
    assert_eq!(k.take(0, "big", 1, 1), [1, 10, 0, 0, 1125]);
    // Later, with no debt, "big" may take 5 at once; then it waits 5 · T_i.
    let d = k.outcome(1000, "big", 1, take(5)).decision;
    assert_eq!(d.fields()[0], 1);
    let d = k.outcome(1000, "big", 1, take(1)).decision;
    assert!(!d.allowed);
}

#[test]
fn retry_after_is_exact_to_the_millisecond() {
    // A period long enough that no tenant is forgotten within a wait (a
    // tenant forgotten meanwhile can only make a call pass sooner).
    let r = rate(6, 3000, 60_000);
    let mut checked = 0;
    let mut k = Budget::new(r);
    k.take(0, "a", 1, 2);
    k.take(0, "b", 2, 3);
    k.take(3, "c", 7, 1);
    for (tenant, w) in [("a", 1), ("b", 2), ("c", 7)] {
        for n in 1..=6 {
            let p = share(r, tenant, w);
            let d = call(&k.b, T0 + 10, &p, take(n)).unwrap().decision;
            let RetryAfter::Ms(wait) = d.retry_after else {
                continue;
            };
            let at = |t: Millis| call(&k.b, t, &p, take(n)).unwrap().decision.allowed;
            assert!(at(T0 + 10 + wait as Millis), "{tenant} {n}");
            assert!(!at(T0 + 9 + wait as Millis), "{tenant} {n}");
            checked += 1;
        }
    }
    assert!(checked >= 10, "{checked}");
}

#[test]
fn a_clock_stepping_back_grants_nothing_more() {
    let mut k = Budget::new(rate(2, 1, 1000));
    k.take(10_000, "a", 1, 2);
    assert!(!k.outcome(5_000, "a", 1, take(1)).decision.allowed);
    assert!(!k.outcome(5_000, "b", 1, take(1)).decision.allowed);
    assert!(!k.outcome(10_999, "a", 1, take(1)).decision.allowed);
    assert!(k.outcome(11_000, "b", 1, take(1)).decision.allowed);
}

#[test]
fn a_longer_period_extends_the_current_slot_once_every_slot_is_kept() {
    // Period 80 ms (slots of 10 ms): one tenant per slot fills the 8 closed slots.
    let mut k = Budget::new(rate(1000, 1000, 80));
    for i in 0..9 {
        k.take(i * 10, &format!("t{i}"), 1, 1);
    }
    assert_eq!(k.b.global().unwrap().closed, 8);
    // Period 10 s now: nothing expires, the ring is full, so the current slot
    // grows instead of closing.
    k.r = rate(1000, 1000, 10_000);
    k.take(95, "late", 1, 1);
    let g = k.b.global().unwrap();
    assert_eq!((g.closed, g.tenants, g.end), (8, 10, T0 as u64 + 1250));
}

#[test]
fn content_rl_did_not_write_is_refused() {
    let p = share(rate(2, 1, 1000), "a", 1);
    for (field, value) in [
        (b"g".as_slice(), b"1 2 3".as_slice()),
        (b"g", b"0 0 0 0 0 0 0 0 0 0 x"),
        (b"g", b"0 0 0 0 0 0 0 0 0 0 9007199254740992"),
        (b"t:a", b"5"),
        (b"t:a", b"01 1 0 0"),
    ] {
        let mut b = MapBudget::default();
        b.fields.insert(field.to_vec(), value.to_vec());
        assert_eq!(
            call(&b, T0, &p, take(1)),
            Err(Error::NotALimiter(WHAT)),
            "{}",
            value.escape_ascii()
        );
    }
    // A closed slot the record says is there, but is not.
    let mut k = Budget::new(rate(2, 1, 1000));
    k.take(0, "a", 1, 1);
    k.take(200, "b", 1, 1);
    k.b.fields.remove(b"s:0".as_slice());
    // Read only when the slot is forgotten, at 1125.
    assert!(call(&k.b, T0 + 300, &p, take(1)).is_ok());
    let e = call(&k.b, T0 + 1200, &p, take(1));
    assert_eq!(e, Err(Error::NotALimiter(WHAT)));
}

#[test]
fn tenants_and_weights_are_bounded() {
    assert!(Tenant::new(b"").is_none());
    assert!(Tenant::new(&[7; 256]).is_some());
    assert!(Tenant::new(&[7; 257]).is_none());
    assert_eq!(Tenant::new(b"x\x00y").unwrap().as_bytes(), b"x\x00y");
    assert!(Weight::new(0).is_none());
    assert!(Weight::new(1).is_some());
    assert!(Weight::new(10_000).is_some());
    assert!(Weight::new(10_001).is_none());
    let too_fast = rate(1, 1_000_001, 1);
    let t = Tenant::new(b"a").unwrap();
    let w = Weight::new(1).unwrap();
    assert!(Share::new(t, w, too_fast, 1).is_none());
    assert!(Share::new(t, w, rate(1, 1_000_000, 1), 1).is_some());
}

#[test]
fn a_huge_share_interval_saturates() {
    // W far beyond any real budget's (a hash set by hand): T_i · n passes
    // 2^128 for a tenant of weight 1 taking the whole capacity with no debt.
    let r = rate(MAX_COUNT, 1, MAX_DURATION_MS);
    let mut b = MapBudget::default();
    let g = Global {
        weight: MAX_COUNT - 1,
        tenants: 1,
        slot_weight: MAX_COUNT - 1,
        slot_tenants: 1,
        end: T0 as u64 + 1,
        ..Global::default()
    };
    b.fields.insert(b"g".to_vec(), g.format());
    let out = call(&b, T0, &share(r, "a", 1), take(MAX_COUNT)).unwrap();
    assert!(out.decision.allowed);
    b.apply(&out.write.unwrap());
    assert_eq!(b.member(b"a").unwrap().tat, u128::MAX);
    let d = call(&b, T0, &share(r, "a", 1), take(0)).unwrap().decision;
    check_fields(&d.fields()).unwrap();
}

#[test]
fn bounds_do_not_overflow() {
    let huge = rate(MAX_COUNT, 1, MAX_DURATION_MS);
    let tiny = rate(1, 1_000_000, 1);
    for r in [huge, tiny] {
        let mut k = Budget::new(r);
        for now in [i64::MIN, -1, 0, T0, MAX_COUNT as i64, i64::MAX] {
            for (tenant, w) in [("a", 1), ("b", MAX_WEIGHT)] {
                for a in [
                    take(0),
                    take(1),
                    take(MAX_COUNT),
                    Amount::Refund(Cost::new(MAX_COUNT).unwrap()),
                    Amount::Debit(Count::new(MAX_COUNT).unwrap()),
                ] {
                    k.b.at(now);
                    let out = call(&k.b, now, &share(r, tenant, w), a).unwrap();
                    let f = out.decision.fields();
                    check_fields(&f).unwrap();
                    if let Some(write) = &out.write {
                        k.b.apply(write);
                        for (field, v) in &k.b.fields {
                            if field == b"g" {
                                assert!(Global::parse(v).is_some());
                            } else if field.starts_with(b"t:") {
                                assert!(Member::parse(v).is_some());
                            }
                        }
                    }
                }
            }
        }
    }
}

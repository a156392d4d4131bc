//! Property tests of the leases against its plain model.

use super::*;

/// The plainest lease set: (id, end) pairs, expired ones dropped only when an
/// ACQUIRE is allowed or the last live lease is released, as the contract says.
#[derive(Default)]
pub(super) struct LeaseModel {
    pub(super) leases: Vec<(u8, Millis)>,
}

impl LeaseModel {
    pub(super) fn live(&self, now: Millis) -> Vec<(u8, Millis)> {
        self.leases
            .iter()
            .copied()
            .filter(|&(_, end)| end > now)
            .collect()
    }

    pub(super) fn acquire(&mut self, now: Millis, limit: u64, ttl: u64, id: u8) -> Decision {
        let live = self.live(now);
        let held = live.iter().any(|&(i, _)| i == id);
        let allowed = held || (live.len() as u64) < limit;
        if allowed {
            self.leases = live.clone();
            self.leases.retain(|&(i, _)| i != id);
            self.leases.push((id, now + ttl as i64));
        }
        let after = self.live(now);
        let soonest = live.iter().map(|&(_, e)| e).min();
        Decision {
            allowed,
            limit,
            remaining: limit.saturating_sub(after.len() as u64),
            retry_after: if allowed {
                RetryAfter::Now
            } else {
                RetryAfter::Ms(ms_between(i128::from(soonest.unwrap()), i128::from(now)))
            },
            reset_after_ms: after
                .iter()
                .map(|&(_, e)| ms_between(i128::from(e), i128::from(now)))
                .max()
                .unwrap_or(0),
        }
    }

    pub(super) fn release(&mut self, now: Millis, id: u8) -> bool {
        let held = self.live(now).iter().any(|&(i, _)| i == id);
        if held {
            self.leases.retain(|&(i, _)| i != id);
            // The last live lease released deletes the key, expired ones with it.
            if self.live(now).is_empty() {
                self.leases.clear();
            }
        }
        held
    }
}

/// One step of a lease sequence: a time step, then ACQUIRE (true) or RELEASE of
/// one of a few ids.
pub(super) fn lease_steps(
    ttl: u64,
    step: fn(u64) -> BoxedStrategy<i64>,
) -> impl Strategy<Value = Vec<(i64, bool, u8)>> {
    proptest::collection::vec((step(ttl), prop::bool::weighted(0.7), 0u8..6), 1..64)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn leases_match_the_model_and_never_exceed_the_limit(
        (limit, ttl, seq) in (1u64..=4, prop_oneof![4 => 1u64..=2000, 1 => Just(MAX_DURATION_MS)])
            .prop_flat_map(|(l, t)| (Just(l), Just(t), lease_steps(t, back)))
    ) {
        let params = Leases { limit: c(limit), ttl: d(ttl) };
        let (mut set, mut model, mut now) = (VecLeases::default(), LeaseModel::default(), START);
        for (step, take, id) in seq {
            now += step;
            let name = [b'a' + id];
            let live_before = model.live(now);
            if take {
                let out = acquire::acquire(&set, now, params, &name, Cost::ONE);
                let expected = model.acquire(now, limit, ttl, id);
                prop_assert_eq!(out.decision, expected, "acquire {} at {}", id, now);
                check_reply(&out.decision, limit, 1);
                if let Some(g) = out.write {
                    set.grant(&name, &g);
                    prop_assert_eq!(Some(g.expires_at), set.0.iter().map(|&(_, e)| e).max());
                }
                let live_after = model.live(now);
                prop_assert!(live_after.len() as u64 <= limit, "{} live leases", live_after.len());
                if live_before.iter().any(|&(i, _)| i == id) {
                    prop_assert_eq!(live_after.len(), live_before.len(), "a renewal takes no second slot");
                }
            } else {
                let out = acquire::release(&set, now, &name);
                prop_assert_eq!(out.is_some(), model.release(now, id), "release {} at {}", id, now);
                if let Some(r) = out {
                    set.release(&name, &r);
                    prop_assert_eq!(model.live(now).len() + 1, live_before.len(), "a release frees one slot");
                    prop_assert_eq!(r.expires_at, model.live(now).iter().map(|&(_, e)| e).max());
                }
            }
            // The stored set and the model agree on what is live.
            let mut stored: Vec<(u8, Millis)> = set.0.iter().filter(|&(_, e)| *e > now).map(|(m, e)| (m[0] - b'a', *e)).collect();
            let mut live = model.live(now);
            stored.sort_unstable();
            live.sort_unstable();
            prop_assert_eq!(stored, live);
        }
    }
}

//! The arithmetic of one call: where the budget and the tenant stand, what a call
//! of `n` units may take, how long it must wait, and the reply.

use super::params::NS_PER_MS;
use super::records::Global;
use super::Share;
use crate::algorithms::{cap, Decision, RetryAfter, MAX_COUNT};

/// The arithmetic of one call, all in ns: the budget's debt `g`, the tenant's `d`,
/// and what its share makes of T.
#[derive(Debug, Clone, Copy)]
pub(super) struct Standing {
    /// The budget's debt: max(TAT, now) − now.
    pub(super) g: u128,
    /// The tenant's debt (0 for a tenant not remembered).
    pub(super) d: u128,
    /// W with this tenant at this call's weight.
    pub(super) total: u64,
    /// T_i = floor(T · W / w): the debt one unit adds to the tenant's own.
    pub(super) own_interval: u128,
}

/// `a · b ≤ c`, exactly (a product past u128 is larger than any c).
fn product_le(a: u128, b: u128, c: u128) -> bool {
    a.checked_mul(b).is_some_and(|p| p <= c)
}

impl Standing {
    pub(super) fn new(g: u128, d: u128, total: u64, p: &Share) -> Self {
        let w = u128::from(p.weight.get());
        // T ≤ 10 years in ns and W < 2^54: the product fits.
        let own_interval = (p.interval * u128::from(total.max(1)) / w).max(1);
        Standing {
            g,
            d,
            total,
            own_interval,
        }
    }

    /// Within the budget: g + n·T ≤ D (and n ≤ capacity).
    fn budget_allows(&self, p: &Share, n: u64) -> bool {
        n <= p.capacity && self.g.saturating_add(u128::from(n) * p.interval) <= p.tolerance()
    }

    /// Within the tenant's share: no debt, or d + n·T_i ≤ D.
    fn share_allows(&self, p: &Share, n: u64) -> bool {
        self.d == 0
            || self
                .d
                .saturating_add(u128::from(n).saturating_mul(self.own_interval))
                <= p.tolerance()
    }

    /// From the surplus: W · g ≤ w · (D − n·T), n ≤ capacity.
    fn surplus_allows(&self, p: &Share, n: u64) -> bool {
        let Some(left) = p.tolerance().checked_sub(u128::from(n) * p.interval) else {
            return false;
        };
        product_le(
            u128::from(self.total),
            self.g,
            u128::from(p.weight.get()) * left,
        )
    }

    /// How a call of `n` passes: within the share, from the surplus, or not.
    pub(super) fn admits(&self, p: &Share, n: u64) -> Admission {
        if !self.budget_allows(p, n) {
            Admission::No
        } else if self.share_allows(p, n) {
            Admission::Share
        } else if self.surplus_allows(p, n) {
            Admission::Surplus
        } else {
            Admission::No
        }
    }

    /// The most units a call could take now.
    fn remaining(&self, p: &Share) -> u64 {
        let (t, dd, c) = (p.interval, p.tolerance(), p.capacity);
        let budget = dd.saturating_sub(self.g) / t;
        let own = if self.d == 0 {
            u128::from(c)
        } else {
            dd.saturating_sub(self.d) / self.own_interval
        };
        let w = u128::from(p.weight.get());
        let surplus = match u128::from(self.total).checked_mul(self.g) {
            Some(used) if used <= w * dd => (w * dd - used) / (w * t),
            _ => 0,
        };
        let m = budget.min(own.max(surplus)).min(u128::from(c));
        // At most capacity, which is a u64.
        m as u64
    }

    /// The wait in ns until a call of `n` (≤ capacity) passes if nothing else
    /// happens: the budget's debt and the tenant's drain as time passes.
    fn wait(&self, p: &Share, n: u64) -> u128 {
        let (t, dd) = (p.interval, p.tolerance());
        let nt = u128::from(n) * t;
        let budget = self.g.saturating_add(nt).saturating_sub(dd);
        let share = self.d.min(
            self.d
                .saturating_add(u128::from(n).saturating_mul(self.own_interval))
                .saturating_sub(dd),
        );
        // n ≤ capacity: D − n·T ≥ 0.
        let room = u128::from(p.weight.get()) * dd.saturating_sub(nt) / u128::from(self.total);
        let surplus = self.g.saturating_sub(room);
        budget.max(share.min(surplus))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Admission {
    No,
    Share,
    Surplus,
}

/// The reply for a tenant standing at `s`, for a call of `n` (0: COST 0): allowed
/// or the wait, remaining, and reset_after from the budget's debt and, while any
/// tenant is remembered, the end of the current slot plus a period.
pub(super) fn report(s: &Standing, p: &Share, g: &Global, now: u64, n: u64) -> Decision {
    let allowed = s.admits(p, n) != Admission::No;
    let retry_after = if allowed {
        RetryAfter::Now
    } else if n > p.capacity {
        RetryAfter::Never
    } else {
        RetryAfter::Ms(cap(s.wait(p, n).div_ceil(NS_PER_MS)).max(1))
    };
    Decision {
        allowed,
        limit: p.capacity,
        remaining: s.remaining(p),
        retry_after,
        reset_after_ms: reset_after(s.g, g, p, now),
    }
}

fn reset_after(debt: u128, g: &Global, p: &Share, now: u64) -> u64 {
    let now_ns = u128::from(now) * NS_PER_MS;
    let budget = cap(debt.div_ceil(NS_PER_MS));
    let owed = cap(g.debt_end.saturating_sub(now_ns).div_ceil(NS_PER_MS));
    let tenants = if g.tenants > 0 {
        g.end.saturating_add(p.period_ms).saturating_sub(now)
    } else {
        0
    };
    budget.max(owed).max(tenants).min(MAX_COUNT)
}

//! One call on a budget: forget what a period has passed, decide, register the
//! tenant, sweep.

use super::params::NS_PER_MS;
use super::records::{Budget, Global, Member, Slot, SLOTS};
use super::standing::{report, Admission, Standing};
use super::Share;
use crate::algorithms::{
    at_plus, debited, refunded, Amount, Change, Decision, Millis, Outcome, RetryAfter, MAX_COUNT,
};
use crate::error::{Error, Result};

/// Index entries a write examines, at most, to remove forgotten tenants' fields.
pub const SWEEP_STEPS: u32 = 2;

/// The error for content RL did not write.
fn not_a_budget<B: Budget>() -> Error {
    Error::NotALimiter(B::WHAT)
}

/// When a budget's key expires, after a write at `now` whose reply's reset_after
/// is `reset_after`: at the end of the slot (a multiple of ceil(period / SLOTS) ms)
/// in which the budget is back at its initial state. Tenants are forgotten slot by
/// slot, and a budget's TAT moves on with every call: rounded up to a slot, the
/// expiry stays the same for the calls of a slot, which then set no new one.
pub fn key_expiry(p: &Share, now: u64, reset_after: u64) -> Millis {
    let s = p.slot_ms();
    // Both at most 2^53 − 1: far inside a u64, and the rounded sum inside a Millis.
    let back = now.saturating_add(reset_after);
    at_plus(0, back.div_ceil(s).saturating_mul(s))
}

/// The server time as the budget reads it: ms clamped to 0 ..= 2^53 − 1 (every
/// real clock is far inside), and in ns.
fn clock(now: Millis) -> (u64, u128) {
    let ms = now.clamp(0, MAX_COUNT as Millis) as u64;
    (ms, u128::from(ms) * NS_PER_MS)
}

/// Forgets, in the global record, the slots that ended at least a period ago, and
/// deletes their fields: the closed ones oldest first, then the current one (whose
/// number is then bumped, so no record points at it). Reads at most SLOTS fields.
fn forget<B: Budget>(t: &mut B, g: &mut Global, period: u64, now: u64) -> Result<()> {
    while g.closed > 0 && g.oldest_end.saturating_add(period) <= now {
        let seq = g.seq.checked_sub(g.closed).ok_or_else(not_a_budget::<B>)?;
        let slot = t.slot(seq)?;
        g.weight = g.weight.saturating_sub(slot.weight);
        g.tenants = g.tenants.saturating_sub(slot.tenants);
        t.del_slot(seq);
        g.closed -= 1;
        g.oldest_end = if g.closed > 0 {
            t.slot(seq + 1)?.end
        } else {
            0
        };
    }
    if g.slot_tenants > 0 && g.end.saturating_add(period) <= now {
        g.weight = g.weight.saturating_sub(g.slot_weight);
        g.tenants = g.tenants.saturating_sub(g.slot_tenants);
        g.slot_weight = 0;
        g.slot_tenants = 0;
        g.seq = (g.seq + 1).min(MAX_COUNT);
    }
    Ok(())
}

/// One call on budget `t`: take `COST n` (0 inspects), give back (`REFUND n`) or
/// charge (`DEBIT n`), for the call's tenant. Err: content RL did not write (the
/// "does not hold" error), or a tenant the budget does not remember when it already
/// remembers `max_tenants` (for a call that would add it: a COST above 0 or a
/// DEBIT).
pub fn decide<B: Budget>(
    mut t: B,
    now: Millis,
    p: &Share,
    amount: Amount,
) -> Result<Outcome<Change<B::Written>>> {
    let (now_ms, now_ns) = clock(now);
    let mut g = t.global().unwrap_or_default();
    forget(&mut t, &mut g, p.period_ms, now_ms)?;
    // The tenant's record, named once for its read and its write.
    let name = B::name(p.tenant.as_bytes());
    let member = t.member(&name)?;
    let live = member.filter(|m| g.remembers(m.seq));
    let w = p.weight.get();
    let total = g
        .weight
        .saturating_sub(live.map_or(0, |m| m.weight))
        .saturating_add(w);
    let debt = |tat: u128| tat.max(now_ns) - now_ns;
    // A forgotten tenant's share no longer counts, but what it owes it still owes.
    let standing = Standing::new(debt(g.tat), member.map_or(0, |m| debt(m.tat)), total, p);
    let joins = match amount {
        Amount::Take(n) => n.get() > 0,
        Amount::Refund(_) => false,
        Amount::Debit(_) => true,
    };
    if joins && live.is_none() && g.tenants >= p.max_tenants {
        return Err(Error::ShareTenants { max: p.max_tenants });
    }
    let joining = Joining {
        name,
        member,
        live: live.is_some(),
        total,
    };
    match amount {
        Amount::Take(n) => {
            let n = n.get();
            let admission = standing.admits(p, n);
            if n == 0 || (admission == Admission::No && live.is_some()) {
                return Ok(Outcome {
                    decision: report(&standing, p, &g, now_ms, n),
                    write: None,
                });
            }
            // Allowed, or a tenant the budget does not remember yet, which joins
            // even when rejected (so its share counts from its first call).
            let charge = u128::from(n) * p.interval;
            let (budget_tat, own_tat) = match admission {
                Admission::Share => (
                    g.tat.max(now_ns) + charge,
                    // A call with no debt passes however large: saturate (a TAT
                    // stops at 2^128 − 1 ns, as a DEBIT's).
                    (now_ns + standing.d)
                        .saturating_add(u128::from(n).saturating_mul(standing.own_interval)),
                ),
                Admission::Surplus | Admission::No => {
                    let budget = if admission == Admission::Surplus {
                        g.tat.max(now_ns) + charge
                    } else {
                        g.tat
                    };
                    (budget, member.map_or(0, |m| m.tat))
                }
            };
            g.tat = budget_tat;
            let (decision, write) = joining.write(t, g, p, now_ms, own_tat, |after, g| {
                if admission == Admission::No {
                    report(after, p, g, now_ms, n)
                } else {
                    Decision {
                        allowed: true,
                        retry_after: RetryAfter::Now,
                        ..report(after, p, g, now_ms, 0)
                    }
                }
            })?;
            Ok(Outcome {
                decision,
                write: Some(write),
            })
        }
        Amount::Debit(n) => {
            let n = u128::from(n.get());
            g.tat = g.tat.max(now_ns).saturating_add(n * p.interval);
            let own_tat =
                (now_ns + standing.d).saturating_add(n.saturating_mul(standing.own_interval));
            let (decision, write) = joining.write(t, g, p, now_ms, own_tat, |after, g| {
                report(after, p, g, now_ms, 0)
            })?;
            Ok(debited(write, decision))
        }
        Amount::Refund(n) => {
            let n = u128::from(n.get());
            let budget_tat = if g.tat > now_ns {
                g.tat.saturating_sub(n * p.interval).max(now_ns)
            } else {
                g.tat
            };
            let own = member.filter(|m| m.tat > now_ns).map(|m| Member {
                tat: m
                    .tat
                    .saturating_sub(n.saturating_mul(standing.own_interval))
                    .max(now_ns),
                ..m
            });
            let own_changed = own.is_some_and(|o| Some(o) != member);
            let after = Standing::new(
                debt(budget_tat),
                own.or(member).map_or(0, |m| debt(m.tat)),
                total,
                p,
            );
            let changed = budget_tat != g.tat || own_changed;
            g.tat = budget_tat;
            let report_after = report(&after, p, &g, now_ms, 0);
            if !changed {
                return Ok(refunded(None, report_after));
            }
            if g.tenants == 0 && g.tat <= now_ns && g.debt_end <= now_ns {
                return Ok(refunded(Some(Change::Delete), report_after));
            }
            if let Some(o) = own.filter(|_| own_changed) {
                t.set_member(joining.name, &o);
            }
            let expires_at = key_expiry(p, now_ms, report_after.reset_after_ms);
            Ok(refunded(
                Some(Change::Set(t.finish(&g, expires_at))),
                report_after,
            ))
        }
    }
}

/// What a write that registers the call's tenant needs to know of it: its field,
/// its record (`live`: still remembered) and W with it at this call's weight.
struct Joining<N> {
    name: N,
    member: Option<Member>,
    live: bool,
    total: u64,
}

impl<N> Joining<N> {
    /// Registers the tenant with its own TAT `own_tat` ([`join`]) and answers:
    /// `reply` of its standing after the write, and the write, with the key's
    /// expiry from that reply.
    fn write<B: Budget<Name = N>>(
        self,
        mut t: B,
        mut g: Global,
        p: &Share,
        now: u64,
        own_tat: u128,
        reply: impl FnOnce(&Standing, &Global) -> Decision,
    ) -> Result<(Decision, Change<B::Written>)> {
        let total = self.total;
        join(&mut t, &mut g, self, p, now, own_tat)?;
        let now_ns = u128::from(now) * NS_PER_MS;
        let debt = |tat: u128| tat.max(now_ns) - now_ns;
        let after = Standing::new(debt(g.tat), debt(own_tat), total, p);
        let decision = reply(&after, &g);
        let expires_at = key_expiry(p, now, decision.reset_after_ms);
        Ok((decision, Change::Set(t.finish(&g, expires_at))))
    }
}

/// A write that registers the call's tenant: opens a new slot if the current one
/// has ended, moves the tenant's weight into it (adding the tenant if it was not
/// remembered), stores its record (its field, `joining.name`) with its own TAT
/// `own_tat`, and sweeps; the caller's [`Budget::finish`] then stores the global
/// record.
fn join<B: Budget>(
    t: &mut B,
    g: &mut Global,
    joining: Joining<B::Name>,
    p: &Share,
    now: u64,
    own_tat: u128,
) -> Result<()> {
    let Joining {
        name, member, live, ..
    } = joining;
    let s = p.slot_ms();
    if now >= g.end {
        let end = (now / s + 1).saturating_mul(s).min(MAX_COUNT);
        if g.slot_tenants > 0 && g.closed < SLOTS {
            let closing = Slot {
                end: g.end,
                weight: g.slot_weight,
                tenants: g.slot_tenants,
            };
            t.set_slot(g.seq, &closing);
            if g.closed == 0 {
                g.oldest_end = g.end;
            }
            g.closed += 1;
            g.seq = (g.seq + 1).min(MAX_COUNT);
            g.slot_weight = 0;
            g.slot_tenants = 0;
        }
        // With every closed slot still remembered (a period made longer), the
        // current slot is extended instead.
        g.end = end;
    }
    let tenant = p.tenant.as_bytes();
    let w = p.weight.get();
    let index = match member {
        Some(m) if live => {
            if m.seq == g.seq {
                g.slot_weight = g.slot_weight.saturating_sub(m.weight);
            } else {
                let mut slot = t.slot(m.seq)?;
                slot.weight = slot.weight.saturating_sub(m.weight);
                slot.tenants = slot.tenants.saturating_sub(1);
                t.set_slot(m.seq, &slot);
                g.slot_tenants = g.slot_tenants.saturating_add(1);
            }
            g.weight = g.weight.saturating_sub(m.weight);
            m.index
        }
        Some(m) => {
            // A forgotten tenant keeps its place in the index.
            if m.index >= g.len || t.indexed(m.index).as_deref() != Some(tenant) {
                return Err(not_a_budget::<B>());
            }
            g.tenants = g.tenants.saturating_add(1);
            g.slot_tenants = g.slot_tenants.saturating_add(1);
            m.index
        }
        None => {
            let index = g.len;
            t.set_index(index, tenant.to_vec());
            g.len = g.len.saturating_add(1);
            g.tenants = g.tenants.saturating_add(1);
            g.slot_tenants = g.slot_tenants.saturating_add(1);
            index
        }
    };
    g.weight = g.weight.saturating_add(w);
    g.slot_weight = g.slot_weight.saturating_add(w);
    g.debt_end = g.debt_end.max(own_tat);
    let record = Member {
        tat: own_tat,
        weight: w,
        seq: g.seq,
        index,
    };
    t.set_member(name, &record);
    sweep(t, g, u128::from(now) * NS_PER_MS, p.max_tenants)
}

/// Removes forgotten tenants' fields: while the index holds more entries than
/// tenants remembered, examines up to SWEEP_STEPS entries from the cursor; a
/// forgotten tenant that owes nothing (its TAT at or before now) is deleted, and
/// the last entry moves into its place. Past twice `max_tenants` entries a
/// forgotten tenant is deleted even in debt, so the hash stays bounded.
fn sweep<B: Budget>(t: &mut B, g: &mut Global, now_ns: u128, max_tenants: u64) -> Result<()> {
    for _ in 0..SWEEP_STEPS {
        if g.len <= g.tenants {
            break;
        }
        if g.cursor >= g.len {
            g.cursor = 0;
        }
        let at = g.cursor;
        let tenant = t.indexed(at).ok_or_else(not_a_budget::<B>)?;
        let name = B::name(&tenant);
        let record = t.member(&name)?.ok_or_else(not_a_budget::<B>)?;
        let crowded = g.len > max_tenants.saturating_mul(2);
        if g.remembers(record.seq) || (record.tat > now_ns && !crowded) {
            g.cursor = at + 1;
            continue;
        }
        t.del_member(name);
        let last = g.len - 1;
        if at != last {
            let moved = t.indexed(last).ok_or_else(not_a_budget::<B>)?;
            let moved_name = B::name(&moved);
            let mut m = t.member(&moved_name)?.ok_or_else(not_a_budget::<B>)?;
            m.index = at;
            t.set_member(moved_name, &m);
            t.set_index(at, moved);
        }
        t.del_index(last);
        g.len = last;
    }
    if g.cursor >= g.len {
        g.cursor = 0;
    }
    Ok(())
}

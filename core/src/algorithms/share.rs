//! One budget shared by weight across tenants (RL.SHARE): docs/commands.md#rlshare.
//!
//! The budget is a GCRA (`capacity` units at once, `tokens` more every `period`)
//! that every admitted unit passes, so the budget is never exceeded. Inside it each
//! remembered tenant has its own GCRA at its weighted share of the rate, `T_i = T · W
//! / w` (W: the weights of the remembered tenants), with the same tolerance in time,
//! `D = capacity · T`: that is its share of the rate and of the burst. A tenant
//! within its share is admitted while the budget has room; a tenant beyond it may
//! still take the **surplus**, what the budget holds beyond the other tenants' shares
//! of the burst (`W · g ≤ w · (D − n·T)`, g the budget's debt), without charge: the
//! idle part of quiet tenants' shares goes to those that want more.
//!
//! A tenant is remembered from its first call (even a rejected one: its share
//! counts at once) until one period after its last write; then its weight leaves W,
//! but what it owes (its own TAT) is kept until repaid. The weights of the
//! remembered tenants are kept in time slots (the current one in the global record,
//! at most [`SLOTS`] closed ones in fields of their own), so forgetting a whole
//! slot is one subtraction; the fields of forgotten tenants that owe nothing are
//! removed by a bounded sweep ([`SWEEP_STEPS`] per write). Every call reads and
//! writes a bounded number of fields, whatever the number of tenants.
//!
//! The state is one hash: the global record, one record per tenant, the closed
//! slots and the tenant index (see [`Global`], [`Member`], [`Slot`] and the field
//! names below). A call reads fields through [`Fields`] and writes a [`Changes`]:
//! the fields set and deleted, and the key's absolute expiry.

use std::collections::BTreeMap;

use super::{
    at_plus, cap, debited, refunded, Amount, Change, Cost, Count, Decision, Millis, Outcome, Rate,
    RetryAfter, MAX_COUNT,
};
use crate::codec;
use crate::error::{Error, Result};

/// Nanoseconds per millisecond.
const NS_PER_MS: u128 = 1_000_000;

/// Highest weight.
pub const MAX_WEIGHT: u64 = 10_000;

/// Longest tenant name, in bytes.
pub const MAX_TENANT_LEN: usize = 256;

/// Time slots per period: a tenant is forgotten between one period and one period
/// plus `ceil(period / SLOTS)` after its last write. Also the number of closed slots
/// the hash holds at most.
pub const SLOTS: u64 = 8;

/// Index entries a write examines, at most, to remove forgotten tenants' fields.
pub const SWEEP_STEPS: u32 = 2;

/// `rl.share-max-tenants`' default: the most tenants a budget remembers at once.
pub const DEFAULT_MAX_TENANTS: u64 = 10_000;

/// What the "does not hold" error names.
pub const WHAT: &str =
    "an RL.SHARE budget (a hash of the fields g, t:<tenant>, s:<n> and i:<n> that RL.SHARE writes)";

/// The global record's field.
pub const GLOBAL_FIELD: &[u8] = b"g";

/// A tenant record's field: `t:` and the tenant's name.
pub fn tenant_field(tenant: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(2 + tenant.len());
    f.extend_from_slice(b"t:");
    f.extend_from_slice(tenant);
    f
}

/// A closed slot's field: `s:` and its position, `seq mod SLOTS`.
pub fn slot_field(seq: u64) -> Vec<u8> {
    numbered(b"s:", seq % SLOTS)
}

/// An index entry's field: `i:` and its position; its value is a tenant's name.
pub fn index_field(position: u64) -> Vec<u8> {
    numbered(b"i:", position)
}

fn numbered(prefix: &[u8], n: u64) -> Vec<u8> {
    let mut f = Vec::with_capacity(prefix.len() + 20);
    f.extend_from_slice(prefix);
    f.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    f
}

/// A tenant's name: 1 ..= 256 bytes, binary-safe. Kept inline so that [`Share`]
/// is `Copy`, as every algorithm's parameters are.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Tenant {
    len: u16,
    bytes: [u8; MAX_TENANT_LEN],
}

impl Tenant {
    pub fn new(name: &[u8]) -> Option<Self> {
        if !(1..=MAX_TENANT_LEN).contains(&name.len()) {
            return None;
        }
        let mut bytes = [0; MAX_TENANT_LEN];
        bytes[..name.len()].copy_from_slice(name);
        Some(Tenant {
            len: name.len() as u16,
            bytes,
        })
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

impl std::fmt::Debug for Tenant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tenant({})", self.as_bytes().escape_ascii())
    }
}

/// A tenant's weight: 1 ..= 10,000.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Weight(u64);

impl Weight {
    pub const fn new(w: u64) -> Option<Self> {
        if w >= 1 && w <= MAX_WEIGHT {
            Some(Weight(w))
        } else {
            None
        }
    }

    pub const fn get(self) -> u64 {
        self.0
    }
}

/// One call's parameters: the tenant and its weight, the budget (`capacity` units at
/// once, `tokens` more every `period`, as an emission interval of at least 1 ns) and
/// how many tenants the budget may remember (`rl.share-max-tenants`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    tenant: Tenant,
    weight: Weight,
    capacity: u64,
    /// T, the budget's emission interval in ns: floor(period_ns / tokens) ≥ 1.
    interval: u128,
    period_ms: u64,
    max_tenants: u64,
}

impl Share {
    /// None when `tokens` per `period` is more than one per nanosecond.
    pub fn new(tenant: Tenant, weight: Weight, rate: Rate, max_tenants: u64) -> Option<Self> {
        let period_ns = u128::from(rate.period.ms()) * NS_PER_MS;
        let interval = period_ns / u128::from(rate.tokens.get());
        (interval >= 1).then_some(Share {
            tenant,
            weight,
            capacity: rate.capacity.get(),
            interval,
            period_ms: rate.period.ms(),
            max_tenants,
        })
    }

    pub fn tenant(&self) -> &Tenant {
        &self.tenant
    }

    pub fn weight(&self) -> Weight {
        self.weight
    }

    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    pub fn period_ms(&self) -> u64 {
        self.period_ms
    }

    /// The same call for another tenant (the simulations' and tests' shorthand).
    pub fn for_tenant(self, tenant: Tenant, weight: Weight) -> Self {
        Share {
            tenant,
            weight,
            ..self
        }
    }

    /// D = capacity · T: the budget's tolerance, and each tenant's, in ns.
    fn tolerance(&self) -> u128 {
        u128::from(self.capacity) * self.interval
    }

    /// A slot's length in ms: ceil(period / SLOTS), at least 1.
    fn slot_ms(&self) -> u64 {
        self.period_ms.div_ceil(SLOTS).max(1)
    }
}

/// The global record, field `g`: twelve canonical decimals, one space apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Global {
    /// The budget's TAT in ns since the epoch (0: never used).
    pub tat: u128,
    /// The latest TAT any tenant record was written with (ns): no tenant owes
    /// anything after it.
    pub debt_end: u128,
    /// W: the weights of the remembered tenants.
    pub weight: u64,
    /// N: how many tenants are remembered.
    pub tenants: u64,
    /// Entries in the index (`i:0` … `i:<len − 1>`): remembered tenants and
    /// forgotten ones whose fields the sweep has not removed yet.
    pub len: u64,
    /// Where the sweep looks next.
    pub cursor: u64,
    /// The current slot's number (closed slots are `seq − closed` … `seq − 1`).
    pub seq: u64,
    /// When the current slot ends (server ms).
    pub end: u64,
    /// Weights and count of the tenants whose last write is in the current slot.
    pub slot_weight: u64,
    pub slot_tenants: u64,
    /// How many closed slots are kept (0 ..= SLOTS).
    pub closed: u64,
    /// The end of the oldest closed slot (0 when none).
    pub oldest_end: u64,
}

impl Global {
    pub fn parse(bytes: &[u8]) -> Option<Global> {
        let f = codec::fields::<12>(bytes)?;
        let small = |v: u128| u64::try_from(v).ok().filter(|&v| v <= MAX_COUNT);
        Some(Global {
            tat: f[0],
            debt_end: f[1],
            weight: small(f[2])?,
            tenants: small(f[3])?,
            len: small(f[4])?,
            cursor: small(f[5])?,
            seq: small(f[6])?,
            end: small(f[7])?,
            slot_weight: small(f[8])?,
            slot_tenants: small(f[9])?,
            closed: small(f[10])?,
            oldest_end: small(f[11])?,
        })
    }

    /// The record as stored; counts and times are clamped to 2^53 − 1, which only
    /// a clock far outside any real server's could reach, so it always reads back.
    pub fn format(&self) -> Vec<u8> {
        // Two TATs of up to 39 digits and ten numbers of up to 16, spaced: one
        // allocation for any record.
        let mut out = Vec::with_capacity(2 * 40 + 10 * 17);
        push_tat(&mut out, self.tat);
        out.push(b' ');
        push_tat(&mut out, self.debt_end);
        for v in [
            self.weight,
            self.tenants,
            self.len,
            self.cursor,
            self.seq,
            self.end,
            self.slot_weight,
            self.slot_tenants,
            self.closed,
            self.oldest_end,
        ] {
            push_small(&mut out, v);
        }
        out
    }

    /// [`Global::format`], reusing the text of the record as stored (`old`, read
    /// from `text`) past its two TATs when the ten numbers after them are
    /// unchanged: a call in steady use moves only the TATs. The same bytes either
    /// way: a stored record reads only if canonical and every number in it is at
    /// most 2^53 − 1, so it formats back to itself.
    pub fn format_over(&self, old: &Global, text: &[u8]) -> Vec<u8> {
        let same_tail = Global {
            tat: self.tat,
            debt_end: self.debt_end,
            ..*old
        } == *self;
        // The text past the second space: the ten numbers after the TATs.
        let tail = text
            .iter()
            .enumerate()
            .filter(|(_, &b)| b == b' ')
            .nth(1)
            .map(|(i, _)| &text[i..]);
        match tail {
            Some(tail) if same_tail => {
                let mut out = Vec::with_capacity(2 * 40 + tail.len());
                push_tat(&mut out, self.tat);
                out.push(b' ');
                push_tat(&mut out, self.debt_end);
                out.extend_from_slice(tail);
                out
            }
            _ => self.format(),
        }
    }

    /// Whether a tenant last written in slot `seq` is remembered.
    pub fn remembers(&self, seq: u64) -> bool {
        seq == self.seq || (seq < self.seq && self.seq - seq <= self.closed)
    }
}

/// Appends a TAT: through u64's shorter path while it fits (every TAT before the
/// year 2554 does).
fn push_tat(out: &mut Vec<u8>, v: u128) {
    let mut digits = itoa::Buffer::new();
    out.extend_from_slice(
        match u64::try_from(v) {
            Ok(v) => digits.format(v),
            Err(_) => digits.format(v),
        }
        .as_bytes(),
    );
}

fn push_small(out: &mut Vec<u8>, v: u64) {
    out.push(b' ');
    out.extend_from_slice(itoa::Buffer::new().format(v.min(MAX_COUNT)).as_bytes());
}

/// A tenant record, field `t:<tenant>`: `"<tat> <weight> <seq> <index>"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member {
    /// The tenant's own TAT in ns (0: no debt).
    pub tat: u128,
    /// The weight its last write carried (what the slot sums hold for it).
    pub weight: u64,
    /// The slot of its last write.
    pub seq: u64,
    /// Its entry in the index.
    pub index: u64,
}

impl Member {
    pub fn parse(bytes: &[u8]) -> Option<Member> {
        let f = codec::fields::<4>(bytes)?;
        let small = |v: u128| u64::try_from(v).ok().filter(|&v| v <= MAX_COUNT);
        Some(Member {
            tat: f[0],
            weight: small(f[1])?,
            seq: small(f[2])?,
            index: small(f[3])?,
        })
    }

    pub fn format(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(40 + 3 * 17);
        push_tat(&mut out, self.tat);
        for v in [self.weight, self.seq, self.index] {
            push_small(&mut out, v);
        }
        out
    }
}

/// A closed slot, field `s:<seq mod SLOTS>`: `"<end> <weight> <tenants>"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub end: u64,
    pub weight: u64,
    pub tenants: u64,
}

impl Slot {
    pub fn parse(bytes: &[u8]) -> Option<Slot> {
        let f = codec::fields::<3>(bytes)?;
        let small = |v: u128| u64::try_from(v).ok().filter(|&v| v <= MAX_COUNT);
        Some(Slot {
            end: small(f[0])?,
            weight: small(f[1])?,
            tenants: small(f[2])?,
        })
    }

    pub fn format(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(3 * 17);
        out.extend_from_slice(
            itoa::Buffer::new()
                .format(self.end.min(MAX_COUNT))
                .as_bytes(),
        );
        push_small(&mut out, self.weight);
        push_small(&mut out, self.tenants);
        out
    }
}

/// Read access to the budget's hash, one field at a time (None: no such field, or
/// no key). The module implements it over the key's hash (its values are the
/// server's strings, read in place), the tests over a map.
pub trait Fields {
    type Value: AsRef<[u8]>;
    fn field(&self, name: &[u8]) -> Option<Self::Value>;
}

impl<F: Fields> Fields for &F {
    type Value = F::Value;
    fn field(&self, name: &[u8]) -> Option<F::Value> {
        (**self).field(name)
    }
}

/// What a write does to the hash, in this order: `HSET key f v …` (the fields
/// [`Changes::set`] lists: those the call wrote, in the order it first did, then the
/// global record, which every write sets), `HDEL key f …` ([`Changes::deleted`]),
/// and the key's absolute expiry, `expires_at`. No field is both set and deleted.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Changes {
    /// Every field but `g` the call wrote, in the order it first did: a value, or
    /// None for a deletion.
    pub fields: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    /// The global record's new value.
    pub global: Vec<u8>,
    /// When the key expires: the end of the slot in which the budget is back at its
    /// initial state (see [`key_expiry`]).
    pub expires_at: Millis,
}

impl Changes {
    /// The fields set, with their values: `g` last.
    pub fn set(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.fields
            .iter()
            .filter_map(|(f, v)| Some((f.as_slice(), v.as_deref()?)))
            .chain(std::iter::once((GLOBAL_FIELD, self.global.as_slice())))
    }

    /// The fields deleted.
    pub fn deleted(&self) -> impl Iterator<Item = &[u8]> {
        self.fields
            .iter()
            .filter(|(_, v)| v.is_none())
            .map(|(f, _)| f.as_slice())
    }
}

/// What a call writes: the changes, or `Delete` for a budget back at its initial
/// state (a refund that gave everything back with no tenant remembered).
pub type Write = Change<Changes>;

/// The fields a call reads, and the changes it makes on top of them.
struct Txn<'f, F: Fields> {
    fields: &'f F,
    /// Every field but `g` the call wrote, in the order it first did: a value, or
    /// None for a deletion.
    touched: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    /// The global record as stored, read and as text, for [`Global::format_over`].
    stored: Option<(Global, F::Value)>,
}

impl<'f, F: Fields> Txn<'f, F> {
    /// Reads a field as this call left it, in place.
    fn read<R>(&self, name: &[u8], f: impl FnOnce(Option<&[u8]>) -> R) -> R {
        match self.touched.iter().find(|(n, _)| n == name) {
            Some((_, v)) => f(v.as_deref()),
            None => f(self.fields.field(name).as_ref().map(AsRef::as_ref)),
        }
    }

    fn get(&self, name: &[u8]) -> Option<Vec<u8>> {
        self.read(name, |v| v.map(<[u8]>::to_vec))
    }

    fn put(&mut self, name: Vec<u8>, value: Option<Vec<u8>>) {
        match self.touched.iter_mut().find(|(n, _)| *n == name) {
            Some((_, v)) => *v = value,
            None => self.touched.push((name, value)),
        }
    }

    fn set(&mut self, name: Vec<u8>, value: Vec<u8>) {
        self.put(name, Some(value));
    }

    fn del(&mut self, name: Vec<u8>) {
        self.put(name, None);
    }

    /// The record in field `name` (a tenant's field, `t:<tenant>`).
    fn member(&self, name: &[u8]) -> Result<Option<Member>> {
        self.read(name, |v| {
            v.map(|v| Member::parse(v).ok_or_else(not_a_budget))
                .transpose()
        })
    }

    fn slot(&self, seq: u64) -> Result<Slot> {
        self.read(&slot_field(seq), |v| v.and_then(Slot::parse))
            .ok_or_else(not_a_budget)
    }

    fn changes(self, global: &Global, expires_at: Millis) -> Changes {
        let global = match &self.stored {
            Some((old, text)) => global.format_over(old, text.as_ref()),
            None => global.format(),
        };
        Changes {
            fields: self.touched,
            global,
            expires_at,
        }
    }
}

/// The error for content RL did not write.
fn not_a_budget() -> Error {
    Error::NotALimiter(WHAT)
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
fn forget<F: Fields>(t: &mut Txn<F>, g: &mut Global, period: u64, now: u64) -> Result<()> {
    while g.closed > 0 && g.oldest_end.saturating_add(period) <= now {
        let seq = g.seq.checked_sub(g.closed).ok_or_else(not_a_budget)?;
        let slot = t.slot(seq)?;
        g.weight = g.weight.saturating_sub(slot.weight);
        g.tenants = g.tenants.saturating_sub(slot.tenants);
        t.del(slot_field(seq));
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

/// The arithmetic of one call, all in ns: the budget's debt `g`, the tenant's `d`,
/// and what its share makes of T.
#[derive(Debug, Clone, Copy)]
struct Standing {
    /// The budget's debt: max(TAT, now) − now.
    g: u128,
    /// The tenant's debt (0 for a tenant not remembered).
    d: u128,
    /// W with this tenant at this call's weight.
    total: u64,
    /// T_i = floor(T · W / w): the debt one unit adds to the tenant's own.
    own_interval: u128,
}

/// `a · b ≤ c`, exactly (a product past u128 is larger than any c).
fn product_le(a: u128, b: u128, c: u128) -> bool {
    a.checked_mul(b).is_some_and(|p| p <= c)
}

impl Standing {
    fn new(g: u128, d: u128, total: u64, p: &Share) -> Self {
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
    fn admits(&self, p: &Share, n: u64) -> Admission {
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
enum Admission {
    No,
    Share,
    Surplus,
}

/// The reply for a tenant standing at `s`, for a call of `n` (0: COST 0): allowed
/// or the wait, remaining, and reset_after from the budget's debt and, while any
/// tenant is remembered, the end of the current slot plus a period.
fn report(s: &Standing, p: &Share, g: &Global, now: u64, n: u64) -> Decision {
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

/// One call: take `COST n` (0 inspects), give back (`REFUND n`) or charge (`DEBIT
/// n`), for the call's tenant. Err: content RL did not write (the "does not hold"
/// error), or a tenant the budget does not remember when it already remembers
/// `max_tenants` (for a call that would add it: a COST above 0 or a DEBIT).
pub fn call<F: Fields>(
    fields: &F,
    now: Millis,
    p: &Share,
    amount: Amount,
) -> Result<Outcome<Write>> {
    let (now_ms, now_ns) = clock(now);
    let stored = match fields.field(GLOBAL_FIELD) {
        Some(text) => Some((Global::parse(text.as_ref()).ok_or_else(not_a_budget)?, text)),
        None => None,
    };
    let mut g = stored.as_ref().map(|(g, _)| *g).unwrap_or_default();
    let mut t = Txn {
        fields,
        // Two in steady use, four when a tenant joins or a slot closes.
        touched: Vec::with_capacity(4),
        stored,
    };
    forget(&mut t, &mut g, p.period_ms, now_ms)?;
    // The tenant's field, named once for its read and its write.
    let name = tenant_field(p.tenant.as_bytes());
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
                t.set(joining.name, o.format());
            }
            let expires_at = key_expiry(p, now_ms, report_after.reset_after_ms);
            Ok(refunded(
                Some(Change::Set(t.changes(&g, expires_at))),
                report_after,
            ))
        }
    }
}

/// What a write that registers the call's tenant needs to know of it: its field,
/// its record (`live`: still remembered) and W with it at this call's weight.
struct Joining {
    name: Vec<u8>,
    member: Option<Member>,
    live: bool,
    total: u64,
}

impl Joining {
    /// Registers the tenant with its own TAT `own_tat` ([`join`]) and answers:
    /// `reply` of its standing after the write, and the write, with the key's
    /// expiry from that reply.
    fn write<F: Fields>(
        self,
        mut t: Txn<F>,
        mut g: Global,
        p: &Share,
        now: u64,
        own_tat: u128,
        reply: impl FnOnce(&Standing, &Global) -> Decision,
    ) -> Result<(Decision, Write)> {
        let total = self.total;
        join(&mut t, &mut g, self, p, now, own_tat)?;
        let now_ns = u128::from(now) * NS_PER_MS;
        let debt = |tat: u128| tat.max(now_ns) - now_ns;
        let after = Standing::new(debt(g.tat), debt(own_tat), total, p);
        let decision = reply(&after, &g);
        let expires_at = key_expiry(p, now, decision.reset_after_ms);
        Ok((decision, Change::Set(t.changes(&g, expires_at))))
    }
}

/// A write that registers the call's tenant: opens a new slot if the current one
/// has ended, moves the tenant's weight into it (adding the tenant if it was not
/// remembered), stores its record (its field, `joining.name`) with its own TAT
/// `own_tat`, and sweeps; the caller's [`Txn::changes`] then stores the global
/// record.
fn join<F: Fields>(
    t: &mut Txn<F>,
    g: &mut Global,
    joining: Joining,
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
            t.set(slot_field(g.seq), closing.format());
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
                t.set(slot_field(m.seq), slot.format());
                g.slot_tenants = g.slot_tenants.saturating_add(1);
            }
            g.weight = g.weight.saturating_sub(m.weight);
            m.index
        }
        Some(m) => {
            // A forgotten tenant keeps its place in the index.
            if m.index >= g.len || t.get(&index_field(m.index)).as_deref() != Some(tenant) {
                return Err(not_a_budget());
            }
            g.tenants = g.tenants.saturating_add(1);
            g.slot_tenants = g.slot_tenants.saturating_add(1);
            m.index
        }
        None => {
            let index = g.len;
            t.set(index_field(index), tenant.to_vec());
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
    t.set(name, record.format());
    sweep(t, g, u128::from(now) * NS_PER_MS, p.max_tenants)
}

/// Removes forgotten tenants' fields: while the index holds more entries than
/// tenants remembered, examines up to SWEEP_STEPS entries from the cursor; a
/// forgotten tenant that owes nothing (its TAT at or before now) is deleted, and
/// the last entry moves into its place. Past twice `max_tenants` entries a
/// forgotten tenant is deleted even in debt, so the hash stays bounded.
fn sweep<F: Fields>(t: &mut Txn<F>, g: &mut Global, now_ns: u128, max_tenants: u64) -> Result<()> {
    for _ in 0..SWEEP_STEPS {
        if g.len <= g.tenants {
            break;
        }
        if g.cursor >= g.len {
            g.cursor = 0;
        }
        let at = g.cursor;
        let name = t.get(&index_field(at)).ok_or_else(not_a_budget)?;
        let record = t.member(&tenant_field(&name))?.ok_or_else(not_a_budget)?;
        let crowded = g.len > max_tenants.saturating_mul(2);
        if g.remembers(record.seq) || (record.tat > now_ns && !crowded) {
            g.cursor = at + 1;
            continue;
        }
        t.del(tenant_field(&name));
        let last = g.len - 1;
        if at != last {
            let moved = t.get(&index_field(last)).ok_or_else(not_a_budget)?;
            let mut m = t.member(&tenant_field(&moved))?.ok_or_else(not_a_budget)?;
            m.index = at;
            t.set(tenant_field(&moved), m.format());
            t.set(index_field(at), moved);
        }
        t.del(index_field(last));
        g.len = last;
    }
    if g.cursor >= g.len {
        g.cursor = 0;
    }
    Ok(())
}

/// RL.SHARE's algorithm, with the three amounts as functions. It does not implement
/// [`super::Algorithm`], whose calls cannot fail: a budget's fields are read one
/// at a time (so content RL did not write is found while deciding), and a new
/// tenant beyond `rl.share-max-tenants` is an error, not a decision.
pub struct FairShare;

impl FairShare {
    pub fn take<F: Fields>(f: &F, now: Millis, p: &Share, n: Cost) -> Result<Outcome<Write>> {
        call(f, now, p, Amount::Take(n))
    }

    pub fn refund<F: Fields>(f: &F, now: Millis, p: &Share, n: Cost) -> Result<Outcome<Write>> {
        call(f, now, p, Amount::Refund(n))
    }

    pub fn debit<F: Fields>(f: &F, now: Millis, p: &Share, n: Count) -> Result<Outcome<Write>> {
        call(f, now, p, Amount::Debit(n))
    }
}

/// A budget in a map, with its expiry: what the tests and simulations decide
/// against.
#[doc(hidden)]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MapBudget {
    pub fields: BTreeMap<Vec<u8>, Vec<u8>>,
    pub expires_at: Option<Millis>,
}

#[doc(hidden)]
impl MapBudget {
    /// The key as Redis shows it at `now`: gone once `now` is past its expiry.
    pub fn at(&mut self, now: Millis) -> &Self {
        if self.expires_at.is_some_and(|e| now > e) {
            *self = MapBudget::default();
        }
        self
    }

    /// Applies a write (HSET, HDEL, PEXPIREAT, or DEL).
    pub fn apply(&mut self, write: &Write) {
        match write {
            Change::Delete => *self = MapBudget::default(),
            Change::Set(c) => {
                for (f, v) in c.set() {
                    self.fields.insert(f.to_vec(), v.to_vec());
                }
                for f in c.deleted() {
                    self.fields.remove(f);
                }
                self.expires_at = Some(c.expires_at);
            }
        }
    }

    /// Decides one call at `now` and applies its write.
    pub fn call(&mut self, now: Millis, p: &Share, amount: Amount) -> Result<Decision> {
        self.at(now);
        let out = call(&*self, now, p, amount)?;
        if let Some(w) = &out.write {
            self.apply(w);
        }
        Ok(out.decision)
    }

    pub fn global(&self) -> Option<Global> {
        self.fields.get(GLOBAL_FIELD).and_then(|v| Global::parse(v))
    }

    pub fn member(&self, tenant: &[u8]) -> Option<Member> {
        self.fields
            .get(&tenant_field(tenant))
            .and_then(|v| Member::parse(v))
    }
}

impl Fields for MapBudget {
    type Value = Vec<u8>;
    fn field(&self, name: &[u8]) -> Option<Vec<u8>> {
        self.fields.get(name).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn global_of(n: [u64; 10], tat: u128, debt_end: u128) -> Global {
        Global {
            tat,
            debt_end,
            weight: n[0],
            tenants: n[1],
            len: n[2],
            cursor: n[3],
            seq: n[4],
            end: n[5],
            slot_weight: n[6],
            slot_tenants: n[7],
            closed: n[8],
            oldest_end: n[9],
        }
    }

    proptest::proptest! {
        /// Reusing the stored text gives the bytes a fresh format gives, whether
        /// only the TATs moved or anything did.
        #[test]
        fn formatting_over_the_stored_record_is_formatting_afresh(
            old in proptest::array::uniform10(0..=MAX_COUNT),
            new in proptest::array::uniform10(0..=MAX_COUNT),
            tats in proptest::array::uniform4(proptest::num::u128::ANY),
            keep_tail: bool,
        ) {
            let before = global_of(old, tats[0], tats[1]);
            let text = before.format();
            proptest::prop_assert_eq!(Global::parse(&text), Some(before));
            let after = global_of(if keep_tail { old } else { new }, tats[2], tats[3]);
            proptest::prop_assert_eq!(after.format_over(&before, &text), after.format());
        }
    }
    use crate::algorithms::{Interval, MAX_DURATION_MS};

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
        crate::algorithms::check_fields(&d.fields()).unwrap();
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
                        crate::algorithms::check_fields(&f).unwrap();
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
}

//! RL.SHARE's budget in its hash: the fields' names and the records' text (the
//! global record `g`, a record `t:<tenant>` per tenant, closed slots `s:<n>` and the
//! tenant index `i:<n>`), and a call's reads and writes over them ([`call`]).

use crate::algorithms::share::{Global, Member, Slot, SLOTS};
use crate::algorithms::MAX_COUNT;

#[cfg(any(test, feature = "model"))]
mod map;
mod txn;

#[cfg(any(test, feature = "model"))]
pub use map::MapBudget;
pub use txn::{call, Changes, Fields, Write};

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

/// The global record, field `g`: twelve canonical decimals, one space apart.
impl Global {
    pub fn parse(bytes: &[u8]) -> Option<Global> {
        let f = super::fields::<12>(bytes)?;
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

/// A count or time read from a record: at most 2^53 − 1.
fn small(v: u128) -> Option<u64> {
    u64::try_from(v).ok().filter(|&v| v <= MAX_COUNT)
}

fn push_small(out: &mut Vec<u8>, v: u64) {
    out.push(b' ');
    out.extend_from_slice(itoa::Buffer::new().format(v.min(MAX_COUNT)).as_bytes());
}

/// A tenant record, field `t:<tenant>`: `"<tat> <weight> <seq> <index>"`.
impl Member {
    pub fn parse(bytes: &[u8]) -> Option<Member> {
        let f = super::fields::<4>(bytes)?;
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
impl Slot {
    pub fn parse(bytes: &[u8]) -> Option<Slot> {
        let f = super::fields::<3>(bytes)?;
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
}

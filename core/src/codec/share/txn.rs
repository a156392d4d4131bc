//! A call's reads and writes over a budget's hash: the fields it reads one at a
//! time, and the changes it makes, kept until it ends as one write.

use super::{index_field, slot_field, tenant_field, GLOBAL_FIELD, WHAT};
use crate::algorithms::share::{self, Budget, Global, Member, Share, Slot};
use crate::algorithms::{Amount, Change, Millis, Outcome};
use crate::error::{Error, Result};

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

/// The fields a call reads, and the changes it makes on top of them: the budget
/// the algorithm works on, over any [`Fields`].
struct Txn<'f, F: Fields> {
    fields: &'f F,
    /// Every field but `g` the call wrote, in the order it first did: a value, or
    /// None for a deletion.
    touched: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    /// The global record as stored, read and as text, for [`Global::format_over`].
    stored: Option<(Global, F::Value)>,
}

impl<'f, F: Fields> Txn<'f, F> {
    /// The budget in `fields`; Err when its global record is not one RL wrote.
    fn open(fields: &'f F) -> Result<Self> {
        let stored = match fields.field(GLOBAL_FIELD) {
            Some(text) => Some((Global::parse(text.as_ref()).ok_or_else(not_a_budget)?, text)),
            None => None,
        };
        Ok(Txn {
            fields,
            // Two in steady use, four when a tenant joins or a slot closes.
            touched: Vec::with_capacity(4),
            stored,
        })
    }

    /// Reads a field as this call left it, in place.
    fn read<R>(&self, name: &[u8], f: impl FnOnce(Option<&[u8]>) -> R) -> R {
        match self.touched.iter().find(|(n, _)| n == name) {
            Some((_, v)) => f(v.as_deref()),
            None => f(self.fields.field(name).as_ref().map(AsRef::as_ref)),
        }
    }

    fn put(&mut self, name: Vec<u8>, value: Option<Vec<u8>>) {
        match self.touched.iter_mut().find(|(n, _)| *n == name) {
            Some((_, v)) => *v = value,
            None => self.touched.push((name, value)),
        }
    }
}

impl<F: Fields> Budget for Txn<'_, F> {
    const WHAT: &'static str = WHAT;
    /// A tenant record's field, `t:<tenant>`.
    type Name = Vec<u8>;
    type Written = Changes;

    fn name(tenant: &[u8]) -> Vec<u8> {
        tenant_field(tenant)
    }

    fn global(&self) -> Option<Global> {
        self.stored.as_ref().map(|(g, _)| *g)
    }

    fn member(&self, name: &Vec<u8>) -> Result<Option<Member>> {
        self.read(name, |v| {
            v.map(|v| Member::parse(v).ok_or_else(not_a_budget))
                .transpose()
        })
    }

    fn set_member(&mut self, name: Vec<u8>, member: &Member) {
        self.put(name, Some(member.format()));
    }

    fn del_member(&mut self, name: Vec<u8>) {
        self.put(name, None);
    }

    fn slot(&self, seq: u64) -> Result<Slot> {
        self.read(&slot_field(seq), |v| v.and_then(Slot::parse))
            .ok_or_else(not_a_budget)
    }

    fn set_slot(&mut self, seq: u64, slot: &Slot) {
        self.put(slot_field(seq), Some(slot.format()));
    }

    fn del_slot(&mut self, seq: u64) {
        self.put(slot_field(seq), None);
    }

    fn indexed(&self, position: u64) -> Option<Vec<u8>> {
        self.read(&index_field(position), |v| v.map(<[u8]>::to_vec))
    }

    fn set_index(&mut self, position: u64, tenant: Vec<u8>) {
        self.put(index_field(position), Some(tenant));
    }

    fn del_index(&mut self, position: u64) {
        self.put(index_field(position), None);
    }

    fn finish(self, global: &Global, expires_at: Millis) -> Changes {
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

/// One call on the budget in `fields`: take `COST n` (0 inspects), give back
/// (`REFUND n`) or charge (`DEBIT n`), for the call's tenant ([`share::decide`]).
/// Err: content RL did not write (the "does not hold" error), or a new tenant
/// beyond `rl.share-max-tenants`.
pub fn call<F: Fields>(
    fields: &F,
    now: Millis,
    p: &Share,
    amount: Amount,
) -> Result<Outcome<Write>> {
    share::decide(Txn::open(fields)?, now, p, amount)
}

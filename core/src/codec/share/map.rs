//! A budget in a map: the test double the tests and simulations decide against
//! (behind the `model` feature, which the module never enables).

use std::collections::BTreeMap;

use super::{call, tenant_field, Fields, Write, GLOBAL_FIELD};
use crate::algorithms::share::{Global, Member, Share};
use crate::algorithms::{Amount, Change, Decision, Millis};
use crate::error::Result;

/// A budget in a map, with its expiry: what the tests and simulations decide
/// against.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MapBudget {
    pub fields: BTreeMap<Vec<u8>, Vec<u8>>,
    pub expires_at: Option<Millis>,
}

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

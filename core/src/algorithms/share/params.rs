//! A call's parameters: the tenant, its weight and the budget, valid by
//! construction.

use super::SLOTS;
use crate::algorithms::Rate;

/// Nanoseconds per millisecond.
pub(crate) const NS_PER_MS: u128 = 1_000_000;

/// Highest weight.
pub const MAX_WEIGHT: u64 = 10_000;

/// Longest tenant name, in bytes.
pub const MAX_TENANT_LEN: usize = 256;

/// `rl.share-max-tenants`' default: the most tenants a budget remembers at once.
pub const DEFAULT_MAX_TENANTS: u64 = 10_000;

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
    pub(super) tenant: Tenant,
    pub(super) weight: Weight,
    pub(super) capacity: u64,
    /// T, the budget's emission interval in ns: floor(period_ns / tokens) ≥ 1.
    pub(super) interval: u128,
    pub(super) period_ms: u64,
    pub(super) max_tenants: u64,
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
    pub(super) fn tolerance(&self) -> u128 {
        u128::from(self.capacity) * self.interval
    }

    /// A slot's length in ms: ceil(period / SLOTS), at least 1.
    pub(super) fn slot_ms(&self) -> u64 {
        self.period_ms.div_ceil(SLOTS).max(1)
    }
}

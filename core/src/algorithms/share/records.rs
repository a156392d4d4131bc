//! The budget's records, as the algorithm reads and changes them: the global
//! record, one record per tenant and the closed slots (their text is a state
//! format of its own), and [`Budget`], the view of a budget a call works on.

use crate::algorithms::Millis;
use crate::error::Result;

/// Time slots per period: a tenant is forgotten between one period and one period
/// plus `ceil(period / SLOTS)` after its last write. Also the number of closed slots
/// the hash holds at most.
pub const SLOTS: u64 = 8;

/// The global record: the budget's TAT, its tenants and its slots.
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
    /// Whether a tenant last written in slot `seq` is remembered.
    pub fn remembers(&self, seq: u64) -> bool {
        seq == self.seq || (seq < self.seq && self.seq - seq <= self.closed)
    }
}

/// A tenant's record.
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

/// A closed slot: when it ended, and the weights and count of the tenants whose
/// last write is in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub end: u64,
    pub weight: u64,
    pub tenants: u64,
}

/// A budget as one call reads and changes it, record by record: what it reads
/// sees the changes it made before. The state formats implement it over the
/// budget's hash; a call ends with [`Budget::finish`], the write it makes.
pub trait Budget {
    /// What the "does not hold" error says the key should hold.
    const WHAT: &'static str;
    /// Where a tenant's record is: named once for a call's read and its write.
    type Name;
    /// What a call that changes the budget writes.
    type Written;

    /// Where the record of the tenant named `tenant` is.
    fn name(tenant: &[u8]) -> Self::Name;
    /// The global record; None for a budget never written.
    fn global(&self) -> Option<Global>;
    /// A tenant's record; None for a tenant it has none of, Err for content RL did
    /// not write.
    fn member(&self, name: &Self::Name) -> Result<Option<Member>>;
    fn set_member(&mut self, name: Self::Name, member: &Member);
    fn del_member(&mut self, name: Self::Name);
    /// Closed slot `seq`; Err when it is missing or not one RL wrote.
    fn slot(&self, seq: u64) -> Result<Slot>;
    fn set_slot(&mut self, seq: u64, slot: &Slot);
    fn del_slot(&mut self, seq: u64);
    /// The tenant at index entry `position`, None if there is none.
    fn indexed(&self, position: u64) -> Option<Vec<u8>>;
    fn set_index(&mut self, position: u64, tenant: Vec<u8>);
    fn del_index(&mut self, position: u64);
    /// The call's write: every change it made, then the global record `global`,
    /// on a key expiring at `expires_at`.
    fn finish(self, global: &Global, expires_at: Millis) -> Self::Written;
}

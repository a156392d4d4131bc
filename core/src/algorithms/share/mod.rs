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
//!
//! The state is one hash: the global record, one record per tenant, the closed
//! slots and the tenant index ([`Global`], [`Member`], [`Slot`]). A call works on a
//! [`Budget`], a view of them record by record; the hash's field names and the
//! records' text are a state format (`crate::codec::share`), which runs a call over
//! the hash's fields and writes its changes.
//!
//! Rooms: `params` (the tenant, its weight and the budget), `records` (the records
//! and the view a call works on), `standing` (the arithmetic of one call), `decide`
//! (one call: forget, decide, join, sweep).

mod decide;
mod params;
mod records;
mod standing;
#[cfg(test)]
mod tests;

pub use decide::{decide, key_expiry, SWEEP_STEPS};
pub use params::{Share, Tenant, Weight, DEFAULT_MAX_TENANTS, MAX_TENANT_LEN, MAX_WEIGHT};
pub use records::{Budget, Global, Member, Slot, SLOTS};

// The budget's hash, where the module's storage and the in-memory backend have
// always named it; its definitions are the state format's.
pub use crate::codec::share::{call, Changes, Fields, Write, GLOBAL_FIELD};

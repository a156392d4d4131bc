//! The parameters of each command: one struct per limiter, [`All`] for RL.ALL.

use std::time::Duration;

use redis::Cmd;

use crate::period::Period;

/// How many units a call takes or gives back (`COST n`, `REFUND n`, `DEBIT n`).
///
/// A call without one takes 1 unit (the server's default `COST 1`). `Cost(0)`
/// inspects: it answers the current state and writes nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Charge {
    /// `COST n`: take n units, all or nothing (0 inspects).
    Cost(u64),
    /// `REFUND n`: give back up to n units taken earlier.
    Refund(u64),
    /// `DEBIT n`: take n units after the fact, even beyond the limit (into debt).
    Debit(u64),
}

impl Charge {
    pub(crate) fn write(self, cmd: &mut Cmd) {
        let (word, n) = match self {
            Charge::Cost(n) => ("COST", n),
            Charge::Refund(n) => ("REFUND", n),
            Charge::Debit(n) => ("DEBIT", n),
        };
        cmd.arg(word).arg(n);
    }
}

/// The names of a command: the module's command, the library's function, the
/// RL.ALL policy word.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Names {
    pub command: &'static str,
    pub function: &'static str,
    pub word: &'static str,
}

/// What every limiter's parameters give the command builder.
pub(crate) trait Params {
    fn names(&self) -> Names;
    /// The arguments after the key (and, for a GCRA, its DELAY).
    fn write_params(&self, cmd: &mut Cmd);
    fn charge(&self) -> Option<Charge>;
    /// The limit the reply will carry (for a fail-open or fail-closed decision).
    fn limit(&self) -> u64;
    /// The window or period, for the `RateLimit-Policy` header.
    fn window(&self) -> Option<Duration>;
}

macro_rules! charges {
    ($($method:ident => $variant:ident, $doc:literal;)*) => {
        $(
            #[doc = $doc]
            #[must_use]
            pub fn $method(mut self, n: u64) -> Self {
                self.charge = Some(Charge::$variant(n));
                self
            }
        )*
    };
}

macro_rules! names {
    ($command:literal, $function:literal, $word:literal) => {
        fn names(&self) -> Names {
            Names {
                command: $command,
                function: $function,
                word: $word,
            }
        }
    };
}

/// `RL.FIXED key limit window [COST n | REFUND n | DEBIT n]`: a fixed window counter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fixed {
    /// The most units per window (leases at once for RL.ACQUIRE).
    pub limit: u64,
    /// The window (RL.PENALTY: the window strikes are counted in).
    pub window: Period,
    charge: Option<Charge>,
}

impl Fixed {
    /// `limit` units per `window` (epoch-aligned windows).
    pub fn new(limit: u64, window: impl Into<Period>) -> Self {
        Fixed {
            limit,
            window: window.into(),
            charge: None,
        }
    }
    charges! {
        cost => Cost, "`COST n`: take n units (0 inspects).";
        refund => Refund, "`REFUND n`: give back up to n units.";
        debit => Debit, "`DEBIT n`: take n units even beyond the limit.";
    }
}

impl Params for Fixed {
    names!("RL.FIXED", "rl_fixed", "FIXED");
    fn write_params(&self, cmd: &mut Cmd) {
        cmd.arg(self.limit);
        self.window.write_arg(cmd);
    }
    fn charge(&self) -> Option<Charge> {
        self.charge
    }
    fn limit(&self) -> u64 {
        self.limit
    }
    fn window(&self) -> Option<Duration> {
        self.window.as_duration()
    }
}

/// `RL.SLIDING key limit window [COST n | REFUND n]`: an exact sliding log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sliding {
    /// The most units per window (leases at once for RL.ACQUIRE).
    pub limit: u64,
    /// The window (RL.PENALTY: the window strikes are counted in).
    pub window: Period,
    charge: Option<Charge>,
}

impl Sliding {
    /// At most `limit` units in any `window`.
    pub fn new(limit: u64, window: impl Into<Period>) -> Self {
        Sliding {
            limit,
            window: window.into(),
            charge: None,
        }
    }
    charges! {
        cost => Cost, "`COST n`: take n units (0 inspects).";
        refund => Refund, "`REFUND n`: give back up to n units (the newest).";
    }
}

impl Params for Sliding {
    names!("RL.SLIDING", "rl_sliding", "SLIDING");
    fn write_params(&self, cmd: &mut Cmd) {
        cmd.arg(self.limit);
        self.window.write_arg(cmd);
    }
    fn charge(&self) -> Option<Charge> {
        self.charge
    }
    fn limit(&self) -> u64 {
        self.limit
    }
    fn window(&self) -> Option<Duration> {
        self.window.as_duration()
    }
}

/// `RL.SLIDINGCOUNTER key limit window [COST n | REFUND n | DEBIT n]`: a sliding
/// window counter (an estimate in constant memory).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlidingCounter {
    /// The most units per window (leases at once for RL.ACQUIRE).
    pub limit: u64,
    /// The window (RL.PENALTY: the window strikes are counted in).
    pub window: Period,
    charge: Option<Charge>,
}

impl SlidingCounter {
    /// About `limit` units in any `window`.
    pub fn new(limit: u64, window: impl Into<Period>) -> Self {
        SlidingCounter {
            limit,
            window: window.into(),
            charge: None,
        }
    }
    charges! {
        cost => Cost, "`COST n`: take n units (0 inspects).";
        refund => Refund, "`REFUND n`: give back up to n units.";
        debit => Debit, "`DEBIT n`: take n units even beyond the limit.";
    }
}

impl Params for SlidingCounter {
    names!("RL.SLIDINGCOUNTER", "rl_slidingcounter", "SLIDINGCOUNTER");
    fn write_params(&self, cmd: &mut Cmd) {
        cmd.arg(self.limit);
        self.window.write_arg(cmd);
    }
    fn charge(&self) -> Option<Charge> {
        self.charge
    }
    fn limit(&self) -> u64 {
        self.limit
    }
    fn window(&self) -> Option<Duration> {
        self.window.as_duration()
    }
}

/// `RL.BUCKET key capacity tokens period [COST n | REFUND n | DEBIT n]`: a token bucket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bucket {
    /// The most tokens at once (the reply's limit).
    pub capacity: u64,
    /// Tokens added every period.
    pub tokens: u64,
    /// The period tokens are added over.
    pub period: Period,
    charge: Option<Charge>,
}

impl Bucket {
    /// At most `capacity` tokens, `tokens` more every `period`.
    pub fn new(capacity: u64, tokens: u64, period: impl Into<Period>) -> Self {
        Bucket {
            capacity,
            tokens,
            period: period.into(),
            charge: None,
        }
    }
    charges! {
        cost => Cost, "`COST n`: take n tokens (0 inspects).";
        refund => Refund, "`REFUND n`: give back up to n tokens.";
        debit => Debit, "`DEBIT n`: take n tokens even below zero.";
    }
}

impl Params for Bucket {
    names!("RL.BUCKET", "rl_bucket", "BUCKET");
    fn write_params(&self, cmd: &mut Cmd) {
        cmd.arg(self.capacity).arg(self.tokens);
        self.period.write_arg(cmd);
    }
    fn charge(&self) -> Option<Charge> {
        self.charge
    }
    fn limit(&self) -> u64 {
        self.capacity
    }
    fn window(&self) -> Option<Duration> {
        self.period.as_duration()
    }
}

/// `RL.GCRA key capacity tokens period [COST n | REFUND n | DEBIT n] [DELAY max]`:
/// the generic cell rate algorithm (RL.BUCKET's decisions in one integer).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gcra {
    /// The most tokens at once (the reply's limit).
    pub capacity: u64,
    /// Tokens added every period.
    pub tokens: u64,
    /// The period tokens are added over.
    pub period: Period,
    /// `DELAY max`: schedule instead of reject, up to `max` ahead (the reply's
    /// retry_after is then the wait before acting).
    pub delay: Option<Period>,
    charge: Option<Charge>,
}

impl Gcra {
    /// `capacity` at once, `tokens` more every `period`.
    pub fn new(capacity: u64, tokens: u64, period: impl Into<Period>) -> Self {
        Gcra {
            capacity,
            tokens,
            period: period.into(),
            delay: None,
            charge: None,
        }
    }
    /// `DELAY max`: queue a call that does not fit yet, up to `max` ahead.
    #[must_use]
    pub fn delay(mut self, max: impl Into<Period>) -> Self {
        self.delay = Some(max.into());
        self
    }
    charges! {
        cost => Cost, "`COST n`: take n tokens (0 inspects).";
        refund => Refund, "`REFUND n`: give back up to n tokens.";
        debit => Debit, "`DEBIT n`: take n tokens even beyond the limit.";
    }
}

impl Params for Gcra {
    names!("RL.GCRA", "rl_gcra", "GCRA");
    fn write_params(&self, cmd: &mut Cmd) {
        cmd.arg(self.capacity).arg(self.tokens);
        self.period.write_arg(cmd);
        if let Some(delay) = &self.delay {
            cmd.arg("DELAY");
            delay.write_arg(cmd);
        }
    }
    fn charge(&self) -> Option<Charge> {
        self.charge
    }
    fn limit(&self) -> u64 {
        self.capacity
    }
    fn window(&self) -> Option<Duration> {
        self.period.as_duration()
    }
}

/// `RL.ACQUIRE key limit ttl id`: a lease on one of `limit` slots, ending by itself
/// after `ttl` unless renewed (the same call with the same id).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Acquire {
    /// The most units per window (leases at once for RL.ACQUIRE).
    pub limit: u64,
    /// How long a lease lasts unless renewed or released.
    pub ttl: Period,
    /// The lease's name (1 to 256 bytes).
    pub id: Vec<u8>,
}

impl Acquire {
    /// At most `limit` leases at once; this one named `id` (1 to 256 bytes).
    pub fn new(limit: u64, ttl: impl Into<Period>, id: impl AsRef<[u8]>) -> Self {
        Acquire {
            limit,
            ttl: ttl.into(),
            id: id.as_ref().to_vec(),
        }
    }
}

impl Params for Acquire {
    names!("RL.ACQUIRE", "rl_acquire", "ACQUIRE");
    fn write_params(&self, cmd: &mut Cmd) {
        cmd.arg(self.limit);
        self.ttl.write_arg(cmd);
        cmd.arg(self.id.as_slice());
    }
    fn charge(&self) -> Option<Charge> {
        None
    }
    fn limit(&self) -> u64 {
        self.limit
    }
    fn window(&self) -> Option<Duration> {
        self.ttl.as_duration()
    }
}

/// `RL.PENALTY key strikes window block max [COST n]`: `strikes` strikes within
/// `window` block the key for `block`, doubling per repeat up to `max`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Penalty {
    /// Strikes within the window that start a block.
    pub strikes: u64,
    /// The window (RL.PENALTY: the window strikes are counted in).
    pub window: Period,
    /// The first block's length.
    pub block: Period,
    /// The longest block; also how long a blocked offender is remembered.
    pub max: Period,
    charge: Option<Charge>,
}

impl Penalty {
    /// Block after `strikes` strikes in `window`, for `block`, doubling up to `max`.
    pub fn new(
        strikes: u64,
        window: impl Into<Period>,
        block: impl Into<Period>,
        max: impl Into<Period>,
    ) -> Self {
        Penalty {
            strikes,
            window: window.into(),
            block: block.into(),
            max: max.into(),
            charge: None,
        }
    }
    charges! {
        cost => Cost, "`COST n`: record n strikes (0 only looks).";
    }
}

impl Params for Penalty {
    names!("RL.PENALTY", "rl_penalty", "PENALTY");
    fn write_params(&self, cmd: &mut Cmd) {
        cmd.arg(self.strikes);
        self.window.write_arg(cmd);
        self.block.write_arg(cmd);
        self.max.write_arg(cmd);
    }
    fn charge(&self) -> Option<Charge> {
        self.charge
    }
    fn limit(&self) -> u64 {
        self.strikes
    }
    fn window(&self) -> Option<Duration> {
        self.window.as_duration()
    }
}

/// `RL.SHARE key tenant weight capacity tokens period [COST n | REFUND n | DEBIT n]`:
/// one rate shared by tenants in proportion to their weights.
///
/// Needs a server whose RL has RL.SHARE (module) or `rl_share` (library); an older
/// one answers [`Error::Unsupported`](crate::Error::Unsupported).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Share {
    /// The tenant (1 to 256 bytes).
    pub tenant: Vec<u8>,
    /// The tenant's weight (1 to 10000).
    pub weight: u64,
    /// The most tokens at once (the reply's limit).
    pub capacity: u64,
    /// Tokens added every period.
    pub tokens: u64,
    /// The period tokens are added over.
    pub period: Period,
    charge: Option<Charge>,
}

impl Share {
    /// `tenant` (1 to 256 bytes) with `weight` in a limiter of `capacity` at once,
    /// `tokens` more every `period`.
    pub fn new(
        tenant: impl AsRef<[u8]>,
        weight: u64,
        capacity: u64,
        tokens: u64,
        period: impl Into<Period>,
    ) -> Self {
        Share {
            tenant: tenant.as_ref().to_vec(),
            weight,
            capacity,
            tokens,
            period: period.into(),
            charge: None,
        }
    }
    charges! {
        cost => Cost, "`COST n`: take n tokens (0 inspects).";
        refund => Refund, "`REFUND n`: give back up to n tokens.";
        debit => Debit, "`DEBIT n`: take n tokens even beyond the limit.";
    }
}

impl Params for Share {
    names!("RL.SHARE", "rl_share", "SHARE");
    fn write_params(&self, cmd: &mut Cmd) {
        cmd.arg(self.tenant.as_slice())
            .arg(self.weight)
            .arg(self.capacity)
            .arg(self.tokens);
        self.period.write_arg(cmd);
    }
    fn charge(&self) -> Option<Charge> {
        self.charge
    }
    fn limit(&self) -> u64 {
        self.capacity
    }
    fn window(&self) -> Option<Duration> {
        self.period.as_duration()
    }
}

/// `CL.THROTTLE key max_burst count period [quantity]`: redis-cell's command
/// (module only; its reply is a [`ThrottleDecision`](crate::ThrottleDecision)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Throttle {
    /// max_burst + 1 calls at once.
    pub max_burst: u64,
    /// Calls allowed per period.
    pub count: u64,
    /// The period tokens are added over.
    pub period: Period,
    /// The units this call takes (default 1).
    pub quantity: Option<u64>,
}

impl Throttle {
    /// `max_burst + 1` at once, `count` more every `period`.
    pub fn new(max_burst: u64, count: u64, period: impl Into<Period>) -> Self {
        Throttle {
            max_burst,
            count,
            period: period.into(),
            quantity: None,
        }
    }
    /// The units this call takes (default 1; 0 inspects).
    #[must_use]
    pub fn quantity(mut self, n: u64) -> Self {
        self.quantity = Some(n);
        self
    }
    pub(crate) fn write_params(&self, cmd: &mut Cmd) {
        cmd.arg(self.max_burst).arg(self.count);
        self.period.write_arg(cmd);
        if let Some(q) = self.quantity {
            cmd.arg(q);
        }
    }
}

/// One key's policy inside RL.ALL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Policy {
    /// `FIXED limit window`
    Fixed(Fixed),
    /// `SLIDING limit window`
    Sliding(Sliding),
    /// `SLIDINGCOUNTER limit window`
    SlidingCounter(SlidingCounter),
    /// `BUCKET capacity tokens period`
    Bucket(Bucket),
    /// `GCRA capacity tokens period [DELAY max]`
    Gcra(Gcra),
    /// `ACQUIRE limit ttl id`
    Acquire(Acquire),
    /// `PENALTY strikes window block max (needs COST 0 on the call)`
    Penalty(Penalty),
    /// `SHARE tenant weight capacity tokens period`
    Share(Share),
}

impl Policy {
    pub(crate) fn params(&self) -> &dyn Params {
        match self {
            Policy::Fixed(p) => p,
            Policy::Sliding(p) => p,
            Policy::SlidingCounter(p) => p,
            Policy::Bucket(p) => p,
            Policy::Gcra(p) => p,
            Policy::Acquire(p) => p,
            Policy::Penalty(p) => p,
            Policy::Share(p) => p,
        }
    }

    /// The policy's word in RL.ALL (`FIXED`, `GCRA`, …).
    pub fn word(&self) -> &'static str {
        self.params().names().word
    }
}

macro_rules! into_policy {
    ($($t:ident),*) => {
        $(impl From<$t> for Policy {
            fn from(p: $t) -> Self {
                Policy::$t(p)
            }
        })*
    };
}
into_policy!(
    Fixed,
    Sliding,
    SlidingCounter,
    Bucket,
    Gcra,
    Acquire,
    Penalty,
    Share
);

/// `RL.ALL numkeys key… policy… [COST n | REFUND n | DEBIT n]`: several limits
/// checked and taken all or nothing.
///
/// The charge is the call's, for every key (set it here, not on the policies: a
/// policy carrying its own is an [`Error::BadArgument`](crate::Error::BadArgument)).
///
/// ```
/// use rl_client::{All, Fixed, Gcra};
///
/// let all = All::new()
///     .key("{u42}:burst", Gcra::new(10, 1, "1s"))
///     .key("{u42}:day", Fixed::new(1000, "1d"))
///     .cost(2);
/// assert_eq!(all.len(), 2);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct All {
    pub(crate) entries: Vec<(Vec<u8>, Policy)>,
    charge: Option<Charge>,
}

impl All {
    /// No keys yet.
    pub fn new() -> Self {
        All::default()
    }
    /// Adds a key and its policy.
    #[must_use]
    pub fn key(mut self, key: impl AsRef<[u8]>, policy: impl Into<Policy>) -> Self {
        self.push(key, policy);
        self
    }
    /// Adds a key and its policy in place.
    pub fn push(&mut self, key: impl AsRef<[u8]>, policy: impl Into<Policy>) -> &mut Self {
        self.entries.push((key.as_ref().to_vec(), policy.into()));
        self
    }
    /// The number of keys.
    pub fn len(&self) -> usize {
        self.entries.len()
    }
    /// No keys.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
    /// The keys and policies, in order.
    pub fn entries(&self) -> impl Iterator<Item = (&[u8], &Policy)> {
        self.entries.iter().map(|(k, p)| (k.as_slice(), p))
    }
    /// The call's charge.
    pub fn charge(&self) -> Option<Charge> {
        self.charge
    }
    charges! {
        cost => Cost, "`COST n` on every key (0 inspects; a PENALTY policy needs it).";
        refund => Refund, "`REFUND n` on every key.";
        debit => Debit, "`DEBIT n` on every key.";
    }
}

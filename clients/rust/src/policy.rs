//! The parameters of each command: one struct per limiter, [`All`] for RL.ALL.

use std::time::Duration;

use redis::Cmd;

use crate::period::{refill_ms, Period};

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
    /// The call's charge; none for a command that takes none.
    fn charge(&self) -> Option<Charge> {
        None
    }
    /// The limit the reply will carry (for a fail-open or fail-closed decision).
    fn limit(&self) -> u64;
    /// The `w` of the `RateLimit-Policy` header: the window or ttl; a bucket's time to
    /// refill from empty.
    fn window(&self) -> Option<Duration>;
}

macro_rules! charges {
    (units) => {
        charges! {
            cost => Cost, "`COST n`: take n units (0 inspects).";
            refund => Refund, "`REFUND n`: give back up to n units.";
            debit => Debit, "`DEBIT n`: take n units even beyond the limit.";
        }
    };
    (tokens) => {
        charges! {
            cost => Cost, "`COST n`: take n tokens (0 inspects).";
            refund => Refund, "`REFUND n`: give back up to n tokens.";
            debit => Debit, "`DEBIT n`: take n tokens even beyond the limit.";
        }
    };
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

/// A parameter as stored in a struct and appended to the command.
trait Arg {
    fn write_arg(&self, cmd: &mut Cmd);
}

impl Arg for u64 {
    fn write_arg(&self, cmd: &mut Cmd) {
        cmd.arg(*self);
    }
}

impl Arg for Vec<u8> {
    fn write_arg(&self, cmd: &mut Cmd) {
        cmd.arg(self.as_slice());
    }
}

impl Arg for Period {
    fn write_arg(&self, cmd: &mut Cmd) {
        Period::write_arg(self, cmd);
    }
}

/// The three kinds of parameter: a number (`num`), a duration (`period`), bytes
/// (`bytes`); each with its stored type, the type its builder takes, and the
/// conversion from one to the other.
macro_rules! kind {
    (stored num) => { u64 };
    (stored period) => { Period };
    (stored bytes) => { Vec<u8> };
    (taken num) => { u64 };
    (taken period) => { impl Into<Period> };
    (taken bytes) => { impl AsRef<[u8]> };
    (convert num, $v:expr) => { $v };
    (convert period, $v:expr) => { $v.into() };
    (convert bytes, $v:expr) => { $v.as_ref().to_vec() };
}

/// `Params::charge` of a struct that keeps a charge (the default answers none).
macro_rules! charged {
    () => {
        fn charge(&self) -> Option<Charge> {
            self.charge
        }
    };
}

macro_rules! uncharged {
    () => {};
}

/// Declares a command's parameter struct: its required fields (the constructor's
/// arguments, sent in this order), its `COST`/`REFUND`/`DEBIT` builders (the struct
/// then keeps a private charge), its optional fields (each with a builder, sent
/// after the required ones, behind its word if it has one), and with `names` its
/// [`Params`].
macro_rules! params {
    (
        @decl [$(#[$meta:meta])* struct $name:ident {
            $($(#[$doc:meta])* $field:ident: $kind:ident,)*
        }]
        [$($charge_field:tt)*] [$($charge_init:tt)*] $charged:ident [$($charges:tt)*]
        $(options {
            $($(#[$odoc:meta])* $opt:ident: $okind:ident $([$oword:literal])?,
                $(#[$bdoc:meta])* fn $builder_arg:ident;)*
        })?
        $(#[$new_doc:meta])*
        fn new;
        $(names $command:literal, $function:literal, $word:literal; limit $limit:ident; window $window:ident $(per $tokens:ident)?;)?
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub struct $name {
            $($(#[$doc])* pub $field: kind!(stored $kind),)*
            $($($(#[$odoc])* pub $opt: Option<kind!(stored $okind)>,)*)?
            $($charge_field)*
        }

        impl $name {
            $(#[$new_doc])*
            pub fn new($($field: kind!(taken $kind)),*) -> Self {
                $name {
                    $($field: kind!(convert $kind, $field),)*
                    $($($opt: None,)*)?
                    $($charge_init)*
                }
            }
            charges! { $($charges)* }
            $($(
                $(#[$bdoc])*
                #[must_use]
                pub fn $opt(mut self, $builder_arg: kind!(taken $okind)) -> Self {
                    self.$opt = Some(kind!(convert $okind, $builder_arg));
                    self
                }
            )*)?

            /// The arguments after the key (and, for a GCRA, its DELAY).
            pub(crate) fn write_fields(&self, cmd: &mut Cmd) {
                $(self.$field.write_arg(cmd);)*
                $($(
                    if let Some(v) = &self.$opt {
                        $(cmd.arg($oword);)?
                        v.write_arg(cmd);
                    }
                )*)?
            }
        }

        $(
            impl Params for $name {
                fn names(&self) -> Names {
                    Names {
                        command: $command,
                        function: $function,
                        word: $word,
                    }
                }
                fn write_params(&self, cmd: &mut Cmd) {
                    self.write_fields(cmd);
                }
                $charged!();
                fn limit(&self) -> u64 {
                    self.$limit
                }
                fn window(&self) -> Option<Duration> {
                    let ms = self.$window.as_millis()?;
                    // A bucket's: its time to refill from empty.
                    $(let ms = refill_ms(self.$limit, self.$tokens, ms);)?
                    Some(Duration::from_millis(ms))
                }
            }
        )?
    };
    ($(#[$meta:meta])* struct $name:ident $fields:tt charges { $($charges:tt)+ } $($rest:tt)*) => {
        params! {
            @decl [$(#[$meta])* struct $name $fields]
            [charge: Option<Charge>,] [charge: None,] charged [$($charges)+] $($rest)*
        }
    };
    ($(#[$meta:meta])* struct $name:ident $fields:tt $($rest:tt)*) => {
        params! { @decl [$(#[$meta])* struct $name $fields] [] [] uncharged [] $($rest)* }
    };
}

params! {
    /// `RL.FIXED key limit window [COST n | REFUND n | DEBIT n]`: a fixed window counter.
    struct Fixed {
        /// The most units per window (leases at once for RL.ACQUIRE).
        limit: num,
        /// The window (RL.PENALTY: the window strikes are counted in).
        window: period,
    }
    charges { units }
    /// `limit` units per `window` (epoch-aligned windows).
    fn new;
    names "RL.FIXED", "rl_fixed", "FIXED"; limit limit; window window;
}

params! {
    /// `RL.SLIDING key limit window [COST n | REFUND n]`: an exact sliding log.
    struct Sliding {
        /// The most units per window (leases at once for RL.ACQUIRE).
        limit: num,
        /// The window (RL.PENALTY: the window strikes are counted in).
        window: period,
    }
    charges {
        cost => Cost, "`COST n`: take n units (0 inspects).";
        refund => Refund, "`REFUND n`: give back up to n units (the newest).";
    }
    /// At most `limit` units in any `window`.
    fn new;
    names "RL.SLIDING", "rl_sliding", "SLIDING"; limit limit; window window;
}

params! {
    /// `RL.SLIDINGCOUNTER key limit window [COST n | REFUND n | DEBIT n]`: a sliding
    /// window counter (an estimate in constant memory).
    struct SlidingCounter {
        /// The most units per window (leases at once for RL.ACQUIRE).
        limit: num,
        /// The window (RL.PENALTY: the window strikes are counted in).
        window: period,
    }
    charges { units }
    /// About `limit` units in any `window`.
    fn new;
    names "RL.SLIDINGCOUNTER", "rl_slidingcounter", "SLIDINGCOUNTER"; limit limit; window window;
}

params! {
    /// `RL.BUCKET key capacity tokens period [COST n | REFUND n | DEBIT n]`: a token bucket.
    struct Bucket {
        /// The most tokens at once (the reply's limit).
        capacity: num,
        /// Tokens added every period.
        tokens: num,
        /// The period tokens are added over.
        period: period,
    }
    charges {
        cost => Cost, "`COST n`: take n tokens (0 inspects).";
        refund => Refund, "`REFUND n`: give back up to n tokens.";
        debit => Debit, "`DEBIT n`: take n tokens even below zero.";
    }
    /// At most `capacity` tokens, `tokens` more every `period`.
    fn new;
    names "RL.BUCKET", "rl_bucket", "BUCKET"; limit capacity; window period per tokens;
}

params! {
    /// `RL.GCRA key capacity tokens period [COST n | REFUND n | DEBIT n] [DELAY max]`:
    /// the generic cell rate algorithm (RL.BUCKET's decisions in one integer).
    struct Gcra {
        /// The most tokens at once (the reply's limit).
        capacity: num,
        /// Tokens added every period.
        tokens: num,
        /// The period tokens are added over.
        period: period,
    }
    charges { tokens }
    options {
        /// `DELAY max`: schedule instead of reject, up to `max` ahead (the reply's
        /// retry_after is then the wait before acting).
        delay: period ["DELAY"],
            /// `DELAY max`: queue a call that does not fit yet, up to `max` ahead.
            fn max;
    }
    /// `capacity` at once, `tokens` more every `period`.
    fn new;
    names "RL.GCRA", "rl_gcra", "GCRA"; limit capacity; window period per tokens;
}

params! {
    /// `RL.ACQUIRE key limit ttl id`: a lease on one of `limit` slots, ending by itself
    /// after `ttl` unless renewed (the same call with the same id).
    struct Acquire {
        /// The most units per window (leases at once for RL.ACQUIRE).
        limit: num,
        /// How long a lease lasts unless renewed or released.
        ttl: period,
        /// The lease's name (1 to 256 bytes).
        id: bytes,
    }
    /// At most `limit` leases at once; this one named `id` (1 to 256 bytes).
    fn new;
    names "RL.ACQUIRE", "rl_acquire", "ACQUIRE"; limit limit; window ttl;
}

params! {
    /// `RL.PENALTY key strikes window block max [COST n]`: `strikes` strikes within
    /// `window` block the key for `block`, doubling per repeat up to `max`.
    struct Penalty {
        /// Strikes within the window that start a block.
        strikes: num,
        /// The window (RL.PENALTY: the window strikes are counted in).
        window: period,
        /// The first block's length.
        block: period,
        /// The longest block; also how long a blocked offender is remembered.
        max: period,
    }
    charges {
        cost => Cost, "`COST n`: record n strikes (0 only looks).";
    }
    /// Block after `strikes` strikes in `window`, for `block`, doubling up to `max`.
    fn new;
    names "RL.PENALTY", "rl_penalty", "PENALTY"; limit strikes; window window;
}

params! {
    /// `RL.SHARE key tenant weight capacity tokens period [COST n | REFUND n | DEBIT n]`:
    /// one rate shared by tenants in proportion to their weights.
    ///
    /// Needs a server whose RL has RL.SHARE (module) or `rl_share` (library); an older
    /// one answers [`Error::Unsupported`](crate::Error::Unsupported).
    struct Share {
        /// The tenant (1 to 256 bytes).
        tenant: bytes,
        /// The tenant's weight (1 to 10000).
        weight: num,
        /// The most tokens at once (the reply's limit).
        capacity: num,
        /// Tokens added every period.
        tokens: num,
        /// The period tokens are added over.
        period: period,
    }
    charges { tokens }
    /// `tenant` (1 to 256 bytes) with `weight` in a limiter of `capacity` at once,
    /// `tokens` more every `period`.
    fn new;
    names "RL.SHARE", "rl_share", "SHARE"; limit capacity; window period per tokens;
}

params! {
    /// `CL.THROTTLE key max_burst count period [quantity]`: redis-cell's command
    /// (module only; its reply is a [`ThrottleDecision`](crate::ThrottleDecision)).
    struct Throttle {
        /// max_burst + 1 calls at once.
        max_burst: num,
        /// Calls allowed per period.
        count: num,
        /// The period tokens are added over.
        period: period,
    }
    options {
        /// The units this call takes (default 1).
        quantity: num,
            /// The units this call takes (default 1; 0 inspects).
            fn n;
    }
    /// `max_burst + 1` at once, `count` more every `period`.
    fn new;
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

//! What every command's parameter type has in common, written once: the `command!`
//! macro that `generated/commands.rs` invokes once per command with only what differs
//! (its names, its arguments with their kinds and ranges, its options, the exclusive
//! pairs, what its RL.ALL policy takes, its limit and window). The macro writes the
//! struct, `new`, the option builders, `charge()` and the `Params` implementation.

use redis::Cmd;

use crate::check;
use crate::error::Result;
use crate::period::Period;

/// An argument's or an option's value as kept: checked against its range, then sent.
pub(crate) trait Value {
    fn check(&self, name: &str, min: u64, max: u64) -> Result<()>;
    fn write(&self, cmd: &mut Cmd);
}

impl Value for u64 {
    fn check(&self, name: &str, min: u64, max: u64) -> Result<()> {
        check::integer(name, *self, min, max)
    }
    fn write(&self, cmd: &mut Cmd) {
        cmd.arg(*self);
    }
}

impl Value for Period {
    fn check(&self, name: &str, min: u64, max: u64) -> Result<()> {
        check::duration(name, self, min, max)
    }
    fn write(&self, cmd: &mut Cmd) {
        self.write_arg(cmd);
    }
}

impl Value for Vec<u8> {
    fn check(&self, name: &str, min: u64, max: u64) -> Result<()> {
        check::text(name, self, min, max)
    }
    fn write(&self, cmd: &mut Cmd) {
        cmd.arg(self.as_slice());
    }
}

/// How a builder's argument becomes the value kept (a duration's `impl Into<Period>`,
/// a text's `impl AsRef<[u8]>`).
pub(crate) trait Take<T> {
    fn take(self) -> T;
}

impl Take<u64> for u64 {
    fn take(self) -> u64 {
        self
    }
}

impl<P: Into<Period>> Take<Period> for P {
    fn take(self) -> Period {
        self.into()
    }
}

impl<B: AsRef<[u8]>> Take<Vec<u8>> for B {
    fn take(self) -> Vec<u8> {
        self.as_ref().to_vec()
    }
}

/// Sets an option, noting the first one given twice (refused when the call is made).
pub(crate) fn once<T>(
    twice: &mut Option<&'static str>,
    slot: &mut Option<T>,
    word: &'static str,
    v: T,
) {
    if slot.is_some() && twice.is_none() {
        *twice = Some(word);
    }
    *slot = Some(v);
}

/// Turns a flag on, noting it when it was on already (refused when the call is made).
pub(crate) fn flag(twice: &mut Option<&'static str>, slot: &mut bool, word: &'static str) {
    if *slot && twice.is_none() {
        *twice = Some(word);
    }
    *slot = true;
}

/// An option or a flag that was given (a value, or a flag turned on).
pub(crate) trait Given {
    fn given(&self) -> bool;
}

impl<T> Given for Option<T> {
    fn given(&self) -> bool {
        self.is_some()
    }
}

impl Given for bool {
    fn given(&self) -> bool {
        *self
    }
}

/// Writes a flag's word when it is on.
pub(crate) fn write_flag(on: bool, word: &str, cmd: &mut Cmd) {
    if on {
        cmd.arg(word);
    }
}

/// Checks an option's value when it was given.
pub(crate) fn check_given<T: Value>(v: &Option<T>, word: &str, min: u64, max: u64) -> Result<()> {
    v.as_ref().map_or(Ok(()), |v| v.check(word, min, max))
}

/// Writes `WORD value` when the option was given.
pub(crate) fn write_given<T: Value>(v: &Option<T>, word: &str, cmd: &mut Cmd) {
    if let Some(v) = v {
        cmd.arg(word);
        v.write(cmd);
    }
}

/// One command's parameter type. Each argument and option is
/// `doc-comments name: Kept [Taken] = "NAME" (min, max)`; an option kept privately
/// (COST, REFUND, DEBIT: read through `charge()`) has no `pub`. Each flag (a word
/// without a value) is `doc-comments name = "NAME"`, a `bool` and a builder without
/// argument; `call` says which flags the command itself sends (after its options) and
/// which it refuses (those only its RL.ALL policy takes), `policy` which options and
/// flags the policy refuses, writes after its arguments, and writes before its word.
macro_rules! command {
    (
        $Type:ident $NAMES:ident = ($command:literal, $function:expr, $word:expr, $shape:ident);
        $(#[$doc:meta])*
        new[$(#[$new_doc:meta])*]($($(#[$arg_doc:meta])* $arg:ident: $Arg:ty [$ArgIn:ty] = $arg_name:literal ($arg_min:expr, $arg_max:expr)),*);
        optional($($(#[$opt_doc:meta])* $opt:ident: $Opt:ty [$OptIn:ty] = $opt_name:literal ($opt_min:expr, $opt_max:expr)),*);
        $(
            options[$twice:ident]($($(#[$o_doc:meta])* $o_vis:vis $o:ident($o_param:ident): $O:ty [$OIn:ty] = $o_name:literal ($o_min:expr, $o_max:expr)),*);
            flags($($(#[$f_doc:meta])* $f:ident = $f_name:literal),*);
        )?
        excludes($($a:ident $b:ident = $a_name:literal $b_name:literal),*);
        $(charge($($amount:ident $Variant:ident),+);)?
        call(sends $($sent:ident = $sent_name:literal),*; refuses $($alone:ident = $alone_name:literal),*);
        policy($policy_word:literal; refuses $($refused:ident = $refused_name:literal),*; writes $($taken:ident = $taken_name:literal),*; before $($before:ident = $before_name:literal),*);
        limit($p:pat => $limit:expr);
        window($q:pat => $window:expr);
    ) => {
        pub(crate) const $NAMES: Names = Names {
            command: $command,
            function: $function,
            word: $word,
            shape: Shape::$shape,
        };

        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub struct $Type {
            $($(#[$arg_doc])* pub $arg: $Arg,)*
            $($(#[$opt_doc])* pub $opt: Option<$Opt>,)*
            $(
                $($(#[$o_doc])* $o_vis $o: Option<$O>,)*
                $($(#[$f_doc])* pub $f: bool,)*
                /// The first option given twice (refused when sent).
                $twice: Option<&'static str>,
            )?
        }

        impl $Type {
            $(#[$new_doc])*
            pub fn new($($arg: $ArgIn),*) -> Self {
                $Type {
                    $($arg: Take::take($arg),)*
                    $($opt: None,)*
                    $($($o: None,)* $($f: false,)* $twice: None,)?
                }
            }
            $(
                $(#[$opt_doc])*
                #[must_use]
                pub fn $opt(mut self, $opt: $OptIn) -> Self {
                    self.$opt = Some(Take::take($opt));
                    self
                }
            )*
            $(
                $(
                    $(#[$o_doc])*
                    #[must_use]
                    pub fn $o(mut self, $o_param: $OIn) -> Self {
                        params::once(&mut self.$twice, &mut self.$o, $o_name, Take::take($o_param));
                        self
                    }
                )*
                $(
                    $(#[$f_doc])*
                    #[must_use]
                    pub fn $f(mut self) -> Self {
                        params::flag(&mut self.$twice, &mut self.$f, $f_name);
                        self
                    }
                )*
            )?
            $(
                /// The call's COST, REFUND or DEBIT, if one was given.
                pub fn charge(&self) -> Option<Charge> {
                    None$(.or(self.$amount.map(Charge::$Variant)))+
                }
            )?
        }

        impl Params for $Type {
            fn names(&self) -> &'static Names {
                &$NAMES
            }
            fn check(&self) -> Result<()> {
                $(Value::check(&self.$arg, $arg_name, $arg_min, $arg_max)?;)*
                $(params::check_given(&self.$opt, $opt_name, $opt_min, $opt_max)?;)*
                $(
                    if let Some(name) = self.$twice {
                        return Err(check::twice(name));
                    }
                )?
                $(
                    if self.$a.is_some() && self.$b.is_some() {
                        return Err(check::excluded($a_name, $b_name));
                    }
                )*
                $($(params::check_given(&self.$o, $o_name, $o_min, $o_max)?;)*)?
                Ok(())
            }
            fn check_call(&self) -> Result<()> {
                $(
                    if self.$alone {
                        return Err(check::only_in_policy($alone_name, $command));
                    }
                )*
                Ok(())
            }
            fn write_args(&self, cmd: &mut Cmd) {
                $(Value::write(&self.$arg, cmd);)*
                $(if let Some(v) = &self.$opt {
                    Value::write(v, cmd);
                })*
            }
            fn write_options(&self, _cmd: &mut Cmd) {
                $($(params::write_given(&self.$o, $o_name, _cmd);)*)?
                $(params::write_flag(self.$sent, $sent_name, _cmd);)*
            }
            fn flag(&self, _word: &str) -> bool {
                let flags: &[(&str, bool)] = &[$($(($f_name, self.$f)),*)?];
                flags.iter().any(|&(name, on)| on && name == _word)
            }
            fn check_policy(&self) -> Result<()> {
                $(
                    if params::Given::given(&self.$refused) {
                        return Err(check::not_in_policy($refused_name, $policy_word));
                    }
                )*
                Ok(())
            }
            fn write_policy_options(&self, _cmd: &mut Cmd) {
                $(params::write_given(&self.$taken, $taken_name, _cmd);)*
            }
            fn write_policy_flags(&self, _cmd: &mut Cmd) {
                $(params::write_flag(self.$before, $before_name, _cmd);)*
            }
            fn limit(&self) -> u64 {
                let $p = self;
                $limit
            }
            fn window(&self) -> Option<Duration> {
                let $q = self;
                $window
            }
        }
    };
}
pub(crate) use command;

/// RL.ALL's `Policy`: one variant per policy command, each with its `From`.
macro_rules! policies {
    ($($(#[$doc:meta])* $Type:ident),+) => {
        /// One key's policy inside RL.ALL.
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub enum Policy {
            $($(#[$doc])* $Type($Type),)+
        }

        impl Policy {
            pub(crate) fn params(&self) -> &dyn Params {
                match self {
                    $(Policy::$Type(p) => p,)+
                }
            }
        }

        $(
            impl From<$Type> for Policy {
                fn from(p: $Type) -> Self {
                    Policy::$Type(p)
                }
            }
        )+
    };
}
pub(crate) use policies;

/// Each command's method on `Limiter`, `AsyncLimiter` and `Batch`, from one line per
/// command: its name, its parameters, the call they make, its reply and how it reads,
/// and the batch method's doc.
macro_rules! methods {
    ($(
        $(#[$doc:meta])*
        $name:ident($($arg:ident: $Arg:ty),*) => $call:expr, $Reply:ty, $into:ident, [$(#[$batch_doc:meta])*];
    )+) => {
        impl<C: redis::ConnectionLike + Deadline> Limiter<C> {
            $(
                $(#[$doc])*
                pub fn $name(&mut self, $($arg: $Arg),*) -> Result<$Reply> {
                    self.call($call)?.$into()
                }
            )+
        }

        #[cfg(feature = "tokio")]
        impl<C: redis::aio::ConnectionLike> crate::AsyncLimiter<C> {
            $(
                $(#[$doc])*
                pub async fn $name(&mut self, $($arg: $Arg),*) -> Result<$Reply> {
                    self.call($call).await?.$into()
                }
            )+
        }

        impl Batch {
            $(
                $(#[$batch_doc])*
                pub fn $name(&mut self, $($arg: $Arg),*) -> &mut Self {
                    self.add($call)
                }
            )+
        }
    };
}
pub(crate) use methods;

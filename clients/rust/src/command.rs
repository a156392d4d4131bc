//! Building each call for a backend, and reading its reply: the pure part shared by
//! the blocking, async and pipelined APIs. What each command takes is generated
//! (`generated/commands.rs`): here, what every command has in common.

use std::time::Duration;

use redis::{cmd, Cmd, Value};

use crate::error::{Error, Result};
use crate::generated::commands::{All, ALL};
use crate::reply::{decision_of, released_of, AllDecision, Decision, ThrottleDecision};

/// The flag that tries a limit without enforcing it: its decision is flagged
/// [`Decision::shadow`], gives no HTTP fields, and never uses the blocked-key cache or
/// the fallback limiter.
pub(crate) const SHADOW: &str = "SHADOW";

/// Where RL runs on the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// The module: `RL.GCRA key …`.
    Module,
    /// The Functions library `rl`: `FCALL rl_gcra 1 key …`.
    Library,
}

/// What a call does when the server cannot be reached or does not answer within the
/// deadline.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FailMode {
    /// Return [`Error::Connection`] (the default: raise).
    #[default]
    Error,
    /// Fail open (allow): allowed, `remaining = limit`, `retry_after = 0`,
    /// `reset_after = 0`, marked [`Decision::fallback`] with the error.
    Open,
    /// Fail closed (deny): not allowed, `remaining = 0`, `retry_after = reset_after =
    /// 1 s`, marked [`Decision::fallback`] with the error.
    Closed,
}

/// A typed reply of any RL call (what a [`Batch`](crate::Batch) answers).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// Every command answering a decision (RL.FIXED, RL.GCRA, RL.ACQUIRE, …).
    Decision(Decision),
    /// RL.ALL (boxed: a batch of one-key decisions stays small).
    All(Box<AllDecision>),
    /// CL.THROTTLE.
    Throttle(ThrottleDecision),
    /// RL.RELEASE: whether a live lease was released.
    Released(bool),
}

impl Reply {
    /// The decision of a one-key call, or RL.ALL's combined one.
    pub fn decision(&self) -> Option<&Decision> {
        match self {
            Reply::Decision(d) => Some(d),
            Reply::All(a) => Some(&a.combined),
            _ => None,
        }
    }

    /// Whether the call was accepted (RL.RELEASE: whether it released a lease).
    pub fn allowed(&self) -> bool {
        match self {
            Reply::Decision(d) => d.allowed,
            Reply::All(a) => a.combined.allowed,
            Reply::Throttle(t) => !t.limited,
            Reply::Released(r) => *r,
        }
    }

    fn unexpected(self) -> Error {
        Error::UnexpectedReply(format!("{self:?}"))
    }

    pub(crate) fn into_decision(self) -> Result<Decision> {
        match self {
            Reply::Decision(d) => Ok(d),
            other => Err(other.unexpected()),
        }
    }

    pub(crate) fn into_all(self) -> Result<AllDecision> {
        match self {
            Reply::All(a) => Ok(*a),
            other => Err(other.unexpected()),
        }
    }

    pub(crate) fn into_throttle(self) -> Result<ThrottleDecision> {
        match self {
            Reply::Throttle(t) => Ok(t),
            other => Err(other.unexpected()),
        }
    }

    pub(crate) fn into_released(self) -> Result<bool> {
        match self {
            Reply::Released(r) => Ok(r),
            other => Err(other.unexpected()),
        }
    }
}

/// The kind of reply a command gives (commands.json's `reply`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    Decision,
    Throttle,
    Released,
    All,
}

/// A command's names: the module's command, the library's function (None: module
/// only), the RL.ALL policy word (None: not a policy), and its reply.
#[derive(Debug)]
pub(crate) struct Names {
    pub command: &'static str,
    pub function: Option<&'static str>,
    pub word: Option<&'static str>,
    pub shape: Shape,
}

/// What every command's parameters give (implemented by the generated types).
pub(crate) trait Params {
    fn names(&self) -> &'static Names;
    /// The table's ranges, each option once, the exclusive options alone.
    fn check(&self) -> Result<()>;
    /// The arguments after the key.
    fn write_args(&self, cmd: &mut Cmd);
    /// As a call of its own: refuses the flags only its RL.ALL policy takes.
    fn check_call(&self) -> Result<()> {
        Ok(())
    }
    /// The options and flags, after the arguments.
    fn write_options(&self, cmd: &mut Cmd);
    /// Whether the flag `word` (`SHADOW`) is on.
    fn flag(&self, _word: &str) -> bool {
        false
    }
    /// As an RL.ALL policy: refuses options the policy does not take.
    fn check_policy(&self) -> Result<()> {
        Ok(())
    }
    /// As an RL.ALL policy: the options it takes.
    fn write_policy_options(&self, _cmd: &mut Cmd) {}
    /// As an RL.ALL policy: the flags written before its word.
    fn write_policy_flags(&self, _cmd: &mut Cmd) {}
    /// The limit a fail mode's decision carries.
    fn limit(&self) -> u64;
    /// The `w` of the `RateLimit-Policy` field (None: unknown, left out).
    fn window(&self) -> Option<Duration>;
}

/// A call: one key and its command's parameters, or RL.ALL.
#[derive(Clone, Copy)]
pub(crate) enum Call<'a> {
    One(&'a [u8], &'a (dyn Params + Sync)),
    Many(&'a All),
}

/// A call built for a backend, with what its reply will be read as.
pub(crate) struct Prepared {
    pub cmd: Cmd,
    pub expect: Expect,
    pub command: &'static str,
}

/// How to read a call's reply.
#[derive(Clone, Debug)]
pub(crate) enum Expect {
    /// A decision, with the limit a fail mode reports, the window for its headers and
    /// whether the call is SHADOW.
    Decision {
        limit: u64,
        window: Option<Duration>,
        shadow: bool,
    },
    All(Box<AllExpect>),
    Throttle {
        window: Option<Duration>,
    },
    Released,
}

#[derive(Clone, Debug)]
pub(crate) struct AllExpect {
    pub limits: Vec<u64>,
    pub windows: Vec<Option<Duration>>,
    pub words: Vec<&'static str>,
    pub shadows: Vec<bool>,
}

/// `RL.X key …` or `FCALL rl_x numkeys key …`.
fn start(backend: Backend, names: &Names, numkeys: usize) -> Result<Cmd> {
    Ok(match (backend, names.function) {
        (Backend::Module, _) => cmd(names.command),
        (Backend::Library, Some(function)) => {
            let mut c = cmd("FCALL");
            c.arg(function).arg(numkeys);
            c
        }
        (Backend::Library, None) => {
            return Err(Error::Unsupported(format!(
                "{} has no Functions-library equivalent: call it on a server with the RL module",
                names.command
            )))
        }
    })
}

impl Call<'_> {
    pub(crate) fn command(&self) -> &'static str {
        match self {
            Call::One(_, p) => p.names().command,
            Call::Many(_) => ALL.command,
        }
    }

    /// The client's own checks, before anything is sent.
    pub(crate) fn check(&self) -> Result<()> {
        match self {
            Call::One(_, p) => p.check().and_then(|()| p.check_call()),
            Call::Many(all) => {
                if all.entries.is_empty() {
                    return Err(Error::InvalidArgument(
                        "RL.ALL needs at least one key and its policy".into(),
                    ));
                }
                for (_, policy) in &all.entries {
                    let p = policy.params();
                    p.check()?;
                    p.check_policy()?;
                }
                all.check_options()
            }
        }
    }

    pub(crate) fn expect(&self) -> Expect {
        match self {
            Call::One(_, p) => match p.names().shape {
                Shape::Throttle => Expect::Throttle { window: p.window() },
                Shape::Released => Expect::Released,
                Shape::Decision | Shape::All => Expect::Decision {
                    limit: p.limit(),
                    window: p.window(),
                    shadow: p.flag(SHADOW),
                },
            },
            Call::Many(all) => {
                let params = all.entries.iter().map(|(_, p)| p.params());
                Expect::All(Box::new(AllExpect {
                    limits: params.clone().map(|p| p.limit()).collect(),
                    windows: params.clone().map(|p| p.window()).collect(),
                    words: params
                        .clone()
                        .map(|p| p.names().word.unwrap_or(""))
                        .collect(),
                    shadows: params.map(|p| p.flag(SHADOW)).collect(),
                }))
            }
        }
    }

    /// The command for `backend` (checked already).
    pub(crate) fn prepare(&self, backend: Backend) -> Result<Prepared> {
        let cmd = match self {
            Call::One(key, p) => {
                let mut c = start(backend, p.names(), 1)?;
                c.arg(*key);
                p.write_args(&mut c);
                p.write_options(&mut c);
                c
            }
            Call::Many(all) => {
                let mut c = start(backend, &ALL, all.entries.len())?;
                if backend == Backend::Module {
                    c.arg(all.entries.len());
                }
                for (key, _) in &all.entries {
                    c.arg(key.as_slice());
                }
                for (_, policy) in &all.entries {
                    let p = policy.params();
                    p.write_policy_flags(&mut c);
                    c.arg(p.names().word.unwrap_or_default());
                    p.write_args(&mut c);
                    p.write_policy_options(&mut c);
                }
                all.write_options(&mut c);
                c
            }
        };
        Ok(Prepared {
            cmd,
            expect: self.expect(),
            command: self.command(),
        })
    }
}

/// Reads a reply as `expect` says; None if it is not such a reply.
pub(crate) fn parse(expect: &Expect, v: &Value) -> Option<Reply> {
    match expect {
        Expect::Decision { window, shadow, .. } => decision_of(v).map(|d| {
            Reply::Decision(Decision {
                shadow: *shadow,
                ..d.with_window(*window)
            })
        }),
        Expect::All(all) => AllDecision::from_value(v)
            .filter(|a| a.keys.len() == all.windows.len())
            .map(|a| Reply::All(Box::new(a.with_policies(all)))),
        Expect::Throttle { window } => ThrottleDecision::from_value(v).map(|t| {
            Reply::Throttle(ThrottleDecision {
                window: *window,
                ..t
            })
        }),
        Expect::Released => released_of(v).map(Reply::Released),
    }
}

/// Reads the reply of one call, or says what its command answered instead.
pub(crate) fn read(p: &Prepared, v: &Value) -> Result<Reply> {
    parse(&p.expect, v).ok_or_else(|| unexpected(p.command, v))
}

pub(crate) fn unexpected(what: &str, v: &Value) -> Error {
    Error::UnexpectedReply(format!("{what} answered {v:?}"))
}

/// The reply a fail mode gives instead of `err` (None: return the error).
pub(crate) fn fallback(mode: FailMode, expect: &Expect, err: &Error) -> Option<Reply> {
    let allowed = match mode {
        FailMode::Error => return None,
        FailMode::Open => true,
        FailMode::Closed => false,
    };
    let cause: Box<str> = err.to_string().into();
    let decide = |limit: u64, window, shadow| Decision {
        shadow,
        ..Decision::fallback(allowed, limit, window, cause.clone())
    };
    match expect {
        Expect::Decision {
            limit,
            window,
            shadow,
        } => Some(Reply::Decision(decide(*limit, *window, *shadow))),
        Expect::All(all) => {
            let keys: Vec<Decision> = (all.limits.iter().zip(&all.windows))
                .zip(&all.shadows)
                .map(|((l, w), s)| decide(*l, *w, *s))
                .collect();
            // The combined decision reports the enforced key with the smallest
            // remaining. A call of SHADOW policies only is allowed whatever the fail
            // mode, as the server answers it: nothing is enforced.
            let only_shadow = all.shadows.iter().all(|s| *s);
            let combined = AllDecision::reported(&keys)
                .and_then(|i| keys.get(i))
                .map(|d| {
                    if only_shadow {
                        Decision::fallback(true, d.limit, d.window, cause.clone())
                    } else {
                        Decision {
                            shadow: false,
                            ..d.clone()
                        }
                    }
                })
                .unwrap_or_else(|| decide(0, None, false));
            Some(Reply::All(Box::new(AllDecision {
                combined,
                keys,
                words: all.words.clone(),
            })))
        }
        Expect::Throttle { .. } | Expect::Released => None,
    }
}

/// The probes of backend detection.
pub(crate) mod probe {
    use super::*;

    pub fn command_info(name: &str) -> Cmd {
        let mut c = cmd("COMMAND");
        c.arg("INFO").arg(name);
        c
    }

    pub fn function_list() -> Cmd {
        let mut c = cmd("FUNCTION");
        c.arg("LIST").arg("LIBRARYNAME").arg("rl");
        c
    }

    /// `COMMAND INFO name` answers a nil entry for an unknown command.
    pub fn has_command(v: &Value) -> bool {
        match v {
            Value::Array(items) => items.iter().any(|i| !matches!(i, Value::Nil)),
            Value::Map(items) => !items.is_empty(),
            _ => false,
        }
    }

    fn pairs(v: &Value) -> Vec<(&Value, &Value)> {
        match v {
            Value::Map(m) => m.iter().map(|(k, v)| (k, v)).collect(),
            Value::Array(items) => items.chunks_exact(2).map(|c| (&c[0], &c[1])).collect(),
            _ => Vec::new(),
        }
    }

    fn text(v: &Value) -> Option<&str> {
        match v {
            Value::BulkString(b) => std::str::from_utf8(b).ok(),
            Value::SimpleString(s) => Some(s),
            Value::VerbatimString { text, .. } => Some(text),
            _ => None,
        }
    }

    /// The functions of the library `rl` in a `FUNCTION LIST LIBRARYNAME rl` reply,
    /// or None when the library is not there.
    pub fn library_functions(v: &Value) -> Option<Vec<String>> {
        let Value::Array(libraries) = v else {
            return None;
        };
        libraries.iter().find_map(|lib| {
            let fields = pairs(lib);
            let named_rl = fields
                .iter()
                .any(|(k, v)| text(k) == Some("library_name") && text(v) == Some("rl"));
            if !named_rl {
                return None;
            }
            let functions = fields
                .iter()
                .find(|(k, _)| text(k) == Some("functions"))
                .map(|(_, v)| v);
            let names = match functions {
                Some(Value::Array(fs)) | Some(Value::Set(fs)) => fs
                    .iter()
                    .filter_map(|f| {
                        pairs(f)
                            .into_iter()
                            .find(|(k, _)| text(k) == Some("name"))
                            .and_then(|(_, v)| text(v))
                            .map(str::to_owned)
                    })
                    .collect(),
                _ => Vec::new(),
            };
            Some(names)
        })
    }

    /// The library function of a module command (`RL.GCRA` → `rl_gcra`); None for
    /// CL.THROTTLE, which has none.
    pub fn function_of(command: &str) -> Option<String> {
        let upper = command.to_ascii_uppercase();
        upper
            .strip_prefix("RL.")
            .map(|rest| format!("rl_{}", rest.to_ascii_lowercase()))
    }
}

//! Building each call for a backend, and reading its reply: the pure part shared by
//! the sync, async and pipelined APIs.

use std::time::Duration;

use redis::{cmd, Cmd, Value};

use crate::error::{Error, Result};
use crate::policy::{All, Params, Throttle};
use crate::reply::{decision_of, released_of, AllDecision, Decision, ThrottleDecision};

/// Where RL runs on the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// The module: `RL.GCRA key …`.
    Module,
    /// The Functions library `rl`: `FCALL rl_gcra 1 key …`.
    Library,
}

/// What a connection error becomes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FailMode {
    /// Return [`Error::Connection`] (the default).
    #[default]
    Error,
    /// Fail open: an allowed decision with the full limit remaining, marked
    /// [`Decision::fallback`].
    Open,
    /// Fail closed: a rejected decision (retry after 1 s), marked
    /// [`Decision::fallback`].
    Closed,
}

/// A typed reply of any RL call (what a [`Batch`](crate::Batch) answers).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// RL.FIXED, RL.SLIDING, RL.SLIDINGCOUNTER, RL.BUCKET, RL.GCRA, RL.ACQUIRE,
    /// RL.PENALTY, RL.SHARE.
    Decision(Decision),
    /// RL.ALL.
    All(AllDecision),
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
}

/// The reply a call expects, with what the client adds to it.
#[derive(Clone, Debug)]
pub(crate) enum Expect {
    Decision {
        limit: u64,
        window: Option<Duration>,
    },
    All(Box<AllExpect>),
    Throttle,
    Released,
}

/// RL.ALL's limits and windows, key by key (boxed: a batch keeps one Expect per call).
#[derive(Clone, Debug)]
pub(crate) struct AllExpect {
    pub limits: Vec<u64>,
    pub windows: Vec<Option<Duration>>,
}

/// One call, ready to send.
pub(crate) struct Prepared {
    pub cmd: Cmd,
    pub expect: Expect,
    /// The module's command name (for errors).
    pub command: &'static str,
}

fn start(backend: Backend, command: &str, function: &str, numkeys: usize) -> Cmd {
    match backend {
        Backend::Module => cmd(command),
        Backend::Library => {
            let mut c = cmd("FCALL");
            c.arg(function).arg(numkeys);
            c
        }
    }
}

/// A one-key limiter call: RL.FIXED, RL.SLIDING, … RL.SHARE.
pub(crate) fn single<P: Params + ?Sized>(backend: Backend, key: &[u8], p: &P) -> Prepared {
    let names = p.names();
    let mut c = start(backend, names.command, names.function, 1);
    c.arg(key);
    p.write_params(&mut c);
    if let Some(charge) = p.charge() {
        charge.write(&mut c);
    }
    Prepared {
        cmd: c,
        expect: Expect::Decision {
            limit: p.limit(),
            window: p.window(),
        },
        command: names.command,
    }
}

pub(crate) fn all(backend: Backend, all: &All) -> Result<Prepared> {
    let mut c = start(backend, "RL.ALL", "rl_all", all.len());
    if matches!(backend, Backend::Module) {
        c.arg(all.len());
    }
    for (key, _) in &all.entries {
        c.arg(key.as_slice());
    }
    let mut limits = Vec::with_capacity(all.len());
    let mut windows = Vec::with_capacity(all.len());
    for (_, policy) in &all.entries {
        let p = policy.params();
        if p.charge().is_some() {
            return Err(Error::BadArgument(format!(
                "RL.ALL takes one COST, REFUND or DEBIT for every key: set it on the call (All::cost, refund, debit), not on its {} policy",
                p.names().word
            )));
        }
        c.arg(p.names().word);
        p.write_params(&mut c);
        limits.push(p.limit());
        windows.push(p.window());
    }
    if let Some(charge) = all.charge() {
        charge.write(&mut c);
    }
    Ok(Prepared {
        cmd: c,
        expect: Expect::All(Box::new(AllExpect { limits, windows })),
        command: "RL.ALL",
    })
}

pub(crate) fn throttle(backend: Backend, key: &[u8], t: &Throttle) -> Result<Prepared> {
    if backend == Backend::Library {
        return Err(Error::Unsupported(
            "CL.THROTTLE has no Functions-library equivalent: on the library call gcra with capacity max_burst + 1, tokens count, the same period and cost quantity (RL's reply) on the same key".into(),
        ));
    }
    let mut c = cmd("CL.THROTTLE");
    c.arg(key);
    t.write_fields(&mut c);
    Ok(Prepared {
        cmd: c,
        expect: Expect::Throttle,
        command: "CL.THROTTLE",
    })
}

pub(crate) fn release(backend: Backend, key: &[u8], id: &[u8]) -> Prepared {
    let mut c = start(backend, "RL.RELEASE", "rl_release", 1);
    c.arg(key).arg(id);
    Prepared {
        cmd: c,
        expect: Expect::Released,
        command: "RL.RELEASE",
    }
}

/// Reads a reply as `expect` says; None if it is not such a reply.
pub(crate) fn parse(expect: &Expect, v: &Value) -> Option<Reply> {
    match expect {
        Expect::Decision { window, .. } => {
            decision_of(v).map(|d| Reply::Decision(d.with_window(*window)))
        }
        Expect::All(all) => AllDecision::from_value(v)
            .filter(|a| a.keys.len() == all.windows.len())
            .map(|a| Reply::All(a.with_windows(&all.windows))),
        Expect::Throttle => ThrottleDecision::from_value(v).map(Reply::Throttle),
        Expect::Released => released_of(v).map(Reply::Released),
    }
}

/// Reads the reply of one call, or says what `command` answered instead.
pub(crate) fn parse_reply(p: &Prepared, v: &Value) -> Result<Reply> {
    parse(&p.expect, v).ok_or_else(|| unexpected(p.command, v))
}

pub(crate) fn unexpected(what: &str, v: &Value) -> Error {
    Error::UnexpectedReply(format!("{what} answered {v:?}"))
}

/// The reply a fail mode gives instead of a connection error (None: return the error).
pub(crate) fn fallback(mode: FailMode, expect: &Expect) -> Option<Reply> {
    let allowed = match mode {
        FailMode::Error => return None,
        FailMode::Open => true,
        FailMode::Closed => false,
    };
    match expect {
        Expect::Decision { limit, window } => Some(Reply::Decision(Decision::fallback(
            allowed, *limit, *window,
        ))),
        Expect::All(all) => {
            let keys: Vec<Decision> = all
                .limits
                .iter()
                .zip(&all.windows)
                .map(|(l, w)| Decision::fallback(allowed, *l, *w))
                .collect();
            // The combined decision reports the key with the smallest remaining.
            let first = keys
                .iter()
                .min_by_key(|d| d.remaining)
                .cloned()
                .unwrap_or_else(|| Decision::fallback(allowed, 0, None));
            Some(Reply::All(AllDecision {
                combined: first,
                keys,
            }))
        }
        Expect::Throttle | Expect::Released => None,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Acquire, Bucket, Fixed, Gcra, Penalty, Share, Sliding, SlidingCounter};

    fn args(c: &Cmd) -> Vec<String> {
        c.args_iter()
            .map(|a| match a {
                redis::Arg::Simple(b) => String::from_utf8_lossy(b).into_owned(),
                redis::Arg::Cursor => "<cursor>".into(),
            })
            .collect()
    }

    #[test]
    fn module_and_library_calls() {
        let g = Gcra::new(5, 1, "1s").cost(2).delay("3s");
        assert_eq!(
            args(&single(Backend::Module, b"k", &g).cmd),
            ["RL.GCRA", "k", "5", "1", "1000ms", "DELAY", "3000ms", "COST", "2"]
        );
        assert_eq!(
            args(&single(Backend::Library, b"k", &g).cmd),
            ["FCALL", "rl_gcra", "1", "k", "5", "1", "1000ms", "DELAY", "3000ms", "COST", "2"]
        );
        let cases: Vec<(Box<dyn Params>, Vec<&str>)> = vec![
            (
                Box::new(Fixed::new(10, "1m")),
                vec!["RL.FIXED", "k", "10", "60000ms"],
            ),
            (
                Box::new(Fixed::new(10, "1m").refund(3)),
                vec!["RL.FIXED", "k", "10", "60000ms", "REFUND", "3"],
            ),
            (
                Box::new(Sliding::new(10, "5s").cost(0)),
                vec!["RL.SLIDING", "k", "10", "5000ms", "COST", "0"],
            ),
            (
                Box::new(SlidingCounter::new(10, "1h").debit(4)),
                vec!["RL.SLIDINGCOUNTER", "k", "10", "3600000ms", "DEBIT", "4"],
            ),
            (
                Box::new(Bucket::new(20, 100, "1m")),
                vec!["RL.BUCKET", "k", "20", "100", "60000ms"],
            ),
            (
                Box::new(Acquire::new(2, "10s", "job-1")),
                vec!["RL.ACQUIRE", "k", "2", "10000ms", "job-1"],
            ),
            (
                Box::new(Penalty::new(3, "1m", "1m", "1h").cost(0)),
                vec![
                    "RL.PENALTY",
                    "k",
                    "3",
                    "60000ms",
                    "60000ms",
                    "3600000ms",
                    "COST",
                    "0",
                ],
            ),
            (
                Box::new(Share::new("t1", 2, 10, 1, "1s")),
                vec!["RL.SHARE", "k", "t1", "2", "10", "1", "1000ms"],
            ),
        ];
        for (p, want) in cases {
            assert_eq!(args(&single(Backend::Module, b"k", p.as_ref()).cmd), want);
        }
    }

    #[test]
    fn rl_all() {
        let a = All::new()
            .key("a", Gcra::new(5, 1, "1s").delay("2s"))
            .key("b", Fixed::new(3, "1m"))
            .cost(2);
        assert_eq!(
            args(&all(Backend::Module, &a).unwrap().cmd),
            [
                "RL.ALL", "2", "a", "b", "GCRA", "5", "1", "1000ms", "DELAY", "2000ms", "FIXED",
                "3", "60000ms", "COST", "2"
            ]
        );
        assert_eq!(
            args(&all(Backend::Library, &a).unwrap().cmd),
            [
                "FCALL", "rl_all", "2", "a", "b", "GCRA", "5", "1", "1000ms", "DELAY", "2000ms",
                "FIXED", "3", "60000ms", "COST", "2"
            ]
        );
        let charged = All::new().key("a", Fixed::new(3, "1m").cost(2));
        assert!(
            matches!(all(Backend::Module, &charged), Err(Error::BadArgument(m)) if m.contains("FIXED"))
        );
    }

    #[test]
    fn throttle_and_release() {
        let t = Throttle::new(0, 1, "2").quantity(3);
        assert_eq!(
            args(&throttle(Backend::Module, b"c", &t).unwrap().cmd),
            ["CL.THROTTLE", "c", "0", "1", "2000ms", "3"]
        );
        assert!(matches!(
            throttle(Backend::Library, b"c", &t),
            Err(Error::Unsupported(_))
        ));
        assert_eq!(
            args(&release(Backend::Module, b"k", b"id").cmd),
            ["RL.RELEASE", "k", "id"]
        );
        assert_eq!(
            args(&release(Backend::Library, b"k", b"id").cmd),
            ["FCALL", "rl_release", "1", "k", "id"]
        );
    }

    #[test]
    fn unexpected_replies_are_errors() {
        let expect = Expect::Decision {
            limit: 1,
            window: None,
        };
        assert!(parse(&expect, &Value::Okay).is_none());
        let p = single(Backend::Module, b"k", &Fixed::new(1, "1s"));
        assert!(
            matches!(parse_reply(&p, &Value::Okay), Err(Error::UnexpectedReply(m)) if m.contains("RL.FIXED"))
        );
        assert!(parse(&Expect::Released, &Value::Int(2)).is_none());
        // RL.ALL: as many per-key decisions as keys.
        let two = Expect::All(Box::new(AllExpect {
            limits: vec![1, 1],
            windows: vec![None, None],
        }));
        let decision = Value::Array([1, 1, 0, 0, 0].map(Value::Int).to_vec());
        let one_key = Value::Array(vec![decision.clone(), decision]);
        assert!(parse(&two, &one_key).is_none());
    }

    #[test]
    fn fallbacks() {
        let e = Expect::Decision {
            limit: 7,
            window: None,
        };
        assert_eq!(fallback(FailMode::Error, &e), None);
        let open = fallback(FailMode::Open, &e).unwrap();
        assert!(open.allowed());
        assert_eq!(open.decision().unwrap().remaining, 7);
        assert!(!fallback(FailMode::Closed, &e).unwrap().allowed());
        let a = Expect::All(Box::new(AllExpect {
            limits: vec![2, 9],
            windows: vec![None, None],
        }));
        let Some(Reply::All(all)) = fallback(FailMode::Open, &a) else {
            panic!()
        };
        assert_eq!((all.combined.limit, all.keys.len()), (2, 2));
        assert_eq!(fallback(FailMode::Open, &Expect::Released), None);
    }

    #[test]
    fn probes() {
        assert!(!probe::has_command(&Value::Array(vec![Value::Nil])));
        assert!(probe::has_command(&Value::Array(vec![Value::Array(vec![
            Value::BulkString(b"rl.gcra".to_vec())
        ])])));
        assert_eq!(probe::library_functions(&Value::Array(vec![])), None);
        let b = |s: &str| Value::BulkString(s.as_bytes().to_vec());
        let lib = Value::Array(vec![Value::Array(vec![
            b("library_name"),
            b("rl"),
            b("engine"),
            b("LUA"),
            b("functions"),
            Value::Array(vec![
                Value::Array(vec![b("name"), b("rl_fixed"), b("description"), Value::Nil]),
                Value::Array(vec![b("name"), b("rl_gcra")]),
            ]),
        ])]);
        assert_eq!(
            probe::library_functions(&lib),
            Some(vec!["rl_fixed".to_string(), "rl_gcra".to_string()])
        );
        let other = Value::Array(vec![Value::Array(vec![b("library_name"), b("rlx")])]);
        assert_eq!(probe::library_functions(&other), None);
        // RESP3: maps.
        let resp3 = Value::Array(vec![Value::Map(vec![
            (b("library_name"), b("rl")),
            (
                b("functions"),
                Value::Array(vec![Value::Map(vec![(b("name"), b("rl_all"))])]),
            ),
        ])]);
        assert_eq!(
            probe::library_functions(&resp3),
            Some(vec!["rl_all".to_string()])
        );
        assert_eq!(
            probe::function_of("RL.SLIDINGCOUNTER").as_deref(),
            Some("rl_slidingcounter")
        );
        assert_eq!(probe::function_of("rl.share").as_deref(), Some("rl_share"));
        assert_eq!(probe::function_of("CL.THROTTLE"), None);
    }
}

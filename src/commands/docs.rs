//! COMMAND INFO / COMMAND DOCS metadata: arity, key spec, summary and the argument
//! tree redis-cli uses for hints, described from a command's spec (the server
//! sets it: `server::command_info`; the crate's `#[command]` macro also needs
//! 7.2-only calls, so it is not used), and the command's ACL categories.

use std::ffi::{CStr, CString};

use crate::server::command_info::{ArgDoc, ArgType, CommandDoc, DocError, KeySearch};
use crate::server::Context;
use rl_core::options::Opt;
use rl_core::table::{Arg, ArgKind, Command, Keys};

/// The version of this module, shown in COMMAND DOCS `since`.
pub const SINCE: &CStr = c"0.1.0";

pub fn describe(ctx: Context, spec: &Command) -> Result<(), String> {
    ctx.set_command_info(spec.name, &doc(spec))
        .map_err(|e| match e {
            DocError::NotFound => format!("cannot find {} after registering it", spec.name_str()),
            DocError::Refused => format!("cannot describe {}", spec.name_str()),
        })
}

/// What COMMAND DOCS shows of the command `spec` describes.
fn doc(spec: &Command) -> CommandDoc {
    let mut args: Vec<ArgDoc> = spec
        .args
        .iter()
        .map(|a| match a.kind {
            ArgKind::Policies => {
                let blocks = rl_core::commands::policies()
                    .map(|p| {
                        // (A policy's SHADOW comes before its word, which a block's
                        // token cannot show: docs/commands.md#shadow says it.)
                        let mut subargs: Vec<_> = p.params().iter().map(positional).collect();
                        if p.delay() {
                            subargs.push(delay_option());
                        }
                        subargs.extend(calendar_options(p));
                        let word = p.policy_token();
                        ArgDoc {
                            token: Some(word),
                            ..ArgDoc::new(word, ArgType::Block(subargs))
                        }
                    })
                    .collect();
                ArgDoc {
                    multiple: true,
                    ..ArgDoc::new(a.name, ArgType::OneOf(blocks))
                }
            }
            _ => positional(a),
        })
        .collect();
    // [COST n | REFUND n | DEBIT n] as the row takes them (one alone: its token),
    // or CL.THROTTLE's positional quantity.
    let amounts: Vec<ArgDoc> = spec
        .options
        .iter()
        .filter(|o| o.is_amount())
        .map(|o| {
            let (token, name) = o.doc();
            ArgDoc {
                token: Some(token),
                ..ArgDoc::new(name, ArgType::Integer)
            }
        })
        .collect();
    let amount = match (spec.quantity, amounts.len()) {
        (Some(name), _) => Some(ArgDoc::new(name, ArgType::Integer)),
        (None, 0) => None,
        (None, 1) => amounts.into_iter().next(),
        (None, _) => Some(ArgDoc::new(c"amount", ArgType::OneOf(amounts))),
    };
    if let Some(amount) = amount {
        args.push(ArgDoc {
            optional: true,
            ..amount
        });
    }
    if spec.takes_option(Opt::Shadow) {
        args.push(shadow_option());
    }
    if spec.delay() {
        args.push(delay_option());
    }
    args.extend(calendar_options(spec));
    CommandDoc {
        summary: spec.summary,
        complexity: spec.complexity,
        since: SINCE,
        // Counting the command name, at least this many (negative). A command without
        // options (RL.ACQUIRE, RL.RELEASE) checks for more itself, to name an
        // option given to it (`dispatch`).
        arity: spec.arity(),
        keys: match spec.keys {
            Keys::First => KeySearch::First,
            Keys::Counted => KeySearch::Counted,
        },
        args,
    }
}

/// `[SHADOW]`: a limiter's flag.
fn shadow_option() -> ArgDoc {
    let (token, name) = Opt::Shadow.doc();
    ArgDoc {
        token: Some(token),
        optional: true,
        ..ArgDoc::new(name, ArgType::PureToken)
    }
}

/// `[DELAY max]`: RL.GCRA's option (and its RL.ALL policy's), a duration.
fn delay_option() -> ArgDoc {
    ArgDoc {
        token: Some(c"DELAY"),
        optional: true,
        ..ArgDoc::new(c"delay", ArgType::String)
    }
}

/// `[EVERY every] [ON anchor] [AT time] [TZ zone]`: RL.QUOTA's calendar (and its
/// RL.ALL policy's), when the row takes it.
fn calendar_options(spec: &Command) -> Vec<ArgDoc> {
    let calendar = spec.options.iter().filter(|o| o.is_calendar());
    calendar
        .map(|o| {
            let (token, name) = o.doc();
            ArgDoc {
                token: Some(token),
                optional: true,
                ..ArgDoc::new(name, ArgType::String)
            }
        })
        .collect()
}

/// A positional argument: a key (of the one key spec), an integer or a duration.
fn positional(a: &Arg) -> ArgDoc {
    let kind = match a.kind {
        ArgKind::Key | ArgKind::Keys => ArgType::Key,
        ArgKind::Integer { .. } => ArgType::Integer,
        ArgKind::Duration | ArgKind::Text { .. } | ArgKind::Word { .. } | ArgKind::Policies => {
            ArgType::String
        }
    };
    ArgDoc {
        multiple: matches!(a.kind, ArgKind::Keys),
        ..ArgDoc::new(a.name, kind)
    }
}

/// Puts the command in ACL categories where the server supports module categories
/// (Redis 7.2+): `@write`, `@fast` for the O(1) commands, and `@ratelimit`. On 7.0
/// module commands belong to no category; users list them by name (docs/operations.md, the ACL recipe).
/// A failure is logged, never fatal: the command works without categories.
pub fn categorize(ctx: Context, spec: &Command, ratelimit: bool) {
    let fast = spec
        .flags
        .to_bytes()
        .split(|&b| b == b' ')
        .any(|f| f == b"fast");
    let base = if fast { "write fast" } else { "write" };
    categorize_as(ctx, spec.name, base, ratelimit);
}

/// Puts the command `name` in the ACL categories `base` (`write fast`, RL.TOP's
/// `read`), and `@ratelimit` where the load created it.
pub fn categorize_as(ctx: Context, name: &CStr, base: &str, ratelimit: bool) {
    let categories = if ratelimit {
        format!("{base} ratelimit")
    } else {
        base.to_string()
    };
    let refused = CString::new(categories)
        .map_or(Some(false), |c| ctx.set_acl_categories(name, &c))
        == Some(false);
    if refused {
        ctx.log_warning(&format!(
            "rl: could not set ACL categories of {}",
            name.to_string_lossy()
        ));
    }
}

//! `RL.TOP [COUNT k] [SHADOW]` and `RL.TOP RESET`: the keys rejected most on this
//! node in the last minute or so (`crate::top`), most first, each as
//! `[key, rejected, ms since its last rejection]`; RESET forgets them.
//!
//! Not a row of the command table: the table describes commands on keys (each
//! decides a limit, is counted in INFO, run by the in-memory model and the
//! library, and listed in `commands.json` for the clients), and RL.TOP has no key,
//! no limit and only node-wide state. It registers beside them with the same
//! COMMAND DOCS and ACL machinery: readonly, no key, allowed in scripts, ACL
//! `@read` (and `@ratelimit`).

use std::ffi::CStr;

use super::docs;
use super::framework::{guarded, Inline};
use crate::server::command_info::{ArgDoc, ArgType, CommandDoc, KeySearch};
use crate::server::{self, Argv, Context};
use crate::top;
use rl_core::top::{parse, Request};

const NAME: &CStr = c"RL.TOP";

pub struct Top;

impl server::Entry for Top {
    fn call(ctx: Context, argv: Option<Argv<'_>>) {
        guarded(ctx, || "RL.TOP", || run(ctx, argv));
    }
}

fn run(ctx: Context, argv: Option<Argv>) {
    let Some(argv) = argv else {
        ctx.reply_wrong_arity();
        return;
    };
    let mut inline = Inline::default();
    match parse(inline.args_from(&argv, 1)) {
        Err(e) => ctx.reply_error(&e),
        Ok(Request::Reset) => {
            top::reset();
            ctx.reply_ok();
        }
        Ok(Request::Report { count, shadow }) => {
            let now = server::now_ms();
            let ranked = top::report(shadow, now, count);
            ctx.reply_array(ranked.len());
            for r in &ranked {
                ctx.reply_array(3);
                ctx.reply_bulk(&r.key);
                ctx.reply_integer(i64::try_from(r.rejected).unwrap_or(i64::MAX));
                ctx.reply_integer(r.since(now));
            }
        }
    }
}

/// Registers RL.TOP, its documentation and its ACL categories.
pub fn register(ctx: Context, ratelimit: bool) -> Result<(), String> {
    if !ctx.create_command::<Top>(NAME, c"readonly", (0, 0, 0)) {
        return Err("cannot register RL.TOP".into());
    }
    ctx.set_command_info(NAME, &doc())
        .map_err(|_| "cannot describe RL.TOP".to_string())?;
    docs::categorize_as(ctx, NAME, "read", ratelimit);
    Ok(())
}

fn doc() -> CommandDoc {
    let option = |token: &'static CStr, name: &'static CStr, kind| ArgDoc {
        token: Some(token),
        optional: true,
        ..ArgDoc::new(name, kind)
    };
    CommandDoc {
        summary: c"The keys with the most rejected calls on this node in the last minute or so, most first",
        complexity: c"O(S log S) with S the rl.top-size entries held",
        since: c"0.3.0",
        arity: -1,
        keys: KeySearch::None,
        args: vec![
            option(c"COUNT", c"count", ArgType::Integer),
            option(c"SHADOW", c"shadow", ArgType::PureToken),
            option(c"RESET", c"reset", ArgType::PureToken),
        ],
    }
}

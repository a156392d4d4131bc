//! Every command the module registers, and what registering one means: the
//! command itself, its documentation, its ACL categories. INFO's rows come from
//! the same list.

use super::all::All;
use super::docs;
use super::framework::{Counted, Handler, Single};
use crate::server::filter::ResetStat;
use crate::server::info::Section;
use crate::server::{Context, InfoContext};
use crate::stats::{self, Counters};
use rl_core::commands;
use rl_core::options::Opt;
use rl_core::table::{Command as Row, Keys};

/// One row of [`COMMANDS`]: a command as the module registers it.
pub struct Registered {
    pub command: &'static Row,
    pub stats: &'static Counters,
    register: fn(Context, bool) -> Result<(), String>,
}

impl Registered {
    const fn of<H: Handler>() -> Registered {
        Registered {
            command: H::COMMAND,
            stats: H::STATS,
            register: register::<H>,
        }
    }
}

/// The registry from the core's list: each single-key command's counters and
/// handler ([`Single`]), then RL.ALL's own handler.
macro_rules! registry {
    (
        policies: [$($policy:ident),*],
        singles: [$($single:ident),*],
        others: [$($other:ident($row:ident) => $method:ident),*],
    ) => {
        $(impl Counted for commands::$policy {
            const STATS: &'static Counters = {
                static COUNTERS: Counters = Counters::new();
                &COUNTERS
            };
        })*
        $(impl Counted for commands::$single {
            const STATS: &'static Counters = {
                static COUNTERS: Counters = Counters::new();
                &COUNTERS
            };
        })*

        /// The handler of every command of the core's list: registration and INFO
        /// iterate this list.
        pub static COMMANDS: &[Registered] = &[
            $(Registered::of::<Single<commands::$policy>>(),)*
            $(Registered::of::<Single<commands::$single>>(),)*
            $(Registered::of::<$other>(),)*
        ];
    };
}

rl_core::each_command!(registry);

/// The counters of the command `row` is the row of (an RL.ALL policy's).
pub fn counters_of(row: &Row) -> Option<&'static Counters> {
    COMMANDS
        .iter()
        .find(|c| c.command.name == row.name)
        .map(|c| c.stats)
}

/// Registers every command in [`COMMANDS`], then RL.TOP (its sketches emptied).
pub fn register_all(ctx: Context, ratelimit: bool) -> Result<(), String> {
    COMMANDS.iter().try_for_each(|c| {
        c.stats.reset();
        (c.register)(ctx, ratelimit)
    })?;
    crate::top::reset();
    super::top::register(ctx, ratelimit)
}

/// Registers one command with Redis, its key position, its documentation and, on
/// servers that have them (7.2+), its ACL categories. `ratelimit` is true when the
/// module's own `@ratelimit` category was created.
pub fn register<H: Handler>(ctx: Context, ratelimit: bool) -> Result<(), String> {
    let spec = H::COMMAND;
    // Counted keys have no (first, last, step) form: the key spec COMMAND INFO
    // shows (set by docs::describe) is how the server finds them.
    let keys = match spec.keys {
        Keys::First => (1, 1, 1),
        Keys::Counted => (0, 0, 0),
    };
    if !ctx.create_command::<H>(spec.name, spec.flags, keys) {
        if spec.optional {
            ctx.log_warning(&format!(
                "rl: {} is already registered (by redis-cell?): loading without RL's",
                spec.name_str()
            ));
            return Ok(());
        }
        return Err(format!("cannot register {}", spec.name_str()));
    }
    docs::describe(ctx, spec)?;
    docs::categorize(ctx, spec, ratelimit);
    Ok(())
}

/// Whether a command is counted as shadow: it takes SHADOW alone or as an
/// RL.ALL policy.
fn takes_shadow(row: &Row) -> bool {
    row.takes_option(Opt::Shadow) || row.policy.is_some()
}

/// The `# rl` section of INFO, one row of counters per command.
pub struct Info;

impl Section for Info {
    fn write(ctx: InfoContext) {
        // In the list's order, as registered.
        let rows = COMMANDS
            .iter()
            .map(|c| (c.command.name_str(), c.stats, takes_shadow(c.command)));
        stats::section(ctx, rows);
    }
}

/// `CONFIG RESETSTAT` zeroes the section's counters, as it does the server's own
/// (RL.TOP, like SLOWLOG, keeps its keys: `RL.TOP RESET` clears it).
impl ResetStat for Info {
    fn reset() {
        COMMANDS.iter().for_each(|c| c.stats.reset());
    }
}

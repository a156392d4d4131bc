//! Per-command counters since the module loaded, shown by `INFO rl`.
//!
//! Each command owns one [`Counters`] (see the commands' registry, the one list every
//! per-command table derives from), so adding a command cannot leave a table short.
//! Relaxed atomics: the counters are only ever touched on the main thread, and a
//! reader needs no ordering with anything else.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::server::InfoContext;

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    Rejected,
    Error,
}

/// The calls of one command, by how they ended, and the allowed ones that left
/// at most a tenth of the limit.
pub struct Counters {
    allowed: AtomicU64,
    rejected: AtomicU64,
    errors: AtomicU64,
    near_limit: AtomicU64,
}

impl Counters {
    pub const fn new() -> Self {
        Counters {
            allowed: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            near_limit: AtomicU64::new(0),
        }
    }

    pub fn record(&self, outcome: Verdict) {
        let counter = match outcome {
            Verdict::Allowed => &self.allowed,
            Verdict::Rejected => &self.rejected,
            Verdict::Error => &self.errors,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// An allowed call (or RL.ALL policy) that left at most a tenth of its limit.
    pub fn near_limit(&self) {
        self.near_limit.fetch_add(1, Ordering::Relaxed);
    }

    /// Back to zero, at each load: the counters count "since the module loaded" even
    /// where an unload leaves the module's memory mapped (musl).
    pub fn reset(&self) {
        let counters = [
            &self.allowed,
            &self.rejected,
            &self.errors,
            &self.near_limit,
        ];
        for counter in counters {
            counter.store(0, Ordering::Relaxed);
        }
    }

    fn fields(&self) -> [(&'static str, u64); 4] {
        [
            ("allowed", self.allowed.load(Ordering::Relaxed)),
            ("rejected", self.rejected.load(Ordering::Relaxed)),
            ("errors", self.errors.load(Ordering::Relaxed)),
            ("near_limit", self.near_limit.load(Ordering::Relaxed)),
        ]
    }
}

/// The INFO field prefix of a command: `RL.FIXED` → `fixed`.
fn prefix(command: &str) -> String {
    let short = command.rsplit('.').next().unwrap_or(command);
    short.to_ascii_lowercase()
}

/// Which build is loaded, the first fields of `INFO rl`: `rl_version` (Cargo.toml's),
/// `rl_git_commit` (12 hex digits, or "unknown" when built outside git) and
/// `rl_target` (the target triple), all set at compile time (build.rs).
pub const BUILD: [(&str, &str); 3] = [
    ("version", env!("CARGO_PKG_VERSION")),
    ("git_commit", env!("RL_GIT_COMMIT")),
    ("target", env!("RL_TARGET")),
];

/// Writes the `# rl` section of INFO: the [`BUILD`] fields, then
/// `rl_<command>_<allowed|rejected|errors|near_limit>` fields, one row per `(command name,
/// counters)`. The registry hands over the rows, so this layer knows no command.
pub fn section<'a>(ctx: InfoContext, rows: impl Iterator<Item = (&'a str, &'a Counters)>) {
    if !ctx.begin_section() {
        return;
    }
    for (name, value) in BUILD {
        ctx.field_str(name, value);
    }
    // RL.QUOTA's time zone rules: the version of the tz database compiled in, so
    // an operator can check every node agrees.
    ctx.field_str("tzdb_version", rl_core::calendar::tzdb_version());
    for (command, counters) in rows {
        let prefix = prefix(command);
        for (name, value) in counters.fields() {
            ctx.field(&format!("{prefix}_{name}"), value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_fields_are_named_after_the_command() {
        assert_eq!(prefix("RL.FIXED"), "fixed");
        assert_eq!(prefix("RL.SLIDINGCOUNTER"), "slidingcounter");
        assert_eq!(prefix("CL.THROTTLE"), "throttle");
        let c = Counters::new();
        c.record(Verdict::Rejected);
        c.record(Verdict::Rejected);
        c.record(Verdict::Error);
        c.near_limit();
        assert_eq!(
            c.fields(),
            [
                ("allowed", 0),
                ("rejected", 2),
                ("errors", 1),
                ("near_limit", 1)
            ]
        );
        c.reset();
        assert!(c.fields().iter().all(|(_, v)| *v == 0));
    }
}

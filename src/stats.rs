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

impl Verdict {
    /// A decided call's verdict.
    pub fn of(allowed: bool) -> Verdict {
        if allowed {
            Verdict::Allowed
        } else {
            Verdict::Rejected
        }
    }
}

/// The calls of one command, by how they ended, and the allowed ones that left
/// at most a tenth of the limit; SHADOW calls (and SHADOW RL.ALL policies) apart,
/// by what they would have answered.
pub struct Counters {
    allowed: AtomicU64,
    rejected: AtomicU64,
    errors: AtomicU64,
    near_limit: AtomicU64,
    shadow_allowed: AtomicU64,
    shadow_rejected: AtomicU64,
}

impl Counters {
    pub const fn new() -> Self {
        Counters {
            allowed: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            near_limit: AtomicU64::new(0),
            shadow_allowed: AtomicU64::new(0),
            shadow_rejected: AtomicU64::new(0),
        }
    }

    /// Counts a SHADOW call (or a SHADOW RL.ALL policy) that would have been
    /// allowed or rejected: a trial, not in `allowed` / `rejected`.
    pub fn record_shadow(&self, allowed: bool) {
        let counter = if allowed {
            &self.shadow_allowed
        } else {
            &self.shadow_rejected
        };
        counter.fetch_add(1, Ordering::Relaxed);
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

    /// Back to zero: at each load (the counters count "since the module loaded" even
    /// where an unload leaves the module's memory mapped, as on musl), and at
    /// `CONFIG RESETSTAT`.
    pub fn reset(&self) {
        let counters = [
            &self.allowed,
            &self.rejected,
            &self.errors,
            &self.near_limit,
            &self.shadow_allowed,
            &self.shadow_rejected,
        ];
        for counter in counters {
            counter.store(0, Ordering::Relaxed);
        }
    }

    /// Its INFO fields; the shadow ones only for a command that takes SHADOW.
    fn fields(&self, shadow: bool) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        let shadows = [
            ("shadow_allowed", &self.shadow_allowed),
            ("shadow_rejected", &self.shadow_rejected),
        ];
        [
            ("allowed", &self.allowed),
            ("rejected", &self.rejected),
            ("errors", &self.errors),
            ("near_limit", &self.near_limit),
        ]
        .into_iter()
        .chain(shadows.into_iter().filter(move |_| shadow))
        .map(|(name, counter)| (name, counter.load(Ordering::Relaxed)))
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
/// `rl_<command>_<allowed|rejected|errors|near_limit>` fields (and
/// `_<shadow_allowed|shadow_rejected>` where the row says it takes SHADOW), one
/// row per `(command name, counters, takes SHADOW)`. The registry hands over the
/// rows, so this layer knows no command.
pub fn section<'a>(ctx: InfoContext, rows: impl Iterator<Item = (&'a str, &'a Counters, bool)>) {
    if !ctx.begin_section() {
        return;
    }
    for (name, value) in BUILD {
        ctx.field_str(name, value);
    }
    // RL.QUOTA's time zone rules: the version of the tz database compiled in, so
    // an operator can check every node agrees.
    ctx.field_str("tzdb_version", rl_core::calendar::tzdb_version());
    for (command, counters, shadow) in rows {
        let prefix = prefix(command);
        for (name, value) in counters.fields(shadow) {
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
        c.record_shadow(false);
        let fields = |shadow| c.fields(shadow).collect::<Vec<_>>();
        assert_eq!(
            fields(false),
            [
                ("allowed", 0),
                ("rejected", 2),
                ("errors", 1),
                ("near_limit", 1)
            ]
        );
        assert_eq!(
            fields(true)[4..],
            [("shadow_allowed", 0), ("shadow_rejected", 1)]
        );
        c.reset();
        assert!(fields(true).iter().all(|(_, v)| *v == 0));
    }
}

//! Per-command counters since the module loaded, shown by `INFO rl`.
//!
//! Each command owns one [`Counters`] (see `commands::COMMANDS`, the one list every
//! per-command table derives from), so adding a command cannot leave a table short.
//! Relaxed atomics: the counters are only ever touched on the main thread, and a
//! reader needs no ordering with anything else.

use std::os::raw::c_int;
use std::panic::catch_unwind;
use std::sync::atomic::{AtomicU64, Ordering};

use redis_module::raw::{self, RedisModuleInfoCtx};

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    Rejected,
    Error,
}

/// The calls of one command, by how they ended.
pub struct Counters {
    allowed: AtomicU64,
    rejected: AtomicU64,
    errors: AtomicU64,
}

impl Counters {
    pub const fn new() -> Self {
        Counters {
            allowed: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            errors: AtomicU64::new(0),
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

    fn fields(&self) -> [(&'static str, u64); 3] {
        [
            ("allowed", self.allowed.load(Ordering::Relaxed)),
            ("rejected", self.rejected.load(Ordering::Relaxed)),
            ("errors", self.errors.load(Ordering::Relaxed)),
        ]
    }
}

/// The INFO field prefix of a command: `RL.FIXED` → `fixed`.
fn prefix(command: &str) -> String {
    let short = command.rsplit('.').next().unwrap_or(command);
    short.to_ascii_lowercase()
}

/// The `# rl` section of INFO: `rl_<command>_<allowed|rejected|errors>` fields.
/// Called by the server (outside any command), so it too must never unwind.
pub extern "C" fn info(ctx: *mut RedisModuleInfoCtx, _for_crash_report: c_int) {
    let _ = catch_unwind(|| {
        if raw::add_info_section(ctx, None) != raw::Status::Ok {
            return;
        }
        for command in crate::commands::COMMANDS {
            let prefix = prefix(command.spec.name_str());
            for (name, value) in command.stats.fields() {
                raw::add_info_field_unsigned_long_long(ctx, &format!("{prefix}_{name}"), value);
            }
        }
    });
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
        assert_eq!(c.fields(), [("allowed", 0), ("rejected", 2), ("errors", 1)]);
    }
}

//! Per-command counters since the module loaded, shown by `INFO rl`.
//!
//! Relaxed atomics: the counters are only ever touched on the main thread, and a
//! reader needs no ordering with anything else.

use std::sync::atomic::{AtomicU64, Ordering};

use std::os::raw::c_int;
use std::panic::catch_unwind;

use redis_module::raw::{self, RedisModuleInfoCtx};

/// Which command a counter belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandId {
    Fixed,
    Sliding,
    Bucket,
}

impl CommandId {
    const ALL: [CommandId; 3] = [CommandId::Fixed, CommandId::Sliding, CommandId::Bucket];

    fn prefix(self) -> &'static str {
        match self {
            CommandId::Fixed => "fixed",
            CommandId::Sliding => "sliding",
            CommandId::Bucket => "bucket",
        }
    }
}

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Allowed,
    Rejected,
    Error,
}

#[derive(Default)]
struct Counters {
    allowed: AtomicU64,
    rejected: AtomicU64,
    errors: AtomicU64,
}

static COUNTERS: [Counters; 3] = [
    Counters {
        allowed: AtomicU64::new(0),
        rejected: AtomicU64::new(0),
        errors: AtomicU64::new(0),
    },
    Counters {
        allowed: AtomicU64::new(0),
        rejected: AtomicU64::new(0),
        errors: AtomicU64::new(0),
    },
    Counters {
        allowed: AtomicU64::new(0),
        rejected: AtomicU64::new(0),
        errors: AtomicU64::new(0),
    },
];

pub fn record(id: CommandId, outcome: Outcome) {
    let c = &COUNTERS[id as usize];
    let counter = match outcome {
        Outcome::Allowed => &c.allowed,
        Outcome::Rejected => &c.rejected,
        Outcome::Error => &c.errors,
    };
    counter.fetch_add(1, Ordering::Relaxed);
}

/// The `# rl` section of INFO: `rl_<command>_<allowed|rejected|errors>` fields.
/// Called by the server (outside any command), so it too must never unwind.
pub extern "C" fn info(ctx: *mut RedisModuleInfoCtx, _for_crash_report: c_int) {
    let _ = catch_unwind(|| {
        if raw::add_info_section(ctx, None) != raw::Status::Ok {
            return;
        }
        for id in CommandId::ALL {
            let c = &COUNTERS[id as usize];
            for (name, value) in [
                ("allowed", &c.allowed),
                ("rejected", &c.rejected),
                ("errors", &c.errors),
            ] {
                let field = format!("{}_{name}", id.prefix());
                raw::add_info_field_unsigned_long_long(ctx, &field, value.load(Ordering::Relaxed));
            }
        }
    });
}

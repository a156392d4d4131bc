//! The module's INFO section: registering the callback the server calls, and
//! writing the section's fields from it.

use std::os::raw::c_int;
use std::panic::catch_unwind;

use redis_module::raw::{self, RedisModuleInfoCtx};

use super::context::{Context, InfoContext};

/// What fills the module's INFO section.
pub trait Section {
    fn write(ctx: InfoContext);
}

/// The callback the server calls for INFO, outside any command: no panic may
/// unwind into the server, and a section cut short by one is all it costs.
extern "C" fn entry<S: Section>(ctx: *mut RedisModuleInfoCtx, _for_crash_report: c_int) {
    let _ = catch_unwind(|| S::write(InfoContext::from_raw(ctx)));
}

impl Context {
    /// Registers `S` as the module's INFO section, where the server has module INFO.
    pub fn register_info<S: Section>(self) {
        if let Some(register) = optional!(RedisModule_RegisterInfoFunc) {
            // SAFETY: `self` is the load context; the callback never unwinds.
            unsafe { register(self.raw(), Some(entry::<S>)) };
        }
    }
}

impl InfoContext {
    /// Starts the module's section (`# rl`); false if the server does not want it
    /// (INFO asked for other sections).
    pub fn begin_section(self) -> bool {
        raw::add_info_section(self.raw(), None) == raw::Status::Ok
    }

    /// Adds the field `<module>_<name>:<value>` to the section.
    pub fn field(self, name: &str, value: u64) {
        raw::add_info_field_unsigned_long_long(self.raw(), name, value);
    }

    /// Adds the text field `<module>_<name>:<value>` to the section.
    pub fn field_str(self, name: &str, value: &str) {
        raw::add_info_field_str(self.raw(), name, value);
    }
}

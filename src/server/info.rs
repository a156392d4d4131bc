//! Writing the module's INFO section, from the callback the server calls.

use redis_module::raw::{self, RedisModuleInfoCtx};

/// Starts the module's section (`# rl`); false if the server does not want it
/// (INFO asked for other sections).
pub fn begin_section(ctx: *mut RedisModuleInfoCtx) -> bool {
    raw::add_info_section(ctx, None) == raw::Status::Ok
}

/// Adds the field `<module>_<name>:<value>` to the section.
pub fn field(ctx: *mut RedisModuleInfoCtx, name: &str, value: u64) {
    raw::add_info_field_unsigned_long_long(ctx, name, value);
}

/// Adds the text field `<module>_<name>:<value>` to the section.
pub fn field_str(ctx: *mut RedisModuleInfoCtx, name: &str, value: &str) {
    raw::add_info_field_str(ctx, name, value);
}

//! COMMAND INFO / COMMAND DOCS and ACL categories of a module command, from a safe
//! description ([`CommandDoc`]): here the server's C structs
//! (`RedisModule_SetCommandInfo`, which Redis 7.0 has) are built from it. The
//! server copies everything, so the structs only live for the call.

use std::ffi::CStr;
use std::mem::{size_of, zeroed};
use std::os::raw::c_int;
use std::ptr;

use redis_module::raw::{self, RedisModuleCommandArg, RedisModuleCommandKeySpec};

use super::api::OK;
use super::context::Context;

/// Where a command's keys are.
#[derive(Clone, Copy)]
pub enum KeySearch {
    /// One key, argument 1.
    First,
    /// `numkeys key [key …]` from argument 1 (as ZUNION's).
    Counted,
    /// No key (RL.TOP).
    None,
}

/// What an argument is.
pub enum ArgType {
    /// A key (of the command's one key spec).
    Key,
    Integer,
    String,
    /// Its token alone (`SHADOW`).
    PureToken,
    /// A group of arguments, given together.
    Block(Vec<ArgDoc>),
    /// One of several arguments.
    OneOf(Vec<ArgDoc>),
}

/// One argument, as COMMAND DOCS shows it (and redis-cli's hints).
pub struct ArgDoc {
    pub name: &'static CStr,
    pub kind: ArgType,
    /// The word it starts with (`COST`), if any.
    pub token: Option<&'static CStr>,
    pub optional: bool,
    /// Given one or more times.
    pub multiple: bool,
}

impl ArgDoc {
    /// A required argument given once, without a token.
    pub fn new(name: &'static CStr, kind: ArgType) -> Self {
        ArgDoc {
            name,
            kind,
            token: None,
            optional: false,
            multiple: false,
        }
    }
}

/// What COMMAND INFO / COMMAND DOCS show of a command.
pub struct CommandDoc {
    pub summary: &'static CStr,
    pub complexity: &'static CStr,
    pub since: &'static CStr,
    /// Counting the command name: exactly this many, or (negative) at least.
    pub arity: i32,
    pub keys: KeySearch,
    pub args: Vec<ArgDoc>,
}

/// Why a description was not set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocError {
    /// The server does not know the command.
    NotFound,
    /// The server refused the description.
    Refused,
}

impl Context {
    /// Sets the documentation of this module's command `name` (registered before,
    /// with this load context). Without `RedisModule_SetCommandInfo` (Redis < 7.0)
    /// the command still works, and this does nothing.
    pub fn set_command_info(self, name: &CStr, doc: &CommandDoc) -> Result<(), DocError> {
        let (Some(get_command), Some(set_info)) = (
            optional!(RedisModule_GetCommand),
            optional!(RedisModule_SetCommandInfo),
        ) else {
            return Ok(());
        };
        // SAFETY: `self` is the load context; the name is NUL-terminated.
        let command = unsafe { get_command(self.raw(), name.as_ptr()) };
        if command.is_null() {
            return Err(DocError::NotFound);
        }
        let version = raw::RedisModuleCommandInfoVersion {
            version: 1,
            sizeof_historyentry: size_of::<raw::RedisModuleCommandHistoryEntry>(),
            sizeof_keyspec: size_of::<RedisModuleCommandKeySpec>(),
            sizeof_arg: size_of::<RedisModuleCommandArg>(),
        };
        let mut key_specs = key_specs(doc.keys);
        // Every argument array (the top level, a block's, a choice's) lives in
        // `arrays` until the server has copied it.
        let mut arrays = Arrays::default();
        let args = arrays.list(&doc.args);
        let info = raw::RedisModuleCommandInfo {
            version: &version,
            summary: doc.summary.as_ptr(),
            complexity: doc.complexity.as_ptr(),
            since: doc.since.as_ptr(),
            history: ptr::null_mut(),
            tips: ptr::null(),
            arity: doc.arity,
            key_specs: key_specs.as_mut_ptr(),
            args,
        };
        // SAFETY: `command` is this module's command, found above; every pointer in
        // `info` outlives the call (the server copies what it keeps).
        if unsafe { set_info(command, &info) } != OK {
            return Err(DocError::Refused);
        }
        Ok(())
    }

    /// Puts this module's command `name` in the ACL categories `categories`
    /// (space-separated); None where the server has no module categories (before
    /// 7.2), Some(false) if it refused.
    pub fn set_acl_categories(self, name: &CStr, categories: &CStr) -> Option<bool> {
        let (Some(get_command), Some(set_categories)) = (
            optional!(RedisModule_GetCommand),
            optional!(RedisModule_SetCommandACLCategories),
        ) else {
            return None;
        };
        // SAFETY: `self` is the load context; the name is NUL-terminated.
        let command = unsafe { get_command(self.raw(), name.as_ptr()) };
        Some(
            !command.is_null()
                // SAFETY: `command` is this module's command; the categories are
                // NUL-terminated.
                && unsafe { set_categories(command, categories.as_ptr()) } == OK,
        )
    }
}

/// The key spec of `keys`, then the all-zero entry that ends the array (alone, for
/// a command without keys). The keys are read and updated in place (as INCR's).
fn key_specs(keys: KeySearch) -> [RedisModuleCommandKeySpec; 2] {
    // SAFETY: a plain C struct of integers, pointers and unions of those, for which
    // all-zero is the "unset" value; a zeroed entry ends the array.
    let mut specs: [RedisModuleCommandKeySpec; 2] = unsafe { zeroed() };
    if matches!(keys, KeySearch::None) {
        return specs;
    }
    let spec = &mut specs[0];
    spec.flags = u64::from(
        raw::REDISMODULE_CMD_KEY_RW
            | raw::REDISMODULE_CMD_KEY_ACCESS
            | raw::REDISMODULE_CMD_KEY_UPDATE,
    );
    spec.begin_search_type = raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX;
    spec.bs.index.pos = 1;
    match keys {
        KeySearch::First => {
            spec.find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE;
            spec.fk.range.lastkey = 0;
            spec.fk.range.keystep = 1;
            spec.fk.range.limit = 0;
        }
        KeySearch::Counted => {
            spec.find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_KEYNUM;
            spec.fk.keynum.keynumidx = 0;
            spec.fk.keynum.firstkey = 1;
            spec.fk.keynum.keystep = 1;
        }
        KeySearch::None => {}
    }
    specs
}

/// Owns the argument arrays of one command's description.
#[derive(Default)]
struct Arrays(Vec<Vec<RedisModuleCommandArg>>);

impl Arrays {
    /// `args` as the server's array, ended by an all-zero entry, kept here; its
    /// address is stable (moving a Vec does not move its buffer).
    fn list(&mut self, args: &[ArgDoc]) -> *mut RedisModuleCommandArg {
        let mut array: Vec<RedisModuleCommandArg> = args.iter().map(|a| self.arg(a)).collect();
        // SAFETY: as in `arg`: the all-zero argument ends the server's array.
        array.push(unsafe { zeroed() });
        self.0.push(array);
        self.0
            .last_mut()
            .map_or(ptr::null_mut(), |a| a.as_mut_ptr())
    }

    fn arg(&mut self, a: &ArgDoc) -> RedisModuleCommandArg {
        // SAFETY: a plain C struct; all-zero means no token, no flags, no
        // sub-arguments.
        let mut out: RedisModuleCommandArg = unsafe { zeroed() };
        out.name = a.name.as_ptr();
        out.key_spec_index = -1;
        out.type_ = match &a.kind {
            ArgType::Key => {
                out.key_spec_index = 0;
                raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY
            }
            ArgType::Integer => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER,
            ArgType::String => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING,
            ArgType::PureToken => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_PURE_TOKEN,
            ArgType::Block(subargs) => {
                out.subargs = self.list(subargs);
                raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_BLOCK
            }
            ArgType::OneOf(subargs) => {
                out.subargs = self.list(subargs);
                raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_ONEOF
            }
        };
        if let Some(token) = a.token {
            out.token = token.as_ptr();
        }
        let mut flags = 0;
        if a.optional {
            flags |= raw::REDISMODULE_CMD_ARG_OPTIONAL;
        }
        if a.multiple {
            flags |= raw::REDISMODULE_CMD_ARG_MULTIPLE;
        }
        out.flags = flags as c_int;
        out
    }
}

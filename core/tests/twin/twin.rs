//! The Lua twin: `functions/rl.lua` run in-process on Lua 5.1 (the version Redis
//! embeds, built from source by mlua's `vendored` feature) against a
//! [`Keyspace`], so the library can be checked call by call against the Rust core
//! with no server.
//!
//! What a library sees is rebuilt from Redis 7.0's function_lua.c and script_lua.c
//! (redis_api.lua): FUNCTION LOAD's environment (only `redis` with
//! `register_function` and `log`), the call-time globals (base, string, math,
//! table; no os, io, print, loadfile), `redis.call`/`pcall` with RESP2 reply
//! conversion and Redis's error tables, Redis's `pcall` (which turns a caught
//! `{err = …}` into its string), read-only globals, and the error handler that
//! adds where a runtime error was raised. Not modelled: `cjson`, `bit`, `struct`,
//! `cmsgpack`, `redis.sha1hex`, `redis.acl_check_cmd`, Redis's own `math.random`,
//! RESP3, effects replication and the busy-script timeout.

use std::collections::{BTreeMap, HashMap};
use std::ffi::{c_int, CStr};
use std::path::Path;

use mlua::{ffi, Function, Lua, LuaOptions, MultiValue, StdLib, Table, Value as LuaValue};
use rl_core::keyspace::number::format_g17;
use rl_core::keyspace::{lookup_command, Keyspace, Value};

/// The Redis API around the library (Lua), and its chunk name: its frames are
/// skipped when an error is located, since in Redis that code is C.
const REDIS_API: &str = include_str!("redis_api.lua");
const REDIS_API_NAME: &str = "=redis_api";

/// Where [`redis_call`] finds redis_api.lua's `call_impl`.
const CALL_IMPL: &CStr = c"rl_twin.call_impl";

/// The chunk name Redis gives a library's code.
const LIBRARY_CHUNK: &str = "@user_function";

/// Function flags in the order FUNCTION LIST shows them.
const FLAGS: [&str; 5] = [
    "no-writes",
    "allow-oom",
    "allow-stale",
    "no-cluster",
    "allow-cross-slot-keys",
];

/// Nesting beyond which a reply table is refused (Redis's `lua_checkstack` limit;
/// it also keeps a self-referencing table from overflowing the Rust stack).
const MAX_REPLY_DEPTH: usize = 1000;

/// The call in progress: the keyspace is moved in for the call and back out after,
/// so `redis.call` (a Rust callback) can reach it without a borrow across Lua.
struct RunCtx {
    keyspace: Keyspace,
    now: i64,
    read_only: bool,
}

struct Registered {
    callback: Function,
    flags: Vec<&'static str>,
}

/// One Lua state with one library loaded, kept for any number of calls.
pub struct LuaTwin {
    lua: Lua,
    library: String,
    functions: HashMap<String, Registered>,
    run: Function,
}

fn internal(e: mlua::Error) -> String {
    format!("ERR the Lua twin failed: {e}")
}

/// A status line from a Lua string: up to a NUL (C sees no further), CR and LF as
/// spaces (`sdsmapchars`).
fn status_line(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).replace(['\r', '\n'], " ")
}

/// An error line: as a status line, with trailing CR/LF trimmed first
/// (`addReplyErrorFormat`).
fn error_line(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    let trimmed = bytes[..end]
        .iter()
        .rposition(|&b| b != b'\r' && b != b'\n')
        .map_or(0, |last| last + 1);
    status_line(&bytes[..trimmed])
}

/// `(long long)` of a double as x86-64 computes it: NaN and out-of-range values
/// become i64::MIN.
fn c_cast(x: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if x.is_nan() || !(-LIMIT..LIMIT).contains(&x) {
        i64::MIN
    } else {
        x as i64
    }
}

/// FUNCTION LOAD's metadata line: `#!lua name=<library>`. Returns the library name
/// and the code, which keeps the line's `\n` so line numbers match the file.
fn metadata(source: &str) -> Result<(String, &str), String> {
    if !source.starts_with("#!") {
        return Err("ERR Missing library metadata".into());
    }
    let end = source.find('\n').ok_or("ERR Invalid library metadata")?;
    let mut parts = source[..end].split_ascii_whitespace();
    let engine = parts.next().map(|p| &p[2..]).unwrap_or_default();
    let mut name = None;
    for part in parts {
        let bytes = part.as_bytes();
        if bytes.len() >= 5 && bytes[..5].eq_ignore_ascii_case(b"name=") {
            if name.is_some() {
                return Err(
                    "ERR Invalid metadata value, name argument was given multiple times".into(),
                );
            }
            name = Some(part[5..].to_string());
        } else {
            return Err(format!("ERR Invalid metadata value given: {part}"));
        }
    }
    let name = name.ok_or("ERR Library name was not given")?;
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err("ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long".into());
    }
    if !engine.eq_ignore_ascii_case("lua") {
        return Err(format!("ERR Engine '{engine}' not found"));
    }
    Ok((name, &source[end..]))
}

/// `redis.call`'s work: the arguments as Redis converts them, the checks
/// `scriptCall` makes, then the command. Returns (true, reply) or (false, the
/// error buffer for `luaPushErrorBuff`, whether Redis flags it as already counted).
fn raw_call(lua: &Lua, args: MultiValue) -> mlua::Result<(bool, LuaValue, bool)> {
    let fail = |message: &str, counted: bool| -> mlua::Result<(bool, LuaValue, bool)> {
        Ok((
            false,
            LuaValue::String(lua.create_string(message)?),
            counted,
        ))
    };
    if args.is_empty() {
        return fail(
            "Please specify at least one argument for this redis lib call",
            false,
        );
    }
    let mut argv: Vec<Vec<u8>> = Vec::with_capacity(args.len());
    for arg in &args {
        match arg {
            LuaValue::String(s) => argv.push(s.as_bytes().to_vec()),
            // Redis 7.0 formats a number argument with %.17g. (On Lua 5.1 every
            // number is a double; mlua presents an integral one as Integer.)
            LuaValue::Number(n) => argv.push(format_g17(*n).into_bytes()),
            LuaValue::Integer(i) => argv.push(format_g17(*i as f64).into_bytes()),
            _ => {
                return fail(
                    "Lua redis lib command arguments must be strings or integers",
                    false,
                )
            }
        }
    }
    let argv: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
    let outcome = {
        let Some(mut ctx) = lua.app_data_mut::<RunCtx>() else {
            return fail(
                "redis.call/pcall can only be called inside a script invocation",
                false,
            );
        };
        match lookup_command(argv[0]) {
            None => Err("Unknown Redis command called from script".to_string()),
            Some(info) if !info.arity_ok(argv.len()) => {
                Err("Wrong number of args calling Redis command from script".to_string())
            }
            Some(info) if info.write && ctx.read_only => {
                Err("Write commands are not allowed from read-only scripts.".to_string())
            }
            Some(_) => {
                let now = ctx.now;
                ctx.keyspace
                    .command(now, &argv)
                    .map_err(|line| format!("-{line}"))
            }
        }
    };
    match outcome {
        Ok(reply) => Ok((true, to_lua(lua, &reply)?, false)),
        Err(buffer) => fail(&buffer, true),
    }
}

/// `redis.call`, a C function as in Redis: it runs `call_impl` (raw_call, then the
/// error table) and raises the table itself. Being C matters for where an error is
/// reported: the caller stays on the stack even in `return redis.call(…)` (a Lua
/// tail call replaces only a Lua callee), and the raising frame is C.
///
/// # Safety
/// Called by Lua only, with a valid state. `lua_error` longjmps out of this frame,
/// which holds nothing with a destructor.
unsafe extern "C-unwind" fn redis_call(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: the stack has this call's arguments and at least LUA_MINSTACK free
    // slots; the registry entry is set before the library loads. `call_impl`
    // returns exactly two values.
    unsafe {
        let nargs = ffi::lua_gettop(state);
        ffi::lua_getfield(state, ffi::LUA_REGISTRYINDEX, CALL_IMPL.as_ptr());
        ffi::lua_insert(state, 1);
        ffi::lua_call(state, nargs, 2);
        let ok = ffi::lua_toboolean(state, 1) != 0;
        ffi::lua_remove(state, 1);
        if ok {
            1
        } else {
            ffi::lua_error(state)
        }
    }
}

/// Where the error being handled was raised, as Redis's handler finds it
/// (`debug.getinfo(2)`, or 3 past a C function), skipping the frames of
/// redis_api.lua, whose functions are C in Redis. Level 0 is this function and
/// level 1 the handler.
fn locate(lua: &Lua, _: ()) -> mlua::Result<(Option<String>, Option<i64>)> {
    let frame = |level| {
        lua.inspect_stack(level, |d| {
            let source = d.source();
            let line = d.current_line().map_or(-1, |l| l as i64);
            (source.what, source.source.map(|s| s.into_owned()), line)
        })
    };
    let mut level = 2;
    let mut info = frame(level);
    if info.as_ref().is_some_and(|(what, ..)| *what == "C") {
        level += 1;
        info = frame(level);
    }
    while info
        .as_ref()
        .is_some_and(|(_, source, _)| source.as_deref() == Some(REDIS_API_NAME))
    {
        level += 1;
        info = frame(level);
    }
    Ok(match info {
        Some((_, Some(source), line)) => (Some(source), Some(line)),
        _ => (None, None),
    })
}

/// A RESP2 reply as a script receives it (`redisProtocolToLuaType`).
fn to_lua(lua: &Lua, reply: &Value) -> mlua::Result<LuaValue> {
    Ok(match reply {
        Value::Nil => LuaValue::Boolean(false),
        Value::Int(i) => LuaValue::Number(*i as f64),
        Value::Bulk(b) => LuaValue::String(lua.create_string(b)?),
        Value::Status(s) => {
            let t = lua.create_table()?;
            t.raw_set("ok", s.as_str())?;
            LuaValue::Table(t)
        }
        Value::Error(line) => {
            let t = lua.create_table()?;
            let text = if line.contains(' ') {
                line.clone()
            } else {
                format!("ERR {line}")
            };
            t.raw_set("err", text)?;
            t.raw_set("ignore_error_stats_update", true)?;
            LuaValue::Table(t)
        }
        Value::Array(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, to_lua(lua, item)?)?;
            }
            LuaValue::Table(t)
        }
    })
}

/// A script's return value as the client receives it (`luaReplyToRedisReply`,
/// RESP2). An error comes back as [`Value::Error`]; at the top level the caller
/// makes it the `Err` side.
fn from_lua(value: &LuaValue, depth: usize) -> Value {
    match value {
        LuaValue::String(s) => Value::Bulk(s.as_bytes().to_vec()),
        LuaValue::Boolean(true) => Value::Int(1),
        LuaValue::Number(n) => Value::Int(c_cast(*n)),
        LuaValue::Integer(i) => Value::Int(*i),
        LuaValue::Table(_) if depth >= MAX_REPLY_DEPTH => {
            Value::Error("ERR reached lua stack limit".into())
        }
        LuaValue::Table(t) => table_reply(t, depth),
        _ => Value::Nil,
    }
}

fn table_reply(t: &Table, depth: usize) -> Value {
    let field = |name: &str| t.raw_get::<LuaValue>(name).unwrap_or(LuaValue::Nil);
    if let LuaValue::String(e) = field("err") {
        return Value::Error(error_line(&e.as_bytes()));
    }
    if let LuaValue::String(ok) = field("ok") {
        return Value::Status(status_line(&ok.as_bytes()));
    }
    match field("double") {
        LuaValue::Number(d) => return Value::Bulk(format_g17(d).into_bytes()),
        LuaValue::Integer(i) => return Value::Bulk(format_g17(i as f64).into_bytes()),
        _ => {}
    }
    if let LuaValue::String(n) = field("big_number") {
        let bytes = n
            .as_bytes()
            .iter()
            .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
            .collect();
        return Value::Bulk(bytes);
    }
    if let LuaValue::Table(v) = field("verbatim_string") {
        let format = v.raw_get::<LuaValue>("format");
        let string = v.raw_get::<LuaValue>("string");
        if let (Ok(LuaValue::String(_)), Ok(LuaValue::String(s))) = (format, string) {
            return Value::Bulk(s.as_bytes().to_vec());
        }
    }
    if let LuaValue::Table(map) = field("map") {
        let mut out = Vec::new();
        for (k, v) in map.pairs::<LuaValue, LuaValue>().flatten() {
            out.push(from_lua(&k, depth + 1));
            out.push(from_lua(&v, depth + 1));
        }
        return Value::Array(out);
    }
    if let LuaValue::Table(set) = field("set") {
        let keys = set.pairs::<LuaValue, LuaValue>().flatten();
        return Value::Array(keys.map(|(k, _)| from_lua(&k, depth + 1)).collect());
    }
    let mut items = Vec::new();
    for j in 1.. {
        match t.raw_get::<LuaValue>(j) {
            Ok(LuaValue::Nil) | Err(_) => break,
            Ok(v) => items.push(from_lua(&v, depth + 1)),
        }
    }
    Value::Array(items)
}

/// The error reply of a call that raised (`luaCallFunction`): the error table's
/// message, plus `script: <function>, on <source>:<line>.` when the handler
/// located it.
fn script_error(function: &str, error: &LuaValue) -> String {
    let LuaValue::Table(t) = error else {
        return format!("ERR Error running script {function}, execution failure");
    };
    let text = |name: &str| match t.raw_get::<LuaValue>(name) {
        Ok(LuaValue::String(s)) => Some(s.as_bytes().to_vec()),
        Ok(LuaValue::Number(n)) if n.fract() == 0.0 => Some(format!("{n:.0}").into_bytes()),
        Ok(LuaValue::Number(n)) => Some(n.to_string().into_bytes()),
        Ok(LuaValue::Integer(i)) => Some(i.to_string().into_bytes()),
        _ => None,
    };
    let mut line = text("err").unwrap_or_else(|| b"(null)".to_vec());
    if let (Some(source), Some(at)) = (text("source"), text("line")) {
        line.extend_from_slice(format!(" script: {function}, on ").as_bytes());
        line.extend_from_slice(&source);
        line.push(b':');
        line.extend_from_slice(&at);
        line.push(b'.');
    }
    error_line(&line)
}

/// Functions the command table names that functions/rl.lua may not register yet
/// (RL.SHARE's, ported to Lua separately): while the library lacks one, the tests
/// that hold the library to the core skip its calls, and say so; once it has it,
/// they run them. Any other missing function fails those tests.
pub const PENDING: &[&str] = &[];

/// Whether the library runs `command`'s calls: its row names a function (not
/// CL.THROTTLE, the module's alone), and that function is not a [`PENDING`] one
/// functions/rl.lua does not register yet.
pub fn library_runs(command: &rl_core::table::Command) -> bool {
    static MISSING: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    let missing = MISSING.get_or_init(|| {
        let lua = LuaTwin::rl();
        let missing: Vec<&'static str> = PENDING.iter().copied().filter(|f| !lua.has(f)).collect();
        if !missing.is_empty() {
            eprintln!(
                "functions/rl.lua does not register {} yet: the library's side of its calls is skipped",
                missing.join(", ")
            );
        }
        missing
    });
    command.function.is_some_and(|f| !missing.contains(&f))
}

impl LuaTwin {
    /// Whether the library registers `function`.
    pub fn has(&self, function: &str) -> bool {
        self.functions.contains_key(function)
    }

    /// FUNCTION LOAD of `source` (with its `#!lua name=…` line) into a new Lua
    /// state. The error is the one FUNCTION LOAD answers.
    pub fn load(source: &str) -> Result<LuaTwin, String> {
        let (library, code) = metadata(source)?;
        let libs = StdLib::TABLE | StdLib::STRING | StdLib::MATH;
        let lua = Lua::new_with(libs, LuaOptions::default()).map_err(internal)?;
        let raw_call = lua.create_function(raw_call).map_err(internal)?;
        let locate = lua.create_function(locate).map_err(internal)?;
        // SAFETY: redis_call is a C function following Lua 5.1's calling convention.
        let c_call = unsafe { lua.create_c_function(redis_call) }.map_err(internal)?;
        let api: Table = lua
            .load(REDIS_API)
            .set_name(REDIS_API_NAME)
            .call((raw_call, locate, c_call))
            .map_err(internal)?;
        let get = |name: &str| api.get::<LuaValue>(name).map_err(internal);
        let call_impl = CALL_IMPL.to_str().map_err(|e| e.to_string())?;
        lua.set_named_registry_value(call_impl, get("call_impl")?)
            .map_err(internal)?;
        let (LuaValue::Table(env), LuaValue::Function(load), LuaValue::Function(run)) =
            (get("env")?, get("load")?, get("run")?)
        else {
            return Err("ERR the Lua twin's redis_api.lua is incomplete".into());
        };
        let chunk = lua
            .load(code)
            .set_name(LIBRARY_CHUNK)
            .set_environment(env)
            .into_function()
            .map_err(|e| match e {
                mlua::Error::SyntaxError { message, .. } => {
                    format!("ERR Error compiling function: {message}")
                }
                other => internal(other),
            })?;
        let (failure, count): (Option<String>, usize) = load.call(chunk).map_err(internal)?;
        if let Some(message) = failure {
            return Err(format!("ERR Error registering functions: {message}"));
        }
        if count == 0 {
            return Err("ERR No functions registered".into());
        }
        let mut functions = HashMap::new();
        let registered: Table = api.get("registered").map_err(internal)?;
        for pair in registered.pairs::<String, Table>() {
            let (name, entry) = pair.map_err(internal)?;
            let callback: Function = entry.get("callback").map_err(internal)?;
            let set: Table = entry.get("flags").map_err(internal)?;
            let flags = FLAGS
                .into_iter()
                .filter(|f| set.get::<Option<bool>>(*f).ok().flatten() == Some(true))
                .collect();
            functions.insert(name, Registered { callback, flags });
        }
        Ok(LuaTwin {
            lua,
            library,
            functions,
            run,
        })
    }

    /// The repository's functions/rl.lua, loaded; panics with FUNCTION LOAD's
    /// error if it does not load.
    pub fn rl() -> LuaTwin {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../functions/rl.lua");
        let source = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        LuaTwin::load(&source).unwrap_or_else(|e| panic!("FUNCTION LOAD {}: {e}", path.display()))
    }

    /// The library's name (from `#!lua name=…`).
    pub fn library(&self) -> &str {
        &self.library
    }

    /// What FUNCTION LIST shows of each function: its name and its flags.
    pub fn functions(&self) -> BTreeMap<String, Vec<&'static str>> {
        self.functions
            .iter()
            .map(|(name, f)| (name.clone(), f.flags.clone()))
            .collect()
    }

    /// `FCALL function numkeys keys… args…` at `now` (ms) against `keyspace`: the
    /// reply, or the full error line.
    pub fn fcall(
        &mut self,
        keyspace: &mut Keyspace,
        now: i64,
        function: &str,
        keys: &[&[u8]],
        args: &[&[u8]],
    ) -> Result<Value, String> {
        let f = self
            .functions
            .get(function)
            .ok_or("ERR Function not found")?;
        let keys = self.strings(keys).map_err(internal)?;
        let args = self.strings(args).map_err(internal)?;
        self.lua.set_app_data(RunCtx {
            keyspace: std::mem::take(keyspace),
            now,
            read_only: f.flags.contains(&"no-writes"),
        });
        let result = self
            .run
            .call::<(bool, LuaValue)>((f.callback.clone(), keys, args));
        if let Some(ctx) = self.lua.remove_app_data::<RunCtx>() {
            *keyspace = ctx.keyspace;
        }
        match result.map_err(internal)? {
            (true, reply) => match from_lua(&reply, 0) {
                Value::Error(line) => Err(line),
                reply => Ok(reply),
            },
            (false, error) => Err(script_error(function, &error)),
        }
    }

    /// KEYS or ARGV: a Lua array of strings.
    fn strings(&self, items: &[&[u8]]) -> mlua::Result<Table> {
        let t = self.lua.create_table_with_capacity(items.len(), 0)?;
        for (i, item) in items.iter().enumerate() {
            t.raw_set(i + 1, self.lua.create_string(item)?)?;
        }
        Ok(t)
    }
}

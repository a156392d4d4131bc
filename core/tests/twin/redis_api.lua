-- The Redis 7.0 Functions environment, rebuilt around functions/rl.lua for the Lua
-- twin (twin.rs): what function_lua.c and script_lua.c give a library, with their
-- error texts. Runs once per Lua state, in the real globals, before the library loads.
--
-- Arguments from Rust: raw_call (runs one command against the keyspace of the call in
-- progress: returns true, reply; or false, error buffer, whether Redis marks the
-- error "already counted"), locate (the source and line where an error was raised)
-- and c_call, redis.call itself: a C function that runs call_impl below and raises
-- its error table. It must be C, as in Redis: a Lua function would be the one
-- raising (not the caller), and `return redis.call(…)` would be a tail call that
-- drops the caller from the stack. Returns the table of hooks twin.rs drives.

local raw_call, locate, c_call = ...

local type, tostring, tonumber, error, select, pairs, ipairs = type, tostring, tonumber, error, select, pairs, ipairs
local setmetatable, xpcall, lua_pcall = setmetatable, xpcall, pcall
local ssub, sfind, slower, smatch = string.sub, string.find, string.lower, string.match
local floor, ceil = math.floor, math.ceil
local G = _G

-- lua_isstring: a string or a number.
local function is_string(v)
  local t = type(v)
  return t == "string" or t == "number"
end

-- What C sees of a Lua string: up to the first NUL.
local function c_str(s)
  return smatch(s, "^[^%z]*")
end

-- sdstrim(s, "\r\n"): strips CR and LF from both ends.
local function trim_crlf(s)
  return smatch(s, "^[\r\n]*(.-)[\r\n]*$")
end

-- luaPushErrorBuff: "-CODE message" keeps its code, anything else gets ERR.
local function error_table(buffer, already_counted)
  buffer = c_str(buffer)
  local code, message = "ERR", buffer
  if ssub(buffer, 1, 1) == "-" then
    local space = sfind(buffer, " ", 1, true)
    if space then
      code, message = ssub(buffer, 2, space - 1), ssub(buffer, space + 1)
    else
      message = ssub(buffer, 2)
    end
  end
  local t = { err = code .. " " .. trim_crlf(message) }
  if already_counted then
    t.ignore_error_stats_update = true
  end
  return t
end

-- luaPushError + luaError: raise a Redis error table.
local function fail(message)
  error(error_table(message), 0)
end

-- The error metatable of the globals and of the load-time API (luaSetErrorMetatable):
-- luaL_error names the place of the read (level 2: the code that indexed).
local function nonexistent(_, name)
  error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
end

local function readonly()
  error("Attempt to modify a readonly table", 2)
end

------------------------------------------------------------------------------
-- redis.*
------------------------------------------------------------------------------

-- For c_call: true, reply; or false, the error table it raises.
local function call_impl(...)
  local ok, reply, counted = raw_call(...)
  if not ok then
    return false, error_table(reply, counted)
  end
  return true, reply
end

local function pcall_command(...)
  local ok, reply, counted = raw_call(...)
  if not ok then
    return error_table(reply, counted)
  end
  return reply
end

local function log(...)
  local argc = select("#", ...)
  if argc < 2 then
    fail("redis.log() requires two arguments or more.")
  end
  local level = tonumber((...))
  if level == nil then
    fail("First argument must be a number (log level).")
  end
  level = level >= 0 and floor(level) or ceil(level) -- assigned to a C int
  if level < 0 or level > 3 then
    fail("Invalid debug level.")
  end
  -- The twin keeps no log.
end

-- redis.error_reply and redis.status_reply take exactly one string.
local function one_string(...)
  return select("#", ...) == 1 and type((...)) == "string"
end

local function error_reply(...)
  if not one_string(...) then
    return error_table("wrong number or type of arguments")
  end
  local err = ...
  if ssub(err, 1, 1) ~= "-" then
    err = "-" .. err
  end
  return error_table(err)
end

local function status_reply(...)
  if not one_string(...) then
    return error_table("wrong number or type of arguments")
  end
  return { ok = (...) }
end

local function setresp(...)
  if select("#", ...) ~= 1 then
    fail("redis.setresp() requires one argument.")
  end
  local resp = tonumber((...))
  if resp ~= 2 and resp ~= 3 then
    fail("RESP version must be 2 or 3.")
  end
  if resp == 3 then
    fail("the Lua twin models RESP2 replies only")
  end
end

local function set_repl(...)
  if select("#", ...) ~= 1 then
    fail("redis.set_repl() requires one argument.")
  end
  local flags = tonumber((...))
  if flags == nil or flags < 0 or flags > 3 then
    fail("Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")
  end
  -- Effects are not modelled: the keyspace is the only outcome.
end

local function add_common(t)
  t.log = log
  t.LOG_DEBUG, t.LOG_VERBOSE, t.LOG_NOTICE, t.LOG_WARNING = 0, 1, 2, 3
  t.REDIS_VERSION, t.REDIS_VERSION_NUM = "7.0.15", 0x07000f
  return t
end

G.redis = add_common({
  call = c_call,
  pcall = pcall_command,
  error_reply = error_reply,
  status_reply = status_reply,
  setresp = setresp,
  set_repl = set_repl,
  REPL_NONE = 0,
  REPL_AOF = 1,
  REPL_SLAVE = 2,
  REPL_REPLICA = 2,
  REPL_ALL = 3,
})

------------------------------------------------------------------------------
-- redis.register_function (function_lua.c), at FUNCTION LOAD only
------------------------------------------------------------------------------

local FLAGS = { "no-writes", "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys" }

local loading = false
local registered = {} -- name -> { callback = f, flags = { [flag] = true } }
local count = 0

local function read_flags(t)
  local flags, j = {}, 1
  while true do
    local v = t[j]
    if v == nil then
      return flags
    end
    if not is_string(v) then
      return nil
    end
    local found = false
    for _, name in ipairs(FLAGS) do
      if slower(c_str(tostring(v))) == name then
        flags[name], found = true, true
      end
    end
    if not found then
      return nil
    end
    j = j + 1
  end
end

local function named_args(t)
  if type(t) ~= "table" then
    fail(
      "calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments)."
    )
  end
  local name, callback, flags
  for k, v in pairs(t) do
    if not is_string(k) then
      fail("named argument key given to redis.register_function is not a string")
    end
    local key = slower(c_str(tostring(k)))
    if key == "function_name" then
      if not is_string(v) then
        fail("function_name argument given to redis.register_function must be a string")
      end
      name = tostring(v)
    elseif key == "description" then
      if not is_string(v) then
        fail("description argument given to redis.register_function must be a string")
      end
    elseif key == "callback" then
      if type(v) ~= "function" then
        fail("callback argument given to redis.register_function must be a function")
      end
      callback = v
    elseif key == "flags" then
      if type(v) ~= "table" then
        fail("flags argument to redis.register_function must be a table representing function flags")
      end
      flags = read_flags(v)
      if flags == nil then
        fail("unknown flag given")
      end
    else
      fail("unknown argument given to redis.register_function")
    end
  end
  if name == nil then
    fail("redis.register_function must get a function name argument")
  end
  if callback == nil then
    fail("redis.register_function must get a callback argument")
  end
  return name, callback, flags or {}
end

local function register_function(...)
  if not loading then
    fail("redis.register_function can only be called on FUNCTION LOAD command")
  end
  local argc = select("#", ...)
  if argc < 1 or argc > 2 then
    fail("wrong number of arguments to redis.register_function")
  end
  local name, callback, flags
  if argc == 1 then
    name, callback, flags = named_args((...))
  else
    local first, second = ...
    if not is_string(first) then
      fail("first argument to redis.register_function must be a string")
    end
    if type(second) ~= "function" then
      fail("second argument to redis.register_function must be a function")
    end
    name, callback, flags = tostring(first), second, {}
  end
  if not smatch(name, "^[%w_]+$") then
    -- (sic: Redis 7.0 says "Library" here)
    fail(
      "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"
    )
  end
  if registered[name] then
    fail("Function already exists in the library")
  end
  registered[name] = { callback = callback, flags = flags }
  count = count + 1
end

------------------------------------------------------------------------------
-- Globals: the library's environment
------------------------------------------------------------------------------

-- Not in Redis's allow list: absent from scripts.
G.print, G.dofile, G.loadfile = nil, nil, nil

-- Redis's pcall: an error table with an `err` field is caught as that string.
local function caught(ok, ...)
  if ok then
    return true, ...
  end
  local e = ...
  if type(e) == "table" and is_string(e.err) then
    e = e.err
  end
  return false, e
end
G.pcall = function(...)
  return caught(lua_pcall(...))
end

setmetatable(G, { __index = nonexistent })

-- What a library sees while it loads: `redis` with register_function and log only.
local load_redis = setmetatable(add_common({ register_function = register_function }), { __index = nonexistent })
local load_api = setmetatable({ redis = load_redis }, { __index = nonexistent })

-- The library's globals: empty and read-only; reads go to the load API while it
-- loads and to the real globals afterwards, as function_lua.c switches them.
local env_meta = { __index = load_api, __newindex = readonly }
local env = setmetatable({}, env_meta)

-- luaExtractErrorInformation's message.
local function error_message(e)
  local message
  if is_string(e) then
    message = "ERR " .. tostring(e)
  end
  if type(e) == "table" and is_string(e.err) then
    message = tostring(e.err)
  end
  return message
end

-- FUNCTION LOAD: runs the compiled library with register_function live. Returns
-- nil, or the message of the error it raised.
local function load(chunk)
  loading, env_meta.__index = true, load_api
  local ok, e = lua_pcall(chunk)
  loading, env_meta.__index = false, G
  if ok then
    return nil, count
  end
  return error_message(e) or "(null)", count
end

-- Redis's error handler for a function call: anything not a table becomes
-- {err = "ERR " .. tostring(err)}, and the place it was raised is added.
local function handler(err)
  local source, line = locate()
  if type(err) ~= "table" then
    err = { err = "ERR " .. tostring(err) }
  end
  if source then
    err.source, err.line = source, line
  end
  return err
end

-- FCALL: the callback with KEYS and ARGV, one result kept (lua_pcall(L, 2, 1, …)).
local function run(callback, keys, args)
  local ok, result = xpcall(function()
    return callback(keys, args)
  end, handler)
  return ok, result
end

return {
  call_impl = call_impl,
  env = env,
  load = load,
  registered = registered,
  run = run,
  error_message = error_message,
}

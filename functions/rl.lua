#!lua name=rl
--[[
RL 0.2.0: RL's rate limiters as a Redis Functions library (Redis 7.0+, Valkey), for servers
that refuse MODULE LOAD. Same arguments, replies, errors, key formats, TTLs and
replicated effects as the module's commands (docs/library.md):

  redis-cli -x FUNCTION LOAD REPLACE < functions/rl.lua
-- <generated:usage>
  FCALL rl_fixed          1 key limit window                         [COST n | REFUND n | DEBIT n] [SHADOW]
  FCALL rl_sliding        1 key limit window                         [COST n | REFUND n] [SHADOW]
  FCALL rl_bucket         1 key capacity tokens period               [COST n | REFUND n | DEBIT n] [SHADOW]
  FCALL rl_gcra           1 key capacity tokens period               [COST n | REFUND n | DEBIT n] [DELAY max] [SHADOW]
  FCALL rl_slidingcounter 1 key limit window                         [COST n | REFUND n | DEBIT n] [SHADOW]
  FCALL rl_all numkeys key [key ...] policy [policy ...] [COST n | REFUND n | DEBIT n]
    (SHADOW before a policy makes it advisory: it never vetoes the call)
    (a GCRA policy may carry DELAY max: GCRA capacity tokens period [DELAY max])
    (in rl_all, PENALTY strikes window block max is only looked at, as COST 0; rl_penalty writes it)
  FCALL rl_acquire        1 key limit ttl id
  FCALL rl_release        1 key id
  FCALL rl_penalty        1 key strikes window block max             [COST n] [SHADOW]
  FCALL rl_share          1 key tenant weight capacity tokens period [COST n | REFUND n | DEBIT n] [SHADOW]
  FCALL rl_version        0                                          the library's version
-- </generated:usage>

Lua numbers are doubles, exact only below 2^53. Every quantity that can go beyond
(a GCRA TAT in ns, a bucket level in its exact unit, products of counts and
durations) is computed with the exact integers below (`N`), which stay plain Lua
numbers below 2^53 and become arrays of base-10^7 limbs above: the results are the
module's, bit for bit, over the full argument ranges.

Errors are returned with redis.error_reply, never raised: no input makes the
script fail with a Lua runtime error.

The parts between `-- <generated:NAME>` and `-- </generated:NAME>` lines (the usage
above, the limits, the error texts, the policy list, the function map and the
registration) are written from RL's command table by `make lua`; `make lint` fails
when they are out of date. The rest is written by hand.
]]

-- At FUNCTION LOAD only `redis` exists (no math, string, table, tonumber): the
-- library is built on its first call, when the script globals are there, and kept.
local function build()
local floor, fmod, ceil = math.floor, math.fmod, math.ceil
local sfmt, ssub, sbyte, schar = string.format, string.sub, string.byte, string.char
local tconcat, unpack = table.concat, unpack

local BASE = 10000000 -- one limb: 10^7 (a limb product stays below 2^53)
local TWO53 = 9007199254740992
-- <generated:limits>
local MAX_COUNT = 9007199254740991 -- 2^53 - 1: the largest count, cost and reply field
local MAX_DURATION = 315360000000 -- 3650d in ms
local SLIDING_MAX = 100000 -- rl.sliding-max-limit's default (a library has no settings)
local MAX_KEYS = 16 -- keys in one rl_all call
local MAX_ID = 256 -- bytes in a lease id
local OPTION_WORDS = { COST = true, REFUND = true, DEBIT = true, DELAY = true, SHADOW = true }
-- </generated:limits>
local SHARE_MAX_TENANTS = 10000 -- rl.share-max-tenants' default (a library has no settings)
-- <generated:errors>
local ERRORS = {
  wrong_type = "WRONGTYPE Operation against a key holding the wrong kind of value",
  not_fixed = "ERR key does not hold an RL.FIXED counter (a non-negative integer with an expiry)",
  not_sliding = "ERR key does not hold an RL.SLIDING log (a sorted set of ms timestamps)",
  not_bucket = "ERR key does not hold an RL.BUCKET (a hash with numeric fields tokens and ts)",
  not_gcra = "ERR key does not hold a GCRA state (a non-negative integer TAT in ns)",
  not_slidingcounter = 'ERR key does not hold an RL.SLIDINGCOUNTER (a string "<start> <current> <previous>")',
  not_leases = "ERR key does not hold an RL.ACQUIRE lease set (a sorted set of lease ends in ms)",
  not_penalty = 'ERR key does not hold an RL.PENALTY state (a string "<count> <window_end> <level> <blocked_until>")',
  rate_too_high = "ERR tokens per period is too high for a GCRA limiter: at most one token per nanosecond (1000000 per ms)",
  sliding_limit = "ERR limit must be an integer from 1 to 100000 for RL.SLIDING, which keeps one entry per unit (rl.sliding-max-limit); use RL.BUCKET for larger limits",
  lease_limit = "ERR limit must be an integer from 1 to 100000 for RL.ACQUIRE, which keeps one entry per lease (rl.sliding-max-limit)",
  lease_id = "ERR id must be 1 to 256 bytes",
  lease_refund = "ERR syntax error: REFUND does not apply to ACQUIRE: end a lease with RL.RELEASE",
  block_above_max = "ERR block must be at most max",
  delay_without_gcra = "ERR syntax error: DELAY must follow a GCRA policy",
  shadow_without_policy = "ERR syntax error: SHADOW must come before a policy",
  numkeys = "ERR numkeys must be an integer from 1 to 16",
  -- With the argument named.
  count = function(name) return "ERR " .. name .. " must be an integer from 1 to 9007199254740991" end,
  cost = function(name) return "ERR " .. name .. " must be an integer from 0 to 9007199254740991" end,
  duration = function(name) return "ERR " .. name .. " must be a duration from 1ms to 3650d: an integer with an optional unit ms, s, m, h or d (a bare integer means seconds)" end,
  delay = function(name) return "ERR " .. name .. " must be a duration from 0 to 3650d: an integer with an optional unit ms, s, m, h or d (a bare integer means seconds)" end,
  unknown_policy = function(word) return "ERR syntax error: unknown policy '" .. word .. "', expected FIXED, SLIDING, BUCKET, GCRA, SLIDINGCOUNTER, ACQUIRE, PENALTY or SHARE" end,
}
-- </generated:errors>

-- Errors travel as {rl = "CODE message"} through error(), caught once per call.
local function fail(msg)
  error({ rl = msg }, 0)
end

------------------------------------------------------------------------------
-- N: exact non-negative integers (and small signed ones).
-- A value is a Lua number when |v| < 2^53, else an array of base-10^7 limbs,
-- little-endian, never negative.
------------------------------------------------------------------------------

local function internal(what)
  error({ internal = what }, 0)
end

local function split(x) -- number 0 <= x < 2^53 -> limbs
  if x < 0 then
    internal("negative operand")
  end
  local t, i = {}, 0
  while x > 0 do
    local r = fmod(x, BASE)
    i = i + 1
    t[i] = r
    x = (x - r) / BASE
  end
  return t
end

local function limbs(a)
  if type(a) == "number" then
    return split(a)
  end
  return a
end

local function norm(t) -- strips zero limbs; below 2^53 becomes a number
  local n = #t
  while n > 0 and t[n] == 0 do
    t[n] = nil
    n = n - 1
  end
  if n <= 2 then
    return (t[1] or 0) + (t[2] or 0) * BASE
  end
  if n == 3 and t[3] <= 90 then
    local v = t[1] + t[2] * BASE + t[3] * 1e14
    if v < TWO53 then
      return v
    end
  end
  return t
end

local function cmp(a, b)
  local na, nb = type(a) == "number", type(b) == "number"
  if na and nb then
    if a < b then
      return -1
    elseif a > b then
      return 1
    end
    return 0
  end
  if na then
    return -1 -- a number is below 2^53, a table at or above
  end
  if nb then
    return 1
  end
  if #a ~= #b then
    return #a < #b and -1 or 1
  end
  for i = #a, 1, -1 do
    if a[i] ~= b[i] then
      return a[i] < b[i] and -1 or 1
    end
  end
  return 0
end

local function add(a, b)
  if type(a) == "number" and type(b) == "number" then
    local s = a + b
    if s < TWO53 and s > -TWO53 then
      return s
    end
  end
  local x, y = limbs(a), limbs(b)
  local t, carry = {}, 0
  for i = 1, math.max(#x, #y) do
    local s = (x[i] or 0) + (y[i] or 0) + carry
    if s >= BASE then
      t[i] = s - BASE
      carry = 1
    else
      t[i] = s
      carry = 0
    end
  end
  if carry > 0 then
    t[#t + 1] = carry
  end
  return norm(t)
end

local function sub(a, b) -- a - b; a >= b unless both are numbers
  if type(a) == "number" and type(b) == "number" then
    local s = a - b
    if s < TWO53 and s > -TWO53 then
      return s
    end
  end
  local x, y = limbs(a), limbs(b)
  local t, borrow = {}, 0
  for i = 1, #x do
    local s = x[i] - (y[i] or 0) - borrow
    if s < 0 then
      t[i] = s + BASE
      borrow = 1
    else
      t[i] = s
      borrow = 0
    end
  end
  if borrow > 0 or #y > #x then
    internal("negative difference")
  end
  return norm(t)
end

local function mul(a, b)
  if type(a) == "number" and type(b) == "number" then
    local p = a * b
    if p < TWO53 and p > -TWO53 then
      return p
    end
  end
  local x, y = limbs(a), limbs(b)
  if #x == 0 or #y == 0 then
    return 0
  end
  local t = {}
  for i = 1, #x + #y do
    t[i] = 0
  end
  for i = 1, #x do
    local carry, xi = 0, x[i]
    for j = 1, #y do
      local s = t[i + j - 1] + xi * y[j] + carry
      local r = fmod(s, BASE)
      t[i + j - 1] = r
      carry = (s - r) / BASE
    end
    local k = i + #y
    while carry > 0 do
      local s = t[k] + carry
      local r = fmod(s, BASE)
      t[k] = r
      carry = (s - r) / BASE
      k = k + 1
    end
  end
  return norm(t)
end

local function tod(a) -- a double near a (for quotient estimates only)
  if type(a) == "number" then
    return a
  end
  local v = 0
  for i = #a, 1, -1 do
    v = v * BASE + a[i]
  end
  return v
end

-- floor(a / b) and a mod b, for a >= 0, b > 0.
local function divmod(a, b)
  if type(a) == "number" and type(b) == "number" then
    if a < 0 or b <= 0 then
      internal("division domain")
    end
    local r = fmod(a, b)
    return (a - r) / b, r
  end
  local q, r = 0, a
  while cmp(r, b) >= 0 do
    -- An underestimate of r / b with ~30 exact bits: r stays >= 0 and shrinks
    -- by about 2^-30 per step.
    local e = tod(r) / tod(b) * (1 - 2 ^ -40)
    local shift = 0
    while e >= 2 ^ 52 do
      e = e / BASE
      shift = shift + 1
    end
    local m = floor(e)
    local qe
    if m < 1 then
      qe = 1
    elseif shift == 0 then
      qe = m
    else
      local t, ml = {}, split(m)
      for i = 1, shift do
        t[i] = 0
      end
      for i = 1, #ml do
        t[shift + i] = ml[i]
      end
      qe = norm(t)
    end
    q = add(q, qe)
    r = sub(r, mul(qe, b))
  end
  return q, r
end

local function div(a, b)
  local q = divmod(a, b)
  return q
end

local function divceil(a, b)
  local q, r = divmod(a, b)
  if r ~= 0 then
    q = add(q, 1)
  end
  return q
end

local function nmin(a, b)
  return cmp(a, b) <= 0 and a or b
end

local function nmax(a, b)
  return cmp(a, b) >= 0 and a or b
end

local function satsub(a, b) -- max(a - b, 0)
  if cmp(a, b) <= 0 then
    return 0
  end
  return sub(a, b)
end

local function str(a) -- canonical decimal
  if type(a) == "number" then
    return sfmt("%d", a)
  end
  local parts = { sfmt("%d", a[#a]) }
  for i = #a - 1, 1, -1 do
    parts[#parts + 1] = sfmt("%07d", a[i])
  end
  return tconcat(parts)
end

local function num(s) -- a string of ASCII digits (leading zeros allowed)
  local t, i, last = {}, 0, #s
  while last > 0 do
    local first = last - 6
    if first < 1 then
      first = 1
    end
    i = i + 1
    t[i] = tonumber(ssub(s, first, last))
    last = first - 1
  end
  return norm(t)
end

-- cap: every reply duration and TTL is at most 2^53 - 1 ms.
local function cap(a)
  if cmp(a, MAX_COUNT) > 0 then
    return MAX_COUNT
  end
  return a
end

local function ms_until(t, now)
  if cmp(t, now) <= 0 then
    return 0
  end
  return cap(sub(t, now))
end

------------------------------------------------------------------------------
-- Signed exact integers, for a bucket's level (a debt makes it negative): a Lua
-- number (any sign, |v| < 2^53), an N table (>= 2^53), or {neg = t} for -t (t an
-- N table: below -2^53).
------------------------------------------------------------------------------

local function s_isneg(a)
  if type(a) == "number" then
    return a < 0
  end
  return a.neg ~= nil
end

local function s_mag(a) -- |a|, an N
  if type(a) == "number" then
    return a < 0 and -a or a
  end
  return a.neg or a
end

local function s_neg(m) -- -m for an N m
  if type(m) == "number" then
    return m == 0 and 0 or -m
  end
  return { neg = m }
end

local function s_cmp(a, b)
  local na, nb = s_isneg(a), s_isneg(b)
  if na ~= nb then
    return na and -1 or 1
  elseif na then
    return cmp(s_mag(b), s_mag(a))
  end
  return cmp(a, b)
end

local function s_add(a, b)
  if type(a) == "number" and type(b) == "number" then
    local v = a + b
    if v < TWO53 and v > -TWO53 then
      return v
    end
  end
  local na, nb = s_isneg(a), s_isneg(b)
  local ma, mb = s_mag(a), s_mag(b)
  if na == nb then
    local m = add(ma, mb)
    return na and s_neg(m) or m
  end
  local pos, negm = ma, mb -- the positive one's magnitude, the negative one's
  if na then
    pos, negm = mb, ma
  end
  if cmp(pos, negm) >= 0 then
    return sub(pos, negm)
  end
  return s_neg(sub(negm, pos))
end

local function s_sub(a, b)
  return s_add(a, s_isneg(b) and s_mag(b) or s_neg(b))
end

local function s_mul(a, m) -- a · m for an N m
  local p = mul(s_mag(a), m)
  return s_isneg(a) and s_neg(p) or p
end

local function s_min(a, b)
  return s_cmp(a, b) <= 0 and a or b
end

local function s_max(a, b)
  return s_cmp(a, b) >= 0 and a or b
end

local function s_floordiv(a, m) -- floor(a / m) for an N m > 0
  if s_isneg(a) then
    return s_neg(divceil(s_mag(a), m))
  end
  return div(a, m)
end

local U64_MAX = num("18446744073709551615")
local U128_MAX = num("340282366920938463463374607431768211455")

------------------------------------------------------------------------------
-- Arguments (core/src/args.rs, core/src/params.rs)
------------------------------------------------------------------------------

local function digits_only(s)
  return #s > 0 and not s:find("[^0-9]")
end

-- Redis's integer form: digits, no sign, no leading zero. Values below 10^16 only
-- (every bound checked here is below): nil for anything else.
local function plain_int(s)
  if not digits_only(s) or (#s > 1 and sbyte(s, 1) == 48) or #s > 16 then
    return nil
  end
  return tonumber(s)
end

local function count_arg(name, s)
  local v = plain_int(s)
  if not v or v < 1 or v > MAX_COUNT then
    fail(ERRORS.count(name))
  end
  return v
end

local function cost_arg(name, s)
  local v = plain_int(s)
  if not v or v > MAX_COUNT then
    fail(ERRORS.cost(name))
  end
  return v
end

local UNITS = { [""] = 1000, s = 1000, ms = 1, m = 60000, h = 3600000, d = 86400000 }

-- A duration's ms, at least `min` (1 for a window or period, 0 for a DELAY).
local function duration_ms(name, s, min)
  local number, unit = s:match("^([0-9]*)(.*)$")
  local per = #unit <= 2 and UNITS[unit:lower()]
  local v = per and #number <= 12 and plain_int(number)
  if not v or v * per < min or v * per > MAX_DURATION then
    fail(min == 0 and ERRORS.delay(name) or ERRORS.duration(name))
  end
  return v * per
end

local function duration_arg(name, s)
  return duration_ms(name, s, 1)
end

local function delay_arg(name, s)
  return duration_ms(name, s, 0)
end

-- An argument made safe to echo: Rust's escape_ascii of its first 32 bytes.
local ESCAPES = { [9] = "\\t", [10] = "\\n", [13] = "\\r", [34] = '\\"', [39] = "\\'", [92] = "\\\\" }

local function printable(s)
  local out = {}
  for i = 1, math.min(#s, 32) do
    local b = sbyte(s, i)
    if ESCAPES[b] then
      out[i] = ESCAPES[b]
    elseif b >= 32 and b < 127 then
      out[i] = schar(b)
    else
      out[i] = sfmt("\\x%02x", b)
    end
  end
  if #s > 32 then
    out[#out + 1] = "..."
  end
  return tconcat(out)
end

-- [COST n | REFUND n] (and DEBIT n, DELAY max, SHADOW when `takes` says so) from
-- args[i..]: {option, refund = bool, debit = bool, n = number}, delay (ms) when
-- given, and shadow = true when SHADOW was given (a flag: no value).
-- takes = {name = the command an error names, delay = bool, debit = bool}. in_all:
-- rl_all's options after its last policy, where a DELAY not taken is misplaced, not
-- unknown.
-- What a command takes (takes.refund false: no REFUND; takes.debit, takes.delay),
-- and how an error lists it: "COST n, REFUND n or DEBIT n, or DELAY max".
local function takes_option(takes, word)
  if word == "COST" then
    return true
  elseif word == "REFUND" then
    return takes.refund ~= false
  elseif word == "DEBIT" then
    return takes.debit == true
  elseif word == "SHADOW" then
    return takes.shadow == true
  end
  return word == "DELAY" and takes.delay == true
end

local function expected(takes)
  local words = {}
  for _, w in ipairs({ "COST", "REFUND", "DEBIT" }) do
    if takes_option(takes, w) then
      words[#words + 1] = w .. " n"
    end
  end
  local text = words[#words]
  if #words > 1 then
    text = table.concat(words, ", ", 1, #words - 1) .. " or " .. words[#words]
  end
  if takes.delay then
    text = text .. ", or DELAY max"
  end
  return text
end

-- The options after a command's parameters: one parser for every command. An option
-- RL has that this command does not take is named as not applying to it.
local function options(args, i, takes, in_all)
  local amount, delay, shadow
  while i <= #args do
    local word = args[i]:upper()
    local option
    if not OPTION_WORDS[word] then
      fail("ERR syntax error: unknown option '" .. printable(args[i]) .. "', expected " .. expected(takes))
    elseif not takes_option(takes, word) then
      if in_all and word == "DELAY" then
        fail(ERRORS.delay_without_gcra)
      end
      fail("ERR syntax error: " .. word .. " does not apply to " .. takes.name .. ", which takes " .. expected(takes))
    end
    if word == "SHADOW" then
      if shadow then
        fail("ERR syntax error: SHADOW given more than once")
      end
      shadow = true
      i = i - 1 -- a flag: no value follows
    elseif word == "DELAY" then
      if args[i + 1] == nil then
        fail("ERR syntax error: DELAY needs a value")
      end
      if delay then
        fail("ERR syntax error: DELAY given more than once")
      end
      delay = delay_arg("DELAY", args[i + 1])
    else
      option = word
      local value = args[i + 1]
      if value == nil then
        fail("ERR syntax error: " .. option .. " needs a value")
      end
      if amount then
        if amount.option == option then
          fail("ERR syntax error: " .. option .. " given more than once")
        elseif amount.option == "DEBIT" then
          fail("ERR syntax error: " .. option .. " and DEBIT exclude each other")
        elseif option == "DEBIT" then
          fail("ERR syntax error: " .. amount.option .. " and DEBIT exclude each other")
        end
        fail("ERR syntax error: COST and REFUND exclude each other")
      end
      local n
      if option == "DEBIT" then
        n = count_arg(option, value)
      else
        n = cost_arg(option, value)
      end
      amount = { option = option, refund = option == "REFUND", debit = option == "DEBIT", n = n }
    end
    i = i + 2
  end
  amount = amount or { option = "COST", refund = false, debit = false, n = 1 }
  if delay and amount.refund then
    fail("ERR syntax error: DELAY and REFUND exclude each other")
  end
  if delay and amount.debit then
    fail("ERR syntax error: DELAY and DEBIT exclude each other")
  end
  amount.delay = delay
  amount.shadow = shadow == true
  return amount
end

------------------------------------------------------------------------------
-- Keys
------------------------------------------------------------------------------

local function key_type(key)
  return redis.call("TYPE", key).ok
end

-- parse_canonical: digits, no leading zero, at most u128.
local function canonical(s)
  if not digits_only(s) or #s > 39 or (#s > 1 and sbyte(s, 1) == 48) then
    return nil
  end
  local v = num(s)
  if cmp(v, U128_MAX) > 0 then
    return nil
  end
  return v
end

-- A string state: (value, expires_at) or nil for no key; expires_at is nil when
-- the key has no expiry; `not_held`: the error when the value is no state of
-- this limiter's (an ERRORS.not_* line). `need_expiry`: a value without one is not this limiter's
-- state (RL.FIXED: its expiry says which window it counts); GCRA and the sliding
-- counter read their value alone (docs/commands.md), the next write sets one.
local function load_record(key, not_held, parse, need_expiry)
  local t = key_type(key)
  if t == "none" then
    return nil
  elseif t ~= "string" then
    fail(ERRORS.wrong_type)
  end
  local value = parse(redis.call("GET", key))
  local at = redis.call("PEXPIRETIME", key)
  if value == nil or (need_expiry and at < 0) then
    fail(not_held)
  end
  if at < 0 then
    at = nil
  end
  return value, at
end

local function delete(key)
  redis.call("DEL", key)
end

local function set_pxat(key, value, at)
  redis.call("SET", key, value, "PXAT", str(at))
end

------------------------------------------------------------------------------
-- Decisions: {allowed = bool, limit, remaining, retry (0 now, -1 never, else ms),
-- reset}. Each limiter: params(args, i) -> params, next i; decide(key, params,
-- now, amount) -> decision, write (a function, or nil).
------------------------------------------------------------------------------

local function refunded(d)
  d.allowed = true
  d.retry = 0
  return d
end

-- RL.FIXED ------------------------------------------------------------------

local function quota_params(args, i)
  return { limit = count_arg("limit", args[i]), window = duration_arg("window", args[i + 1]) }, i + 2
end

local function fixed_load(key)
  local used, at = load_record(key, ERRORS.not_fixed, function(s)
    local v = canonical(s)
    return v and cmp(v, U64_MAX) <= 0 and v or nil
  end, true)
  return used and { used = used, expires_at = at } or nil
end

local function fixed_take(stored, now, q, n)
  local w = q.window
  local window_end = now - fmod(now, w) + w
  local live = stored and stored.expires_at > now and stored or nil
  local used = live and live.used or 0
  local limit = q.limit
  local allowed = cmp(add(used, n), limit) <= 0
  local used_after = allowed and add(used, n) or used
  local store = allowed and n > 0 and { used = used_after, expires_at = window_end } or nil
  local resets_at = (store or live or { expires_at = window_end }).expires_at
  local retry = 0
  if not allowed then
    retry = n > limit and -1 or ms_until(resets_at, now)
  end
  return {
    allowed = allowed,
    limit = limit,
    remaining = satsub(limit, used_after),
    retry = retry,
    reset = used_after == 0 and 0 or ms_until(resets_at, now),
  },
    store
end

local FIXED = {
  params = quota_params,
  decide = function(key, q, now, amount)
    local stored = fixed_load(key)
    if amount.debit then
      -- used += n past the limit (stopping at 2^64 - 1), expiring at the window's end.
      local live = stored and stored.expires_at > now and stored or nil
      local used = nmin(add(live and live.used or 0, amount.n), U64_MAX)
      local window_end = now - fmod(now, q.window) + q.window
      local after = { used = used, expires_at = window_end }
      return refunded((fixed_take(after, now, q, 0))), function()
        set_pxat(key, str(used), window_end)
      end
    end
    if not amount.refund then
      local d, store = fixed_take(stored, now, q, amount.n)
      return d, store and function()
        set_pxat(key, str(store.used), store.expires_at)
      end
    end
    local n = amount.n
    local after, write = stored, nil
    if stored and stored.expires_at > now and stored.used ~= 0 and n > 0 then
      local used = satsub(stored.used, n)
      if used == 0 then
        after = nil
        write = function()
          delete(key)
        end
      else
        after = { used = used, expires_at = stored.expires_at }
        write = function()
          set_pxat(key, str(used), stored.expires_at)
        end
      end
    end
    return refunded((fixed_take(after, now, q, 0))), write
  end,
}

-- RL.SLIDING ----------------------------------------------------------------

local ZADD_CHUNK = 3000 -- members per ZADD call (Lua's C stack holds ~8000 values)

local function sliding_params(args, i)
  local q, j = quota_params(args, i)
  if q.limit > SLIDING_MAX then
    fail(ERRORS.sliding_limit)
  end
  return q, j
end

-- A score as a time RL writes: a whole number of ms in 0 ..= 2^53 - 1, else nil.
local function whole_ms(s)
  local v = s and tonumber(s)
  if v == nil or v ~= v or v < 0 or v > MAX_COUNT or v ~= floor(v) then
    return nil
  end
  return v
end

-- The one check every reader of a sorted set RL keeps makes (RL.SLIDING's log,
-- RL.ACQUIRE's leases, alone and in rl_all; the module's zset::check_times): its
-- lowest and highest scores are whole ms times, else `not_held` (an ERRORS.not_*
-- line).
-- The newest time; nil when the key is absent.
local function zset_times(key, not_held)
  local t = key_type(key)
  if t == "none" then
    return nil
  elseif t ~= "zset" then
    fail(ERRORS.wrong_type)
  end
  local oldest = redis.call("ZRANGE", key, 0, 0, "WITHSCORES")
  local newest = redis.call("ZRANGE", key, -1, -1, "WITHSCORES")
  local n = whole_ms(newest[2])
  if whole_ms(oldest[2]) == nil or n == nil then
    fail(not_held)
  end
  return n
end

-- The log's newest time, nil when the key is absent.
local function sliding_load(key)
  return zset_times(key, ERRORS.not_sliding)
end

local function count_after(key, newest, after)
  if newest == nil then
    return 0
  end
  return redis.call("ZCOUNT", key, "(" .. str(after), "+inf")
end

-- The k-th oldest unit after `after` (k >= 1), or nil.
local function nth_after(key, after, k)
  local r = redis.call("ZRANGEBYSCORE", key, "(" .. str(after), "+inf", "WITHSCORES", "LIMIT", k - 1, 1)
  return r[2] and ceil(tonumber(r[2])) or nil
end

-- Members are per-key sequence numbers: after the highest among the newest
-- time's members (leading zeros read, as the module does), skipping taken ones.
local function next_sequence(key, newest)
  if newest == nil then
    return 0
  end
  local next = 0
  for _, m in ipairs(redis.call("ZRANGEBYSCORE", key, str(newest), "+inf")) do
    if #m <= 15 and digits_only(m) then
      local seq = tonumber(m) -- exact below 10^15
      if cmp(seq, next) >= 0 then
        next = seq + 1
      end
    elseif #m <= 20 and digits_only(m) then
      local seq = num(m)
      if cmp(seq, U64_MAX) <= 0 then
        next = nmax(next, cmp(seq, U64_MAX) < 0 and add(seq, 1) or seq)
      end
    end
  end
  return next
end

local function sliding_append(key, newest, cutoff, at, units, expires_at)
  -- The members first, reading only: sequence numbers from next_sequence on,
  -- skipping members the set keeps after the trim (the module's ZADD NX), a chunk
  -- at a time. The last sequence number (2^64 - 1) can be given once: past it
  -- the call fails, after the trim and the units it could log (as the module).
  local seq = next_sequence(key, newest)
  local members, exhausted = {}, false
  while #members < units and not exhausted do
    local candidates = {}
    for i = 1, math.min(units - #members, ZADD_CHUNK) do
      candidates[i] = str(seq)
      if cmp(seq, U64_MAX) < 0 then
        seq = add(seq, 1)
      else
        exhausted = true
        break
      end
    end
    local scores = newest ~= nil and redis.call("ZMSCORE", key, unpack(candidates)) or {}
    for i, member in ipairs(candidates) do
      local score = scores[i] and tonumber(scores[i])
      if not score or score <= cutoff then
        members[#members + 1] = member
      end
    end
  end
  if newest ~= nil and redis.call("ZCOUNT", key, "-inf", str(cutoff)) > 0 then
    redis.call("ZREMRANGEBYSCORE", key, "-inf", str(cutoff))
  end
  local score = str(at)
  for first = 1, #members, ZADD_CHUNK do
    local batch = {}
    for i = first, math.min(first + ZADD_CHUNK - 1, #members) do
      batch[#batch + 1] = score
      batch[#batch + 1] = members[i]
    end
    redis.call("ZADD", key, unpack(batch))
  end
  if #members > 0 then
    redis.call("PEXPIREAT", key, str(expires_at))
  end
  if #members < units then
    -- As the module: what was written stays (and is replicated), the call fails.
    fail("ERR could not update the key (logging the new units)")
  end
end

local SLIDING = {
  params = sliding_params,
  decide = function(key, q, now, amount)
    local newest = sliding_load(key)
    local limit, w, n = q.limit, q.window, amount.n
    local at = newest and math.max(newest, now) or now
    local cutoff = at - w
    local counted = count_after(key, newest, cutoff)
    if amount.refund then
      local given = math.min(counted, n)
      local left = counted - given
      local newest_after = left > 0 and nth_after(key, cutoff, left) or nil
      local expires_at = newest_after and add(newest_after, w) or nil
      local d = refunded({
        limit = limit,
        remaining = satsub(limit, left),
        reset = expires_at and ms_until(expires_at, now) or 0,
      })
      if given == 0 then
        return d, nil
      end
      return d,
        function()
          if not expires_at then
            delete(key)
            return
          end
          local newest_members = redis.call("ZREVRANGE", key, 0, given - 1)
          if redis.call("ZCOUNT", key, "-inf", str(cutoff)) > 0 then
            redis.call("ZREMRANGEBYSCORE", key, "-inf", str(cutoff))
          end
          for first = 1, #newest_members, ZADD_CHUNK do
            redis.call("ZREM", key, unpack(newest_members, first, math.min(first + ZADD_CHUNK - 1, #newest_members)))
          end
          redis.call("PEXPIREAT", key, str(expires_at))
        end
    end
    local total = add(counted, n)
    local allowed = cmp(total, limit) <= 0
    local counted_after = allowed and total or counted
    local retry = 0
    if not allowed then
      if n > limit then
        retry = -1
      else
        local t_k = nth_after(key, cutoff, counted + n - limit) or at
        retry = ms_until(add(t_k, w), now)
      end
    end
    local wrote = allowed and n > 0
    local newest_after = wrote and at or newest
    local d = {
      allowed = allowed,
      limit = limit,
      remaining = satsub(limit, counted_after),
      retry = retry,
      reset = (newest_after and counted_after ~= 0) and ms_until(add(newest_after, w), now) or 0,
    }
    return d, wrote and function()
      sliding_append(key, newest, cutoff, at, n, add(at, w))
    end
  end,
}

-- RL.BUCKET -----------------------------------------------------------------

local MICROS = 1000000
-- The deepest debt a bucket holds, in millionths: -(2^53 - 1) tokens.
local DEEPEST_MICROS = mul(MAX_COUNT, MICROS)

local function rate_params(args, i)
  return {
    capacity = count_arg("capacity", args[i]),
    tokens = count_arg("tokens", args[i + 1]),
    period = duration_arg("period", args[i + 2]),
  },
    i + 3
end

-- "12", "2.5", "0.333333", "-3" (a debt): signed millionths of a token, extra
-- decimals cut off, rounding down (toward -inf); nil below the deepest debt.
local function parse_micros(s)
  local negative = sbyte(s, 1) == 45 -- "-"
  if negative then
    s = ssub(s, 2)
  end
  local int, frac = s:match("^([^.]*)%.(.*)$")
  if int == nil then
    int, frac = s, ""
  elseif frac == "" then
    return nil
  end
  if int == "" or #int > 30 or not digits_only(int) or (frac ~= "" and not digits_only(frac)) then
    return nil
  end
  local m = num(int .. ssub(frac .. "000000", 1, 6))
  if not negative then
    return m
  end
  if ssub(frac, 7):find("[1-9]") then
    m = add(m, 1)
  end
  if cmp(m, DEEPEST_MICROS) > 0 then
    return nil
  end
  return s_neg(m)
end

local function format_micros(m)
  local whole, frac = divmod(s_mag(m), MICROS)
  local sign = s_isneg(m) and "-" or ""
  if frac == 0 then
    return sign .. str(whole)
  end
  local f = sfmt("%06d", frac):gsub("0+$", "")
  return sign .. str(whole) .. "." .. f
end

local function bucket_load(key)
  local t = key_type(key)
  if t == "none" then
    return nil
  elseif t ~= "hash" then
    fail(ERRORS.wrong_type)
  end
  local f = redis.call("HMGET", key, "tokens", "ts")
  local level = f[1] and parse_micros(f[1])
  local ts = f[2] and digits_only(f[2]) and #f[2] <= 20 and num(f[2])
  if not level or not ts or cmp(ts, MAX_COUNT) > 0 then
    fail(ERRORS.not_bucket)
  end
  return { level = level, ts = ts }
end

-- Levels below are signed exact integers in 1 / (10^6 · period) token.
local function bucket_rate(r)
  local token = mul(MICROS, r.period) -- one token in the exact unit
  return {
    capacity = r.capacity,
    period = r.period,
    token = token,
    per_ms = mul(r.tokens, MICROS),
    full = mul(r.capacity, token),
    deepest = s_neg(mul(MAX_COUNT, token)),
  }
end

local function level_at(stored, now, r)
  if not stored then
    return now, r.full
  end
  local at = math.max(now, stored.ts)
  local micros = s_max(s_min(stored.level, div(r.full, r.period)), s_neg(DEEPEST_MICROS))
  local base = s_mul(micros, r.period)
  local elapsed = math.max(at - stored.ts, 0)
  if cmp(elapsed, divceil(s_sub(r.full, base), r.per_ms)) >= 0 then
    return at, r.full
  end
  return at, s_add(base, mul(elapsed, r.per_ms))
end

local function settle(at, level, now, r)
  local resets_at = add(at, cap(divceil(s_sub(r.full, level), r.per_ms)))
  return { level = s_floordiv(level, r.period), ts = at, expires_at = resets_at },
    {
      allowed = true,
      limit = r.capacity,
      remaining = s_isneg(level) and 0 or div(level, r.token),
      retry = 0,
      reset = s_cmp(level, r.full) >= 0 and 0 or ms_until(resets_at, now),
    }
end

local BUCKET = {
  params = rate_params,
  decide = function(key, params, now, amount)
    local r = bucket_rate(params)
    local stored = bucket_load(key)
    local at, level = level_at(stored, now, r)
    local n = amount.n
    local write_store = function(s)
      return function()
        redis.call("HSET", key, "tokens", format_micros(s.level), "ts", str(s.ts))
        redis.call("PEXPIREAT", key, str(s.expires_at))
      end
    end
    if amount.debit then
      -- level -= n, below zero if need be, down to the deepest debt.
      local s, d = settle(at, s_max(s_sub(level, mul(n, r.token)), r.deepest), now, r)
      return d, write_store(s)
    end
    if amount.refund then
      local level_after = s_min(s_add(level, mul(n, r.token)), r.full)
      local s, d = settle(at, level_after, now, r)
      if not stored or s_cmp(level_after, level) == 0 then
        return d, nil
      elseif s_cmp(level_after, r.full) == 0 then
        return d, function()
          delete(key)
        end
      end
      return d, write_store(s)
    end
    local wanted = mul(n, r.token)
    local allowed = s_cmp(wanted, level) <= 0
    local s, d = settle(at, allowed and s_sub(level, wanted) or level, now, r)
    d.allowed = allowed
    if not allowed then
      if n > r.capacity then
        d.retry = -1
      else
        d.retry = ms_until(add(at, cap(divceil(s_sub(wanted, level), r.per_ms))), now)
      end
    end
    return d, (allowed and n > 0) and write_store(s) or nil
  end,
}

-- RL.GCRA -------------------------------------------------------------------

local NS_PER_MS = 1000000

local function gcra_params(args, i)
  local r, j = rate_params(args, i)
  local interval = div(mul(r.period, NS_PER_MS), r.tokens)
  if interval == 0 then
    fail(ERRORS.rate_too_high)
  end
  return { capacity = r.capacity, interval = interval, tolerance = mul(r.capacity, interval), max_wait = 0 }, j
end

-- The same rate with DELAY max (ms): a call may wait up to max_wait ns for its turn.
local function gcra_delayed(e, max_ms)
  return { capacity = e.capacity, interval = e.interval, tolerance = e.tolerance, max_wait = mul(max_ms, NS_PER_MS) }
end

local function gcra_expiry(now, debt)
  return add(now, cap(divceil(debt, NS_PER_MS)))
end

local function gcra_take(tat, now, e, n)
  local now_ns = mul(math.max(now, 0), NS_PER_MS)
  local base = tat and nmax(tat, now_ns) or now_ns
  local debt = sub(base, now_ns)
  local t, d = e.interval, e.tolerance
  local increment = mul(n, t)
  local wanted = add(debt, increment)
  local allowed = n <= e.capacity and cmp(wanted, add(d, e.max_wait)) <= 0
  local debt_after = allowed and wanted or debt
  local store = (allowed and n > 0) and { tat = add(base, increment), expires_at = gcra_expiry(now, debt_after) }
    or nil
  local retry
  if allowed then
    -- The debt beyond D is the wait before acting (none without DELAY).
    retry = cap(divceil(satsub(wanted, d), NS_PER_MS))
  else
    retry = n > e.capacity and -1 or cap(divceil(sub(sub(wanted, d), e.max_wait), NS_PER_MS))
  end
  return {
    allowed = allowed,
    limit = e.capacity,
    remaining = nmin(div(satsub(d, debt_after), t), e.capacity),
    retry = retry,
    reset = cap(divceil(debt_after, NS_PER_MS)),
  },
    store
end

local GCRA = {
  params = gcra_params,
  delayed = gcra_delayed,
  decide = function(key, e, now, amount)
    local tat = load_record(key, ERRORS.not_gcra, canonical)
    local n = amount.n
    if amount.debit then
      -- TAT = max(TAT, now) + n·T, no cap at D (stopping at 2^128 - 1).
      local now_ns = mul(math.max(now, 0), NS_PER_MS)
      local left = nmin(add(tat and nmax(tat, now_ns) or now_ns, mul(n, e.interval)), U128_MAX)
      local at = gcra_expiry(now, sub(left, now_ns))
      return refunded((gcra_take(left, now, e, 0))), function()
        set_pxat(key, str(left), at)
      end
    end
    if not amount.refund then
      local d, store = gcra_take(tat, now, e, n)
      return d, store and function()
        set_pxat(key, str(store.tat), store.expires_at)
      end
    end
    local now_ns = mul(math.max(now, 0), NS_PER_MS)
    local after, write = tat, nil
    if tat and cmp(tat, now_ns) > 0 and n > 0 then
      local left = satsub(tat, mul(n, e.interval))
      if cmp(left, now_ns) <= 0 then
        after = nil
        write = function()
          delete(key)
        end
      else
        after = left
        local at = gcra_expiry(now, sub(left, now_ns))
        write = function()
          set_pxat(key, str(left), at)
        end
      end
    end
    return refunded((gcra_take(after, now, e, 0))), write
  end,
}

-- RL.SLIDINGCOUNTER ---------------------------------------------------------

local function sc_parse(s)
  local a, b, c = s:match("^([^ ]*) ([^ ]*) ([^ ]*)$")
  if a == nil then
    return nil
  end
  local start, current, previous = canonical(a), canonical(b), canonical(c)
  if
    not start
    or not current
    or not previous
    or cmp(start, MAX_COUNT) > 0
    or cmp(current, U64_MAX) > 0
    or cmp(previous, U64_MAX) > 0
  then
    return nil
  end
  return { start = start, current = current, previous = previous }
end

local function sc_view(stored, now, w)
  stored = stored or { start = now, current = 0, previous = 0 }
  local at = math.max(now, stored.start)
  local i = floor(at / w)
  if i * w > at then
    i = i - 1
  elseif (i + 1) * w <= at then
    i = i + 1
  end
  local j = floor(stored.start / w)
  if j * w > stored.start then
    j = j - 1
  elseif (j + 1) * w <= stored.start then
    j = j + 1
  end
  local cur, prev = 0, 0
  if j == i then
    cur, prev = stored.current, stored.previous
  elseif i - j == 1 then
    prev = stored.current
  end
  return at, i * w, cur, prev
end

local function sc_wait(cur, prev, limit, n, w, e)
  local left = w - e
  local weight_ok
  if cmp(add(cur, n), limit) <= 0 and prev ~= 0 then
    weight_ok = div(mul(sub(limit, add(cur, n)), w), prev)
  end
  if weight_ok and weight_ok ~= 0 then
    return left - nmin(weight_ok, left - 1)
  end
  local e2 = 0
  if cmp(add(cur, n), limit) > 0 then
    e2 = w - nmin(div(mul(limit - n, w), cur), w)
  end
  return left + e2
end

local function sc_take(stored, now, q, n)
  local w, limit = q.window, q.limit
  local at, window_start, cur, prev = sc_view(stored, now, w)
  local lag = math.max(at - now, 0)
  local e = at - window_start
  local weighted_prev = mul(prev, w - e)
  local allowed = n <= limit and cmp(add(mul(add(cur, n), w), weighted_prev), mul(limit, w)) <= 0
  local cur_after = allowed and add(cur, n) or cur
  local store = (allowed and n > 0)
      and { start = window_start, current = cur_after, previous = prev, expires_at = add(window_start, 2 * w) }
    or nil
  local retry = 0
  if not allowed then
    retry = n > limit and -1 or cap(add(lag, sc_wait(cur, prev, limit, n, w, e)))
  end
  local till = 0
  if cur_after ~= 0 then
    till = 2 * w - e
  elseif prev ~= 0 then
    till = w - e
  end
  return {
    allowed = allowed,
    limit = limit,
    remaining = nmin(satsub(satsub(limit, cur_after), divceil(weighted_prev, w)), limit),
    retry = retry,
    reset = till == 0 and 0 or cap(add(lag, till)),
  },
    store
end

local function sc_write(key, s)
  return function()
    set_pxat(key, str(s.start) .. " " .. str(s.current) .. " " .. str(s.previous), s.expires_at)
  end
end

local SLIDINGCOUNTER = {
  params = quota_params,
  decide = function(key, q, now, amount)
    local stored = load_record(key, ERRORS.not_slidingcounter, sc_parse)
    local n = amount.n
    if amount.debit then
      -- current += n past the limit (stopping at 2^64 - 1).
      local _, window_start, cur, prev = sc_view(stored, now, q.window)
      local s = {
        start = window_start,
        current = nmin(add(cur, n), U64_MAX),
        previous = prev,
        expires_at = add(window_start, 2 * q.window),
      }
      return refunded((sc_take(s, now, q, 0))), sc_write(key, s)
    end
    if not amount.refund then
      local d, store = sc_take(stored, now, q, n)
      return d, store and sc_write(key, store)
    end
    local _, window_start, cur, prev = sc_view(stored, now, q.window)
    local from_current = nmin(cur, n)
    local from_previous = nmin(prev, n - from_current)
    local cur_after, prev_after = sub(cur, from_current), sub(prev, from_previous)
    local after, write = stored, nil
    if stored and add(from_current, from_previous) ~= 0 then
      if cur_after == 0 and prev_after == 0 then
        after = nil
        write = function()
          delete(key)
        end
      else
        after = { start = window_start, current = cur_after, previous = prev_after }
        write = sc_write(key, {
          start = window_start,
          current = cur_after,
          previous = prev_after,
          expires_at = add(window_start, 2 * q.window),
        })
      end
    end
    return refunded((sc_take(after, now, q, 0))), write
  end,
}

-- RL.ACQUIRE / RL.RELEASE ---------------------------------------------------

local function lease_id(s)
  if s == nil or #s < 1 or #s > MAX_ID then
    fail(ERRORS.lease_id)
  end
  return s
end

local function lease_params(args, i)
  local limit = plain_int(args[i])
  if not limit or limit < 1 or limit > SLIDING_MAX then
    fail(ERRORS.lease_limit)
  end
  return { limit = limit, ttl = duration_arg("ttl", args[i + 1]), id = lease_id(args[i + 2]) }, i + 3
end

-- Whether the key holds leases (false when absent): zset_times, as for a log.
local function lease_load(key)
  return zset_times(key, ERRORS.not_leases) ~= nil
end

-- The latest lease end after now among the leases not named `except`, or nil.
local function latest_live(key, now, except)
  local top = redis.call("ZRANGE", key, -2, -1, "WITHSCORES")
  for j = #top - 1, 1, -2 do
    if top[j] ~= except then
      local e = ceil(tonumber(top[j + 1]))
      return e > now and e or nil
    end
  end
  return nil
end

-- The end of lease `id` if it is live, else nil.
local function live_end(key, now, id)
  local s = redis.call("ZSCORE", key, id)
  local e = s and ceil(tonumber(s))
  return (e and e > now) and e or nil
end

local ACQUIRE = {
  params = lease_params,
  decide = function(key, p, now, amount)
    if amount.refund then
      fail(ERRORS.lease_refund)
    end
    local present = lease_load(key)
    local limit = p.limit
    local ended = present and redis.call("ZCOUNT", key, "-inf", str(now)) or 0
    local live = present and redis.call("ZCARD", key) - ended or 0
    local function reset_now()
      local l = present and latest_live(key, now, nil)
      return l and ms_until(l, now) or 0
    end
    if amount.n == 0 then
      return { allowed = true, limit = limit, remaining = satsub(limit, live), retry = 0, reset = reset_now() }, nil
    end
    local held = present and live_end(key, now, p.id)
    if not held and live >= limit then
      local first = redis.call("ZRANGEBYSCORE", key, "(" .. str(now), "+inf", "WITHSCORES", "LIMIT", 0, 1)
      local retry = math.max(ms_until(ceil(tonumber(first[2])), now), 1)
      return { allowed = false, limit = limit, remaining = 0, retry = retry, reset = reset_now() }, nil
    end
    local e = now + p.ttl
    local other = present and latest_live(key, now, p.id)
    local latest = other and math.max(other, e) or e
    local trim, renew = ended > 0, held ~= e
    local d = {
      allowed = true,
      limit = limit,
      remaining = satsub(limit, held and live or live + 1),
      retry = 0,
      reset = ms_until(latest, now),
    }
    if not trim and not renew then
      return d, nil
    end
    return d,
      function()
        if trim then
          redis.call("ZREMRANGEBYSCORE", key, "-inf", str(now))
        end
        if renew then
          redis.call("ZADD", key, str(e), p.id)
          redis.call("PEXPIREAT", key, str(latest))
        end
      end
  end,
}

-- RL.PENALTY ----------------------------------------------------------------

local function penalty_params(args, i)
  local p = {
    strikes = count_arg("strikes", args[i]),
    window = duration_arg("window", args[i + 1]),
    block = duration_arg("block", args[i + 2]),
    max = duration_arg("max", args[i + 3]),
  }
  if p.block > p.max then
    fail(ERRORS.block_above_max)
  end
  return p, i + 4
end


-- Four canonical decimals, one space apart, each at most 2^53 - 1.
local function penalty_parse(s)
  local f = { s:match("^([^ ]*) ([^ ]*) ([^ ]*) ([^ ]*)$") }
  if #f ~= 4 then
    return nil
  end
  for k = 1, 4 do
    f[k] = canonical(f[k])
    if not f[k] or cmp(f[k], MAX_COUNT) > 0 then
      return nil
    end
  end
  return { count = f[1], window_end = f[2], level = f[3], blocked_until = f[4] }
end

-- block * 2^level, at most max (the loop stops there, whatever the level).
local function penalty_block(p, level)
  local length, doubled = p.block, 0
  while doubled < level and length < p.max do
    length, doubled = length * 2, doubled + 1
  end
  return math.min(length, p.max)
end

-- The state as a call at now sees it: an ended window holds no strikes; an
-- offender quiet for max after the last block is forgiven (never while blocked).
local function penalty_at(s, now, p)
  local v = { count = s.count, window_end = s.window_end, level = s.level, blocked_until = s.blocked_until }
  if now >= v.window_end then
    v.count, v.window_end = 0, 0
  end
  if v.level > 0 and cmp(now, add(v.blocked_until, p.max)) >= 0 then
    v.level = 0
  end
  return v
end

-- When the key is back to its initial state: also its expiry.
local function penalty_resets_at(s, p)
  local at = nmax(s.window_end, s.blocked_until)
  if s.level > 0 then
    at = nmax(at, add(s.blocked_until, p.max))
  end
  return at
end

local function penalty_report(s, now, p)
  local blocked = now < s.blocked_until
  return {
    allowed = not blocked,
    limit = p.strikes,
    remaining = blocked and 0 or satsub(p.strikes, s.count),
    retry = blocked and ms_until(s.blocked_until, now) or 0,
    reset = ms_until(penalty_resets_at(s, p), now),
  }
end

local PENALTY = {
  params = penalty_params,
  decide = function(key, p, now, amount)
    local stored = load_record(key, ERRORS.not_penalty, penalty_parse)
    local seen = penalty_at(stored or { count = 0, window_end = 0, level = 0, blocked_until = 0 }, now, p)
    local n = amount.n
    if now < seen.blocked_until or n == 0 then
      return penalty_report(seen, now, p), nil
    end
    local after
    -- count + n >= strikes, without adding two values that may be near 2^53.
    if n >= satsub(p.strikes, seen.count) then
      after = {
        count = 0,
        window_end = 0,
        level = math.min(seen.level + 1, MAX_COUNT),
        blocked_until = now + penalty_block(p, seen.level),
      }
    else
      after = {
        count = seen.count + n,
        window_end = seen.count == 0 and now + p.window or seen.window_end,
        level = seen.level,
        blocked_until = seen.blocked_until,
      }
    end
    return penalty_report(after, now, p),
      function()
        local fields = { str(after.count), str(after.window_end), str(after.level), str(after.blocked_until) }
        set_pxat(key, tconcat(fields, " "), penalty_resets_at(after, p))
      end
  end,
}

-- RL.SHARE ------------------------------------------------------------------

-- One budget shared by weight across tenants (docs/commands.md#rlshare): the
-- budget's GCRA, each remembered tenant's own GCRA at its weighted share
-- (T_i = T·W/w), the surplus lent; tenants remembered in time slots until a
-- period after their last write; a bounded sweep of forgotten tenants' fields.
-- TATs, D, T_i and the products are exact integers (N); the counts and times in
-- the records are plain numbers below 2^53 as read, and N when a sum passes it.
local SHARE
do
  local WHAT = "an RL.SHARE budget (a hash of the fields g, t:<tenant>, s:<n> and i:<n> that RL.SHARE writes)"
  local SLOTS = 8 -- time slots per period, and closed slots kept at most
  local SWEEP_STEPS = 2 -- index entries a write examines at most
  local NS = 1000000 -- ns per ms
  local NO, OWN, SURPLUS = 0, 1, 2 -- how a call passes

  local function corrupt()
    fail("ERR key does not hold " .. WHAT)
  end

  local function params(args, i)
    local tenant = args[i]
    if #tenant < 1 or #tenant > 256 then
      fail("ERR tenant must be 1 to 256 bytes")
    end
    local weight = plain_int(args[i + 1])
    if not weight or weight < 1 or weight > 10000 then
      fail("ERR weight must be an integer from 1 to 10000")
    end
    local r = rate_params(args, i + 2)
    local interval = div(mul(r.period, NS), r.tokens)
    if interval == 0 then
      fail(
        "ERR tokens per period is too high for an RL.SHARE budget: at most one token per "
          .. "nanosecond (1000000 per ms)"
      )
    end
    return {
      tenant = tenant,
      weight = weight,
      capacity = r.capacity,
      interval = interval,
      tolerance = mul(r.capacity, interval),
      period = r.period,
      slot = math.max(ceil(r.period / SLOTS), 1),
      max_tenants = SHARE_MAX_TENANTS,
    },
      i + 5
  end

  -- Exactly `count` canonical decimals (each at most 2^128 - 1) one space apart,
  -- or nil; `small`: from the `small`-th on, each at most 2^53 - 1.
  local function numbers(s, count, small)
    local out, pos = {}, 1
    for k = 1, count do
      local sp = s:find(" ", pos, true)
      local part
      if k < count then
        if not sp then
          return nil
        end
        part, pos = ssub(s, pos, sp - 1), sp + 1
      elseif sp then
        return nil
      else
        part = ssub(s, pos)
      end
      local v = canonical(part)
      if not v or (k >= small and cmp(v, MAX_COUNT) > 0) then
        return nil
      end
      out[k] = v
    end
    return out
  end

  local G_NAMES = {
    "tat",
    "debt_end",
    "weight",
    "tenants",
    "len",
    "cursor",
    "seq",
    "end_",
    "slot_weight",
    "slot_tenants",
    "closed",
    "oldest_end",
  }

  local function global_parse(s)
    local f = numbers(s, 12, 3)
    if not f then
      corrupt()
    end
    local g = {}
    for k, name in ipairs(G_NAMES) do
      g[name] = f[k]
    end
    return g
  end

  local function global_new()
    local g = {}
    for _, name in ipairs(G_NAMES) do
      g[name] = 0
    end
    return g
  end

  -- A count or time as stored: at most 2^53 - 1.
  local function small(v)
    return str(nmin(v, MAX_COUNT))
  end

  local function global_format(g)
    local out = { str(g.tat), str(g.debt_end) }
    for k = 3, 12 do
      out[k] = small(g[G_NAMES[k]])
    end
    return tconcat(out, " ")
  end

  -- Whether a tenant last written in slot `seq` is remembered.
  local function remembers(g, seq)
    return cmp(seq, g.seq) == 0 or (cmp(seq, g.seq) < 0 and cmp(sub(g.seq, seq), g.closed) <= 0)
  end

  local function member_format(m)
    return str(m.tat) .. " " .. small(m.weight) .. " " .. small(m.seq) .. " " .. small(m.index)
  end

  local function slot_format(s)
    return small(s.end_) .. " " .. small(s.weight) .. " " .. small(s.tenants)
  end

  local function slot_field(seq)
    return "s:" .. str(fmod(seq, SLOTS))
  end

  local function index_field(position)
    return "i:" .. str(position)
  end

  -- The fields a call reads (HGET, one at a time) and the changes it makes on top
  -- of them: every field written, in the order first written (false: deleted).
  local function txn(key)
    local t = key_type(key)
    if t ~= "none" and t ~= "hash" then
      fail(ERRORS.wrong_type)
    end
    local present = t == "hash"
    local x = { key = key, names = {}, values = {}, at = {} }
    function x.get(name)
      local k = x.at[name]
      if k then
        return x.values[k] or nil
      end
      local v = present and redis.call("HGET", key, name)
      return v or nil
    end
    function x.put(name, value)
      local k = x.at[name]
      if not k then
        k = #x.names + 1
        x.names[k], x.at[name] = name, k
      end
      x.values[k] = value
    end
    function x.member(tenant)
      local v = x.get("t:" .. tenant)
      if v == nil then
        return nil
      end
      local f = numbers(v, 4, 2)
      if not f then
        corrupt()
      end
      return { tat = f[1], weight = f[2], seq = f[3], index = f[4] }
    end
    function x.slot(seq)
      local v = x.get(slot_field(seq))
      local f = v and numbers(v, 3, 1)
      if not f then
        corrupt()
      end
      return { end_ = f[1], weight = f[2], tenants = f[3] }
    end
    -- HSET of the fields set, HDEL of those deleted (if any), PEXPIREAT when the
    -- expiry changes.
    function x.write(expires_at)
      return function()
        local set, del = {}, {}
        for k, name in ipairs(x.names) do
          local v = x.values[k]
          if v then
            set[#set + 1] = name
            set[#set + 1] = v
          else
            del[#del + 1] = name
          end
        end
        redis.call("HSET", key, unpack(set))
        if #del > 0 then
          redis.call("HDEL", key, unpack(del))
        end
        -- PEXPIRETIME is exact below 2^53 ms, where every real expiry is.
        if type(expires_at) ~= "number" or redis.call("PEXPIRETIME", key) ~= expires_at then
          redis.call("PEXPIREAT", key, str(expires_at))
        end
      end
    end
    return x
  end

  -- When the key expires: at the end of the slot in which the budget is back at
  -- its initial state. Rounded up to a slot, the expiry stays the same for the
  -- calls of a slot, which then set no new one.
  local function key_expiry(p, now, reset)
    return mul(divceil(add(now, reset), p.slot), p.slot)
  end

  -- Forgets the slots that ended at least a period ago (closed ones oldest first,
  -- then the current one), deleting their fields.
  local function forget(x, g, period, now)
    while cmp(g.closed, 0) > 0 and cmp(add(g.oldest_end, period), now) <= 0 do
      if cmp(g.seq, g.closed) < 0 then
        corrupt()
      end
      local seq = sub(g.seq, g.closed)
      local slot = x.slot(seq)
      g.weight = satsub(g.weight, slot.weight)
      g.tenants = satsub(g.tenants, slot.tenants)
      x.put(slot_field(seq), false)
      g.closed = sub(g.closed, 1)
      g.oldest_end = cmp(g.closed, 0) > 0 and x.slot(add(seq, 1)).end_ or 0
    end
    if cmp(g.slot_tenants, 0) > 0 and cmp(add(g.end_, period), now) <= 0 then
      g.weight = satsub(g.weight, g.slot_weight)
      g.tenants = satsub(g.tenants, g.slot_tenants)
      g.slot_weight, g.slot_tenants = 0, 0
      g.seq = nmin(add(g.seq, 1), MAX_COUNT)
    end
  end

  -- A tenant's standing: the budget's debt g, its own d, W with it at this
  -- call's weight, and T_i = max(floor(T·W/w), 1).
  local function standing(g, d, total, p)
    return { g = g, d = d, total = total, own = nmax(div(mul(p.interval, nmax(total, 1)), p.weight), 1) }
  end

  local function admits(s, p, n)
    local t, dd = p.interval, p.tolerance
    local nt = mul(n, t)
    -- Within the budget: g + n·T <= D (and n <= capacity).
    if n > p.capacity or cmp(add(s.g, nt), dd) > 0 then
      return NO
    end
    -- Within the share: no debt, or d + n·T_i <= D.
    if s.d == 0 or cmp(add(s.d, mul(n, s.own)), dd) <= 0 then
      return OWN
    end
    -- From the surplus: W·g <= w·(D - n·T).
    if cmp(nt, dd) <= 0 and cmp(mul(s.total, s.g), mul(p.weight, sub(dd, nt))) <= 0 then
      return SURPLUS
    end
    return NO
  end

  local function remaining(s, p)
    local t, dd, c, w = p.interval, p.tolerance, p.capacity, p.weight
    local budget = div(satsub(dd, s.g), t)
    local own = c
    if s.d ~= 0 then
      own = div(satsub(dd, s.d), s.own)
    end
    local wd, used = mul(w, dd), mul(s.total, s.g)
    local surplus = 0
    if cmp(used, wd) <= 0 then
      surplus = div(sub(wd, used), mul(w, t))
    end
    return nmin(nmin(budget, nmax(own, surplus)), c)
  end

  -- The wait in ns until a call of n (<= capacity) passes if nothing else happens.
  local function wait(s, p, n)
    local dd = p.tolerance
    local nt = mul(n, p.interval)
    local budget = satsub(nmin(add(s.g, nt), U128_MAX), dd)
    local share = nmin(s.d, satsub(nmin(add(s.d, mul(n, s.own)), U128_MAX), dd))
    local room = div(mul(p.weight, satsub(dd, nt)), s.total)
    return nmax(budget, nmin(share, satsub(s.g, room)))
  end

  local function reset_after(debt, g, p, now, now_ns)
    local budget = cap(divceil(debt, NS))
    local owed = cap(divceil(satsub(g.debt_end, now_ns), NS))
    local tenants = 0
    if cmp(g.tenants, 0) > 0 then
      tenants = satsub(add(g.end_, p.period), now)
    end
    return nmin(nmax(nmax(budget, owed), tenants), MAX_COUNT)
  end

  local function report(s, p, g, now, now_ns, n)
    local allowed = admits(s, p, n) ~= NO
    local retry = 0
    if not allowed then
      retry = n > p.capacity and -1 or math.max(cap(divceil(wait(s, p, n), NS)), 1)
    end
    return {
      allowed = allowed,
      limit = p.capacity,
      remaining = remaining(s, p),
      retry = retry,
      reset = reset_after(s.g, g, p, now, now_ns),
    }
  end

  -- Removes forgotten tenants' fields: up to SWEEP_STEPS index entries from the
  -- cursor while the index holds more entries than tenants remembered.
  local function sweep(x, g, now_ns, max_tenants)
    for _ = 1, SWEEP_STEPS do
      if cmp(g.len, g.tenants) <= 0 then
        break
      end
      if cmp(g.cursor, g.len) >= 0 then
        g.cursor = 0
      end
      local at = g.cursor
      local name = x.get(index_field(at))
      local record = name and x.member(name)
      if not record then
        corrupt()
      end
      local crowded = cmp(g.len, max_tenants * 2) > 0
      if remembers(g, record.seq) or (cmp(record.tat, now_ns) > 0 and not crowded) then
        g.cursor = add(at, 1)
      else
        x.put("t:" .. name, false)
        local last = sub(g.len, 1)
        if cmp(at, last) ~= 0 then
          local moved = x.get(index_field(last))
          local m = moved and x.member(moved)
          if not m then
            corrupt()
          end
          m.index = at
          x.put("t:" .. moved, member_format(m))
          x.put(index_field(at), moved)
        end
        x.put(index_field(last), false)
        g.len = last
      end
    end
    if cmp(g.cursor, g.len) >= 0 then
      g.cursor = 0
    end
  end

  -- Registers the call's tenant: a new slot if the current one has ended, its
  -- weight moved into the current slot (or added), its record with own TAT
  -- `own_tat`, the sweep, the global record.
  local function join(x, g, member, live, p, now, now_ns, own_tat)
    if cmp(now, g.end_) >= 0 then
      local s = p.slot
      local ends = nmin(add(now - fmod(now, s), s), MAX_COUNT)
      if cmp(g.slot_tenants, 0) > 0 and cmp(g.closed, SLOTS) < 0 then
        x.put(slot_field(g.seq), slot_format({ end_ = g.end_, weight = g.slot_weight, tenants = g.slot_tenants }))
        if cmp(g.closed, 0) == 0 then
          g.oldest_end = g.end_
        end
        g.closed = add(g.closed, 1)
        g.seq = nmin(add(g.seq, 1), MAX_COUNT)
        g.slot_weight, g.slot_tenants = 0, 0
      end
      g.end_ = ends
    end
    local tenant, w = p.tenant, p.weight
    local index
    if member and live then
      if cmp(member.seq, g.seq) == 0 then
        g.slot_weight = satsub(g.slot_weight, member.weight)
      else
        local slot = x.slot(member.seq)
        slot.weight = satsub(slot.weight, member.weight)
        slot.tenants = satsub(slot.tenants, 1)
        x.put(slot_field(member.seq), slot_format(slot))
        g.slot_tenants = add(g.slot_tenants, 1)
      end
      g.weight = satsub(g.weight, member.weight)
      index = member.index
    elseif member then
      -- A forgotten tenant keeps its place in the index.
      if cmp(member.index, g.len) >= 0 or x.get(index_field(member.index)) ~= tenant then
        corrupt()
      end
      g.tenants = add(g.tenants, 1)
      g.slot_tenants = add(g.slot_tenants, 1)
      index = member.index
    else
      index = g.len
      x.put(index_field(index), tenant)
      g.len = add(g.len, 1)
      g.tenants = add(g.tenants, 1)
      g.slot_tenants = add(g.slot_tenants, 1)
    end
    g.weight = add(g.weight, w)
    g.slot_weight = add(g.slot_weight, w)
    g.debt_end = nmax(g.debt_end, own_tat)
    x.put("t:" .. tenant, member_format({ tat = own_tat, weight = w, seq = g.seq, index = index }))
    sweep(x, g, now_ns, p.max_tenants)
    x.put("g", global_format(g))
  end

  SHARE = {
    name = "SHARE",
    debit = true,
    params = params,
    decide = function(key, p, now, amount)
      now = math.min(math.max(now, 0), MAX_COUNT)
      local now_ns = mul(now, NS)
      local x = txn(key)
      local stored = x.get("g")
      local g = stored and global_parse(stored) or global_new()
      forget(x, g, p.period, now)
      local member = x.member(p.tenant)
      local live = member ~= nil and remembers(g, member.seq)
      local w = p.weight
      local total = add(satsub(g.weight, live and member.weight or 0), w)
      local function debt(tat)
        return satsub(tat, now_ns)
      end
      -- A forgotten tenant's share no longer counts, but what it owes it still owes.
      local st = standing(debt(g.tat), member and debt(member.tat) or 0, total, p)
      local n = amount.n
      local joins = amount.debit or (not amount.refund and n > 0)
      if joins and not live and cmp(g.tenants, p.max_tenants) >= 0 then
        fail(
          "ERR the budget already remembers "
            .. p.max_tenants
            .. " tenants (rl.share-max-tenants): a new tenant is refused until one is forgotten, "
            .. "a period after its last call"
        )
      end
      if amount.debit then
        g.tat = nmin(add(nmax(g.tat, now_ns), mul(n, p.interval)), U128_MAX)
        local own_tat = nmin(add(add(now_ns, st.d), mul(n, st.own)), U128_MAX)
        join(x, g, member, live, p, now, now_ns, own_tat)
        local d = refunded(report(standing(debt(g.tat), debt(own_tat), total, p), p, g, now, now_ns, 0))
        return d, x.write(key_expiry(p, now, d.reset))
      end
      if amount.refund then
        local budget_tat = g.tat
        if cmp(g.tat, now_ns) > 0 then
          budget_tat = nmax(satsub(g.tat, mul(n, p.interval)), now_ns)
        end
        local own_tat = member and member.tat
        if member and cmp(member.tat, now_ns) > 0 then
          own_tat = nmax(satsub(member.tat, mul(n, st.own)), now_ns)
        end
        local own_changed = member ~= nil and cmp(own_tat, member.tat) ~= 0
        local changed = cmp(budget_tat, g.tat) ~= 0 or own_changed
        g.tat = budget_tat
        local d = refunded(report(standing(debt(budget_tat), own_tat and debt(own_tat) or 0, total, p), p, g, now, now_ns, 0))
        if not changed then
          return d, nil
        end
        if cmp(g.tenants, 0) == 0 and cmp(g.tat, now_ns) <= 0 and cmp(g.debt_end, now_ns) <= 0 then
          return d, function()
            delete(key)
          end
        end
        if own_changed then
          x.put(
            "t:" .. p.tenant,
            member_format({ tat = own_tat, weight = member.weight, seq = member.seq, index = member.index })
          )
        end
        x.put("g", global_format(g))
        return d, x.write(key_expiry(p, now, d.reset))
      end
      local admission = admits(st, p, n)
      if n == 0 or (admission == NO and live) then
        return report(st, p, g, now, now_ns, n), nil
      end
      -- Allowed, or a tenant the budget does not remember yet, which joins even
      -- when rejected (so its share counts from its first call).
      local own_tat = member and member.tat or 0
      if admission ~= NO then
        g.tat = add(nmax(g.tat, now_ns), mul(n, p.interval))
      end
      if admission == OWN then
        -- A call with no debt passes however large: the TAT stops at 2^128 - 1 ns.
        own_tat = nmin(add(add(now_ns, st.d), mul(n, st.own)), U128_MAX)
      end
      join(x, g, member, live, p, now, now_ns, own_tat)
      local after = standing(debt(g.tat), debt(own_tat), total, p)
      local d
      if admission == NO then
        d = report(after, p, g, now, now_ns, n)
      else
        d = refunded(report(after, p, g, now, now_ns, 0))
      end
      return d, x.write(key_expiry(p, now, d.reset))
    end,
  }
end

------------------------------------------------------------------------------
-- Calls
------------------------------------------------------------------------------

local function now_ms()
  local t = redis.call("TIME")
  return tonumber(t[1]) * 1000 + floor(tonumber(t[2]) / 1000)
end

local function fields(d)
  return { d.allowed and 1 or 0, d.limit, d.remaining, d.retry, d.reset }
end

local function arity(name)
  fail("ERR wrong number of arguments for '" .. name .. "' command")
end

-- A function without options (rl_acquire, rl_release) given more arguments than
-- it takes: an option among them is named (as the module's command does), else the
-- arity error.
local function no_options(name, command, args, n)
  if #args > n and OPTION_WORDS[args[n + 1]:upper()] then
    fail("ERR syntax error: " .. args[n + 1]:upper() .. " does not apply to " .. command .. ", which takes no options")
  end
  if #args ~= n then
    arity(name)
  end
end

-- Runs body() and turns a failure into an error reply (an unexpected Lua error
-- too: it is reported, never raised).
local function guarded(name, body)
  local ok, result = pcall(body)
  if ok then
    return result
  end
  if type(result) == "table" and result.rl then
    return redis.error_reply(result.rl)
  end
  if type(result) == "table" and result.err then
    return redis.error_reply(result.err) -- a redis.call error (e.g. OOM, READONLY)
  end
  local detail = type(result) == "table" and result.internal or tostring(result)
  return redis.error_reply(
    "ERR internal error in " .. name .. "; nothing was changed (please report this): " .. tostring(detail)
  )
end

-- The function `name` of a one-key command with options: nparams parameters
-- after the key, read by limiter.params, then the options `row` says it takes
-- (row = {name = the command, debit, delay, usage = its FCALL line}; the map at
-- the end of build() gives it).
local function single(name, limiter, nparams, row)
  return function(keys, args)
    return guarded(name, function()
      if #keys ~= 1 then
        fail("ERR " .. name .. " takes exactly one key: " .. row.usage)
      end
      if #args < nparams then
        arity(name)
      end
      local params, i = limiter.params(args, 1)
      local amount = options(args, i, row)
      if amount.delay then
        params = limiter.delayed(params, amount.delay)
      end
      local d, write = limiter.decide(keys[1], params, now_ms(), amount)
      if write then
        write()
      end
      return fields(d)
    end)
  end
end

-- The function `name` of a one-key command without options: exactly nparams
-- arguments after the key, then body(key, args) (row = {name = the command,
-- usage = its FCALL line}).
local function exact(name, body, nparams, row)
  return function(keys, args)
    return guarded(name, function()
      if #keys ~= 1 then
        fail("ERR " .. name .. " takes exactly one key: " .. row.usage)
      end
      no_options(name, row.name, args, nparams)
      return body(keys[1], args)
    end)
  end
end

-- RL.ALL's policies: the word, the limiter, how many parameters follow the word,
-- the error naming them, whether it takes DEBIT, and whether it is only looked at
-- (watches).
-- <generated:policies>
local POLICIES = {
  { word = "FIXED", limiter = FIXED, n = 2, takes = "ERR syntax error: policy FIXED takes limit window", debit = true, shadow = true },
  { word = "SLIDING", limiter = SLIDING, n = 2, takes = "ERR syntax error: policy SLIDING takes limit window", shadow = true },
  { word = "BUCKET", limiter = BUCKET, n = 3, takes = "ERR syntax error: policy BUCKET takes capacity tokens period", debit = true, shadow = true },
  { word = "GCRA", limiter = GCRA, n = 3, takes = "ERR syntax error: policy GCRA takes capacity tokens period", debit = true, delay = true, shadow = true },
  { word = "SLIDINGCOUNTER", limiter = SLIDINGCOUNTER, n = 2, takes = "ERR syntax error: policy SLIDINGCOUNTER takes limit window", debit = true, shadow = true },
  { word = "ACQUIRE", limiter = ACQUIRE, n = 3, takes = "ERR syntax error: policy ACQUIRE takes limit ttl id", refund = false },
  { word = "PENALTY", limiter = PENALTY, n = 4, takes = "ERR syntax error: policy PENALTY takes strikes window block max", refund = false, shadow = true, watches = true },
  { word = "SHARE", limiter = SHARE, n = 5, takes = "ERR syntax error: policy SHARE takes tenant weight capacity tokens period", debit = true, shadow = true },
}
-- </generated:policies>

local function policy_of(word)
  local upper = word:upper()
  for _, p in ipairs(POLICIES) do
    if p.word == upper then
      return p
    end
  end
  return nil
end

-- allowed: whether the call writes. Only the enforced policies (every policy when
-- all are SHADOW) describe the call: limit, remaining (the smallest) and reset (the
-- longest) come from their limits, not from watched policies (PENALTY), unless all
-- are. Allowed: the longest wait of a scheduled enforced key (GCRA with DELAY), else
-- 0. Rejected: -1 if an enforced key never allows, else the longest wait of a
-- rejecting enforced key.
local function combine(per_key, policies, allowed)
  local all_shadow = true
  for _, p in ipairs(policies) do
    all_shadow = all_shadow and p.shadow
  end
  local limits = false
  for _, p in ipairs(policies) do
    if all_shadow or not p.shadow then
      limits = limits or not p.watches
    end
  end
  local reset = 0
  local tightest
  for k, d in ipairs(per_key) do
    local p = policies[k]
    if (all_shadow or not p.shadow) and not (limits and p.watches) then
      if tightest == nil or d.remaining < tightest.remaining then
        tightest = d
      end
      if d.reset > reset then
        reset = d.reset
      end
    end
  end
  local never, longest = false, 0
  for k, d in ipairs(per_key) do
    if d.allowed == allowed and not policies[k].shadow then
      if d.retry == -1 then
        never = true
      elseif d.retry > longest then
        longest = d.retry
      end
    end
  end
  local retry = never and -1 or longest
  return { allowed = allowed, limit = tightest.limit, remaining = tightest.remaining, retry = retry, reset = reset }
end

-- How many policies list[from..] starts with, by their names and parameter counts
-- (a GCRA's DELAY included), if only options or nothing follow them; else nil.
local function policies_in(list, from)
  local count, i = 0, from
  while list[i] ~= nil do
    if list[i]:upper() == "SHADOW" then
      i = i + 1
    end
    local p = list[i] and policy_of(list[i])
    if not p then
      break
    end
    i = i + 1 + p.n
    if p.limiter.delayed and list[i] ~= nil and list[i]:upper() == "DELAY" then
      i = i + 2
    end
    if i > #list + 1 then
      return nil
    end
    count = count + 1
  end
  if list[i] == nil or OPTION_WORDS[list[i]:upper()] then
    return count
  end
  return nil
end

-- The smallest numkeys other than #keys under which the keys and arguments read
-- as that many keys, then as many policies, then nothing or options; else nil.
local function fitting_numkeys(keys, args)
  local all = {}
  for _, k in ipairs(keys) do
    all[#all + 1] = k
  end
  for _, a in ipairs(args) do
    all[#all + 1] = a
  end
  for k = 1, math.min(#all, MAX_KEYS) do
    if k ~= #keys and policies_in(all, k + 1) == k then
      return k
    end
  end
  return nil
end

local function rl_all(keys, args)
  return guarded("rl_all", function()
    if 2 + #keys + #args < 6 then
      arity("rl_all")
    end
    if #keys < 1 or #keys > MAX_KEYS then
      fail(ERRORS.numkeys)
    end
    for i = 2, #keys do
      for j = 1, i - 1 do
        if keys[i] == keys[j] then
          fail("ERR key '" .. printable(keys[i]) .. "' is given more than once")
        end
      end
    end
    local policies, i, delayed, last_delayed = {}, 1, false, false
    while args[i] ~= nil do
      -- SHADOW before a policy makes it advisory: it never vetoes the call.
      local shadow = args[i]:upper() == "SHADOW"
      if shadow then
        local after = args[i + 1]
        if after ~= nil and after:upper() == "SHADOW" then
          fail("ERR syntax error: SHADOW given more than once")
        elseif after == nil or not policy_of(after) then
          fail(ERRORS.shadow_without_policy)
        end
        i = i + 1
      end
      local p = policy_of(args[i])
      if not p then
        break
      end
      if #args < i + p.n then
        fail(p.takes)
      end
      local ok, params = pcall(p.limiter.params, args, i + 1)
      if not ok then
        -- A parameter missing: an option or the next policy was read in its place.
        for j = i + 1, i + p.n do
          if OPTION_WORDS[args[j]:upper()] or policy_of(args[j]) then
            fail(p.takes)
          end
        end
        error(params, 0)
      end
      i, last_delayed = i + 1 + p.n, false
      -- A GCRA policy's DELAY max follows its parameters.
      if p.limiter.delayed and args[i] ~= nil and args[i]:upper() == "DELAY" then
        if args[i + 1] == nil then
          fail("ERR syntax error: DELAY needs a value")
        end
        params = p.limiter.delayed(params, delay_arg("DELAY", args[i + 1]))
        if args[i + 2] ~= nil and args[i + 2]:upper() == "DELAY" then
          fail("ERR syntax error: DELAY given more than once")
        end
        i, delayed, last_delayed = i + 2, true, true
      end
      policies[#policies + 1] =
        { policy = p, limiter = p.limiter, params = params, watches = p.watches, shadow = shadow }
    end
    if #policies ~= #keys then
      local fits = fitting_numkeys(keys, args)
      if fits then
        fail("ERR numkeys is " .. #keys .. ", but the keys and policies given match numkeys " .. fits)
      end
      local word = args[i]
      if word ~= nil and #policies > 0 and word:upper() == "DELAY" then
        fail(ERRORS.delay_without_gcra)
      end
      local upper = word and word:upper()
      local at_option = word == nil or upper == "COST" or upper == "REFUND" or upper == "DEBIT"
      if word ~= nil and #policies < #keys and not at_option then
        fail(ERRORS.unknown_policy(printable(word)))
      end
      fail(
        "ERR one policy per key, in key order: numkeys is " .. #keys .. ", policies given " .. #policies
      )
    end
    -- The options after the last policy, in any order: COST n, REFUND n or DEBIT n, and
    -- that policy's DELAY max when it is GCRA.
    local last = policies[#policies]
    local amount = options(args, i, { name = "RL.ALL", delay = last.limiter.delayed ~= nil, debit = true }, true)
    if amount.delay then
      if last_delayed then
        fail("ERR syntax error: DELAY given more than once")
      end
      last.params = last.limiter.delayed(last.params, amount.delay)
      delayed = true
    end
    if delayed and amount.refund then
      fail("ERR syntax error: DELAY and REFUND exclude each other")
    elseif delayed and amount.debit then
      fail("ERR syntax error: DELAY and DEBIT exclude each other")
    elseif amount.debit then
      for _, p in ipairs(policies) do
        if not p.watches and not p.policy.debit then
          fail("ERR syntax error: DEBIT does not apply to " .. p.policy.word .. ", which takes " .. expected(p.policy))
        end
      end
    end
    -- A watched policy (PENALTY) is only looked at, as COST 0: strikes are recorded by
    -- rl_penalty itself. It rejects a charge while blocked; REFUND and DEBIT settle
    -- what was already taken, so they ignore it.
    local look = { refund = false, n = 0 }
    local charging = not amount.refund and not amount.debit
    local now = now_ms()
    local decisions, writes, all = {}, {}, true
    for k, key in ipairs(keys) do
      local p = policies[k]
      local d, write = p.limiter.decide(key, p.params, now, p.watches and look or amount)
      decisions[k], writes[k] = d, write
      all = all and (p.shadow or d.allowed or (p.watches == true and not charging))
    end
    if all then
      -- A SHADOW key is written only if it allows on its own.
      for k = 1, #keys do
        if writes[k] and (decisions[k].allowed or not policies[k].shadow) then
          writes[k]()
        end
      end
    else
      for k, key in ipairs(keys) do
        local state = policies[k].limiter.decide(key, policies[k].params, now, { refund = false, n = 0 })
        decisions[k].remaining, decisions[k].reset = state.remaining, state.reset
      end
    end
    local reply = { fields(combine(decisions, policies, all)) }
    for k = 1, #keys do
      reply[k + 1] = fields(decisions[k])
    end
    return reply
  end)
end

-- rl_acquire's body (exact checked the key and the arguments).
local function acquire(key, args)
  local p = lease_params(args, 1)
  local d, write = ACQUIRE.decide(key, p, now_ms(), { refund = false, n = 1 })
  if write then
    write()
  end
  return fields(d)
end

-- rl_release's body: ZREM + PEXPIREAT at the latest lease left, or DEL when no
-- live lease is left.
local function release(key, args)
  local id = lease_id(args[1])
  local now = now_ms()
  if not lease_load(key) or not live_end(key, now, id) then
    return 0
  end
  local other = latest_live(key, now, id)
  if other == nil then
    delete(key)
  else
    redis.call("ZREM", key, id)
    redis.call("PEXPIREAT", key, str(other))
  end
  return 1
end

-- Every function, by its name: a one-key command with options through single, one
-- without through exact, rl_all as written above.
-- <generated:functions>
return {
  rl_fixed = single("rl_fixed", FIXED, 2, {
    name = "RL.FIXED",
    debit = true,
    shadow = true,
    usage = "FCALL rl_fixed 1 key limit window [COST n | REFUND n | DEBIT n] [SHADOW]",
  }),
  rl_sliding = single("rl_sliding", SLIDING, 2, {
    name = "RL.SLIDING",
    shadow = true,
    usage = "FCALL rl_sliding 1 key limit window [COST n | REFUND n] [SHADOW]",
  }),
  rl_bucket = single("rl_bucket", BUCKET, 3, {
    name = "RL.BUCKET",
    debit = true,
    shadow = true,
    usage = "FCALL rl_bucket 1 key capacity tokens period [COST n | REFUND n | DEBIT n] [SHADOW]",
  }),
  rl_gcra = single("rl_gcra", GCRA, 3, {
    name = "RL.GCRA",
    debit = true,
    delay = true,
    shadow = true,
    usage = "FCALL rl_gcra 1 key capacity tokens period [COST n | REFUND n | DEBIT n] [DELAY max] [SHADOW]",
  }),
  rl_slidingcounter = single("rl_slidingcounter", SLIDINGCOUNTER, 2, {
    name = "RL.SLIDINGCOUNTER",
    debit = true,
    shadow = true,
    usage = "FCALL rl_slidingcounter 1 key limit window [COST n | REFUND n | DEBIT n] [SHADOW]",
  }),
  rl_all = rl_all,
  rl_acquire = exact("rl_acquire", acquire, 3, {
    name = "RL.ACQUIRE",
    usage = "FCALL rl_acquire 1 key limit ttl id",
  }),
  rl_release = exact("rl_release", release, 1, {
    name = "RL.RELEASE",
    usage = "FCALL rl_release 1 key id",
  }),
  rl_penalty = single("rl_penalty", PENALTY, 4, {
    name = "RL.PENALTY",
    refund = false,
    shadow = true,
    usage = "FCALL rl_penalty 1 key strikes window block max [COST n] [SHADOW]",
  }),
  rl_share = single("rl_share", SHARE, 5, {
    name = "RL.SHARE",
    debit = true,
    shadow = true,
    usage = "FCALL rl_share 1 key tenant weight capacity tokens period [COST n | REFUND n | DEBIT n] [SHADOW]",
  }),
}
-- </generated:functions>
end

-- The library's version, Cargo.toml's (a test checks they agree), as the header says.
local VERSION = "0.2.0"

local lib
local function register(name, flags)
  redis.register_function({
    function_name = name,
    callback = function(keys, args)
      lib = lib or build()
      return lib[name](keys, args)
    end,
    flags = flags,
  })
end
-- Every function of the map. A function whose command is not deny-oom is
-- allow-oom: like DEL, RL.RELEASE must work on a server at maxmemory, or a full
-- server could never free a slot.
-- <generated:register>
register("rl_fixed")
register("rl_sliding")
register("rl_bucket")
register("rl_gcra")
register("rl_slidingcounter")
register("rl_all")
register("rl_acquire")
register("rl_release", { "allow-oom" })
register("rl_penalty")
register("rl_share")
-- </generated:register>
-- Which library is loaded: FCALL rl_version 0 (or FCALL_RO, on a replica too).
redis.register_function({
  function_name = "rl_version",
  callback = function()
    return VERSION
  end,
  flags = { "no-writes", "allow-stale" },
})

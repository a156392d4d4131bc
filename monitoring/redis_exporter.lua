-- RL's counters for prometheus-redis-exporter (oliver006/redis_exporter), which
-- scrapes INFO ALL and so never sees a module's own INFO section. Run it with
--
--   redis_exporter -script /path/to/monitoring/redis_exporter.lua
--
-- and every integer field of `INFO rl` becomes a sample of the exporter's
-- `redis_script_values` gauge, the field's name as its `key` label:
--
--   redis_script_values{key="rl_gcra_rejected"} 17
--
-- The counters only grow (until the module is loaded again), so rate() and
-- increase() apply. Then the first keys of RL.TOP (the keys rejected most on this
-- node in the last minute or so), as `rl_top_rejected:<key>`, their rejections:
--
--   redis_script_values{key="rl_top_rejected:rl:{user42}:api"} 318
--
-- A label value must be valid UTF-8 and a key is any bytes: every byte outside
-- letters, digits and `_ - . : / { } @` is written %HH, after the key is cut to its
-- first 64 bytes (a cut key ends with `...`; of two keys that read the same, the
-- one rejected more is kept). docs/monitoring.md lists the series with PromQL and
-- alerts. A server without the module answers an empty section and refuses RL.TOP:
-- no samples, no error.
local TOP = 10
local KEY_BYTES = 64

local out = {}
for line in string.gmatch(redis.call('INFO', 'rl'), '[^\r\n]+') do
  local name, value = string.match(line, '^(rl_[%w_]+):(%-?%d+)$')
  -- The build's commit is an identifier that may happen to be all digits.
  if name and name ~= 'rl_git_commit' then
    out[#out + 1] = name
    out[#out + 1] = value
  end
end

local function label(key)
  local cut = string.sub(key, 1, KEY_BYTES)
  local escaped = string.gsub(cut, '[^%w_%-%.:/{}@]', function(c)
    return string.format('%%%02X', string.byte(c))
  end)
  if #key > KEY_BYTES then
    escaped = escaped .. '...'
  end
  return 'rl_top_rejected:' .. escaped
end

local top = redis.pcall('RL.TOP', 'COUNT', tostring(TOP))
if type(top) == 'table' and not top.err then
  local seen = {}
  for _, entry in ipairs(top) do
    local name = label(entry[1])
    if not seen[name] then
      seen[name] = true
      out[#out + 1] = name
      out[#out + 1] = tostring(entry[2])
    end
  end
end
return out

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
-- The counters only grow (until CONFIG RESETSTAT or a restart), so rate() and
-- increase() apply. docs/monitoring.md lists them with PromQL and alerts.
-- A server without the module answers an empty section: no samples, no error.
local out = {}
for line in string.gmatch(redis.call('INFO', 'rl'), '[^\r\n]+') do
  local name, value = string.match(line, '^(rl_[%w_]+):(%-?%d+)$')
  -- The build's commit is an identifier that may happen to be all digits.
  if name and name ~= 'rl_git_commit' then
    out[#out + 1] = name
    out[#out + 1] = value
  end
end
return out

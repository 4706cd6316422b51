-- Applies a change to a memory's list, keeping the key's time to live.
-- KEYS: the memory's list; for a list outside any conversation, its home
-- pointer too (homecheck.lua, run first, answers for the memory then).
-- ARGV: drop, #head, head..., tail...
-- Returns {0} when applied, {1, length} when drop exceeds the length, {2,
-- conversation id} without writing when the memory has a home pointer: its
-- list is that conversation's.
local drop, nh = tonumber(ARGV[1]), tonumber(ARGV[2])
local n = redis.call('LLEN', KEYS[1])
if drop > n then
  return {1, n}
end
local ttl = redis.call('PTTL', KEYS[1])
if drop > 0 then
  redis.call('LTRIM', KEYS[1], drop, -1)
end
for j = 2 + nh, 3, -1 do
  redis.call('LPUSH', KEYS[1], ARGV[j])
end
local j = 3 + nh
while j <= #ARGV do
  local k = math.min(j + 999, #ARGV)
  redis.call('RPUSH', KEYS[1], unpack(ARGV, j, k))
  j = k + 1
end
if ttl > 0 and redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return {0}

-- Applies a change to a memory's list, keeping the key's time to live.
-- KEYS: the memory's list; for a list outside any conversation, its home
-- pointer too (homecheck.lua, run first, answers for the memory then).
-- ARGV: drop, #head, head..., tail...
-- Returns {0} when applied, {1, length} when drop exceeds the length, {2,
-- conversation id} without writing when the memory has a home pointer: its
-- list is that conversation's.
-- The list is never empty between two commands (on a node of a Redis
-- Cluster whose slot is migrating, a command on a key the node does not
-- hold fails the script).
local drop, nh = tonumber(ARGV[1]), tonumber(ARGV[2])
local nt = #ARGV - 2 - nh
local n = redis.call('LLEN', KEYS[1])
if drop > n then
  return {1, n}
end
local ttl = redis.call('PTTL', KEYS[1])
local function push(cmd, first, last)
  local j = first
  while j <= last do
    local k = math.min(j + 999, last)
    redis.call(cmd, KEYS[1], unpack(ARGV, j, k))
    j = k + 1
  end
end
if n > drop then
  -- Some of the list stays: append, drop, prepend.
  push('RPUSH', 3 + nh, #ARGV)
  if drop > 0 then
    redis.call('LTRIM', KEYS[1], drop, -1)
  end
  for j = 2 + nh, 3, -1 do
    redis.call('LPUSH', KEYS[1], ARGV[j])
  end
elseif nh + nt == 0 then
  if n > 0 then
    redis.call('DEL', KEYS[1])
  end
  return {0}
else
  -- None of it stays: the head and the tail replace it.
  push('RPUSH', 3, #ARGV)
  if n > 0 then
    redis.call('LTRIM', KEYS[1], -(nh + nt), -1)
  end
end
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return {0}

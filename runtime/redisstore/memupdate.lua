-- Replaces a memory's list, keeping the key's time to live.
-- KEYS: the memory's list; for a list outside any conversation, its home
-- pointer too (homecheck.lua, run first, answers for the memory then).
-- ARGV: elems...
-- Returns {0}, or {2, conversation id} without writing when the memory has
-- a home pointer: its list is that conversation's.
-- The new messages are pushed after the old, which then go: the list is
-- never empty in between (on a node of a Redis Cluster whose slot is
-- migrating, a command on a key the node does not hold fails the script).
local ttl = redis.call('PTTL', KEYS[1])
local n = redis.call('LLEN', KEYS[1])
if #ARGV == 0 then
  if n > 0 then
    redis.call('DEL', KEYS[1])
  end
  return {0}
end
local j = 1
while j <= #ARGV do
  local k = math.min(j + 999, #ARGV)
  redis.call('RPUSH', KEYS[1], unpack(ARGV, j, k))
  j = k + 1
end
if n > 0 then
  redis.call('LTRIM', KEYS[1], -#ARGV, -1)
end
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return {0}

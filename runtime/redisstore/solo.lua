-- Reads or deletes a memory's list outside any conversation, unless the
-- memory has a home pointer.
-- KEYS: the list, the home pointer. ARGV: 'range', 'len' or 'del'.
-- Returns {0, result} ({0} for 'del'), or {2, conversation id} without
-- reading or writing when the memory has a home pointer: its list is that
-- conversation's.
local home = redis.call('GET', KEYS[2])
if home then
  return {2, home}
end
if ARGV[1] == 'range' then
  return {0, redis.call('LRANGE', KEYS[1], 0, -1)}
elseif ARGV[1] == 'len' then
  return {0, redis.call('LLEN', KEYS[1])}
end
redis.call('DEL', KEYS[1])
return {0}

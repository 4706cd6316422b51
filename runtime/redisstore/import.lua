-- Import: writes a conversation moved from the keys of an older layout,
-- unless the conversation exists already.
-- KEYS: conv, mids, lease, fence (in the conversation's hash slot).
-- ARGV: version, state, conv ttl (ms, -1: none), lease owner ('' for no
--       lease), lease token, lease expiry, lease ttl, fence value ('' for
--       none), fence ttl, memory key prefix, #memories, then per memory:
--       id, ttl, #elems, elems...
-- Returns 1 when imported, 0 when the conversation existed.
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
local function expire(key, ttl)
  if tonumber(ttl) > 0 then
    redis.call('PEXPIRE', key, ttl)
  end
end
redis.call('HSET', KEYS[1], 'v', ARGV[1], 's', ARGV[2])
expire(KEYS[1], ARGV[3])
if ARGV[4] ~= '' then
  redis.call('HSET', KEYS[3], 'o', ARGV[4], 't', ARGV[5], 'e', ARGV[6])
  expire(KEYS[3], ARGV[7])
end
if ARGV[8] ~= '' then
  redis.call('SET', KEYS[4], ARGV[8])
  expire(KEYS[4], ARGV[9])
end
local i = 12
for m = 1, tonumber(ARGV[11]) do
  local id, ttl, n = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  redis.call('SADD', KEYS[2], id)
  local key = ARGV[10] .. id
  redis.call('DEL', key)
  local j = i + 3
  while j <= i + 2 + n do
    local k = math.min(j + 999, i + 2 + n)
    redis.call('RPUSH', key, unpack(ARGV, j, k))
    j = k + 1
  end
  expire(key, ttl)
  i = i + 3 + n
end
expire(KEYS[2], ARGV[3])
return 1

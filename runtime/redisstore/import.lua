-- Import: writes a conversation moved from the keys of an older layout,
-- unless the conversation exists already.
-- KEYS: conv, mids, lease, fence, then the lists of the memories, in the
-- order of ARGV (all in the conversation's hash slot).
-- ARGV: version, state, conv ttl (ms, -1: none), lease owner ('' for no
--       lease), lease token, lease expiry, lease ttl, fence value ('' for
--       none), fence ttl, #memories, then per memory: id, ttl, #elems,
--       elems...
-- Returns 1 when imported, 0 when the conversation existed.
-- Every read runs before the first write, and no command touches a key
-- after the script emptied it (see save.lua).
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
local nmem = tonumber(ARGV[10])
local len = {}
for m = 1, nmem do
  len[m] = redis.call('LLEN', KEYS[4 + m])
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
local i = 11
for m = 1, nmem do
  local id, ttl, n = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  redis.call('SADD', KEYS[2], id)
  local key = KEYS[4 + m]
  if n == 0 then
    if len[m] > 0 then
      redis.call('DEL', key)
    end
  else
    -- The messages replace what the key may hold: pushed after it, which
    -- then goes, so that the list is never empty in between.
    local j = i + 3
    while j <= i + 2 + n do
      local k = math.min(j + 999, i + 2 + n)
      redis.call('RPUSH', key, unpack(ARGV, j, k))
      j = k + 1
    end
    if len[m] > 0 then
      redis.call('LTRIM', key, -n, -1)
    end
    expire(key, ttl)
  end
  i = i + 3 + n
end
if nmem > 0 then
  expire(KEYS[2], ARGV[3])
end
return 1

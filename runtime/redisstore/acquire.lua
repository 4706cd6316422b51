-- Acquire: the lease on a conversation.
-- KEYS: lease, fence. ARGV: owner, lease ttl (ms), store ttl (ms, 0: none).
-- Returns {0, token, expiry (ms)} when granted, {1, holder, expiry} when
-- another owner holds an unexpired lease. Times are the Redis server's.
local owner, ttl, keep = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local l = redis.call('HMGET', KEYS[1], 'o', 't', 'e')
local token
if l[1] == owner then
  token = l[2]
elseif l[1] and tonumber(l[3]) > now then
  return {1, l[1], l[3]}
end
if not token then
  token = tostring(redis.call('INCR', KEYS[2]))
end
local exp = now + ttl
redis.call('HSET', KEYS[1], 'o', owner, 't', token, 'e', exp)
-- The record outlives the lease (a lease nobody took over stays current)
-- by the store's time to live; with none, it stays until released.
if keep > 0 then
  keep = math.max(keep, ttl)
  for _, k in ipairs(KEYS) do
    local cur = redis.call('PTTL', k)
    if cur < keep then
      redis.call('PEXPIRE', k, keep)
    end
  end
end
return {0, token, tostring(exp)}

-- Release: ends a lease if it is the current one.
-- KEYS: lease. ARGV: owner, token.
local l = redis.call('HMGET', KEYS[1], 'o', 't')
if l[1] == ARGV[1] and l[2] == ARGV[2] then
  redis.call('DEL', KEYS[1])
end
return 0

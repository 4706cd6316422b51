-- Delete: a conversation, its memories, its lease and its token counter.
-- KEYS: conv, mids, lease, fence. ARGV: memory key prefix.
for _, id in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  redis.call('DEL', ARGV[1] .. id)
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
return 0

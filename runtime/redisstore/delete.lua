-- Delete: a conversation, its memories, its lease and its token counter.
-- KEYS: conv, mids, lease, fence. ARGV: memory key prefix (all in the
-- conversation's hash slot). Returns the ids of the memories deleted.
local ids = redis.call('SMEMBERS', KEYS[2])
for _, id in ipairs(ids) do
  redis.call('DEL', ARGV[1] .. id)
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
return ids

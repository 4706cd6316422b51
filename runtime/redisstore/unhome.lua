-- Unhome: forgets that a memory lives in a conversation, if it still does.
-- KEYS: the memory's home pointer. ARGV: the conversation id.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
end
return 0

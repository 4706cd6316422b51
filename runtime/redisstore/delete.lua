-- Delete: a conversation, its memories, its lease and its token counter.
-- KEYS: conv, mids, lease, fence, then the lists of the memories the
-- conversation may list (all in the conversation's hash slot, every one
-- declared). ARGV: the memory ids of KEYS[5..].
-- Returns {0, the ids of the memories deleted...}, or {4, ids...} without
-- writing when the conversation lists memories whose lists are not among
-- KEYS (the delete must be made again with them).
-- Each key is deleted by a command of its own, once: on a node of a Redis
-- Cluster whose slot is migrating, a command on a key the node does not
-- hold fails the script.
local index = {}
for m = 1, #ARGV do
  index[ARGV[m]] = 4 + m
end
local ids = redis.call('SMEMBERS', KEYS[2])
local undeclared = {4}
for _, id in ipairs(ids) do
  if not index[id] then
    undeclared[#undeclared + 1] = id
  end
end
if #undeclared > 1 then
  return undeclared
end
local out = {0}
for _, id in ipairs(ids) do
  redis.call('DEL', KEYS[index[id]])
  out[#out + 1] = id
end
for k = 1, 4 do
  redis.call('DEL', KEYS[k])
end
return out

-- Run before memupdate.lua and memapply.lua (one script with them): when
-- KEYS[2], a memory's home pointer, is given and set, returns {2,
-- conversation id} without writing: the memory's list is that
-- conversation's.
if KEYS[2] then
  local home = redis.call('GET', KEYS[2])
  if home then
    return {2, home}
  end
end

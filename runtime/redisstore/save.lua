-- Save: one conversation's state and its request's memory writes, atomically.
-- KEYS: conv, mids, lease, fence, then the lists of the memories the save
-- may touch: all in the conversation's hash slot, every one declared (a
-- Redis Cluster moving the slot runs the script only where all of them
-- are).
-- ARGV: version, next version, lease owner, lease token, ttl (ms, 0: none),
--       state, #memories (m), #listed (l), the m memory ids of
--       KEYS[5..4+m] (the l the state lists first), #adopted, adopted...,
--       #writes, writes...
-- An adopted memory is: its index among the memories (1..m), #elems,
-- elems...: the messages the memory held outside the conversation,
-- written to its list in the conversation when that list does not exist,
-- before the writes.
-- A write is: memory index, kind, then for kind "R" (replace) #elems,
-- elems...; for "E" (edit) stored length (-1: unknown), drop, #head,
-- head..., #tail, tail...; for "D" (delete) nothing.
-- Returns {0, dropped ids...} when saved (the memory ids the stored state
-- listed and the new one does not: their lists are deleted), {1, stored
-- version} on a version conflict, {2} when the lease is not the current
-- one, {3, memory id, length} when a memory changed since the request
-- staged an edit of it, {4, ids...} when the stored state lists memories
-- the new one does not whose lists are not among KEYS (the save must be
-- made again with them).
--
-- Every check and every read runs before the first write, and no command
-- touches a list after the script emptied it: on a node of a Redis
-- Cluster whose slot is migrating, a command on a key the node does not
-- hold fails the script, and a failure after the first write would leave
-- the save half done.
local version, nextv, owner, token = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local ttl = tonumber(ARGV[5])
local state = ARGV[6]
local nmem, nlisted = tonumber(ARGV[7]), tonumber(ARGV[8])

local lease = redis.call('HMGET', KEYS[3], 'o', 't')
if token == '0' or lease[1] ~= owner or lease[2] ~= token then
  return {2}
end
local stored = redis.call('HGET', KEYS[1], 'v') or '0'
if stored ~= version then
  return {1, stored}
end

local ids, index = {}, {}
for m = 1, nmem do
  ids[m] = ARGV[8 + m]
  index[ARGV[8 + m]] = m
end
local i = 9 + nmem

-- The memories the stored state lists and the new one does not.
local storedids = redis.call('SMEMBERS', KEYS[2])
local dropped, undeclared = {}, {4}
for _, id in ipairs(storedids) do
  local m = index[id]
  if not m then
    undeclared[#undeclared + 1] = id
  elseif m > nlisted then
    dropped[#dropped + 1] = m
  end
end
if #undeclared > 1 then
  return undeclared
end

-- len[m] is the length of memory m's list as the writes find it.
local len = {}
local nadopt = tonumber(ARGV[i])
i = i + 1
local adopted = {}
for a = 1, nadopt do
  local m, n = tonumber(ARGV[i]), tonumber(ARGV[i + 1])
  if redis.call('EXISTS', KEYS[4 + m]) == 0 then
    adopted[#adopted + 1] = {m = m, first = i + 2, last = i + 1 + n}
    len[m] = n
  end
  i = i + 2 + n
end

local nwrites = tonumber(ARGV[i])
i = i + 1
local writes = {}
for w = 1, nwrites do
  local wr = {m = tonumber(ARGV[i]), kind = ARGV[i + 1]}
  i = i + 2
  wr.n = len[wr.m] or redis.call('LLEN', KEYS[4 + wr.m])
  if wr.kind == 'R' then
    local n = tonumber(ARGV[i])
    wr.first, wr.last = i + 1, i + n
    i = i + 1 + n
  elseif wr.kind == 'E' then
    local base, drop = tonumber(ARGV[i]), tonumber(ARGV[i + 1])
    local nh = tonumber(ARGV[i + 2])
    wr.drop, wr.hfirst, wr.hlast = drop, i + 3, i + 2 + nh
    i = i + 3 + nh
    local nt = tonumber(ARGV[i])
    wr.tfirst, wr.tlast = i + 1, i + nt
    i = i + 1 + nt
    if (base >= 0 and wr.n ~= base) or wr.n < drop then
      return {3, ids[wr.m], wr.n}
    end
  end
  writes[w] = wr
end

-- Writes. absent[m] records that the script left memory m's list empty,
-- which deletes it: nothing touches it again.
local absent = {}

-- push runs cmd on key with ARGV[first..last], in chunks that stay within
-- Lua's limit on unpacked values.
local function push(cmd, key, first, last)
  local j = first
  while j <= last do
    local k = math.min(j + 999, last)
    redis.call(cmd, key, unpack(ARGV, j, k))
    j = k + 1
  end
end

for _, ad in ipairs(adopted) do
  push('RPUSH', KEYS[4 + ad.m], ad.first, ad.last)
end

for _, wr in ipairs(writes) do
  local key = KEYS[4 + wr.m]
  if wr.kind == 'D' then
    if wr.n > 0 then
      redis.call('DEL', key)
    end
    absent[wr.m] = true
  elseif wr.kind == 'R' then
    local n = wr.last - wr.first + 1
    if n == 0 then
      if wr.n > 0 then
        redis.call('DEL', key)
      end
      absent[wr.m] = true
    else
      -- The new messages go after the old, which then go: the list is
      -- never empty in between.
      push('RPUSH', key, wr.first, wr.last)
      if wr.n > 0 then
        redis.call('LTRIM', key, -n, -1)
      end
    end
  else
    local nh, nt = wr.hlast - wr.hfirst + 1, wr.tlast - wr.tfirst + 1
    if wr.n > wr.drop then
      -- Some of the stored list stays: append, drop, prepend.
      push('RPUSH', key, wr.tfirst, wr.tlast)
      if wr.drop > 0 then
        redis.call('LTRIM', key, wr.drop, -1)
      end
      for j = wr.hlast, wr.hfirst, -1 do
        redis.call('LPUSH', key, ARGV[j])
      end
    elseif nh + nt == 0 then
      if wr.n > 0 then
        redis.call('DEL', key)
      end
      absent[wr.m] = true
    else
      -- None of it stays: the head and the tail replace it.
      push('RPUSH', key, wr.hfirst, wr.hlast)
      push('RPUSH', key, wr.tfirst, wr.tlast)
      if wr.n > 0 then
        redis.call('LTRIM', key, -(nh + nt), -1)
      end
    end
  end
end

local out = {0}
for _, m in ipairs(dropped) do
  if not absent[m] then
    redis.call('DEL', KEYS[4 + m])
    absent[m] = true
  end
  out[#out + 1] = ids[m]
end

-- The memory id set becomes the state's: the new ids are added before the
-- dropped ones go, so that the set is never empty in between.
if nlisted > 0 then
  push('SADD', KEYS[2], 9, 8 + nlisted)
  for j = 1, #dropped, 1000 do
    local chunk = {}
    for k = j, math.min(j + 999, #dropped) do
      chunk[#chunk + 1] = ids[dropped[k]]
    end
    redis.call('SREM', KEYS[2], unpack(chunk))
  end
elseif #storedids > 0 then
  redis.call('DEL', KEYS[2])
end
redis.call('HSET', KEYS[1], 'v', nextv, 's', state)

if ttl > 0 then
  redis.call('PEXPIRE', KEYS[1], ttl)
  if nlisted > 0 then
    redis.call('PEXPIRE', KEYS[2], ttl)
  end
  for m = 1, nlisted do
    if not absent[m] then
      redis.call('PEXPIRE', KEYS[4 + m], ttl)
    end
  end
  -- The lease and its counter outlive the conversation's other keys.
  for _, k in ipairs({KEYS[3], KEYS[4]}) do
    local cur = redis.call('PTTL', k)
    if cur >= 0 and cur < ttl then
      redis.call('PEXPIRE', k, ttl)
    end
  end
else
  redis.call('PERSIST', KEYS[1])
  if nlisted > 0 then
    redis.call('PERSIST', KEYS[2])
  end
  for m = 1, nlisted do
    if not absent[m] then
      redis.call('PERSIST', KEYS[4 + m])
    end
  end
end
return out

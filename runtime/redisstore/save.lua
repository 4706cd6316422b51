-- Save: one conversation's state and its request's memory writes, atomically.
-- KEYS: conv, mids, lease, fence: all in the conversation's hash slot, as
-- is the memory key prefix (each memory's key is the prefix and its id).
-- ARGV: version, next version, lease owner, lease token, ttl (ms, 0: none),
--       state, memory key prefix, #ids, ids..., #adopted, adopted...,
--       #writes, writes...
-- An adopted memory is: memory id, #elems, elems...: the messages the
-- memory held outside the conversation, written to its key in the
-- conversation when that key does not exist, before the writes.
-- A write is: memory id, kind, then for kind "R" (replace) #elems, elems...;
-- for "E" (edit) stored length (-1: unknown), drop, #head, head..., #tail,
-- tail...; for "D" (delete) nothing.
-- Returns {0, dropped ids...} when saved (the memory ids the stored state
-- listed and the new one does not: their keys are deleted), {1, stored version} on a version conflict, {2} when
-- the lease is not the current one, {3, memory id, length} when a memory
-- changed since the request staged an edit of it. Every check runs before
-- the first write: a script that fails halfway keeps what it wrote.
local version, nextv, owner, token = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local ttl = tonumber(ARGV[5])
local state, memprefix = ARGV[6], ARGV[7]

local lease = redis.call('HMGET', KEYS[3], 'o', 't')
if token == '0' or lease[1] ~= owner or lease[2] ~= token then
  return {2}
end
local stored = redis.call('HGET', KEYS[1], 'v') or '0'
if stored ~= version then
  return {1, stored}
end

local i = 8
local nids = tonumber(ARGV[i])
local keep = {}
for j = i + 1, i + nids do
  keep[ARGV[j]] = true
end
local idsfirst, idslast = i + 1, i + nids
i = i + 1 + nids

local nadopt = tonumber(ARGV[i])
i = i + 1
local adopt, adopted = {}, {}
for a = 1, nadopt do
  local n = tonumber(ARGV[i + 1])
  local ad = {key = memprefix .. ARGV[i], first = i + 2, last = i + 1 + n}
  if redis.call('EXISTS', ad.key) == 0 then
    adopt[ARGV[i]] = n
    adopted[#adopted + 1] = ad
  end
  i = i + 2 + n
end

local nwrites = tonumber(ARGV[i])
i = i + 1
local writes = {}
for w = 1, nwrites do
  local wr = {id = ARGV[i], key = memprefix .. ARGV[i], kind = ARGV[i + 1]}
  i = i + 2
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
    local n = adopt[wr.id] or redis.call('LLEN', wr.key)
    if (base >= 0 and n ~= base) or n < drop then
      return {3, wr.id, n}
    end
  end
  writes[w] = wr
end

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
  push('RPUSH', ad.key, ad.first, ad.last)
end

for _, wr in ipairs(writes) do
  if wr.kind == 'D' then
    redis.call('DEL', wr.key)
  elseif wr.kind == 'R' then
    redis.call('DEL', wr.key)
    push('RPUSH', wr.key, wr.first, wr.last)
  else
    if wr.drop > 0 then
      redis.call('LTRIM', wr.key, wr.drop, -1)
    end
    for j = wr.hlast, wr.hfirst, -1 do
      redis.call('LPUSH', wr.key, ARGV[j])
    end
    push('RPUSH', wr.key, wr.tfirst, wr.tlast)
  end
end

local dropped = {0}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  if not keep[id] then
    redis.call('DEL', memprefix .. id)
    dropped[#dropped + 1] = id
  end
end
redis.call('DEL', KEYS[2])
push('SADD', KEYS[2], idsfirst, idslast)
redis.call('HSET', KEYS[1], 'v', nextv, 's', state)

if ttl > 0 then
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('PEXPIRE', KEYS[2], ttl)
  for j = idsfirst, idslast do
    redis.call('PEXPIRE', memprefix .. ARGV[j], ttl)
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
  for j = idsfirst, idslast do
    redis.call('PERSIST', memprefix .. ARGV[j])
  end
end
return dropped

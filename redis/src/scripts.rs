//! The Lua scripts of [`crate::RedisStore`]: every operation whose read
//! decides its write is one script, so it is atomic across every process
//! of the deployment (`WATCH`/`MULTI` would interleave on the multiplexed
//! connection). `redis::Script` sends them by `EVALSHA`, loading them on
//! `NOSCRIPT`.
//!
//! Every script takes the four keys of one state, in this order:
//! `values` (hash: name → canonical JSON), `meta` (hash: `bytes`,
//! `cache_bytes`, `seq`, `groups`, `generation`), `files` (hash: path →
//! read-cache record as JSON) and `lru` (sorted set: path by use order).
//! Its last argument is the state's lifetime in milliseconds (`0`: none),
//! which every script renews on all four keys.

use std::sync::LazyLock;

use redis::Script;

/// Renews the lifetime of the four keys (shared prelude of each script).
const TOUCH: &str = r"
local function touch(ttl)
  if tonumber(ttl) > 0 then
    for i = 1, 4 do redis.call('PEXPIRE', KEYS[i], ttl) end
  end
end
";

/// Drops the read-cache entry of `path` (prelude of the cache scripts).
const DROP_ENTRY: &str = r"
local function drop_entry(path)
  local record = redis.call('HGET', KEYS[3], path)
  if record then
    redis.call('HINCRBY', KEYS[2], 'cache_bytes', -cjson.decode(record).size)
    redis.call('HDEL', KEYS[3], path)
    redis.call('ZREM', KEYS[4], path)
  end
  return record
end
";

fn script(body: &str) -> Script {
    Script::new(&format!("{TOUCH}{DROP_ENTRY}{body}"))
}

/// `now`, Redis's clock in milliseconds: one clock for every process of
/// the deployment (prelude of the scripts that keep lifetimes in a set).
const NOW: &str = r"
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
";

fn timed_script(body: &str) -> Script {
    Script::new(&format!("{NOW}{body}"))
}

/// `get`: ARGV name, ttl → the canonical JSON text or nil.
pub(crate) static GET: LazyLock<Script> = LazyLock::new(|| {
    script(
        r"
local value = redis.call('HGET', KEYS[1], ARGV[1])
touch(ARGV[2])
return value
",
    )
});

/// `set` and `compare-and-set` with the state's bounds in the same step.
/// ARGV: name, mode (`set`|`cas`), whether a value is expected (`0`|`1`),
/// the expected canonical text, the new canonical text, max bytes, max
/// keys, ttl. Returns `{1}` stored, `{0}` the stored value differs, `{-1}`
/// too many keys, `{-2, after}` too many bytes.
pub(crate) static SET: LazyLock<Script> = LazyLock::new(|| {
    script(
        r"
local name, value = ARGV[1], ARGV[5]
local current = redis.call('HGET', KEYS[1], name)
if ARGV[2] == 'cas' then
  if ARGV[3] == '0' then
    if current then return {0} end
  elseif current ~= ARGV[4] then
    return {0}
  end
end
local now = tonumber(redis.call('HGET', KEYS[2], 'bytes') or '0')
local old = 0
if current then old = #name + #current end
local after = now - old + #name + #value
if not current and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[7]) then return {-1} end
if after > tonumber(ARGV[6]) and after > now then return {-2, after} end
redis.call('HSET', KEYS[1], name, value)
redis.call('HSET', KEYS[2], 'bytes', after)
touch(ARGV[8])
return {1}
",
    )
});

/// Records a read: ARGV path, record JSON, size, max files, max bytes,
/// ttl. Evicts the least recently used beyond the bounds; a file larger
/// than all of them is not recorded.
pub(crate) static CACHE_FILE: LazyLock<Script> = LazyLock::new(|| {
    script(
        r"
local path, size = ARGV[1], tonumber(ARGV[3])
local max_files, max_bytes = tonumber(ARGV[4]), tonumber(ARGV[5])
drop_entry(path)
if size <= max_bytes then
  local function evict_oldest()
    local oldest = redis.call('ZRANGE', KEYS[4], 0, 0)
    if #oldest == 0 then return false end
    drop_entry(oldest[1])
    return true
  end
  while redis.call('ZCARD', KEYS[4]) >= max_files and evict_oldest() do end
  while tonumber(redis.call('HGET', KEYS[2], 'cache_bytes') or '0') + size > max_bytes and evict_oldest() do end
  local seq = redis.call('HINCRBY', KEYS[2], 'seq', 1)
  redis.call('HSET', KEYS[3], path, ARGV[2])
  redis.call('ZADD', KEYS[4], seq, path)
  redis.call('HINCRBY', KEYS[2], 'cache_bytes', size)
end
touch(ARGV[6])
return 1
",
    )
});

/// The record of a path, made the most recently used: ARGV path, ttl.
pub(crate) static CACHED_FILE: LazyLock<Script> = LazyLock::new(|| {
    script(
        r"
local record = redis.call('HGET', KEYS[3], ARGV[1])
if record then
  redis.call('ZADD', KEYS[4], redis.call('HINCRBY', KEYS[2], 'seq', 1), ARGV[1])
end
touch(ARGV[2])
return record
",
    )
});

/// Drops a path from the read cache: ARGV path, ttl.
pub(crate) static FORGET_FILE: LazyLock<Script> = LazyLock::new(|| {
    script(
        r"
drop_entry(ARGV[1])
touch(ARGV[2])
return 1
",
    )
});

/// The active groups as a JSON array, or nil: ARGV ttl.
pub(crate) static ACTIVE_GROUPS: LazyLock<Script> = LazyLock::new(|| {
    script(
        r"
local groups = redis.call('HGET', KEYS[2], 'groups')
touch(ARGV[1])
return groups
",
    )
});

/// Sets the active groups: ARGV groups (JSON array of strings), channel,
/// message, ttl. When the set changed, bumps the generation and publishes
/// the message on the channel; returns 1 then, else 0.
pub(crate) static SET_ACTIVE_GROUPS: LazyLock<Script> = LazyLock::new(|| {
    script(
        r"
local old = cjson.decode(redis.call('HGET', KEYS[2], 'groups') or '[]')
local new = cjson.decode(ARGV[1])
local function as_set(list)
  local set, n = {}, 0
  for _, g in ipairs(list) do if not set[g] then set[g] = true; n = n + 1 end end
  return set, n
end
local old_set, old_n = as_set(old)
local new_set, new_n = as_set(new)
local same = (#old == #new) and old_n == new_n
if same then
  for g in pairs(new_set) do if not old_set[g] then same = false end end
end
redis.call('HSET', KEYS[2], 'groups', ARGV[1])
touch(ARGV[4])
if same then return 0 end
redis.call('HINCRBY', KEYS[2], 'generation', 1)
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1
",
    )
});

/// The whole state: ARGV ttl → {values as name, text pairs, groups or
/// nil, read-cache records least recently used first}.
pub(crate) static SNAPSHOT: LazyLock<Script> = LazyLock::new(|| {
    script(
        r"
local values = redis.call('HGETALL', KEYS[1])
local groups = redis.call('HGET', KEYS[2], 'groups')
local records = {}
for _, path in ipairs(redis.call('ZRANGE', KEYS[4], 0, -1)) do
  local record = redis.call('HGET', KEYS[3], path)
  if record then table.insert(records, record) end
end
touch(ARGV[1])
return {values, groups, records}
",
    )
});

/// Issues a nonce: KEYS the deployment's pending set and the nonce's key;
/// ARGV nonce, lifetime in ms, the most pending. Drops the expired from the
/// set (by Redis's clock: one clock for every process), refuses past the
/// bound (`0`), else stores the nonce with its lifetime (`1`).
pub(crate) static ISSUE_NONCE: LazyLock<Script> = LazyLock::new(|| {
    timed_script(
        r"
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
if not redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[2]) then return -1 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
",
    )
});

/// Consumes a nonce: KEYS as [`ISSUE_NONCE`]; ARGV nonce. `GETDEL` hands it
/// to exactly one caller (`1`), and never after its lifetime (`0`).
pub(crate) static CONSUME_NONCE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local found = redis.call('GETDEL', KEYS[2])
redis.call('ZREM', KEYS[1], ARGV[1])
if found then return 1 end
return 0
",
    )
});

/// Remembers a rule: KEYS the rules hash and the version; ARGV the rule and
/// its record. Bumps the version.
pub(crate) static REMEMBER_RULE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return redis.call('INCR', KEYS[2])
",
    )
});

/// Forgets a rule: KEYS as [`REMEMBER_RULE`]; ARGV the rule. Bumps the
/// version when there was one; returns whether there was.
pub(crate) static FORGET_RULE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local removed = redis.call('HDEL', KEYS[1], ARGV[1])
if removed == 1 then redis.call('INCR', KEYS[2]) end
return removed
",
    )
});

/// The version and every record, read together: KEYS as [`REMEMBER_RULE`].
pub(crate) static REMEMBERED_RULES: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
return {redis.call('GET', KEYS[2]) or '0', redis.call('HVALS', KEYS[1])}
",
    )
});

/// A replica's heartbeat: KEYS its record (hash: `instance`, `record`) and
/// the deployment's set of replicas (id by expiry); ARGV id, instance,
/// record, lifetime in ms. Returns the record of another instance that
/// held the id and was alive (nil otherwise), then writes this one.
pub(crate) static HEARTBEAT: LazyLock<Script> = LazyLock::new(|| {
    timed_script(
        r"
local other = false
local holder = redis.call('HGET', KEYS[1], 'instance')
if holder and holder ~= ARGV[2] then other = redis.call('HGET', KEYS[1], 'record') end
redis.call('HSET', KEYS[1], 'instance', ARGV[2], 'record', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[4]), ARGV[1])
return other
",
    )
});

/// The live replicas: KEYS the set of replicas; ARGV the prefix of their
/// record keys (`<key_prefix>:replica:`). Drops the expired ids, returns
/// the records of the others.
pub(crate) static REPLICAS: LazyLock<Script> = LazyLock::new(|| {
    timed_script(
        r"
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local records = {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local record = redis.call('HGET', ARGV[1] .. id, 'record')
  if record then table.insert(records, record) end
end
return records
",
    )
});

/// A replica leaves: KEYS as [`HEARTBEAT`]; ARGV id, instance. Only the
/// instance that holds the id removes it.
pub(crate) static LEAVE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('HGET', KEYS[1], 'instance') == ARGV[2] then
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', KEYS[2], ARGV[1])
end
return 0
",
    )
});

/// Appends to an event log: KEYS the stream's key; ARGV the data, the most
/// entries kept, the lifetime in ms. Returns the entry's id.
pub(crate) static APPEND_EVENT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '*', 'd', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return id
",
    )
});

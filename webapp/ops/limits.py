"""Per-user request limits in Redis: how many run at once, and how many start per minute.

One Lua script, run atomically: forget expired entries, refuse over either limit, else record the request.
The playground's decodes and the lesson's demonstrations both count through it, each under its own keys.
"""
from __future__ import annotations

import functools
from typing import Any

from webapp.ops.redis_client import redis_for

# KEYS: running set, per-minute set. ARGV: now, max running, max per minute, member, running entry's expiry.
# Returns {0} (accepted), {1} (too many running) or {2, seconds until a slot frees} (rate).
ADMIT = """
local now = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - 60)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return {1} end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[3]) then
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  return {2, tostring(tonumber(oldest[2]) + 60 - now)}
end
redis.call('ZADD', KEYS[1], ARGV[5], ARGV[4])
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[5]) - now) + 1)
redis.call('ZADD', KEYS[2], now, ARGV[4])
redis.call('EXPIRE', KEYS[2], 61)
return {0}
"""


@functools.lru_cache(maxsize=4)
def admit_script(url: str) -> Any:
    """The limits script, sent once and then called by its hash (EVALSHA)."""
    return redis_for(url).register_script(ADMIT)

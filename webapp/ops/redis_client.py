"""The web side's Redis client for its own keys (limits, control flags, ballots, presence): one per URL, shared.

A redis-py client holds a thread-safe connection pool, so every thread and event loop of a process uses the same
one. The channel layer and Celery keep connections of their own. `quick_redis` is the same for the checks that must
not hold a request when Redis is slow or away (throttles, lockouts: they give way after a second).
"""
from __future__ import annotations

import functools

import redis
from django.conf import settings


@functools.lru_cache(maxsize=8)
def redis_for(url: str, timeout_s: float | None = None) -> redis.Redis:
    """The shared client for this Redis URL (and socket timeout)."""
    return redis.Redis.from_url(url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s)


def app_redis() -> redis.Redis:
    """The shared client for settings.REDIS_URL (read at each call: a test may point it elsewhere)."""
    return redis_for(settings.REDIS_URL)


def quick_redis() -> redis.Redis:
    """The shared client for settings.REDIS_URL whose calls give up after a second."""
    return redis_for(settings.REDIS_URL, 1.0)

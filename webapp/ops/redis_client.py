"""The web side's Redis client for its own keys (limits, control flags, ballots, presence): one per URL, shared.

A redis-py client holds a thread-safe connection pool, so every thread and event loop of a process uses the same
one. The channel layer and Celery keep connections of their own.
"""
from __future__ import annotations

import functools

import redis
from django.conf import settings


@functools.lru_cache(maxsize=4)
def redis_for(url: str) -> redis.Redis:
    """The shared client for this Redis URL."""
    return redis.Redis.from_url(url)


def app_redis() -> redis.Redis:
    """The shared client for settings.REDIS_URL (read at each call: a test may point it elsewhere)."""
    return redis_for(settings.REDIS_URL)

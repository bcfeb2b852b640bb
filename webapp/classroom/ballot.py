"""A question's answers while it is open, in Redis: once per student, closed at the reveal, across web processes.

A class answers within a second; one Redis call per answer (a script: the question still open,
this student's first answer, the count of that choice) keeps that off the database, whose
writes queue behind one another. The answers go to the database when the question closes
(questions.answers_persist), before anything is scored.
"""
from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import redis.asyncio as aioredis
from django.conf import settings

from webapp.ops.redis_client import app_redis
from webapp.realtime.loops import per_loop

TTL_S = 24 * 3600
OPEN, REVEALED, CLOSED = "open", "revealed", "closed"

# KEYS: status, answers (user -> choice), counts (choice -> n), times (user -> when, Unix seconds).
# ARGV: user id, choice, seconds to keep them, the time of the answer.
# Returns {0, status} (not open), {1} (answered already) or {2} (counted).
_ANSWER = """
local status = redis.call('GET', KEYS[1])
if status ~= 'open' then return {0, status or ''} end
if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2]) == 0 then return {1} end
redis.call('HINCRBY', KEYS[3], ARGV[2], 1)
redis.call('HSET', KEYS[4], ARGV[1], ARGV[4])
redis.call('EXPIRE', KEYS[2], ARGV[3])
redis.call('EXPIRE', KEYS[3], ARGV[3])
redis.call('EXPIRE', KEYS[4], ARGV[3])
return {2}
"""


def _keys(question_id: int) -> list[str]:
    base = f"classroom:question:{question_id}"
    return [f"{base}:status", f"{base}:answers", f"{base}:counts", f"{base}:times"]


def ballot_open(question_id: int) -> None:
    status, answers, counts, times = _keys(question_id)
    pipe = app_redis().pipeline(transaction=True)
    pipe.set(status, OPEN, ex=TTL_S)
    pipe.delete(answers, counts, times)
    pipe.execute()


async def ballot_answer_async(question_id: int, user_id: int, choice: str) -> tuple[bool, str]:
    """Count one answer, on the socket's event loop (no thread hop per answer when a class answers at once): (True, "")
    when counted; else (False, why): "already", or the question's status ("" when unknown)."""
    return _verdict(await _script()(keys=_keys(question_id), args=[str(user_id), choice, TTL_S, time.time()]))


def _verdict(verdict: list[Any]) -> tuple[bool, str]:
    if verdict[0] == 2:
        return True, ""
    if verdict[0] == 1:
        return False, "already"
    status = verdict[1]
    return False, status.decode() if isinstance(status, bytes) else str(status)


ANSWER_CONNECTIONS = 32  # a class answering at once waits its turn for one of these, never fails for want of one


def _loop_script() -> Any:
    """The answer script on this event loop's own asyncio client (sent once, then called by its hash)."""
    pool = aioredis.BlockingConnectionPool.from_url(settings.REDIS_URL, max_connections=ANSWER_CONNECTIONS,
                                                    timeout=10)
    return aioredis.Redis(connection_pool=pool).register_script(_ANSWER)


_script = per_loop(_loop_script)


def ballot_close(question_id: int, status: str) -> dict[int, tuple[str, datetime | None]]:
    """Stop taking answers (revealed or closed); returns every answer taken, user id -> (choice, when it came)."""
    key, answers, _, times = _keys(question_id)
    pipe = app_redis().pipeline(transaction=True)
    pipe.set(key, status, ex=TTL_S)
    pipe.hgetall(answers)
    pipe.hgetall(times)
    _, taken, when = pipe.execute()
    return {int(user): (choice.decode(), _moment(when.get(user))) for user, choice in taken.items()}


def _moment(raw: bytes | None) -> datetime | None:
    try:
        return datetime.fromtimestamp(float(raw), tz=UTC) if raw is not None else None
    except ValueError:
        return None


def ballot_counts(question_id: int, options: list[str]) -> dict[str, int]:
    """How many chose each answer so far: the options first, in order, then typed answers."""
    raw = app_redis().hgetall(_keys(question_id)[2])
    counts = {option: 0 for option in options}
    for choice, n in sorted(raw.items()):
        counts[choice.decode()] = int(n)
    return counts


def ballot_mine(question_id: int, user_id: int) -> str | None:
    mine = app_redis().hget(_keys(question_id)[1], str(user_id))
    return mine.decode() if mine is not None else None

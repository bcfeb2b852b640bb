"""A question's answers while it is open, in Redis: once per student, closed at the reveal, across web processes.

A class answers within a second; one Redis call per answer (a script: the question still open,
this student's first answer, the count of that choice) keeps that off the database, whose
writes queue behind one another. The answers go to the database when the question closes
(services.answers_persist), before anything is scored.
"""
from __future__ import annotations

from typing import Any

from webapp.playground.services import playground_redis

TTL_S = 24 * 3600
OPEN, REVEALED, CLOSED = "open", "revealed", "closed"

# KEYS: status, answers (user -> choice), counts (choice -> n). ARGV: user id, choice.
# Returns {0, status} (not open), {1} (answered already) or {2} (counted).
_ANSWER = """
local status = redis.call('GET', KEYS[1])
if status ~= 'open' then return {0, status or ''} end
if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2]) == 0 then return {1} end
redis.call('HINCRBY', KEYS[3], ARGV[2], 1)
return {2}
"""


def _keys(question_id: int) -> list[str]:
    base = f"classroom:question:{question_id}"
    return [f"{base}:status", f"{base}:answers", f"{base}:counts"]


def ballot_open(question_id: int) -> None:
    status, answers, counts = _keys(question_id)
    pipe = playground_redis().pipeline(transaction=True)
    pipe.set(status, OPEN, ex=TTL_S)
    pipe.delete(answers, counts)
    pipe.execute()


def ballot_answer(question_id: int, user_id: int, choice: str) -> tuple[bool, str]:
    """(True, "") when counted; else (False, why): "already", or the question's status ("" when unknown)."""
    client = playground_redis()
    verdict = client.eval(_ANSWER, 3, *_keys(question_id), str(user_id), choice)
    if verdict[0] == 2:
        _expire(client, question_id)
        return True, ""
    if verdict[0] == 1:
        return False, "already"
    status = verdict[1]
    return False, status.decode() if isinstance(status, bytes) else str(status)


def _expire(client: Any, question_id: int) -> None:
    _, answers, counts = _keys(question_id)
    pipe = client.pipeline(transaction=False)
    pipe.expire(answers, TTL_S)
    pipe.expire(counts, TTL_S)
    pipe.execute()


def ballot_close(question_id: int, status: str) -> dict[int, str]:
    """Stop taking answers (revealed or closed); returns every answer taken, user id -> choice."""
    key, answers, _ = _keys(question_id)
    pipe = playground_redis().pipeline(transaction=True)
    pipe.set(key, status, ex=TTL_S)
    pipe.hgetall(answers)
    _, taken = pipe.execute()
    return {int(user): choice.decode() for user, choice in taken.items()}


def ballot_counts(question_id: int, options: list[str]) -> dict[str, int]:
    """How many chose each answer so far: the options first, in order, then typed answers."""
    raw = playground_redis().hgetall(_keys(question_id)[2])
    counts = {option: 0 for option in options}
    for choice, n in sorted(raw.items()):
        counts[choice.decode()] = int(n)
    return counts


def ballot_mine(question_id: int, user_id: int) -> str | None:
    mine = playground_redis().hget(_keys(question_id)[1], str(user_id))
    return mine.decode() if mine is not None else None

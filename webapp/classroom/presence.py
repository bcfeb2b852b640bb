"""Who is in the room: open sockets per participant in Redis (all web processes), the console told in batches."""
from __future__ import annotations

import asyncio
from typing import Any

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.utils import timezone

from webapp.classroom.models import Participant
from webapp.classroom.relay import event_message, session_group
from webapp.ops.redis_client import app_redis
from webapp.realtime.loops import per_loop

PRESENCE_EVERY_S = 0.1  # a class joining at once reaches the console as a few updates, not one per student
TTL_S = 24 * 3600


def presence_key(code: str) -> str:
    return f"classroom:presence:{code}"


def _count(code: str, user_id: int, delta: int) -> int:
    """This user's open sockets in the session after the change (a user with two tabs is present once)."""
    client = app_redis()
    key = presence_key(code)
    pipe = client.pipeline(transaction=True)
    pipe.hincrby(key, str(user_id), delta)
    pipe.expire(key, TTL_S)
    now, _ = pipe.execute()
    if now <= 0:
        client.hdel(key, str(user_id))
    return int(now)


def _mark(code: str, marks: dict[int, bool]) -> None:
    """Participants come (True) or gone (False): one UPDATE for each, however many joined at once."""
    now = timezone.now()
    for present in (True, False):
        users = [user_id for user_id, mark in marks.items() if mark is present]
        if users:
            Participant.objects.filter(session__code=code, user_id__in=users).update(present=present, last_seen_at=now)


def presence_list(code: str) -> dict[str, Any]:
    """The present participants' count and names (names go to the console only)."""
    names = sorted(Participant.objects.filter(session__code=code, present=True)
                   .values_list("user__username", flat=True))
    return {"type": "presence", "count": len(names), "names": names}


def _marked_list(code: str, marks: dict[int, bool]) -> dict[str, Any]:
    _mark(code, marks)
    return presence_list(code)


class PresenceBatch:
    def __init__(self) -> None:
        self.pending: set[str] = set()
        self.marks: dict[str, dict[int, bool]] = {}  # session code -> user -> present, written with the next list

    def soon(self, code: str, user_id: int | None = None, present: bool = True) -> None:
        if user_id is not None:
            self.marks.setdefault(code, {})[user_id] = present
        if code in self.pending:
            return
        self.pending.add(code)
        asyncio.get_running_loop().call_later(PRESENCE_EVERY_S, lambda: asyncio.ensure_future(self._send(code)))

    async def _send(self, code: str) -> None:
        self.pending.discard(code)
        marks = self.marks.pop(code, {})
        frame = await database_sync_to_async(_marked_list, thread_sensitive=False)(code, marks)
        await get_channel_layer().group_send(session_group(code), event_message(frame, to="console"))


batch = per_loop(PresenceBatch)


async def presence_change(code: str, user_id: int, delta: int, *, student: bool) -> None:
    """A socket of this user opened (+1) or closed (-1); the console hears when the user comes or goes."""
    if not student:
        if delta > 0:
            batch().soon(code)  # a console that opens gets the list
        return
    now = await sync_to_async(_count, thread_sensitive=False)(code, user_id, delta)
    if (delta > 0 and now == 1) or (delta < 0 and now <= 0):
        batch().soon(code, user_id, now > 0)  # written with the console's next list: a class joining at once, one UPDATE

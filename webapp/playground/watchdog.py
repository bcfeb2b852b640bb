"""The one watch over decodes in flight, for every follower in this event loop (a student's playground socket, a
live session's relay): a request no worker took is `no_worker`, one whose worker went silent is `worker_lost`.

A request no worker took within PLAYGROUND_QUEUE_WAIT_S is `no_worker`, and at once when no interactive worker is
left alive (webapp/ops/worker_presence.py knows a killed one within a second); one whose worker has been silent (no
frame, no beat) for PLAYGROUND_WORKER_LOST_S is `worker_lost` (the worker was killed or lost its machine). Each
follower says when the worker last spoke to it, what to do when the request is lost, and when there is nothing more
to watch; the watch tells each lost request once. Silence is measured from the worker, not from this event loop: before
calling a request lost, the watch reads the alive key its worker sets at each beat (keys.alive_key), so a web process
that was itself stalled (its frames and beats waiting unread) does not end a healthy run. A web process that cannot
reach Redis to read that key (its link to the data host cut) cannot tell a dead worker from its own cut: it calls
nothing lost, tells the follower it is cut off (`away(True)`), and decides once Redis answers it again (`away(False)`
first, so the follower can catch its screens up from the source).
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field

import redis
from django.conf import settings

from webapp.ops.redis_client import quick_redis
from webapp.ops.worker_presence import queue_workers_up
from webapp.playground.keys import alive_key
from webapp.realtime.loops import per_loop

log = logging.getLogger(__name__)

WATCH_EVERY_S = 0.5  # how often the watch looks for requests whose worker went quiet
NO_WORKER, WORKER_LOST = "no_worker", "worker_lost"


@dataclass
class Watched:
    """One request in flight as its follower sees it."""

    request_id: str
    heard: Callable[[], float | None]  # when its worker last spoke (time.monotonic; None: no worker took it yet)
    lost: Callable[[str], Awaitable[None]]  # told once, with NO_WORKER or WORKER_LOST
    over: Callable[[], bool] = lambda: False  # nothing more to watch (it ended, its follower went)
    queued: float = field(default_factory=time.monotonic)
    vouched: float = float("-inf")  # when its worker's alive key last vouched for it
    away: Callable[[bool], Awaitable[None]] | None = None  # told True when Redis stops answering this process about
    # the silent request, False when it answers again
    cut_off: bool = False  # Redis did not answer the last look at it


class Watchdog:
    """One per event loop: the requests its followers watch, looked at every WATCH_EVERY_S."""

    def __init__(self) -> None:
        self._watched: dict[Hashable, Watched] = {}
        self._task: asyncio.Task[None] | None = None

    def watch(self, key: Hashable, watched: Watched) -> None:
        """Watch a request under the follower's key (a key watched already: this replaces it)."""
        self._watched[key] = watched
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._watch_forever())

    def forget(self, key: Hashable) -> None:
        self._watched.pop(key, None)

    def watching(self, key: Hashable) -> bool:
        return key in self._watched

    async def _watch_forever(self) -> None:
        while self._watched:
            await asyncio.sleep(WATCH_EVERY_S)
            for key, watched in list(self._watched.items()):
                if watched.over():
                    self._watched.pop(key, None)
            heard = {key: watched.heard() for key, watched in self._watched.items()}
            heard = {key: at if at is None else max(at, self._watched[key].vouched) for key, at in heard.items()}
            nobody = any(at is None for at in heard.values()) and await no_interactive_worker()
            now = time.monotonic()
            for key, at in heard.items():
                watched = self._watched.get(key)
                if watched is None:
                    continue
                if at is None and (nobody or now - watched.queued > settings.PLAYGROUND_QUEUE_WAIT_S):
                    code = NO_WORKER
                elif at is not None and now - at > settings.PLAYGROUND_WORKER_LOST_S:
                    holds = await worker_holds(watched.request_id)
                    if watched.cut_off != (holds is None):
                        watched.cut_off = holds is None
                        await _tell_away(key, watched)
                        if watched.over():  # told Redis is back, the follower found the request ended meanwhile
                            self._watched.pop(key, None)
                            continue
                    if holds is None:  # cut off from Redis: no word either way until it answers
                        continue
                    if holds:  # this loop was deaf, the worker is not dead
                        watched.vouched = time.monotonic()
                        continue
                    code = WORKER_LOST
                else:
                    continue
                self._watched.pop(key, None)
                try:
                    await watched.lost(code)
                except redis.RedisError:  # Redis went away meanwhile: look again at the next round
                    log.warning("could not end lost request %s yet: Redis is away", key, exc_info=True)
                    self._watched.setdefault(key, watched)
                except Exception:  # one follower's failure must not stop the watch over the others
                    log.exception("could not end lost request %s", key)


async def _tell_away(key: Hashable, watched: Watched) -> None:
    if watched.away is None:
        return
    try:
        await watched.away(watched.cut_off)
    except Exception:  # the follower's screens are its own: the watch goes on
        log.exception("could not tell %s that Redis is %s", key, "away" if watched.cut_off else "back")


async def worker_holds(request_id: str) -> bool | None:
    """Whether the request's worker vouched for it at its last beat; None when Redis does not answer this process
    within a second (it cannot tell)."""
    try:
        return bool(await asyncio.to_thread(quick_redis().exists, alive_key(request_id)))
    except (redis.RedisError, OSError):
        return None


async def no_interactive_worker() -> bool:
    """True when no interactive worker is alive to take a queued request (Redis away: False, the wait decides)."""
    try:
        return not await asyncio.to_thread(queue_workers_up, "interactive")
    except Exception:  # Redis away for a moment: PLAYGROUND_QUEUE_WAIT_S still bounds the wait
        return False


watchdog = per_loop(Watchdog)  # the running event loop's watch

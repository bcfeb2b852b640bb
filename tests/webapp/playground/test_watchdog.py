"""The one watch over decodes in flight (webapp/playground/watchdog.py), alone: a request no worker took is
`no_worker`, one whose worker went silent is `worker_lost`, unless the worker's own alive key says it still holds it
(the web process was the one that stalled). The test run's embedded Redis; no worker, no socket."""
from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from webapp.ops.redis_client import app_redis
from webapp.playground.keys import ALIVE_TTL_S, alive_key
from webapp.playground.watchdog import NO_WORKER, WORKER_LOST, Watched, watchdog


async def _told(watched: Watched, key: str, told: list[str], within_s: float) -> None:
    watchdog().watch(key, watched)
    deadline = time.monotonic() + within_s
    while not told and time.monotonic() < deadline:
        await asyncio.sleep(0.05)


def _watched(request_id: str, heard: float | None, told: list[str]) -> Watched:
    async def lost(code: str) -> None:
        told.append(code)

    return Watched(request_id=request_id, heard=lambda: heard, lost=lost)


@pytest.fixture
def quick(settings):
    settings.PLAYGROUND_WORKER_LOST_S = 0.3
    settings.PLAYGROUND_QUEUE_WAIT_S = 0.3


async def test_a_run_whose_worker_went_silent_is_lost(quick):
    told: list[str] = []
    request_id = uuid.uuid4().hex
    await _told(_watched(request_id, time.monotonic() - 10, told), request_id, told, within_s=3)
    assert told == [WORKER_LOST]


async def test_a_stalled_web_process_does_not_end_a_run_its_worker_still_holds(quick):
    """Its frames and beats waited unread while this loop was stalled: the worker's alive key vouches for the run."""
    told: list[str] = []
    request_id = uuid.uuid4().hex
    app_redis().set(alive_key(request_id), "1", ex=ALIVE_TTL_S)
    await _told(_watched(request_id, time.monotonic() - 10, told), request_id, told, within_s=1.5)
    assert told == [] and watchdog().watching(request_id)
    app_redis().delete(alive_key(request_id))  # the worker stops vouching (it died): lost once the silence runs out
    deadline = time.monotonic() + 3
    while not told and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert told == [WORKER_LOST]


async def test_a_run_no_worker_took_is_no_worker(quick):
    told: list[str] = []
    request_id = uuid.uuid4().hex
    await _told(_watched(request_id, None, told), request_id, told, within_s=3)
    assert told == [NO_WORKER]


async def test_a_web_process_cut_from_redis_calls_nothing_lost_until_redis_answers_it_again(quick, settings):
    """It cannot tell a dead worker from its own cut: its follower is told it is cut off, nothing is lost; once Redis
    answers, the follower is told first (to catch its screens up), then the silence decides."""
    from tests.fixtures.services import free_port

    told: list[str] = []
    request_id = uuid.uuid4().hex

    async def lost(code: str) -> None:
        told.append(code)

    async def away(cut_off: bool) -> None:
        told.append("cut off" if cut_off else "back")

    reachable = settings.REDIS_URL
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"  # nobody listens there: refused, as a reset link is
    silent_since = time.monotonic() - 10
    await _told(Watched(request_id=request_id, heard=lambda: silent_since, lost=lost, away=away), request_id, told,
                within_s=3)
    assert told == ["cut off"] and watchdog().watching(request_id)
    settings.REDIS_URL = reachable
    deadline = time.monotonic() + 3
    while len(told) < 3 and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert told == ["cut off", "back", WORKER_LOST]

"""Every decode is answered or refused when a worker dies or none is up (real daphne, workers and a Redis of its own)."""
from __future__ import annotations

import asyncio
import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from django.conf import settings
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from tests.fixtures.playground import SOURCE
from tests.fixtures.services import WebProcess
from tests.fixtures.stack import Stack, cookie_for, run, web_socket
from webapp.playground import keys

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services, pytest.mark.slow]

QUEUE_WAIT_S = 4  # the web processes' PLAYGROUND_QUEUE_WAIT_S here
SLOW = {"type": "decode", "model": "tiny", "source": SOURCE, "pace_ms": 200, "min_len": 60, "max_len": 60}


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    stack = Stack(tmp_path)
    yield stack
    stack.close()


def socket(web: WebProcess, cookie: str) -> Any:
    return web_socket(web, "/ws/decode/", cookie)


async def frame(ws: ClientConnection, timeout: float = 20) -> dict[str, Any]:
    return json.loads(await asyncio.wait_for(ws.recv(), timeout))


async def until_final(ws: ClientConnection, timeout: float = 30) -> list[dict[str, Any]]:
    frames: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while not frames or frames[-1]["type"] not in ("done", "error"):
        frames.append(await frame(ws, max(0.1, deadline - time.monotonic())))
    return frames


def test_a_worker_killed_mid_decode_ends_the_request_with_worker_lost_and_a_new_worker_serves(stack, tiny, student):
    web = stack.web(PLAYGROUND_QUEUE_WAIT_S=str(QUEUE_WAIT_S))
    worker = stack.worker()
    cookie = cookie_for(student)

    async def killed() -> tuple[dict[str, Any], dict[str, Any], float, list[dict[str, Any]], dict[str, Any], float]:
        async with socket(web, cookie) as ws:
            await ws.send(json.dumps({**SLOW, "tag": "first"}))
            start = await frame(ws)
            await frame(ws)  # a token: the worker is mid-decode
            worker.stop(signal.SIGKILL)  # as the OOM killer would: no chance to say goodbye
            killed_at = time.monotonic()
            last = (await until_final(ws))[-1]
            waited = time.monotonic() - killed_at
            after: list[dict[str, Any]] = []
            try:  # nothing more comes for the lost request
                after.append(await frame(ws, timeout=2))
            except TimeoutError:
                pass
            # The dead worker's presence has not expired yet: this one is queued, and refused when nobody takes it.
            await ws.send(json.dumps({**SLOW, "tag": "queued"}))
            asked = time.monotonic()
            queued = await frame(ws, timeout=QUEUE_WAIT_S + 5)
            return start, last, waited, after, queued, time.monotonic() - asked

    start, last, waited, after, queued, queued_wait = run(killed)
    print(f"worker_lost {waited:.1f} s after the kill")
    assert (last["type"], last["code"], last["request_id"], last["tag"]) == (
        "error", "worker_lost", start["request_id"], "first")
    assert "run it again" in last["message"]
    assert waited <= settings.PLAYGROUND_WORKER_LOST_S + 2
    assert after == []
    assert (queued["type"], queued["code"], queued["tag"]) == ("error", "no_worker", "queued")
    assert queued_wait <= QUEUE_WAIT_S + 2

    stack.worker()

    async def again() -> list[dict[str, Any]]:
        async with socket(web, cookie) as ws:
            await ws.send(json.dumps({"type": "decode", "model": "tiny", "source": SOURCE, "max_len": 8}))
            return await until_final(ws)

    frames = run(again)
    assert frames[-1]["type"] == "done"
    # The worker that came up found the refused request in the queue and dropped it unrun (it expired):
    # a request it ran would have ended, cancelled, and been recorded.
    client = redis.Redis.from_url(stack.redis.url)
    assert client.get(keys.ended_key(frames[0]["request_id"])) is not None
    assert client.get(keys.ended_key(queued["request_id"])) is None
    assert [f["seq"] for f in frames if f["type"] == "token"] == list(range(frames[-1]["steps"]))


def test_with_no_interactive_worker_a_decode_is_refused_with_no_worker_within_a_second(stack, tiny, student):
    web = stack.web()
    cookie = cookie_for(student)

    async def refused() -> tuple[dict[str, Any], float]:
        async with socket(web, cookie) as ws:
            asked = time.monotonic()
            await ws.send(json.dumps({**SLOW, "tag": "lonely"}))
            answer = await frame(ws, timeout=5)
            return answer, time.monotonic() - asked

    answer, waited = run(refused)
    print(f"no_worker after {waited * 1000:.0f} ms")
    assert (answer["type"], answer["code"], answer["tag"]) == ("error", "no_worker", "lonely")
    assert waited < 1.0


async def follow(ws: ClientConnection, timeout: float = 40) -> tuple[list[dict[str, Any]], bool]:
    """One request's frames to its end as a client would, resyncing on a seq gap; (frames, resynced)."""
    frames = await until_final(ws, timeout)
    if frames[-1]["type"] == "error":
        return frames, False
    seqs = [f["seq"] for f in frames if f["type"] == "token"]
    if seqs == list(range(frames[-1]["steps"])):
        return frames, False
    await ws.send(json.dumps({"type": "resync", "request_id": frames[-1]["request_id"]}))
    while (answer := await frame(ws, timeout=10))["type"] not in ("state", "error"):
        pass
    return (answer["frames"] if answer["type"] == "state" else [*frames, answer]), True


def test_a_redis_restart_mid_decode_closes_no_socket_and_every_client_gets_its_frames_or_an_error(
        stack, tiny, student):
    webs = [stack.web(), stack.web()]
    stack.worker()
    cookie = cookie_for(student)

    async def client(web: WebProcess) -> tuple[list[dict[str, Any]], bool, int | None]:
        async with socket(web, cookie) as ws:
            await ws.send(json.dumps({**SLOW, "pace_ms": 100}))
            frames, resynced = await follow(ws)
        return frames, resynced, ws.close_code

    async def during(web: WebProcess) -> dict[str, Any] | None:
        """A socket opened while Redis is away: served or refused with an error frame, never closed."""
        try:
            async with socket(web, cookie) as ws:
                try:  # a socket refused for want of Redis is closed at once, with a frame saying why
                    await ws.send(json.dumps({"type": "decode", "model": "tiny", "source": SOURCE, "max_len": 4}))
                except ConnectionClosed:
                    pass
                last = (await until_final(ws, timeout=30))[-1]
                if last.get("code") == "unavailable":  # the page's script reconnects on this close
                    await asyncio.wait_for(ws.wait_closed(), 5)
                return {**last, "close": ws.close_code}
        except Exception as error:  # noqa: BLE001 (reported in the assertion)
            return {"type": "closed", "error": repr(error)}

    async def blip() -> float:
        await asyncio.sleep(1.5)
        assert stack.redis.proc is not None
        stack.redis.proc.kill()  # gone at once, as a crashed or restarted Redis is
        await asyncio.to_thread(stack.redis.proc.wait)
        stopped = time.monotonic()
        await asyncio.sleep(3)
        starting = time.monotonic()
        await asyncio.to_thread(stack.redis.start)
        print(f"Redis away {time.monotonic() - stopped:.1f} s (slept {starting - stopped:.1f} s)")
        return time.monotonic()

    async def scenario() -> tuple[list[Any], list[Any], float]:
        running = [asyncio.ensure_future(client(web)) for web in webs]
        back = asyncio.ensure_future(blip())
        await asyncio.sleep(2.5)  # Redis is away now
        opened = await asyncio.gather(*(during(web) for web in webs))
        return await asyncio.gather(*running), opened, await back

    results, opened, back_at = run(scenario)
    for frames, resynced, close_code in results:
        print(f"{len(frames)} frames, ended {frames[-1]['type']} {frames[-1].get('code')}, resynced {resynced}, close {close_code}")
        assert close_code != 1011
        last = frames[-1]
        if last["type"] == "done":
            assert [f["seq"] for f in frames if f["type"] == "token"] == list(range(last["steps"]))
        else:
            assert last["type"] == "error"
    for last in opened:
        print("opened during the blip:", last)
        assert last["type"] in ("done", "error")
        if last.get("code") == "unavailable":  # the script reconnects on this close (static/js/socket.js)
            assert last["close"] == 4013

    async def fresh(web: WebProcess) -> dict[str, Any]:
        async with socket(web, cookie) as ws:
            await ws.send(json.dumps({"type": "decode", "model": "tiny", "source": SOURCE, "max_len": 4}))
            try:
                return (await until_final(ws))[-1]
            except TimeoutError:  # no answer at all
                return {"type": "unanswered"}

    async def within_5_s() -> list[tuple[float, dict[str, Any]]]:
        results = []
        for web in webs:
            while True:
                last = await fresh(web)
                if last["type"] == "done" or time.monotonic() - back_at > 8:
                    break
                await asyncio.sleep(0.2)
            results.append((time.monotonic() - back_at, last))
        return results

    late = run(within_5_s)
    for after, last in late:
        print(f"a new decode done {after:.1f} s after Redis came back: {last['type']} {last.get('code')}")
    # Every web process serves a new decode within seconds of Redis coming back, complete. (A job the
    # worker took while its loop's read of the control flags failed was once dropped, held and never
    # run: the web process heard its beats and waited for ever.)
    assert all(last["type"] == "done" and after <= 5 for after, last in late), late

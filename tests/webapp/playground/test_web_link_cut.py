"""A student's playground decode while their web process is cut from Redis and the worker is not (a web host
partitioned from the data host): the link is reset and refused for longer than PLAYGROUND_WORKER_LOST_S, ten steps
in, while the decode ends or goes on. The page is told it is behind (`catching_up`, not an end), then gets the whole
decode from its source once the link is back; never `worker_lost` for a worker that finished (real daphne, worker,
Redis, and the project's link proxy between the web process and Redis)."""
from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from tests.fixtures.link import RedisLink
from tests.fixtures.playground import SOURCE
from tests.fixtures.services import free_port
from tests.fixtures.stack import Stack, cookie_for, run, web_socket

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services, pytest.mark.slow]

STEPS, CUT_AT_STEP = 60, 10


async def page(ws: Any, on_step: Any, timeout: float = 45) -> tuple[list[dict[str, Any]], list[str], float]:
    """What the page ends with, taking frames as static/js/playground.js does (docs/protocol.md, "Gaps"): a `state`
    replaces its steps, a seq that skips asks for one, a `done` that comes while one is awaited asks again and waits
    for it, `catching_up` is a notice. Returns its frames, the error codes it was told, and when its steps were last
    made whole by a `state`."""
    frames: list[dict[str, Any]] = []
    told: list[str] = []
    stated = float("nan")
    resyncing = False
    deadline = time.monotonic() + timeout
    while True:
        frame = json.loads(await asyncio.wait_for(ws.recv(), max(0.1, deadline - time.monotonic())))
        kind = frame["type"]
        if kind == "error":
            told.append(frame["code"])
            if frame["code"] != "catching_up":
                return [*frames, frame], told, stated
        elif kind == "state":
            frames, stated, resyncing = list(frame["frames"]), time.monotonic(), False
        elif kind in ("start", "token", "done"):
            steps = [f for f in frames if f["type"] == "token"]
            if kind == "token" and frame["seq"] < len(steps):
                continue  # drawn already
            skips = kind == "token" and frame["seq"] > len(steps)
            drawn = [f["id"] for f in steps]
            disagrees = kind == "done" and any(i >= len(drawn) or drawn[i] != id_ for i, id_ in enumerate(frame["ids"]))
            if resyncing or skips or disagrees:
                # Under load the worker may still be decoding when the link is back: its later steps, even its
                # `done`, can come before the `state` asked for, which alone holds the steps lost in the cut.
                resyncing = True
                await ws.send(json.dumps({"type": "resync", "request_id": frame["request_id"]}))
                continue
            frames.append(frame)
            if kind == "token":
                await on_step(frame["seq"])
        if frames and frames[-1]["type"] == "done":
            return frames, told, stated


@pytest.mark.parametrize(("pace_ms", "cut_s"), [(100, 8.0), (250, 7.0)], ids=["ends-during-the-cut", "goes-on-after"])
def test_a_decode_whose_web_process_is_cut_from_redis_is_caught_up_not_called_lost(
        tmp_path, tiny, student, pace_ms, cut_s):
    stack = Stack(tmp_path, redis_port=free_port())
    link = RedisLink(tmp_path, stack.redis.port)
    try:
        web = stack.web(REDIS_URL=link.url)
        stack.worker()
        cookie = cookie_for(student)
        cut_at: list[float] = []

        async def on_step(seq: int) -> None:
            if seq >= CUT_AT_STEP and not cut_at:
                cut_at.append(time.monotonic())
                await asyncio.to_thread(link.cut, cut_s, "reset")

        async def scenario() -> tuple[list[dict[str, Any]], list[str], float]:
            async with web_socket(web, "/ws/decode/", cookie) as ws:
                await ws.send(json.dumps({"type": "decode", "model": "tiny", "source": SOURCE, "pace_ms": pace_ms,
                                          "min_len": STEPS, "max_len": STEPS}))
                return await page(ws, on_step)

        frames, told, stated = run(scenario)
        print(f"told {told}, {sum(f['type'] == 'token' for f in frames)} steps, last {frames[-1]['type']}, "
              f"whole again {stated - cut_at[0]:.1f} s after the cut began ({cut_s} s)")
        assert told == ["catching_up"], told  # behind, in words, and never called lost
        assert [f["seq"] for f in frames if f["type"] == "token"] == list(range(STEPS))
        assert frames[-1]["type"] == "done"
        assert stated > cut_at[0], "caught up by a `state` from the source after the cut, not left to guess"
    finally:
        link.close()
        stack.close()

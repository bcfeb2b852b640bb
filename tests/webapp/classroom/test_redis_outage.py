"""Redis away for 3 s in the middle of a live session's run (real daphne, worker and Redis): every screen ends
with every step, or with an error frame that says steps are missing, never with a silent hole; so does the
history the session keeps."""
from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from tests.fixtures.playground import SOURCE
from tests.fixtures.stack import Stack, classroom_socket, cookie_for, frames_until, run
from tests.fixtures.waiting import wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services, pytest.mark.slow]

STEPS = 60


async def screen(ws: Any, midway: asyncio.Event, timeout: float = 40) -> tuple[list[dict[str, Any]], int]:
    """What a screen ends with, following the run as classroom.js does: a step whose seq skips one asks for the state
    (`resync`) and the state replaces what the screen held. Returns its frames (up to `done` or an error) and how many
    times it asked."""
    frames: list[dict[str, Any]] = []
    asked = 0
    deadline = time.monotonic() + timeout
    while True:
        try:
            frame = json.loads(await asyncio.wait_for(ws.recv(), max(0.1, deadline - time.monotonic())))
        except TimeoutError:  # what the screen was left with
            return [*frames, {"type": "silence"}], asked
        kind = frame["type"]
        if kind == "state":
            frames = list(frame["frames"])
        elif kind in ("start", "token", "done", "error"):
            steps = [f for f in frames if f["type"] == "token"]
            if kind == "token" and frame["seq"] != len(steps):  # a hole: ask for the whole run
                await ws.send(json.dumps({"type": "resync"}))
                asked += 1
            frames.append(frame)
            if kind == "token" and frame["seq"] >= 10:
                midway.set()
        if frames and frames[-1]["type"] in ("done", "error") and _whole_or_told(frames):
            return frames, asked
        if frames and frames[-1]["type"] == "done":  # done, but a step is missing: ask once more
            await ws.send(json.dumps({"type": "resync"}))
            asked += 1
            frames = frames[:-1]


def _whole_or_told(frames: list[dict[str, Any]]) -> bool:
    return frames[-1]["type"] == "error" or [f["seq"] for f in frames if f["type"] == "token"] == list(range(STEPS))


def test_a_redis_outage_mid_run_leaves_no_screen_and_no_history_with_a_silent_hole(
        tmp_path, session, instructor, make_student):
    stack = Stack(tmp_path)
    try:
        web = stack.web()
        stack.worker()
        cookies = [cookie_for(instructor), cookie_for(make_student("ann")), cookie_for(make_student("bob"))]

        async def outage() -> None:
            assert stack.redis.proc is not None
            stack.redis.proc.kill()  # gone at once, as a crashed or restarted Redis is
            await asyncio.to_thread(stack.redis.proc.wait)
            await asyncio.sleep(3)  # absence: the outage itself
            await asyncio.to_thread(stack.redis.start)

        async def scenario() -> list[tuple[list[dict[str, Any]], int]]:
            async with classroom_socket(web, session.code, cookies[0]) as console, \
                    classroom_socket(web, session.code, cookies[1]) as ann, \
                    classroom_socket(web, session.code, cookies[2]) as bob:
                for ws in (console, ann, bob):
                    await frames_until(ws, "session")
                await console.send(json.dumps({"type": "run", "source": SOURCE, "pace_ms": 100,
                                               "min_len": STEPS, "max_len": STEPS}))
                midway = asyncio.Event()
                screens = [asyncio.ensure_future(screen(ws, midway)) for ws in (console, ann, bob)]
                await asyncio.wait_for(midway.wait(), 30)  # ten steps in
                await outage()
                return await asyncio.gather(*screens)

        for frames, asked in run(scenario):
            last = frames[-1]
            seqs = [f["seq"] for f in frames if f["type"] == "token"]
            print(f"{len(seqs)} steps, ended {last['type']} {last.get('code', '')}, asked {asked} times")
            if last["type"] == "done":
                assert seqs == list(range(STEPS))
            else:  # the screen is told in words, never left with a hole and no word
                assert last["type"] == "error" and last["code"] in ("steps_lost", "worker_lost"), (last, seqs)
        # the web process keeps the transcript just after `done`
        kept = wait_until(lambda: session.transcripts.filter(ended_at__isnull=False).first(), "the run kept", timeout=10).frames
        seqs = [f["seq"] for f in kept if f["type"] == "token"]
        assert seqs == list(range(STEPS)) or kept[-1]["type"] == "error", seqs
        assert kept[-1]["type"] in ("done", "error")
    finally:
        stack.close()

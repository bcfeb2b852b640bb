"""A live session's run whose worker dies mid-decode ends in words on every screen (real daphne, worker, Redis)."""
from __future__ import annotations

import asyncio
import json
import signal
import time
from typing import Any

import pytest
from django.conf import settings

from tests.fixtures.playground import SOURCE
from tests.fixtures.stack import Stack, classroom_socket, cookie_for, frames_until, run

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services, pytest.mark.slow]


async def until_error(ws: Any, timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        frame = json.loads(await asyncio.wait_for(ws.recv(), max(0.1, deadline - time.monotonic())))
        if frame["type"] in ("error", "done"):
            return frame


def test_a_worker_killed_mid_run_ends_it_with_worker_lost_for_the_console_and_the_students(
        tmp_path, session, instructor, make_student):
    stack = Stack(tmp_path)
    try:
        web = stack.web()
        worker = stack.worker()
        console_cookie, student_cookie = cookie_for(instructor), cookie_for(make_student("follower"))

        async def scenario() -> tuple[dict[str, Any], dict[str, Any], float]:
            async with classroom_socket(web, session.code, console_cookie) as console, \
                    classroom_socket(web, session.code, student_cookie) as student:
                await frames_until(console, "session")
                await frames_until(student, "session")
                await console.send(json.dumps({"type": "run", "source": SOURCE, "pace_ms": 200,
                                               "min_len": 60, "max_len": 60}))
                await frames_until(student, "token")  # the worker is mid-decode
                worker.stop(signal.SIGKILL)
                killed_at = time.monotonic()
                seen, told = await asyncio.gather(until_error(student), until_error(console))
                return seen, told, time.monotonic() - killed_at

        seen, told, waited = run(scenario)
        print(f"worker_lost {waited:.1f} s after the kill")
        for frame in (seen, told):
            assert (frame["type"], frame["code"]) == ("error", "worker_lost"), frame
            assert "run it again" in frame["message"]
        assert waited <= settings.PLAYGROUND_WORKER_LOST_S + 3
        session.refresh_from_db()
        assert session.state["running"] is False  # the console may run again at once
    finally:
        stack.close()

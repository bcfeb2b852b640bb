"""Two daphne processes on one Redis, participants on both, one decode: every participant gets every frame in order."""
from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.test import Client
from websockets.asyncio.client import ClientConnection, connect

from tests.fixtures.services import WebProcess, start_web, stop_web
from tests.webapp.classroom.conftest import SOURCE

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services, pytest.mark.slow]

STUDENTS_PER_PROCESS = 3
STEPS = 12


@pytest.fixture
def webs(tmp_path) -> Iterator[list[WebProcess]]:
    started = [start_web(tmp_path / f"daphne-{i}.log") for i in range(2)]
    yield started
    for web in started:
        stop_web(web)


def cookie_for(user: Any) -> str:
    client = Client()
    client.force_login(user, backend="django.contrib.auth.backends.ModelBackend")
    return f"sessionid={client.cookies['sessionid'].value}"


def socket(web: WebProcess, code: str, cookie: str) -> Any:
    return connect(f"{web.url.replace('http://', 'ws://')}/ws/classroom/{code}/", origin=web.url,
                   additional_headers={"Cookie": cookie}, open_timeout=10, close_timeout=5)


async def until(ws: ClientConnection, kind: str, timeout: float = 30) -> list[dict[str, Any]]:
    """Every frame up to and including the first of this type."""
    frames: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while not frames or frames[-1]["type"] != kind:
        frames.append(json.loads(await asyncio.wait_for(ws.recv(), max(0.1, deadline - time.monotonic()))))
        assert frames[-1]["type"] != "error", frames[-1]
    return frames


def test_participants_on_two_web_processes_follow_one_decode_and_their_answers_all_count(
        worker, webs, session, instructor, make_student):
    console_cookie = cookie_for(instructor)
    students = [(webs[i % 2], cookie_for(make_student(f"s{i}"))) for i in range(2 * STUDENTS_PER_PROCESS)]

    async def scenario() -> tuple[list[list[dict[str, Any]]], list[dict[str, Any]]]:
        async with socket(webs[0], session.code, console_cookie) as console:
            await until(console, "session")
            seats = [await socket(web, session.code, cookie).__aenter__() for web, cookie in students]
            try:
                for ws in seats:
                    await until(ws, "session")
                await console.send(json.dumps({"type": "run", "source": SOURCE, "min_len": STEPS,
                                               "max_len": STEPS}))
                streams = await asyncio.gather(*(until(ws, "done") for ws in seats))
                await console.send(json.dumps({"type": "question", "kind": "choice", "prompt": "Which?",
                                               "options": ["a", "b"]}))
                questions = await asyncio.gather(*(until(ws, "question") for ws in seats))
                for i, ws in enumerate(seats):
                    await ws.send(json.dumps({"type": "answer", "question": questions[i][-1]["id"],
                                              "choice": "ab"[i % 2]}))
                counts = []
                while not counts or counts[-1]["total"] < len(seats):
                    counts.append((await until(console, "answers"))[-1])
                return streams, counts
            finally:
                for ws in seats:
                    await ws.__aexit__(None, None, None)

    streams, counts = async_to_sync(scenario)()
    decoded = [[(f["type"], f.get("seq")) for f in frames if f["type"] in ("start", "token", "done")]
               for frames in streams]
    expected = [("start", None), *[("token", seq) for seq in range(STEPS)], ("done", None)]
    assert all(stream == expected for stream in decoded), decoded
    texts = {json.dumps([f for f in frames if f["type"] == "token"]) for frames in streams}
    assert len(texts) == 1  # the very same frames everywhere
    assert counts[-1]["counts"] == {"a": STUDENTS_PER_PROCESS, "b": STUDENTS_PER_PROCESS}

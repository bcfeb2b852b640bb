"""Two daphne processes on one Redis, participants on both, one decode: every participant gets every frame in order."""
from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import async_to_sync

from tests.fixtures.playground import SOURCE
from tests.fixtures.services import WebProcess, start_web, stop_web
from tests.fixtures.stack import classroom_socket, cookie_for, frames_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services, pytest.mark.slow]

STUDENTS_PER_PROCESS = 3
STEPS = 12


@pytest.fixture
def webs(tmp_path) -> Iterator[list[WebProcess]]:
    started = [start_web(tmp_path / f"daphne-{i}.log") for i in range(2)]
    yield started
    for web in started:
        stop_web(web)


def test_participants_on_two_web_processes_follow_one_decode_and_their_answers_all_count(
        worker, webs, session, instructor, make_student):
    console_cookie = cookie_for(instructor)
    students = [(webs[i % 2], cookie_for(make_student(f"s{i}"))) for i in range(2 * STUDENTS_PER_PROCESS)]

    async def scenario() -> tuple[list[list[dict[str, Any]]], list[dict[str, Any]]]:
        async with classroom_socket(webs[0], session.code, console_cookie) as console:
            await frames_until(console, "session")
            seats = [await classroom_socket(web, session.code, cookie).__aenter__() for web, cookie in students]
            try:
                for ws in seats:
                    await frames_until(ws, "session")
                await console.send(json.dumps({"type": "run", "source": SOURCE, "min_len": STEPS,
                                               "max_len": STEPS}))
                streams = await asyncio.gather(*(frames_until(ws, "done") for ws in seats))
                await console.send(json.dumps({"type": "question", "kind": "choice", "prompt": "Which?",
                                               "options": ["a", "b"]}))
                questions = await asyncio.gather(*(frames_until(ws, "question") for ws in seats))
                for i, ws in enumerate(seats):
                    await ws.send(json.dumps({"type": "answer", "question": questions[i][-1]["id"],
                                              "choice": "ab"[i % 2]}))
                counts = []
                while not counts or counts[-1]["total"] < len(seats):
                    counts.append((await frames_until(console, "answers"))[-1])
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

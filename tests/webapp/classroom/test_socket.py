"""`/ws/classroom/<code>/` against a real Celery worker and a real Redis: broadcast, questions, late joiners."""
from __future__ import annotations

import pytest
from channels.db import database_sync_to_async as db

from tests.webapp.classroom.conftest import SOURCE, collect, seat

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services, pytest.mark.slow]

RUN = {"type": "run", "source": SOURCE, "min_len": 6, "max_len": 6}


def tokens(frames):
    return [f for f in frames if f["type"] == "token"]


async def test_a_run_reaches_every_participant_in_order(worker, session, instructor, make_student):
    console, first = await seat(session, instructor)
    assert first["role"] == "console"
    a, b = await db(make_student)("ann"), await db(make_student)("bob")
    ws_a, snap = await seat(session, a)
    assert snap["role"] == "student" and "scores" not in snap
    ws_b, _ = await seat(session, b)
    await console.send_json_to({"type": "run", "source": SOURCE, "max_len": 6})
    seen = []
    for ws in (console, ws_a, ws_b):
        frames = [f for f in await collect(ws) if f["type"] in ("start", "token", "done")]
        seen.append(frames)
        assert frames[0]["type"] == "start" and frames[-1]["type"] == "done"
        assert [f["seq"] for f in tokens(frames)] == list(range(len(tokens(frames))))
    assert seen[0] == seen[1] == seen[2]
    for ws in (console, ws_a, ws_b):
        await ws.disconnect()

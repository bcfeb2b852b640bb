"""The classroom socket's edges: numbers past any range, frames after a close, an instructor who lost the role."""
from __future__ import annotations

import logging

import pytest

from tests.fixtures.classroom import seat, until
from tests.fixtures.sockets import socket_for

pytestmark = [pytest.mark.django_db(transaction=True)]

HUGE = 10**400


async def closed_with(ws) -> int:
    """The close code, past the frames (presence, ...) that came before it."""
    while (message := await ws.receive_output(timeout=5))["type"] != "websocket.close":
        pass
    return message["code"]


async def test_a_401_digit_temperature_in_a_run_is_bad_params_and_the_console_stays_open(session, instructor):
    console, _ = await seat(session, instructor)
    for name in ("temperature", "top_p"):
        await console.send_to(text_data=f'{{"type": "run", "source": "3 h 9", "strategy": "sample", "{name}": {HUGE}}}')
        refused = await until(console, "error", code="bad_params")
        assert name in refused["message"] and len(refused["message"]) < 200
    await console.send_to(text_data="{not json")
    assert (await until(console, "error"))["code"] == "bad_json"  # still open, still answering
    await console.disconnect()


@pytest.mark.parametrize("frame", ['{"type": "answer", "question": 1, "choice": "a"}', '{"type": "resync"}',
                                   '{"type": "run", "source": "x"}', "{not json"])
async def test_a_frame_right_after_a_4404_close_is_dropped_without_a_traceback(session, student, frame, caplog):
    ws = await socket_for("/ws/classroom/ZZZZZZ9/", student)
    assert (await ws.connect())[0]
    assert (await until(ws, "error"))["code"] == "not_found"
    await ws.send_to(text_data=frame)  # on its way before the client saw the close
    assert await closed_with(ws) == 4404
    assert await ws.receive_nothing(timeout=0.3)  # nothing answers it, and nothing raised in the consumer
    await ws.disconnect()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_a_demoted_instructor_loses_the_console_everywhere_at_once(session, instructor, client_as):
    from asgiref.sync import sync_to_async
    from django.contrib.auth.models import Group

    console, first = await seat(session, instructor)
    assert first["role"] == "console"
    browser = await sync_to_async(client_as)(instructor)
    pages = (f"/classroom/{session.code}/console/", f"/classroom/{session.code}/history/answers.csv")
    assert [(await sync_to_async(browser.get)(page)).status_code for page in pages] == [200, 200]

    @sync_to_async
    def demote() -> None:
        instructor.groups.remove(Group.objects.get(name="instructors"))
        instructor.groups.add(Group.objects.get_or_create(name="students")[0])

    await demote()
    assert await closed_with(console) == 4401
    again, snapshot = await seat(session, instructor)  # the page's script reconnects
    assert snapshot["role"] == "student" and "scores" not in snapshot
    await again.send_json_to({"type": "run", "source": "3 h 9"})
    assert (await until(again, "error"))["code"] == "forbidden"
    assert [(await sync_to_async(browser.get)(page)).status_code for page in pages] == [403, 403]
    await again.disconnect()

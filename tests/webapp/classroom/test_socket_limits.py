"""The classroom socket's edges: numbers past any range, frames after a close, an instructor who lost the role."""
from __future__ import annotations

import logging

import pytest

from tests.fixtures.classroom import seat, until
from tests.fixtures.sockets import socket_for

pytestmark = [pytest.mark.django_db(transaction=True)]

HUGE = 10**400


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
    closed = await ws.receive_output(timeout=5)
    assert closed == {"type": "websocket.close", "code": 4404}
    assert await ws.receive_nothing(timeout=0.3)  # nothing answers it, and nothing raised in the consumer
    await ws.disconnect()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]

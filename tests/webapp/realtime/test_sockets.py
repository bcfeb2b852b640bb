"""The WebSocket base every consumer shares: sign-in, origin check, error frames that keep the socket open."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fixtures.sockets import socket_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services]


async def test_an_anonymous_socket_is_refused():
    ws = await socket_for("/ws/notify/")
    connected, _ = await ws.connect()
    assert not connected


async def test_a_foreign_origin_is_refused(student):
    ws = await socket_for("/ws/notify/", student, origin=(b"origin", b"http://evil.example"))
    connected, _ = await ws.connect()
    assert not connected


async def test_a_student_connects_and_pings(student):
    ws = await socket_for("/ws/notify/", student)
    connected, _ = await ws.connect()
    assert connected
    assert (await ws.receive_json_from()) == {"type": "hello", "user": "stu"}
    await ws.send_json_to({"type": "ping", "echo": "好"})
    assert (await ws.receive_json_from()) == {"type": "pong", "echo": "好"}
    await ws.disconnect()


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        ("not json", "bad_json"),
        ("[1, 2]", "bad_frame"),
        ('{"no": "type"}', "unknown_type"),
        ('{"type": "launch-missiles"}', "unknown_type"),
        ("x" * 70_000, "too_large"),
    ],
)
async def test_a_bad_frame_gets_an_error_and_the_socket_stays_open(student, frame, code):
    ws = await socket_for("/ws/notify/", student)
    await ws.connect()
    await ws.receive_json_from()
    await ws.send_to(text_data=frame)
    reply = await ws.receive_json_from()
    assert reply["type"] == "error" and reply["code"] == code and reply["message"]
    await ws.send_json_to({"type": "ping"})
    assert (await ws.receive_json_from())["type"] == "pong"
    await ws.disconnect()


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.one_of(st.text(min_size=1, max_size=300), st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False) | st.text(max_size=50),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
).map(json.dumps)))
def test_fuzzed_frames_never_close_the_socket(student, frame):
    from asgiref.sync import async_to_sync

    async def exchange() -> None:
        ws = await socket_for("/ws/notify/", student)
        await ws.connect()
        await ws.receive_json_from()
        await ws.send_to(text_data=frame)
        reply = await ws.receive_json_from()
        assert reply["type"] in {"error", "pong"}
        await ws.send_json_to({"type": "ping"})
        assert (await ws.receive_json_from())["type"] == "pong"
        await ws.disconnect()

    async_to_sync(exchange)()

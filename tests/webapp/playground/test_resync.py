"""A client that saw a gap in `seq` asks for the request's state and gets every frame the worker sent."""
from __future__ import annotations

import pytest

from tests.fixtures.playground import SOURCE, connected, receive, until_final

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services]


async def test_resync_of_a_running_request_gets_every_frame_sent_so_far(worker, tiny, student):
    ws = await connected(student)
    await ws.send_json_to({"type": "decode", "model": "tiny", "source": SOURCE, "step_mode": True,
                           "min_len": 20, "max_len": 20})
    start = await receive(ws)
    tokens = []
    for _ in range(3):
        await ws.send_json_to({"type": "step"})
        tokens.append(await receive(ws))
    await ws.send_json_to({"type": "resync", "request_id": start["request_id"]})
    state = await receive(ws)
    assert (state["type"], state["request_id"]) == ("state", start["request_id"])
    assert state["frames"] == [start, *tokens]
    await ws.send_json_to({"type": "cancel"})
    assert (await until_final(ws))[-1]["reason"] == "cancelled"
    await ws.disconnect()


async def test_resync_after_the_end_gets_the_whole_request_and_only_on_its_own_socket(worker, tiny, student):
    ws = await connected(student)
    await ws.send_json_to({"type": "decode", "model": "tiny", "source": SOURCE, "max_len": 6})
    frames = await until_final(ws)
    request_id = frames[0]["request_id"]
    await ws.send_json_to({"type": "resync", "request_id": request_id})
    state = await receive(ws)
    assert (state["type"], state["frames"]) == ("state", frames)

    other = await connected(student)  # another socket (another tab) may not read it
    await other.send_json_to({"type": "resync", "request_id": request_id})
    assert (await receive(other))["code"] == "not_running"
    await ws.disconnect()
    await other.disconnect()

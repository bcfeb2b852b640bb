"""The worker's frame sender: a turn's frames reach each web process's relay in one message, in order; an ended
request's state is kept for a late resync."""
from __future__ import annotations

import asyncio
import json

import pytest
from channels.layers import InMemoryChannelLayer

from webapp.playground.worker import frames as frames_module
from webapp.playground.worker.batcher import Out
from webapp.playground.worker.loop import FrameSender


async def test_frames_for_one_web_process_go_as_one_message_per_turn_in_order() -> None:
    layer = InMemoryChannelLayer()
    relay_a, relay_b = await layer.new_channel(), await layer.new_channel()
    sender = FrameSender(layer)
    turn = [
        Out("a1", "r1", False, '{"seq": 0}', relay_a), Out("b1", "r2", False, '{"seq": 0}', relay_b),
        Out("a2", "r3", False, '{"seq": 0}', relay_a), Out("a1", "r1", True, '{"seq": 1}', relay_a),
    ]
    await sender.send(turn)
    to_a, to_b = await layer.receive(relay_a), await layer.receive(relay_b)
    assert to_a == {"type": "playground.frames", "frames": [["a1", "r1", False, '{"seq": 0}'], ["a2", "r3", False, '{"seq": 0}'],
                                                            ["a1", "r1", True, '{"seq": 1}']]}
    assert to_b["frames"] == [["b1", "r2", False, '{"seq": 0}']]


async def test_a_frame_without_a_relay_is_dropped_and_the_others_still_go(caplog: pytest.LogCaptureFixture) -> None:
    layer = InMemoryChannelLayer()
    relay_a, consumer = await layer.new_channel(), await layer.new_channel()
    await FrameSender(layer).send([Out(consumer, "lost", False, '{"seq": 0}'), Out("a1", "r1", False, '{"seq": 0}', relay_a)])
    assert (await layer.receive(relay_a))["frames"] == [["a1", "r1", False, '{"seq": 0}']]
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(layer.receive(consumer), timeout=0.2)
    assert "request lost has no relay" in caplog.text


async def test_a_request_that_ends_leaves_its_state_every_kept_frame_in_order_or_an_error_when_too_large(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    layer = InMemoryChannelLayer()
    relay = await layer.new_channel()
    sender = FrameSender(layer)
    await sender.send([Out("a", "r1", False, '{"type":"start"}', relay, kept=True),
                       Out("a", "r1", False, '{"type":"token","seq":0}', relay, kept=True)])
    await sender.send([Out("a", "r1", True, '{"type":"done"}', relay, kept=True)])
    state = json.loads(sender.take_finished()["r1"])
    assert state == {"type": "state", "request_id": "r1",
                     "frames": [{"type": "start"}, {"type": "token", "seq": 0}, {"type": "done"}]}

    monkeypatch.setattr(frames_module, "MAX_FRAME_BYTES", 40)  # the same three frames no longer fit one message
    for out in [Out("a", "r2", False, '{"type":"start"}', relay, kept=True),
                Out("a", "r2", False, '{"type":"token","seq":0}', relay, kept=True),
                Out("a", "r2", True, '{"type":"done"}', relay, kept=True)]:
        await sender.send([out])
    error = json.loads(sender.take_finished()["r2"])
    assert (error["type"], error["code"], error["request_id"]) == ("error", "frame_too_large", "r2")

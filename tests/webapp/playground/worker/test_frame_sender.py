"""The worker's frame sender: a turn's frames reach each web process's relay in one message, in order."""
from __future__ import annotations

import asyncio

import pytest
from channels.layers import InMemoryChannelLayer

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

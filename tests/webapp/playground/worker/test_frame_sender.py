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


class _SlowLayer(InMemoryChannelLayer):
    """A channel layer whose every send takes a round trip to a Redis far away (20 ms)."""

    async def send(self, channel: str, message: dict) -> None:
        await asyncio.sleep(0.02)
        await super().send(channel, message)


async def test_turns_that_queue_while_a_send_crosses_to_redis_go_together_in_order(monkeypatch) -> None:
    """A worker whose steps are quicker than its round trip to Redis: one message per send, not one per step (each
    step would otherwise wait a round trip), and every frame in the order its turns made them; a resync's state
    goes after the frames queued before it."""
    from webapp.playground.worker import loop
    from webapp.playground.worker.batcher import Tick

    layer = _SlowLayer()
    relay = await layer.new_channel()
    monkeypatch.setattr(loop, "get_channel_layer", lambda: layer)
    outbox: asyncio.Queue = asyncio.Queue()
    sending = asyncio.ensure_future(loop.send_forever(outbox, client=None))
    token = '{{"type":"token","seq":{}}}'
    outbox.put_nowait(Tick(out=[Out("a", "r1", False, '{"type":"start"}', relay, kept=True)]))
    await asyncio.sleep(0)  # the first send is on its way
    for seq in range(10):  # ten steps made while it crosses
        outbox.put_nowait(Tick(out=[Out("a", "r1", False, token.format(seq), relay, kept=True)]))
    outbox.put_nowait({"r1"})  # the client saw a gap: its state, after the steps before it
    outbox.put_nowait(None)
    await asyncio.wait_for(sending, 5)
    messages = []
    while True:
        try:
            messages.append(await asyncio.wait_for(layer.receive(relay), 0.1))
        except TimeoutError:
            break
    texts = [text for message in messages for _reply, _rid, _final, text in message["frames"]]
    assert len(messages) == 3, [len(m["frames"]) for m in messages]  # the start; the ten steps; the state
    assert texts[:11] == ['{"type":"start"}', *(token.format(seq) for seq in range(10))]
    assert [f["type"] for f in json.loads(texts[11])["frames"]] == ["start", *["token"] * 10]

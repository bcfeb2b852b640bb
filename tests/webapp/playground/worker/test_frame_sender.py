"""The worker's frame sender: every frame reaches its consumer's channel or group, each request's in order."""
from __future__ import annotations

import json

from channels.layers import InMemoryChannelLayer

from webapp.playground.worker.batcher import Out
from webapp.playground.worker.loop import FrameSender


def out(reply: str, request_id: str, seq: int, final: bool = False) -> Out:
    return Out(reply, request_id, final, json.dumps({"type": "token", "request_id": request_id, "seq": seq}))


async def test_a_layer_without_pub_sub_gets_every_frame_through_its_api_in_order() -> None:
    layer = InMemoryChannelLayer()
    mine, theirs = await layer.new_channel(), await layer.new_channel()
    await layer.group_add("class-7", theirs)
    sender = FrameSender(layer)
    await sender.send([out(mine, "a", 0), out("group:class-7", "b", 0), out(mine, "a", 1, final=True),
                       out("group:class-7", "b", 1)])
    got_mine = [await layer.receive(mine) for _ in range(2)]
    got_theirs = [await layer.receive(theirs) for _ in range(2)]
    assert [json.loads(m["text"])["seq"] for m in got_mine] == [0, 1]
    assert [m["final"] for m in got_mine] == [False, True]
    assert [json.loads(m["text"])["seq"] for m in got_theirs] == [0, 1]
    assert {m["type"] for m in got_mine + got_theirs} == {"playground.frame"}
    await sender.close()


async def test_frames_for_one_web_process_go_as_one_message_per_turn_in_order() -> None:
    layer = InMemoryChannelLayer()
    relay_a, relay_b, group_member = await layer.new_channel(), await layer.new_channel(), await layer.new_channel()
    await layer.group_add("class-7", group_member)
    sender = FrameSender(layer)
    turn = [
        Out("a1", "r1", False, '{"seq": 0}', relay_a), Out("b1", "r2", False, '{"seq": 0}', relay_b),
        Out("a2", "r3", False, '{"seq": 0}', relay_a), Out("a1", "r1", True, '{"seq": 1}', relay_a),
        Out("group:class-7", "r4", False, '{"seq": 0}', relay_a),  # a group is reached through the layer
    ]
    await sender.send(turn)
    to_a, to_b = await layer.receive(relay_a), await layer.receive(relay_b)
    assert to_a == {"type": "playground.frames", "frames": [["a1", "r1", False, '{"seq": 0}'], ["a2", "r3", False, '{"seq": 0}'],
                                                            ["a1", "r1", True, '{"seq": 1}']]}
    assert to_b["frames"] == [["b1", "r2", False, '{"seq": 0}']]
    assert (await layer.receive(group_member))["request_id"] == "r4"
    await sender.close()

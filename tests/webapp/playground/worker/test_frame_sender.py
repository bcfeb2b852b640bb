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

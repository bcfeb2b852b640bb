"""The web process's relay: a worker turn's frames for this process's sockets arrive in one message."""
from __future__ import annotations

import json
from typing import Any

from channels.layers import get_channel_layer

from tests.fixtures.waiting import wait_until_async
from webapp.playground.relay import relay


class Socket:
    """Receives frames the way DecodeSocket.playground_frame does, and keeps them."""

    def __init__(self, channel_name: str, fail: bool = False) -> None:
        self.channel_name, self.fail = channel_name, fail
        self.got: list[dict[str, Any]] = []

    async def playground_frame(self, message: dict[str, Any]) -> None:
        if self.fail:
            raise ConnectionError("the socket went away mid-send")
        self.got.append(message)


def frame(reply: str, request_id: str, seq: int, final: bool = False) -> list[Any]:
    return [reply, request_id, final, json.dumps({"type": "token", "seq": seq})]


async def test_each_socket_gets_its_own_frames_in_order_and_a_failing_one_or_a_bad_frame_stops_no_other(redis_server) -> None:
    hub = relay()
    alice, bob, broken = Socket("sock.alice"), Socket("sock.bob"), Socket("sock.broken", fail=True)
    channel = await hub.register(alice)
    assert await hub.register(bob) == channel == await hub.register(broken)  # one channel for the process
    layer = get_channel_layer()
    await layer.send(channel, {"type": "playground.frames", "frames": [
        frame("sock.alice", "a", 0), frame("sock.broken", "x", 0), ["not", "a frame"], frame("sock.bob", "b", 0),
        frame("sock.gone", "g", 0),  # a socket that has closed: dropped
        frame("sock.alice", "a", 1, final=True),
    ]})
    await wait_until_async(lambda: len(alice.got) == 2 and len(bob.got) == 1, "the frames arrived", timeout=5)
    assert [json.loads(m["text"])["seq"] for m in alice.got] == [0, 1]
    assert [m["final"] for m in alice.got] == [False, True]
    assert alice.got[0]["type"] == "playground.frame" and alice.got[0]["request_id"] == "a"
    assert bob.got[0]["request_id"] == "b"
    for socket in (alice, bob, broken):
        hub.unregister(socket)
    assert hub.channel is None  # the last socket gone, the relay and its channel are gone too

"""The live feed: progress throttled to the newest frame, every other frame sent, each group's in order."""
from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer

from webapp.realtime.feed import Feed, group_frame, publish

pytestmark = [pytest.mark.services]


async def received(channel: str, count: int) -> list[dict]:
    layer = get_channel_layer()
    return [(await asyncio.wait_for(layer.receive(channel), 10))["frame"] for _ in range(count)]


async def test_a_watcher_gets_the_first_and_the_newest_step_and_every_other_frame_in_order():
    layer = get_channel_layer()
    watcher, other = await layer.new_channel(), await layer.new_channel()
    await layer.group_add("feed-job", watcher)
    await layer.group_add("feed-owner", other)
    feed = Feed(name="test", interval=60)  # no second step frame may pass on its own during the test
    for step in range(5):
        feed.latest("feed-job", group_frame({"type": "step", "step": step}))
    feed.send("feed-owner", group_frame({"type": "badge"}))  # another group's held frame is not its business
    feed.send("feed-job", group_frame({"type": "log"}))  # the held step 4 goes first
    feed.latest("feed-job", group_frame({"type": "step", "step": 5}))
    await sync_to_async(feed.close)()  # sends the held step 5
    assert await received(watcher, 4) == [{"type": "step", "step": 0}, {"type": "step", "step": 4},
                                          {"type": "log"}, {"type": "step", "step": 5}]
    assert await received(other, 1) == [{"type": "badge"}]


async def test_a_view_publishes_a_few_frames_at_once():
    layer = get_channel_layer()
    watcher = await layer.new_channel()
    await layer.group_add("feed-view", watcher)
    messages = [("feed-view", group_frame({"type": "status", "n": n})) for n in range(3)]
    await sync_to_async(publish)(messages)
    assert await received(watcher, 3) == [{"type": "status", "n": n} for n in range(3)]

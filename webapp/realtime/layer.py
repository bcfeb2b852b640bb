"""The channel layer: channels_redis' pub/sub layer, with a first subscribe after a quiet spell on a fresh connection.

A web process whose sockets have all closed is subscribed to nothing, and nobody reads its pub/sub connection. If
Redis restarts meanwhile, that connection is dead without anyone noticing. The next socket's first SUBSCRIBE is
written into it, and the next command fails "Connection lost". redis-py's retry then reconnects while the layer's
receive task reads the same connection: "read() called while another coroutine is already waiting", or the new
connection is closed under the retry. The socket is refused (4013). Here, a subscribe that finds no channel
subscribed first drops the connection nobody has been reading, so the subscribe goes out on a fresh one. A busy
process (something subscribed) keeps its connection, and its receive task notices a dead one itself.

The re-typed pieces are pinned in tests/test_framework_internals.py.
"""
from __future__ import annotations

import asyncio
from typing import Any

from channels_redis.pubsub import RedisPubSubChannelLayer, RedisPubSubLoopLayer, RedisSingleShardConnection
from channels_redis.utils import _wrap_close


class FreshAfterQuietShard(RedisSingleShardConnection):
    async def subscribe(self, channel: str) -> None:
        async with self._lock:
            if channel not in self._subscribed_to:
                self._ensure_redis()
                self._ensure_receiver()
                if not self._subscribed_to and self._pubsub.connection is not None:
                    await self._pubsub.aclose()  # unread since the last unsubscribe: it may be dead
                await self._pubsub.subscribe(channel)
                self._subscribed_to.add(channel)


class PubSubLoopLayer(RedisPubSubLoopLayer):
    def __init__(self, hosts: Any = None, **kwargs: Any) -> None:
        super().__init__(hosts, **kwargs)
        self._shards = [FreshAfterQuietShard(shard.host, self) for shard in self._shards]


class PubSubChannelLayer(RedisPubSubChannelLayer):
    """settings.CHANNEL_LAYERS' backend (webapp.realtime.layer.PubSubChannelLayer)."""

    def _get_layer(self) -> PubSubLoopLayer:
        loop = asyncio.get_running_loop()
        try:
            return self._layers[loop]
        except KeyError:
            layer = self._layers[loop] = PubSubLoopLayer(*self._args, **self._kwargs, channel_layer=self)
            _wrap_close(self, loop)
            return layer

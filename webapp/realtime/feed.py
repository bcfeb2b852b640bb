"""Live frames from synchronous code (a worker's run, a view) to channel-layer groups.

A run must never wait on Redis, so a `Feed` puts frames in a queue that one thread drains
through one event loop: the pub/sub layer wants one loop around the whole send loop (a loop
per frame, as `async_to_sync` makes, costs 5-8 ms). Each wake-up sends everything queued
since the last one. `latest()` frames are throttled per group: at most one per `interval`,
the newest held back is sent by the next `flush()`, `send()` or `close()`. Sockets that
watch a group are `webapp.realtime.sockets.GroupSocket`s; `group_frame()` is their message.
Decoding frames take their own faster path (webapp/playground/relay.py).
"""
from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections.abc import Iterable
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

log = logging.getLogger(__name__)

Message = tuple[str, dict[str, Any]]  # (group, channel-layer message)


def user_group(user_id: int) -> str:
    """The channel-layer group that reaches every open tab of one user."""
    return f"user-{user_id}"


def group_frame(frame: dict[str, Any]) -> dict[str, Any]:
    """The group message that every GroupSocket in the group forwards to its browser as `frame`."""
    return {"type": "group.frame", "frame": frame}


async def _publish(layer: Any, messages: Iterable[Message]) -> None:
    for group, message in messages:
        try:
            await layer.group_send(group, message)
        except Exception:  # Redis away for a moment: the pages catch up from the database
            log.warning("live frame to %s lost", group, exc_info=True)


def publish(messages: Iterable[Message]) -> None:
    """Send a few messages now, in order, from synchronous code outside a run (one event loop for all)."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(_publish)(layer, list(messages))
    except Exception:  # a lost frame must not fail the action that sent it
        log.warning("could not send live frames", exc_info=True)


class Feed:
    """A background sender for one run: `latest` (throttled per group), `send` (always), `close`."""

    def __init__(self, *, name: str, interval: float = 0.1) -> None:
        self.interval = interval
        self._queue: queue.SimpleQueue[Message | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._held: dict[str, dict[str, Any]] = {}  # group -> the newest throttled message not yet sent
        self._last: dict[str, float] = {}  # group -> when its last throttled message went
        self._thread = threading.Thread(target=self._run, name=f"feed-{name}", daemon=True)
        self._thread.start()

    def latest(self, group: str, message: dict[str, Any], *, force: bool = False) -> None:
        """Queue a progress message unless the group had one less than `interval` ago (then hold it back)."""
        now = time.monotonic()
        with self._lock:
            if force or now - self._last.get(group, -self.interval) >= self.interval:
                self._last[group] = now
                self._held.pop(group, None)
                self._queue.put((group, message))
            else:
                self._held[group] = message

    def send(self, group: str, message: dict[str, Any]) -> None:
        """Queue a message that is never throttled; the group's held-back one goes first."""
        self._flush(group)
        self._queue.put((group, message))

    def flush(self) -> None:
        """Send every message held back by the throttle."""
        for group in list(self._held):
            self._flush(group)

    def close(self, timeout: float = 10.0) -> None:
        """Send what is queued and held, then stop the thread."""
        self.flush()
        self._queue.put(None)
        self._thread.join(timeout)

    def _flush(self, group: str) -> None:
        with self._lock:
            message = self._held.pop(group, None)
            if message is not None:
                self._last[group] = time.monotonic()
                self._queue.put((group, message))

    def _run(self) -> None:
        asyncio.run(self._pump())

    async def _pump(self) -> None:
        layer = get_channel_layer()
        open_ = True
        while open_:
            batch = [await asyncio.to_thread(self._queue.get)]
            while True:  # everything queued meanwhile goes out in this same turn
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            open_ = None not in batch
            if layer is not None:
                await _publish(layer, [item for item in batch if item is not None])

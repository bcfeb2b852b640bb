"""Worker frames for every socket of one web process, one channel-layer message per worker step.

Every event loop of the web process keeps one channel of its own while it has playground
sockets (its `Relay`); a job names it (`relay`), the worker sends all of a step's frames for
this process in one message on it, and the relay hands each frame to its socket, in order, a
step at a time (docs/benchmarks.md measures why: a message and a dispatch per frame cost the
web process more than the worker spends making the frame). A frame for a socket that has gone
is dropped.

The relay also keeps each request's last sign of life: any frame of it, or the beat its worker
sends every second for each request it holds (`alive`), for the event loop's one watch over decodes in flight
(webapp/playground/watchdog.py), which ends a request no worker took with `no_worker` and one whose worker went
silent with `worker_lost`.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Protocol

from channels.layers import get_channel_layer

from webapp.playground.watchdog import Watched, watchdog
from webapp.realtime.loops import per_loop

log = logging.getLogger(__name__)


GROUP_TARGET = "group:"  # a relay target that names a channel-layer group (a live session's), not a channel


def group_target(group: str) -> str:
    """The relay a job names when its frames go to a group: each web process subscribed to it gets them once."""
    return GROUP_TARGET + group


async def relay_send(layer: Any, target: str, message: dict[str, Any]) -> None:
    """Send a worker's message to a job's relay: a web process's channel, or a group (`group_target`).

    On the pub/sub layer both are one PUBLISH; a group's reaches every web process subscribed to it.
    """
    if target.startswith(GROUP_TARGET):
        await layer.group_send(target[len(GROUP_TARGET):], message)
    else:
        await layer.send(target, message)


def frame_message(request_id: str, final: bool, text: str) -> dict[str, Any]:
    """One worker frame as a consumer's `playground.frame` handler takes it."""
    return {"type": "playground.frame", "request_id": request_id, "final": final, "text": text}


def frames_message(frames: list[tuple[str, str, bool, str]]) -> dict[str, Any]:
    """A step's frames for one web process, each (consumer channel, request id, final, JSON text), in order."""
    return {"type": "playground.frames", "frames": [list(frame) for frame in frames]}


def beat_message(request_ids: list[str]) -> dict[str, Any]:
    """A worker's sign of life for the requests it holds, when it has no frame to send for them."""
    return {"type": "playground.frames", "frames": [], "alive": request_ids}


class FrameReceiver(Protocol):
    channel_name: str

    async def playground_frame(self, message: dict[str, Any]) -> None: ...

    async def request_lost(self, request_id: str, code: str) -> None: ...

    async def request_away(self, request_id: str, cut_off: bool) -> None: ...


class Relay:
    """One per event loop: registered sockets by channel name, and the task that feeds them."""

    def __init__(self) -> None:
        self.channel: str | None = None
        self._sockets: dict[str, FrameReceiver] = {}
        self._task: asyncio.Task[None] | None = None
        self._heard: dict[str, float | None] = {}  # request id -> when its worker last spoke (None: not yet)

    def watch(self, socket: FrameReceiver, request_id: str) -> None:
        """Expect this request's frames; tell the socket when they stop coming (request_lost), or when this process
        cannot reach Redis to ask why (request_away), through the loop's watch over decodes in flight, while the
        socket is here."""
        self._heard[request_id] = None
        channel = socket.channel_name

        async def lost(code: str) -> None:
            await socket.request_lost(request_id, code)  # first: one that fails (Redis away) is watched again
            self._heard.pop(request_id, None)

        async def away(cut_off: bool) -> None:
            await socket.request_away(request_id, cut_off)

        watchdog().watch(("playground", request_id), Watched(
            request_id=request_id, heard=lambda: self._heard.get(request_id), lost=lost, away=away,
            over=lambda: channel not in self._sockets or request_id not in self._heard))

    def forget(self, request_id: str) -> None:
        """The request ended (or was refused): nothing more to expect."""
        self._heard.pop(request_id, None)
        watchdog().forget(("playground", request_id))

    def _seen(self, request_id: str) -> None:
        if request_id in self._heard:
            self._heard[request_id] = time.monotonic()

    async def register(self, socket: FrameReceiver) -> str:
        """Route this socket's worker frames through the relay; returns the channel jobs name."""
        self._sockets[socket.channel_name] = socket
        if self._task is None or self._task.done():
            layer = get_channel_layer()
            self.channel = await layer.new_channel(prefix="playground.relay.")
            self._task = asyncio.create_task(self._pump(layer, self.channel))
        assert self.channel is not None
        return self.channel

    def unregister(self, socket: FrameReceiver) -> None:
        """The socket has gone; the relay stops with the last one (its channel goes with it)."""
        self._sockets.pop(socket.channel_name, None)
        if not self._sockets and self._task is not None:
            self._task.cancel()
            self._task, self.channel = None, None

    async def _pump(self, layer: Any, channel: str) -> None:
        while True:
            try:
                message = await layer.receive(channel)
                frames = list(message.get("frames", ()))
                for request_id in message.get("alive", ()):
                    self._seen(request_id)
            except asyncio.CancelledError:
                raise
            except Exception:  # keep relaying: every socket of this process depends on this loop
                log.exception("playground relay could not read its channel")
                await asyncio.sleep(0.1)
                continue
            for item in frames:
                try:
                    reply, request_id, final, text = item
                    if final:
                        self.forget(request_id)
                    else:
                        self._seen(request_id)
                    socket = self._sockets.get(reply)
                    if socket is not None:
                        await socket.playground_frame(frame_message(request_id, final, text))
                except Exception:  # one bad frame or one socket's failure must not stop the others
                    log.exception("playground relay could not deliver a frame")
            # One step at a time: let the server write this step's frames before taking the next
            # message (a backlog of steps taken in one go reached each client as one burst).
            await asyncio.sleep(0)


relay = per_loop(Relay)  # the running event loop's relay

"""`/ws/decode/`: a student's decode requests go to the worker; the worker's frames come back here."""
from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async

from webapp.core.sockets import JsonSocket
from webapp.playground.protocol import ProtocolError, is_tag, parse_target
from webapp.playground.services import decode_cancel, decode_step, decode_submit


class DecodeConsumer(JsonSocket):
    """Frames: decode, cancel, step. Worker frames arrive on this consumer's own channel."""

    frame_types = ("decode", "cancel", "step")

    async def on_connect(self) -> None:
        self.running: dict[str, bool] = {}  # request id -> step mode, until its done/error frame

    async def disconnect(self, code: int) -> None:
        if getattr(self, "running", None):
            await sync_to_async(decode_cancel, thread_sensitive=False)(
                user_id=self.scope["user"].id, request_ids=list(self.running)
            )
            self.running.clear()

    async def on_decode(self, frame: dict[str, Any]) -> None:
        # The channel layer delivers only to existing subscribers: this consumer's channel was
        # subscribed when it connected, so the worker's first frame cannot be lost.
        try:
            # Not thread-sensitive: a class sending 30 requests at once is checked in parallel threads,
            # not queued behind one another on Channels' single database thread.
            job = await database_sync_to_async(decode_submit, thread_sensitive=False)(
                user=self.scope["user"], frame=frame, reply_channel=self.channel_name
            )
        except ProtocolError as error:
            tag = frame.get("tag")
            await self.send_error(error.code, error.message, **({"tag": tag} if is_tag(tag) else {}))
            return
        self.running[job["request_id"]] = job["step_mode"]

    async def on_cancel(self, frame: dict[str, Any]) -> None:
        targets = await self._targets(frame, step_only=False)
        if targets:
            await sync_to_async(decode_cancel, thread_sensitive=False)(
                user_id=self.scope["user"].id, request_ids=targets
            )

    async def on_step(self, frame: dict[str, Any]) -> None:
        targets = await self._targets(frame, step_only=True)
        if targets:
            await sync_to_async(decode_step, thread_sensitive=False)(request_ids=targets)

    async def _targets(self, frame: dict[str, Any], *, step_only: bool) -> list[str]:
        """The running requests a cancel/step frame is about; an error frame when there are none."""
        try:
            wanted = parse_target(frame)
        except ProtocolError as error:
            await self.send_error(error.code, error.message)
            return []
        candidates = [rid for rid, stepping in self.running.items() if stepping or not step_only]
        targets = [rid for rid in candidates if wanted in (None, rid)]
        if not targets:
            code, what = ("not_stepping", "no request in step mode") if step_only else ("not_running", "no request")
            await self.send_error(code, f"{what} {'with that id ' if wanted else ''}is running on this socket")
        return targets

    async def dispatch(self, message: dict[str, Any]) -> None:
        # Channels closes stale database connections before every handler, through its one sync
        # thread. A worker frame never touches the database, and a client frame does so only inside
        # database_sync_to_async (which cleans up itself): skipping that hop took most of the web
        # process's cost per frame when a whole class decodes at once.
        if message["type"] == "playground.frame":
            await self.playground_frame(message)
        elif message["type"] == "websocket.receive":
            await self.websocket_receive(message)
        else:
            await super().dispatch(message)

    async def playground_frame(self, message: dict[str, Any]) -> None:
        """A frame from the decoding loop, already JSON; the last one of a request frees its entry."""
        if message.get("final"):
            self.running.pop(message.get("request_id", ""), None)
        await self.send(text_data=message["text"])

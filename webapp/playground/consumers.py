"""`/ws/decode/`: a student's decode requests go to the worker; the worker's frames come back here."""
from __future__ import annotations

import asyncio
import functools
import logging
from collections import deque
from collections.abc import Callable
from typing import Any

import orjson
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async

from webapp.playground.handoff import job_send
from webapp.playground.protocol import (
    LOST_MESSAGES,
    ProtocolError,
    catching_up_frame,
    is_tag,
    parse_target,
    parse_view,
)
from webapp.playground.relay import relay
from webapp.playground.services import (
    attention_view,
    decode_cancel,
    decode_request,
    decode_step,
    ended_attention,
    ended_state,
    model_for,
    new_job,
    published_model_cached,
    request_resync,
)
from webapp.playground.watchdog import WORKER_LOST
from webapp.realtime.sockets import JsonSocket

log = logging.getLogger(__name__)

class DecodeSocket(JsonSocket):
    """Frames: decode, cancel, step, resync, view. Worker frames arrive through the web process's relay."""

    frame_types = ("decode", "cancel", "step", "resync", "view")

    async def on_connect(self) -> None:
        self.running: dict[str, bool] = {}  # request id -> step mode, until its done/error frame
        self.tags: dict[str, dict[str, Any]] = {}  # request id -> its tag, to echo if the request is lost
        self.ended: deque[str] = deque(maxlen=16)  # this socket's last ended requests, which a client may resync
        self.relay_channel = await relay().register(self)  # the worker's frames for this process, per step

    async def disconnect(self, code: int) -> None:
        if getattr(self, "relay_channel", None):
            relay().unregister(self)
        if getattr(self, "running", None):
            await sync_to_async(decode_cancel, thread_sensitive=False)(
                user_id=self.scope["user"].id, request_ids=list(self.running)
            )
            self.running.clear()
            self.tags.clear()

    async def on_decode(self, frame: dict[str, Any]) -> None:
        # The channel layer delivers only to existing subscribers: this consumer's channel was
        # subscribed when it connected, so the worker's first frame cannot be lost.
        user = self.scope["user"]
        try:
            request = decode_request(frame)
            # A published model read in the last few seconds needs no database (and no thread hop).
            model = published_model_cached(request.model)
            if model is None:
                # Not thread-sensitive: a class sending 30 requests at once is checked in parallel threads,
                # not queued behind one another on Channels' single database thread.
                model = await database_sync_to_async(model_for, thread_sensitive=False)(user, request.model)
        except ProtocolError as error:
            await self.send_error(error.code, error.message, **_tag_of(frame))
            return
        job = new_job(user_id=user.id, reply_channel=self.channel_name, request=request, model=model,
                      relay=self.relay_channel)
        self.running[job["request_id"]] = job["step_mode"]
        self.tags[job["request_id"]] = _tag_of(frame)
        relay().watch(self, job["request_id"])
        refusal = await job_send(job)
        if refusal is not None:
            self._ended(job["request_id"])
            relay().forget(job["request_id"])
            await self.send_error(refusal.code, refusal.message, **_tag_of(frame))

    async def request_away(self, request_id: str, cut_off: bool) -> None:
        """This process cannot reach Redis (True) while the request is silent: the client is told it is behind,
        not that the request ended; once Redis answers again (False), a running request's worker is asked for its
        whole copy, and an ended one's kept copy is sent."""
        if request_id not in self.running:
            return
        if cut_off:
            await self.send(text_data=orjson.dumps(catching_up_frame(request_id)).decode())
        elif not await self._ended_meanwhile(request_id):
            await sync_to_async(request_resync, thread_sensitive=False)(request_id)

    async def _ended_meanwhile(self, request_id: str) -> bool:
        """Whether the request's worker ended it though this process did not hear the end (its link to Redis was
        cut meanwhile): the client then gets the worker's copy of it, as a `state` frame."""
        kept = await sync_to_async(ended_state, thread_sensitive=False)(request_id)
        if kept is None:
            return False
        relay().forget(request_id)
        self._ended(request_id)
        await self.send(text_data=kept)
        return True

    async def request_lost(self, request_id: str, code: str) -> None:
        """The relay heard nothing of this request for too long: tell the client, free its slot, stop its worker;
        one its worker ended meanwhile is not lost (_ended_meanwhile)."""
        if request_id not in self.running or (code == WORKER_LOST and await self._ended_meanwhile(request_id)):
            return
        tag = self._ended(request_id)
        message = LOST_MESSAGES[code]
        await self.send_error(code, message, request_id=request_id, **tag)
        try:  # a worker that comes back finds the cancel flag and drops the request at its next step
            await sync_to_async(decode_cancel, thread_sensitive=False)(
                user_id=self.scope["user"].id, request_ids=[request_id]
            )
        except Exception:  # Redis away too: the slot expires on its own
            log.warning("could not clean up lost request %s", request_id, exc_info=True)

    def _ended(self, request_id: str) -> dict[str, Any]:
        """Forget a request of this socket; returns its tag."""
        if self.running.pop(request_id, None) is not None:
            self.ended.append(request_id)
        return self.tags.pop(request_id, None) or {}

    async def on_resync(self, frame: dict[str, Any]) -> None:
        """The client saw a gap in a request's `seq`: send it a `state` frame with every frame of the request."""
        try:
            wanted = parse_target(frame)
        except ProtocolError as error:
            await self.send_error(error.code, error.message)
            return
        await self.paced_resync(functools.partial(self._resync_now, wanted))  # at most once an interval (JsonSocket)

    async def _resync_now(self, wanted: str | None) -> None:
        if wanted in self.running:  # the worker answers between two steps, after every frame it sent before
            await sync_to_async(request_resync, thread_sensitive=False)(wanted)
            return
        await self._send_kept(wanted, ended_state, "no request with that id ran on this socket lately")

    async def on_view(self, frame: dict[str, Any]) -> None:
        """The student switched layer or head: an `attention` frame holds the request's attention in the new view.

        A running request's worker answers between two steps (and its later frames carry the new
        view); an ended one's is read here from the copy its worker kept for a while.
        """
        try:
            wanted, view = parse_view(frame)
            if wanted is None:
                raise ProtocolError("bad_params", "request_id must be the id a `start` frame gave")
        except ProtocolError as error:
            await self.send_error(error.code, error.message)
            return
        if wanted in self.running:
            await sync_to_async(attention_view, thread_sensitive=False)(wanted, view)
            return
        await self._send_kept(wanted, functools.partial(ended_attention, view=view),
                              "no request with that id and attention ran on this socket lately")

    async def _send_kept(self, request_id: str, read: Callable[[str], str | None], missing: str) -> None:
        """Send what the worker kept of one of this socket's ended requests (`not_running` when nothing is)."""
        kept = None
        for _ in range(5) if request_id in self.ended else ():
            # The worker keeps it just after it sends the last frame: a client that asks at once may be first.
            kept = await sync_to_async(read, thread_sensitive=False)(request_id)
            if kept is not None:
                break
            await asyncio.sleep(0.1)
        if kept is None:
            await self.send_error("not_running", missing)
        else:
            await self.send(text_data=kept)

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

    async def playground_frame(self, message: dict[str, Any]) -> None:
        """A frame from the decoding loop, already JSON; the last one of a request frees its entry."""
        request_id = message.get("request_id", "")
        if request_id not in self.running:  # ended here already (lost, refused): the client was told
            return
        if message.get("final"):
            self._ended(request_id)
        await self.send(text_data=message["text"])


def _tag_of(frame: dict[str, Any]) -> dict[str, Any]:
    """The frame's tag, to echo in an error frame, when it is a valid one."""
    tag = frame.get("tag")
    return {"tag": tag} if is_tag(tag) else {}

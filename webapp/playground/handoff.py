"""Handing decode jobs to the interactive workers: the jobs that arrive together share one Celery message.

A class pressing Run at once sends thirty `decode` frames within a few milliseconds. Queued
one by one, the web process pays a thread hop, a Redis round trip for the limits and a
Celery publish per job, and the worker a receive and an acknowledgement per job, all before
the first student sees a token. Here, while one call is on its way, every job that arrives
meanwhile waits and goes in the next: one round trip checks all their limits and one
Celery message carries them (services.decode_queue). A lone request leaves at once; a burst
leaves in a few messages.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any

from asgiref.sync import sync_to_async

from webapp.playground.protocol import ProtocolError
from webapp.playground.services import decode_queue
from webapp.realtime.loops import per_loop

log = logging.getLogger(__name__)

MAX_JOBS_PER_MESSAGE = 64

Pending = tuple[dict[str, Any], asyncio.Future[ProtocolError | None]]


class Handoff:
    """One per event loop: send() returns once the job is queued (None) or refused (the ProtocolError why).

    It raises when the jobs could not be queued at all (Redis or the broker unreachable).
    """

    def __init__(self) -> None:
        self._pending: list[Pending] = []
        self._sender: asyncio.Task[None] | None = None

    async def send(self, job: dict[str, Any]) -> ProtocolError | None:
        future: asyncio.Future[ProtocolError | None] = asyncio.get_running_loop().create_future()
        self._pending.append((job, future))
        if self._sender is None or self._sender.done():
            self._sender = asyncio.create_task(self._send_pending())
        return await future

    async def _send_pending(self) -> None:
        await asyncio.sleep(0)  # let the frames read in this same turn of the loop join the first message
        while self._pending:
            batch, self._pending = self._pending[:MAX_JOBS_PER_MESSAGE], self._pending[MAX_JOBS_PER_MESSAGE:]
            try:
                verdicts = await sync_to_async(decode_queue, thread_sensitive=False)([job for job, _ in batch])
            except Exception as error:  # Redis or the broker is down: every job of this call hears it
                for _, future in batch:
                    if not future.done():
                        future.set_exception(error)
            else:
                for (_, future), verdict in zip(batch, verdicts, strict=True):
                    if not future.done():
                        future.set_result(verdict)


handoff = per_loop(Handoff)  # the running event loop's hand-off


async def job_send(job: dict[str, Any]) -> ProtocolError | None:
    """Queue a decode job through this loop's hand-off: None when queued, else the refusal a client gets (its
    limits', or `unavailable` when Redis or the broker cannot be reached)."""
    try:
        return await handoff().send(job)
    except Exception:
        log.exception("could not queue decode %s", job["request_id"])
        return ProtocolError("unavailable", "the decoding service cannot be reached; try again in a moment")

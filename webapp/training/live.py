"""Live frames from a running job to its watchers (`training-<id>`) and its owner's tabs (nav badge).

The training loop must never wait on Redis, so frames go into a queue that one thread drains through one
event loop (the pub/sub layer wants one loop around the whole send loop; a loop per frame costs 5-8 ms).
Step frames are throttled to at most 10 a second; the latest one held back is sent on the next flush.
"""
from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from webapp.core.consumers import user_group

log = logging.getLogger(__name__)

STEP_INTERVAL_S = 0.1  # at most 10 step frames a second reach the browser


def job_group(job_id: int) -> str:
    """The channel-layer group of everyone watching one job."""
    return f"training-{job_id}"


def job_message(frame: dict[str, Any]) -> dict[str, Any]:
    """A group message for TrainingJobConsumer.training_frame."""
    return {"type": "training.frame", "frame": frame}


def owner_message(payload: dict[str, Any]) -> dict[str, Any]:
    """A group message for NotifyConsumer.notify (the owner's nav badge and job list)."""
    return {"type": "notify", "payload": {"type": "training", **payload}}


def send_now(*, job_id: int, owner_id: int | None, frame: dict[str, Any], owner_payload: dict[str, Any] | None) -> None:
    """Send one frame from synchronous code outside a run (a view cancelling a queued job)."""
    layer = get_channel_layer()

    async def send() -> None:
        await layer.group_send(job_group(job_id), job_message(frame))
        if owner_id is not None and owner_payload is not None:
            await layer.group_send(user_group(owner_id), owner_message(owner_payload))

    try:
        async_to_sync(send)()
    except Exception:  # watchers refresh from the database; a lost frame must not fail the action
        log.warning("could not send a live frame for job %s", job_id, exc_info=True)


class LiveFeed:
    """A background sender for one run: `step` (throttled), `send` (always), `notify_owner`."""

    def __init__(self, *, job_id: int, owner_id: int | None) -> None:
        self.group = job_group(job_id)
        self.owner_group = user_group(owner_id) if owner_id is not None else None
        self._queue: queue.SimpleQueue[tuple[str, dict[str, Any]] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._pending: dict[str, Any] | None = None
        self._last_step = 0.0
        self._thread = threading.Thread(target=self._run, name=f"live-{self.group}", daemon=True)
        self._thread.start()

    def step(self, frame: dict[str, Any], *, force: bool = False) -> None:
        """Queue a step frame unless one went out less than STEP_INTERVAL_S ago (then keep it for later)."""
        now = time.monotonic()
        with self._lock:
            if force or now - self._last_step >= STEP_INTERVAL_S:
                self._last_step, self._pending = now, None
                self._queue.put((self.group, job_message(frame)))
            else:
                self._pending = frame

    def flush(self) -> None:
        """Send the step frame held back by the throttle, if any."""
        with self._lock:
            frame, self._pending = self._pending, None
            if frame is not None:
                self._last_step = time.monotonic()
                self._queue.put((self.group, job_message(frame)))

    def send(self, frame: dict[str, Any]) -> None:
        """Queue a frame that is never throttled (status, log lines); any held step frame goes first."""
        self.flush()
        self._queue.put((self.group, job_message(frame)))

    def notify_owner(self, payload: dict[str, Any]) -> None:
        if self.owner_group is not None:
            self._queue.put((self.owner_group, owner_message(payload)))

    def close(self, timeout: float = 10.0) -> None:
        """Send what is queued, then stop the thread."""
        self.flush()
        self._queue.put(None)
        self._thread.join(timeout)

    def _run(self) -> None:
        asyncio.run(self._pump())

    async def _pump(self) -> None:
        layer = get_channel_layer()
        while (item := await asyncio.to_thread(self._queue.get)) is not None:
            group, message = item
            try:
                await layer.group_send(group, message)
            except Exception:  # Redis away for a moment: the page catches up from the database
                log.warning("live frame to %s lost", group, exc_info=True)

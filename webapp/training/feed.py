"""A training job's socket frames: to its watchers (`training-<id>`) and to its owner's tabs (the nav badge).

Both go through webapp.realtime.feed: a run's step frames at most 10 a second (the newest held back
is sent on the next flush), status and log frames at once, all from one thread and event loop.
"""
from __future__ import annotations

from typing import Any

from webapp.realtime.feed import Feed, group_frame, publish, user_group
from webapp.training.models import TrainingJob

STEP_INTERVAL_S = 0.1  # at most 10 step frames a second reach the browser


def job_group(job_id: int) -> str:
    """The channel-layer group of everyone watching one job."""
    return f"training-{job_id}"


def owner_payload(*, owner_id: int | None, job_id: int, status: str, **extra: Any) -> dict[str, Any]:
    """The owner's tabs' frame body: which job changed and how many of theirs are still active."""
    active = TrainingJob.objects.filter(owner_id=owner_id, status__in=TrainingJob.ACTIVE).count()
    return {"job": job_id, "status": status, **extra, "active": active}


def owner_frame(payload: dict[str, Any]) -> dict[str, Any]:
    """The group message for the owner's NotifySocket tabs."""
    return group_frame({"type": "training", **payload})


def job_announce(*, job_id: int, owner_id: int | None, status: str, **extra: Any) -> None:
    """Tell a job's watchers and its owner's tabs that its status changed (outside a run: views, the runner)."""
    frame = {"type": "status", "status": status, **{k: v for k, v in extra.items() if v}}
    messages = [(job_group(job_id), group_frame(frame))]
    if owner_id is not None:
        messages.append((user_group(owner_id), owner_frame(owner_payload(owner_id=owner_id, job_id=job_id,
                                                                          status=status))))
    publish(messages)


class JobFeed:
    """One run's frames: `step` (throttled), `send` (always), `notify_owner`; `close` drains them."""

    def __init__(self, *, job_id: int, owner_id: int | None) -> None:
        self.group = job_group(job_id)
        self.owner_group = user_group(owner_id) if owner_id is not None else None
        self._feed = Feed(name=self.group, interval=STEP_INTERVAL_S)

    def step(self, frame: dict[str, Any], *, force: bool = False) -> None:
        self._feed.latest(self.group, group_frame(frame), force=force)

    def send(self, frame: dict[str, Any]) -> None:
        self._feed.send(self.group, group_frame(frame))

    def notify_owner(self, payload: dict[str, Any]) -> None:
        if self.owner_group is not None:
            self._feed.send(self.owner_group, owner_frame(payload))

    def flush(self) -> None:
        self._feed.flush()

    def close(self, timeout: float = 10.0) -> None:
        self._feed.close(timeout)

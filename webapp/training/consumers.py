"""/ws/training/<id>/: a job's live frames (snapshot first, then steps, log lines and status changes)."""
from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async

from webapp.accounts.roles import Role, has_role
from webapp.core.sockets import JsonSocket
from webapp.training.live import job_group
from webapp.training.models import TrainingJob
from webapp.training.services import job_cancel, job_snapshot


@database_sync_to_async
def _snapshot(job_id: int) -> dict[str, Any] | None:
    job = TrainingJob.objects.select_related("model").filter(pk=job_id).first()
    return job_snapshot(job) if job else None


@database_sync_to_async
def _cancel(job_id: int, user: Any) -> str | None:
    if not has_role(user, Role.ADMIN):
        return None
    job = TrainingJob.objects.filter(pk=job_id).first()
    return job_cancel(job=job).status if job else None


class TrainingJobConsumer(JsonSocket):
    minimum_role = Role.ADMIN
    frame_types = ("cancel",)

    async def on_connect(self) -> None:
        self.job_id = int(self.scope["url_route"]["kwargs"]["job_id"])
        self.group = job_group(self.job_id)
        # Join before reading the snapshot: the pub/sub layer only reaches subscribers that already exist.
        await self.channel_layer.group_add(self.group, self.channel_name)
        snapshot = await _snapshot(self.job_id)
        if snapshot is None:
            await self.send_error("not_found", f"there is no training job {self.job_id}")
            await self.close(code=4404)
            return
        await self.send_json(snapshot)

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def on_cancel(self, frame: dict[str, Any]) -> None:
        status = await _cancel(self.job_id, self.scope["user"])
        if status is None:
            await self.send_error("forbidden", "only admins may cancel a job")

    async def training_frame(self, event: dict[str, Any]) -> None:
        """A frame from the run (or from a view) for everyone watching this job."""
        await self.send_json(event["frame"])

"""/ws/training/<id>/: a job's live frames (snapshot first, then steps, log lines and status changes)."""
from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async

from webapp.accounts.roles import Role
from webapp.realtime.sockets import GroupSocket
from webapp.training.feed import job_group
from webapp.training.models import TrainingJob
from webapp.training.services import job_cancel, job_snapshot


@database_sync_to_async
def _snapshot(job_id: int) -> dict[str, Any] | None:
    job = TrainingJob.objects.select_related("model").filter(pk=job_id).first()
    return job_snapshot(job) if job else None


@database_sync_to_async
def _cancel(job_id: int) -> bool:
    job = TrainingJob.objects.filter(pk=job_id).first()
    if job is not None:
        job_cancel(job=job)
    return job is not None


class TrainingJobSocket(GroupSocket):
    minimum_role = Role.ADMIN
    frame_types = ("cancel",)
    action_roles = {"cancel": Role.ADMIN}

    def group_name(self) -> str:
        self.job_id = int(self.scope["url_route"]["kwargs"]["job_id"])
        return job_group(self.job_id)

    async def snapshot(self) -> dict[str, Any] | None:
        return await _snapshot(self.job_id)

    def not_found(self) -> str:
        return f"there is no training job {self.job_id}"

    async def on_cancel(self, frame: dict[str, Any]) -> None:
        if await self.permitted("cancel", "only admins may cancel a job") and not await _cancel(self.job_id):
            await self.send_error("not_found", self.not_found())

"""/ws/lesson/runs/<id>/: a training comparison's state on connect, then its progress frames live.

The experiment runs' socket with the lesson's run table and group: the same frames, the same rights.
"""
from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async

from webapp.experiments.consumers import ExperimentSocket
from webapp.lesson.models import TrainingRun
from webapp.lesson.services import run_group


@database_sync_to_async
def _state(run_id: int) -> dict[str, Any] | None:
    run = TrainingRun.objects.filter(pk=run_id).only("status", "progress", "error", "kind").first()
    return None if run is None else {"type": "state", "id": run_id, "kind": run.kind, "status": run.status,
                                     "progress": run.progress, "error": run.error}


class TrainingRunSocket(ExperimentSocket):
    """Any signed-in user may watch a run (one run per comparison, shared by the class)."""

    def group_name(self) -> str:
        self.run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        return run_group(self.run_id)

    async def snapshot(self) -> dict[str, Any] | None:
        return await _state(self.run_id)

    def not_found(self) -> str:
        return f"there is no lesson training run {self.run_id}"

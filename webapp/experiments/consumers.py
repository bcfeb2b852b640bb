"""/ws/experiments/<id>/: the run's state on connect, then its progress frames live."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from channels.db import database_sync_to_async
from django.db import models

from webapp.core.sockets import GroupSocket
from webapp.experiments.models import ExperimentRun
from webapp.experiments.services import run_group


@database_sync_to_async
def _state(model: type[models.Model], run_id: int) -> dict[str, Any] | None:
    run = model.objects.filter(pk=run_id).only("status", "progress", "error", "kind").first()
    if run is None:
        return None
    return {"type": "state", "id": run_id, "kind": run.kind, "status": run.status, "progress": run.progress,
            "error": run.error}


class ExperimentSocket(GroupSocket):
    """Any signed-in user may watch a run (results are shared: they are keyed by parameters, not owners).

    A subclass watches another table of runs with the same fields and frames: it names the `model`, the
    `run_group` of its feed and the run's `noun` (webapp.lesson.consumers).
    """

    frame_types = ("ping",)
    model: ClassVar[type[models.Model]] = ExperimentRun
    run_group: ClassVar[Callable[[int], str]] = staticmethod(run_group)
    noun: ClassVar[str] = "experiment run"

    def group_name(self) -> str:
        self.run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        return self.run_group(self.run_id)

    async def snapshot(self) -> dict[str, Any] | None:
        return await _state(self.model, self.run_id)

    def not_found(self) -> str:
        return f"there is no {self.noun} {self.run_id}"

    async def on_ping(self, frame: dict[str, Any]) -> None:
        await self.send_json({"type": "pong"})

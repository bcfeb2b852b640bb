"""/ws/experiments/<id>/: the run's state on connect, then its progress frames live."""
from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async

from webapp.core.sockets import JsonSocket
from webapp.experiments.models import ExperimentRun
from webapp.experiments.services import run_group


@database_sync_to_async
def _state(run_id: int) -> dict[str, Any] | None:
    run = ExperimentRun.objects.filter(pk=run_id).only("status", "progress", "error", "kind").first()
    if run is None:
        return None
    return {"type": "state", "id": run_id, "kind": run.kind, "status": run.status, "progress": run.progress,
            "error": run.error}


class ExperimentSocket(JsonSocket):
    """Any signed-in user may watch a run (results are shared: they are keyed by parameters, not owners)."""

    frame_types = ("ping",)

    async def on_connect(self) -> None:
        run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        # Subscribe before reading the state: a frame sent in between is then not lost.
        self.group = run_group(run_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        state = await _state(run_id)
        if state is None:
            await self.send_error("not_found", f"there is no experiment run {run_id}")
            await self.close(code=4404)
            return
        await self.send_json(state)

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def on_ping(self, frame: dict[str, Any]) -> None:
        await self.send_json({"type": "pong"})

    async def run_frame(self, event: dict[str, Any]) -> None:
        """A group message of type 'run.frame' goes to the browser as it is."""
        await self.send_json(event["frame"])

"""The socket that watches one run of a `webapp.ops.runs.RunTable`: its state on connect, then its frames live."""
from __future__ import annotations

from typing import Any, ClassVar

from channels.db import database_sync_to_async

from webapp.ops.runs import RunTable
from webapp.ops.sealed import is_sealed
from webapp.realtime.sockets import GroupSocket


class RunSocket(GroupSocket):
    """Any signed-in user may watch a run (results are shared: they are keyed by parameters, not owners).

    A subclass names its table (`runs`); the URL gives the run's id (`run_id`).
    """

    frame_types = ("ping",)
    runs: ClassVar[RunTable]

    def group_name(self) -> str:
        self.run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        return self.runs.group(self.run_id)

    async def snapshot(self) -> dict[str, Any] | None:
        return await database_sync_to_async(self._state)()

    def _state(self) -> dict[str, Any] | None:
        run = self.runs.model.objects.filter(pk=self.run_id).only("pk").first()
        if run is not None and is_sealed(run):  # a class predicts it: nothing of it before the reveal
            self._sealed = True
            return None
        return self.runs.state(self.run_id)

    def not_found(self) -> str:
        if getattr(self, "_sealed", False):
            return f"a class is predicting this {self.runs.noun}: it shows after the class's reveal"
        return f"there is no {self.runs.noun} {self.run_id}"

    async def on_ping(self, frame: dict[str, Any]) -> None:
        await self.send_json({"type": "pong"})

"""The socket that watches one run of a `webapp.ops.runs.RunTable`: its state on connect, then its frames live."""
from __future__ import annotations

from typing import Any, ClassVar

from channels.db import database_sync_to_async

from webapp.live.sockets import GroupSocket
from webapp.ops.runs import RunTable


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
        return await database_sync_to_async(self.runs.state)(self.run_id)

    def not_found(self) -> str:
        return f"there is no {self.runs.noun} {self.run_id}"

    async def on_ping(self, frame: dict[str, Any]) -> None:
        await self.send_json({"type": "pong"})

"""The per-user notification socket: pings now, job badges and invitations as their features arrive."""
from __future__ import annotations

from typing import Any

from webapp.realtime.feed import user_group
from webapp.realtime.sockets import GroupSocket


class NotifySocket(GroupSocket):
    """Every open tab of one user; the snapshot is a greeting (there is always a user to notify)."""

    frame_types = ("ping",)

    def group_name(self) -> str:
        return user_group(self.scope["user"].id)

    async def snapshot(self) -> dict[str, Any] | None:
        return {"type": "hello", "user": self.scope["user"].get_username()}

    async def on_ping(self, frame: dict[str, Any]) -> None:
        await self.send_json({"type": "pong", "echo": frame.get("echo")})

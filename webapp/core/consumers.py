"""The per-user notification socket: pings now, job badges and invitations as their features arrive."""
from __future__ import annotations

from typing import Any

from webapp.core.sockets import JsonSocket


def user_group(user_id: int) -> str:
    """The channel-layer group that reaches every open tab of one user."""
    return f"user-{user_id}"


class NotifyConsumer(JsonSocket):
    frame_types = ("ping",)

    async def on_connect(self) -> None:
        self.group = user_group(self.scope["user"].id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.send_json({"type": "hello", "user": self.scope["user"].get_username()})

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def on_ping(self, frame: dict[str, Any]) -> None:
        await self.send_json({"type": "pong", "echo": frame.get("echo")})

    async def notify(self, event: dict[str, Any]) -> None:
        """A group message of type 'notify' is forwarded to the browser as is."""
        await self.send_json(event["payload"])

"""Base for every WebSocket consumer: signed-in users only, JSON frames, an `error` frame for bad input."""
from __future__ import annotations

import json
from typing import Any, ClassVar

from channels.generic.websocket import AsyncWebsocketConsumer

from webapp.accounts.roles import Role, has_role

MAX_FRAME_CHARS = 64_000


class JsonSocket(AsyncWebsocketConsumer):
    """Parses each frame and calls `on_<type>`; anything malformed gets an error frame, never a close."""

    minimum_role: ClassVar[Role] = Role.STUDENT
    frame_types: ClassVar[tuple[str, ...]] = ()

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)  # refused during the handshake: the client sees HTTP 403
            return
        allowed = await self._user_allowed(user)
        if not allowed:
            await self.close(code=4403)
            return
        await self.accept()
        await self.on_connect()

    async def _user_allowed(self, user: Any) -> bool:
        from channels.db import database_sync_to_async

        return await database_sync_to_async(has_role)(user, self.minimum_role)

    async def on_connect(self) -> None:
        """Hook for subclasses (join groups, send a welcome frame)."""

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if text_data is None:
            await self.send_error("bad_frame", "frames must be JSON text, not binary")
            return
        if len(text_data) > MAX_FRAME_CHARS:
            await self.send_error("too_large", f"a frame may hold at most {MAX_FRAME_CHARS} characters")
            return
        try:
            frame = json.loads(text_data)
        except (ValueError, RecursionError):
            await self.send_error("bad_json", "the frame is not valid JSON")
            return
        if not isinstance(frame, dict):
            await self.send_error("bad_frame", "a frame must be a JSON object with a 'type'")
            return
        kind = frame.get("type")
        if not isinstance(kind, str) or kind not in self.frame_types:
            allowed = ", ".join(self.frame_types)
            await self.send_error("unknown_type", f"unknown frame type {str(kind)[:40]!r} (expected one of: {allowed})")
            return
        await getattr(self, f"on_{kind}")(frame)

    async def send_json(self, payload: dict[str, Any]) -> None:
        await self.send(text_data=json.dumps(payload, ensure_ascii=False))

    async def send_error(self, code: str, message: str, **extra: Any) -> None:
        await self.send_json({"type": "error", "code": code, "message": message, **extra})

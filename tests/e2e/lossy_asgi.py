"""The real ASGI app, except that each playground request's token frame of seq DROPPED never reaches the browser.

For tests/e2e/test_playground_gaps.py, which serves it under daphne (`tests.e2e.lossy_asgi:application`):
the frame is lost between the app and the socket, as a lost message would be, and the page must notice
the gap in `seq` and repair it. Nothing of this lives in the app.
"""
from __future__ import annotations

import json
from typing import Any

from webapp.asgi import application as real_application

DROPPED = 2
STEP_TYPES = ("token", "beams")


def lost(message: dict[str, Any]) -> bool:
    """Whether this is a step frame of seq DROPPED on its way to a browser."""
    text = message.get("text") if message.get("type") == "websocket.send" else None
    if not text:
        return False
    frame = json.loads(text)
    return frame.get("type") in STEP_TYPES and frame.get("seq") == DROPPED


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "websocket" or not scope.get("path", "").startswith("/ws/decode/"):
        await real_application(scope, receive, send)
        return

    async def lossy_send(message: dict[str, Any]) -> None:
        if not lost(message):
            await send(message)

    await real_application(scope, receive, lossy_send)

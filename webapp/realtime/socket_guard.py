"""What every socket enforces on its client: a frame budget, text that can be echoed, rights that end.

JsonSocket (webapp/realtime/sockets.py) applies these to every frame of every socket; the web
server (webapp/server.py) bounds what a socket may have queued before its consumer reads it.
"""
from __future__ import annotations

import asyncio
import time
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

FRAMES_PER_S = 10.0  # a person clicking (step mode, cancel, decode) stays far below this
FRAME_BURST = 30
CHARS_PER_S = 64_000.0  # one full-size frame a second, sustained
CHAR_BURST = 256_000
POLICY_CLOSE = 4008  # RFC 6455's 1008 (policy violation) in the range a server application may send
REVOKED_CLOSE = 4401  # the user's rights ended: signed out, deactivated or role changed; reconnect to re-check
NOT_READING_CLOSE = 4408  # the client left more than SOCKET_SEND_BUFFER_BYTES unread (webapp/server.py)
TOO_MANY_CLOSE = 4409  # the user holds SOCKETS_PER_USER sockets in this web process already


class FrameBudget:
    """Two token buckets, frames and characters: spend() is False once a client sends faster than allowed."""

    def __init__(self) -> None:
        self.frames = float(FRAME_BURST)
        self.chars = float(CHAR_BURST)
        self.at = time.monotonic()

    def spend(self, chars: int) -> bool:
        now = time.monotonic()
        elapsed, self.at = now - self.at, now
        self.frames = min(FRAME_BURST, self.frames + elapsed * FRAMES_PER_S) - 1
        self.chars = min(CHAR_BURST, self.chars + elapsed * CHARS_PER_S) - chars
        return self.frames >= 0 and self.chars >= 0


def is_text(value: str) -> bool:
    """Encodable as UTF-8: JSON escapes can smuggle in a lone surrogate (\\ud800) that no tokenizer or socket takes."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def encodable(value: Any) -> bool:
    """Every string in a parsed frame is UTF-8 text (`is_text`)."""
    if isinstance(value, str):
        return is_text(value)
    if isinstance(value, dict):
        return all(encodable(k) and encodable(v) for k, v in value.items())
    if isinstance(value, list):
        return all(encodable(v) for v in value)
    return True


def account_group(user_id: int) -> str:
    """Every open socket of one user."""
    return f"account.{user_id}"


def browser_session_group(session_key: str) -> str:
    """Every open socket of one signed-in browser session."""
    return f"session.{session_key}"


def sockets_close(*, user_id: int | None = None, session_key: str | None = None, reason: str) -> None:
    """Close the sockets of a user (every session) or of one session; they re-check their rights on reconnect."""
    layer = get_channel_layer()
    if layer is None:
        return
    message = {"type": "rights.revoked", "reason": reason}
    groups = [account_group(user_id)] if user_id is not None else []
    groups += [browser_session_group(session_key)] if session_key else []

    async def send() -> None:
        for group in groups:
            await layer.group_send(group, message)

    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # the usual case: a view or the admin, in a thread of its own
        async_to_sync(send)()
    else:  # called from code running on an event loop (async_to_sync would refuse): send from that loop
        _pending.add(task := loop.create_task(send()))
        task.add_done_callback(_pending.discard)


_pending: set[asyncio.Task[None]] = set()  # the loop keeps only weak references to its tasks

"""Requests (and sockets) from a session just refused for its rate wait out the refusal before Django sees them.

A refused request still costs a whole Django request (the session and the user from the database, the view's
lookups, a template) in a worker thread, so a script that posts again the moment it is refused would hold up every
other student's stream through the threads' fight for the GIL (figures: docs/benchmarks.md).

`note_refused(session_key, path_prefix, retry_after)` is called by a view that refused for a rate.
`HoldRefused`, in front of Django's ASGI handler, then holds that session's next requests under the
prefix in the event loop (a sleep: no thread, no database) until the refusal's wait is over, at most
`HOLD_S`, and passes them on: Django answers as it would have (a cached demonstration is still
served, an uncached one refused again). A browser sends a few requests at once; past
`HELD_PER_SESSION` held requests of one session (a script) the rest are answered 429 at once, with
the wait in Retry-After, without reaching Django.

Sockets the same way: a session whose socket was closed for holding SOCKETS_PER_USER already
(4409) has its next handshakes held (at most `HOLD_S`) before the session, the user and the role are
read; past `HELD_PER_SESSION` the rest are told `too_many_sockets` and closed 4409 at the door.

The record is this process's memory, keyed by the session cookie's value and the path's prefix (only
code that signed the session in can note it, so a guessed cookie holds nothing back). With several web
processes each holds what its own views and sockets refused.
"""
from __future__ import annotations

import asyncio
import math
import threading
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from webapp.realtime.door import say_and_close, session_key, too_many_requests
from webapp.realtime.socket_guard import TOO_MANY_CLOSE

HOLD_S = 2.0  # the longest a request is held before Django sees it
HELD_PER_SESSION = 16  # held at once per session; beyond, refused at once
MAX_ENTRIES = 10_000  # sessions remembered; expired ones go first when full


@dataclass
class _Refusal:
    until: float  # time.monotonic() when the refusal's wait is over
    held: int = 0


_refused: dict[tuple[str, str], _Refusal] = {}  # (session key, path prefix)
_prefixes: tuple[str, ...] = ()  # replaced, never changed in place: the event loop iterates it
_lock = threading.Lock()  # views note from worker threads; the event loop only reads


def note_refused(session_key: str | None, prefix: str, retry_after: float) -> None:
    """The session was refused under `prefix` for `retry_after` seconds (from a view, in any thread)."""
    if not session_key or retry_after <= 0:
        return
    with _lock:
        _note(session_key, prefix, retry_after)


def _note(session_key: str, prefix: str, retry_after: float) -> None:
    if len(_refused) >= MAX_ENTRIES:
        _forget_expired()
    if len(_refused) >= MAX_ENTRIES:
        return  # full of live refusals: this one is answered by Django as before
    until = time.monotonic() + retry_after
    global _prefixes
    entry = _refused.get((session_key, prefix))
    if entry is None:
        if prefix not in _prefixes:
            _prefixes = (*_prefixes, prefix)
        _refused[session_key, prefix] = _Refusal(until)
    else:
        entry.until = max(entry.until, until)


def _forget_expired() -> None:
    now = time.monotonic()
    for key in [key for key, entry in _refused.items() if entry.until <= now and entry.held == 0]:
        _refused.pop(key, None)


class HoldRefused:
    """ASGI middleware for HTTP and WebSocket: see the module's text."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        entry = self._refusal(scope) if _refused else None
        if entry is not None:
            wait = entry.until - time.monotonic()
            if wait > 0:
                if entry.held >= HELD_PER_SESSION:
                    if scope["type"] == "websocket":
                        await _too_many_sockets(receive, send)
                    else:
                        await too_many_requests(send, max(1, math.ceil(wait)))
                    return
                entry.held += 1
                try:
                    await asyncio.sleep(min(wait, HOLD_S))
                finally:
                    entry.held -= 1
        await self.app(scope, receive, send)

    @staticmethod
    def _refusal(scope: dict[str, Any]) -> _Refusal | None:
        key = session_key(scope)
        if key is None:
            return None
        path = scope.get("path", "")
        for prefix in _prefixes:
            if path.startswith(prefix):
                entry = _refused.get((key, prefix))
                if entry is not None:
                    return entry
        return None


async def _too_many_sockets(receive: Any, send: Any) -> None:
    """What JsonSocket answers a socket past SOCKETS_PER_USER, said at the door (no session, user or role read)."""
    await say_and_close(receive, send, {"type": "error", "code": "too_many_sockets",
                                        "message": f"you have {settings.SOCKETS_PER_USER} connections open already; "
                                                   "close a tab and this one connects again"}, TOO_MANY_CLOSE)

"""Base for every WebSocket consumer: signed-in users only, JSON frames, an `error` frame for bad input."""
from __future__ import annotations

import asyncio
import functools
import json
import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

import redis
from channels.consumer import get_handler_name
from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncWebsocketConsumer
from channels.layers import get_channel_layer
from channels.utils import await_many_dispatch
from django.conf import settings

from webapp.accounts.roles import Role, has_role, roles_known, user_now
from webapp.realtime.door import note_known
from webapp.realtime.hold import HOLD_S, note_refused
from webapp.realtime.socket_guard import (
    POLICY_CLOSE,
    REVOKED_CLOSE,
    TOO_MANY_CLOSE,
    FrameBudget,
    account_group,
    browser_session_group,
    encodable,
)

log = logging.getLogger(__name__)

MAX_FRAME_CHARS = 64_000
SOCKETS_PREFIX = "/ws/"  # the per-user socket cap counts every socket of the site
REDIS_WAIT_S = 3.0  # a socket opened while Redis restarts waits this long, then is told so (a proxy may give up sooner)
RESYNC_RETRY_S = 0.5  # a resync waiting for a socket's queued frames to leave looks again this often
TRY_AGAIN_CLOSE = 4013  # "try again later" (1013 in RFC 6455, which a server may not send): the script reconnects

_open_by_user: Counter[int] = Counter()  # this process's open sockets per user (settings.SOCKETS_PER_USER)


class JsonSocket(AsyncWebsocketConsumer):
    """Parses each frame and calls `on_<type>`; anything malformed gets an error frame, never a close."""

    minimum_role: ClassVar[Role] = Role.STUDENT
    frame_types: ClassVar[tuple[str, ...]] = ()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Channels' own, except that a channel layer away (Redis restarting) is waited for, then refused in words.

        Channels subscribes each socket's channel before the handshake; with Redis gone that raised
        and the client saw a 500 (or 1011 after accept). Here the socket waits up to REDIS_WAIT_S,
        and if Redis is still away it is accepted, told `unavailable` and closed with 4013.
        """
        self.scope = scope
        self.channel_layer = get_channel_layer(self.channel_layer_alias)
        self.base_send = send
        deadline = asyncio.get_running_loop().time() + REDIS_WAIT_S
        while True:
            try:
                self.channel_name = await self.channel_layer.new_channel()
                break
            except (redis.RedisError, OSError):
                if asyncio.get_running_loop().time() > deadline:
                    log.warning("socket refused: the channel layer is unreachable", exc_info=True)
                    await self._refuse_unavailable(receive)
                    return
                await asyncio.sleep(0.25)
        self.channel_receive = functools.partial(self.channel_layer.receive, self.channel_name)
        try:
            await await_many_dispatch([receive, self.channel_receive], self.dispatch)
        except StopConsumer:
            pass
        finally:
            self._stop_resync()
            self._count_out()

    async def dispatch(self, message: dict[str, Any]) -> None:
        """Channels' own, without its hop to the sync thread to close stale database connections before every
        message: these sockets reach the database only through database_sync_to_async, which closes them in its
        own thread. The hop was a queue every frame, every worker frame and every handshake of the process waited
        in (a class's step to every screen, a reconnect storm's joins)."""
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"no handler for message type {message['type']}")
        await handler(message)

    async def websocket_disconnect(self, message: dict[str, Any]) -> None:
        """Channels' own; leaving groups while Redis is away must not raise (their subscriptions died with it)."""
        try:
            await super().websocket_disconnect(message)
        except (redis.RedisError, OSError):
            log.warning("could not leave this socket's groups: Redis is away")
            try:
                await self.disconnect(message.get("code", 1000))
            except (redis.RedisError, OSError):
                log.warning("socket cleanup incomplete: Redis is away")
            raise StopConsumer() from None

    async def _refuse_unavailable(self, receive: Any) -> None:
        """Without a channel: accept, say why in an `error` frame, close with 4013 (the client tries again)."""
        message = await receive()
        if message["type"] != "websocket.connect":
            return
        await self.base_send({"type": "websocket.accept"})
        text = json.dumps({"type": "error", "code": "unavailable",
                           "message": "the server lost its connection to Redis; reconnecting in a moment"})
        await self.base_send({"type": "websocket.send", "text": text})
        await self.base_send({"type": "websocket.close", "code": TRY_AGAIN_CLOSE})

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)  # refused during the handshake: the client sees HTTP 403
            return
        session = self.scope.get("session")
        note_known(session.session_key if session is not None else None)  # its next handshakes pay as a student's
        allowed = await self._user_allowed(user)
        if not allowed:
            await self.close(code=4403)
            return
        self.budget = FrameBudget()
        await self.accept()
        if not self._count_in(user.pk):  # the session's next sockets wait at the door (webapp.realtime.hold)
            note_refused(session.session_key if session is not None else None, SOCKETS_PREFIX, HOLD_S)
            await self.send_error("too_many_sockets", f"you have {settings.SOCKETS_PER_USER} connections open already; "
                                  "close a tab and this one connects again")
            await self.close(code=TOO_MANY_CLOSE)
            return
        try:
            await self._watch_rights(user)
            await self.on_connect()
        except (redis.RedisError, OSError):  # Redis went away between the channel and these: refuse in words
            log.warning("socket refused: Redis went away while it connected", exc_info=True)
            await self.send_error("unavailable", "the server lost its connection to Redis; reconnecting in a moment")
            await self.close(code=TRY_AGAIN_CLOSE)

    async def _watch_rights(self, user: Any) -> None:
        """Join the groups that sign-out, deactivation and role changes close (see socket_guard.sockets_close)."""
        session = self.scope.get("session")
        groups = [account_group(user.pk)]
        if session is not None and session.session_key:
            groups.append(browser_session_group(session.session_key))
        for group in groups:
            await self.join(group)

    async def join(self, group: str) -> None:
        """Join `group` for the socket's life (Channels leaves `self.groups` on disconnect); here, after the
        handshake's checks rather than by Channels before them, so that a refused socket hears nothing."""
        await self.channel_layer.group_add(group, self.channel_name)
        self.groups.append(group)

    def _count_in(self, user_id: int) -> bool:
        """Count this socket for its user, unless the user holds SOCKETS_PER_USER already (then False)."""
        if _open_by_user[user_id] >= settings.SOCKETS_PER_USER:
            return False
        _open_by_user[user_id] += 1
        self._counted_for = user_id
        return True

    def _count_out(self) -> None:
        user_id = getattr(self, "_counted_for", None)
        if user_id is not None:
            self._counted_for = None
            _open_by_user[user_id] -= 1
            if _open_by_user[user_id] <= 0:
                del _open_by_user[user_id]

    async def paced_resync(self, answer: Callable[[], Awaitable[None]]) -> None:
        """Answer a `resync` now, or, within SOCKET_RESYNC_EVERY_MS of the last answer, once when that interval ends.

        However many arrive meanwhile, one answer goes (to the last one asked): a client asking in a
        loop gets a full state frame at most once an interval, not one per frame it sends.
        """
        loop = asyncio.get_running_loop()
        self._resync_answer = answer
        if getattr(self, "_resync_task", None) is not None:
            return  # an answer is already waiting for the interval's end: it answers this one too
        wait = getattr(self, "_resync_at", 0.0) - loop.time()
        if self.unsent() > 0:  # its last frames have not left yet: a state now would pile up behind them
            wait = max(wait, settings.SOCKET_RESYNC_EVERY_MS / 1000, RESYNC_RETRY_S)
        if wait <= 0:
            self._resync_at = loop.time() + settings.SOCKET_RESYNC_EVERY_MS / 1000
            await answer()
            return
        self._resync_task = loop.create_task(self._resync_later(wait))

    async def _resync_later(self, wait: float) -> None:
        await asyncio.sleep(wait)
        while self.unsent() > 0 and not getattr(self, "closing", False):  # answered once what is queued has left
            await asyncio.sleep(RESYNC_RETRY_S)
        self._resync_task = None
        if getattr(self, "closing", False):
            return
        self._resync_at = asyncio.get_running_loop().time() + settings.SOCKET_RESYNC_EVERY_MS / 1000
        try:
            await self._resync_answer()
        except Exception:
            log.exception("a paced resync failed")

    def unsent(self) -> int:
        """What this socket's client has not read yet of what the server sent it (0 where the server cannot say)."""
        measure = self.scope.get("encdec.unsent") if hasattr(self, "scope") else None
        return measure() if measure is not None else 0

    def _stop_resync(self) -> None:
        task = getattr(self, "_resync_task", None)
        if task is not None:
            task.cancel()
            self._resync_task = None

    async def close(self, code: int | bool | None = None, reason: str | None = None) -> None:
        """Close, and drop whatever the client sent meanwhile (frames already on their way when it closed)."""
        self.closing = True
        await super().close(code=code, reason=reason)

    async def rights_revoked(self, event: dict[str, Any]) -> None:
        """The user signed out, was deactivated or changed role: this socket's rights are gone."""
        self.closing = True
        await self.close(code=REVOKED_CLOSE)

    async def _user_allowed(self, user: Any) -> bool:
        """Whether the user's role opens this socket; the role read is kept in `handshake_roles` for the join's
        own checks (roles_known), which come next."""
        from channels.db import database_sync_to_async

        def allowed() -> bool:
            with roles_known(self.handshake_roles):
                return has_role(user, self.minimum_role)

        self.handshake_roles: dict[Any, Role] = {}
        return await database_sync_to_async(allowed)()

    async def on_connect(self) -> None:
        """Hook for subclasses (join groups, send a welcome frame)."""

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if getattr(self, "closing", False):  # frames that were queued before this socket closed
            return
        # an oversized frame is refused with an error frame below, and costs the budget what a full one does
        size = len(text_data if text_data is not None else bytes_data or b"")
        if not self.budget.spend(min(size, MAX_FRAME_CHARS)):
            self.closing = True  # faster than any person: the socket goes, and its queue with it
            await self.close(code=POLICY_CLOSE)
            return
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
        if not encodable(frame):
            await self.send_error("bad_text", "the frame holds text that is not valid Unicode (a lone surrogate)")
            return
        kind = frame.get("type")
        if not isinstance(kind, str) or kind not in self.frame_types:
            allowed = ", ".join(self.frame_types)
            await self.send_error("unknown_type", f"unknown frame type {str(kind)[:40]!r} (expected one of: {allowed})")
            return
        await self.on_frame(kind, frame)

    async def on_frame(self, kind: str, frame: dict[str, Any]) -> None:
        """A well-formed frame of one of `frame_types`: its `on_<type>` handles it."""
        await getattr(self, f"on_{kind}")(frame)

    async def send_json(self, payload: dict[str, Any]) -> None:
        await self.send(text_data=json.dumps(payload, ensure_ascii=False))

    async def send_error(self, code: str, message: str, **extra: Any) -> None:
        await self.send_json({"type": "error", "code": code, "message": message, **extra})


class GroupSocket(JsonSocket):
    """A socket that watches one thing (a job, a run, a user's tabs) through its channel-layer group.

    On connect it joins `group_name()` before reading `snapshot()`, since the pub/sub layer reaches only
    subscribers that already exist; no snapshot (nothing to watch) answers `not_found` and closes 4404.
    Every `group.frame` message (webapp.realtime.feed.group_frame) goes to the browser as it is. A client
    action that needs more than `minimum_role` names its role in `action_roles`; the handler checks it
    again with `permitted()` (a role can change while a socket is open).
    """

    action_roles: ClassVar[dict[str, Role]] = {}

    def group_name(self) -> str:
        """The group this socket joins (from self.scope)."""
        raise NotImplementedError

    async def snapshot(self) -> dict[str, Any] | None:
        """The first frame: the watched thing's state now, or None when there is no such thing."""
        raise NotImplementedError

    def not_found(self) -> str:
        return "there is nothing to watch here"

    async def on_connect(self) -> None:
        self.group = self.group_name()
        await self.join(self.group)
        snapshot = await self.snapshot()
        if snapshot is None:
            await self.send_error("not_found", self.not_found())
            await self.close(code=4404)
            return
        await self.send_json(snapshot)

    async def permitted(self, action: str, refusal: str) -> bool:
        """Whether the user holds `action_roles[action]` now; if not, a `forbidden` error frame says `refusal`."""
        from channels.db import database_sync_to_async

        role = self.action_roles.get(action)
        if role is None or await database_sync_to_async(_holds_now)(self.scope["user"], role):
            return True
        await self.send_error("forbidden", refusal)
        return False

    async def group_frame(self, event: dict[str, Any]) -> None:
        """A frame for everyone in the group."""
        await self.send_json(event["frame"])


def _holds_now(user: Any, role: Role) -> bool:
    """The user's role as the database has it now, not as it was when the socket opened."""
    fresh = user_now(user.pk)
    return fresh is not None and has_role(fresh, role)

"""The door: every HTTP request and WebSocket handshake spends from token buckets in the event loop, before Django's
session, the user, a thread or the database is touched; past its budget it is refused there (HTTP 429 with
Retry-After; a socket's handshake refused), after a wait that slows a client looping on refusals (doubled for each
refusal in a row, up to LONGEST_WAIT times DOOR_REFUSAL_WAIT_MS).

Refusing in the view cost the web process a whole request per refusal (a thread, the session and the user from the
database, a template): 200 connections re-posting a demonstration kept it at 100 % CPU though nearly all were
refused, cached demonstrations counted against no limit at all, and loops of anonymous handshakes with made-up
cookies (each a session lookup in a thread) slowed every student's first token tenfold (docs/benchmarks.md).

Who pays, by what the request carries:

- a session this process knows (its user was signed in on one of its requests or sockets, see `note_known`): that
  session's bucket (DOOR_SESSION_*), its demonstration bucket for a POST under /lesson/demo/, cached answers
  included (DOOR_SESSION_DEMOS_*), and its client address's bucket for signed-in requests (DOOR_ADDRESS_*);
- anything else (no session cookie, or one never seen signed in: a made-up one costs a lookup to find out): the
  address's bucket for the unknown (DOOR_ANONYMOUS_*), a socket's handshake in a smaller one of its own
  (DOOR_ANONYMOUS_SOCKETS_*: no socket opens without a signed-in session), static files in their own
  (DOOR_STATIC_*).

The web process knows, as it starts, every session in the database that has not expired (`know_stored_sessions`),
so a class whose web process restarts reconnects as the signed-in students it is; a session signed in later on
another web process is known here after its first request or socket.

A school's class shares one address: the address budgets are generous (hundreds of students behind one NAT fit),
the per-session ones tight (one student, however many tabs). The client's address is the connection's, or behind a
trusted proxy the one it forwarded (webapp.accounts.lockout.scope_ip). Everything lives in this process's memory:
with several web processes each counts its own share. DOOR_LIMITS=0 turns the door off.
"""
from __future__ import annotations

import asyncio
import collections
import json
import math
import threading
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import DatabaseError
from django.http import parse_cookie
from django.utils import timezone
from django.utils.functional import SimpleLazyObject, empty

from webapp.accounts.lockout import scope_ip

DEMO_PREFIX = "/lesson/demo/"
ROOT_FILES = ("/favicon.ico",)
REFUSED_CLOSE = 4429  # a handshake refused for its rate (after an `error` frame `rate_limited`)
MAX_KEYS = 50_000  # buckets kept per kind; the least recently used go first
MAX_KNOWN = 100_000  # signed-in sessions remembered
LONGEST_WAIT = 8  # a refusal waits DOOR_REFUSAL_WAIT_MS, doubled for each refusal of its bucket in a row, up to this times


class Buckets:
    """Token buckets by key, all with one rate (tokens a second) and burst; `wait` says how long until one is free."""

    def __init__(self, per_minute: int, burst: int, max_keys: int = MAX_KEYS) -> None:
        self.rate = per_minute / 60.0
        self.burst = float(burst)
        self.max_keys = max_keys
        self.levels: collections.OrderedDict[str, list[float]] = collections.OrderedDict()

    def wait(self, key: str, now: float) -> float:
        """Seconds until `key` has a token (0: it has one now); refills the bucket to now."""
        level = self.levels.get(key)
        if level is None:
            if len(self.levels) >= self.max_keys:
                self.levels.popitem(last=False)
            level = self.levels[key] = [self.burst, now]
        else:
            self.levels.move_to_end(key)
            level[0] = min(self.burst, level[0] + (now - level[1]) * self.rate)
            level[1] = now
        return 0.0 if level[0] >= 1 else (1 - level[0]) / self.rate if self.rate > 0 else math.inf

    def spend(self, key: str) -> None:
        self.levels[key][0] -= 1


_known: dict[str, None] = {}  # session keys seen signed in; insertion order is age
_known_lock = threading.Lock()  # noted from request threads; the event loop only reads


def note_known(session_key: str | None) -> None:
    """This session's user was signed in on one of this process's requests or sockets (from any thread)."""
    if not session_key or session_key in _known:
        return
    with _known_lock:
        if len(_known) >= MAX_KNOWN:
            _known.pop(next(iter(_known)), None)
        _known[session_key] = None


def know_stored_sessions() -> int:
    """Know every unexpired session of the database (the newest MAX_KNOWN); how many. Called once, as the web
    process starts (before its event loop serves anyone): one query."""
    if not settings.DOOR_LIMITS or settings.SESSION_ENGINE not in ("django.contrib.sessions.backends.db",
                                                                   "django.contrib.sessions.backends.cached_db"):
        return 0
    from django.contrib.sessions.models import Session

    try:
        keys = list(Session.objects.filter(expire_date__gt=timezone.now()).order_by("-expire_date")
                    .values_list("session_key", flat=True)[:MAX_KNOWN])
    except DatabaseError:  # no table yet (before migrate): every session is learnt as it comes
        return 0
    with _known_lock:
        for key in reversed(keys):
            _known[key] = None
    return len(keys)


def forget_known() -> None:
    with _known_lock:
        _known.clear()


def known_session_middleware(get_response: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Django middleware, after AuthenticationMiddleware: a request whose user turned out signed in (its view read the
    user, or it signed in) makes its session known to the door. Reads nothing the view did not read."""

    def middleware(request: Any) -> Any:
        response = get_response(request)
        user = request.__dict__.get("user")
        if isinstance(user, SimpleLazyObject):
            user = None if user._wrapped is empty else user._wrapped
        if user is not None and user.is_authenticated:
            session = getattr(request, "session", None)
            note_known(session.session_key if session is not None else None)
        return response

    return middleware


class Door:
    """ASGI middleware, outermost, for HTTP and WebSocket: see the module's text."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.configure()

    def configure(self) -> None:
        """Buckets as the settings say (again after a test changes them)."""
        self.enabled = settings.DOOR_LIMITS
        self.session = Buckets(settings.DOOR_SESSION_PER_MINUTE, settings.DOOR_SESSION_BURST)
        self.demos = Buckets(settings.DOOR_SESSION_DEMOS_PER_MINUTE, settings.DOOR_SESSION_DEMO_BURST)
        self.address = Buckets(settings.DOOR_ADDRESS_PER_MINUTE, settings.DOOR_ADDRESS_BURST)
        self.anonymous = Buckets(settings.DOOR_ANONYMOUS_PER_MINUTE, settings.DOOR_ANONYMOUS_BURST)
        self.anonymous_sockets = Buckets(settings.DOOR_ANONYMOUS_SOCKETS_PER_MINUTE,
                                         settings.DOOR_ANONYMOUS_SOCKET_BURST)
        self.static = Buckets(settings.DOOR_STATIC_PER_MINUTE, settings.DOOR_STATIC_BURST)
        self.refusal_wait = settings.DOOR_REFUSAL_WAIT_MS / 1000
        self.held: collections.Counter[str] = collections.Counter()  # refusals waiting, by address
        # refusals in a row by (lane, key) and when the last was: [count, time.monotonic()]
        self.streaks: collections.OrderedDict[tuple[str, str], list[float]] = collections.OrderedDict()
        self.refused: collections.Counter[str] = collections.Counter()  # by bucket kind, for tests and operators

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if not self.enabled or scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        address = scope_ip(scope)
        wait, lane, key, known = self.admit(scope, address)
        if wait <= 0:
            return await self.app(scope, receive, send)
        self.refused[lane] += 1
        await self.refuse(scope, receive, send, address, wait, self.refusal_wait * self.streak(lane, key), known)

    def admit(self, scope: dict[str, Any], address: str) -> tuple[float, str, str, bool]:
        """Spend this request's tokens, or the wait until they are there (nothing spent); the lane and key that made
        it wait, and whether its session is known."""
        now = time.monotonic()
        session = session_key(scope)
        path = scope.get("path", "")
        if session is not None and session in _known:
            charges = [(self.session, session, "session"), (self.address, address, "address")]
            if scope["type"] == "http" and scope.get("method") == "POST" and path.startswith(DEMO_PREFIX):
                charges.append((self.demos, session, "demonstrations"))
        elif scope["type"] == "websocket":
            charges = [(self.anonymous_sockets, address, "anonymous sockets")]
        elif path.startswith(settings.STATIC_URL) or path in ROOT_FILES:
            charges = [(self.static, address, "static")]
        else:
            charges = [(self.anonymous, address, "anonymous")]
        wait, lane, key = max((buckets.wait(key, now), lane, key) for buckets, key, lane in charges)
        if wait > 0:
            return wait, lane, key, session is not None and session in _known
        for buckets, key, _ in charges:
            buckets.spend(key)
        return 0.0, lane, key, True

    def streak(self, lane: str, key: str) -> int:
        """1, 2, 4 ... up to LONGEST_WAIT: doubled with each refusal of this bucket in a row (one whose last refusal
        is older than the longest wait twice over starts again at 1)."""
        now = time.monotonic()
        entry = self.streaks.get((lane, key))
        if entry is None or now - entry[1] > 2 * LONGEST_WAIT * self.refusal_wait:
            if len(self.streaks) >= MAX_KEYS:
                self.streaks.popitem(last=False)
            entry = self.streaks[lane, key] = [0, now]
        self.streaks.move_to_end((lane, key))
        times = min(LONGEST_WAIT, 2 ** int(entry[0]))
        entry[0], entry[1] = entry[0] + 1, now
        return times

    async def refuse(self, scope: dict[str, Any], receive: Any, send: Any, address: str, wait: float,
                     delay: float, known: bool) -> None:
        """Answer after `delay` (a loop of refusals then runs no faster than one a delay per connection, however soon
        the bucket's next token comes), at once past DOOR_HELD_PER_ADDRESS refusals already waiting for this
        address."""
        if self.held[address] < settings.DOOR_HELD_PER_ADDRESS:
            self.held[address] += 1
            try:
                await asyncio.sleep(delay)
            finally:
                self.held[address] -= 1
                if not self.held[address]:
                    del self.held[address]
        seconds = max(1, math.ceil(wait))
        if scope["type"] == "http":
            await too_many_requests(send, seconds)
        else:
            await refuse_handshake(receive, send, seconds, words=known)


def session_key(scope: dict[str, Any]) -> str | None:
    """The session cookie's value in an ASGI scope (None without one), read without Django's session."""
    for name, value in scope.get("headers", ()):
        if name == b"cookie":
            return parse_cookie(value.decode("latin-1")).get(settings.SESSION_COOKIE_NAME) or None
    return None


async def too_many_requests(send: Any, seconds: int) -> None:
    """HTTP 429 with the wait in Retry-After and in words (English and Chinese); no Django, no thread."""
    body = (f"Too many requests; try again in {seconds} s.\n"
            f"请求太多，请在 {seconds} 秒后再试。\n").encode()
    await send({"type": "http.response.start", "status": 429,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"retry-after", str(seconds).encode()),
                            (b"content-length", str(len(body)).encode()), (b"cache-control", b"no-store"),
                            (b"x-content-type-options", b"nosniff")]})
    await send({"type": "http.response.body", "body": body})


async def refuse_handshake(receive: Any, send: Any, seconds: int, *, words: bool) -> None:
    """A signed-in page's socket is told why (`error` rate_limited with retry_after, then close 4429); anything else
    is refused in the handshake (HTTP 403), the cheapest answer."""
    if not words:
        if (await receive()).get("type") == "websocket.connect":
            await send({"type": "websocket.close", "code": REFUSED_CLOSE})
        return
    await say_and_close(receive, send, {"type": "error", "code": "rate_limited", "retry_after": seconds,
                                        "message": f"too many connections from you at once; trying again in {seconds} s"},
                        REFUSED_CLOSE)


async def say_and_close(receive: Any, send: Any, frame: dict[str, Any], code: int) -> None:
    """A socket refused before any consumer: accepted, told why in one frame, closed with `code`."""
    if (await receive()).get("type") != "websocket.connect":
        return
    await send({"type": "websocket.accept"})
    await send({"type": "websocket.send", "text": json.dumps(frame)})
    await send({"type": "websocket.close", "code": code})

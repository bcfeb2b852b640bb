"""Before any consumer runs: a socket's page must be this site (scheme, host and port), and unknown paths are refused.

Channels' AllowedHostsOriginValidator compares only the Origin's host with ALLOWED_HOSTS, so a
page on another port of the same host (another local service) or over plain http could open a
socket with the user's cookies, which do not care about ports. Here the Origin must equal the
site's own origin as the browser addressed it (its Host header, and https when the connection or
the trusted proxy's SECURE_PROXY_SSL_HEADER says so), or be listed in CSRF_TRUSTED_ORIGINS.
"""
from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from channels.auth import AuthMiddleware
from channels.generic.websocket import AsyncWebsocketConsumer
from channels.security.websocket import WebsocketDenier
from channels.sessions import CookieMiddleware, InstanceSessionWrapper, SessionMiddleware
from django.conf import settings
from django.http.request import split_domain_port, validate_host

DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(scheme: str, host: str, port: int | str | None) -> tuple[str, str, int] | None:
    if scheme not in DEFAULT_PORTS or not host:
        return None
    try:
        return scheme, host.lower(), int(port) if port else DEFAULT_PORTS[scheme]
    except ValueError:
        return None


def parse_origin(value: str) -> tuple[str, str, int] | None:
    """'https://lab.example.org:8443' -> ('https', 'lab.example.org', 8443); None when not an origin."""
    try:
        parts = urlsplit(value)
        return _origin(parts.scheme.lower(), parts.hostname or "", parts.port)
    except ValueError:
        return None


def site_origin(scope: dict[str, Any]) -> tuple[str, str, int] | None:
    """The origin the browser reached this site at, from the handshake's Host header; None without one."""
    headers = dict(scope.get("headers", []))
    host_header = headers.get(b"host", b"").decode("latin1")
    if not host_header:
        return None
    secure = scope.get("scheme") == "wss"
    proxy = settings.SECURE_PROXY_SSL_HEADER
    if proxy:  # a trusted TLS proxy says so (the same setting Django's request.is_secure() reads)
        name, value = proxy
        header = name.removeprefix("HTTP_").lower().replace("_", "-").encode()
        secure = secure or headers.get(header, b"").decode("latin1") == value
    host, port = split_domain_port(host_header)
    return _origin("https" if secure else "http", host, port)


def origin_allowed(scope: dict[str, Any]) -> bool:
    """The handshake's Origin is the site itself (scheme, host, port) or a CSRF-trusted origin, on an allowed host."""
    raw = dict(scope.get("headers", [])).get(b"origin")
    origin = parse_origin(raw.decode("latin1")) if raw else None
    if origin is None or not validate_host(origin[1], settings.ALLOWED_HOSTS):
        return False
    trusted = {parse_origin(o) for o in settings.CSRF_TRUSTED_ORIGINS}
    if origin in trusted:
        return True
    site = site_origin(scope)
    if site is None:  # no Host header (not a browser): the Origin's host alone, on its default port
        return origin[2] == DEFAULT_PORTS[origin[0]]
    return origin == site


class SameOriginValidator:
    """ASGI middleware for WebSockets: refuses the handshake (HTTP 403) unless origin_allowed()."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if origin_allowed(scope):
            return await self.application(scope, receive, send)
        return await WebsocketDenier()(scope, receive, send)


class NoSuchSocket(AsyncWebsocketConsumer):
    """Every path no route takes: the handshake is refused (HTTP 403), quietly, instead of a 500 and a traceback."""

    async def connect(self) -> None:
        await self.close()


class SocketSessionMiddleware(SessionMiddleware):
    """Channels' SessionMiddleware for sockets: the signed-in session in the scope, every send passed straight on.

    Channels' own wraps each message a consumer sends to check whether the session changed and needs a cookie,
    which only an HTTP response can carry: for a socket that check never saves anything, yet it ran on every frame
    to every socket (5.5 % of the web process, its own code, while a step went to 1,000 students; see
    docs/benchmarks.md). A socket that changes its session (none does) would have to save it itself.
    """

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        wrapper = InstanceSessionWrapper(scope, send)
        await wrapper.resolve_session()
        return await self.inner(wrapper.scope, receive, send)


def socket_auth_stack(inner: Any) -> Any:
    """Channels' AuthMiddlewareStack for sockets (cookies, session, user), without the per-send session check."""
    return CookieMiddleware(SocketSessionMiddleware(AuthMiddleware(inner)))

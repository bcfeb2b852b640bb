"""Failed sign-ins: who the client is behind a trusted proxy, and the per-address limit beside axes' per-account one.

Axes locks a (username, client address) pair after AXES_FAILURE_LIMIT wrong passwords. The
client address is the connection's, unless that connection comes from a proxy the operator
listed in TRUSTED_PROXIES: then it is the right-most address of CLIENT_IP_HEADER that is not
itself a trusted proxy (the left part of that header is whatever the client wrote). An address
that fails AXES_ADDRESS_FAILURE_LIMIT times across any usernames is locked for every username.
Registration is throttled per client address too (REGISTRATIONS_PER_HOUR, counted in Redis).

Device cookies (OWASP's "Slow down online guessing attacks with device cookies"): a browser that signed
in as a user carries a signed cookie naming that user and a random nonce. A sign-in for that user from
that browser is judged by the browser's own failures (AXES_FAILURE_LIMIT per cool-off, counted in Redis
by nonce) instead of the address's: wrong passwords typed elsewhere behind the same (NAT) address do not
lock the user out of a browser they signed in from before, and that browser's success does not lift the
lock on the others. A browser without the cookie is locked as before.
"""
from __future__ import annotations

import functools
import ipaddress
import logging
import secrets
from typing import Any

import redis
from axes.attempts import get_cool_off_threshold
from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_client_session_hash, get_client_username, get_failure_limit
from axes.models import AccessAttempt, AccessLog
from django.conf import settings
from django.core import signing
from django.db.models import Sum
from django.http import HttpRequest, HttpResponse

log = logging.getLogger(__name__)

REGISTRATION_WINDOW_S = 3600


def _trusted(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in settings.TRUSTED_PROXY_NETWORKS)


def client_ip(request: HttpRequest) -> str:
    """The client's address: the connection's, or behind a trusted proxy the last untrusted hop it forwarded."""
    header = "HTTP_" + settings.CLIENT_IP_HEADER.upper().replace("-", "_")
    return _client_address(request.META.get("REMOTE_ADDR", ""), request.META.get(header, ""))


def scope_ip(scope: dict[str, Any]) -> str:
    """client_ip for a WebSocket's ASGI scope."""
    client = scope.get("client") or ("", 0)
    name = settings.CLIENT_IP_HEADER.lower().encode()
    forwarded = b",".join(value for key, value in scope.get("headers", []) if key.lower() == name)
    return _client_address(str(client[0] or ""), forwarded.decode("latin-1"))


def _client_address(remote: str, forwarded: str) -> str:
    if not _trusted(remote):
        return remote
    hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
    for hop in reversed(hops):
        if _trusted(hop):
            continue
        try:
            return str(ipaddress.ip_address(hop))
        except ValueError:  # garbage where an address should be: the proxy's own address is all we know
            return remote
    return remote


class AccountAndAddressHandler(AxesDatabaseHandler):
    """Axes' database handler, plus a lock on a client address that fails too often across usernames, and a
    browser's own count for a user it carries a device cookie for."""

    def get_failures(self, request: HttpRequest, credentials: dict[str, Any] | None = None) -> int:
        device = known_device(request, get_client_username(request, credentials))
        if device is not None:  # this browser signed in as this user before: its own failures alone count
            return device_failures(device)
        failures = super().get_failures(request, credentials)
        address = getattr(request, "axes_ip_address", None) or client_ip(request)
        recent = AccessAttempt.objects.filter(ip_address=address)
        if settings.AXES_COOLOFF_TIME is not None:
            recent = recent.filter(attempt_time__gte=get_cool_off_threshold(request))
        by_address = recent.aggregate(total=Sum("failures_since_start"))["total"] or 0
        if by_address >= settings.AXES_ADDRESS_FAILURE_LIMIT:  # on axes' scale: this counts as locked
            return max(failures, get_failure_limit(request, credentials))
        return failures

    def user_login_failed(self, sender: Any, credentials: dict[str, Any], request: HttpRequest | None = None,
                          **kwargs: Any) -> None:
        if request is not None and not getattr(request, "axes_locked_out", False):
            device = known_device(request, get_client_username(request, credentials))
            if device is not None:
                _device_count(device, +1)
        super().user_login_failed(sender, credentials, request, **kwargs)

    def user_logged_in(self, sender: Any, request: HttpRequest, user: Any, **kwargs: Any) -> None:
        device = known_device(request, user.get_username())
        if device is None:
            super().user_logged_in(sender, request, user, **kwargs)
            return
        # A known browser's success clears its own count, not the lock other browsers at its address earned.
        _device_count(device, 0)
        if not settings.AXES_DISABLE_ACCESS_LOG:
            AccessLog.objects.create(
                username=user.get_username(), ip_address=request.axes_ip_address, user_agent=request.axes_user_agent,
                http_accept=request.axes_http_accept, path_info=request.axes_path_info,
                attempt_time=request.axes_attempt_time, session_hash=get_client_session_hash(request))


# -- device cookies ------------------------------------------------------------------------------------------

DEVICE_COOKIE = "encdec_device"
DEVICE_SALT = "encdec.accounts.device"
DEVICE_USERS = 4  # the users one browser is known for (the latest sign-ins)


def _device_entries(request: HttpRequest) -> list[list[str]]:
    raw = request.COOKIES.get(DEVICE_COOKIE)
    if not raw:
        return []
    try:
        entries = signing.loads(raw, salt=DEVICE_SALT, max_age=settings.DEVICE_COOKIE_DAYS * 86400)
    except signing.BadSignature:
        return []
    if not isinstance(entries, list):
        return []
    return [e for e in entries if isinstance(e, list) and len(e) == 2 and all(isinstance(x, str) for x in e)]


def known_device(request: HttpRequest, username: str | None) -> str | None:
    """The nonce of this browser's device cookie for `username`, when it carries a valid one."""
    if not username:
        return None
    return next((nonce for name, nonce in _device_entries(request) if name == username), None)


def device_cookie_set(request: HttpRequest, response: HttpResponse, username: str) -> None:
    """After a successful sign-in: the browser is known for this user (a fresh nonce, signed)."""
    entries = [e for e in _device_entries(request) if e[0] != username]
    entries = [[username, secrets.token_urlsafe(16)], *entries][:DEVICE_USERS]
    response.set_cookie(DEVICE_COOKIE, signing.dumps(entries, salt=DEVICE_SALT),
                        max_age=settings.DEVICE_COOKIE_DAYS * 86400, httponly=True, samesite="Lax",
                        secure=settings.SESSION_COOKIE_SECURE)


def _device_key(nonce: str) -> str:
    return f"encdec:device-failures:{nonce}"


def device_failures(nonce: str) -> int:
    try:
        return int(_redis().get(_device_key(nonce)) or 0)
    except redis.RedisError:  # no count: judged as no failures, AXES_FAILURE_LIMIT still holds the address
        log.warning("device failure count unavailable", exc_info=True)
        return 0


def _device_count(nonce: str, step: int) -> None:
    """Add a failure (step 1, kept for the cool-off) or clear the count (step 0)."""
    try:
        if step == 0:
            _redis().delete(_device_key(nonce))
            return
        pipe = _redis().pipeline(transaction=True)
        pipe.incr(_device_key(nonce))
        pipe.expire(_device_key(nonce), int(settings.AXES_COOLOFF_TIME * 3600))
        pipe.execute()
    except redis.RedisError:
        log.warning("device failure count unavailable", exc_info=True)


def _redis() -> redis.Redis:
    """One client per Redis URL, shared by every thread (its pool is thread-safe), whose calls give up after a second.
    Its own, not webapp.ops' quick_redis: the shared packages below import accounts (roles)."""
    return _client_for(settings.REDIS_URL)


@functools.lru_cache(maxsize=4)
def _client_for(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)


def _registrations_key(request: HttpRequest) -> str:
    return f"encdec:registrations:{client_ip(request)}"


def registration_allowed(request: HttpRequest) -> bool:
    """Whether this client address made fewer than REGISTRATIONS_PER_HOUR accounts in the last hour (a read only,
    to refuse a flood early; registration_take is what holds the limit)."""
    try:
        made = _redis().get(_registrations_key(request))
    except redis.RedisError:  # the throttle is down, not registration
        log.warning("registration throttle unavailable", exc_info=True)
        return True
    return int(made or 0) < settings.REGISTRATIONS_PER_HOUR


def registration_take(request: HttpRequest) -> bool:
    """Count one account about to be made from this client address; False when that is one past
    REGISTRATIONS_PER_HOUR. The count goes up first and is compared after (one MULTI/EXEC), so two
    registrations at once, in one web process or several, cannot both take the hour's last place."""
    key = _registrations_key(request)
    try:
        pipe = _redis().pipeline(transaction=True)
        pipe.set(key, 0, ex=REGISTRATION_WINDOW_S, nx=True)  # the hour starts at the first
        pipe.incr(key)
        _, made = pipe.execute()
    except redis.RedisError:  # the throttle is down, not registration
        log.warning("registration throttle unavailable", exc_info=True)
        return True
    return int(made) <= settings.REGISTRATIONS_PER_HOUR

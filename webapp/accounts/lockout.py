"""Failed sign-ins: who the client is behind a trusted proxy, and the per-address limit beside axes' per-account one.

Axes locks a (username, client address) pair after AXES_FAILURE_LIMIT wrong passwords. The
client address is the connection's, unless that connection comes from a proxy the operator
listed in TRUSTED_PROXIES: then it is the right-most address of CLIENT_IP_HEADER that is not
itself a trusted proxy (the left part of that header is whatever the client wrote). An address
that fails AXES_ADDRESS_FAILURE_LIMIT times across any usernames is locked for every username.
Registration is throttled per client address too (REGISTRATIONS_PER_HOUR, counted in Redis).
"""
from __future__ import annotations

import ipaddress
import logging
from typing import Any

import redis
from axes.attempts import get_cool_off_threshold
from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_failure_limit
from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import Sum
from django.http import HttpRequest

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
    remote = request.META.get("REMOTE_ADDR", "")
    if not _trusted(remote):
        return remote
    header = "HTTP_" + settings.CLIENT_IP_HEADER.upper().replace("-", "_")
    hops = [hop.strip() for hop in request.META.get(header, "").split(",") if hop.strip()]
    for hop in reversed(hops):
        if _trusted(hop):
            continue
        try:
            return str(ipaddress.ip_address(hop))
        except ValueError:  # garbage where an address should be: the proxy's own address is all we know
            return remote
    return remote


class AccountAndAddressHandler(AxesDatabaseHandler):
    """Axes' database handler, plus a lock on a client address that fails too often across usernames."""

    def get_failures(self, request: HttpRequest, credentials: dict[str, Any] | None = None) -> int:
        failures = super().get_failures(request, credentials)
        address = getattr(request, "axes_ip_address", None) or client_ip(request)
        recent = AccessAttempt.objects.filter(ip_address=address)
        if settings.AXES_COOLOFF_TIME is not None:
            recent = recent.filter(attempt_time__gte=get_cool_off_threshold(request))
        by_address = recent.aggregate(total=Sum("failures_since_start"))["total"] or 0
        if by_address >= settings.AXES_ADDRESS_FAILURE_LIMIT:  # on axes' scale: this counts as locked
            return max(failures, get_failure_limit(request, credentials))
        return failures


def _registrations_key(request: HttpRequest) -> str:
    return f"encdec:registrations:{client_ip(request)}"


def registration_allowed(request: HttpRequest) -> bool:
    """Whether this client address made fewer than REGISTRATIONS_PER_HOUR accounts in the last hour (a read only,
    to refuse a flood early; registration_take is what holds the limit)."""
    try:
        made = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1).get(_registrations_key(request))
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
        pipe = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1).pipeline(transaction=True)
        pipe.set(key, 0, ex=REGISTRATION_WINDOW_S, nx=True)  # the hour starts at the first
        pipe.incr(key)
        _, made = pipe.execute()
    except redis.RedisError:  # the throttle is down, not registration
        log.warning("registration throttle unavailable", exc_info=True)
        return True
    return int(made) <= settings.REGISTRATIONS_PER_HOUR

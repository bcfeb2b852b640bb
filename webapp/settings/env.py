"""Small readers of environment variables that fail loudly on bad values."""
from __future__ import annotations

import ipaddress
import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str | None = None, *, required: bool = False) -> str | None:
    """The variable's value, the default when unset, or an error when required and unset."""
    value = os.environ.get(name)
    if value is None or value == "":
        if required:
            raise ImproperlyConfigured(f"{name} must be set (see .env.example)")
        return default
    return value


def env_bool(name: str, default: bool) -> bool:
    """A boolean spelled 1/0, true/false, yes/no or on/off."""
    value = os.environ.get(name)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean (use 1/0, true/false, yes/no, on/off)")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    """An integer, at least `minimum` when given."""
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not an integer") from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name}={number} must be at least {minimum}")
    return number


def env_list(name: str, default: list[str]) -> list[str]:
    """A comma-separated list; blanks dropped."""
    value = os.environ.get(name)
    if value is None:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    """One of a fixed set of words."""
    value = (os.environ.get(name) or default).strip().lower()
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={value!r} must be one of: {', '.join(choices)}")
    return value


def env_path(name: str, default: Path) -> Path:
    """A filesystem path (created by whoever needs it)."""
    value = os.environ.get(name)
    return Path(value).expanduser().resolve() if value else default


def redis_url_for_celery(url: str) -> str:
    """Celery spells a Unix socket redis+socket://; Channels and redis-py spell it unix://."""
    if url.startswith("unix://"):
        return "redis+socket://" + url[len("unix://"):]
    return url


def validate_redis_url(url: str) -> str:
    """Accept redis://, rediss:// and unix:// URLs; refuse anything else at start-up."""
    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise ImproperlyConfigured(f"REDIS_URL={url!r} must start with redis://, rediss:// or unix://")
    return url


def env_networks(name: str) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """A comma-separated list of IP addresses or networks (an address is a /32 or /128)."""
    networks = []
    for value in env_list(name, []):
        try:
            networks.append(ipaddress.ip_network(value, strict=False))
        except ValueError:
            raise ImproperlyConfigured(f"{name}: {value!r} is not an IP address or network") from None
    return networks

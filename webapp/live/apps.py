from __future__ import annotations

from django.apps import AppConfig


class LiveConfig(AppConfig):
    """Sockets: every socket's base, its edge and guards, the feed from synchronous code, rights that end."""

    name = "webapp.live"
    label = "live"
    verbose_name = "Live sockets"

    def ready(self) -> None:
        from webapp.live import revoke  # noqa: F401  (signal receivers)

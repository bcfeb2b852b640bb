from __future__ import annotations

from django.apps import AppConfig


class RealtimeConfig(AppConfig):
    """Sockets: every socket's base, its edge and guards, the feed from synchronous code, rights that end."""

    name = "webapp.realtime"
    label = "realtime"
    verbose_name = "Realtime sockets"

    def ready(self) -> None:
        from webapp.realtime import revoke  # noqa: F401  (signal receivers)

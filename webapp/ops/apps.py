from __future__ import annotations

from django.apps import AppConfig


class OpsConfig(AppConfig):
    """Operations: the workers' presence, health, the broker, limits, Redis, static files, job tables and runs."""

    name = "webapp.ops"
    label = "ops"
    verbose_name = "Operations"

    def ready(self) -> None:
        from webapp.ops import priority, worker_presence  # noqa: F401  (signal receivers)

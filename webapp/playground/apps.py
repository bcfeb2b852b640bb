from __future__ import annotations

from django.apps import AppConfig


class PlaygroundConfig(AppConfig):
    name = "webapp.playground"
    label = "playground"
    verbose_name = "Playground"

    def ready(self) -> None:
        from webapp.playground import signals  # noqa: F401  (worker start/stop hooks)

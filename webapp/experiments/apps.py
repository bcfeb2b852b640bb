from __future__ import annotations

from django.apps import AppConfig


class ExperimentsConfig(AppConfig):
    name = "webapp.experiments"
    label = "experiments"
    verbose_name = "Experiments"

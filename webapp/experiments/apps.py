from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ExperimentsConfig(AppConfig):
    name = "webapp.experiments"
    label = "experiments"
    verbose_name = _("Experiments")

    def ready(self) -> None:
        # The students' runs count in the place of every run queued on the experiments' queue, the lesson's too:
        # their table of runs (experiments.services.RUNS) joins webapp.ops.runs.TABLES when it is made.
        from webapp.experiments import services  # noqa: F401

from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class LessonConfig(AppConfig):
    name = "webapp.lesson"
    verbose_name = _("Lesson")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The training comparisons wait on the experiments' queue beside the students' runs: their table of runs
        # (lesson.services.RUNS) counts in every queued run's place once it is made (webapp.ops.runs.TABLES).
        from webapp.lesson import services  # noqa: F401

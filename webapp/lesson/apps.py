from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class LessonConfig(AppConfig):
    name = "webapp.lesson"
    verbose_name = _("Lesson")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from webapp.experiments.services import experiments_queue_share
        from webapp.lesson.models import TrainingRun

        # The training comparisons wait on the experiments' queue beside the students' runs, about 15 s each
        # (two or three arms of about 5 s, modelcore/lesson/training.py): every queued run's place counts them.
        experiments_queue_share(model=TrainingRun, typical_s=15.0)

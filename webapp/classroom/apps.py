from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ClassroomConfig(AppConfig):
    name = "webapp.classroom"
    label = "classroom"
    verbose_name = _("Classroom")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from webapp.classroom.steps.comparisons import predicted_now
        from webapp.ops.sealed import seal_check

        seal_check(predicted_now)  # a run a class is predicting shows nowhere before its reveal
